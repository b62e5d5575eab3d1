"""UnixFS import against Kubo's ``ipfs add -r --only-hash`` and two-thread hashlib, same run.

Usage::

    python bench/bench_import_kubo.py [--trees big,small] [--profiles default,unixfs-v1-2025]
                                      [--big-files 512] [--big-mib 2]
                                      [--small-files 10000] [--small-kb 100]
                                      [--rounds 3] [--scratch DIR]

Two trees of random bytes are written under ``--scratch`` (a new temporary folder in it,
deleted at the end): "big", ``--big-files`` files of ``--big-mib`` MiB in one folder (1 GiB
by default), and "small", ``--small-files`` files of ``--small-kb`` KB in one folder (1 GB,
a HAMT-sharded folder under both profiles). Per round, for each tree, interleaved so the
machine's load hits all alike:

1. hashlib: SHA-256 of every file, 1 MiB reads, the files spread over two threads (the
   reference: reading and hashing alone, on both cores);
2. per profile, ``import_tree`` (no sink: every CID computed, nothing written) in a child
   process (interpreter start and imports not timed; peak RSS is its ``VmHWM``);
3. per profile, Kubo v0.43.1 (the binary ``make gonodes`` builds, found as
   ``tests/support/kubo.py`` finds it) ``ipfs add -r -Q --only-hash --hidden`` of the same
   folder, in a repo made with ``ipfs init --profile=test[,unixfs-v1-2025]``; the default
   profile adds ``--cid-version=1`` (what odfweb3 uses without a profile: CIDv1, raw leaves).
   Wall and CPU from ``wait4``, peak RSS its ``ru_maxrss``.

The root CIDs of ours and Kubo's must be equal (the script exits 1 otherwise). Printed per
tree and profile: the best round of each, ours/Kubo wall and CPU, hashlib/ours (goal:
ours/Kubo <= 1.0, hashlib/ours >= 0.85, ours' peak RSS <= 64 MiB), and every round's pair of
ratios. Load average is printed per round. No timing assertions.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

ROOT = Path(__file__).resolve().parent.parent
KUBO_BIN = Path(os.environ.get("ODFWEB3_GONODES", ROOT / ".gonodes")) / "bin" / "ipfs"
KUBO_VERSION = "0.43.1"
PROFILES = ("default", "unixfs-v1-2025")


def make_tree(root: Path, files: int, size: int) -> list[Path]:
    """``files`` files of ``size`` random bytes in one folder (unique chunks)."""
    root.mkdir(parents=True)
    paths = []
    for i in range(files):
        path = root / f"f{i:06d}"
        with open(path, "wb") as out:
            left = size
            while left:
                n = min(left, 1 << 20)
                out.write(os.urandom(n))
                left -= n
        paths.append(path)
    return paths


def _peak_rss() -> int:
    # _common.own_peak_rss, without importing _common: it loads the dataset builder, 26 MiB
    # that are not the importer's.
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def step_ours(folder: str, profile: str) -> None:
    """Child process: one import_tree, printed as JSON (wall, CPU, root, peak RSS)."""
    from odfweb3_ipfs.publish.cid_profile import DEFAULT_PROFILE
    from odfweb3_ipfs.publish.cid_profile import PROFILES as NAMED
    from odfweb3_ipfs.publish.unixfs_import import import_tree

    prof = DEFAULT_PROFILE if profile == "default" else NAMED[profile]
    # import_tree with the profile's fields spelled out, not CidProfile.import_tree: this
    # child also runs on --before-code checkouts older than that method.
    cpu, start = time.process_time(), time.perf_counter()
    node = import_tree(
        folder,
        cid_version=prof.cid_version,
        raw_leaves=prof.raw_leaves,
        chunk_size=prof.chunk_size,
        max_links=prof.max_links,
        hamt_threshold=prof.hamt_threshold,
        estimation=prof.estimation,
        fanout=prof.hamt_fanout,
    )
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(json.dumps({"wall": wall, "cpu": cpu, "root": node.cid.encode(), "rss": _peak_rss()}))


def run_ours(folder: Path, profile: str, code: Path | None = None) -> dict[str, float | str]:
    """One import in a child process; ``code``: a checkout whose odfweb3 to run instead."""
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = f"{code}{os.pathsep}{code / 'adapters'}"
    out = subprocess.run(
        [sys.executable, __file__, "--step", str(folder), "--profile", profile],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def kubo_repo(base: Path, profile: str) -> Path:
    repo = base / f"kubo-{profile}"
    profiles = "test" if profile == "default" else f"test,{profile}"
    subprocess.run(
        [str(KUBO_BIN), "init", f"--profile={profiles}", "--empty-repo"],
        env={**os.environ, "IPFS_PATH": str(repo)},
        check=True,
        capture_output=True,
    )
    return repo


def run_kubo(repo: Path, folder: Path, profile: str) -> dict[str, float | str]:
    argv = [str(KUBO_BIN), "add", "-r", "-Q", "--only-hash", "--hidden"]
    if profile == "default":
        argv.append("--cid-version=1")
    start = time.perf_counter()
    proc = subprocess.Popen(
        [*argv, str(folder)],
        env={**os.environ, "IPFS_PATH": str(repo)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    assert proc.stdout is not None and proc.stderr is not None
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"ipfs add failed ({proc.returncode}): {err.decode(errors='replace')}")
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "root": out.decode().strip(),
        "rss": usage.ru_maxrss * 1024,
    }


def run_hashlib(paths: list[Path]) -> dict[str, float | str]:
    from _common import hash_files

    cpu, start = time.process_time(), time.perf_counter()
    hash_files(paths, hashlib.sha256, threads=2)
    return {"wall": time.perf_counter() - start, "cpu": time.process_time() - cpu}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--trees", default="big,small")
    parser.add_argument("--profiles", default=",".join(PROFILES))
    parser.add_argument("--big-files", type=int, default=512)
    parser.add_argument("--big-mib", type=float, default=2)
    parser.add_argument("--small-files", type=int, default=10000)
    parser.add_argument("--small-kb", type=float, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scratch", type=Path, help="folder for the trees (default: system temp)")
    parser.add_argument(
        "--before-code",
        type=Path,
        help="a checkout (e.g. `git archive` of an older commit) timed too, as 'before'",
    )
    parser.add_argument("--step", help=argparse.SUPPRESS)
    parser.add_argument("--profile", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        step_ours(args.step, args.profile)
        return 0
    from _common import machine, print_table

    if not KUBO_BIN.exists():
        raise SystemExit(f"{KUBO_BIN}: not built; run `make gonodes` first")
    version = subprocess.run(
        [str(KUBO_BIN), "version", "--number"], check=True, capture_output=True, text=True
    ).stdout.strip()
    profiles = [p for p in args.profiles.split(",") if p]
    for p in profiles:
        if p not in PROFILES:
            parser.error(f"unknown profile {p!r} (one of {', '.join(PROFILES)})")
    sizes = {
        "big": (args.big_files, int(args.big_mib * (1 << 20))),
        "small": (args.small_files, int(args.small_kb * 1000)),
    }
    trees = [t for t in args.trees.split(",") if t]
    print(machine())
    print(f"Kubo {version}; {args.rounds} rounds; load {os.getloadavg()[0]:.1f}")
    if args.scratch is not None:
        args.scratch.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="import-kubo-", dir=args.scratch))
    mismatch = False
    try:
        paths = {}
        for tree in trees:
            files, size = sizes[tree]
            paths[tree] = make_tree(base / tree, files, size)
            print(f"tree {tree}: {files} files of {size:,} bytes")
        repos = {p: kubo_repo(base, p) for p in profiles}
        runs: dict[tuple[str, str], list[dict[str, float | str]]] = {}
        for k in range(args.rounds):
            print(f"round {k + 1}: load {os.getloadavg()[0]:.1f}", flush=True)
            for tree in trees:
                folder = base / tree
                runs.setdefault((tree, "hashlib"), []).append(run_hashlib(paths[tree]))
                for p in profiles:
                    ours = run_ours(folder, p)
                    kubo = run_kubo(repos[p], folder, p)
                    if ours["root"] != kubo["root"]:
                        print(f"  {tree}/{p}: root {ours['root']} != Kubo's {kubo['root']}")
                        mismatch = True
                    runs.setdefault((tree, f"ours {p}"), []).append(ours)
                    runs.setdefault((tree, f"kubo {p}"), []).append(kubo)
                    if args.before_code is not None:
                        before = run_ours(folder, p, args.before_code)
                        runs.setdefault((tree, f"before {p}"), []).append(before)
        rows = [
            (
                "tree / profile",
                "ours s",
                "CPU s",
                "RSS MiB",
                "Kubo s",
                "CPU s",
                "RSS MiB",
                "hashlib s",
                "CPU s",
                "ours/Kubo wall",
                "CPU",
                "hashlib/ours",
                "per round ours/Kubo, hashlib/ours",
            )
        ]
        variants = ["ours"] + (["before"] if args.before_code is not None else [])
        for tree, p, who in ((t, p, w) for t in trees for p in profiles for w in variants):
            hashlib_runs = runs[(tree, "hashlib")]
            h_best = min(hashlib_runs, key=lambda r: float(r["wall"]))
            h = float(h_best["wall"])
            ours_runs, kubo_runs = runs[(tree, f"{who} {p}")], runs[(tree, f"kubo {p}")]
            o = min(ours_runs, key=lambda r: float(r["wall"]))
            q = min(kubo_runs, key=lambda r: float(r["wall"]))
            per_round = " ".join(
                f"{float(a['wall']) / float(b['wall']):.2f},"
                f"{float(c['wall']) / float(a['wall']):.2f}"
                for a, b, c in zip(ours_runs, kubo_runs, hashlib_runs, strict=True)
            )
            rows.append(
                (
                    f"{tree} / {p}" + (" (before)" if who == "before" else ""),
                    f"{float(o['wall']):.3f}",
                    f"{float(o['cpu']):.2f}",
                    f"{float(o['rss']) / 2**20:.0f}",
                    f"{float(q['wall']):.3f}",
                    f"{float(q['cpu']):.2f}",
                    f"{float(q['rss']) / 2**20:.0f}",
                    f"{h:.3f}",
                    f"{float(h_best['cpu']):.2f}",
                    f"{float(o['wall']) / float(q['wall']):.3f}",
                    f"{float(o['cpu']) / float(q['cpu']):.3f}",
                    f"{h / float(o['wall']):.3f}",
                    per_round,
                )
            )
        print()
        print_table(rows)
        print(f"load at the end {os.getloadavg()[0]:.1f}; roots equal: {not mismatch}")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 1 if mismatch else 0


if __name__ == "__main__":
    raise SystemExit(main())
