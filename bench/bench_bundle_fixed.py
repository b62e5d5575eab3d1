"""Peak RSS of an initial ``bundle:`` publish, two checkouts in one run, outputs compared.

Usage::

    python bench/bench_bundle_fixed.py [--sizes 5000,20000] [--cache bench/.bundle-cache]
                                       [--before-root DIR] [--after-root DIR]

Per size N (``create_root_dataset(blocks=N, data_bytes=2000*N)``, built once into
``--cache/N``) and checkout (``--before-root``'s first, then ``--after-root``'s or this
one), on a hard-linked copy of the dataset with a fresh state directory: ``odfweb3 publish
DS --to bundle:OUT -q`` under ``/usr/bin/time -f %M``, run through ``bench/bundle_fixed.py``
(PSS salt of length 0, seeded UUIDs, a fixed clock; one wallet for the whole run), so the
bundle and the file index packs of both checkouts can be compared: printed are the peak RSS
(MB = 1,048,576 bytes), wall seconds, and whether every ``*.bundle`` and ``index-*.pack``
is byte-identical (SHA-256) to the first checkout's. The slope between two sizes is the
memory a block costs. No assertions.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ensure_dataset, linked_copy, machine, print_table

HERE = Path(__file__).resolve().parent
WRAPPER = HERE / "bundle_fixed.py"


def _digests(out: Path) -> dict[str, str]:
    """SHA-256 of every bundle and index pack in ``out`` (names differ only by content)."""
    got = {}
    for path in sorted([*out.glob("*.bundle"), *out.glob("index-*.pack")]):
        digest = hashlib.sha256()
        with path.open("rb") as f:
            while block := f.read(1 << 20):
                digest.update(block)
        got[path.name] = digest.hexdigest()
    return got


def _publish(
    base: Path, tmp: Path, tag: str, root: Path | None, wallet: Path
) -> tuple[float, float, dict[str, str]]:
    work = linked_copy(base, tmp / f"ds-{tag}")
    out = tmp / f"out-{tag}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ODFWEB3_")}
    env.update(
        HOME=str(tmp / f"home-{tag}"),
        XDG_CONFIG_HOME=str(tmp / f"config-{tag}"),
        ODFWEB3_STATE_DIR=str(tmp / f"state-{tag}"),
        ODFWEB3_KEYSTORE=str(tmp / f"keys-{tag}"),
        ODFWEB3_ARWEAVE_WALLET=str(wallet),
    )
    if root is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(root), str(root / "adapters")])
    report = tmp / "time.txt"
    args = ["publish", str(work), "--to", f"bundle:{out}", "-q"]
    start = time.perf_counter()
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "%M", "-o", str(report), sys.executable, str(WRAPPER), *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"publish ({tag}) failed ({proc.returncode}): {proc.stderr}")
    kib = int(report.read_text("ascii").split()[-1])
    return kib / 1024, wall, _digests(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sizes", default="5000,20000", help="AddData blocks, commas")
    ap.add_argument(
        "--cache", type=Path, default=HERE / ".bundle-cache", help="dataset cache (yours alone)"
    )
    ap.add_argument("--before-root", type=Path, help="another checkout (`git archive`)")
    ap.add_argument(
        "--after-root", type=Path, help="the checkout measured second (default: this one's)"
    )
    ap.add_argument("--scratch", type=Path, help="where copies and outputs go")
    args = ap.parse_args(argv)
    after = args.after_root.resolve() if args.after_root is not None else None
    codes: list[tuple[str, Path | None]] = [("after", after)]
    if args.before_root is not None:
        codes.insert(0, ("before", args.before_root.resolve()))
    print(machine())
    rows: list[tuple[str, ...]] = [("blocks", "code", "peak RSS MB", "s", "load", "same bytes")]
    with tempfile.TemporaryDirectory(prefix="odfweb3-bench-bundle-", dir=args.scratch) as name:
        tmp = Path(name)
        from odfweb3_arweave.wallet import generate_wallet, save_wallet

        wallet = tmp / "wallet.json"
        save_wallet(generate_wallet(), wallet)
        for n in (int(s) for s in args.sizes.split(",")):
            base, built = ensure_dataset(args.cache / str(n), tmp, blocks=n, data_bytes=2000 * n)
            print(f"{n} blocks: " + (f"built in {built:.1f} s" if built else "from cache"))
            first: dict[str, str] | None = None
            for code, root in codes:
                rss, wall, digests = _publish(base, tmp, f"{n}-{code}", root, wallet)
                same = "-" if first is None else ("yes" if digests == first else "NO")
                first = first if first is not None else digests
                load = f"{os.getloadavg()[0]:.1f}"
                print(
                    f"  {code}: {rss:.0f} MB, {wall:.0f} s, load {load}, {len(digests)} files,"
                    f" same bytes: {same}",
                    flush=True,
                )
                for file, digest in digests.items():  # to compare with other runs
                    print(f"    sha256 {digest} {file}", flush=True)
                rows.append((f"{n:,}", code, f"{rss:.1f}", f"{wall:.0f}", load, same))
    print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
