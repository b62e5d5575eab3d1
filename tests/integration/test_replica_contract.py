"""One contract, every replica: the same checks run against each way odfweb3 reads a dataset.

The replicas (``odfweb3.read.replica.Replica``): a dataset directory (``LocalReplica``),
``car:DIR`` (``CarDirReplica``), ``bundle:DIR`` (``BundleDirReplica``), the Kubo gateway
(``IpfsReplica``, ``ipns://NAME``) and the Arweave gateway (``ArweaveReplica``, ``ar://RECORD``),
each opened the way a user opens it (``odfweb3.read.resolve.open_replica``) after one real
publish of one dataset to every target (the session's Kubo and arlocal). Lies are told by
editing the bytes a local replica keeps, or by a loopback proxy in front of the real node
(tests/support/lying_proxy.py: a real node cannot be made to serve wrong bytes).

The contract:
- head, blocks and objects are those published: a pull gives the dataset byte for byte;
- verify on read: a flipped byte of a block or of a data file is a ``HashMismatch`` naming
  it, and a pull so refused leaves its destination as it was;
- bounded reads: ``stream_object(kind, hash, size)`` never yields more than ``size + 1``
  bytes (one more than recorded is enough to refuse), and a verified read of an object
  recorded smaller than it is refuses it;
- an object the replica does not hold is ``NotFound``, not another object.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from odfweb3.config import Config
from odfweb3.crypto.keystore import Keystore
from odfweb3.errors import FormatError, HashMismatch, IntegrityError, NotFound, SignatureError
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.chain import DatasetObject, iter_objects, walk_chain
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import hash_bytes
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import StateStore
from odfweb3.read.pull import pull_dataset
from odfweb3.read.replica import Replica, read_object_verified
from odfweb3.read.resolve import open_replica
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.publish.bundle_target import BundleTarget
from odfweb3_arweave.publish.gateway_target import GatewayTarget
from odfweb3_arweave.wallet import generate_wallet
from odfweb3_ipfs.client.kubo import KuboClient
from odfweb3_ipfs.formats.libp2p_keys import IpnsName, public_key_bytes
from odfweb3_ipfs.publish.car_target import CarTarget
from odfweb3_ipfs.publish.node_target import IpfsNodeTarget
from tests.support.lying_proxy import LyingProxy, lying_proxy

RICH = 10**15
KINDS = ["local", "car", "bundle", "ipfs-gateway", "arweave-gateway"]


@dataclass(frozen=True)
class World:
    root: Path
    ds: Path
    car: Path
    bundle: Path
    ipns: str
    record: str
    config: dict[str, object]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, ipfs_node, arlocal) -> World:
    """One dataset (fresh seed and keys for this module), published to every target."""
    root = tmp_path_factory.mktemp("replica-contract")
    built = create_root_dataset(root / "ds", blocks=4, data_bytes=40_000, seed=9101)
    assert built.keypair is not None
    keystore = Keystore(root / "keys")
    did = str(built.keypair.dataset_id)
    keystore.store(did, built.keypair.signing_key())
    states = StateStore(root / "state")
    publish_dataset(built.path, CarTarget(root / "car", keystore))
    wallet = generate_wallet()
    arlocal.mint(wallet.address, RICH)
    publish_dataset(built.path, BundleTarget(root / "bundle", wallet))
    node = IpfsNodeTarget(
        KuboClient(ipfs_node.api_url),
        keystore,
        states,
        gateway_url=ipfs_node.gateway_url,
        tmp_dir=root,
    )
    publish_dataset(built.path, node)
    ar = publish_dataset(built.path, GatewayTarget(ArweaveGateway(arlocal.url), wallet, states))
    arlocal.mine()
    name = IpnsName.from_public_key(public_key_bytes(keystore.load(did)))
    config = {
        "ipfs": {"api": ipfs_node.api_url, "gateway": ipfs_node.gateway_url},
        "arweave": {"gateway": arlocal.url},
        "keystore": str(root / "reader-keys"),
        "state_dir": str(root / "reader-state"),
    }
    return World(
        root, built.path, root / "car", root / "bundle", f"ipns://{name}",
        f"ar://{ar.state.record['recordId']}", config,
    )  # fmt: skip


class Opened:
    """One replica kind of the world, opened honest or lying."""

    def __init__(self, kind: str, world: World, tmp: Path, ipfs_node, arlocal) -> None:
        self.kind = kind
        self.world = world
        self.tmp = tmp
        self.upstream = ipfs_node.gateway_url if kind == "ipfs-gateway" else arlocal.url
        self.home = tmp / "home"

    def _config(self, gateway: str | None = None) -> Config:
        data = json.loads(json.dumps(self.world.config))
        data["state_dir"] = str(self.tmp / "reader-state")
        if gateway is not None:
            section = "ipfs" if self.kind == "ipfs-gateway" else "arweave"
            data[section]["gateway"] = gateway
        return Config(data=data, home=self.home)

    def _local_copy(self) -> Path:
        src = {"local": self.world.ds, "car": self.world.car, "bundle": self.world.bundle}
        dest = self.tmp / f"copy-{self.kind}"
        if not dest.exists():
            shutil.copytree(src[self.kind], dest)
        return dest

    def ref(self) -> str:
        if self.kind == "ipfs-gateway":
            return self.world.ipns
        if self.kind == "arweave-gateway":
            return self.world.record
        copy = self._local_copy()
        return str(copy) if self.kind == "local" else f"{self.kind}:{copy}"

    def honest(self) -> Replica:
        return open_replica(self.ref(), self._config())

    @contextmanager
    def lying(self, folder: str, content: bytes, *, opened: bool) -> Iterator[Replica]:
        """The replica with one byte of ``content`` (an object under ``folder/``) flipped:
        wherever a local replica keeps it, or in every answer of the gateway for a path
        under ``folder/``. ``opened``: the lie starts once the replica is open (what it
        checked when opening was true), else before (the open may refuse it already)."""
        remote = self.kind in ("ipfs-gateway", "arweave-gateway")
        with lying_proxy(self.upstream) as proxy:
            config = self._config(proxy.url if remote else None)
            ref = self.ref()
            if not opened:
                self._flip(proxy, folder, content)
            replica = open_replica(ref, config)
            if opened:
                self._flip(proxy, folder, content)
            yield replica

    def _flip(self, proxy: LyingProxy, folder: str, content: bytes) -> None:
        if self.kind in ("ipfs-gateway", "arweave-gateway"):
            proxy.flip = f"/{folder}/"
        else:
            flip_stored_bytes(self._local_copy(), content)


def flip_stored_bytes(where: Path, content: bytes) -> None:
    """Flip one byte in the middle of ``content`` wherever a file below ``where`` holds it
    (a dataset's own file, a CAR's raw leaf, a bundle item's data)."""
    probe = content[: min(64, len(content))]
    hits = 0
    for path in sorted(p for p in where.rglob("*") if p.is_file()):
        data = bytearray(path.read_bytes())
        at = data.find(probe)
        if at < 0 or data[at : at + len(content)] != content:
            continue
        data[at + len(content) // 2] ^= 0x01
        path.chmod(0o644)
        path.write_bytes(bytes(data))
        hits += 1
    assert hits, f"no file below {where} holds the object's bytes"


@pytest.fixture(params=KINDS)
def opened(request, world: World, tmp_path: Path, ipfs_node, arlocal) -> Opened:
    return Opened(request.param, world, tmp_path, ipfs_node, arlocal)


def layout_files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and p.relative_to(root).parts[0] in ("blocks", "refs", "data", "checkpoints")
    }


def snapshot(root: Path) -> dict[str, bytes]:
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def objects_of(ds: Path) -> list[DatasetObject]:
    return list(iter_objects(walk_chain(DatasetReader.open(ds))))


def a_data_file(ds: Path) -> DatasetObject:
    return max((o for o in objects_of(ds) if o.kind == "data"), key=lambda o: o.size or 0)


def test_head_blocks_and_objects_are_the_published_ones(opened: Opened, world: World) -> None:
    replica = opened.honest()
    local = DatasetReader.open(world.ds)
    assert replica.head() == local.head()
    for entry in walk_chain(local):
        assert hash_bytes(replica.read_block(entry.hash)) == entry.hash
    for obj in objects_of(world.ds):
        assert read_object_verified(replica, obj) == obj.size
    result = pull_dataset(replica, opened.tmp / "pulled")
    assert result.head == local.head()
    assert layout_files(opened.tmp / "pulled") == layout_files(world.ds)


# Replicas that keep the blocks they verified while opening (the IPFS gateway replica's
# bounded block cache: resolving the name walks the chain): a lie told after the open
# reaches no read of those blocks, and the pull gives the published bytes.
VERIFIED_BLOCK_CACHE = {"ipfs-gateway"}
# Replicas whose first pull streams each folder whole (a trustless gateway's CAR of the
# folder's DAG, every block checked against its CID): the lie told in answers by path
# reaches no read of the pull, which gives the published bytes.
FOLDER_STREAMS = {"ipfs-gateway"}


def test_a_flipped_block_byte_is_a_hash_mismatch(opened: Opened, world: World) -> None:
    # Under an open replica: the read itself checks, whatever the open checked.
    local = DatasetReader.open(world.ds)
    content = local.read_block_bytes(local.head())
    dest = opened.tmp / "dest"
    with opened.lying("blocks", content, opened=True) as replica:
        if opened.kind in VERIFIED_BLOCK_CACHE:
            pull_dataset(replica, dest)
            assert layout_files(dest) == layout_files(world.ds)
            return
        with pytest.raises(HashMismatch):
            pull_dataset(replica, dest)
    assert snapshot(dest) == {}


def test_a_flipped_data_byte_is_a_hash_mismatch(opened: Opened, world: World) -> None:
    obj = a_data_file(world.ds)
    content = (world.ds / obj.path).read_bytes()
    dest = opened.tmp / "dest"
    with opened.lying("data", content, opened=True) as replica:
        with pytest.raises(HashMismatch):
            read_object_verified(replica, obj)
        if opened.kind in FOLDER_STREAMS:
            pull_dataset(replica, dest)
            assert layout_files(dest) == layout_files(world.ds)
            return
        with pytest.raises(HashMismatch):
            pull_dataset(replica, dest)
    assert layout_files(dest) == {}


@pytest.mark.parametrize("folder", ["blocks", "data"])
def test_a_flipped_byte_before_the_open_is_refused(
    opened: Opened, world: World, folder: str
) -> None:
    # A replica that checks more when it opens (a bundle's item signatures, a CAR's
    # blocks) may refuse there; either way nothing reaches DEST.
    local = DatasetReader.open(world.ds)
    if folder == "blocks":
        content = local.read_block_bytes(local.head())
    else:
        content = (world.ds / a_data_file(world.ds).path).read_bytes()
    dest = opened.tmp / "dest"
    refused = (IntegrityError, SignatureError)
    if opened.kind in FOLDER_STREAMS:
        # the open streams blocks/, the pull data/: no read by path
        with opened.lying(folder, content, opened=False) as replica:
            pull_dataset(replica, dest)
        assert layout_files(dest) == layout_files(world.ds)
        return
    with pytest.raises(refused), opened.lying(folder, content, opened=False) as replica:
        pull_dataset(replica, dest)
    assert layout_files(dest) == {}


def test_reads_are_bounded_by_the_recorded_size(opened: Opened, world: World) -> None:
    replica = opened.honest()
    obj = a_data_file(world.ds)
    assert obj.size is not None and obj.size > 1000
    small = obj.size // 4
    given = 0
    try:
        for chunk in replica.stream_object(obj.kind, obj.hash, small):
            given += len(chunk)
            assert given <= small + 1, f"{opened.kind}: {given} bytes, asked at most {small}"
    except (IntegrityError, FormatError):
        pass  # refusing the answer is as good as cutting it
    assert given <= small + 1
    with pytest.raises((IntegrityError, FormatError), match=r"(larger|longer) than"):
        read_object_verified(replica, replace(obj, size=small))


def test_an_object_it_does_not_hold_is_not_found(opened: Opened) -> None:
    replica = opened.honest()
    missing = hash_bytes(b"no replica holds this object " + opened.kind.encode())
    with pytest.raises(NotFound):
        b"".join(replica.stream_object("data", missing, 100))
    with pytest.raises(NotFound):
        replica.read_block(missing)


def test_every_replica_kind_is_in_the_suite() -> None:
    # A new replica class must be added here and to KINDS (a class nobody opens here is
    # a class the contract does not cover).
    covered = {
        "LocalReplica", "CarDirReplica", "BundleDirReplica", "IpfsReplica", "ArweaveReplica",
    }  # fmt: skip
    # Encrypted forms wrap these (DecryptingReplica, PrivateDriveReplica): their own tests
    # (test_ipfs_encrypted.py, test_arweave_arfs_private.py) check the decrypted reads.
    wrappers = {"DecryptingReplica", "PrivateDriveReplica"}
    protocols = {"Replica", "EncryptedReplica"}
    found = set()
    repo = Path(__file__).resolve().parents[2]
    for base in (repo / "odfweb3" / "read", repo / "adapters"):
        for path in base.rglob("*.py"):
            for line in path.read_text().splitlines():
                if line.startswith("class ") and line.split("(")[0].split(":")[0].endswith(
                    "Replica"
                ):
                    found.add(line[6:].split("(")[0].split(":")[0])
    assert found == covered | wrappers | protocols
