"""The DAG build gives each plain data file's SHA-256 (the discovery documents' checksum)
from the import itself: a one-chunk raw-leaf file from its CID, any other hashed as it is
checked; the documents read a file only when the build did not import it, once for both
(``local_sha256`` remembers what it read)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from odfweb3.descriptor.croissant import local_sha256
from odfweb3.errors import HashMismatch
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.chain import ObjectList, iter_objects, walk_chain
from odfweb3.odf.layout import DatasetReader
from odfweb3_ipfs.publish.cid_profile import DEFAULT_PROFILE, UNIXFS_V0_2015, UNIXFS_V1_2025
from odfweb3_ipfs.publish.dataset_dag import build_dataset_dag
from odfweb3_ipfs.publish.pipeline import _sha256_known_first


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sha") / "ds"
    # 3 data files of ~400 KB (more than one 256 KiB chunk), then 4 small ones
    create_root_dataset(root, blocks=3, data_bytes=1_200_000, seed=41, fsync=False)
    append_blocks(root, 4, data_bytes=8000, seed=42, fsync=False)
    return root


@pytest.mark.parametrize("profile", [DEFAULT_PROFILE, UNIXFS_V0_2015, UNIXFS_V1_2025])
def test_every_data_file_sha256_from_the_import(dataset: Path, profile: object) -> None:
    reader = DatasetReader.open(dataset)
    head = reader.head()
    objects = list(iter_objects(walk_chain(reader, head)))
    data = [o for o in objects if o.kind == "data"]
    sizes = sorted(o.size or 0 for o in data)
    assert sizes[0] < 262144 < sizes[-1]  # both paths: the CID's digest and the tap
    dag = build_dataset_dag(reader, head, objects, {}, profile=profile)  # type: ignore[arg-type]
    expected = {o.hash: hashlib.sha256((dataset / o.path).read_bytes()).hexdigest() for o in data}
    assert {o.hash: dag.data_sha256.get(o.hash) for o in data} == expected
    # A block or a checkpoint is no data file: its CID's digest is never given as one.
    others = [o for o in objects if o.kind != "data"]
    assert others and all(dag.data_sha256.get(o.hash) is None for o in others)


def test_a_corrupt_data_file_records_no_digest(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    create_root_dataset(root, blocks=1, data_bytes=600_000, seed=43, fsync=False)
    reader = DatasetReader.open(root)
    head = reader.head()
    objects = list(iter_objects(walk_chain(reader, head)))
    (victim,) = [o for o in objects if o.kind == "data"]
    raw = bytearray((root / victim.path).read_bytes())
    raw[-1] ^= 1  # same size, other bytes: its SHA3-256 check fails
    (root / victim.path).write_bytes(bytes(raw))
    with pytest.raises(HashMismatch):
        build_dataset_dag(reader, head, objects, {})


def test_documents_read_a_file_only_when_not_known_and_once(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    create_root_dataset(root, blocks=2, data_bytes=5000, seed=44, fsync=False)
    reader = DatasetReader.open(root)
    data = [o for o in iter_objects(walk_chain(reader, reader.head())) if o.kind == "data"]
    known, other = data
    expected = hashlib.sha256((root / other.path).read_bytes()).hexdigest()
    sha256_of = _sha256_known_first({known.hash: "k"}, local_sha256(reader))
    (root / known.path).unlink()  # known: never read
    assert sha256_of(known.hash) == "k"
    assert sha256_of(other.hash) == expected
    (root / other.path).unlink()  # read once: the DCAT document asks again after Croissant
    assert sha256_of(other.hash) == expected
    assert local_sha256(reader)(other.hash) is None  # a fresh reader would read it: gone


@pytest.mark.parametrize("profile", [DEFAULT_PROFILE, UNIXFS_V0_2015])
def test_a_build_over_the_packed_list_is_the_build_over_a_list(
    dataset: Path, profile: object
) -> None:
    """Over an ObjectList (a first publish) the new links are kept by position: the same
    blocks in the same order, the same links and checksums as a build over a plain list."""
    reader = DatasetReader.open(dataset)
    head = reader.head()
    objects = list(iter_objects(walk_chain(reader, head)))
    builds = []
    for given in (objects, ObjectList(objects)):
        blocks: list[tuple[bytes, bytes]] = []
        dag = build_dataset_dag(
            reader,
            head,
            given,
            {},
            profile=profile,  # type: ignore[arg-type]
            sink=lambda cid, block, _b=blocks: _b.append((cid.raw, block)),
        )
        builds.append((dag, blocks))
    (plain, plain_blocks), (packed, packed_blocks) = builds
    assert packed.root == plain.root and packed_blocks == plain_blocks
    assert packed.shards == plain.shards
    assert list(packed.objects) == list(plain.objects) == [o.path for o in objects]
    assert all(packed.objects[o.path] == plain.objects[o.path] for o in objects)
    assert all(packed.data_sha256.get(o.hash) == plain.data_sha256.get(o.hash) for o in objects)
