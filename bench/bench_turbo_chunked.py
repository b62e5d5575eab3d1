"""One large item to the real Turbo bundler: whole (``POST /v1/tx``) against chunked, same run.

Starts the real Turbo bundler (tests/support/turbo.py; ``make turbonode``), signs one data
item per size and round with a fresh wallet, and sends it both ways: whole through
``TurboClient.post_item`` (the item's bytes are one request body) and in chunks through
:func:`odfweb3_arweave.publish.turbo_chunks.send_chunked` (5 MiB chunks read from the spool
file, streamed 64 KiB at a time; then the bundler's assembly until its receipt). Each is
timed until the verified receipt is in hand. This is what ``arweave.turbo_chunked_above``
trades: memory (whole: the item is one request body, read whole; chunked: 64 KiB pieces) and
resumability against the chunked path's extra requests and its wait for the bundler's
background assembly. (The heap is not measured here: the harness's chunk-order proxy runs
in this process and holds the bundler's seeding traffic.) Run from the repository root::

    .venv/bin/python bench/bench_turbo_chunked.py [--sizes 10,40] [--rounds 2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="10,40", help="item sizes in MiB")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from odfweb3_arweave.client.turbo import TurboClient
    from odfweb3_arweave.formats.ans104 import create_data_item, encode_data_item
    from odfweb3_arweave.publish.turbo_chunks import DEFAULT_CHUNK_BYTES, send_chunked
    from odfweb3_arweave.wallet import generate_wallet
    from tests.support.turbo import start_turbo

    sizes = [int(s) for s in args.sizes.split(",")]
    seconds: dict[tuple[int, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="odfweb3-bench-turbo-chunked-") as tmp:
        work = Path(tmp)
        with start_turbo(work / "turbo") as turbo, TurboClient(turbo.url) as client:
            client.pinned_signer()
            for r in range(args.rounds):
                for mib in sizes:
                    for how in ("whole", "chunked"):
                        item = create_data_item(generate_wallet(), bytes([r, mib]) * (mib << 19))
                        spool = work / f"item-{r}-{mib}-{how}"
                        spool.write_bytes(encode_data_item(item))
                        size = spool.stat().st_size
                        item_id = item.id_b64
                        del item
                        start = time.perf_counter()
                        if how == "whole":
                            receipt = client.post_item(item_id, spool.read_bytes())
                        else:
                            with open(spool, "rb") as f:
                                receipt = send_chunked(
                                    client,
                                    f,
                                    (item_id, 0, size),
                                    None,
                                    lambda entry: None,
                                    chunk_size=DEFAULT_CHUNK_BYTES,
                                    timeout=600,
                                    sleep=time.sleep,
                                    monotonic=time.monotonic,
                                    poll_interval=0.5,
                                    advance=lambda n: None,
                                )
                        took = time.perf_counter() - start
                        assert receipt.id == item_id
                        seconds.setdefault((mib, how), []).append(took)
                        spool.unlink()
    print(f"{args.rounds} rounds; chunk {DEFAULT_CHUNK_BYTES >> 20} MiB")
    print("| item | whole s (median) | chunked s (median) | chunked / whole |")
    print("|---:|---:|---:|---:|")
    for mib in sizes:
        w = statistics.median(seconds[(mib, "whole")])
        c = statistics.median(seconds[(mib, "chunked")])
        print(f"| {mib} MiB | {w:.2f} | {c:.2f} | {c / w:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
