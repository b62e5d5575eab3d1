"""odfweb3: publish Open Data Fabric datasets to IPFS and Arweave, and verify them by head hash.

The library is :mod:`odfweb3.api` (docs/api.md)::

    from odfweb3 import api
    outcome = api.publish("my-dataset", "car:out", config=api.load_config(env=os.environ))

``odfweb3.api`` is imported when first used, so ``import odfweb3`` stays cheap (the CLI
starts with it). The functions are not repeated here: ``odfweb3.publish`` is the package
of the publish pipeline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["__version__", "api"]

__version__ = "0.1.0"

if TYPE_CHECKING:
    from odfweb3 import api


def __getattr__(name: str) -> Any:
    if name == "api":
        from importlib import import_module

        return import_module("odfweb3.api")
    raise AttributeError(f"module 'odfweb3' has no attribute {name!r}")
