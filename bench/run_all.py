"""Run every ``bench/bench_*.py`` script, small sizes by default, full sizes with ``--full``.

Usage: ``python bench/run_all.py [--full] [--cache DIR] [--only NAME]`` (``make bench``
runs the small variant). Small: about 50 MB and a few hundred blocks, a minute or two
in all. Full: the sizes of the issues (1 GB; 10,000 blocks), several minutes each and
about 3 GB of temporary disk. Each script prints its own table; this only runs them
one after another with the same interpreter and reports failures in the exit status.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Arguments per script: (small, full). Scripts not listed run with no arguments (small)
# or with their own defaults (full).
_ARGS: dict[str, tuple[list[str], list[str]]] = {
    "bench_validate": (
        ["--blocks", "300", "--data-bytes", "50000000", "--repeat", "2"],
        [],
    ),
    "bench_publish_car": (
        ["--blocks", "300", "--data-bytes", "50000000"],
        [],
    ),
    "bench_unixfs": (["--mb", "50", "--files", "8", "--repeat", "2"], []),
    "bench_initial": (
        [
            "--mb",
            "50",
            "--blocks",
            "300",
            "--files",
            "4",
            "--targets",
            "car,ipfs,bundle",
            "--rss-blocks",
            "0",
            "--big-gb",
            "0",
        ],
        ["--targets", "car,ipfs,bundle", "--repeat", "3"],
    ),
    "bench_import_kubo": (
        ["--big-files", "16", "--small-files", "300", "--rounds", "1"],
        ["--rounds", "3"],
    ),
    "bench_pull_car": (["--blocks", "300", "--rounds", "1"], ["--blocks", "10000"]),
    "bench_file_create": (["--files", "3000", "--rounds", "2"], []),
    "bench_pull_gateway": (["--blocks", "200", "--rounds", "1"], ["--blocks", "10000"]),
    "bench_cluster": (["--blocks", "50", "--data-bytes", "20000000"], []),
    "bench_scale": (["--sizes", "200,2000"], ["--svg", str(HERE / "scale.svg")]),
    "bench_arweave_updates": (["--sizes", "200", "--updates", "5", "--full-updates", "2"], []),
    "bench_arweave_reads": (["--sizes", "10,100", "--cache", "/tmp/bench-arweave-reads"], []),
    "bench_arweave_rebuild": (["--sizes", "30"], ["--sizes", "300,1000"]),
    "bench_arweave_state": (["--sizes", "10,200"], ["--sizes", "10,1000,9998"]),
    "bench_arweave_tier_bytes": (["--updates", "1000"], []),
    "bench_turbo": (["--blocks", "5", "--data-bytes", "500000", "--rounds", "1"], []),
    "bench_discovery": (["--blocks", "300", "--repeat", "2"], []),
    "bench_memory": (["--sizes", "300", "--targets", "car,bundle"], ["--full"]),
    "bench_bundle_fixed": (["--sizes", "100,400"], []),
    "bench_discovery_publish": (["--sizes", "100,300", "--repeat", "2"], ["--sizes", "100,10000"]),
    "bench_example": (
        ["--sizes", "300", "--linked-objects", "0,2"],
        ["--sizes", "1000,10000,100000", "--linked-objects", "0,2"],
    ),
}
# Scripts that accept --cache DIR (the shared 10,000-block dataset).
_CACHEABLE = ("bench_validate", "bench_publish_car")


def main(argv: list[str] | None = None) -> int:
    """Run the scripts; exit status 1 if any failed (never because of a timing)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the issues' full sizes")
    parser.add_argument("--cache", type=Path, help="dataset cache passed to scripts taking one")
    parser.add_argument("--only", help="run only this script (e.g. bench_validate)")
    args = parser.parse_args(argv)

    scripts = sorted(HERE.glob("bench_*.py"))
    if args.only:
        scripts = [s for s in scripts if s.stem == args.only.removesuffix(".py")]
        if not scripts:
            parser.error(f"no bench script named {args.only}")
    failed: list[str] = []
    for script in scripts:
        small, full = _ARGS.get(script.stem, ([], []))
        cmd = [sys.executable, str(script), *(full if args.full else small)]
        if args.cache is not None and script.stem in _CACHEABLE:
            cmd += ["--cache", str(args.cache)]
        print(f"\n=== {script.name} ({'full' if args.full else 'small'}) ===", flush=True)
        start = time.perf_counter()
        code = subprocess.call(cmd)
        print(f"=== {script.name}: exit {code}, {time.perf_counter() - start:.0f} s", flush=True)
        if code != 0:
            failed.append(script.name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
