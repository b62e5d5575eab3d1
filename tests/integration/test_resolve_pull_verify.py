"""Resolve, pull and verify over the real test nodes (Kubo gateway + RPC, arlocal).

Never skipped: the session fixtures start the nodes. Lies are told by a loopback proxy in
front of the real node (tests/support/lying_proxy.py): flipped bytes, another dataset's
root served under this one's path, an older IPNS record replayed, a dropped connection.
"""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3.config import Config
from odfweb3.crypto.keystore import Keystore
from odfweb3.errors import (
    BackendUnavailable,
    ConflictError,
    HashMismatch,
    NotFound,
    ReplicaMismatch,
)
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.chain import walk_chain
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import StateStore
from odfweb3.read.claims import resolve_dataset
from odfweb3.read.compare import compare_replica
from odfweb3.read.pull import pull_dataset
from odfweb3.read.replica import LocalReplica
from odfweb3.read.resolve import open_replica, resolve_ref
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.publish.gateway_target import GatewayTarget
from odfweb3_arweave.wallet import generate_wallet
from odfweb3_ipfs.backend import ipfs_access
from odfweb3_ipfs.client.gateway import IpfsGateway
from odfweb3_ipfs.client.kubo import KuboClient
from odfweb3_ipfs.formats.ipns import RecordExpired
from odfweb3_ipfs.formats.libp2p_keys import IpnsName, public_key_bytes
from odfweb3_ipfs.publish.node_target import IpfsNodeTarget
from odfweb3_ipfs.read.names import open_ipfs_ref
from tests.support.lying_proxy import lying_proxy

RICH = 10**15


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` (the staging area included): 'DEST left unchanged'."""
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def layout_files(root: Path) -> dict[str, bytes]:
    return {
        k: v
        for k, v in snapshot(root).items()
        if k.split("/")[0] in ("blocks", "refs", "data", "checkpoints")
    }


class Env:
    """One test's configuration, keystore and state, and helpers to publish."""

    def __init__(self, tmp_path: Path, ipfs_node, arlocal=None, gateway: str | None = None):
        self.tmp = tmp_path
        self.node = ipfs_node
        data = {
            "ipfs": {"api": ipfs_node.api_url, "gateway": gateway or ipfs_node.gateway_url},
            "keystore": str(tmp_path / "keys"),
            "state_dir": str(tmp_path / "state"),
        }
        if arlocal is not None:
            data["arweave"] = {"gateway": arlocal.url}
        self.config = Config(data=data, home=tmp_path / "home")
        self.keystore = Keystore(self.config.keystore_dir)
        self.states = StateStore(self.config.state_dir)

    def with_gateway(self, url: str) -> Config:
        data = json.loads(json.dumps(dict(self.config.data)))
        data["ipfs"]["gateway"] = url
        return Config(data=data, home=self.config.home)

    def with_api(self, url: str) -> Config:
        data = json.loads(json.dumps(dict(self.config.data)))
        data["ipfs"]["api"] = url
        return Config(data=data, home=self.config.home)

    def publish_ipfs(self, ds: Path):
        target = IpfsNodeTarget(
            KuboClient(self.node.api_url),
            self.keystore,
            self.states,
            gateway_url=self.node.gateway_url,
            tmp_dir=self.tmp,
        )
        return publish_dataset(ds, target)

    def name(self, dataset_id: str) -> IpnsName:
        return IpnsName.from_public_key(public_key_bytes(self.keystore.load(dataset_id)))


def make_dataset(path: Path, *, blocks: int = 4, seed: int = 1) -> Path:
    return create_root_dataset(path, blocks=blocks, data_bytes=60_000, seed=seed).path


def test_resolve_pull_verify_on_both_networks(tmp_path, ipfs_node, arlocal, capsys) -> None:
    env = Env(tmp_path, ipfs_node, arlocal)
    built = create_root_dataset(tmp_path / "ds", blocks=4, data_bytes=60_000, seed=81)
    ds = built.path
    # The dataset's own identity key signs its IPNS records: did:odf -> IPNS name.
    assert built.keypair is not None
    env.keystore.store(str(built.keypair.dataset_id), built.keypair.signing_key())
    local = DatasetReader.open(ds)
    head = local.head()
    n_blocks = len(list(walk_chain(local)))
    ipfs = env.publish_ipfs(ds)
    did = ipfs.plan.dataset_id
    wallet = generate_wallet()
    arlocal.mint(wallet.address, RICH)
    ar = publish_dataset(ds, GatewayTarget(ArweaveGateway(arlocal.url), wallet, env.states))
    name = env.name(did)
    record_id = ar.state.record["recordId"]

    # resolve: every form leads to the same dataset and head
    ((_, by_name),) = resolve_ref(f"ipns://{name}", env.config)
    assert by_name.dataset_id == did and by_name.head == head
    assert by_name.locator == f"/ipfs/{ipfs.upload.locator}"
    assert by_name.sequence == 0 and by_name.expires_at is not None
    assert by_name.blocks == n_blocks
    assert any("verified locally" in n for n in by_name.notes)
    ((_, by_cid),) = resolve_ref(f"ipfs://{ipfs.upload.locator}", env.config)
    assert (by_cid.dataset_id, by_cid.head, by_cid.sequence) == (did, head, None)
    # Kubo's gateway is trustless: raw blocks, each hashed against its CID.
    assert any("verified against CIDs (gateway raw blocks)" in n for n in by_cid.notes)
    with lying_proxy(ipfs_node.gateway_url) as plain:
        plain.deserialized_only = True  # a gateway without ?format=raw: RPC block/get instead
        ((_, via_rpc),) = resolve_ref(f"ipfs://{ipfs.upload.locator}", env.with_gateway(plain.url))
        assert (via_rpc.dataset_id, via_rpc.head) == (did, head)
        assert any("verified against CIDs (RPC block/get)" in n for n in via_rpc.notes)
    ((_, by_ar),) = resolve_ref(f"ar://{record_id}", env.config)
    assert (by_ar.dataset_id, by_ar.head) == (did, head)
    assert by_ar.locator == f"ar://{ar.state.locator}"
    # did:odf: the IPNS name of the dataset key, and Arweave by the owner in publish state
    found = resolve_ref(did, env.config)
    assert [r.ref for _, r in found] == [f"ipns://{name}", f"ar://{record_id}"]
    assert all(r.head == head and r.dataset_id == did for _, r in found)
    # DNSLink, with the TXT answer supplied (no real DNS in tests)
    txt = {"_dnslink.data.example.org": [f"dnslink=/ipns/{name}", "v=spf1 -all"]}
    ((_, by_dns),) = resolve_ref("ipns://data.example.org", env.config, dns=txt.__getitem__)
    assert (by_dns.head, by_dns.sequence) == (head, 0)
    assert by_dns.notes[0].startswith("DNSLink data.example.org -> /ipns/")

    # the CLI prints the same
    cfg = tmp_path / "odfweb3.yaml"
    cfg.write_text(json.dumps(dict(env.config.data)))
    assert main(["resolve", f"ipns://{name}", "--json", "--config", str(cfg)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["results"][0]["datasetId"] == did and doc["results"][0]["sequence"] == 0
    assert doc["results"][0]["head"] == multihash_to_str(head)

    # pull from each network: byte-identical datasets
    for ref, dest in ((f"ipns://{name}", "from-ipfs"), (f"ar://{record_id}", "from-ar")):
        result = pull_dataset(open_replica(ref, env.config), tmp_path / dest)
        assert result.head == head and result.new_blocks == n_blocks
        assert layout_files(tmp_path / dest) == layout_files(ds)

    # verify: both replicas identical (exit 0), JSON report
    argv = ["verify", str(ds), "--against", f"ipns://{name}", "--against", f"ar://{record_id}"]
    assert main([*argv, "--json", "--deep", "--config", str(cfg)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["status"] for r in report["replicas"]] == ["identical", "identical"]
    assert all(r["objectsChecked"] > 0 and r["problems"] == [] for r in report["replicas"])

    # one more block, published to IPFS only: Arweave is behind by 1; incremental pull
    append_blocks(ds, 1, data_bytes=4_000, seed=82)
    second = env.publish_ipfs(ds)
    assert main([*argv, "--json", "--config", str(cfg)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [(r["status"], r["blocks"]) for r in report["replicas"]] == [
        ("identical", 0),
        ("behind", 1),
    ]
    ((_, again),) = resolve_ref(f"ipns://{name}", env.config)
    assert again.sequence == 1 and again.head == second.plan.head
    result = pull_dataset(open_replica(f"ipns://{name}", env.config), tmp_path / "from-ipfs")
    assert result.new_blocks == 1 and result.previous_head == head
    assert layout_files(tmp_path / "from-ipfs") == layout_files(ds)


def test_gateway_flipping_bytes_is_caught_and_dest_unchanged(tmp_path, ipfs_node) -> None:
    env = Env(tmp_path, ipfs_node)
    ds = make_dataset(tmp_path / "ds", seed=83)
    first = env.publish_ipfs(ds)
    ref = f"ipns://{env.name(first.plan.dataset_id)}"
    dest = tmp_path / "dest"
    pull_dataset(open_replica(ref, env.config), dest)
    append_blocks(ds, 2, data_bytes=5_000, seed=84)
    env.publish_ipfs(ds)
    before = snapshot(dest)
    with lying_proxy(ipfs_node.gateway_url) as proxy:
        liar = env.with_gateway(proxy.url)
        proxy.flip = "/data/"
        with pytest.raises(HashMismatch, match="data/"):
            pull_dataset(open_replica(ref, liar), dest)
        assert snapshot(dest) == before
        proxy.honest()
        proxy.flip = "/blocks/"
        # as a gateway without whole-DAG CARs (blocks/ is otherwise one CAR of its DAG,
        # checked block by block against the CIDs, and never read by path)
        proxy.not_found = ("dag-scope=all",)
        with pytest.raises(HashMismatch, match="blocks/"):
            pull_dataset(open_replica(ref, liar), dest)
        assert snapshot(dest) == before
        # trustless mode reads CID-verified blocks from the RPC: the gateway's lies are moot
        replica, claims = open_ipfs_ref(ref, ipfs_access(liar, trustless=True))
        assert resolve_dataset(ref, replica, claims).head == DatasetReader.open(ds).head()
        assert proxy.count("/data/") == 0 or proxy.count("/blocks/") >= 0
    result = pull_dataset(open_replica(ref, env.config), dest)
    assert result.new_blocks == 2 and layout_files(dest) == layout_files(ds)


def test_gateway_serving_another_dataset_is_caught(tmp_path, ipfs_node) -> None:
    env = Env(tmp_path, ipfs_node)
    a = env.publish_ipfs(make_dataset(tmp_path / "a", seed=85))
    b = env.publish_ipfs(make_dataset(tmp_path / "b", seed=86))
    ref = f"ipns://{env.name(a.plan.dataset_id)}"
    dest = tmp_path / "dest"
    with lying_proxy(ipfs_node.gateway_url) as proxy:
        proxy.rewrite = (f"/ipfs/{a.upload.locator}/", f"/ipfs/{b.upload.locator}/")
        proxy.deserialized_only = True  # no raw blocks: the swap is only seen by the record
        # A gateway-only reader (no raw blocks): the signed _odf.head catches the swap.
        access = ipfs_access(env.with_gateway(proxy.url))
        access.rpc_blocks = False
        access.gateway = IpfsGateway(proxy.url)
        replica, claims = open_ipfs_ref(ref, access)
        assert any("deserialized" in n for n in claims.notes)
        with pytest.raises(ReplicaMismatch, match="the signed record says head"):
            resolve_dataset(ref, replica, claims)
        with pytest.raises(ReplicaMismatch, match="serves another dataset state"):
            pull_dataset(replica, dest)
        assert snapshot(dest) == {}
        # With raw blocks from the RPC, refs/head is bound to the root CID: the head is A's,
        # and the swapped gateway cannot serve A's blocks (each would be hashed anyway).
        replica, claims = open_ipfs_ref(
            f"ipfs://{a.upload.locator}", ipfs_access(env.with_gateway(proxy.url))
        )
        assert replica.head() == a.plan.head
        # Kubo answers 404 for the path missing under the swapped root (js-ipfs: 500).
        with pytest.raises(NotFound, match="/blocks/"):
            pull_dataset(replica, dest)
        assert snapshot(dest) == {}


def test_replayed_older_ipns_record_is_refused(tmp_path, ipfs_node) -> None:
    env = Env(tmp_path, ipfs_node)
    ds = make_dataset(tmp_path / "ds", seed=87)
    first = env.publish_ipfs(ds)
    name = env.name(first.plan.dataset_id)
    old_record = KuboClient(ipfs_node.api_url).record_get(name)
    ref = f"ipns://{name}"
    dest = tmp_path / "dest"
    pull_dataset(open_replica(ref, env.config), dest)
    append_blocks(ds, 1, data_bytes=3_000, seed=88)
    env.publish_ipfs(ds)
    ((_, seen),) = resolve_ref(ref, env.config)  # sequence 1 is remembered
    assert seen.sequence == 1
    # expiry is checked against the local clock: a week from now the 48 h record is dead
    later = seen.expires_at + timedelta(days=7)
    with pytest.raises(RecordExpired, match="expired"):
        resolve_ref(ref, env.config, now=lambda: later)
    before = snapshot(dest)
    # The gateway replays (Kubo's gateway serves ?format=ipns-record, read first).
    with lying_proxy(ipfs_node.gateway_url) as proxy:
        proxy.replay_record = old_record
        with pytest.raises(ReplicaMismatch, match=r"served sequence 0 .* sequence 1 was seen"):
            resolve_ref(ref, env.with_gateway(proxy.url))
        with pytest.raises(ReplicaMismatch, match="replayed"):
            pull_dataset(open_replica(ref, env.with_gateway(proxy.url)), dest)
    # A gateway without records; the RPC API replays.
    with lying_proxy(ipfs_node.gateway_url) as plain, lying_proxy(ipfs_node.api_url) as proxy:
        plain.deserialized_only = True
        proxy.replay_record = old_record
        liar = Config(
            data={**env.with_api(proxy.url).data, "ipfs": {"api": proxy.url, "gateway": plain.url}},
            home=env.config.home,
        )
        with pytest.raises(ReplicaMismatch, match=r"served sequence 0 .* sequence 1 was seen"):
            resolve_ref(ref, liar)
        with pytest.raises(ReplicaMismatch, match="replayed"):
            pull_dataset(open_replica(ref, liar), dest)
    assert snapshot(dest) == before


def test_diverged_replica_reports_common_ancestor(tmp_path, ipfs_node, capsys) -> None:
    env = Env(tmp_path, ipfs_node)
    ds = make_dataset(tmp_path / "ds", seed=89)
    fork = tmp_path / "fork"
    shutil.copytree(ds, fork)
    append_blocks(ds, 1, data_bytes=2_000, seed=90)
    append_blocks(fork, 2, data_bytes=2_000, seed=91)
    published = env.publish_ipfs(ds)
    ref = f"ipns://{env.name(published.plan.dataset_id)}"
    reference = list(walk_chain(DatasetReader.open(fork)))
    fork_point = reference[2].block.sequence_number  # the last block both share
    report = compare_replica(reference, open_replica(ref, env.config))
    assert report.status == "diverged" and report.common_ancestor == fork_point
    assert f"common ancestor: block #{fork_point}" in report.describe()
    cfg = tmp_path / "odfweb3.yaml"
    cfg.write_text(json.dumps(dict(env.config.data)))
    assert main(["verify", str(fork), "--against", ref, "--json", "--config", str(cfg)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["replicas"][0]["status"] == "diverged"
    assert doc["replicas"][0]["commonAncestor"] == fork_point
    before = snapshot(fork)
    with pytest.raises(ConflictError, match="diverged"):
        pull_dataset(open_replica(ref, env.config), fork)
    assert snapshot(fork) == before
    # the local copy as a replica of the published one: same answer from the other side
    back = compare_replica(
        list(walk_chain(DatasetReader.open(ds))), LocalReplica(DatasetReader.open(fork))
    )
    assert back.status == "diverged" and back.common_ancestor == fork_point


def test_interrupted_pull_resumes(tmp_path, ipfs_node) -> None:
    env = Env(tmp_path, ipfs_node)
    ds = make_dataset(tmp_path / "ds", blocks=8, seed=92)
    published = env.publish_ipfs(ds)
    ref = f"ipns://{env.name(published.plan.dataset_id)}"
    dest = tmp_path / "dest"
    data_files = len(list((ds / "data").iterdir()))
    assert data_files >= 4
    with lying_proxy(ipfs_node.gateway_url) as proxy:
        liar = env.with_gateway(proxy.url)
        proxy.fail_after = ("/data/", 2)
        # objects one by one, as from a gateway without whole-DAG CARs (a first pull
        # otherwise streams data/ whole); the rerun finds the staged ones: one by one too
        proxy.not_found = ("dag-scope=all",)
        with pytest.raises(BackendUnavailable, match=r"dropped|unreachable"):
            pull_dataset(open_replica(ref, liar), dest, parallel=1)
        assert not (dest / "refs" / "head").exists()
        staged = list((dest / ".odfweb3" / "incoming" / "data").iterdir())
        assert len(staged) == 2
        proxy.honest()
        proxy.requests.clear()
        result = pull_dataset(open_replica(ref, liar), dest, parallel=1)
        assert proxy.count("/data/") == data_files - 2  # the staged two are not fetched again
    assert result.head == DatasetReader.open(ds).head()
    assert layout_files(dest) == layout_files(ds)
    assert not (dest / ".odfweb3" / "incoming").exists()
