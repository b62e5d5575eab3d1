"""``pull`` from an offline publish (``car:DIR``) against ``validate --deep`` of the same dataset.

Usage::

    python bench/bench_pull_car.py [--blocks 1000] [--rounds 2] [--cache DIR]
                                   [--before-code CHECKOUT]

Builds a root dataset of ``--blocks`` AddData blocks of 2,000 bytes (30,004 objects at
10,000 blocks, the size of the issue), publishes it once to ``car:DIR`` and then times, in
rounds interleaved so background load weighs on both alike, each in its own process:

- the reference: ``odfweb3 validate --deep DATASET`` (every block and object read and
  hashed, every chain rule checked);
- ``odfweb3 pull car:DIR DEST`` into a new directory (the CAR directory checked whole,
  every block and object verified, written and made durable, ``refs/head`` last);
- with ``--before-code``, the same pull by an older checkout (its ``odfweb3`` and
  ``adapters``), for before/after figures from one run.

Prints wall seconds, CPU seconds (and their system share) and peak RSS of each (best of the
rounds) and the ratio pull / validate --deep (goal: <= 2). The pulled copies are removed at the
end, not between rounds (see the comment in ``main``); ``--settle`` waits after the publish.
``uptime``'s load is printed before and after: on a shared machine compare the ratios, not the
seconds. Scratch data under ``--scratch`` (default a temporary directory), removed at the end
unless ``--cache`` keeps the dataset.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ensure_dataset, machine, print_table

GOAL = 2.0
# Runs the CLI in this child process and reports its wall time, CPU time and own peak RSS
# (VmHWM: wait4's ru_maxrss would also count the benchmark process it was forked from).
_CHILD = """
import json, os, sys, time
from odfweb3.cli.main import main
start = time.perf_counter()
cpu0 = os.times()
with open(os.devnull, "w") as null:
    sys.stdout = null
    code = main(sys.argv[1:], env=dict(os.environ))
    sys.stdout = sys.__stdout__
wall = time.perf_counter() - start
cpu1 = os.times()
hwm = 0
with open("/proc/self/status") as f:
    for line in f:
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1]) * 1024
print(json.dumps({"code": code, "wall": wall,
                  "cpu": cpu1.user - cpu0.user + cpu1.system - cpu0.system,
                  "sys": cpu1.system - cpu0.system, "rss": hwm}))
"""


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _run(argv: list[str], env: dict[str, str]) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, *argv], env=env, capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise SystemExit(f"{argv}: failed ({proc.returncode}): {proc.stderr.strip()[-800:]}")
    result: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    if result["code"] != 0:
        raise SystemExit(f"{argv}: exit {result['code']}: {proc.stderr.strip()[-800:]}")
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--blocks", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cache", type=Path, help="keep the dataset here for the next run")
    ap.add_argument("--scratch", type=Path, help="where the CARs and pulls go (default: tmp)")
    ap.add_argument("--before-code", type=Path, help="an older checkout to time as well")
    ap.add_argument(
        "--settle",
        type=float,
        default=0.0,
        help="seconds to wait after the publish, before the rounds (files removed just "
        "before, by an earlier run or anyone on this disk, cost the next creations)",
    )
    args = ap.parse_args(argv)
    print(machine())
    print(f"load before: {_load()}")
    scratch = Path(tempfile.mkdtemp(prefix="odfb-pullcar-", dir=args.scratch))
    try:
        ds, _ = ensure_dataset(
            args.cache, scratch, blocks=args.blocks, data_bytes=args.blocks * 2000
        )
        env = dict(os.environ)
        env["ODFWEB3_KEYSTORE"] = str(scratch / "keys")
        env["ODFWEB3_STATE_DIR"] = str(scratch / "state")
        env["XDG_CONFIG_HOME"] = str(scratch / "xdg")
        car = scratch / "car"
        _run(["publish", str(ds), "--to", f"car:{car}"], env)
        if args.settle > 0:
            time.sleep(args.settle)
        # The pulled copies stay until every round has run: on ext4 without a journal (this
        # machine's disk) a new inode skips every inode of its group freed in the last 60 s
        # (300 s while the inode table block is dirty; ext4_new_inode's recently_deleted(),
        # one inode-table lookup each), so removing one pull's 30,000 files made each file
        # the next pull created scan past them: 5-15 s of system CPU, round 1 of a run
        # spared. Removed between rounds, they weighed on whichever pull came next.
        codes = {"now": env}
        if args.before_code is not None:
            root = args.before_code.resolve()
            codes["before"] = env | {"PYTHONPATH": f"{root}{os.pathsep}{root / 'adapters'}"}
        best: dict[str, dict[str, float]] = {}
        for r in range(args.rounds):
            steps = [("validate --deep", ["validate", "--deep", str(ds)], env)]
            for code, code_env in codes.items():
                dest = scratch / f"dest-{code}-{r}"
                steps.append((f"pull ({code})", ["pull", f"car:{car}", str(dest)], code_env))
            for label, step_argv, step_env in steps:
                got = _run(step_argv, step_env)
                print(
                    f"round {r + 1}: {label}: {got['wall']:.2f} s wall, {got['cpu']:.2f} s CPU "
                    f"({got['sys']:.2f} s system)"
                )
                prev = best.get(label)
                best[label] = (
                    got
                    if prev is None
                    else {k: min(prev[k], got[k]) for k in ("wall", "cpu", "sys", "rss")}
                )
        ref = best["validate --deep"]
        rows = [
            (
                "measurement",
                "wall s",
                "CPU s",
                "system s",
                "peak RSS MB",
                "wall / validate",
                "CPU / val.",
            )
        ]
        for label, got in best.items():
            rows.append(
                (
                    label,
                    f"{got['wall']:.2f}",
                    f"{got['cpu']:.2f}",
                    f"{got['sys']:.2f}",
                    f"{got['rss'] / 1e6:.0f}",
                    f"{got['wall'] / ref['wall']:.2f}",
                    f"{got['cpu'] / ref['cpu']:.2f}",
                )
            )
        # counted in the dataset (its blocks, data files and checkpoints), not guessed
        objects = sum(len(os.listdir(ds / f)) for f in ("blocks", "data", "checkpoints"))
        print(f"\n{args.blocks} blocks ({objects} objects), best of {args.rounds}")
        print_table(rows)
        print(f"goal: pull / validate --deep <= {GOAL} (wall)")
        print(f"load after: {_load()}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
