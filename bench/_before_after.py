"""The ``--before-root`` machinery of the benchmarks that compare two checkouts.

A benchmark run with ``--before-root DIR`` measures the same cases again with the library of
another checkout (e.g. the commit before a change), in a subprocess whose ``sys.path`` starts
with that checkout, and prints both. Imports nothing of odfweb3: it chooses whose odfweb3 the
benchmark imports, so it must run before that import.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def use_code_root() -> None:
    """Put the library of ``--code-root DIR`` (the subprocess) or of this checkout first on
    ``sys.path``, and ``bench/`` itself for ``_common``."""
    root = HERE.parent
    if "--code-root" in sys.argv:
        root = Path(sys.argv[sys.argv.index("--code-root") + 1])
    sys.path[:0] = [str(root), str(root / "adapters"), str(HERE)]


def parse_args(
    doc: str, argv: list[str] | None, *, sizes: str, scratch: Path
) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--sizes", default=sizes)
    ap.add_argument("--before-root", type=Path)
    ap.add_argument("--code-root", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--label", default="after", help=argparse.SUPPRESS)
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--scratch", type=Path, default=scratch)
    args = ap.parse_args(argv)
    args.size_list = [int(s) for s in args.sizes.split(",")]
    return args


def measure_before(script: str, args: argparse.Namespace) -> list[list[str]]:
    """The rows ``script`` measures with the ``--before-root`` checkout's library."""
    got = subprocess.run(
        [
            *(sys.executable, script, "--code-root", str(args.before_root)),
            *("--label", "before", "--json", "--sizes", args.sizes),
            *("--scratch", str(args.scratch)),
        ],
        check=True,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=""),
    )
    rows: list[list[str]] = json.loads(got.stdout.splitlines()[-1])
    return rows
