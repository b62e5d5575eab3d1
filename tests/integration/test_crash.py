"""kill -9 the publisher at random points, then run it again (both networks, and car:DIR).

The publisher is the real CLI in a subprocess (``python -m odfweb3.cli.main publish``) with
its keystore and state directory in tmp and the node reached through the fault proxy at
rate 0 (a plain forwarder whose byte counters say what each run really sent). Each trial
appends a block, starts a publish, SIGKILLs it after a seeded random delay spread over a
whole publish, then checks:

- the name was never ahead of what is stored: right after the kill, the name's head is one
  we published and its whole content is on the node (IPFS: the root we compute for that
  head is the name's value, pinned, every file readable; Arweave: the latest record's
  manifest pulls and verifies completely);
- the re-run (not killed) exits 0, the name and the state then hold the new head;
- the re-run sends only what is missing: never more than one delta, and nothing at all
  for the objects when the killed run had already stored them (its checkpoint says so).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from odfweb3.crypto.keystore import Keystore
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.execute import load_verified_chain
from odfweb3.publish.state import StateStore
from odfweb3.read.pull import pull_dataset
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.read.lookup import find_latest_upload
from odfweb3_arweave.read.replica import open_ar_replica
from odfweb3_arweave.wallet import generate_wallet, save_wallet
from odfweb3_ipfs.client.kubo import KuboClient
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.formats.libp2p_keys import IpnsName, public_key_bytes
from odfweb3_ipfs.publish.node_target import _head_of, read_node_record
from odfweb3_ipfs.publish.unixfs_import import import_tree
from tests.support.fault_proxy import fault_proxy

TRIALS = 10  # per network: at least this many runs, at least half of them killed mid-way
# A loaded machine stretches the run being killed unevenly, so a kill may land after the end;
# further runs (up to MAX_TRIALS) are made until half of TRIALS were really killed mid-way.
MAX_TRIALS = 3 * TRIALS
REPO = Path(__file__).resolve().parents[2]


def run_cli(args: list[str], env: dict[str, str], kill_after: float | None) -> tuple[int, str, str]:
    """Run the CLI; SIGKILL it after ``kill_after`` seconds (None: let it finish)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "odfweb3.cli.main", *args],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    if kill_after is not None:
        try:
            proc.wait(kill_after)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out, err


def base_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ODFWEB3_")}
    env.update(
        HOME=str(tmp / "home"),
        ODFWEB3_KEYSTORE=str(tmp / "keys"),
        ODFWEB3_STATE_DIR=str(tmp / "state"),
        # a publisher killed mid-upload leaves its temp delta CAR: keep it in the test dir
        TMPDIR=str(tmp),
    )
    return env


def dataset_files(ds: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(ds)): p.read_bytes()
        for p in sorted(ds.rglob("*"))
        if p.is_file() and p.relative_to(ds).parts[0] in ("blocks", "refs", "data", "checkpoints")
    }


def test_kill_ipfs_publisher_at_random_points(tmp_path: Path, ipfs_node) -> None:
    rng = random.Random(20240610)
    ds = create_root_dataset(tmp_path / "ds", blocks=3, data_bytes=2_000_000, seed=31).path
    did = str(load_verified_chain(DatasetReader.open(ds))[1])
    direct = KuboClient(ipfs_node.api_url)
    roots: dict[str, bytes] = {}
    files: dict[str, dict[str, bytes]] = {}

    def snapshot() -> str:
        head = multihash_to_str(DatasetReader.open(ds).head())
        roots[head] = import_tree(ds).cid.raw
        files[head] = dataset_files(ds)
        return head

    def name_head() -> str | None:
        keys = Keystore(tmp_path / "keys")
        if not keys.has(did):
            return None
        seen = read_node_record(direct, IpnsName.from_public_key(public_key_bytes(keys.load(did))))
        if seen is None:
            return None
        assert seen.root is not None and seen.record.odf is not None
        head = seen.record.odf.head
        assert roots[head] == seen.root.raw, "the name points at content we did not publish"
        assert direct.has_pin(seen.root), "the name points at a root that is not complete"
        assert multihash_to_str(_head_of(direct, seen, seen.root)) == head
        for path, data in files[head].items():
            got = direct.cat(f"/ipfs/{seen.root}/{path}", max_size=len(data) + 1)
            assert got == data, path
        return head

    with fault_proxy(ipfs_node.api_url, rate=0.0) as proxy:
        env = base_env(tmp_path)
        env["ODFWEB3_IPFS_API"] = proxy.url
        env["ODFWEB3_IPFS_GATEWAY"] = ipfs_node.gateway_url
        states = StateStore(tmp_path / "state")
        target_name = f"ipfs:{proxy.url}"
        args = ["publish", str(ds), "--to", "ipfs", "--json"]

        head = snapshot()
        started = time.monotonic()
        code, text, err = run_cli(args, env, None)
        duration = time.monotonic() - started
        assert code == 0, err
        assert name_head() == head
        killed = 0
        for trial in range(MAX_TRIALS):
            append_blocks(ds, 1, data_bytes=1_500_000, seed=500 + trial)
            head = snapshot()
            delay = rng.uniform(0.05, duration * 1.2)
            code, text, err = run_cli(args, env, delay)
            killed_code = code
            killed += code == -signal.SIGKILL
            assert code in (0, -signal.SIGKILL), err
            seen = name_head()  # checked right after the kill: never ahead of the stored DAG
            assert seen in (head, list(files)[-2])
            saved = states.load(did, target_name)
            pending = (saved.extra.get("pending") or {}) if saved else {}
            stored_before = pending.get("head") == head and direct.has_pin(
                Cid.decode(pending["root"])
            )
            up = proxy.stats.up_by_path["/api/v0/dag/import"]
            code, text, err = run_cli(args, env, None)
            assert code == 0, err
            resent = proxy.stats.up_by_path["/api/v0/dag/import"] - up
            out = json.loads(text)
            delta = out["plan"]["sendBytes"]
            assert resent <= delta + 200_000, (resent, delta)  # one delta CAR at most
            if stored_before or seen == head:
                # Nothing of the delta again: at most a CAR header and directory nodes.
                assert resent < 2048, (resent, killed_code, out["plan"], err[-400:])
            assert name_head() == head
            final = states.load(did, target_name)
            assert final is not None and final.head is not None
            assert multihash_to_str(final.head) == head
            if trial + 1 >= TRIALS and killed >= TRIALS // 2:
                break
        assert killed >= TRIALS // 2, f"only {killed} of {trial + 1} runs were killed mid-way"


def test_kill_arweave_publisher_at_random_points(tmp_path: Path, arlocal) -> None:
    rng = random.Random(20240611)
    wallet = generate_wallet()
    arlocal.mint(wallet.address, 10**15)
    wallet_file = tmp_path / "wallet.json"
    save_wallet(wallet, wallet_file)
    # Bundles stay under one chunk (posted inline): arlocal keeps duplicate chunks, which
    # would break a resumed chunked upload there (docs/arweave.md); a real node does not.
    ds = create_root_dataset(tmp_path / "ds", blocks=3, data_bytes=60_000, seed=41).path
    did = str(load_verified_chain(DatasetReader.open(ds))[1])
    direct = ArweaveGateway(arlocal.url)
    files: dict[str, dict[str, bytes]] = {}

    def snapshot() -> str:
        head = multihash_to_str(DatasetReader.open(ds).head())
        files[head] = dataset_files(ds)
        return head

    def name_head(tag: str) -> str | None:
        latest = find_latest_upload(direct, wallet.address, did)
        if latest is None:
            return None
        head = latest.facts.head
        probe = tmp_path / f"probe-{tag}"
        pull_dataset(open_ar_replica(direct, f"ar://{latest.id}"), probe)
        assert dataset_files(probe) == files[head], "the record is ahead of its content"
        shutil.rmtree(probe)
        return head

    def wait_for_head(head: str, tag: str) -> str | None:
        """arlocal indexes a bundle's items a moment after taking it: poll a little."""
        seen = None
        for _ in range(50):
            seen = name_head(tag)
            if seen == head:
                break
            time.sleep(0.1)
        return seen

    with fault_proxy(arlocal.url, rate=0.0) as proxy:
        env = base_env(tmp_path)
        env["ODFWEB3_ARWEAVE_GATEWAY"] = proxy.url
        args = ["publish", str(ds), "--to", "arweave", "--wallet", str(wallet_file), "--json"]
        states = StateStore(tmp_path / "state")
        target_name = f"arweave:{proxy.url}"

        def posted() -> int:
            return proxy.stats.up_by_path["/tx"] + proxy.stats.up_by_path["/chunk"]

        head = snapshot()
        started = time.monotonic()
        code, _out, err = run_cli(args, env, None)
        duration = time.monotonic() - started
        assert code == 0, err
        assert name_head("first") == head
        # Mine after each trial: with more than a page (10) of *pending* uploads, arlocal's
        # GraphQL order hides the newest from find_latest_upload (see the report).
        arlocal.mine()
        killed = 0
        for trial in range(MAX_TRIALS):
            append_blocks(ds, 1, data_bytes=20_000, seed=600 + trial)
            head = snapshot()
            delay = rng.uniform(0.05, duration * 0.8)  # later deltas are smaller
            code, _text, err = run_cli(args, env, delay)
            killed += code == -signal.SIGKILL
            assert code in (0, -signal.SIGKILL), err
            seen = name_head(f"kill-{trial}")
            assert seen in (head, list(files)[-2])
            checkpoint = states.path_for(did, target_name).with_suffix(".upload.json")
            taken = False  # the killed run's transaction reached the gateway
            if checkpoint.exists():
                tx_id = json.loads(checkpoint.read_text())["tx"]["id"]
                taken = direct.tx_status(tx_id).state != "not_found"
            before = posted()
            code, _out, err = run_cli(args, env, None)
            assert code == 0, err
            resent = posted() - before
            assert wait_for_head(head, f"rerun-{trial}") == head
            final = states.load(did, target_name)
            assert final is not None and final.head is not None
            assert multihash_to_str(final.head) == head
            # One transaction at most: the bundle (base64 in JSON) plus the header.
            # (no bundleBytes: the state was rebuilt from the network, nothing was posted)
            bundle = int(final.extra.get("bundleBytes", 0))
            assert resent <= bundle * 4 // 3 + 20_000, (resent, bundle)
            if taken or seen == head:
                # The gateway has the killed run's transaction: the re-run resumes it (or
                # finds it current) and posts nothing again.
                assert resent == 0, "a transaction the gateway took was posted again"
            arlocal.mine()
            if trial + 1 >= TRIALS and killed >= TRIALS // 2:
                break
        assert killed >= TRIALS // 2, f"only {killed} of {trial + 1} runs were killed mid-way"


def _car_blocks(out: Path) -> list[bytes]:
    """Every block CID in the CARs ``publish.json`` lists (one entry per copy)."""
    from odfweb3_ipfs.formats.car import iter_car

    got: list[bytes] = []
    for name in json.loads((out / "publish.json").read_text())["extra"]["cars"]:
        with open(out / name, "rb") as f:
            _roots, blocks = iter_car(f)
            got.extend(cid.raw for cid, _ in blocks)
    return got


def _whole_car(path: Path) -> None:
    """``path`` is a complete CAR v1 named ``<root>.car``: its header, every section to
    the end of the file, each block's hash (iter_car checks them)."""
    from odfweb3_ipfs.formats.car import iter_car

    with open(path, "rb") as f:
        roots, blocks = iter_car(f)
        assert sum(1 for _ in blocks) > 0, path.name
    assert [r.encode() for r in roots] == [path.name.removesuffix(".car")], path.name


def test_kill_car_publisher_at_random_points(tmp_path: Path) -> None:
    # car:DIR keeps no list of the directory blocks it sent: an update knows them
    # from its layout. Killed anywhere, the record names a root whose DAG is complete in the
    # CARs; run again, publish.json names it too, and no block is in two CARs.
    from odfweb3.odf.multihash import multihash_from_str
    from odfweb3_ipfs.formats.ipns import decode_record
    from odfweb3_ipfs.formats.unixfs_reader import iter_dag, read_file, resolve_path
    from odfweb3_ipfs.read.car_replica import CarIndex, check_car_dir

    rng = random.Random(20240612)
    # 3,000 blocks: the three directories are HAMT-sharded under Kubo's default threshold
    ds = create_root_dataset(
        tmp_path / "ds", blocks=3000, data_bytes=600_000, seed=51, fsync=False
    ).path
    out = tmp_path / "out"
    env = base_env(tmp_path)
    args = ["publish", str(ds), "--to", f"car:{out}", "--json"]
    started = time.monotonic()
    code, _text, err = run_cli(args, env, None)
    duration = time.monotonic() - started
    assert code == 0, err
    doc = json.loads((out / "publish.json").read_text())
    assert set(doc["extra"]["hamtShards"]) == {"blocks", "checkpoints", "data"}
    heads = [DatasetReader.open(ds).head()]
    killed = 0
    for trial in range(MAX_TRIALS):
        append_blocks(ds, 1, data_bytes=2000, seed=700 + trial, fsync=False)
        heads.append(DatasetReader.open(ds).head())
        code, _text, err = run_cli(args, env, rng.uniform(0.05, duration * 1.2))
        killed += code == -signal.SIGKILL
        assert code in (0, -signal.SIGKILL), err
        # The record (written before publish.json, which may still name the old head)
        # names a root whose whole DAG is in the directory's CARs.
        (record_file,) = out.glob("*.ipns-record")
        value = decode_record(record_file.read_bytes()).value_text
        root = Cid.decode(value.removeprefix("/ipfs/"))
        # As a user's `ipfs dag import out/*.car` would: every file the glob matches is a
        # whole CAR named by its root; a half-written one is .tmp-PID-XXXX.car.partial.
        cars = sorted(out.glob("*.car"))
        for car in cars:
            _whole_car(car)
        index = CarIndex(cars)
        assert sum(1 for _ in iter_dag(root, index.get, max_blocks=index.blocks)) > 1
        head_text = b"".join(read_file(resolve_path(root, "refs/head", index.get), index.get))
        assert multihash_from_str(head_text.decode()) in heads[-2:]
        code, _text, err = run_cli(args, env, None)
        assert code == 0, err
        # the rerun removed what the killed run left half written
        assert not [p.name for p in out.iterdir() if p.name.startswith(".tmp-")]
        check = check_car_dir(out)
        assert check.head == heads[-1]
        assert check.root == import_tree(ds).cid
        blocks = _car_blocks(out)
        assert len(blocks) == len(set(blocks)), "a block was written to two CARs"
        if trial + 1 >= TRIALS and killed >= TRIALS // 2:
            break
    assert killed >= TRIALS // 2, f"only {killed} of {trial + 1} runs were killed mid-way"
