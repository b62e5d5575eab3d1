"""One HTTP client for every network adapter: retries, deadlines, size limits, one error edge.

The Kubo RPC client, the IPFS gateway and the Arweave gateway all send their requests
through :class:`HttpClient` (before, each had its own retry and error
loop). What it guarantees, whatever the server does (docs/security.md, "Network clients"):

- **Retries** only for idempotent requests, on connection errors, timeouts and the
  statuses the caller's ``retry`` rule names (5xx and 429 by default), with exponential
  backoff and full jitter, never sleeping past the deadline.
- **Deadlines**: each read waits at most ``timeout_s`` (and never longer than what is left
  of the operation); the whole operation — every attempt and the reading of the answer —
  ends at ``deadline_s`` plus one second per ``min_rate`` bytes received
  (:class:`~.settings.NetworkSettings`). A server dripping a byte every few seconds is cut
  off at the deadline, not kept for hours. And every operation of one command draws on the
  command's :class:`~.settings.CommandBudget`: refused before it is sent once the command
  has spent it, and never given a deadline past what is left of it.
- **Size limits**: every read of an answer names its limit (:meth:`Answer.read`,
  :meth:`Answer.iter_bytes`, :meth:`Answer.iter_lines`); more is refused as soon as it
  arrives, never buffered first (item 8). Bodies are gathered in a ``bytearray``, never by
  ``bytes +=`` (item 7: quadratic). Error bodies are read up to :data:`ERROR_BODY_LIMIT`.
- **One error edge**: httpx exceptions never leave this module. Transport failures become
  :class:`~odfweb3.errors.BackendUnavailable`; error statuses become what the caller's
  ``reject`` function builds (each service words its own hints); an answer over its limit
  or past its deadline is a :class:`~odfweb3.errors.BackendRejected` /
  :class:`~odfweb3.errors.BackendUnavailable` naming the service, the endpoint and the
  budget. Query strings never appear in messages (they may carry key material).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any, BinaryIO, Final

import httpx

from odfweb3.errors import BackendRejected, BackendUnavailable, OdfWeb3Error
from odfweb3.transport.settings import NetworkSettings

__all__ = [
    "ERROR_BODY_LIMIT",
    "RETRY_STATUSES",
    "Answer",
    "HttpClient",
    "Reject",
    "RetryRule",
    "one_line",
]

RETRY_STATUSES: Final = frozenset({429, 500, 502, 503, 504})
ERROR_BODY_LIMIT: Final = 64 * 1024
_MAX_DETAIL: Final = 300
_MAX_LINE: Final = 1 << 20

#: ``(method, endpoint, status, body) -> error`` for an answer with an error status.
Reject = Callable[[str, str, int, bytes], OdfWeb3Error]
#: ``(status, body) -> bool``: whether an error status is worth another attempt.
RetryRule = Callable[[int, bytes], bool]


def one_line(text: str, limit: int = _MAX_DETAIL) -> str:
    """``text`` on one line, at most ``limit`` characters (for messages)."""
    flat = " ".join(text.split())
    return flat[:limit] + ("…" if len(flat) > limit else "")


def _default_retry(status: int, body: bytes) -> bool:
    return status in RETRY_STATUSES


class _Clock:
    """The deadline of one operation: ``deadline_s`` plus ``1 / min_rate`` s per byte.

    ``command``: the command's budget, told of every byte received; ``capped``: the deadline
    is what was left of that budget, not ``deadline_s`` (messages say which)."""

    def __init__(
        self,
        settings: NetworkSettings,
        now: Callable[[], float],
        deadline: float,
        *,
        capped: bool = False,
    ) -> None:
        self._now = now
        self._start = now()
        self._deadline = deadline
        self._rate = max(1, settings.min_rate)
        self.received = 0
        self.command = settings.command
        self.capped = capped

    def got(self, nbytes: int) -> None:
        self.received += nbytes
        if self.command is not None:
            self.command.add_moved(nbytes)

    def left(self) -> float:
        return self._start + self._deadline + self.received / self._rate - self._now()

    def spent(self) -> float:
        return self._now() - self._start

    def spent_all(self) -> bool:
        """The deadline has (all but) passed: a read that timed out now ran out of it."""
        return self.left() <= 0.05

    def budget(self) -> str:
        return f"{self._deadline:g} s + 1 s per {self._rate // 1024} KiB received"


class Answer:
    """A streamed answer whose every read is bounded (size and deadline).

    Attributes:
        status: the HTTP status.
        headers: the answer's headers.
    """

    def __init__(self, client: HttpClient, response: httpx.Response, where: str, clock: _Clock):
        self._client = client
        self._response = response
        self._where = where
        self._clock = clock
        self.status = response.status_code
        self.headers: Mapping[str, str] = response.headers
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        self._encoded = encoding not in ("", "identity")

    def content_type(self) -> str:
        """The media type, without parameters, lower-cased."""
        return self.headers.get("content-type", "").split(";")[0].strip().lower()

    def iter_bytes(self, limit: int, chunk_size: int | None = None) -> Iterator[bytes]:
        """The body in pieces; more than ``limit`` bytes, or the deadline passing, raises.

        Raises:
            BackendRejected: the answer is longer than ``limit`` (status kept, detail
                ``"answer too large"``).
            BackendUnavailable: the connection dropped or the deadline passed.
        """
        clock = self._clock
        if self._encoded:
            # We ask for identity; a compressed answer could expand a thousandfold per read.
            raise BackendRejected(
                f"{self._where} answered with Content-Encoding "
                f"{self.headers.get('content-encoding')!r} although identity was asked",
                self.status,
                "compressed answer",
            )
        n = 0
        pending = bytearray()
        try:
            # Pieces as they come off the socket (identity only, see above), so that the
            # limit and the deadline are checked on every read; gathered up to chunk_size.
            for block in self._response.iter_bytes():
                n += len(block)
                clock.got(len(block))
                if n > limit:
                    raise BackendRejected(
                        f"{self._where} answered more than {limit} bytes, the most expected "
                        "here; refusing the rest (is this the right server?)",
                        self.status,
                        "answer too large",
                    )
                if clock.left() < 0:
                    raise self._client._late(self._where, clock)
                if chunk_size is None:
                    yield block
                    continue
                pending += block
                while len(pending) >= chunk_size:
                    yield bytes(pending[:chunk_size])
                    del pending[:chunk_size]
            if pending:
                yield bytes(pending)
        except httpx.TransportError as exc:
            raise self._client._dropped(self._where, exc, clock) from exc
        except httpx.StreamError as exc:  # the body was consumed or closed already
            raise BackendUnavailable(
                f"{self._where}: the answer cannot be read again ({type(exc).__name__})"
            ) from exc

    def read(self, limit: int) -> bytes:
        """The whole body, at most ``limit`` bytes (see :meth:`iter_bytes`)."""
        out = bytearray()
        for block in self.iter_bytes(limit):
            out += block
        return bytes(out)

    def iter_lines(self, limit: int, max_line: int = _MAX_LINE) -> Iterator[bytes]:
        """Newline-separated lines (without the newline), each at most ``max_line`` bytes."""
        pending = bytearray()
        for block in self.iter_bytes(limit):
            pending += block
            start = 0
            while (end := pending.find(b"\n", start)) >= 0:
                yield bytes(pending[start:end]).rstrip(b"\r")
                start = end + 1
            del pending[:start]
            if len(pending) > max_line:
                raise BackendRejected(
                    f"{self._where} answered a line longer than {max_line} bytes",
                    self.status,
                    "line too long",
                )
        if pending:
            yield bytes(pending).rstrip(b"\r")


class HttpClient:
    """An HTTP client with the guarantees of the module docstring.

    Args:
        base_url: every request path is relative to it.
        service: how messages name the server, e.g. ``"Arweave gateway http://…"``.
        hint: what to do when the server cannot be reached (names the setting).
        settings: the budgets.
        reject: builds the error for an error status (default: a plain BackendRejected).
        retry: which error statuses are retried (default: :data:`RETRY_STATUSES`).
        follow_redirects: follow redirects by default (a request may override it).
        max_connections: connection pool size.
        transport: an httpx transport (tests of faults a real server cannot produce).
        sleep: the sleep function (tests).
        now: the monotonic clock (tests).
        rng: randomness for the jitter (tests).
    """

    def __init__(
        self,
        base_url: str,
        *,
        service: str,
        hint: str,
        settings: NetworkSettings | None = None,
        reject: Reject | None = None,
        retry: RetryRule = _default_retry,
        follow_redirects: bool = False,
        max_connections: int = 16,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        now: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.service = service
        self.hint = hint
        self.settings = settings or NetworkSettings()
        self._reject = reject or self._plain_reject
        self._retry = retry
        self._sleep = sleep
        self._now = now
        self._rng = rng or random.Random()
        self.attempts = 0
        self.retries = 0
        s = self.settings
        self._http = httpx.Client(
            base_url=self.base_url,
            timeout=httpx.Timeout(s.timeout_s, connect=min(s.timeout_s, s.connect_timeout_s)),
            transport=transport,
            follow_redirects=follow_redirects,
            # Bodies are read raw and counted as they arrive: no decompression bombs.
            headers={"accept-encoding": "identity"},
            limits=httpx.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections
            ),
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    # -- errors, worded once -----------------------------------------------------------------

    def _plain_reject(self, method: str, endpoint: str, status: int, body: bytes) -> OdfWeb3Error:
        detail = one_line(body.decode("utf-8", "replace"))
        return BackendRejected(
            f"{self.service} {method} {endpoint} answered HTTP {status}: "
            f"{detail or '(no message)'}",
            status,
            detail,
        )

    def _late(self, where: str, clock: _Clock) -> BackendUnavailable:
        if clock.capped:
            return BackendUnavailable(
                f"{where} timed out after {clock.spent():.0f} s: the command's network budget "
                "(network.command_deadline_s) is spent; raise it for a slow link"
            )
        return BackendUnavailable(
            f"{where} timed out: no complete answer after {clock.spent():.0f} s "
            f"(deadline {clock.budget()}; network.deadline_s); retry, or raise the deadline "
            "for a slow link"
        )

    def _dropped(self, where: str, exc: Exception, clock: _Clock) -> BackendUnavailable:
        if isinstance(exc, httpx.TimeoutException) and clock.capped and clock.spent_all():
            return self._late(where, clock)
        if isinstance(exc, httpx.TimeoutException):
            return BackendUnavailable(
                f"{where} timed out waiting for data ({type(exc).__name__}, network.timeout_s "
                f"= {self.settings.timeout_s:g} s); retry"
            )
        return BackendUnavailable(f"{where} dropped the answer ({type(exc).__name__}); retry")

    def _unavailable(self, where: str, exc: Exception) -> BackendUnavailable:
        kind = "timed out" if isinstance(exc, httpx.TimeoutException) else "unreachable"
        return BackendUnavailable(f"{where} {kind} ({type(exc).__name__}); {self.hint}")

    # -- the one place requests are sent -----------------------------------------------------

    def _delay(self, attempt: int) -> float:
        return float(self._rng.uniform(0, self.settings.backoff_s * (2**attempt)))

    @contextmanager
    def request(
        self,
        method: str,
        path: str,
        *,
        endpoint: str | None = None,
        params: Sequence[tuple[str, str]] | None = None,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
        content_stream: tuple[int, Callable[[], Iterator[bytes]]] | None = None,
        upload: Callable[[], BinaryIO] | None = None,
        upload_name: str = "file",
        upload_type: str = "application/octet-stream",
        idempotent: bool = True,
        ok: frozenset[int] = frozenset(),
        follow_redirects: bool | None = None,
        timeout_s: float | None = None,
        deadline_s: float | None = None,
        on_attempt: Callable[[], None] | None = None,
        on_sent: Callable[[int], None] | None = None,
    ) -> Iterator[Answer]:
        """Send one request (retried when idempotent) and yield its streamed answer.

        Args:
            endpoint: the route shape named in messages (``/tx/{id}/status``); default
                ``path``.
            content_stream: ``(length, pieces)``: a raw body of ``length`` bytes that
                ``pieces()`` yields (called again per attempt), sent with that
                ``Content-Length`` and never held whole (a large chunk read from a file).
            upload: opens a file sent as multipart field ``file`` (reopened per attempt,
                streamed, never loaded whole), with ``upload_name`` and ``upload_type``.
            ok: error statuses handed to the caller instead of raising.
            timeout_s / deadline_s: this operation's per-read timeout and deadline, when
                it needs other budgets than the client's (a long ``dag/import``).
            on_attempt: called before each attempt (counters).
            on_sent: called with the bytes uploaded by an attempt.

        Raises:
            BackendUnavailable: unreachable, timed out or past the deadline after retries.
            OdfWeb3Error: what ``reject`` builds for an error status not in ``ok``.
        """
        name = endpoint or path
        where = f"{self.service} {name}"
        s = self.settings
        deadline = s.deadline_s if deadline_s is None else max(deadline_s, 0.001)
        budget = s.command
        capped = False
        if budget is not None:
            left = budget.start(where)  # refused here once the command has spent its budget
            # A request on the client's own deadline gets no more than the command has left;
            # one given its own deadline (a long dag/import, a recursive pin: its bytes move
            # while it runs and are counted only once it is sent) keeps it.
            if deadline_s is None and left < deadline:
                capped, deadline = True, left
        try:
            with self._send(
                method,
                path,
                name,
                where,
                _Clock(s, self._now, deadline, capped=capped),
                params=params,
                headers=headers,
                content=content,
                content_stream=content_stream,
                upload=upload,
                upload_name=upload_name,
                upload_type=upload_type,
                idempotent=idempotent,
                ok=ok,
                follow_redirects=follow_redirects,
                per_read=s.timeout_s if timeout_s is None else timeout_s,
                on_attempt=on_attempt,
                on_sent=on_sent,
            ) as answer:
                yield answer
        finally:
            if budget is not None:
                budget.end()

    @contextmanager
    def _send(
        self,
        method: str,
        path: str,
        name: str,
        where: str,
        clock: _Clock,
        *,
        params: Sequence[tuple[str, str]] | None,
        headers: Mapping[str, str] | None,
        content: bytes | None,
        content_stream: tuple[int, Callable[[], Iterator[bytes]]] | None,
        upload: Callable[[], BinaryIO] | None,
        upload_name: str,
        upload_type: str,
        idempotent: bool,
        ok: frozenset[int],
        follow_redirects: bool | None,
        per_read: float,
        on_attempt: Callable[[], None] | None,
        on_sent: Callable[[int], None] | None,
    ) -> Iterator[Answer]:
        """The attempts of one operation (see :meth:`request`), bounded by ``clock``."""
        s = self.settings
        attempt = 0
        while True:
            self.attempts += 1
            if on_attempt is not None:
                on_attempt()
            left = clock.left()
            if left <= 0:
                raise self._late(where, clock)
            wait = min(per_read, left)
            stream: BinaryIO | None = None
            try:
                files = None
                if upload is not None:
                    stream = upload()
                    files = {"file": (upload_name, stream, upload_type)}
                sent_headers = dict(headers) if headers is not None else None
                body: bytes | Iterator[bytes] | None = content
                if content_stream is not None:
                    # An explicit Content-Length: httpx then streams the pieces as they
                    # come instead of chunked transfer encoding.
                    sent_headers = {
                        **(sent_headers or {}),
                        "content-length": str(content_stream[0]),
                    }
                    body = content_stream[1]()
                req = self._http.build_request(
                    method,
                    path,
                    params=list(params) if params is not None else None,
                    headers=sent_headers,
                    content=body,
                    files=files,
                    timeout=httpx.Timeout(wait, connect=min(wait, s.connect_timeout_s)),
                )
                response = self._http.send(
                    req,
                    stream=True,
                    follow_redirects=follow_redirects
                    if follow_redirects is not None
                    else httpx.USE_CLIENT_DEFAULT,
                )
            except httpx.TransportError as exc:
                if clock.capped and isinstance(exc, httpx.TimeoutException) and clock.spent_all():
                    raise self._late(where, clock) from exc  # the command's budget, not the read's
                if idempotent and attempt < s.retries and self._pause(attempt, clock):
                    attempt += 1
                    continue
                raise self._unavailable(where, exc) from exc
            except httpx.HTTPError as exc:  # e.g. too many redirects, an invalid URL
                raise BackendRejected(
                    f"{where}: {type(exc).__name__}: {one_line(str(exc))}", 0, type(exc).__name__
                ) from exc
            finally:
                if stream is not None:
                    with suppress(OSError, ValueError):
                        sent = stream.tell()
                        if clock.command is not None:
                            clock.command.add_moved(sent)
                        if on_sent is not None:
                            on_sent(sent)
                    stream.close()
                elif content is not None and clock.command is not None:
                    clock.command.add_moved(len(content))
                elif content_stream is not None and clock.command is not None:
                    clock.command.add_moved(content_stream[0])
            try:
                status = response.status_code
                if status >= 400 and status not in ok:
                    body = self._error_body(response, where, clock)
                    if (
                        idempotent
                        and self._retry(status, body)
                        and attempt < s.retries
                        and self._pause(attempt, clock)
                    ):
                        attempt += 1
                        continue
                    raise self._reject(method, name, status, body)
                yield Answer(self, response, where, clock)
                return
            finally:
                response.close()

    def _pause(self, attempt: int, clock: _Clock) -> bool:
        """Sleep before another attempt; False when the deadline leaves no time for it."""
        delay = self._delay(attempt)
        if delay >= clock.left():
            return False
        self.retries += 1
        self._sleep(delay)
        return True

    def _error_body(self, response: httpx.Response, where: str, clock: _Clock) -> bytes:
        try:
            return Answer(self, response, where, clock).read(ERROR_BODY_LIMIT)
        except (BackendRejected, BackendUnavailable):
            return b""

    # -- shorthands ----------------------------------------------------------------------------

    def fetch(
        self, method: str, path: str, *, limit: int, **kw: Any
    ) -> tuple[int, Mapping[str, str], bytes]:
        """``(status, headers, body)`` of one request, the body at most ``limit`` bytes."""
        with self.request(method, path, **kw) as answer:
            return answer.status, answer.headers, answer.read(limit)
