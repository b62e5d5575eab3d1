"""The library behind the CLI (docs/api.md), in the manner of dulwich's ``porcelain``: each
command a function taking typed options and returning a frozen report; messages, questions
and progress passed in as :class:`Hooks`.

    from odfweb3 import api
    config = api.load_config(env=os.environ)
    report = api.validate("my-dataset")
    outcome = api.publish("my-dataset", "car:out", config=config)

Names are imported when first used (PEP 562), so ``import odfweb3.api`` loads nothing
else. The modules are named apart from the functions (``publishing``, ``reading``,
``states``): a submodule named ``publish`` would replace the function of that name here.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__all__ = [
    "Config",
    "Hooks",
    "PublishOptions",
    "PublishStatus",
    "PullReport",
    "ReadOptions",
    "StatusReport",
    "TargetResult",
    "VerifyReport",
    "inspect",
    "load_config",
    "publish",
    "publish_everywhere",
    "pull",
    "resolve",
    "status",
    "status_report",
    "validate",
    "verify",
    "verify_lineage",
]

# name -> the module defining it, loaded on first access.
_LAZY = {
    "Config": "odfweb3.config",
    "load_config": "odfweb3.config",
    "Hooks": "odfweb3.api.hooks",
    "PublishOptions": "odfweb3.api.publishing",
    "TargetResult": "odfweb3.api.publishing",
    "publish": "odfweb3.api.publishing",
    "publish_everywhere": "odfweb3.api.publishing",
    "PullReport": "odfweb3.api.reading",
    "ReadOptions": "odfweb3.api.reading",
    "VerifyReport": "odfweb3.api.reading",
    "pull": "odfweb3.api.reading",
    "resolve": "odfweb3.api.reading",
    "verify": "odfweb3.api.reading",
    "verify_lineage": "odfweb3.api.reading",
    "inspect": "odfweb3.api.local",
    "validate": "odfweb3.api.local",
    "PublishStatus": "odfweb3.api.states",
    "status": "odfweb3.api.states",
    "StatusReport": "odfweb3.api.states",
    "status_report": "odfweb3.api.states",
}

if TYPE_CHECKING:
    from odfweb3.api.hooks import Hooks
    from odfweb3.api.local import inspect, validate
    from odfweb3.api.publishing import PublishOptions, TargetResult, publish, publish_everywhere
    from odfweb3.api.reading import (
        PullReport,
        ReadOptions,
        VerifyReport,
        pull,
        resolve,
        verify,
        verify_lineage,
    )
    from odfweb3.api.states import PublishStatus, StatusReport, status, status_report
    from odfweb3.config import Config, load_config


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'odfweb3.api' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
