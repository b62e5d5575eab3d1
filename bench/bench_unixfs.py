"""UnixFS import throughput versus hashlib SHA-256 over the same bytes, in one run.

Usage: ``python bench/bench_unixfs.py [--mb 1024] [--files 48] [--dir PATH]``

Builds a dataset-like directory (``blocks/``, ``data/``, ``checkpoints/``,
``refs/head``) of about ``--mb`` MiB in a temporary directory (or imports
``--dir``), then times, best of ``--repeat`` runs each:

- hashlib: read every file with ``readinto`` into a 256 KiB buffer and SHA-256 it;
- odfweb3: ``import_tree`` (CIDv1, raw leaves) computing every CID, no sink;
- odfweb3 + sink: the same, handing every block to a sink (as the CAR writer gets them);
- aleph-cid (Rust), when installed: ``hash_folder``; its root CID must equal ours.

Prints throughputs and ratios (goal: odfweb3 / hashlib >= 0.85). No network.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from odfweb3.adapters.ipfs.cid import Cid
from odfweb3.adapters.ipfs.unixfs import import_tree

CHUNK = 262144


def make_tree(root: Path, total_mb: int, files: int) -> int:
    """Write a dataset-shaped tree of random bytes; return its byte count."""
    for sub in ("blocks", "data", "checkpoints", "refs"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "refs" / "head").write_bytes(b"f1620" + b"0" * 64)
    written = 0
    per_file = max(1, total_mb * 1024 * 1024 // files)
    block = os.urandom(1 << 20)
    for i in range(files):
        sub = ("data", "checkpoints")[i % 2]
        size = per_file + (i * 7919) % 65536  # not chunk-aligned
        with open(root / sub / f"f1620{i:060x}", "wb") as out:
            left = size
            while left:
                n = min(left, len(block))
                out.write(block[:n])
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


def best(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    times = []
    result: object = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1024, help="dataset size in MiB")
    parser.add_argument("--files", type=int, default=48, help="number of data files")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, help="import this directory instead")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="odfweb3-bench-") as tmp:
        root = args.dir or Path(tmp) / "dataset"
        if args.dir is None:
            make_tree(root, args.mb, args.files)
        t_hash, nbytes = best(lambda: hashlib_pass(root), args.repeat)
        mb = int(nbytes) / 1e6  # type: ignore[call-overload]
        t_ours, node = best(lambda: import_tree(root), args.repeat)
        sunk = [0]

        def sink(cid: Cid, data: bytes) -> None:
            sunk[0] += len(data)

        t_sink, _ = best(lambda: import_tree(root, sink=sink), args.repeat)
        print(f"bytes: {int(nbytes)} in {sum(1 for _ in root.rglob('*'))} entries")
        print(f"hashlib sha256     : {mb / t_hash:8.1f} MB/s")
        print(f"odfweb3 import_tree: {mb / t_ours:8.1f} MB/s  ratio {t_hash / t_ours:.3f}")
        print(f"odfweb3 + sink     : {mb / t_sink:8.1f} MB/s  ratio {t_hash / t_sink:.3f}")
        print(f"root CID: {node.cid}")  # type: ignore[attr-defined]
        try:
            import aleph_cid  # type: ignore[import-not-found]
        except ImportError:
            print("aleph-cid: not installed; skipped")
            return
        t_aleph, aleph_root = best(
            lambda: aleph_cid.hash_folder(str(root), cid_version=1), args.repeat
        )
        same = str(aleph_root) == str(node.cid)  # type: ignore[attr-defined]
        print(
            f"aleph-cid          : {mb / t_aleph:8.1f} MB/s  odfweb3/aleph ratio "
            f"{t_aleph / t_ours:.3f}  root {'AGREES' if same else 'DIFFERS: ' + str(aleph_root)}"
        )


if __name__ == "__main__":
    main()
