"""Dataset validation versus hashlib SHA3-256 over the same bytes, in one run.

Usage::

    python bench/bench_validate.py [--blocks 10000] [--data-bytes 1000000000]
                                   [--cache DIR] [--repeat 3] [--no-cold]

Builds (``odfweb3.odf.builder.create_root_dataset``, fsync off) a root dataset of
``--blocks`` AddData blocks carrying ``--data-bytes`` bytes of data in a temporary
directory, or reuses the one in ``--cache`` (built there on first use), then times,
best of ``--repeat`` interleaved rounds:

- the limit: hashlib SHA3-256 over every data and checkpoint file, read in 1 MiB
  chunks into one buffer, single thread; and the same spread over 2 threads
  (``validate_dataset`` hashes with a thread pool, so both limits are shown);
- ``validate_dataset(path, deep=True)``: wall time, throughput, ratio to the limits
  (goal: >= 0.8 of the single-thread limit), also per round and as the median of
  the rounds;
- ``validate_dataset(path, deep=False)`` (hashes and rules of the chain only);
- the chain walk alone, ``list(walk_chain(DatasetReader.open(path)))``, in blocks/s.

"Warm" runs read from the page cache. As root the script also drops the page cache
(``/proc/sys/vm/drop_caches``) before "cold" runs of the limit and of the deep
validation; without the permission it says so and shows warm figures only.
Memory stays bounded: files are streamed, only the chain is held.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    best_of,
    dataset_files,
    drop_page_cache,
    ensure_dataset,
    hash_files,
    machine,
    page_cache_bytes,
    print_table,
)

from odfweb3.odf.chain import walk_chain
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.validate import ValidationReport, validate_dataset

GOAL = 0.8


def _deep(path: Path) -> ValidationReport:
    report = validate_dataset(path, deep=True)
    if not report.ok:
        raise SystemExit(f"benchmark dataset is invalid: {report.violations[0]}")
    return report


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table; exit status 0 (no timing assertions)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--blocks", type=int, default=10_000, help="AddData blocks")
    parser.add_argument("--data-bytes", type=int, default=1_000_000_000, help="total data bytes")
    parser.add_argument("--cache", type=Path, help="build/reuse the dataset under this directory")
    parser.add_argument("--repeat", type=int, default=3, help="rounds (best is reported)")
    parser.add_argument("--no-cold", action="store_true", help="skip the page-cache-drop runs")
    args = parser.parse_args(argv)

    print(f"machine: {machine()}")
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    with tempfile.TemporaryDirectory(prefix="odfweb3-bench-validate-") as tmp:
        path, built = ensure_dataset(
            args.cache, Path(tmp), blocks=args.blocks, data_bytes=args.data_bytes
        )
        how = f"built in {built:.1f} s" if built is not None else "reused from cache"
        files = dataset_files(path)
        print(f"dataset: {path} ({how}); {args.blocks} AddData blocks, {len(files)} files")

        # Interleave the measurements so background load hits all of them alike.
        limit1: list[float] = []
        limit2: list[float] = []
        deep: list[float] = []
        shallow: list[float] = []
        walk: list[float] = []
        nbytes = hashed = nblocks = 0
        for _ in range(max(1, args.repeat)):
            t, nbytes = best_of(lambda: hash_files(files, hashlib.sha3_256, 1), 1)
            limit1.append(t.best)
            t, _n = best_of(lambda: hash_files(files, hashlib.sha3_256, 2), 1)
            limit2.append(t.best)
            t, report = best_of(lambda: _deep(path), 1)
            deep.append(t.best)
            hashed = report.bytes_hashed
            t, _r = best_of(lambda: validate_dataset(path, deep=False), 1)
            shallow.append(t.best)
            t, entries = best_of(lambda: list(walk_chain(DatasetReader.open(path))), 1)
            walk.append(t.best)
            nblocks = len(entries)
        if hashed != nbytes:
            print(f"warning: validate hashed {hashed} bytes, the limit {nbytes}")

        mb = nbytes / 1e6
        l1, l2 = min(limit1), min(limit2)

        def row(name: str, secs: float, hashing: bool) -> tuple[str, ...]:
            rate = f"{mb / secs:8.1f} MB/s" if hashing else f"{nblocks / secs:8.0f} blk/s"
            r1 = f"{l1 / secs:.3f}" if hashing else ""
            r2 = f"{l2 / secs:.3f}" if hashing else ""
            return (name, f"{secs:.3f}", rate, r1, r2)

        rows: list[tuple[str, ...]] = [
            ("warm (page cache), best of rounds", "s", "rate", "vs 1-thr", "vs 2-thr"),
            row("hashlib sha3-256, 1 thread (limit)", l1, True),
            row("hashlib sha3-256, 2 threads", l2, True),
            row("validate_dataset(deep=True)", min(deep), True),
            row("validate_dataset(deep=False)", min(shallow), False),
            row("walk_chain (list)", min(walk), False),
        ]
        print(f"bytes: {nbytes} in {len(files)} data+checkpoint files; {nblocks} blocks")
        print_table(rows)
        print(
            f"deep validation / SHA3-256 limit: {l1 / min(deep):.3f} "
            f"(goal >= {GOAL}: {'met' if l1 / min(deep) >= GOAL else 'MISSED'})"
        )
        print(f"all rounds (s): limit1 {_fmt(limit1)} deep {_fmt(deep)} walk {_fmt(walk)}")
        # Per-round ratios (limit and deep run back to back in each round) and their
        # median: steadier than best-of on a machine whose background load comes and goes.
        ratios = [a / b for a, b in zip(limit1, deep, strict=True)]
        print(
            f"per-round deep / limit: {'/'.join(f'{r:.3f}' for r in ratios)}; "
            f"median {statistics.median(ratios):.3f}; median times (s): limit1 "
            f"{statistics.median(limit1):.3f} deep {statistics.median(deep):.3f} "
            f"walk {statistics.median(walk):.3f}"
        )

        if args.no_cold:
            return 0
        if not drop_page_cache():
            print("cold: cannot drop the page cache (needs root); warm figures only")
            return 0
        cached = page_cache_bytes()
        cold1, _n = best_of(
            lambda: hash_files(files, hashlib.sha3_256, 1), 1, before=drop_page_cache
        )
        cold_deep, _r = best_of(lambda: _deep(path), 1, before=drop_page_cache)
        cold_walk, _e = best_of(
            lambda: list(walk_chain(DatasetReader.open(path))), 1, before=drop_page_cache
        )
        print(f"cold: page cache dropped before each run (Cached after a drop: {cached >> 20} MiB)")
        l1 = cold1.best
        print_table(
            [
                ("cold (after drop_caches)", "s", "rate", "vs 1-thr"),
                row("hashlib sha3-256, 1 thread (limit)", cold1.best, True)[:4],
                row("validate_dataset(deep=True)", cold_deep.best, True)[:4],
                row("walk_chain (list)", cold_walk.best, False)[:4],
            ]
        )
    return 0


def _fmt(values: list[float]) -> str:
    return "/".join(f"{v:.2f}" for v in values)


if __name__ == "__main__":
    start = time.perf_counter()
    code = main()
    print(f"total bench time {time.perf_counter() - start:.0f} s")
    raise SystemExit(code)
