"""Peak memory of the commands a user runs, against dataset size: publish and verify --deep.

Usage::

    python bench/bench_memory.py [--sizes 10000] [--targets car,ipfs,bundle]
                                 [--cache bench/.memory-cache] [--full]
                                 [--before-root DIR]

Each command is the console script (``odfweb3 publish DATASET --to TARGET``, ``odfweb3
verify --deep --against car:DIR DATASET``) in a child process of ``/usr/bin/time -f %M``, so
its peak RSS is its own (a child forked from this process would count this process's image
as well: Linux keeps the high-water mark across ``exec``), with its own state directory and
keystore. Per size N (AddData blocks of ``--block-bytes``, built once into ``--cache/N`` by
``create_root_dataset(..., fsync=False)``, reused while the parameters match) and target, on a
hard-linked copy of the dataset:

1. the initial publish;
2. one block appended (in a process of its own, untimed) and the +1 publish;
3. for ``car:``, ``odfweb3 verify --deep --against car:OUT`` of the copy (every object
   re-hashed against the CAR directory's).

``ipfs`` is a Kubo v0.43.1 this run starts for itself (tests/support/kubo.py: a daemon with
no bootstrap peers, no MDNS, no network configuration fetched; ``make gonodes``); ``bundle``
needs a wallet, made for the run (RSA-4096: its signing is slow, ``--bundle-max`` skips it
above that many blocks). Printed: peak RSS in MB and wall seconds per command, against the
goals (issue 30 goal 3: an initial publish <= 150 MB at 100,000 blocks and <= 200 MB at
1,000,000, a +1 publish <= 120 MB at 1,000,000, verify --deep likewise) and the reference
measured in the same run: the peak RSS of ``odfweb3 --version`` (the interpreter and the
CLI's start, which every command pays). ``--full`` runs 100,000 and 1,000,000 blocks (the
1,000,000-block dataset, 3,000,003 objects, is built once into ``--cache``: about 6,500 s of
``create_root_dataset`` on the loaded 2-core machine, linear in the files it writes).
``--before-root DIR`` (a ``git archive`` of another commit) runs each target's commands with
that checkout's CLI first, then with this one's, in the same run. No assertions.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ensure_dataset, linked_copy, machine, print_table

HERE = Path(__file__).resolve().parent
ODFWEB3 = Path(sys.executable).with_name("odfweb3")
GOALS = {  # issue 30 goal 3, MB: (blocks, command) -> goal
    (100_000, "initial"): 150,
    (1_000_000, "initial"): 200,
    (1_000_000, "+1"): 120,
    (100_000, "verify --deep"): 150,
    (1_000_000, "verify --deep"): 200,
}


def _command(root: Path | None) -> dict[str, str]:
    """The environment that makes ``odfweb3`` the CLI of the checkout ``root`` (None: this
    one): its library and adapters first on ``PYTHONPATH``, ahead of the editable install."""
    if root is None:
        return {}
    return {"PYTHONPATH": os.pathsep.join([str(root), str(root / "adapters")])}


def _run(
    args: list[str], env: dict[str, str], scratch: Path, root: Path | None = None
) -> tuple[float, float]:
    """Run ``odfweb3 ARGS`` under ``/usr/bin/time``: (peak RSS MB, wall seconds); with
    ``root``, the CLI of that checkout (:func:`_command`)."""
    report = scratch / "time.txt"
    start = time.perf_counter()
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "%M", "-o", str(report), str(ODFWEB3), *args],
        env=env | _command(root),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"odfweb3 {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    kib = int(report.read_text("ascii").split()[-1])
    return kib / 1024, wall


def _append(dataset: Path, seed: int) -> None:
    code = (
        "import sys; from odfweb3.odf.builder import append_blocks as a; "
        f"a(sys.argv[1], 1, data_bytes=2000, seed={seed}, fsync=False)"
    )
    subprocess.run([sys.executable, "-c", code, str(dataset)], check=True)


def _env(base: Path, extra: dict[str, str]) -> dict[str, str]:
    """A clean configuration for one target's commands: its own state and keystore."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ODFWEB3_")}
    home = base / "home"
    home.mkdir(parents=True, exist_ok=True)
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(base / "config"),
        ODFWEB3_STATE_DIR=str(base / "state"),
        ODFWEB3_KEYSTORE=str(base / "keys"),
        **extra,
    )
    return env


def _target_rows(
    tmp: Path,
    base: Path,
    n: int,
    tgt: str,
    code: str,
    root: Path | None,
    extra: dict[str, str],
    ref: float,
) -> list[tuple[str, ...]]:
    """One target's commands on a copy of the dataset at ``base``, with the CLI of ``root``
    (None: this checkout): the initial publish, the +1 publish and, for ``car:``,
    ``verify --deep``; a row each."""
    work = linked_copy(base, tmp / f"ds-{n}-{tgt}-{code}")
    env = _env(tmp / f"cfg-{n}-{tgt}-{code}", extra)
    spec = {"car": f"car:{tmp / f'out-{n}-car-{code}'}", "ipfs": "ipfs"}.get(
        tgt, f"bundle:{tmp / f'out-{n}-{tgt}-{code}'}"
    )
    steps: list[tuple[str, list[str]]] = [
        ("initial", ["publish", str(work), "--to", spec, "-q"]),
        ("+1", ["publish", str(work), "--to", spec, "-q"]),
    ]
    if tgt == "car":
        steps.append(("verify --deep", ["verify", "--deep", "--against", spec, str(work)]))
    rows: list[tuple[str, ...]] = []
    for label, cmd in steps:
        if label == "+1":
            _append(work, 1)
        rss, wall = _run(cmd, env, tmp, root)
        goal = GOALS.get((n, label))
        met = f"<= {goal}" + (" met" if rss <= goal else " NOT met") if goal else "-"
        rows.append(
            (f"{n:,}", tgt, code, label, f"{rss:.0f} ({rss / ref:.1f}x ref)", f"{wall:.1f}", met)
        )
        print(f"  {tgt} {code} {label}: {rss:.0f} MB, {wall:.1f} s", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sizes", default="10000", help="AddData blocks, commas")
    ap.add_argument("--full", action="store_true", help="100,000 and 1,000,000 blocks")
    ap.add_argument("--block-bytes", type=int, default=2000, help="data bytes per block")
    ap.add_argument("--targets", default="car,ipfs,bundle", help="car, ipfs and/or bundle")
    ap.add_argument("--cache", type=Path, default=HERE / ".memory-cache", help="dataset cache")
    ap.add_argument("--bundle-max", type=int, default=10_000, help="largest bundle: size")
    ap.add_argument("--scratch", type=Path, help="where copies and outputs go (a temp dir)")
    ap.add_argument(
        "--before-root",
        type=Path,
        help="another checkout (e.g. `git archive` of main): each target's commands run with "
        "its CLI first, then with this one's, in the same run, on copies of the same dataset",
    )
    args = ap.parse_args(argv)
    codes: list[tuple[str, Path | None]] = [("after", None)]
    if args.before_root is not None:
        codes.insert(0, ("before", args.before_root.resolve()))
    sizes = [100_000, 1_000_000] if args.full else [int(s) for s in args.sizes.split(",")]
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    print(machine())
    print(f"load average at start: {os.getloadavg()}")
    rows: list[tuple[str, ...]] = [
        ("blocks", "target", "code", "command", "peak RSS MB", "s", "goal")
    ]
    with (
        tempfile.TemporaryDirectory(prefix="odfweb3-bench-memory-", dir=args.scratch) as name,
        contextlib.ExitStack() as stack,
    ):
        tmp = Path(name)
        extra: dict[str, str] = {}
        if "ipfs" in targets:
            sys.path.insert(0, str(HERE.parent))
            from tests.support.kubo import start_kubo

            node = stack.enter_context(start_kubo(tmp / "kubo"))
            extra["ODFWEB3_IPFS_API"] = node.api_url
        if "bundle" in targets:
            from odfweb3_arweave.wallet import generate_wallet, save_wallet

            wallet = tmp / "wallet.json"
            save_wallet(generate_wallet(), wallet)
            extra["ODFWEB3_ARWEAVE_WALLET"] = str(wallet)
        ref, _ = _run(["--version"], _env(tmp / "ref", extra), tmp)
        print(f"reference: odfweb3 --version peaks at {ref:.0f} MB")
        for n in sizes:
            base, built = ensure_dataset(
                args.cache / str(n), tmp, blocks=n, data_bytes=n * args.block_bytes
            )
            print(f"{n} blocks: " + (f"built in {built:.1f} s" if built else "from cache"))
            for tgt in targets:
                if tgt == "bundle" and n > args.bundle_max:
                    print(f"  bundle: skipped above --bundle-max {args.bundle_max}")
                    continue
                for code, root in codes:
                    rows += _target_rows(tmp, base, n, tgt, code, root, extra, ref)
    print(f"load average at end: {os.getloadavg()}")
    print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
