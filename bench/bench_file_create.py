"""What creating a pull's files costs the kernel, alone and right after as many were removed.

Usage::

    python bench/bench_file_create.py [--files 30000] [--rounds 3] [--scratch DIR]

Each round creates ``--files`` files of 1,500 bytes in three folders (a 10,000-block pull
writes 30,006: blocks, data files, checkpoints) with the flags ``LocalStore.put`` uses
(``O_CREAT | O_EXCL | O_NOFOLLOW``), one write each and no fsync, then removes them; the
next round creates its files right after. Prints each round's wall and system CPU seconds.

On ext4 without a journal a new inode skips every free inode of its block group that was
freed in the last 60 s (300 s while its inode-table block is dirty): ``recently_deleted()``
in ``__ext4_new_inode``, one inode-table lookup for each. So the rounds after the first pay
for the files the round before removed, as ``pull`` does after anything removed many files
nearby (another pull's copy, a test's temporary tree): the round-to-round swings of
``bench_pull_car.py``'s system CPU. A file system with a journal skips no inode this way.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _round(root: Path, files: int) -> tuple[float, float]:
    folders = [root / name for name in ("blocks", "data", "checkpoints")]
    for folder in folders:
        folder.mkdir(parents=True)
    data = b"x" * 1500
    wall0, cpu0 = time.perf_counter(), os.times()
    for i in range(files):
        # names as long as an object's (``f`` and a 34-byte multihash in hex)
        fd = os.open(f"{folders[i % 3]}/f{i:068x}", _FLAGS, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
    wall, cpu1 = time.perf_counter() - wall0, os.times()
    shutil.rmtree(root)
    return wall, cpu1.system - cpu0.system


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--files", type=int, default=30000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--scratch", type=Path, help="where the files go (default: tmp)")
    args = ap.parse_args(argv)
    print(f"load before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    scratch = Path(tempfile.mkdtemp(prefix="odfb-create-", dir=args.scratch))
    try:
        for r in range(args.rounds):
            wall, system = _round(scratch / f"round-{r}", args.files)
            print(f"round {r + 1}: {args.files} files in {wall:.2f} s, {system:.2f} s system")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
