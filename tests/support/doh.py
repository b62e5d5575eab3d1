"""A DNS-over-HTTPS responder on loopback (plain HTTP) serving TXT records from a dict.

Kubo resolves DNSLink through ``DNS.Resolvers``, whose values must be DoH URLs (boxo
``gateway/dns.go`` accepts ``https://`` and ``http://``); its client (libp2p go-doh-resolver)
POSTs an RFC 1035 wire query as ``application/dns-message`` (RFC 8484) and wants the same type
back. So a test points Kubo at this server for a test-only TLD::

    with doh_server({"_dnslink.example.test.": ['dnslink=/ipns/k51...']}) as dns:
        with start_kubo(work, config={"DNS.Resolvers": {"test.": dns.url}}) as node: ...

Names are matched case-insensitively, with or without the trailing dot; a name with no entry
gets NXDOMAIN, a non-TXT question an empty answer. ``dns.zone`` can be changed while running
(a test publishes first, then sets the TXT record the CLI printed). ``dns.queries`` lists the
names asked, so a test can show the lookup really went through this server; ``dns.delay_s``
makes every answer wait (a slow resolver).

The wire format is written by hand (header, one question, TXT answers with a compressed name
pointer): it is small, and a dependency for it would be the only use of one.
"""

from __future__ import annotations

import contextlib
import struct
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["DohServer", "doh_server", "encode_txt_answer", "parse_question"]

TYPE_TXT = 16
CLASS_IN = 1
MAX_QUERY = 512
TTL = 60


def parse_question(msg: bytes) -> tuple[int, str, int, int, int]:
    """``(id, name, qtype, qclass, end of question)`` of a DNS query with one question."""
    if len(msg) < 12:
        raise ValueError("DNS message shorter than its header")
    qid, _flags, qdcount = struct.unpack(">HHH", msg[:6])
    if qdcount != 1:
        raise ValueError(f"{qdcount} questions; this responder answers exactly one")
    labels: list[str] = []
    pos = 12
    while True:
        if pos >= len(msg):
            raise ValueError("question name runs past the message")
        n = msg[pos]
        pos += 1
        if n == 0:
            break
        if n > 63:
            raise ValueError("compressed or oversized label in a question")
        labels.append(msg[pos : pos + n].decode("ascii"))
        pos += n
    if pos + 4 > len(msg):
        raise ValueError("question type/class missing")
    qtype, qclass = struct.unpack(">HH", msg[pos : pos + 4])
    return qid, ".".join(labels).lower() + ".", qtype, qclass, pos + 4


def _character_strings(text: str) -> bytes:
    raw = text.encode("utf-8")
    chunks = [raw[i : i + 255] for i in range(0, len(raw), 255)] or [b""]
    return b"".join(bytes([len(c)]) + c for c in chunks)


def encode_txt_answer(query: bytes, records: Sequence[str] | None) -> bytes:
    """The response to ``query``: its TXT ``records``, or NXDOMAIN when ``records`` is None."""
    qid, _name, qtype, qclass, end = parse_question(query)
    rd = struct.unpack(">H", query[2:4])[0] & 0x0100
    answers = [] if records is None or qtype != TYPE_TXT or qclass != CLASS_IN else records
    rcode = 3 if records is None else 0
    flags = 0x8000 | 0x0400 | rd | 0x0080 | rcode  # QR, AA, RD copied, RA
    header = struct.pack(">HHHHHH", qid, flags, 1, len(answers), 0, 0)
    body = [header, query[12:end]]
    for text in answers:
        rdata = _character_strings(text)
        # name: pointer to the question's name at offset 12
        body.append(struct.pack(">HHHIH", 0xC00C, TYPE_TXT, CLASS_IN, TTL, len(rdata)) + rdata)
    return b"".join(body)


@dataclass
class DohServer:
    """A running responder: ``url`` for ``DNS.Resolvers``, the mutable ``zone``, ``queries``."""

    url: str
    zone: dict[str, list[str]]
    queries: list[str] = field(default_factory=list)
    delay_s: float = 0.0  # each answer waits this long (a slow resolver)

    def set_txt(self, name: str, *records: str) -> None:
        """Serve ``records`` as the TXT answer for ``name``."""
        self.zone[_fqdn(name)] = list(records)


def _fqdn(name: str) -> str:
    return name.lower().rstrip(".") + "."


@contextlib.contextmanager
def doh_server(zone: Mapping[str, Sequence[str]] | None = None) -> Iterator[DohServer]:
    """Serve ``zone`` (name -> TXT strings) over DoH on 127.0.0.1 until the block ends."""
    state = DohServer(url="", zone={_fqdn(k): list(v) for k, v in (zone or {}).items()})
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if self.headers.get("Content-Type") != "application/dns-message" or not (
                0 < length <= MAX_QUERY
            ):
                self.send_error(415 if length else 400)
                return
            query = self.rfile.read(length)
            try:
                _, name, _, _, _ = parse_question(query)
            except (ValueError, UnicodeDecodeError):
                self.send_error(400)
                return
            with lock:
                state.queries.append(name)
                records = state.zone.get(name)
                answer = encode_txt_answer(query, None if records is None else list(records))
            if state.delay_s:
                time.sleep(state.delay_s)
            self.send_response(200)
            self.send_header("Content-Type", "application/dns-message")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/dns-query"
    thread = threading.Thread(target=server.serve_forever, name="doh", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
