"""Pull from an IPFS gateway with verification, against plain parallel GETs of the same files.

Usage::

    python bench/bench_pull.py [--api URL --gateway URL] [--blocks 200]
        [--data-bytes 200000000] [--walk-blocks 10000] [--parallel 8] [--cache DIR]

Without ``--api`` a Kubo test node is started (tests/support/kubo.py; built by ``make
gonodes``). One run, on the same node and gateway:

1. publish a dataset (``--blocks`` AddData blocks, ``--data-bytes`` of data) with the live
   IPFS target and resolve its ``ipns://`` name (record verified locally);
2. *peer*: plain parallel HTTP GETs (``--parallel`` threads, one httpx client) of every file
   of the dataset from ``/ipfs/<root>/…``, bytes counted and dropped — no hashing, no writing;
3. ``pull_dataset`` from the ``ipns://`` replica into a fresh directory (``--parallel``
   downloads, every block and object hashed, objects staged and fsynced, refs/head last);
4. the same pull in trustless mode (every 256 KiB leaf a CID-verified RPC ``block/get``);
5. a chain walk of ``--walk-blocks`` blocks over the gateway (``walk_chain`` with the
   replica's ``read_block``: one GET per block, each hashed and decoded), against sequential
   plain GETs of the same block paths.

Prints throughput ratios pull / peer (goal >= 0.7) and the walk rate.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ensure_dataset, machine, print_table

from odfweb3.crypto.keystore import Keystore
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.chain import walk_chain
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import StateStore
from odfweb3.read.claims import resolve_dataset
from odfweb3.read.pull import pull_dataset
from odfweb3_ipfs.client.gateway import IpfsGateway
from odfweb3_ipfs.client.kubo import KuboClient
from odfweb3_ipfs.formats.libp2p_keys import IpnsName, public_key_bytes
from odfweb3_ipfs.publish.car_target import CarTarget
from odfweb3_ipfs.publish.node_target import IpfsNodeTarget
from odfweb3_ipfs.read.access import IpfsAccess
from odfweb3_ipfs.read.names import open_ipfs_ref

LAYOUT = ("blocks", "checkpoints", "data", "refs")


@contextlib.contextmanager
def node(args: argparse.Namespace, tmp: Path) -> Iterator[tuple[str, str]]:
    if args.api:
        yield args.api, args.gateway
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.support.kubo import start_kubo

    with start_kubo(tmp / "kubo") as n:
        yield n.api_url, n.gateway_url


def publish(api: str, gateway: str, ds: Path, tmp: Path, label: str) -> tuple[str, str]:
    keystore = Keystore(tmp / f"keys-{label}")
    target = IpfsNodeTarget(
        KuboClient(api, timeout=3600),
        keystore,
        StateStore(tmp / f"state-{label}"),
        gateway_url=gateway,
        tmp_dir=tmp,
    )
    done = publish_dataset(ds, target)
    name = IpnsName.from_public_key(public_key_bytes(keystore.load(done.plan.dataset_id)))
    assert done.upload.locator is not None
    return f"ipns://{name}", done.upload.locator


def plain_gets(gateway: str, paths: list[str], parallel: int) -> int:
    limits = httpx.Limits(max_connections=parallel, max_keepalive_connections=parallel)
    with httpx.Client(base_url=gateway, timeout=600, limits=limits, follow_redirects=True) as c:

        def one(path: str) -> int:
            n = 0
            with c.stream("GET", path) as r:
                r.raise_for_status()
                for chunk in r.iter_bytes(1 << 20):
                    n += len(chunk)
            return n

        with ThreadPoolExecutor(parallel) as pool:
            return sum(pool.map(one, paths))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--api", help="node RPC API (default: start a Kubo test node)")
    ap.add_argument("--gateway", help="the node's gateway (with --api)")
    ap.add_argument("--blocks", type=int, default=200)
    ap.add_argument("--data-bytes", type=int, default=200_000_000)
    ap.add_argument("--walk-blocks", type=int, default=10_000)
    ap.add_argument("--parallel", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--walk-only", action="store_true", help="skip the pull measurements")
    ap.add_argument("--cache", type=Path, default=None, help="reuse datasets from here")
    args = ap.parse_args()
    if args.api and not args.gateway:
        ap.error("--api needs --gateway")
    print(machine())
    with tempfile.TemporaryDirectory(prefix="odfb-pull-") as t, node(args, Path(t)) as (api, gw):
        tmp = Path(t)

        def access(trustless: bool = False) -> IpfsAccess:
            return IpfsAccess(IpfsGateway(gw), KuboClient(api, timeout=600), trustless=trustless)

        if not args.walk_only:
            pull_bench(args, api, gw, tmp, access)
        walk_bench(args, api, gw, tmp, access)
    return 0


def pull_bench(
    args: argparse.Namespace, api: str, gw: str, tmp: Path, access: Callable[[bool], IpfsAccess]
) -> None:
    """Steps 1-4 of the module docstring."""
    ds, _ = ensure_dataset(
        args.cache / "pull" if args.cache else None,
        tmp / "pull-src",
        blocks=args.blocks,
        data_bytes=args.data_bytes,
    )
    ref, root = publish(api, gw, ds, tmp, "pull")
    files = [p for sub in LAYOUT for p in sorted((ds / sub).iterdir())]
    paths = [f"/ipfs/{root}/{p.parent.name}/{p.name}" for p in files]
    total = sum(p.stat().st_size for p in files)
    rows = [("measurement", "s", "MB/s", "vs plain GETs")]
    best: dict[str, float] = {}
    for r in range(args.rounds):
        start = time.perf_counter()
        got = plain_gets(gw, paths, args.parallel)
        best["plain"] = min(best.get("plain", 1e9), time.perf_counter() - start)
        assert got == total, (got, total)
        for mode in ("pull", "trustless"):
            replica, claims = open_ipfs_ref(ref, access(mode == "trustless"))
            start = time.perf_counter()
            resolve_dataset(ref, replica, claims)
            pull_dataset(replica, tmp / f"dest-{mode}-{r}", parallel=args.parallel)
            best[mode] = min(best.get(mode, 1e9), time.perf_counter() - start)
    for key, label in (
        ("plain", f"plain parallel GETs ({args.parallel} threads)"),
        ("pull", "resolve + pull (verified, by path)"),
        ("trustless", "resolve + pull --trustless (block/get)"),
    ):
        s = best[key]
        rows.append((label, f"{s:.2f}", f"{total / s / 1e6:.1f}", f"{best['plain'] / s:.3f}"))
    print(f"\npull: {len(files)} files, {total:,} bytes, {args.rounds} round(s), best of")
    print_table(rows)


def walk_bench(
    args: argparse.Namespace, api: str, gw: str, tmp: Path, access: Callable[[bool], IpfsAccess]
) -> None:
    """Step 5: a chain walk of --walk-blocks blocks over the gateway."""
    walk_ds = tmp / "walk-src"
    create_root_dataset(walk_ds, blocks=args.walk_blocks, data_bytes=args.walk_blocks * 10)
    # Offline publish + dag/import (no pin): chosen when js-ipfs was the test node (its
    # pin/add of ~30,000 files ran out of file descriptors); kept, the walk is what is timed.
    keystore = Keystore(tmp / "keys-walk")
    car_dir = tmp / "walk-car"
    done = publish_dataset(walk_ds, CarTarget(car_dir, keystore))
    client = KuboClient(api, timeout=3600)
    for car in sorted(car_dir.glob("*.car")):
        client.dag_import(car)
    name = IpnsName.from_public_key(public_key_bytes(keystore.load(done.plan.dataset_id)))
    client.record_put(name, (car_dir / str(done.state.record["file"])).read_bytes())
    walk_ref, walk_root = f"ipns://{name}", str(done.upload.locator)
    replica, _ = open_ipfs_ref(walk_ref, access(False))
    start = time.perf_counter()
    n = sum(1 for _ in walk_chain(replica.read_block, replica.head()))
    walk_s = time.perf_counter() - start
    block_paths = [f"/ipfs/{walk_root}/blocks/{p.name}" for p in (walk_ds / "blocks").iterdir()]
    start = time.perf_counter()
    plain_gets(gw, block_paths, 1)
    plain_s = time.perf_counter() - start
    print(f"\nchain walk over the gateway: {n} blocks")
    print_table(
        [
            ("measurement", "s", "blocks/s", "vs plain GETs"),
            (
                "walk_chain (GET + hash + decode)",
                f"{walk_s:.2f}",
                f"{n / walk_s:.0f}",
                f"{plain_s / walk_s:.3f}",
            ),
            (
                "sequential plain GETs, same paths",
                f"{plain_s:.2f}",
                f"{len(block_paths) / plain_s:.0f}",
                "1.000",
            ),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
