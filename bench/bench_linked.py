"""What reading ObjectLink columns (ODF RFC-017) costs, measured against not reading them.

Usage::

    python bench/bench_linked.py [--blocks 10000] [--versions 1000] [--repeat 3]

Two datasets in a temporary directory:

- a plain example dataset of ``--blocks`` AddData blocks (no schema declares an
  ObjectLink): a publish's chain load (``load_chain(...).objects()``, no cache) with the
  link source every publish now passes, against the same walk without one (``links=None``,
  what the code did before): the overhead a dataset without linked objects pays, time and
  traced peak memory;
- a kamu "versioned file" dataset of ``--versions`` AddData blocks, each a real Parquet
  data file linking one 4 KiB object (tests/support/linked.py): the chain load with links
  (every data file hashed, then its link column read) against without, and
  ``validate --deep`` (every data file and linked object hashed) in objects/s.

Best of ``--repeat`` interleaved rounds; ratios are of the same run.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import best_of, machine

from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.chain import iter_objects, walk_chain
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.parquet_links import local_links
from odfweb3.odf.validate import validate_dataset
from tests.support.linked import create_linked_dataset


def objects(path: Path, with_links: bool) -> int:
    reader = DatasetReader.open(path)
    links = local_links(reader) if with_links else None
    return sum(1 for _ in iter_objects(walk_chain(reader), links))


def peak(fn) -> int:
    tracemalloc.start()
    fn()
    _, top = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return top


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, default=10_000)
    ap.add_argument("--versions", type=int, default=1_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory() as tmp:
        plain = create_root_dataset(
            Path(tmp) / "plain", blocks=args.blocks, data_bytes=args.blocks * 100, fsync=False
        ).path
        linked = create_linked_dataset(Path(tmp) / "linked", versions=args.versions, size=4096)
        rows = []
        for name, path in (("plain", plain), ("versioned file", linked.path)):
            t0, t1 = [], []
            for _ in range(args.repeat):  # interleaved: without, with, without, with ...
                without, n0 = best_of(lambda p=path: objects(p, False), 1)
                with_, n1 = best_of(lambda p=path: objects(p, True), 1)
                t0.append(without.best)
                t1.append(with_.best)
            mem0 = peak(lambda p=path: objects(p, False))
            mem1 = peak(lambda p=path: objects(p, True))
            rows.append((name, n0, n1, min(t0), min(t1), mem0, mem1))
        deep, report = best_of(lambda: validate_dataset(linked.path, deep=True), args.repeat)
        assert report.ok
    print(f"{'dataset':<16} {'objects':>15} {'without s':>10} {'with s':>8} {'ratio':>6} "
          f"{'peak MB without':>16} {'with':>6}")  # fmt: skip
    for name, n0, n1, t0, t1, m0, m1 in rows:
        print(f"{name:<16} {n0:>7} -> {n1:<6} {t0:>10.3f} {t1:>8.3f} {t1 / t0:>6.2f} "
              f"{m0 / 1e6:>16.1f} {m1 / 1e6:>6.1f}")  # fmt: skip
    print(
        f"validate --deep, versioned file: {report.objects_checked} objects in {deep.best:.3f} s "
        f"({report.objects_checked / deep.best:.0f} objects/s)"
    )


if __name__ == "__main__":
    main()
