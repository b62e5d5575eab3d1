"""Network budgets: per-read timeout, total deadline, retries, minimum rate (no I/O here).

Every network operation — one HTTP request with its retries and the reading of its
answer — is bounded three ways (docs/security.md, "Network clients"):

- **per read**: a connect or a socket read that waits longer than ``timeout_s`` fails;
- **in total**: the operation fails once ``deadline_s`` seconds have passed, plus one
  second per ``min_rate`` bytes already received (a large object that arrives at a
  reasonable rate gets the time it needs; a server dripping one byte every few seconds
  does not, whatever its per-read pace);
- **in size**: every read names its byte limit (:mod:`.http` has no unbounded read).

The defaults suit a local node and a public gateway alike; ``network:`` in
``odfweb3.yaml`` changes them (schemas/config.schema.json).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "DEFAULT_DEADLINE_S",
    "DEFAULT_MIN_RATE",
    "DEFAULT_RETRIES",
    "DEFAULT_TIMEOUT_S",
    "NetworkSettings",
]

DEFAULT_TIMEOUT_S: Final = 30.0
DEFAULT_DEADLINE_S: Final = 120.0
DEFAULT_RETRIES: Final = 3
DEFAULT_MIN_RATE: Final = 64 * 1024  # bytes per second


@dataclass(frozen=True)
class NetworkSettings:
    """Budgets of one network client (see the module docstring).

    Attributes:
        timeout_s: longest wait for a connect or for one read.
        deadline_s: longest time for one operation (request, retries, answer), before the
            allowance for data received.
        min_rate: bytes per second an answer must keep up to earn more time than
            ``deadline_s``.
        retries: extra attempts for idempotent requests.
        backoff_s: first backoff (doubled per attempt, full jitter).
        connect_timeout_s: longest wait for a connection.
    """

    timeout_s: float = DEFAULT_TIMEOUT_S
    deadline_s: float = DEFAULT_DEADLINE_S
    min_rate: int = DEFAULT_MIN_RATE
    retries: int = DEFAULT_RETRIES
    backoff_s: float = 0.25
    connect_timeout_s: float = 10.0

    @classmethod
    def from_config(cls, section: Mapping[str, Any] | None) -> NetworkSettings:
        """From the ``network:`` section of the configuration (already schema-valid)."""
        s = dict(section or {})
        return cls(
            timeout_s=float(s.get("timeout_s", DEFAULT_TIMEOUT_S)),
            deadline_s=float(s.get("deadline_s", DEFAULT_DEADLINE_S)),
            min_rate=int(s.get("min_rate_kib_s", DEFAULT_MIN_RATE // 1024)) * 1024,
            retries=int(s.get("retries", DEFAULT_RETRIES)),
        )
