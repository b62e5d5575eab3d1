"""The one HTTP layer shared by the network adapters.

:mod:`.settings` holds the budgets (pure, read by :mod:`odfweb3.config`); :mod:`.http` is the
client built on httpx that enforces them. Adapters import :mod:`.http`; the rest of the core
does not (tests/unit/test_dependency_rule.py).
"""

from __future__ import annotations

__all__: list[str] = []
