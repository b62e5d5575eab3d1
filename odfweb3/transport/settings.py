"""Network budgets: per-read timeout, total deadline, retries, minimum rate (no I/O here).

Every network operation — one HTTP request with its retries and the reading of its
answer — is bounded three ways (docs/security.md, "Network clients"):

- **per read**: a connect or a socket read that waits longer than ``timeout_s`` fails;
- **in total**: the operation fails once ``deadline_s`` seconds have passed, plus one
  second per ``min_rate`` bytes already received (a large object that arrives at a
  reasonable rate gets the time it needs; a server dripping one byte every few seconds
  does not, whatever its per-read pace);
- **in size**: every read names its byte limit (:mod:`.http` has no unbounded read).

A command makes many operations (a DNSLink chain of 32 hops, a walk back through thousands
of Arweave uploads), so one more bound covers them all: a :class:`CommandBudget`, shared by
every client of one command (one per :class:`~odfweb3.config.Config`), lets the command spend
``command_deadline_s`` seconds waiting on the network, plus one second per ``min_rate`` bytes
moved (sent or received) over all its requests. Only the time during which at least one
request is under way counts, so local work (hashing, validating, writing) between requests
costs nothing, and a large upload or pull that keeps moving data earns its time; a resolver
asked to follow a slow chain of small answers does not. It is checked before every request
(and caps the deadline of a request it lets through on the client's own deadline; one given
a long deadline of its own, a ``dag/import``, keeps it), never in the middle of an answer.

The defaults suit a local node and a public gateway alike; ``network:`` in
``odfweb3.yaml`` changes them (schemas/config.schema.json).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from odfweb3.errors import BackendUnavailable

__all__ = [
    "DEFAULT_COMMAND_DEADLINE_S",
    "DEFAULT_DEADLINE_S",
    "DEFAULT_MIN_RATE",
    "DEFAULT_RETRIES",
    "DEFAULT_TIMEOUT_S",
    "CommandBudget",
    "NetworkSettings",
]

DEFAULT_TIMEOUT_S: Final = 30.0
DEFAULT_DEADLINE_S: Final = 120.0
DEFAULT_RETRIES: Final = 3
DEFAULT_MIN_RATE: Final = 64 * 1024  # bytes per second
DEFAULT_COMMAND_DEADLINE_S: Final = 300.0


class CommandBudget:
    """The network time of one command, over all its requests (see the module docstring).

    Thread-safe: a pull's parallel fetches share one budget; time counts once while any
    request is under way, not once per request.

    Args:
        seconds: ``network.command_deadline_s``.
        min_rate: bytes per second moved that earn one more second.
        now: the monotonic clock (tests).
    """

    def __init__(
        self,
        seconds: float = DEFAULT_COMMAND_DEADLINE_S,
        *,
        min_rate: int = DEFAULT_MIN_RATE,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self.seconds = seconds
        self._rate = max(1, min_rate)
        self._now = now
        self._lock = threading.Lock()
        self._busy = 0.0  # seconds with a request under way, up to _since
        self._since = 0.0
        self._inflight = 0
        self.moved = 0
        self.requests = 0

    def __repr__(self) -> str:
        return f"CommandBudget({self.seconds:g} s, {self.requests} requests)"

    def spent(self) -> float:
        """Seconds so far with at least one request under way."""
        with self._lock:
            return self._busy + (self._now() - self._since if self._inflight else 0.0)

    def left(self) -> float:
        """Seconds the command may still wait on the network (may be negative)."""
        with self._lock:
            busy = self._busy + (self._now() - self._since if self._inflight else 0.0)
            return self.seconds + self.moved / self._rate - busy

    def add_moved(self, nbytes: int) -> None:
        """Count bytes sent or received (they earn time, as for one operation)."""
        with self._lock:
            self.moved += nbytes

    def start(self, where: str) -> float:
        """A request begins: refused when the budget is spent; else what is left of it."""
        with self._lock:
            busy = self._busy + (self._now() - self._since if self._inflight else 0.0)
            left = self.seconds + self.moved / self._rate - busy
            if left <= 0:
                raise BackendUnavailable(
                    f"{where}: not sent: this command has waited {busy:.0f} s on the network "
                    f"over {self.requests} requests, its budget (network.command_deadline_s = "
                    f"{self.seconds:g} s + 1 s per {self._rate // 1024} KiB moved); the "
                    "servers are too slow or the chain too long: raise it for a slow link"
                )
            if self._inflight == 0:
                self._since = self._now()
            self._inflight += 1
            self.requests += 1
            return left

    def end(self) -> None:
        """A request (started by :meth:`start`) is over."""
        with self._lock:
            self._inflight -= 1
            if self._inflight == 0:
                self._busy += self._now() - self._since


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
        command: the budget of the whole command this client works for, shared with the
            command's other clients (None: no bound beyond each operation's).
    """

    timeout_s: float = DEFAULT_TIMEOUT_S
    deadline_s: float = DEFAULT_DEADLINE_S
    min_rate: int = DEFAULT_MIN_RATE
    retries: int = DEFAULT_RETRIES
    backoff_s: float = 0.25
    connect_timeout_s: float = 10.0
    command: CommandBudget | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_config(
        cls, section: Mapping[str, Any] | None, command: CommandBudget | None = None
    ) -> NetworkSettings:
        """From the ``network:`` section of the configuration (already schema-valid)."""
        s = dict(section or {})
        return cls(
            timeout_s=float(s.get("timeout_s", DEFAULT_TIMEOUT_S)),
            deadline_s=float(s.get("deadline_s", DEFAULT_DEADLINE_S)),
            min_rate=int(s.get("min_rate_kib_s", DEFAULT_MIN_RATE // 1024)) * 1024,
            retries=int(s.get("retries", DEFAULT_RETRIES)),
            command=command,
        )

    @staticmethod
    def budget_from_config(section: Mapping[str, Any] | None) -> CommandBudget:
        """A new command budget from the ``network:`` section (already schema-valid)."""
        s = dict(section or {})
        return CommandBudget(
            float(s.get("command_deadline_s", DEFAULT_COMMAND_DEADLINE_S)),
            min_rate=int(s.get("min_rate_kib_s", DEFAULT_MIN_RATE // 1024)) * 1024,
        )
