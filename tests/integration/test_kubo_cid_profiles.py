"""CID profiles on Kubo v0.43.1: our CIDs are Kubo's own.

For each of Kubo's UnixFS import profiles (``unixfs-v0-2015``, ``unixfs-v1-2025``) a Kubo repo is
made with ``ipfs init --profile=test,NAME`` (so the parameters come from Kubo's own profile
definitions, not from a copy of them here). One dataset holds every shape that matters:

- ``blocks/``, ``checkpoints/`` and ``data/`` with 2,600+ entries each: HAMT-sharded under both
  the ``links`` (v0-2015) and the ``block`` (v1-2025) size estimation;
- a data file of 1 GiB + 1 MiB + 7 bytes: more than 1024 chunks of 1 MiB (and 174 of 256 KiB),
  so both profiles need a second level of internal nodes;
- thousands of files below one chunk, and one empty data file.

Checked: ``publish --to ipfs`` with the profile gives the root and every object's CID that
``ipfs add -r --only-hash`` prints for the same directory, the node holds the root pinned, and
Kubo's own ``ipfs add -r`` of the directory afterwards adds no block the node did not already
have (our CAR, imported by ``dag/import``, holds exactly Kubo's blocks).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from odfweb3.crypto.keystore import Keystore
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import StateStore
from odfweb3_ipfs.client.kubo import KuboClient
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.formats.dagpb import decode_pbnode
from odfweb3_ipfs.formats.unixfs_data import DataType, decode_unixfs_data
from odfweb3_ipfs.formats.unixfs_reader import list_directory
from odfweb3_ipfs.publish.cid_profile import PROFILES
from odfweb3_ipfs.publish.node_target import IpfsNodeTarget
from tests.support.kubo import KUBO_BIN, KuboNode, added_cids, kubo_env, start_kubo

BIG = (1 << 30) + (1 << 20) + 7  # > 1024 chunks of 1 MiB
SMALL_FILES = 2600  # > 256 KiB of directory under either size estimation


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    base = tmp_path_factory.mktemp("profiles")
    root = base / "ds"
    create_root_dataset(root, blocks=1, data_bytes=0, seed=3, fsync=False)  # the smallest file
    append_blocks(root, SMALL_FILES, data_bytes=SMALL_FILES * 300, seed=4, fsync=False)
    append_blocks(root, 1, data_bytes=BIG, seed=5, fsync=False)
    yield root
    # 1.1 GB: gone when the module is done, not at the end of the run (the suite's peak disk)
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(params=["unixfs-v0-2015", "unixfs-v1-2025"])
def profiled_kubo(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, KuboNode]]:
    """A Kubo node whose repo was made with Kubo's own profile of that name."""
    name = str(request.param)
    repo = tmp_path / "kubo" / "repo"
    repo.mkdir(parents=True)
    subprocess.run(
        [str(KUBO_BIN), "init", f"--profile=test,{name}", "--empty-repo"],
        env={**kubo_env(repo)},
        check=True,
        capture_output=True,
        timeout=120,
    )
    with start_kubo(tmp_path / "kubo") as node:
        yield name, node


def kubo_add(node: KuboNode, path: Path, *, only_hash: bool) -> dict[str, str]:
    """`ipfs add -r` of `path`: relative path -> CID for every file and directory ("" = root)."""
    args = ["add", "-r", "--hidden", "--pin=false"] + (["--only-hash"] if only_hash else [])
    out = node.cli(*args, str(path), timeout=600).stdout
    return added_cids(out, path)


def local_blocks(node: KuboNode) -> set[str]:
    return set(node.cli("refs", "local", timeout=300).stdout.split())


def test_publish_with_kubo_profile_gives_kubo_cids(dataset, profiled_kubo, tmp_path):
    name, node = profiled_kubo
    profile = PROFILES[name]
    fresh = local_blocks(node)
    expected = kubo_add(node, dataset, only_hash=True)
    assert local_blocks(node) == fresh  # --only-hash stored nothing

    with KuboClient(node.api_url, timeout=600) as client:
        target = IpfsNodeTarget(
            client,
            Keystore(tmp_path / "keys"),
            StateStore(tmp_path / "state"),
            profile=profile,
            tmp_dir=tmp_path,
        )
        done = publish_dataset(dataset, target)
        root = done.upload.locator
        assert root == expected[""]
        assert Cid.decode(root).version == profile.cid_version
        objects = done.upload.objects
        assert objects.keys() | {"refs/head"} == {p for p in expected if p.count("/") == 1}
        for path, link in objects.items():
            assert link["cid"] == expected[path], path
        assert client.has_pin(Cid.decode(root))

        # The shapes the test is for are really there (read back from the node's blocks).
        def get(cid: Cid) -> bytes:
            return node.rpc("block/get", cid.encode()).content

        top = list_directory(Cid.decode(root), get)
        for folder in ("blocks", "checkpoints", "data"):
            assert top[folder].encode() == expected[folder]
            meta = decode_unixfs_data(decode_pbnode(get(top[folder])).data or b"")
            assert meta.type == DataType.HAMT_SHARD, f"{folder}/ is not sharded under {name}"
        sizes = {p: int(link["size"]) for p, link in objects.items()}
        # > 1024 chunks of 1 MiB: the example's Parquet file holds BIG bytes of payload and
        # its footer (a data file is never empty now: the smallest is a Parquet footer)
        assert max(sizes.values()) >= BIG

    before = local_blocks(node)
    assert len(before - fresh) >= len(objects) + 4  # what our publish put on the node
    assert kubo_add(node, dataset, only_hash=False) == expected
    assert local_blocks(node) == before, "Kubo's own add stored blocks our CAR did not have"
