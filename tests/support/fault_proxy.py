"""A loopback HTTP proxy that injects faults between odfweb3 and a real test node.

Not the lying-gateway proxy (tests/support/lying_proxy.py serves wrong *content*): this one
breaks the *transport*, at a chosen rate drawn from a seeded RNG, so a failing run can be
replayed. Faults, one per unlucky request:

- ``reset``: the connection is reset (RST) before the request reaches the node;
- ``reset_after``: the request reaches the node, the answer is lost (RST);
- ``cut_upload``: half the request body reaches the node, then both sides are cut
  (requests with a body only);
- ``timeout``: nothing is answered for ``hold`` seconds (set the client's timeout shorter),
  then the connection is closed;
- ``http5xx``: 502 / 503 / 504 without asking the node;
- ``truncate``: the node's answer is sent with its full Content-Length but only half of it;
- ``trickle``: the answer arrives in small pieces with pauses (slow, but whole).

Everything is bounded: one request's body and answer (``max_body``), the number of requests
(``max_requests``), and the proxy's life (``max_life`` seconds, then it stops by itself).
It listens on 127.0.0.1 on a free port and forwards only to the one upstream it was given.
Counters (``bytes_up``: request-body bytes that reached the node, per path too) let tests
measure what a client really sent.
"""

from __future__ import annotations

import http.client
import random
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

__all__ = ["FAULTS", "FaultProxy", "FaultStats", "fault_proxy"]

FAULTS = ("reset", "reset_after", "cut_upload", "timeout", "http5xx", "truncate", "trickle")
_HOP = {
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "te",
}


@dataclass
class FaultStats:
    """What the proxy did: requests seen, faults injected, bytes forwarded."""

    requests: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    bytes_up: int = 0
    bytes_down: int = 0
    up_by_path: Counter[str] = field(default_factory=Counter)


class FaultProxy:
    """The proxy (see the module docstring); use :func:`fault_proxy` to run one.

    Args:
        upstream: ``http://127.0.0.1:PORT`` of the real node.
        rate: probability of a fault per request (0 = pass-through).
        seed: RNG seed (faults are reproducible for a given request order).
        faults: which faults to draw from.
        hold: seconds a ``timeout`` fault holds the connection.
        max_body: largest request body or answer handled (bigger: 502).
        max_requests: requests served before every further one is refused (503).
        max_life: seconds after which the proxy stops by itself.
    """

    def __init__(
        self,
        upstream: str,
        *,
        rate: float = 0.0,
        seed: int = 0,
        faults: tuple[str, ...] = FAULTS,
        hold: float = 3.0,
        max_body: int = 256 << 20,
        max_requests: int = 20_000,
        max_life: float = 600.0,
    ) -> None:
        parts = urlsplit(upstream)
        if parts.hostname not in ("127.0.0.1", "localhost", "::1") or parts.port is None:
            raise ValueError(f"fault proxy forwards to loopback nodes only, not {upstream}")
        self.upstream_host = parts.hostname
        self.upstream_port = parts.port
        self.rate = rate
        self.faults = faults
        self.hold = hold
        self.max_body = max_body
        self.max_requests = max_requests
        self.max_life = max_life
        self.stats = FaultStats()
        self.only_paths: tuple[str, ...] = ()  # when set, faults hit only these path prefixes
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._serve, name="fault-proxy", daemon=True)

    # -- control ---------------------------------------------------------------------------

    def start(self) -> None:
        """Serve in a background thread; a timer stops it after ``max_life`` seconds."""
        self._thread.start()
        timer = threading.Timer(self.max_life, self.stop)
        timer.daemon = True
        timer.start()

    def _serve(self) -> None:
        self._server.serve_forever(poll_interval=0.1)

    def stop(self) -> None:
        """Stop serving and wake every held connection."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()

    def set_rate(self, rate: float) -> None:
        """Change the fault rate (0: the proxy only forwards)."""
        with self._lock:
            self.rate = rate

    def _draw(self, path: str, has_body: bool) -> str | None:
        with self._lock:
            self.stats.requests += 1
            if self.only_paths and not path.startswith(self.only_paths):
                return None
            if self.rate <= 0 or self._rng.random() >= self.rate:
                return None
            choices = [f for f in self.faults if f != "cut_upload" or has_body]
            fault = self._rng.choice(choices)
            self.stats.faults[fault] += 1
            return fault

    def _count_up(self, path: str, n: int) -> None:
        with self._lock:
            self.stats.bytes_up += n
            self.stats.up_by_path[path.split("?", 1)[0]] += n

    # -- the handler -----------------------------------------------------------------------

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # one request per connection: no keep-alive state

            def log_message(self, format: str, *args: object) -> None:
                return

            def do_GET(self) -> None:
                proxy._handle(self)

            do_POST = do_GET
            do_PUT = do_GET
            do_HEAD = do_GET

        return Handler

    def _read_body(self, h: BaseHTTPRequestHandler) -> bytes | None:
        if h.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(h.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while h.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(out)
                out += h.rfile.read(size)
                h.rfile.readline()
                if len(out) > self.max_body:
                    return None
        length = int(h.headers.get("Content-Length") or 0)
        if length > self.max_body:
            return None
        return h.rfile.read(length) if length else b""

    def _reset(self, h: BaseHTTPRequestHandler) -> None:
        """Close with SO_LINGER 0: the client sees a connection reset."""
        sock: socket.socket = h.connection
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
        except OSError:
            pass
        h.close_connection = True

    def _simple(self, h: BaseHTTPRequestHandler, status: int, body: bytes) -> None:
        h.send_response(status)
        h.send_header("Content-Type", "text/plain")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        if self._stop.is_set() or self.stats.requests >= self.max_requests:
            self._simple(h, 503, b"fault proxy: stopped or request budget spent")
            return
        body = self._read_body(h)
        if body is None:
            self._simple(h, 502, b"fault proxy: body too large")
            return
        fault = self._draw(h.path, bool(body))
        if fault == "reset":
            self._reset(h)
            return
        if fault == "timeout":
            self._stop.wait(self.hold)
            self._reset(h)
            return
        if fault == "http5xx":
            with self._lock:
                status = self._rng.choice((502, 503, 504))
            self._simple(h, status, b"fault proxy: injected server error")
            return
        headers = {k: v for k, v in h.headers.items() if k.lower() not in _HOP}
        headers["Content-Length"] = str(len(body))
        headers["Host"] = f"{self.upstream_host}:{self.upstream_port}"
        conn = http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=300)
        try:
            if fault == "cut_upload":
                conn.putrequest(h.command, h.path, skip_host=True, skip_accept_encoding=True)
                for k, v in headers.items():
                    conn.putheader(k, v)
                conn.endheaders()
                half = body[: len(body) // 2]
                conn.send(half)
                self._count_up(h.path, len(half))
                conn.close()
                self._reset(h)
                return
            conn.request(h.command, h.path, body=body, headers=headers)
            self._count_up(h.path, len(body))
            resp = conn.getresponse()
            answer = resp.read(self.max_body + 1)
            status, reason, resp_headers = resp.status, resp.reason, resp.getheaders()
        except (OSError, http.client.HTTPException):
            self._reset(h)
            return
        finally:
            conn.close()
        with self._lock:
            self.stats.bytes_down += len(answer)
        if len(answer) > self.max_body:
            self._simple(h, 502, b"fault proxy: answer too large")
            return
        if fault == "reset_after":
            self._reset(h)
            return
        h.send_response_only(status, reason)
        for k, v in resp_headers:
            if k.lower() not in _HOP and k.lower() != "content-length":
                h.send_header(k, v)
        h.send_header("Content-Length", str(len(answer)))
        h.send_header("Connection", "close")
        h.end_headers()
        try:
            if fault == "truncate":
                h.wfile.write(answer[: len(answer) // 2])
                h.wfile.flush()
                self._reset(h)
                return
            if fault == "trickle":
                # At most 20 pieces, 50 ms apart: slow but bounded (about a second).
                step = max(1, len(answer) // 20)
                for i in range(0, len(answer), step):
                    h.wfile.write(answer[i : i + step])
                    h.wfile.flush()
                    if self._stop.wait(0.05):
                        break
                return
            h.wfile.write(answer)
        except OSError:
            pass


@contextmanager
def fault_proxy(upstream: str, **kw: object) -> Iterator[FaultProxy]:
    """Run a :class:`FaultProxy` in front of ``upstream`` for the ``with`` block."""
    proxy = FaultProxy(upstream, **kw)  # type: ignore[arg-type]
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.stop()
        time.sleep(0)  # let handler threads see the stop event
