"""Resume, not restart: a first publish to the suite's Kubo node killed (SIGKILL) at 75 %
of the dataset sends, run again, only what the node does not have (node_batches).

The publisher is the real CLI in a subprocess, its node reached through the fault proxy at
rate 0: a forwarder whose counters are the bytes of ``dag/import`` bodies that reached the
node. The killed run is stopped once 75 % of the dataset's bytes went through; the rerun's
bytes are counted the same way and must be at most 30 % of the dataset; the result is then
pulled from the node by its IPNS name and compared file by file.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from odfweb3_ipfs.client.kubo import KuboClient
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.publish.unixfs_import import import_tree
from tests.integration.test_crash import REPO, base_env, dataset_files, run_cli
from tests.support.fault_proxy import fault_proxy

IMPORT = "/api/v0/dag/import"
MIB = 1 << 20


def _kill_at(args: list[str], env: dict[str, str], proxy, share: int) -> tuple[int, str]:
    """Run the CLI and SIGKILL it once ``share`` bytes of dag/import reached the node."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "odfweb3.cli.main", *args],
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 600
    while proc.poll() is None and time.monotonic() < deadline:
        if proxy.stats.up_by_path[IMPORT] >= share:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.01)
    _out, err = proc.communicate(timeout=300)
    return proc.returncode, err


def test_a_first_publish_killed_at_75_percent_resumes(tmp_path: Path, ipfs_node) -> None:
    # 48 data files of 2.5 MiB (and their checkpoints and blocks): 120 MiB. A rerun sends
    # the 25 % left plus the part of the object the kill cut (at most 2.1 % here): an
    # object is the unit a batch records.
    ds = create_root_dataset(
        tmp_path / "ds", blocks=48, data_bytes=120 * MIB, seed=77, fsync=False
    ).path
    size = sum(len(b) for b in dataset_files(ds).values())
    root = import_tree(ds).cid
    direct = KuboClient(ipfs_node.api_url)
    with fault_proxy(ipfs_node.api_url, rate=0.0, max_body=64 * MIB) as proxy:
        env = base_env(tmp_path)
        env["ODFWEB3_IPFS_API"] = proxy.url
        env["ODFWEB3_IPFS_GATEWAY"] = ipfs_node.gateway_url
        args = ["publish", str(ds), "--to", "ipfs", "--json"]

        code, err = _kill_at(args, env, proxy, size * 3 // 4)
        killed_after = proxy.stats.up_by_path[IMPORT]
        assert code == -signal.SIGKILL, err  # killed mid-way, not finished
        assert size * 3 // 4 <= killed_after < size, (killed_after, size)
        assert not direct.has_pin(root)
        # what the killed run recorded: batches the node has, each pinned under its node
        records = [json.loads(p.read_text()) for p in (tmp_path / "state").rglob("sent-*.json")]
        batch_roots = [Cid.decode(r["root"]) for r in records]
        # each pinned once the node had it; the last maybe not yet (the kill came first):
        # the rerun pins it without looking on the network when the node took it whole
        pinned = sum(direct.has_pin(b) for b in batch_roots)
        assert batch_roots and pinned >= len(batch_roots) - 1, (pinned, len(batch_roots))
        # status says so (the core's upload checkpoint beside the states), never fails
        code, text, err = run_cli(["status", "--offline", "--json"], env, None)
        assert code == 0, err
        (row,) = json.loads(text)["targets"]
        assert row["uploadInProgress"] and row["target"] == f"ipfs:{proxy.url}"

        code, out, err = run_cli(args, env, None)
        assert code == 0, err
        resent = proxy.stats.up_by_path[IMPORT] - killed_after
        done = json.loads(out)
    share = resent / size
    print(
        f"\ndataset {size / MIB:.1f} MiB; killed after {killed_after / MIB:.1f} MiB "
        f"({killed_after / size:.0%}), {len(batch_roots)} batches recorded; the rerun sent "
        f"{resent / MIB:.1f} MiB ({share:.1%}), planned {done['plan']['sendBytes'] / MIB:.1f} MiB"
    )
    assert share <= 0.30, (resent, size)
    assert done["plan"]["sendBytes"] <= size * 0.30  # the plan knew what the node has
    # whole: pinned under the root we compute, pulled back by its name file by file
    assert done["locator"] == root.encode()
    assert direct.has_pin(root)
    pull_env = base_env(tmp_path)
    pull_env["ODFWEB3_IPFS_API"] = ipfs_node.api_url
    pull_env["ODFWEB3_IPFS_GATEWAY"] = ipfs_node.gateway_url
    ref = f"ipns://{done['record']['name']}"
    code, _out, err = run_cli(["pull", ref, str(tmp_path / "pulled")], pull_env, None)
    assert code == 0, err
    assert dataset_files(tmp_path / "pulled") == dataset_files(ds)
    head = multihash_to_str(DatasetReader.open(tmp_path / "pulled").head())
    assert head == multihash_to_str(DatasetReader.open(ds).head())
    # the batch pins and records are gone once the root is pinned, and so is the marker
    assert not list((tmp_path / "state").rglob("sent-*.json"))
    assert not list((tmp_path / "state").rglob("*.upload.json"))
    assert not any(direct.has_pin(b) for b in batch_roots)


def test_records_a_rerun_must_not_trust_are_dropped(tmp_path: Path, ipfs_node) -> None:
    """A record naming objects the node does not hold whole (its batch node pins nowhere
    without the network) or made with another CID version is dropped, never linked: the
    publish sends those objects and the result is whole."""
    from odfweb3.publish.execute import load_verified_chain
    from odfweb3.publish.state import StateStore
    from odfweb3_ipfs.publish.dataset_dag import ObjectLink
    from odfweb3_ipfs.publish.node_batches import BatchRecord, batch_node, encode_batch_record

    ds = create_root_dataset(tmp_path / "ds", blocks=3, data_bytes=300_000, seed=78).path
    did = str(load_verified_chain(DatasetReader.open(ds))[1])
    direct = KuboClient(ipfs_node.api_url)
    state = StateStore(tmp_path / "state").path_for(did, f"ipfs:{direct.api_url}")
    index = state.with_name(state.stem + ".index")
    index.mkdir(parents=True)
    objects = sorted(p for p in dataset_files(ds) if not p.startswith("refs/"))
    # 1. objects "sent" whose blocks the node never got (made-up CIDs)
    fake = Cid.sha256(bytes(32), version=1, codec=0x55)
    lie = {p: ObjectLink(fake, 10, 10) for p in objects}
    lie_root, _ = batch_node(lie.values(), 1)
    # 2. a batch the node holds and pins, but made as CIDv0 (this publish is CIDv1)
    leaf = import_tree(ds).cid  # any whole DAG on the node: the dataset imported as v1
    other = {objects[0]: ObjectLink(leaf, 1, 1)}
    other_root, _ = batch_node(other.values(), 0)
    for root, links, version in ((lie_root, lie, 1), (other_root, other, 0)):
        doc = encode_batch_record(BatchRecord(root, version, None, False, None, links))
        (index / f"sent-{root.encode()}.json").write_text(json.dumps(doc))
    env = base_env(tmp_path)
    env["ODFWEB3_IPFS_API"] = ipfs_node.api_url
    env["ODFWEB3_IPFS_GATEWAY"] = ipfs_node.gateway_url
    # (the offline pin of the made-up batch fails at once instead of searching the network:
    # run_cli's own deadline would end a publish stuck on it)
    code, out, err = run_cli(["publish", str(ds), "--to", "ipfs", "--json"], env, None)
    assert code == 0, err
    done = json.loads(out)
    assert done["plan"]["sendBytes"] == done["plan"]["totalBytes"]  # nothing trusted
    assert done["locator"] == import_tree(ds).cid.encode()
    assert not list(index.glob("sent-*.json"))
    assert not direct.has_pin(lie_root) and not direct.has_pin(other_root)
    code, _out, err = run_cli(
        ["pull", f"ipns://{done['record']['name']}", str(tmp_path / "pulled")], env, None
    )
    assert code == 0, err
    assert dataset_files(tmp_path / "pulled") == dataset_files(ds)


def test_ctrl_c_during_a_first_publish_resumes(tmp_path: Path, ipfs_node) -> None:
    """Ctrl-C (KeyboardInterrupt) in the middle of the upload: the batches the node took
    stay recorded and pinned, the unsent CAR is removed, and the rerun links them."""
    from odfweb3.crypto.keystore import Keystore
    from odfweb3.publish.execute import publish_dataset
    from odfweb3.publish.state import StateStore
    from odfweb3_ipfs.publish.node_target import IpfsNodeTarget

    ds = create_root_dataset(
        tmp_path / "ds", blocks=32, data_bytes=16 * MIB, seed=80, fsync=False
    ).path
    size = sum(len(b) for b in dataset_files(ds).values())

    def target() -> IpfsNodeTarget:
        t = IpfsNodeTarget(
            KuboClient(ipfs_node.api_url),
            Keystore(tmp_path / "keys"),
            StateStore(tmp_path / "state"),
            tmp_dir=tmp_path / "tmp",
        )
        t.batch_bytes = 1 * MIB  # 16 batches or so
        return t

    read = 0

    def ctrl_c_at_80_percent(n: int) -> None:
        nonlocal read
        read += n
        if read >= size * 4 // 5:
            raise KeyboardInterrupt

    first = target()
    try:
        publish_dataset(ds, first, progress=ctrl_c_at_80_percent)
    except KeyboardInterrupt:
        pass
    else:
        raise AssertionError("the publish was not interrupted")
    sent_before = first.client.stats.bytes_sent
    assert list((tmp_path / "state").rglob("sent-*.json"))
    assert not list((tmp_path / "tmp").iterdir())  # the unsent CAR is gone
    again = target()
    done = publish_dataset(ds, again)
    resent = again.client.stats.bytes_sent
    print(
        f"\n{size / MIB:.1f} MiB; before Ctrl-C sent {sent_before / MIB:.1f}, "
        f"rerun {resent / MIB:.1f}"
    )
    assert any("resuming an interrupted upload" in n for n in done.notes)
    assert resent < size - sent_before + 2 * MIB  # what the first run sent is not sent again
    assert done.state is not None and done.state.locator == import_tree(ds).cid.encode()
    assert KuboClient(ipfs_node.api_url).has_pin(import_tree(ds).cid)
    assert not list((tmp_path / "state").rglob("sent-*.json"))


def test_a_node_restarted_mid_upload_keeps_what_it_took(tmp_path: Path) -> None:
    """The node stops in the middle of a first publish (the publisher fails: it cannot
    reach it) and starts again on the same repository: the batches it took are still
    pinned there, so the rerun sends only the rest."""
    from tests.support.kubo import start_kubo
    from tests.support.nodes import free_port

    ds = create_root_dataset(
        tmp_path / "ds", blocks=24, data_bytes=48 * MIB, seed=81, fsync=False
    ).path
    size = sum(len(b) for b in dataset_files(ds).values())
    config = {"Addresses.API": f"/ip4/127.0.0.1/tcp/{free_port()}"}  # the same after restart
    env = base_env(tmp_path)
    args = ["publish", str(ds), "--to", "ipfs", "--json"]
    state = tmp_path / "state"
    with start_kubo(tmp_path / "kubo", config=config) as node:
        api = node.api_url
        env["ODFWEB3_IPFS_API"] = node.api_url
        env["ODFWEB3_IPFS_GATEWAY"] = node.gateway_url
        proc = subprocess.Popen(
            [sys.executable, "-m", "odfweb3.cli.main", *args],
            env=env,
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 600
        while proc.poll() is None and time.monotonic() < deadline:
            if len(list(state.rglob("sent-*.json"))) >= 3:  # about half the dataset
                break
            time.sleep(0.01)
        node.process.stop()  # the node goes away mid-upload
        _out, err = proc.communicate(timeout=600)
    assert proc.returncode != 0, "the publish finished before the node stopped"
    assert "Traceback" not in err
    with start_kubo(tmp_path / "kubo", config=config) as node:
        assert node.api_url == api
        env["ODFWEB3_IPFS_GATEWAY"] = node.gateway_url
        code, out, err = run_cli(args, env, None)
        assert code == 0, err
        done = json.loads(out)
        print(
            f"\n{size / MIB:.1f} MiB; after the node's restart the rerun sent "
            f"{done['bytesSent'] / MIB:.1f} MiB"
        )
        assert done["plan"]["sendBytes"] < size * 0.8  # what the node took is linked
        assert done["bytesSent"] < size * 0.8
        root = import_tree(ds).cid
        assert done["locator"] == root.encode()
        assert KuboClient(node.api_url).has_pin(root)
        code, _out, err = run_cli(
            ["pull", f"ipns://{done['record']['name']}", str(tmp_path / "pulled")], env, None
        )
        assert code == 0, err
        assert dataset_files(tmp_path / "pulled") == dataset_files(ds)
