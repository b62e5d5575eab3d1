"""Offline IPFS publish (``car:DIR``): initial and one-block incremental, in one run.

Usage::

    python bench/bench_publish_car.py [--blocks 10000] [--data-bytes 1000000000]
                                      [--cache DIR] [--repeat 1]

Builds (or reuses from ``--cache``) the same root dataset as ``bench_validate.py``,
then, per round, on a hard-linked copy of it (odfweb3 writes by rename, so the cached
dataset is never changed) and a fresh output directory:

1. hashlib SHA-256 over every file of the dataset (1 MiB reads, one thread): the limit;
2. ``publish_dataset(copy, CarTarget(out, Keystore(keys)))``: the initial publish
   (full CAR, IPNS record, ``publish.json``; the CAR is fsynced);
3. ``append_blocks(copy, 1)`` then the same publish again: the delta CAR.

Prints wall times, throughput, the ratio initial / limit, CAR bytes and the ratio
incremental / initial, for time and for bytes (the live-node goal is <= 0.02). No
network; everything is written under a temporary directory and removed.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    ensure_dataset,
    hash_files,
    linked_copy,
    machine,
    print_table,
)

from odfweb3.crypto.keystore import Keystore
from odfweb3.odf.builder import append_blocks
from odfweb3.publish.execute import PublishOutcome, publish_dataset
from odfweb3_ipfs.publish.car_target import CarTarget

GOAL_INCREMENTAL = 0.02


def _all_files(root: Path) -> list[Path]:
    """Every file a publish reads: blocks, data, checkpoints and refs/head."""
    out: list[Path] = []
    for sub in ("blocks", "data", "checkpoints", "refs"):
        folder = root / sub
        if folder.is_dir():
            out.extend(sorted(p for p in folder.iterdir() if not p.name.startswith(".")))
    return out


def _car_bytes(outcome: PublishOutcome) -> int:
    assert outcome.upload is not None
    return int(outcome.upload.summary.get("carBytes", outcome.upload.bytes_sent))


def _car_blocks(outcome: PublishOutcome) -> int:
    assert outcome.upload is not None
    return int(outcome.upload.summary.get("carBlocks", 0))


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table; exit status 0 (no timing assertions)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--blocks", type=int, default=10_000, help="AddData blocks")
    parser.add_argument("--data-bytes", type=int, default=1_000_000_000, help="total data bytes")
    parser.add_argument("--cache", type=Path, help="build/reuse the dataset under this directory")
    parser.add_argument("--repeat", type=int, default=1, help="rounds (best is reported)")
    args = parser.parse_args(argv)

    print(f"machine: {machine()}")
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    with tempfile.TemporaryDirectory(prefix="odfweb3-bench-publish-") as tmp_name:
        tmp = Path(tmp_name)
        base, built = ensure_dataset(
            args.cache, tmp, blocks=args.blocks, data_bytes=args.data_bytes
        )
        how = f"built in {built:.1f} s" if built is not None else "reused from cache"
        files = _all_files(base)
        print(f"dataset: {base} ({how}); {args.blocks} AddData blocks, {len(files)} files")

        limit: list[float] = []
        initial: list[float] = []
        incremental: list[float] = []
        nbytes = full_car = delta_car = full_blocks = delta_blocks = 0
        for i in range(max(1, args.repeat)):
            start = time.perf_counter()
            nbytes = hash_files(files, hashlib.sha256, 1)
            limit.append(time.perf_counter() - start)

            work = linked_copy(base, tmp / f"round-{i}")
            out = tmp / f"out-{i}"
            target = CarTarget(out, Keystore(tmp / f"keys-{i}"))
            start = time.perf_counter()
            first = publish_dataset(work, target)
            initial.append(time.perf_counter() - start)
            full_car, full_blocks = _car_bytes(first), _car_blocks(first)

            append_blocks(work, 1, fsync=False)
            target = CarTarget(out, Keystore(tmp / f"keys-{i}"))
            start = time.perf_counter()
            second = publish_dataset(work, target)
            incremental.append(time.perf_counter() - start)
            delta_car, delta_blocks = _car_bytes(second), _car_blocks(second)
            shutil.rmtree(work)
            shutil.rmtree(out)

        mb = nbytes / 1e6
        t_lim, t_init, t_inc = min(limit), min(initial), min(incremental)
        print(f"bytes: {nbytes} in {len(files)} files (blocks, data, checkpoints, refs/head)")
        print_table(
            [
                ("best of rounds", "s", "rate", "ratio", "CAR bytes", "CAR blocks"),
                ("hashlib sha256, 1 thread (limit)", f"{t_lim:.3f}", f"{mb / t_lim:.1f} MB/s",
                 "1.000", "", ""),
                ("publish car: initial", f"{t_init:.3f}", f"{mb / t_init:.1f} MB/s",
                 f"{t_lim / t_init:.3f}", str(full_car), str(full_blocks)),
                ("publish car: +1 block", f"{t_inc:.3f}", "", "", str(delta_car),
                 str(delta_blocks)),
            ]
        )  # fmt: skip
        time_ratio = t_inc / t_init
        byte_ratio = delta_car / full_car if full_car else float("nan")
        print(
            f"incremental / initial: time {time_ratio:.4f}, CAR bytes {byte_ratio:.6f} "
            f"(live-node goal <= {GOAL_INCREMENTAL}: time "
            f"{'met' if time_ratio <= GOAL_INCREMENTAL else 'not met'}, bytes "
            f"{'met' if byte_ratio <= GOAL_INCREMENTAL else 'not met'})"
        )
        print(
            "all rounds (s): limit "
            + "/".join(f"{t:.2f}" for t in limit)
            + " initial "
            + "/".join(f"{t:.2f}" for t in initial)
            + " incremental "
            + "/".join(f"{t:.2f}" for t in incremental)
        )
    return 0


if __name__ == "__main__":
    start = time.perf_counter()
    code = main()
    print(f"total bench time {time.perf_counter() - start:.0f} s")
    raise SystemExit(code)
