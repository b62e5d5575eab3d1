"""A loopback HTTP proxy in front of a real node or gateway that can be told to lie.

Used by the integration tests to play a dishonest or failing gateway/RPC API, with the real
Kubo node behind it (a fault a real node cannot be made to produce; the node itself is
never replaced). Every request is forwarded to ``upstream`` (GET and POST, body and query
kept, redirects followed upstream so the client never bypasses the proxy). Faults:

- ``flip``: a path substring; the first byte of matching answers is XOR-ed with 0x01;
- ``rewrite``: ``(old, new)`` replaced in the request path before forwarding (serve another
  dataset's root under this one's path);
- ``replay_record``: raw IPNS record bytes answered for RPC ``dht/get`` / ``routing/get`` /
  ``name/get`` and for the gateway's ``?format=ipns-record`` (an older, validly signed record
  replayed);
- ``deserialized_only``: the ``format=`` query and ``Accept: application/vnd.*`` headers are
  dropped before forwarding, so the real gateway answers as a gateway without trustless
  responses does (the file or a directory listing instead of raw blocks, CARs, records);
- ``not_found``: path substrings answered ``404 page not found`` as Kubo does for a command
  it does not have (an older node: e.g. ``/api/v0/name/put`` before Kubo 0.40);
- ``fail_after``: ``(substring, n)``; after ``n`` matching requests, each further one has its
  connection closed without an answer (an interrupted transfer);
- ``swaps``: ``(a, b)`` pairs; ``a`` is replaced by ``b`` in the request path and body, and
  ``b`` by ``a`` in the answer: item ``b`` (or owner ``b``) is served under ``a``'s name, a
  gateway's forged GraphQL answer built from real items;
- ``raw``: item id -> bytes answered for ``GET /raw/{id}`` (the ar.io route that serves an
  item's own data, a path manifest's JSON; arlocal has none), genuine or forged;
- ``edit``: ``(method, path, answer bytes) -> answer bytes``, applied to every forwarded
  answer (a service that lies in one field, or echoes what it was sent);
- ``delay_s``: seconds each request waits before it is forwarded (a slow link);
- ``hold_after``: ``(substring, n)``; after ``n`` matching requests, each further one waits
  unanswered until :meth:`LyingProxy.honest` (or :meth:`release`), then is forwarded: a
  transfer stalled mid-way, for killing the client while it waits (``held`` counts them).

``requests`` lists the paths asked (for counting what a resumed pull fetched again).
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

__all__ = ["LyingProxy", "lying_proxy"]

_HOP_HEADERS = {"connection", "transfer-encoding", "content-length", "content-encoding", "host"}


class LyingProxy:
    """State of one proxy (see the module docstring)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.flip: str | None = None
        self.rewrite: tuple[str, str] | None = None
        self.replay_record: bytes | None = None
        self.fail_after: tuple[str, int] | None = None
        self.deserialized_only = False
        self.swaps: list[tuple[str, str]] = []
        self.not_found: tuple[str, ...] = ()
        self.raw: dict[str, bytes] = {}
        self.edit: Callable[[str, str, bytes], bytes] | None = None
        self.delay_s = 0.0
        self.hold_after: tuple[str, int] | None = None
        self.held = 0
        self._released = threading.Event()
        self.requests: list[str] = []
        self._matched = 0
        self._hold_matched = 0
        self._lock = threading.Lock()
        self._client = httpx.Client(timeout=60.0, follow_redirects=True)
        self._server: ThreadingHTTPServer | None = None
        self.url = ""

    def honest(self) -> None:
        """Stop lying and failing."""
        self.flip = self.rewrite = self.replay_record = self.fail_after = None
        self.deserialized_only = False
        self.swaps = []
        self.not_found = ()
        self.raw = {}
        self.edit = None
        self.delay_s = 0.0
        self._matched = 0
        self.release()

    def release(self) -> None:
        """Let the held requests (and any later one) through."""
        self.hold_after = None
        self._released.set()

    def count(self, part: str) -> int:
        """How many requests asked a path containing ``part``."""
        return sum(1 for r in self.requests if part in r)

    def _handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        path = h.path
        with self._lock:
            self.requests.append(path)
            if self.fail_after is not None and self.fail_after[0] in path:
                self._matched += 1
                if self._matched > self.fail_after[1]:
                    h.close_connection = True
                    return  # no answer at all: the client sees a dropped connection
            hold = False
            if self.hold_after is not None and self.hold_after[0] in path:
                self._hold_matched += 1
                hold = self._hold_matched > self.hold_after[1]
                if hold:
                    self.held += 1
        if hold:
            self._released.wait(timeout=600)
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.rewrite is not None:
            path = path.replace(*self.rewrite)
        if path.startswith("/raw/") and path[len("/raw/") :] in self.raw:
            self._answer(h, 200, "application/octet-stream", self.raw[path[len("/raw/") :]])
            return
        if any(part in path for part in self.not_found):
            length = int(h.headers.get("content-length") or 0)
            if length:
                h.rfile.read(length)
            self._answer(h, 404, "text/plain; charset=utf-8", b"404 page not found\n")
            return
        if self.replay_record is not None:
            if "/dht/get" in path or "/routing/get" in path:
                line = {"Extra": base64.b64encode(self.replay_record).decode(), "Type": 5}
                self._answer(h, 200, "application/json", (json.dumps(line) + "\n").encode())
                return
            if "/name/get" in path:
                self._answer(h, 200, "application/vnd.ipfs.ipns-record", self.replay_record)
                return
            if path.startswith("/ipns/") and "format=ipns-record" in path:
                self._answer(h, 200, "application/vnd.ipfs.ipns-record", self.replay_record)
                return
        length = int(h.headers.get("content-length") or 0)
        body = h.rfile.read(length) if length else None
        for a, b in self.swaps:
            path = path.replace(a, b)
            body = body.replace(a.encode(), b.encode()) if body else body
        headers = {k: v for k, v in h.headers.items() if k.lower() not in _HOP_HEADERS}
        if self.deserialized_only:
            headers = {
                k: v
                for k, v in headers.items()
                if not (k.lower() == "accept" and "application/vnd." in v)
            }
            base, _, query = path.partition("?")
            kept = [q for q in query.split("&") if q and not q.startswith("format=")]
            path = base + ("?" + "&".join(kept) if kept else "")
        r = self._client.request(method, self.upstream + path, content=body, headers=headers)
        data = r.content
        for a, b in self.swaps:
            data = data.replace(b.encode(), a.encode())
        if self.flip is not None and self.flip in path and data:
            data = bytes([data[0] ^ 0x01]) + data[1:]
        if self.edit is not None:
            data = self.edit(method, path, data)
        self._answer(h, r.status_code, r.headers.get("content-type", ""), data)

    @staticmethod
    def _answer(h: BaseHTTPRequestHandler, status: int, ctype: str, data: bytes) -> None:
        h.send_response(status)
        if ctype:
            h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def start(self) -> None:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                proxy._handle(self, "GET")

            def do_POST(self) -> None:
                proxy._handle(self, "POST")

            def do_DELETE(self) -> None:
                proxy._handle(self, "DELETE")

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self._released.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        self._client.close()


@contextmanager
def lying_proxy(upstream: str) -> Iterator[LyingProxy]:
    """A started proxy in front of ``upstream``, stopped afterwards."""
    proxy = LyingProxy(upstream)
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.stop()
