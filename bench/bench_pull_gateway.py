"""``pull`` from a local Kubo node's gateway (trustless) against ``validate --deep``.

Usage::

    python bench/bench_pull_gateway.py [--blocks 1000] [--rounds 2] [--parallel 8]
                                       [--cache DIR] [--api URL --gateway URL]
                                       [--before-code CHECKOUT] [--streams-only]

Without ``--api`` a Kubo test node is started (tests/support/kubo.py, the node the suite
uses; built by ``make gonodes``). Builds (or reuses from ``--cache``) a root dataset of
``--blocks`` AddData blocks of 2,000 bytes (20,006 objects at 10,000 blocks, the size of
the issue), publishes it offline (``car:DIR``), imports the CARs into the node
(``dag/import``) and puts its IPNS record, then times, in rounds interleaved so background
load weighs on all alike, in this process:

- the reference: ``validate_dataset(DATASET, deep=True)`` (every block and object read
  and hashed, every chain rule checked);
- ``pull_dataset`` from ``ipns://NAME`` through the gateway, as ``odfweb3 pull`` does (the
  record fetched and verified, the chain walked block by block, objects by path, each
  checked against its ODF hash, ``--parallel`` fetches);
- the same with ``trustless``: every block of every object a raw block
  (``?format=raw``) checked against its CID as well;
- "no streams": both again with the replica's folder streams off (``streams = False``: one
  request a block, the chain walked one block after the other, as before the folders
  were streamed as CARs of their DAGs);
- with ``--before-code``, both streamed pulls again, by this checkout and by an older one
  (its ``odfweb3`` and ``adapters``), each in a child process, for before/after figures
  from one run (CPU seconds the child's own).

Prints wall and CPU seconds (best of the rounds) and the ratios pull / validate --deep
(goal: <= 3). ``uptime``'s load is printed before and after: on a shared machine compare
the ratios, not the seconds. Scratch data in a temporary directory (``--scratch``), removed
at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ensure_dataset, machine, print_table

from odfweb3.crypto.keystore import Keystore
from odfweb3.odf.validate import validate_dataset
from odfweb3.publish.execute import publish_dataset
from odfweb3.read.pull import pull_dataset
from odfweb3_ipfs.client.gateway import IpfsGateway
from odfweb3_ipfs.client.kubo import KuboClient
from odfweb3_ipfs.formats.libp2p_keys import IpnsName, public_key_bytes
from odfweb3_ipfs.publish.car_target import CarTarget
from odfweb3_ipfs.read.access import IpfsAccess
from odfweb3_ipfs.read.names import open_ipfs_ref

GOAL = 3.0
# One pull by another checkout's code (PYTHONPATH), timed in the child: wall, CPU.
_CHILD = """
import json, sys, time
from odfweb3.read.pull import pull_dataset
from odfweb3_ipfs.client.gateway import IpfsGateway
from odfweb3_ipfs.read.access import IpfsAccess
from odfweb3_ipfs.read.names import open_ipfs_ref
gw, ref, trustless, dest, parallel = sys.argv[1:6]
start, cpu = time.perf_counter(), time.process_time()
replica, _ = open_ipfs_ref(ref, IpfsAccess(IpfsGateway(gw), trustless=trustless == "1"))
pull_dataset(replica, dest, parallel=int(parallel))
print(json.dumps([time.perf_counter() - start, time.process_time() - cpu]))
"""


def _pull_by(root: Path, gw: str, ref: str, trustless: bool, dest: Path, parallel: int) -> object:
    """A pull by the checkout ``root`` in a child process, as a step's function."""
    env = dict(os.environ, PYTHONPATH=f"{root}{os.pathsep}{root / 'adapters'}")
    argv = [sys.executable, "-c", _CHILD, gw, ref, str(int(trustless)), str(dest), str(parallel)]

    def pull() -> tuple[float, float]:
        got = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        if got.returncode != 0:
            raise SystemExit(f"before: pull failed: {got.stderr.strip()[-800:]}")
        shutil.rmtree(dest)
        wall, cpu = json.loads(got.stdout.strip().splitlines()[-1])
        return float(wall), float(cpu)

    return pull


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


@contextlib.contextmanager
def _node(args: argparse.Namespace, tmp: Path) -> Iterator[tuple[str, str]]:
    if args.api:
        yield args.api, args.gateway
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.support.kubo import start_kubo

    with start_kubo(tmp / "kubo") as n:
        yield n.api_url, n.gateway_url


def _publish(api: str, ds: Path, tmp: Path) -> str:
    """Publish ``ds`` offline, import it into the node, put its record: its ``ipns://``."""
    keystore = Keystore(tmp / "keys")
    car_dir = tmp / "car"
    done = publish_dataset(ds, CarTarget(car_dir, keystore))
    client = KuboClient(api, timeout=3600)
    for car in sorted(car_dir.glob("*.car")):
        client.dag_import(car)
    name = IpnsName.from_public_key(public_key_bytes(keystore.load(done.plan.dataset_id)))
    assert done.state is not None
    client.record_put(name, (car_dir / str(done.state.record["file"])).read_bytes())
    return f"ipns://{name}"


def _timed(fn: object) -> tuple[float, float]:
    start, cpu = time.perf_counter(), time.process_time()
    got = fn()  # type: ignore[operator]
    if isinstance(got, tuple):
        return got  # timed by the child that ran it
    return time.perf_counter() - start, time.process_time() - cpu


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--api", help="node RPC API (default: start a Kubo test node)")
    ap.add_argument("--gateway", help="the node's gateway (with --api)")
    ap.add_argument("--blocks", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--parallel", type=int, default=8)
    ap.add_argument("--cache", type=Path, help="keep the dataset here for the next run")
    ap.add_argument("--scratch", type=Path, help="where the CARs and pulls go (default: tmp)")
    ap.add_argument("--before-code", type=Path, help="an older checkout to time as well")
    ap.add_argument(
        "--streams-only", action="store_true", help="skip the pulls with the folder streams off"
    )
    args = ap.parse_args(argv)
    if args.api and not args.gateway:
        ap.error("--api needs --gateway")
    print(machine())
    print(f"load before: {_load()}")
    tmp = Path(tempfile.mkdtemp(prefix="odfb-pullgw-", dir=args.scratch))
    try:
        with _node(args, tmp) as (api, gw):
            ds, _ = ensure_dataset(
                args.cache, tmp, blocks=args.blocks, data_bytes=args.blocks * 2000
            )
            ref = _publish(api, ds, tmp)
            best: dict[str, tuple[float, float]] = {}
            for r in range(args.rounds):
                steps: list[tuple[str, object]] = [
                    ("validate --deep", lambda: validate_dataset(ds, deep=True))
                ]
                modes = [(False, True), (True, True)]
                if not args.streams_only:
                    modes += [(False, False), (True, False)]
                for trustless, streamed in modes:

                    def pull(trustless: bool = trustless, streamed: bool = streamed,
                             r: int = r) -> None:  # fmt: skip
                        access = IpfsAccess(IpfsGateway(gw), trustless=trustless)
                        replica, _ = open_ipfs_ref(ref, access)  # as `odfweb3 pull` does
                        replica.streams = streamed
                        dest = tmp / f"dest-{int(trustless)}-{int(streamed)}-{r}"
                        pull_dataset(replica, dest, parallel=args.parallel)
                        shutil.rmtree(dest)

                    label = "pull, trustless" if trustless else "pull, by path"
                    steps.append((label if streamed else f"no streams: {label}", pull))
                if args.before_code is not None:
                    # both codes in a child process each (the in-process pulls above share
                    # this process with the benchmark's own garbage and threads)
                    codes = {"this code": Path(__file__).resolve().parent.parent,
                             "before code": args.before_code.resolve()}  # fmt: skip
                    for code, root in codes.items():
                        for trustless in (False, True):
                            label = "pull, trustless" if trustless else "pull, by path"
                            dest = tmp / f"dest-{code[:4]}-{int(trustless)}-{r}"
                            pull_fn = _pull_by(root, gw, ref, trustless, dest, args.parallel)
                            steps.append((f"{code}: {label}", pull_fn))
                for label, fn in steps:
                    wall, cpu = _timed(fn)
                    print(f"round {r + 1}: {label}: {wall:.2f} s wall, {cpu:.2f} s CPU")
                    prev = best.get(label)
                    best[label] = (
                        (wall, cpu) if prev is None else (min(prev[0], wall), min(prev[1], cpu))
                    )
        ref_wall, ref_cpu = best["validate --deep"]
        rows = [("measurement", "wall s", "CPU s", "wall / validate", "CPU / validate")]
        for label, (wall, cpu) in best.items():
            rows.append(
                (
                    label,
                    f"{wall:.2f}",
                    f"{cpu:.2f}",
                    f"{wall / ref_wall:.2f}",
                    f"{cpu / ref_cpu:.2f}",
                )
            )
        print(
            f"\n{args.blocks} blocks ({2 * args.blocks + 6} objects), Kubo gateway "
            f"{args.parallel} fetches, best of {args.rounds}"
        )
        print_table(rows)
        print(f"goal: pull / validate --deep <= {GOAL} (wall)")
        print(f"load after: {_load()}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
