"""Storage protocols for datasets: content-addressed objects and named refs.

:class:`~odfweb3.store.protocols.ObjectStore` and
:class:`~odfweb3.store.protocols.RefStore` are small on purpose; local directory
and in-memory implementations live here, network ones in the adapters. The same
contract suite (``tests/contract``) runs against every implementation.
"""
