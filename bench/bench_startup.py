"""Start-up: how long the ``odfweb3`` command takes before it does anything.

Usage::

    python bench/bench_startup.py [--repeat 15] [--before-root DIR]

Each command runs in a child process (the installed console script, the interpreter beside
this one), in interleaved rounds; the best wall time and the CPU seconds (user + system, from
``wait4``) of each are reported. The reference is the same interpreter running ``-c pass``
(the interpreter and ``site`` start-up every command pays), measured in the same rounds; "own"
is a command's best minus the reference's best. The publish is a ``--dry-run`` of a 1-block
dataset to a ``car:`` directory: parsing, configuration, opening the dataset and the target and
the plan, nothing sent. ``-X importtime`` of each command gives the number of modules it loads
and the three largest.

The children run with compiled bytecode, as an installed package has it: a round before the
timed ones writes it (``PYTHONPYCACHEPREFIX``, in the run's temp directory; an inherited
``PYTHONDONTWRITEBYTECODE`` is dropped, under which every start compiles its modules from
source, about 1 s for a publish), and makes the publish's verified-chain cache, which a
second publish of the same head reads.

``--before-root DIR`` (another checkout, e.g. a ``git archive`` of the commit before a change)
adds each odfweb3 command again, run with that checkout's library first on ``PYTHONPATH``
(the same console script and interpreter), in the same interleaved rounds: before and after
under the same load.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, print_table

from odfweb3.odf.builder import create_root_dataset


def _run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, int]:
    """(wall s, CPU s, exit status) of one child process."""
    start = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, child.returncode


def _imports(
    cmd: list[str], env: dict[str, str] | None = None
) -> tuple[int, list[tuple[str, int]]]:
    """Modules a command loads and its three largest (cumulative microseconds)."""
    done = subprocess.run(
        [cmd[0], "-X", "importtime", *cmd[1:]],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    rows: list[tuple[str, int]] = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line.removeprefix("import time:").split("|")
        if not name.startswith("  "):  # top level: what the command itself asked for
            rows.append((name.strip(), int(cumulative)))
    count = sum(1 for line in done.stderr.splitlines() if line.startswith("import time:")) - 1
    return count, sorted(rows, key=lambda r: -r[1])[:3]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="rounds, best counts (15)")
    parser.add_argument(
        "--before-root", type=Path, help="also run each command with this checkout's library"
    )
    args = parser.parse_args(argv)
    python = sys.executable
    script = str(Path(python).with_name("odfweb3"))
    with tempfile.TemporaryDirectory(prefix="odfweb3-bench-startup-") as tmp:
        dataset = Path(tmp) / "dataset"
        create_root_dataset(dataset, blocks=1, data_bytes=1000, seed=7, fsync=False)
        out = Path(tmp) / "car"
        home = {**os.environ, "HOME": tmp, "XDG_CONFIG_HOME": tmp, "XDG_STATE_HOME": tmp}
        home["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        os.environ.update(home)
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        cases = {
            "python -c pass (reference)": [python, "-c", "pass"],
            "odfweb3 --version": [python, script, "--version"],
            "odfweb3 --help": [python, script, "--help"],
            "odfweb3 publish --dry-run": [
                python,
                script,
                "publish",
                "--dry-run",
                "-q",
                "--to",
                f"car:{out}",
                str(dataset),
            ],
        }
        envs: dict[str, dict[str, str] | None] = dict.fromkeys(cases)
        if args.before_root is not None:
            root = args.before_root.resolve()
            before = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{root / 'adapters'}"}
            for name in [n for n in cases if n.startswith("odfweb3")]:
                cases[f"{name} (before)"] = cases[name]
                envs[f"{name} (before)"] = before
        wall: dict[str, float] = dict.fromkeys(cases, float("inf"))
        cpu: dict[str, float] = dict.fromkeys(cases, float("inf"))
        for round_ in range(args.repeat + 1):
            for name, cmd in cases.items():
                w, c, code = _run(cmd, envs[name])
                if code != 0:
                    print(f"{name}: exit {code}", file=sys.stderr)
                    return 1
                if round_ == 0:  # writes the bytecode and the chain cache: not timed
                    continue
                wall[name] = min(wall[name], w)
                cpu[name] = min(cpu[name], c)
        print(machine())
        print(
            f"load average {os.getloadavg()[0]:.1f}; best of {args.repeat} interleaved rounds "
            "after one untimed round"
        )
        ref = "python -c pass (reference)"
        rows = [
            (
                "command",
                "best wall s",
                "own s",
                "CPU s",
                "own CPU s",
                "x reference",
                "modules",
                "largest",
            )
        ]
        for name, cmd in cases.items():
            count, largest = _imports(cmd, envs[name])
            top = ", ".join(f"{m} {us / 1000:.0f} ms" for m, us in largest)
            rows.append(
                (
                    name,
                    f"{wall[name]:.3f}",
                    f"{wall[name] - wall[ref]:.3f}",
                    f"{cpu[name]:.3f}",
                    f"{cpu[name] - cpu[ref]:.3f}",
                    f"{wall[name] / wall[ref]:.1f}",
                    str(count),
                    top,
                )
            )
        print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
