"""Where a pulled dataset is written: the local dataset directory (:mod:`.local`).

Reads go through replicas (:mod:`odfweb3.read.replica`), whose one contract suite is
``tests/integration/test_replica_contract.py``.
"""
