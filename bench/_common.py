"""Shared helpers of the benchmark scripts: timing, machine description, datasets.

Not part of the library: imported by ``bench/bench_*.py`` only (run them from the
repository root, e.g. ``.venv/bin/python bench/bench_validate.py``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import shutil
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from odfweb3.odf.builder import create_root_dataset

__all__ = [
    "READ_SIZE",
    "Timing",
    "best_of",
    "dataset_files",
    "drop_page_cache",
    "ensure_dataset",
    "hash_files",
    "linked_copy",
    "machine",
    "own_peak_rss",
    "page_cache_bytes",
    "print_table",
]

T = TypeVar("T")

# The same read size as odfweb3.odf.multihash (1 MiB into one reusable buffer).
READ_SIZE = 1 << 20


@dataclass(frozen=True)
class Timing:
    """Best and all wall times (seconds) of a repeated measurement, and the last result."""

    best: float
    times: tuple[float, ...]


def best_of(
    fn: Callable[[], T], repeat: int, before: Callable[[], None] | None = None
) -> tuple[Timing, T]:
    """Run ``fn`` ``repeat`` times (calling ``before`` untimed first each time)."""
    times: list[float] = []
    result: T | None = None
    for _ in range(max(1, repeat)):
        if before is not None:
            before()
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    assert result is not None
    return Timing(min(times), tuple(times)), result


def machine() -> str:
    """One line: date, CPU model, cores, Python version, OS."""
    model = platform.processor() or "unknown CPU"
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return (
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {model}; {os.cpu_count()} cores; "
        f"Python {platform.python_version()} ({platform.python_implementation()}); "
        f"{platform.system()} {platform.release()}"
    )


def own_peak_rss() -> int:
    """This process's peak resident memory in bytes (``VmHWM`` of its own address space).

    A child step reports this itself: ``ru_maxrss`` from ``wait4`` would also count the parent
    (Linux keeps the high-water mark of the image a child was forked from across ``exec``), so
    every step would weigh at least as much as the benchmark process that built the datasets.
    """
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def drop_page_cache() -> bool:
    """Drop the kernel page cache (root only); True when the kernel accepted it."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w", encoding="ascii") as f:
            f.write("3\n")
    except OSError:
        return False
    return True


def page_cache_bytes() -> int:
    """Bytes in the kernel page cache (``Cached`` in /proc/meminfo; -1 when unknown)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("Cached:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return -1


def dataset_files(root: Path) -> list[Path]:
    """Data and checkpoint files of a dataset (what a deep validation hashes), sorted."""
    out: list[Path] = []
    for sub in ("data", "checkpoints"):
        folder = root / sub
        if folder.is_dir():
            out.extend(sorted(p for p in folder.iterdir() if not p.name.startswith(".")))
    return out


def _hash_one(path: Path, factory: Callable[[], hashlib._Hash], buf: bytearray) -> int:
    h = factory()
    view = memoryview(buf)
    n_total = 0
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(buf):
            h.update(view[:n])
            n_total += n
    h.digest()
    return n_total


def hash_files(paths: list[Path], factory: Callable[[], hashlib._Hash], threads: int = 1) -> int:
    """Hash every file in ``READ_SIZE`` reads (the reference limit); return bytes hashed.

    With ``threads > 1`` files are spread over a thread pool (hashlib releases the GIL
    on large updates), each thread with its own buffer.
    """
    if threads <= 1:
        buf = bytearray(READ_SIZE)
        return sum(_hash_one(p, factory, buf) for p in paths)
    import threading

    local = threading.local()

    def one(p: Path) -> int:
        buf = getattr(local, "buf", None)
        if buf is None:
            buf = local.buf = bytearray(READ_SIZE)
        return _hash_one(p, factory, buf)

    with ThreadPoolExecutor(max_workers=threads) as pool:
        return sum(pool.map(one, paths))


def ensure_dataset(
    cache: Path | None, scratch: Path, *, blocks: int, data_bytes: int, seed: int = 0
) -> tuple[Path, float | None]:
    """A root dataset of ``blocks`` AddData blocks and ``data_bytes`` bytes of data.

    With ``cache`` the dataset lives in ``cache/dataset`` and is reused when
    ``cache/params.json`` matches (delete the directory to rebuild); otherwise it is
    built under ``scratch``. Returns (dataset path, build seconds or None if reused).
    """
    params = {"blocks": blocks, "dataBytes": data_bytes, "seed": seed}
    base = cache if cache is not None else scratch
    path = base / "dataset"
    stamp = base / "params.json"
    if cache is not None and stamp.is_file() and (path / "refs" / "head").is_file():
        with contextlib.suppress(ValueError, OSError):
            if json.loads(stamp.read_text("utf-8")) == params:
                return path, None
    if path.exists():
        shutil.rmtree(path)
    base.mkdir(parents=True, exist_ok=True)
    stamp.unlink(missing_ok=True)
    start = time.perf_counter()
    create_root_dataset(path, blocks=blocks, data_bytes=data_bytes, seed=seed, fsync=False)
    elapsed = time.perf_counter() - start
    stamp.write_text(json.dumps(params), "utf-8")
    return path, elapsed


def linked_copy(src: Path, dest: Path) -> Path:
    """Copy a dataset as hard links (instant; safe: odfweb3 replaces files by rename)."""

    def link(s: str, d: str) -> None:
        os.link(s, d)

    shutil.copytree(src, dest, copy_function=link)
    return dest


def print_table(rows: list[tuple[str, ...]], out: object = None) -> None:
    """Print rows as a left-aligned text table (first row is the header)."""
    stream = out if out is not None else sys.stdout
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for k, row in enumerate(rows):
        line = "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        print(line.rstrip(), file=stream)  # type: ignore[call-overload]
        if k == 0:
            print("  ".join("-" * w for w in widths), file=stream)  # type: ignore[call-overload]
