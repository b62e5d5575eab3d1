"""Gateway requests to read a dataset with n delta uploads: tiered records against the walk.

Usage::

    python bench/bench_arweave_reads.py [--sizes 10,1000,10000] [--before-max 1000]
                                        [--cache /tmp/odfweb3-bench-arweave-reads]

What a reader asks before the objects themselves, as ``resolve did:odf:… --owner`` then
``pull`` do it: the latest upload by GraphQL (owner + dataset), its record (signature
checked), ``open_ar_replica`` of ``ar://RECORD``, then the manifest of a path the first
upload added: the records back to the last full manifest, each verified. Both chains are
made by ``tests/support/ar_chains.py`` (one full upload, then n one-block updates: three
objects and ``refs/head`` each), signed as the publisher signs them:

- ``before``: records as odfweb3 wrote them before tiers: the reader walks
  ``ODF-Prev-Upload``, one GraphQL lookup and one GET per record (the code path readers
  use for every record without a tier, unchanged);
- ``after``: tiered records (the publisher's binary counter, ``plan_tier``): one GraphQL
  lookup for the whole skip chain and one GET per record on it.

Each chain is posted to a fresh arlocal (the test gateway, loopback) in bundles; the signed
bundles are cached under ``--cache`` (signing 10,000 RSA-4096 records takes minutes).
Printed per size: requests (counted by the client, ``ArweaveGateway.calls``), seconds,
records verified, and the record bytes stored per update (what tiers cost). ``before`` runs
only up to ``--before-max`` updates by default: at 10,000 it is about 20,000 requests.
The reference for the ratio is ``before`` of the same size, measured in the same run.
Seconds are for information: the machine is shared; requests are exact.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _common import machine, print_table  # noqa: E402

from odfweb3_arweave.client.gateway import ArweaveGateway  # noqa: E402
from odfweb3_arweave.read.lookup import find_latest_upload  # noqa: E402
from odfweb3_arweave.read.replica import open_ar_replica  # noqa: E402
from tests.support.ar_chains import Chain, build_chain, post_chain  # noqa: E402
from tests.support.nodes import start_arlocal  # noqa: E402


def _chain(cache: Path, n: int, tiered: bool) -> tuple[Chain, float | None]:
    where = cache / f"{'tiered' if tiered else 'walk'}-{n}"
    got = Chain.load(where)
    if got is not None:
        return got, None
    t0 = time.perf_counter()
    got = build_chain(n, tiered=tiered, seed=f"bench-reads-{n}-{tiered}")
    seconds = time.perf_counter() - t0
    got.save(where)
    return got, seconds


def _read(url: str, chain: Chain) -> tuple[int, float, int]:
    """Requests, seconds and records read to reach the first upload's paths."""
    gateway = ArweaveGateway(url)
    t0 = time.perf_counter()
    latest = find_latest_upload(gateway, chain.owner, chain.dataset_id)
    assert latest is not None and latest.id == chain.latest
    replica = open_ar_replica(gateway, f"ar://{latest.id}", expected_owner=chain.owner)
    assert replica.record is not None
    # A path of the first upload: only the last full manifest maps it.
    where = replica._path("blocks/f1620" + "0" * 64)
    seconds = time.perf_counter() - t0
    assert where.startswith(chain.full_manifest + "/"), where
    older = replica._older or {}
    assert len([p for p in older if p != "refs/head"]) == 3 * chain.updates
    return gateway.calls, seconds, len({*older.values()})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10,1000,10000")
    ap.add_argument("--before-max", type=int, default=1000)
    ap.add_argument("--cache", type=Path, default=Path("/tmp/odfweb3-bench-arweave-reads"))
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    print(machine())
    rows = [("updates", "mode", "requests", "seconds", "ratio", "record B/update", "built s")]
    with tempfile.TemporaryDirectory(prefix="arreads-bench-", dir=args.cache.parent) as tmp:
        for n in sizes:
            ref: tuple[int, float] | None = None
            for tiered in (False, True):
                if not tiered and n > args.before_max:
                    continue
                chain, built = _chain(args.cache, n, tiered)
                with start_arlocal(Path(tmp) / f"ar-{n}-{tiered}") as arlocal:
                    post_chain(ArweaveGateway(arlocal.url), chain, arlocal)
                    calls, seconds, _ = _read(arlocal.url, chain)
                per_update = sum(len(b) for b in chain.bundles) / (n + 1)
                if ref is None:
                    ref = (calls, seconds)
                ratio = f"{ref[0] / calls:.1f}x fewer" if tiered else "1"
                rows.append(
                    (
                        str(n),
                        "after" if tiered else "before",
                        str(calls),
                        f"{seconds:.2f}",
                        ratio if n <= args.before_max else "-",
                        f"{per_update:,.0f}",
                        f"{built:.0f}" if built is not None else "cached",
                    )
                )
                print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
