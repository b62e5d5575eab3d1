"""A first pull through a trustless gateway streams each folder as one CAR, and trusts none of it.

The session's Kubo node serves a dataset (fresh seed and key for this module) published to
it; the pull goes through tests/support/lying_proxy.py in front of the node's gateway, which
counts the requests and, for the hostile cases, rewrites the CAR answers of
``?format=car&dag-scope=all`` (a fault a real node cannot be made to produce):

- honest: the pulled dataset is the published one, and the chain of 40 blocks took far
  fewer requests than one a block (blocks/, checkpoints/, data/ came as one CAR each), by
  path and trustless;
- a byte flipped inside a block of the CAR, a block the DAG does not link put first, the
  answer cut in the middle, or CAR answers refused (404): the pull still gives the
  published dataset, every block it used checked against its CID (what the stream lacked
  read block by block), and the spool is gone afterwards;
- a second (incremental) pull streams blocks/ (the name's check walks the whole chain)
  and reads only the new objects, one by one (no data/ or checkpoints/ stream).
"""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path

import pytest

from odfweb3.crypto.keystore import Keystore
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.validate import validate_dataset
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import StateStore
from odfweb3.read.pull import pull_dataset
from odfweb3_ipfs.client.gateway import IpfsGateway
from odfweb3_ipfs.client.kubo import KuboClient
from odfweb3_ipfs.formats.car import CarWriter, iter_car
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.formats.libp2p_keys import IpnsName, public_key_bytes
from odfweb3_ipfs.publish.node_target import IpfsNodeTarget
from odfweb3_ipfs.read.access import IpfsAccess
from odfweb3_ipfs.read.names import open_ipfs_ref
from tests.support.lying_proxy import lying_proxy

BLOCKS = 40
WHOLE = "dag-scope=all"


def _files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.relative_to(root).parts[0] in ("blocks", "data", "checkpoints", "refs")
    }


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, ipfs_node) -> dict[str, object]:
    root = tmp_path_factory.mktemp("pull-gw-stream")
    built = create_root_dataset(root / "ds", blocks=BLOCKS, data_bytes=BLOCKS * 600, seed=7431)
    assert built.keypair is not None
    keystore = Keystore(root / "keys")
    did = str(built.keypair.dataset_id)
    keystore.store(did, built.keypair.signing_key())
    target = IpfsNodeTarget(
        KuboClient(ipfs_node.api_url),
        keystore,
        StateStore(root / "state"),
        gateway_url=ipfs_node.gateway_url,
        tmp_dir=root,
    )
    publish_dataset(built.path, target)
    name = IpnsName.from_public_key(public_key_bytes(keystore.load(did)))
    return {
        "ds": built.path,
        "ref": f"ipns://{name}",
        "target": target,
        "gw": ipfs_node.gateway_url,
    }


def _pull(url: str, ref: str, dest: Path, *, trustless: bool) -> None:
    access = IpfsAccess(IpfsGateway(url), trustless=trustless)
    replica, _ = open_ipfs_ref(ref, access)
    pull_dataset(replica, dest, parallel=4)


@pytest.fixture(autouse=True)
def _own_tempdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The spools go to the temp directory: a test's own, so a pull elsewhere on the machine
    # (another test process, a benchmark) can neither fail nor hide the checks below.
    own = tmp_path / "tmp"
    own.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(own))


def _spools() -> set[str]:
    return {n for n in os.listdir(tempfile.gettempdir()) if n.startswith("odfweb3-spool-")}


@pytest.mark.parametrize("trustless", [False, True])
def test_a_first_pull_streams_each_folder(world, tmp_path: Path, trustless: bool) -> None:
    before = _spools()
    with lying_proxy(str(world["gw"])) as proxy:
        _pull(proxy.url, str(world["ref"]), tmp_path / "dest", trustless=trustless)
        asked = list(proxy.requests)
    assert _files(tmp_path / "dest") == _files(Path(str(world["ds"])))
    assert validate_dataset(tmp_path / "dest", deep=True).ok
    streams = [r for r in asked if WHOLE in r]
    assert len(streams) == 3, asked  # blocks/, checkpoints/, data/
    # one request a block would be 40 for the chain alone, and 80 more for its objects
    assert len(asked) < BLOCKS, asked
    assert _spools() <= before  # the spool is removed


def _cut(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _flip_a_block(data: bytes) -> bytes:
    out = bytearray(data)
    out[len(out) * 2 // 3] ^= 1  # inside some block past the header
    return bytes(out)


def _foreign_first(data: bytes) -> bytes:
    roots, blocks = iter_car(io.BytesIO(data))
    evil = b"a block the DAG does not link"
    buf = io.BytesIO()
    writer = CarWriter(buf, roots[0])
    writer.write_block(Cid.of_block(evil), evil)
    for cid, block in blocks:
        writer.write_block(cid, block)
    return buf.getvalue()


@pytest.mark.parametrize("lie", ["cut", "flip", "foreign", "refused"])
def test_a_lying_or_failing_stream_leaves_only_verified_blocks(
    world, tmp_path: Path, lie: str
) -> None:
    edits = {"cut": _cut, "flip": _flip_a_block, "foreign": _foreign_first}
    before = _spools()
    with lying_proxy(str(world["gw"])) as proxy:
        if lie == "refused":
            proxy.not_found = (WHOLE,)
        else:
            fn = edits[lie]
            proxy.edit = lambda method, path, data: fn(data) if WHOLE in path else data
        _pull(proxy.url, str(world["ref"]), tmp_path / "dest", trustless=True)
        asked = list(proxy.requests)
    assert _files(tmp_path / "dest") == _files(Path(str(world["ds"])))
    assert validate_dataset(tmp_path / "dest", deep=True).ok
    # what the streams lacked was read block by block
    assert sum(1 for r in asked if "format=raw" in r) > 3
    assert _spools() <= before


def test_an_incremental_pull_reads_only_the_new_blocks(world, tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    _pull(str(world["gw"]), str(world["ref"]), dest, trustless=True)
    ds = Path(str(world["ds"]))
    append_blocks(ds, 1, data_bytes=600, seed=7432)
    publish_dataset(ds, world["target"])
    with lying_proxy(str(world["gw"])) as proxy:
        _pull(proxy.url, str(world["ref"]), dest, trustless=True)
        asked = list(proxy.requests)
    assert len([r for r in asked if WHOLE in r]) == 1, asked  # blocks/ only
    # the new objects and the folders' listings: far fewer than a request a block
    assert len([r for r in asked if "format=raw" in r]) < BLOCKS // 2, asked
    assert _files(dest) == _files(ds)
    assert DatasetReader(dest).head() == DatasetReader(ds).head()
