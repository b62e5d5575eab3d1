"""What the encryption policy's look-up costs a plain publish (``car:DIR``), in one run.

Usage::

    python bench/bench_encryption_lookup.py [--blocks 2000] [--repeat 3]

On a machine where some dataset is encrypted (a content key in the keystore), ``publish``
finds the dataset ID of every dataset it publishes before opening the target (to look up
the dataset's local settings: docs/security.md, "Encryption is the dataset's"); on a
machine with nothing encrypted it does not. This times the CLI's first plain publish of
one N-block dataset to a fresh ``car:`` directory both ways, interleaved, each with a fresh
state directory (so no verified-chain cache helps): the reference is the publish on the
machine with nothing encrypted. Prints each run, the best-of ratio with / without, and the
look-up alone (``dataset_id_of`` walking the chain to its Seed) against the publish.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine

from odfweb3.cli.main import main
from odfweb3.cli.status_cmds import dataset_id_of
from odfweb3.crypto.keyfiles import ContentKeyStore
from odfweb3.odf.builder import create_root_dataset

OTHER = "did:odf:fed01" + "ab" * 34  # some other, encrypted dataset of this machine


def _publish(root: Path, ds: Path, encrypted_here: bool, i: int) -> float:
    home = root / f"home-{encrypted_here}-{i}"
    env = {
        "HOME": str(home),
        "ODFWEB3_KEYSTORE": str(home / "keys"),
        "ODFWEB3_STATE_DIR": str(home / "state"),
    }
    if encrypted_here:
        ContentKeyStore(home / "keys").load_or_create(OTHER)
    out = root / f"out-{encrypted_here}-{i}"
    started = time.perf_counter()
    code = main(["-q", "publish", str(ds), "--to", f"car:{out}"], env=env)
    took = time.perf_counter() - started
    assert code == 0
    shutil.rmtree(home)
    shutil.rmtree(out)
    return took


def main_(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    print(machine())
    with tempfile.TemporaryDirectory(prefix="odfweb3-bench-lookup-") as tmp:
        root = Path(tmp)
        ds = root / "ds"
        create_root_dataset(ds, blocks=args.blocks, data_bytes=200 * args.blocks, fsync=False)
        runs: dict[bool, list[float]] = {False: [], True: []}
        lookups: list[float] = []
        for i in range(args.repeat):
            for encrypted_here in (False, True):
                runs[encrypted_here].append(_publish(root, ds, encrypted_here, i))
            started = time.perf_counter()
            dataset_id_of(str(ds))  # the look-up alone, no cache (as on a first publish)
            lookups.append(time.perf_counter() - started)
    print(f"{args.blocks} blocks, first plain publish to car: (s)")
    print("  nothing encrypted here:", " ".join(f"{t:.2f}" for t in runs[False]))
    print("  a dataset encrypted here:", " ".join(f"{t:.2f}" for t in runs[True]))
    print(f"  best-of ratio with / without: {min(runs[True]) / min(runs[False]):.3f}")
    print("  the dataset ID look-up alone:", " ".join(f"{t:.2f}" for t in lookups))
    print(f"  look-up / publish without, best of each: {min(lookups) / min(runs[False]):.3f}")


if __name__ == "__main__":
    main_()
