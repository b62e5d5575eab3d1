"""Publish, resolve and pull through a faulty network (tests/support/fault_proxy.py).

The proxy sits between odfweb3 and the session's real nodes (Kubo, arlocal) and breaks
20 % of the requests (resets, held connections past the client's short timeout, 5xx,
truncated answers, cut uploads, slow trickles), from a seeded RNG. Each operation either
completes through its retries or fails with an :class:`OdfWeb3Error`; after every attempt,
checked straight against the node (no proxy):

- the name never points at incomplete content: the name's root is pinned (Kubo pins only
  a complete DAG), is the root we compute locally for the head it claims, and every file of
  that head reads back byte for byte; on Arweave the latest record's manifest serves a
  complete, verified dataset (pulled and checked);
- the publish state is consistent: its head is the name's head or the one before;
- nothing local changed (the dataset directory is only read).

Finally, with the proxy off, a publish completes and state == name == local head.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from odfweb3.crypto.keystore import Keystore
from odfweb3.errors import OdfWeb3Error
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.layout import DatasetReader, ObjectKind, object_relpath
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import StateStore
from odfweb3.read.pull import pull_dataset
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.publish.gateway_target import GatewayTarget
from odfweb3_arweave.read.lookup import find_latest_upload
from odfweb3_arweave.read.replica import open_ar_replica
from odfweb3_arweave.wallet import generate_wallet
from odfweb3_ipfs.client.kubo import KuboClient
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.formats.libp2p_keys import IpnsName, public_key_bytes
from odfweb3_ipfs.publish.node_target import IpfsNodeTarget, _head_of, read_node_record
from odfweb3_ipfs.publish.unixfs_import import import_tree
from tests.support.fault_proxy import fault_proxy

RATE = 0.2
SEEDS = (1, 2, 3)
ATTEMPTS = 6  # tries under faults before the proxy is switched off
CLIENT_TIMEOUT = 3.0  # the proxy holds a "timeout" connection longer than this
HOLD = CLIENT_TIMEOUT + 0.5
T = TypeVar("T")


def dataset_files(ds: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(ds)): p.read_bytes()
        for p in sorted(ds.rglob("*"))
        if p.is_file() and p.relative_to(ds).parts[0] in ("blocks", "refs", "data", "checkpoints")
    }


def attempts(op: Callable[[], T], check: Callable[[], None], log: list[str]) -> T | None:
    """Run ``op`` up to ATTEMPTS times; only OdfWeb3Error may escape it; check after each."""
    for _ in range(ATTEMPTS):
        try:
            result = op()
        except OdfWeb3Error as exc:
            assert str(exc) and "\n" not in str(exc), "error message must be one line"
            log.append(f"{type(exc).__name__}: {exc}")
            check()
            continue
        check()
        return result
    return None


# -- IPFS -------------------------------------------------------------------------------


class NodeReplica:
    """The dataset under the node's /ipfs/<root>, read by RPC ``cat`` (pull verifies all)."""

    def __init__(self, client: KuboClient, name: IpnsName) -> None:
        self.client = client
        self.ipns = name
        self.name = f"ipns://{name}"
        self.root: Cid | None = None

    def head(self) -> bytes:
        seen = read_node_record(self.client, self.ipns)
        assert seen is not None and seen.root is not None
        self.root = seen.root
        return _head_of(self.client, seen, seen.root)

    def read_block(self, mh: bytes) -> bytes:
        return self.client.cat(f"/ipfs/{self.root}/{object_relpath('block', mh)}")

    def stream_object(self, kind: ObjectKind, mh: bytes, size: int | None) -> Iterator[bytes]:
        path = f"/ipfs/{self.root}/{object_relpath(kind, mh)}"
        yield self.client.cat(path, max_size=(size or 0) + 1)


class IpfsWorld:
    def __init__(self, tmp: Path, node: Any, seed: int) -> None:
        self.node = node
        self.tmp = tmp
        self.keys = Keystore(tmp / "keys")
        self.states = StateStore(tmp / "state")
        self.ds = create_root_dataset(
            tmp / "ds", blocks=3, data_bytes=200_000, seed=900 + seed
        ).path
        self.direct = KuboClient(node.api_url)
        self.roots: dict[str, str] = {}  # head -> root CID we compute for it
        self.files: dict[str, dict[str, bytes]] = {}  # head -> the dataset's files then
        self.heads: list[str] = []

    def snapshot(self) -> None:
        head = multihash_to_str(DatasetReader.open(self.ds).head())
        self.roots[head] = import_tree(self.ds).cid.encode()
        self.files[head] = dataset_files(self.ds)
        self.heads.append(head)

    def target(self, api: str) -> IpfsNodeTarget:
        client = KuboClient(api, timeout=CLIENT_TIMEOUT, retries=4, backoff=0.05)
        target = IpfsNodeTarget(
            client, self.keys, self.states, gateway_url=self.node.gateway_url, tmp_dir=self.tmp
        )
        self.target_name = target.name  # state is kept per target (the proxy's URL)
        return target

    def ipns(self) -> IpnsName | None:
        did = self.dataset_id()
        if did is None or not self.keys.has(did):
            return None
        return IpnsName.from_public_key(public_key_bytes(self.keys.load(did)))

    def dataset_id(self) -> str | None:
        from odfweb3.publish.execute import load_verified_chain

        return str(load_verified_chain(DatasetReader.open(self.ds))[1])

    def name_head(self) -> str | None:
        name = self.ipns()
        seen = read_node_record(self.direct, name) if name else None
        if seen is None:
            return None
        assert seen.root is not None and seen.record.odf is not None
        head = seen.record.odf.head
        # Never ahead of what is stored: our root for that head, pinned, every file readable.
        assert Cid.decode(self.roots[head]).raw == seen.root.raw
        assert self.direct.has_pin(seen.root)
        assert multihash_to_str(_head_of(self.direct, seen, seen.root)) == head
        for path, data in self.files[head].items():
            got = self.direct.cat(f"/ipfs/{seen.root}/{path}", max_size=len(data) + 1)
            assert got == data, path
        return head

    def check(self) -> None:
        head = self.name_head()
        state = self.states.load(str(self.dataset_id()), self.target_name)
        if head is None:
            assert state is None or state.head is None
            return
        i = self.heads.index(head)
        allowed = {head} | ({self.heads[i - 1]} if i > 0 else set())
        state_head = multihash_to_str(state.head) if state and state.head else None
        assert state_head in allowed | ({None} if i == 0 else set()), (state_head, allowed)


@pytest.mark.parametrize("seed", SEEDS)
def test_ipfs_publish_resolve_pull_under_faults(seed: int, tmp_path: Path, ipfs_node) -> None:
    world = IpfsWorld(tmp_path, ipfs_node, seed)
    log: list[str] = []
    with fault_proxy(ipfs_node.api_url, rate=RATE, seed=seed, hold=HOLD) as proxy:
        for round_ in range(2):
            if round_:
                append_blocks(world.ds, 1, data_bytes=50_000, seed=seed * 10 + round_)
            world.snapshot()
            before = dataset_files(world.ds)
            attempts(lambda: publish_dataset(world.ds, world.target(proxy.url)), world.check, log)
            assert dataset_files(world.ds) == before  # the local dataset is only read
        # Resolve and pull through the faults: complete, or a clear error with DEST intact.
        name = world.ipns()
        assert name is not None
        dest = tmp_path / "pulled"

        def pull() -> object:
            replica = NodeReplica(KuboClient(proxy.url, timeout=CLIENT_TIMEOUT, retries=4), name)
            return pull_dataset(replica, dest, parallel=2)

        def dest_ok() -> None:
            ref = dest / "refs" / "head"
            if ref.exists():  # refs/head is written last: whatever it names is complete
                head = ref.read_text().strip()
                assert dataset_files(dest) == world.files[head]

        attempts(pull, dest_ok, log)
        assert proxy.stats.faults, "the proxy injected no fault"
        proxy.set_rate(0)
        done = publish_dataset(world.ds, world.target(proxy.url))
    final = world.heads[-1]
    assert world.name_head() == final
    assert done.state is not None and multihash_to_str(done.state.head) == final
    pull_dataset(NodeReplica(world.direct, name), dest)
    assert dataset_files(dest) == world.files[final]


# -- Arweave ----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_arweave_publish_resolve_pull_under_faults(seed: int, tmp_path: Path, arlocal) -> None:
    wallet = generate_wallet()
    arlocal.mint(wallet.address, 10**15)
    ds = create_root_dataset(tmp_path / "ds", blocks=3, data_bytes=100_000, seed=700 + seed).path
    states = StateStore(tmp_path / "state")
    direct = ArweaveGateway(arlocal.url)
    heads: list[str] = []
    files: dict[str, dict[str, bytes]] = {}
    log: list[str] = []

    names: list[str] = []

    def target(url: str) -> GatewayTarget:
        gw = ArweaveGateway(url, timeout=CLIENT_TIMEOUT, retries=4, backoff=0.05)
        names.append(f"arweave:{gw.url}")  # state is kept per target (the proxy's URL)
        return GatewayTarget(gw, wallet, states)

    from odfweb3.publish.execute import load_verified_chain

    did = str(load_verified_chain(DatasetReader.open(ds))[1])

    def check() -> None:
        latest = find_latest_upload(direct, wallet.address, did)
        state = states.load(did, names[-1])
        if latest is None:
            assert state is None or state.head is None
            return
        head = latest.facts.head
        # The record is never ahead of its content: the whole dataset pulls and verifies.
        probe = tmp_path / f"probe-{len(log)}-{head[-8:]}"
        shutil.rmtree(probe, ignore_errors=True)
        pull_dataset(open_ar_replica(direct, f"ar://{latest.id}"), probe)
        assert dataset_files(probe) == files[head]
        shutil.rmtree(probe)
        i = heads.index(head)
        allowed = {head} | ({heads[i - 1]} if i > 0 else set())
        state_head = multihash_to_str(state.head) if state and state.head else None
        assert state_head in allowed | ({None} if i == 0 else set()), (state_head, allowed)

    with fault_proxy(arlocal.url, rate=RATE, seed=seed, hold=HOLD) as proxy:
        for round_ in range(2):
            if round_:
                append_blocks(ds, 1, data_bytes=30_000, seed=seed * 10 + round_)
            head = multihash_to_str(DatasetReader.open(ds).head())
            heads.append(head)
            files[head] = dataset_files(ds)
            attempts(lambda: publish_dataset(ds, target(proxy.url)), check, log)
        dest = tmp_path / "pulled"

        def pull() -> object:
            gw = ArweaveGateway(proxy.url, timeout=CLIENT_TIMEOUT, retries=4, backoff=0.05)
            latest = find_latest_upload(gw, wallet.address, did)  # resolve through faults
            assert latest is not None
            return pull_dataset(open_ar_replica(gw, f"ar://{latest.id}"), dest, parallel=2)

        def dest_ok() -> None:
            ref = dest / "refs" / "head"
            if ref.exists():
                assert dataset_files(dest) == files[ref.read_text().strip()]

        attempts(pull, dest_ok, log)
        assert proxy.stats.faults, "the proxy injected no fault"
        proxy.set_rate(0)
        done = publish_dataset(ds, target(proxy.url))
    assert done.state is not None and multihash_to_str(done.state.head) == heads[-1]
    check()
    latest = find_latest_upload(direct, wallet.address, did)
    assert latest is not None and latest.facts.head == heads[-1]
    pull_dataset(open_ar_replica(direct, f"ar://{latest.id}"), dest)
    assert dataset_files(dest) == files[heads[-1]]
