"""A scripted hostile HTTP server on loopback: a gateway, node or Arweave endpoint that lies.

Not a proxy (tests/support/lying_proxy.py and fault_proxy.py sit in front of a real node):
this server has no upstream at all. A test scripts, per path (and optionally per query
parameter), what each request gets:

- :meth:`HostileServer.serve`: given bytes (any status, headers, a lying ``Content-Length``
  or ``Content-Type``): forged content under a CID path, a wrong answer to a query;
- :meth:`HostileServer.status`: a bare status code (404, 406, 500, 429...);
- :meth:`HostileServer.endless`: a body that never ends (no ``Content-Length``), or a huge
  one announced with its ``Content-Length``; the bytes are produced lazily, never held;
- :meth:`HostileServer.drip`: bytes sent a few at a time with pauses (a slow-loris answer);
- :meth:`HostileServer.hang`: headers (or nothing at all) then silence;
- :meth:`HostileServer.cut`: a full ``Content-Length`` announced, part of the body sent,
  then the connection closed;
- :meth:`HostileServer.refuse_raw`: every ``?format=raw`` (and ``Accept:
  application/vnd.ipld.raw``) request answered 406, as gateways that serve only paths do.

A route may also be a callable ``(request) -> Rule`` for answers that depend on the request.
Unscripted paths get 404. Routes match on the path without the query; a route made with
``query={"format": "car"}`` matches only requests carrying those query parameters and wins
over a route without a query.

Everything is bounded: each answer's bytes (``max_answer``, default 64 GiB: far above any
client budget, yet finite), each pause loop (it wakes on :meth:`stop`), the requests served
(``max_requests``) and the server's life (``max_life`` seconds, then it stops by itself).
It listens on 127.0.0.1 on a free port. ``requests`` records what was asked and
``bytes_sent`` what was sent, so tests can check a client stopped early.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

__all__ = ["HostileServer", "Request", "Rule", "hostile_server"]

_CHUNK = 64 * 1024


@dataclass(frozen=True)
class Request:
    """One request as the server saw it."""

    method: str
    path: str  # without the query
    query: Mapping[str, str]  # first value of each parameter
    headers: Mapping[str, str]  # lower-cased names
    body: bytes


@dataclass(frozen=True)
class Rule:
    """What to answer (build with the :class:`HostileServer` helpers, or directly).

    kind: ``bytes`` (send ``body``), ``endless`` (``fill`` repeated up to ``length`` bytes,
    or until the client goes away), ``drip`` (``body`` in ``piece``-byte pieces, ``every``
    seconds apart), ``hang`` (send headers when ``headers_first``, then nothing for
    ``seconds``), ``cut`` (announce ``len(body)``, send ``body[:after]``, close).
    """

    kind: str = "bytes"
    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    content_length: int | None = None  # announced length; None: the truth (or none if endless)
    fill: bytes = b"\0"
    length: int | None = None  # endless: total bytes to send (None: until max_answer)
    piece: int = 1
    every: float = 1.0
    seconds: float = 60.0
    headers_first: bool = True
    after: int = 0


Route = Rule | Callable[[Request], Rule]


class HostileServer:
    """The server (see the module docstring); use :func:`hostile_server` to run one."""

    def __init__(
        self,
        *,
        max_life: float = 120.0,
        max_requests: int = 100_000,
        max_answer: int = 64 << 30,
        max_request_body: int = 64 << 20,
    ) -> None:
        self.max_life = max_life
        self.max_requests = max_requests
        self.max_answer = max_answer
        self.max_request_body = max_request_body
        self.requests: list[Request] = []
        self.bytes_sent = 0
        self._routes: dict[str, list[tuple[dict[str, str], Route]]] = {}
        self._refuse_raw = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._closed = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._serve, name="hostile-server", daemon=True)
        self._timer = threading.Timer(max_life, self.stop)
        self._timer.daemon = True

    # -- scripting ---------------------------------------------------------------------------

    def route(self, path: str, rule: Route, *, query: Mapping[str, str] | None = None) -> None:
        """Answer requests for ``path`` (and ``query``, when given) with ``rule``."""
        with self._lock:
            rules = self._routes.setdefault(path, [])
            rules[:] = [(q, r) for q, r in rules if q != dict(query or {})]
            rules.append((dict(query or {}), rule))
            rules.sort(key=lambda qr: -len(qr[0]))  # the most specific query first

    def serve(
        self,
        path: str,
        body: bytes,
        *,
        status: int = 200,
        headers: Mapping[str, str] | None = None,
        content_length: int | None = None,
        query: Mapping[str, str] | None = None,
    ) -> None:
        """``body`` (``content_length`` may lie; ``headers`` e.g. a wrong Content-Type)."""
        rule = Rule("bytes", status, body, dict(headers or {}), content_length=content_length)
        self.route(path, rule, query=query)

    def status(self, path: str, code: int, *, query: Mapping[str, str] | None = None) -> None:
        """A bare status code with a one-line text body."""
        self.route(path, Rule("bytes", code, f"hostile: {code}\n".encode()), query=query)

    def endless(
        self,
        path: str,
        *,
        length: int | None = None,
        announce: bool = False,
        fill: bytes = b"\0",
        query: Mapping[str, str] | None = None,
    ) -> None:
        """``fill`` repeated: ``length`` bytes (None: until ``max_answer``); ``announce``
        sends ``Content-Length: length`` (a huge but honest answer), else none (endless)."""
        cl = length if announce else None
        rule = Rule("endless", fill=fill, length=length, content_length=cl)
        self.route(path, rule, query=query)

    def drip(
        self,
        path: str,
        body: bytes,
        *,
        piece: int = 1,
        every: float = 1.0,
        query: Mapping[str, str] | None = None,
    ) -> None:
        """``body`` in ``piece``-byte pieces, ``every`` seconds apart."""
        self.route(path, Rule("drip", body=body, piece=piece, every=every), query=query)

    def hang(
        self,
        path: str,
        *,
        seconds: float = 60.0,
        headers_first: bool = False,
        query: Mapping[str, str] | None = None,
    ) -> None:
        """Say nothing for ``seconds`` (after the headers when ``headers_first``)."""
        rule = Rule("hang", seconds=seconds, headers_first=headers_first)
        self.route(path, rule, query=query)

    def cut(
        self, path: str, body: bytes, *, after: int, query: Mapping[str, str] | None = None
    ) -> None:
        """Announce ``len(body)`` bytes, send ``after`` of them, close the connection."""
        self.route(path, Rule("cut", body=body, after=after), query=query)

    def refuse_raw(self, refuse: bool = True) -> None:
        """Answer 406 to every raw-block request (``?format=raw`` or the raw Accept type)."""
        self._refuse_raw = refuse

    def count(self, part: str) -> int:
        """How many requests had a path containing ``part``."""
        with self._lock:
            return sum(1 for r in self.requests if part in r.path)

    # -- life --------------------------------------------------------------------------------

    def start(self) -> None:
        """Serve in a background thread; stop by itself after ``max_life`` seconds."""
        self._thread.start()
        self._timer.start()

    def _serve(self) -> None:
        self._server.serve_forever(poll_interval=0.1)

    def stop(self) -> None:
        """Stop serving and wake every held or dripping connection."""
        with self._lock:
            first = not self._stop.is_set()
            self._stop.set()
        if not first:
            self._closed.wait(10)  # another thread is closing: return once it is closed
            return
        self._timer.cancel()
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()
        self._closed.set()

    @property
    def stopped(self) -> bool:
        """True once the listening socket is closed."""
        return self._closed.is_set()

    # -- answering ---------------------------------------------------------------------------

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # one request per connection
            timeout = 30  # a client that never sends its request is dropped

            def log_message(self, format: str, *args: object) -> None:
                return

            def do_GET(self) -> None:
                with contextlib.suppress(OSError):  # the client went away: its right
                    server._handle(self)

            do_POST = do_GET
            do_PUT = do_GET
            do_HEAD = do_GET

        return Handler

    def _read_request(self, h: BaseHTTPRequestHandler) -> Request | None:
        length = int(h.headers.get("Content-Length") or 0)
        if length > self.max_request_body:
            return None
        body = h.rfile.read(length) if length else b""
        parts = urlsplit(h.path)
        query = {k: v[0] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        headers = {k.lower(): v for k, v in h.headers.items()}
        return Request(h.command, parts.path, query, headers, body)

    def _pick(self, req: Request) -> Rule:
        if self._refuse_raw and (
            req.query.get("format") == "raw"
            or "application/vnd.ipld.raw" in req.headers.get("accept", "")
        ):
            return Rule("bytes", 406, b"hostile: raw blocks are not served here\n")
        with self._lock:
            rules = list(self._routes.get(req.path, ()))
        for query, route in rules:
            if all(req.query.get(k) == v for k, v in query.items()):
                return route(req) if callable(route) else route
        return Rule("bytes", 404, b"hostile: not scripted\n")

    def _send(self, h: BaseHTTPRequestHandler, data: bytes) -> None:
        h.wfile.write(data)
        h.wfile.flush()
        with self._lock:
            self.bytes_sent += len(data)

    def _head(self, h: BaseHTTPRequestHandler, rule: Rule, length: int | None) -> None:
        h.send_response_only(rule.status)
        names = {k.lower() for k in rule.headers}
        for k, v in rule.headers.items():
            h.send_header(k, v)
        if "content-type" not in names:
            h.send_header("Content-Type", "application/octet-stream")
        if length is not None and "content-length" not in names:
            h.send_header("Content-Length", str(length))
        h.send_header("Connection", "close")
        h.end_headers()

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        req = self._read_request(h)
        with self._lock:
            if req is not None:
                self.requests.append(req)
            spent = len(self.requests) > self.max_requests
        if req is None or spent or self._stop.is_set():
            rule = Rule("bytes", 503, b"hostile: stopped, budget spent or body too big\n")
        else:
            rule = self._pick(req)
        head_only = h.command == "HEAD"
        if rule.kind == "bytes":
            length = rule.content_length if rule.content_length is not None else len(rule.body)
            self._head(h, rule, length)
            if not head_only:
                self._send(h, rule.body)
        elif rule.kind == "endless":
            self._head(h, rule, rule.content_length)
            if not head_only:
                self._endless(h, rule)
        elif rule.kind == "drip":
            self._head(h, rule, len(rule.body))
            step = max(1, rule.piece)
            for i in range(0, len(rule.body), step):
                if i and self._stop.wait(rule.every):
                    break
                self._send(h, rule.body[i : i + step])
        elif rule.kind == "hang":
            if rule.headers_first:
                self._head(h, rule, None)
            self._stop.wait(rule.seconds)
        elif rule.kind == "cut":
            self._head(h, rule, len(rule.body))
            self._send(h, rule.body[: rule.after])
        else:
            raise ValueError(f"unknown rule kind {rule.kind!r}")
        h.close_connection = True

    def _endless(self, h: BaseHTTPRequestHandler, rule: Rule) -> None:
        total = self.max_answer if rule.length is None else min(rule.length, self.max_answer)
        fill = rule.fill or b"\0"
        block = (fill * (_CHUNK // len(fill) + 1))[:_CHUNK]
        sent = 0
        while sent < total and not self._stop.is_set():
            n = min(len(block), total - sent)
            self._send(h, block[:n])
            sent += n


@contextmanager
def hostile_server(**kw: float | int) -> Iterator[HostileServer]:
    """Run a :class:`HostileServer` for the ``with`` block (it stops on exit, or by itself
    after ``max_life`` seconds)."""
    server = HostileServer(**kw)  # type: ignore[arg-type]
    server.start()
    try:
        yield server
    finally:
        server.stop()
