"""Gathering an answer that arrives in many small pieces: linear, not quadratic.

Usage::

    python bench/bench_small_pieces.py [--mib 2] [--piece 64] [--repeat 5]

An HTTP answer of N MiB streamed in P-byte pieces (an ``httpx.MockTransport`` stream: a real
socket would coalesce them) is read whole by the shared HTTP layer
(``HttpClient.request(...).read``) and by ``ArweaveGateway.get_data``. The reference is
``b"".join`` over the same pieces from the same stream in the same run, so the ratio says how
much the readers add to the unavoidable work. Gathering with ``data += piece`` (what both did
before) copies the answer once per piece: 2 MiB in 64-byte pieces took 9-12 s where the
join takes milliseconds; a linear reader stays within a small constant factor of the join and
keeps that factor when the size doubles (compare ``--mib 2`` with ``--mib 4``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import best_of, machine, print_table

from odfweb3.transport.http import HttpClient
from odfweb3.transport.settings import NetworkSettings
from odfweb3_arweave.client.gateway import ArweaveGateway


class _Pieces(httpx.SyncByteStream):
    def __init__(self, piece: bytes, n: int) -> None:
        self.piece, self.n = piece, n

    def __iter__(self) -> Iterator[bytes]:
        for _ in range(self.n):
            yield self.piece


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--mib", type=int, default=2, help="answer size in MiB (default 2)")
    parser.add_argument("--piece", type=int, default=64, help="piece size in bytes (64)")
    parser.add_argument("--repeat", type=int, default=5, help="rounds, best counts (5)")
    args = parser.parse_args(argv)
    size = args.mib << 20
    n = size // args.piece
    piece = b"z" * args.piece
    transport = httpx.MockTransport(lambda r: httpx.Response(200, stream=_Pieces(piece, n)))
    settings = NetworkSettings(deadline_s=600)
    http = HttpClient(
        "http://t.test", service="bench", hint="-", settings=settings, transport=transport
    )
    gw = ArweaveGateway("http://gw.test", settings=settings, transport=transport)

    def join() -> int:
        return len(b"".join(_Pieces(piece, n)))

    def http_read() -> int:
        with http.request("GET", "/x") as answer:
            return len(answer.read(size * 2))

    def gateway() -> int:
        return len(gw.get_data("x" * 43, limit=size * 2))

    print(machine())
    print(f"{args.mib} MiB in {n:,} pieces of {args.piece} bytes, best of {args.repeat}")
    ref, got = best_of(join, args.repeat)
    assert got == size
    rows = [("reader", "best s", "x join")]
    rows.append(("b''.join (reference)", f"{ref.best:.4f}", "1.0"))
    for name, fn in (("HttpClient read", http_read), ("ArweaveGateway.get_data", gateway)):
        t, got = best_of(fn, args.repeat)
        if got != size:
            print(f"{name}: read {got} bytes, not {size}", file=sys.stderr)
            return 1
        rows.append((name, f"{t.best:.4f}", f"{t.best / ref.best:.1f}"))
    print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
