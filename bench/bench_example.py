"""`odfweb3 example` build time against block count (issue 25 item 2: 10,000 blocks <= 20 s,
100,000 <= 3 min on the project's machine).

Usage::

    python bench/bench_example.py [--sizes 1000,10000,100000] [--block-bytes 2000]
                                  [--linked-objects 0,2] [--repeat 1]

For each size N and each ``--linked-objects`` L, runs the real command, ``odfweb3 example DIR
--seed 1 --blocks N --data-bytes N*block-bytes [--linked-objects L] -q`` in a child process
(interpreter and pyarrow start-up included, objects fsynced as a user's run does), and times
it. The reference, measured in the same run on the same disk: writing as many files of the
same sizes (one data file and one 1 KiB checkpoint per block, pseudo-random bytes, each
SHA3-256 hashed and written to a temporary name then renamed, as the dataset layout does,
fsynced) with no encoding: the floor of any builder of this layout. Printed: wall seconds, the
command's CPU seconds (user + system: what the load of other processes does not inflate as
much), blocks per second, the ratio to the reference, and the Parquet share (pyarrow's
per-file writes of the same shape, timed alone). No timing assertions.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, print_table

ROOT = Path(__file__).resolve().parent.parent
CLI = ROOT / ".venv" / "bin" / "odfweb3"


def _example(
    out: Path, blocks: int, block_bytes: int, linked: int, keys: Path
) -> tuple[float, float]:
    argv = [str(CLI), "example", str(out), "--seed", "1", "--blocks", str(blocks)]
    argv += ["--data-bytes", str(blocks * block_bytes), "-q"]
    if linked:
        argv += ["--linked-objects", str(linked)]
    env = os.environ | {"ODFWEB3_KEYSTORE": str(keys)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, check=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def _reference(out: Path, blocks: int, block_bytes: int) -> float:
    """Write, hash, fsync and rename ``2 * blocks`` files of the example's sizes."""
    rng = random.Random(1)
    out.mkdir(parents=True)
    start = time.perf_counter()
    for i in range(blocks):
        for size in (block_bytes, 1024):
            data = rng.randbytes(size)
            name = hashlib.sha3_256(data).hexdigest()
            tmp = out / f".tmp-{i}"
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, out / name)
    return time.perf_counter() - start


def _parquet_only(blocks: int, block_bytes: int) -> float:
    """pyarrow alone: the example's data files, in memory, not stored."""
    from odfweb3.odf.parquet import payload_file

    rng = random.Random(1)
    start = time.perf_counter()
    for i in range(blocks):
        for _part in payload_file(
            start_offset=i * (block_bytes // 100),
            records=block_bytes // 100,
            system_time_ms=i * 1000,
            event_time_range_ms=(i * 1000 - 999, i * 1000),
            size=block_bytes,
            randbytes=rng.randbytes,
        ):
            pass
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000", help="block counts (default 1000,10000)")
    ap.add_argument("--block-bytes", type=int, default=2000, help="data bytes per block")
    ap.add_argument("--linked-objects", default="0", help="comma list, 0 = payload files")
    ap.add_argument("--repeat", type=int, default=1, help="rounds, best reported")
    ap.add_argument(
        "--reference-max",
        type=int,
        default=20000,
        help="measure the reference only up to this many blocks (it fsyncs every file: "
        "100,000 blocks take minutes); above, its rate at the largest size measured is used",
    )
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    linked = [int(s) for s in args.linked_objects.split(",")]
    print(machine())
    rows = []
    ref_rate: float | None = None  # reference seconds a block, at the largest size measured
    with tempfile.TemporaryDirectory(prefix="odfweb3-bench-example-") as tmp:
        scratch = Path(tmp)
        for n in sizes:
            ref = pq = float("inf")
            best = dict.fromkeys(linked, (float("inf"), float("inf")))
            keys = scratch / "keys"
            for r in range(args.repeat):
                for lo in linked:
                    out = scratch / f"ds-{n}-{lo}-{r}"
                    best[lo] = min(best[lo], _example(out, n, args.block_bytes, lo, keys))
                    shutil.rmtree(out)
                if n <= args.reference_max or ref_rate is None:
                    out = scratch / f"ref-{n}-{r}"
                    ref = min(ref, _reference(out, n, args.block_bytes))
                    shutil.rmtree(out)
                else:
                    ref = n * ref_rate
                pq = min(pq, _parquet_only(n, args.block_bytes))
            if n <= args.reference_max:
                ref_rate = ref / n
            for lo in linked:
                t, cpu = best[lo]
                label = f"{n:,} blocks" + (f", {lo} linked objects a block" if lo else "")
                rows.append(
                    (
                        label,
                        f"{t:.1f}",
                        f"{cpu:.1f}",
                        f"{n / t:,.0f}",
                        f"{ref:.1f}" + ("*" if n > args.reference_max else ""),
                        f"{t / ref:.2f}",
                        f"{pq:.1f}",
                    )
                )
    header = ("dataset", "example s", "CPU s", "blocks/s", "reference s", "ratio", "pyarrow s")
    print_table([header, *rows])
    if any(n > args.reference_max for n in sizes):
        print(f"* reference scaled from its rate at {args.reference_max:,} blocks or fewer")
    return 0


if __name__ == "__main__":
    sys.exit(main())
