"""A loopback proxy in front of arlocal that hands it each transaction's chunks in order.

arlocal reassembles a chunked transaction from its chunks in the order they arrived
(docs/arweave.md, section 7: ``POST /chunk`` ignores the offset); a real node places each
chunk by its offset and proof. The Turbo bundler seeds a bundle's chunks many at a time
(its ``uploadTransactionAsync``), so a bundle of more than a few chunks reaches arlocal out
of order and its items (a multipart upload's large item among them) read back wrong. This
proxy, used only as the bundler's gateway (tests/support/turbo.py), holds each ``POST
/chunk`` until the chunks before it (by the offset the chunk names) have gone through, and
answers a chunk sent again 200 without passing it on (arlocal would store it twice). Every
other request is passed through as is.

Bounded: a held chunk waits at most ``hold`` seconds (then goes through anyway), request
and answer bodies are at most ``max_body`` bytes, and the proxy stops after ``max_life``.
"""

from __future__ import annotations

import base64
import http.client
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

__all__ = ["ChunkOrderProxy", "chunk_order_proxy"]

_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length", "host"})


class ChunkOrderProxy:
    """The proxy (see the module docstring); :func:`chunk_order_proxy` runs one."""

    def __init__(
        self,
        upstream: str,
        *,
        hold: float = 300.0,
        max_body: int = 64 << 20,
        max_life: float = 24 * 3600.0,
    ) -> None:
        parts = urlsplit(upstream)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.hold = hold
        self.max_body = max_body
        self._next: dict[str, int] = {}  # data_root -> the offset the next chunk starts at
        self._cond = threading.Condition()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._timer = threading.Timer(max_life, self.stop)
        self._timer.daemon = True
        self.reordered = 0  # chunks that had to wait for an earlier one

    def start(self) -> None:
        self._thread.start()
        self._timer.start()

    def stop(self) -> None:
        self._timer.cancel()
        self._server.shutdown()
        self._server.server_close()
        with self._cond:
            self._cond.notify_all()

    def _forward(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=600)
        try:
            conn.request(method, path, body=body or None, headers=headers)
            answer = conn.getresponse()
            data = answer.read(self.max_body + 1)[: self.max_body]
            kept = [(k, v) for k, v in answer.getheaders() if k.lower() not in _HOP]
            return answer.status, kept, data
        finally:
            conn.close()

    def _chunk_start(self, body: bytes) -> tuple[str, int, int] | None:
        """``(data_root, start, end)`` of a ``POST /chunk`` body (None: not one)."""
        try:
            doc = json.loads(body)
            raw = base64.urlsafe_b64decode(doc["chunk"] + "=" * (-len(doc["chunk"]) % 4))
            end = int(doc["offset"]) + 1  # the proof's offset is the chunk's last byte
            return str(doc["data_root"]), end - len(raw), end
        except (ValueError, KeyError, TypeError):
            return None

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(min(length, self.max_body)) if length else b""
        headers = {k: v for k, v in h.headers.items() if k.lower() not in _HOP}
        placed = self._chunk_start(body) if h.command == "POST" and h.path == "/chunk" else None
        if placed is not None:
            root, start, end = placed
            with self._cond:
                waited = self._cond.wait_for(
                    lambda: self._next.get(root, 0) >= start, timeout=self.hold
                )
                if waited and self._next.get(root, 0) > start:
                    status, kept, data = 200, [("Content-Type", "application/json")], b"{}"
                    self._reply(h, status, kept, data)  # sent before: arlocal has it
                    return
                if self._next.get(root, 0) < start or not waited:
                    self.reordered += 1
                try:
                    status, kept, data = self._forward(h.command, h.path, headers, body)
                finally:
                    self._next[root] = max(self._next.get(root, 0), end)
                    self._cond.notify_all()
        else:
            status, kept, data = self._forward(h.command, h.path, headers, body)
        self._reply(h, status, kept, data)

    def _reply(
        self, h: BaseHTTPRequestHandler, status: int, headers: list[tuple[str, str]], data: bytes
    ) -> None:
        h.send_response_only(status)
        for k, v in headers:
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(data)))
        h.send_header("Connection", "close")
        h.end_headers()
        h.wfile.write(data)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, format: str, *args: object) -> None:
                return

            def do_GET(self) -> None:
                try:
                    proxy._handle(self)
                except OSError:
                    return  # either side went away

            do_POST = do_GET
            do_PUT = do_GET
            do_HEAD = do_GET
            do_DELETE = do_GET

        return Handler


@contextmanager
def chunk_order_proxy(upstream: str, **kw: float) -> Iterator[ChunkOrderProxy]:
    """Run a :class:`ChunkOrderProxy` in front of ``upstream`` for the ``with`` block."""
    proxy = ChunkOrderProxy(upstream, **kw)  # type: ignore[arg-type]
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.stop()
