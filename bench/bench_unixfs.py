"""UnixFS import throughput versus hashlib SHA-256 over the same bytes, in one run.

Usage: ``python bench/bench_unixfs.py [--mb 1024] [--files 48] [--dir PATH]``

Builds a dataset-like directory (``blocks/``, ``data/``, ``checkpoints/``,
``refs/head``) of about ``--mb`` MiB in a temporary directory (or imports
``--dir``), then times, best of ``--repeat`` runs each:

- hashlib: read every file with ``readinto`` into a 256 KiB buffer and SHA-256 it;
- odfweb3: ``import_tree`` (CIDv1, raw leaves) computing every CID, no sink;
- odfweb3 + sink: the same, handing every block to a sink (as the CAR writer gets them);
- odfweb3 + CAR file: the same with a real ``CarWriter`` on a new temporary file as the
  sink, as ``car:DIR`` publish writes it; the publish path's final fsync is not
  included;
- aleph-cid (Rust), when installed: ``hash_folder``; its root CID must equal ours.

Prints throughputs, ratios (goal: odfweb3 / hashlib >= 0.85) and the CPU time of the best
run (process time over all threads; above wall time when the importer's hashing workers run in
parallel). ``--threads`` sets the importer's hashing workers (0 = all on one thread; default:
the library's choice by core count, see ``auto_hash_threads``). No network.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

from odfweb3_ipfs.formats.car import CarWriter
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.publish.unixfs_import import DirNode, auto_hash_threads, import_tree

CHUNK = 262144


def make_tree(root: Path, total_mb: int, files: int) -> int:
    """Write a dataset-shaped tree of random bytes; return its byte count."""
    for sub in ("blocks", "data", "checkpoints", "refs"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "refs" / "head").write_bytes(b"f1620" + b"0" * 64)
    written = 0
    per_file = max(1, total_mb * 1024 * 1024 // files)
    for i in range(files):
        sub = ("data", "checkpoints")[i % 2]
        size = per_file + (i * 7919) % 65536  # not chunk-aligned
        with open(root / sub / f"f1620{i:060x}", "wb") as out:
            left = size
            while left:
                n = min(left, 1 << 20)
                out.write(os.urandom(n))  # unique chunks: the CAR writer dedups repeats
                left -= n
        written += size
        (root / "blocks" / f"f1620{i:060x}").write_bytes(os.urandom(600))
        written += 600
    return written + 69


def hashlib_pass(root: Path) -> int:
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    total = 0
    for dirpath, _, names in os.walk(root):
        for name in names:
            hasher = hashlib.sha256()
            with open(os.path.join(dirpath, name), "rb", buffering=0) as f:
                while n := f.readinto(view):
                    hasher.update(view[:n])
                    total += n
            hasher.digest()
    return total


def best(fn: Callable[[], object], repeat: int) -> tuple[float, object, float]:
    """Best wall time of ``repeat`` runs, the last result, and that best run's CPU time."""
    runs = []
    result: object = None
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        result = fn()
        runs.append((time.perf_counter() - start, time.process_time() - cpu))
    wall, cpu_time = min(runs)
    return wall, result, cpu_time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1024, help="dataset size in MiB")
    parser.add_argument("--files", type=int, default=48, help="number of data files")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, help="import this directory instead")
    parser.add_argument(
        "--threads", type=int, default=None, help="hashing workers (default: auto by core count)"
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="odfweb3-bench-") as tmp:
        root = args.dir or Path(tmp) / "dataset"
        if args.dir is None:
            make_tree(root, args.mb, args.files)
        threads = args.threads
        t_hash, nbytes, c_hash = best(lambda: hashlib_pass(root), args.repeat)
        total = cast(int, nbytes)
        mb = total / 1e6
        t_ours, result, c_ours = best(lambda: import_tree(root, threads=threads), args.repeat)
        sunk = [0]

        def sink(cid: Cid, data: bytes) -> None:
            sunk[0] += len(data)

        t_sink, _, c_sink = best(lambda: import_tree(root, sink=sink, threads=threads), args.repeat)
        cars: list[Path] = []

        def to_car() -> None:
            # A new file per run, as publish writes one: re-truncating a 1 GB file
            # (and ext4's flush on close after a truncate) would be timed otherwise.
            cars.append(Path(tmp) / f"out{len(cars)}.car")
            with open(cars[-1], "w+b") as f:
                writer = CarWriter.with_root_later(f)
                writer.set_root(import_tree(root, sink=writer, threads=threads).cid)

        t_car, _, c_car = best(to_car, args.repeat)
        for car in cars:
            car.unlink()
        node = cast(DirNode, result)
        print(f"bytes: {total} in {sum(1 for _ in root.rglob('*'))} entries")
        shown = threads if threads is not None else f"auto ({auto_hash_threads()} now)"
        print(f"importer hashing threads: {shown}")
        print(f"hashlib sha256     : {mb / t_hash:8.1f} MB/s  cpu/wall {c_hash / t_hash:.2f}")
        for label, t, c in (
            ("odfweb3 import_tree", t_ours, c_ours),
            ("odfweb3 + sink     ", t_sink, c_sink),
            ("odfweb3 + CAR file ", t_car, c_car),
        ):
            print(f"{label}: {mb / t:8.1f} MB/s  ratio {t_hash / t:.3f}  cpu/wall {c / t:.2f}")
        print(f"root CID: {node.cid}")
        try:
            import aleph_cid  # type: ignore[import-not-found]
        except ImportError:
            print("aleph-cid: not installed; skipped")
            return
        t_aleph, aleph_root, _ = best(
            lambda: aleph_cid.hash_folder(str(root), cid_version=1), args.repeat
        )
        same = str(aleph_root) == str(node.cid)
        print(
            f"aleph-cid          : {mb / t_aleph:8.1f} MB/s  odfweb3/aleph ratio "
            f"{t_aleph / t_ours:.3f}  root {'AGREES' if same else 'DIFFERS: ' + str(aleph_root)}"
        )


if __name__ == "__main__":
    main()
