"""What sending a first publish in batches costs against one CAR (the node target).

Usage::

    python bench/bench_ipfs_batches.py [--api http://127.0.0.1:5001] [--mb 120]
        [--blocks 48] [--rounds 3]

Without ``--api`` it starts its own Kubo v0.43.1 (``make gonodes``, tests/support/kubo.py).
Each round publishes two fresh datasets of the same shape (other seeds, so the node holds
none of their blocks) to a fresh state directory, interleaved: once with the default
batches (``node_batches.BATCH_BYTES``: a ``dag/import``, a batch record and a pin per batch,
so an interruption resumes) and once as one CAR (the reference, what the target did before
batches). Prints each wall time and the ratio batches / one CAR, best of the rounds.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import machine, print_table

from odfweb3.crypto.keystore import Keystore
from odfweb3.odf.builder import create_root_dataset
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import StateStore
from odfweb3_ipfs.client.kubo import KuboClient
from odfweb3_ipfs.publish.node_batches import BATCH_BYTES
from odfweb3_ipfs.publish.node_target import IpfsNodeTarget

MIB = 1 << 20


def _publish(api: str, work: Path, seed: int, mb: int, blocks: int, one_car: bool) -> float:
    ds = create_root_dataset(
        work / f"ds-{seed}", blocks=blocks, data_bytes=mb * MIB, seed=seed, fsync=False
    ).path
    target = IpfsNodeTarget(
        KuboClient(api), Keystore(work / f"keys-{seed}"), StateStore(work / f"state-{seed}")
    )
    if one_car:
        target.batch_bytes = 1 << 62
        target.batch_objects = 1 << 62
    started = time.perf_counter()
    publish_dataset(ds, target)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--api", default=None)
    parser.add_argument("--mb", type=int, default=120)
    parser.add_argument("--blocks", type=int, default=48)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(machine())
    print(f"load before: {os.getloadavg()[0]:.1f}")
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="odfb-")))
        if args.api is None:
            from tests.support.kubo import start_kubo

            args.api = stack.enter_context(start_kubo(tmp / "kubo")).api_url
        rows = [("round", f"batches of {BATCH_BYTES // MIB} MiB (s)", "one CAR (s)", "ratio")]
        best: tuple[float, float] | None = None
        for r in range(args.rounds):
            seed = 1000 + 2 * r
            batched = _publish(args.api, tmp, seed, args.mb, args.blocks, one_car=False)
            single = _publish(args.api, tmp, seed + 1, args.mb, args.blocks, one_car=True)
            rows.append((str(r + 1), f"{batched:.2f}", f"{single:.2f}", f"{batched / single:.3f}"))
            if best is None or batched / single < best[0] / best[1]:
                best = (batched, single)
        print_table(rows)
        assert best is not None
        print(f"best ratio batches / one CAR: {best[0] / best[1]:.3f} ({args.mb} MiB)")
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
