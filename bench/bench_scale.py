"""Publish time, memory and bytes against dataset size: initial and +1 block (issue 19).

Usage::

    python bench/bench_scale.py [--sizes 1000,10000,30000,100000] [--block-bytes 2000]
                                [--targets car,bundle,ipfs] [--cache bench/.scale-cache]
                                [--svg bench/scale.svg]

For each size N, a root dataset of N AddData blocks with ``--block-bytes`` bytes of data
each is built once (``create_root_dataset(..., fsync=False)``) and kept in
``--cache/N`` (ignored by git; delete it to rebuild). Then, per target (``car:DIR``,
``bundle:DIR``, and ``ipfs``: a live Kubo v0.43.1 this run starts for itself, offline from
any network, as bench_publish_ipfs.py does: tests/support/kubo.py, ``make gonodes``; its
publish state in a directory of the run), on a hard-linked copy (odfweb3 writes by rename:
the cache is never changed), each step in its own child process so its peak RSS is its own:

1. the initial publish (``publish_dataset`` in-process, interpreter start not counted);
2. ``append_blocks(copy, 1)`` (untimed, in a process of its own) and the +1-block publish;
   ``--repeat K`` does it K times (each round its own new block) and reports the best round;
3. a publish with nothing new (no block appended; as many rounds), printed against the +1
   (``same / +1``; goal <= 1: nothing new costs least).

Printed per size and target: wall seconds, peak RSS (the child step's own ``VmHWM``) and bytes
written (the CAR or the bundle), and the ratio t(largest) / t(smallest) of the +1-block
publish (issue 19 goal 1: <= 2 from 1,000 to 100,000 blocks). The reference is the
smallest size measured in the same run. ``--svg`` draws the +1-block time and bytes
against N (log-log, hand-written SVG, no plotting dependency). No timing assertions.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ensure_dataset, linked_copy, machine, own_peak_rss, print_table

HERE = Path(__file__).resolve().parent
KUBO_API_ENV = "ODFWEB3_BENCH_KUBO_API"  # the parent's Kubo, for the ipfs steps


def _step(target: str, ds: Path, out: Path, keys: Path, append: int) -> dict[str, float]:
    """One publish in this (child) process; what it took and wrote."""
    from odfweb3.crypto.keystore import Keystore
    from odfweb3.publish.execute import publish_dataset

    if append:  # round k appends a block of its own data (seed k)
        # in its own process: the example builder's memory (130 MB at 100,000 blocks) is not
        # the publish's, and the step reports its own peak
        code = (
            "import sys; from odfweb3.odf.builder import append_blocks as a; "
            f"a(sys.argv[1], 1, data_bytes=2000, seed={append}, fsync=False)"
        )
        subprocess.run([sys.executable, "-c", code, str(ds)], check=True)
    # As the CLI does: the private state's seal of the output directory and, for car:, the
    # IPNS replay memory (older code has neither: the parameter is absent).
    private = out.with_name(out.name + "-state")
    if target == "car":
        from odfweb3_ipfs.publish.car_target import CarTarget

        tgt: object = CarTarget(out, Keystore(keys), **_private(CarTarget, private, f"car:{out}"))
    elif target == "ipfs":
        # The node the parent started; state and key under `out`: each code version (and
        # each size) publishes under its own IPNS name, from its own initial publish.
        from odfweb3.publish.state import StateStore
        from odfweb3_ipfs.client.kubo import KuboClient
        from odfweb3_ipfs.publish.node_target import IpfsNodeTarget

        out.mkdir(exist_ok=True)
        client = KuboClient(os.environ[KUBO_API_ENV], timeout=3600)
        tgt = IpfsNodeTarget(client, Keystore(out / "keys"), StateStore(out / "state"), tmp_dir=out)
    else:
        from odfweb3_arweave.publish.bundle_target import BundleTarget
        from odfweb3_arweave.wallet import load_wallet

        tgt = BundleTarget(
            out,
            load_wallet(keys / "wallet.json"),
            **_private(BundleTarget, private, f"bundle:{out}"),
        )
    kwargs: dict[str, object] = {}
    if "chain_cache" in inspect.signature(publish_dataset).parameters:
        # As the CLI does: heads verified by the initial publish (older code: no cache).
        from odfweb3.publish.chain_cache import ChainCache

        kwargs["chain_cache"] = ChainCache(out.with_name(out.name + "-verified"))
    start = time.perf_counter()
    outcome = publish_dataset(ds, tgt, **kwargs)  # type: ignore[arg-type]
    elapsed = time.perf_counter() - start
    assert outcome.upload is not None
    return {"seconds": elapsed, "bytes": float(outcome.upload.bytes_sent)}


def _private(cls: type, state_dir: Path, target: str) -> dict[str, object]:
    """The private-state keywords ``cls`` takes (the seal, the IPNS replay memory)."""
    params = inspect.signature(cls).parameters
    kwargs: dict[str, object] = {}
    if "seal" in params:
        from odfweb3.publish.outdir_seal import OutDirSeal

        kwargs["seal"] = OutDirSeal(state_dir, target)
    if "seen" in params:
        from odfweb3_ipfs.read.replay_memory import SEEN_FILE, SequenceMemory

        kwargs["seen"] = SequenceMemory(state_dir / SEEN_FILE)
    return kwargs


def _child(argv: list[str], pythonpath: str | None = None) -> tuple[dict[str, float], int]:
    """Run ``--step`` in a child (with ``PYTHONPATH`` when given); its result and peak RSS."""
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--step", *argv],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    text = proc.stdout.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"step {argv} failed with status {proc.returncode}")
    result = json.loads(text.strip().splitlines()[-1])
    # the step's own peak; wait4's also counts this process's image (see own_peak_rss)
    return result, int(result.pop("ownPeakRss", 0)) or usage.ru_maxrss * 1024


def _svg(
    rows: list[dict[str, float | str]],
    path: Path,
    title: str,
    before: list[dict[str, float | str]] | None = None,
) -> None:
    """A log-log plot of +1-block seconds (left) and bytes written (right) against blocks;
    ``before`` (an earlier run's rows) is drawn dashed, labelled "before"."""
    before = [{**r, "target": f"{r['target']} before"} for r in before or []]
    rows = [*rows, *before]
    w, h, pad = 760, 360, 60
    colors = {
        "car": "#1f77b4",
        "bundle": "#d62728",
        "ipfs": "#2ca02c",
        "car before": "#1f77b4",
        "bundle before": "#d62728",
        "ipfs before": "#2ca02c",
    }
    panels = [("seconds", "+1 block: seconds"), ("bytes", "+1 block: bytes written")]
    xs = sorted({float(r["blocks"]) for r in rows})
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="11">',
        f'<rect width="{w}" height="{h}" fill="white"/>',
        f'<text x="{w / 2}" y="18" text-anchor="middle" font-size="13">{title}</text>',
    ]
    pw = (w - 3 * pad) / 2
    ph = h - 2 * pad
    for k, (key, label) in enumerate(panels):
        x0 = pad + k * (pw + pad)
        ys = [float(r[key]) for r in rows if float(r[key]) > 0]
        if not ys or not xs:
            continue
        lx0, lx1 = math.log10(xs[0]), math.log10(xs[-1]) or 1.0
        ly0, ly1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
        ly1 = ly1 if ly1 > ly0 else ly0 + 1

        def px(x: float, x0: float = x0, lx0: float = lx0, lx1: float = lx1) -> float:
            span = (lx1 - lx0) or 1.0
            return x0 + (math.log10(x) - lx0) / span * pw

        def py(y: float, ly0: float = ly0, ly1: float = ly1) -> float:
            return pad + ph - (math.log10(y) - ly0) / (ly1 - ly0) * ph

        parts.append(
            f'<rect x="{x0}" y="{pad}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>'
        )
        parts.append(f'<text x="{x0 + pw / 2}" y="{pad - 8}" text-anchor="middle">{label}</text>')
        for d in range(int(ly0), int(ly1) + 1):
            y = py(10.0**d)
            parts.append(f'<line x1="{x0}" x2="{x0 + pw}" y1="{y}" y2="{y}" stroke="#eee"/>')
            parts.append(f'<text x="{x0 - 4}" y="{y + 4}" text-anchor="end">1e{d}</text>')
        for x in xs:
            parts.append(
                f'<text x="{px(x)}" y="{pad + ph + 14}" text-anchor="middle">{int(x):,}</text>'
            )
        parts.append(
            f'<text x="{x0 + pw / 2}" y="{pad + ph + 30}" text-anchor="middle">blocks</text>'
        )
        for tgt, color in colors.items():
            pts = [
                (px(float(r["blocks"])), py(float(r[key])))
                for r in rows
                if r["target"] == tgt and float(r[key]) > 0
            ]
            if not pts:
                continue
            line = " ".join(f"{a:.1f},{b:.1f}" for a, b in pts)
            dash = ' stroke-dasharray="5,4"' if tgt.endswith("before") else ""
            parts.append(f'<polyline points="{line}" fill="none" stroke="{color}"{dash}/>')
            parts.extend(
                f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3" fill="{color}"/>' for a, b in pts
            )
        shown = [t for t in colors if any(r["target"] == t for r in rows)]
        for i, tgt in enumerate(shown):
            ty = pad + 14 + 14 * i
            dash = " (dashed)" if tgt.endswith("before") else ""
            parts.append(f'<text x="{x0 + 8}" y="{ty}" fill="{colors[tgt]}">{tgt}{dash}</text>')
    parts.append("</svg>")
    path.write_text("\n".join(parts) + "\n", "utf-8")


def _rows_of(output: Path) -> list[dict[str, float | str]]:
    """The rows a run printed (its ``json:`` line)."""
    for line in output.read_text("utf-8").splitlines():
        if line.startswith("json: "):
            rows: list[dict[str, float | str]] = json.loads(line[6:])
            return rows
    raise SystemExit(f"{output}: no json: line (the output of a bench_scale.py run?)")


def _title(output: Path) -> str:
    first = output.read_text("utf-8").splitlines()[0].removeprefix("machine: ")
    return f"odfweb3 publish, +1 block vs dataset size ({first[:16]})"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table; exit status 0 (no timing assertions)."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,30000,100000", help="AddData blocks, commas")
    ap.add_argument("--block-bytes", type=int, default=2000, help="data bytes per block")
    ap.add_argument("--targets", default="car,bundle", help="car, bundle and/or ipfs")
    ap.add_argument("--cache", type=Path, default=HERE / ".scale-cache", help="dataset cache")
    ap.add_argument("--svg", type=Path, help="write the plot here")
    ap.add_argument(
        "--bundle-max",
        type=int,
        default=10_000,
        help="measure bundle: up to this many blocks (its initial publish RSA-signs two data "
        "items per object: ~150 s at 10,000 blocks on 2 cores)",
    )
    ap.add_argument(
        "--before-code",
        help="PYTHONPATH of another checkout (e.g. DIR:DIR/adapters of `git archive`): each "
        "step also runs on it, interleaved with this one, as target 'car before'",
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="+1-block publishes per size and target (each appends its own block, in its own "
        "process); the best is reported, every round printed (for a busy machine)",
    )
    ap.add_argument("--plot", type=Path, help="only draw --svg from this run's json: line")
    ap.add_argument("--before", type=Path, help="an earlier run's output: drawn dashed")
    ap.add_argument("--step", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.step:
        target, ds, out, keys, append = args.step
        result = _step(target, Path(ds), Path(out), Path(keys), int(append))
        print(json.dumps({**result, "ownPeakRss": own_peak_rss()}))
        return 0

    before = _rows_of(args.before) if args.before else None
    if args.plot:
        if not args.svg:
            ap.error("--plot needs --svg")
        _svg(_rows_of(args.plot), args.svg, _title(args.plot), before)
        print(f"plot: {args.svg}")
        return 0

    sizes = [int(s) for s in args.sizes.split(",") if s]
    targets = [t for t in args.targets.split(",") if t]
    print(f"machine: {machine()}")
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    rows: list[dict[str, float | str]] = []
    table: list[tuple[str, ...]] = [
        ("blocks", "target", "initial s", "initial RSS MB", "initial bytes",
         "+1 s", "+1 RSS MB", "+1 bytes", "same s", "same / +1"),
    ]  # fmt: skip
    with (
        tempfile.TemporaryDirectory(prefix="odfweb3-bench-scale-") as tmp_name,
        contextlib.ExitStack() as stack,
    ):
        tmp = Path(tmp_name)
        keys = tmp / "keys"
        keys.mkdir(mode=0o700)
        if "ipfs" in targets:
            sys.path.insert(0, str(HERE.parent))
            from tests.support.kubo import start_kubo

            node = stack.enter_context(start_kubo(tmp / "kubo"))
            os.environ[KUBO_API_ENV] = node.api_url  # inherited by the steps
            print(f"ipfs: Kubo at {node.api_url} ({tmp / 'kubo'})")
        if "bundle" in targets:
            from odfweb3_arweave.wallet import generate_wallet, save_wallet

            save_wallet(generate_wallet(), keys / "wallet.json")
        for n in sizes:
            base, built = ensure_dataset(
                args.cache / str(n), tmp, blocks=n, data_bytes=n * args.block_bytes
            )
            print(f"{n} blocks: " + (f"built in {built:.1f} s" if built else "from cache"))
            variants: list[tuple[str, str | None]] = [("", None)]
            if args.before_code:
                variants.insert(0, (" before", args.before_code))
            for tgt, (suffix, code) in [(t, v) for t in targets for v in variants]:
                if tgt == "bundle" and n > args.bundle_max:
                    print(f"  bundle: skipped above --bundle-max {args.bundle_max}")
                    continue
                work = linked_copy(base, tmp / f"ds-{n}-{tgt}")
                out = tmp / f"out-{n}-{tgt}"
                first, rss1 = _child([tgt, str(work), str(out), str(keys), "0"], code)
                rounds = [
                    _child([tgt, str(work), str(out), str(keys), str(k + 1)], code)
                    for k in range(max(1, args.repeat))
                ]
                plus, rss2 = min(rounds, key=lambda r: r[0]["seconds"])
                # Nothing new (no block appended), as many rounds: the goal is <= a +1.
                same = min(
                    (
                        _child([tgt, str(work), str(out), str(keys), "0"], code)[0]
                        for _ in range(max(1, args.repeat))
                    ),
                    key=lambda r: r["seconds"],
                )
                tgt = tgt + suffix
                row: dict[str, float | str] = {
                    "blocks": n,
                    "target": tgt,
                    "initialSeconds": first["seconds"],
                    "initialRss": rss1,
                    "initialBytes": first["bytes"],
                    "seconds": plus["seconds"],
                    "rss": rss2,
                    "bytes": plus["bytes"],
                    "sameSeconds": same["seconds"],
                }
                rows.append(row)
                table.append(
                    (f"{n:,}", tgt, f"{first['seconds']:.2f}", f"{rss1 / 1e6:.0f}",
                     f"{int(first['bytes']):,}", f"{plus['seconds']:.3f}",
                     f"{rss2 / 1e6:.0f}", f"{int(plus['bytes']):,}",
                     f"{same['seconds']:.3f}", f"{same['seconds'] / plus['seconds']:.2f}")
                )  # fmt: skip
                each = ", ".join(f"{r[0]['seconds']:.3f}" for r in rounds)
                print(
                    f"  {tgt}: initial {first['seconds']:.2f} s, "
                    f"+1 {plus['seconds']:.3f} s (rounds: {each})"
                )
                shutil.rmtree(work)
                shutil.rmtree(out)
                # The step's verified-chain cache too: the next version's run starts from
                # its own initial publish, not from this one's cached heads.
                shutil.rmtree(out.with_name(out.name + "-verified"), ignore_errors=True)
    print_table(table)
    labels = [t + sfx for t in targets for sfx in ([" before", ""] if args.before_code else [""])]
    for tgt in labels:
        mine = [r for r in rows if r["target"] == tgt]
        if len(mine) >= 2:
            lo, hi = mine[0], mine[-1]
            ratio = float(hi["seconds"]) / float(lo["seconds"])
            print(
                f"{tgt}: +1 block t({int(hi['blocks']):,}) / t({int(lo['blocks']):,}) = "
                f"{ratio:.2f} (goal <= 2: {'met' if ratio <= 2 else 'not met'})"
            )
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("json: " + json.dumps(rows))
    if args.svg:
        title = f"odfweb3 publish, +1 block vs dataset size ({machine()[:16]})"
        _svg(rows, args.svg, title, before)
        print(f"plot: {args.svg}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
