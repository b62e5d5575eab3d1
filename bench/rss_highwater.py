"""Where a command's peak RSS is reached: the main thread's stack at each new RSS step.

Usage::

    python bench/rss_highwater.py [--step-mb 3] [--out FILE] SCRIPT ARGS...

Runs ``SCRIPT`` (e.g. ``bench/bundle_fixed.py publish DS --to bundle:OUT -q``) in this
process with a daemon thread that reads ``/proc/self/statm`` every 5 ms; each time the
resident set first passes another ``--step-mb`` it records the RSS, the interpreter's
allocated block count (``sys.getallocatedblocks``: objects the heap holds, against RSS the
allocator keeps) and the main thread's innermost frames. Written to ``--out`` (stderr by
default) at exit: the last steps name the code that holds the peak. Sampling, not tracing:
a step shorter than 5 ms can be missed, and the overhead is a few per cent of one core.
"""

from __future__ import annotations

import argparse
import atexit
import os
import runpy
import sys
import threading
import time
import traceback
from ctypes import CDLL, Structure, c_size_t
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")


def _rss() -> int:
    with open("/proc/self/statm", "rb") as f:
        return int(f.read().split()[1]) * PAGE


class _MallInfo2(Structure):
    _fields_ = [
        (name, c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _malloc_state() -> str:
    """glibc's view (``mallinfo2``): the heap from ``brk`` and its free part, ``mmap``ed
    chunks; RSS beyond those is pymalloc's arenas or not malloc's at all."""
    try:
        libc = CDLL(None)
        libc.mallinfo2.restype = _MallInfo2
    except (OSError, AttributeError):
        return ""
    m = libc.mallinfo2()
    mb = 1048576
    return (
        f"  heap {m.arena / mb:.1f} MB (free {m.fordblks / mb:.1f}, top {m.keepcost / mb:.1f})"
        f"  mmap {m.hblkhd / mb:.1f} MB in {m.hblks}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--step-mb", type=float, default=3.0)
    parser.add_argument("--out")
    parser.add_argument("script")
    args, rest = parser.parse_known_args()
    step = int(args.step_mb * 1048576)
    main_id = threading.get_ident()
    steps: list[tuple[float, int, int, str, list[str]]] = []
    start = time.monotonic()

    def sample() -> None:
        mark = _rss() + step
        while True:
            time.sleep(0.005)
            rss = _rss()
            if rss < mark:
                continue
            frame = sys._current_frames().get(main_id)
            stack = traceback.format_stack(frame, limit=24) if frame is not None else []
            blocks, malloc = sys.getallocatedblocks(), _malloc_state()
            steps.append((time.monotonic() - start, rss, blocks, malloc, stack))
            mark = rss + step

    def report() -> None:
        lines = []
        for at, rss, blocks, malloc, stack in steps:
            lines.append(
                f"== {at:8.1f} s  RSS {rss / 1048576:7.1f} MB  blocks {blocks:,}{malloc}\n"
            )
            lines.extend(stack)
        lines.append(f"== final RSS {_rss() / 1048576:.1f} MB\n")
        if args.out:
            Path(args.out).write_text("".join(lines), encoding="utf-8")
        else:
            sys.stderr.writelines(lines)

    atexit.register(report)
    threading.Thread(target=sample, daemon=True).start()
    sys.argv = [args.script, *rest]
    runpy.run_path(args.script, run_name="__main__")


if __name__ == "__main__":
    main()
