"""pull and verify from ``car:DIR``: each layout folder listed once (entry by entry, under a
lock), the completeness walk counting the raw leaves the CAR index holds without reading
them again, a folder that names one object twice refused, and two fetch threads for a
replica on this machine's disk."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3.errors import FormatError, HashMismatch
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.layout import ObjectKind
from odfweb3.odf.multihash import hash_bytes, multihash_to_str
from odfweb3.odf.validate import validate_dataset
from odfweb3.read.pull import pull_dataset
from odfweb3.read.replica import LOCAL_READ_THREADS
from odfweb3_ipfs.formats import dagpb
from odfweb3_ipfs.formats.cid import CODEC_DAG_PB, CODEC_RAW, Cid
from odfweb3_ipfs.formats.unixfs_data import DataType, UnixFSData, encode_unixfs_data
from odfweb3_ipfs.formats.unixfs_reader import (
    count_dag,
    iter_dag,
    iter_directory,
    iter_directory_raw,
    list_directory,
    read_file,
)
from odfweb3_ipfs.read import car_replica
from odfweb3_ipfs.read.car_replica import CarDirReplica, _by_multihash, check_car_dir


def _dir(entries: list[tuple[str, Cid]], blocks: dict[bytes, bytes]) -> Cid:
    links = [dagpb.PBLink(cid, name.encode(), 1) for name, cid in entries]
    data = dagpb.encode_pbnode(links, encode_unixfs_data(UnixFSData(DataType.DIRECTORY)))
    cid = Cid.of_block(data, codec=CODEC_DAG_PB)
    blocks[cid.raw] = data
    return cid


def _leaf(data: bytes, blocks: dict[bytes, bytes]) -> Cid:
    cid = Cid.of_block(data, codec=CODEC_RAW)
    blocks[cid.raw] = data
    return cid


def test_the_completeness_walk_counts_the_raw_leaves_the_caller_holds_without_reading_them() -> (
    None
):
    blocks: dict[bytes, bytes] = {}
    leaves = [_leaf(bytes([i]) * 100, blocks) for i in range(5)]
    root = _dir([(f"f{i}", c) for i, c in enumerate(leaves)], blocks)
    read: list[Cid] = []

    def get(cid: Cid) -> bytes:
        read.append(cid)
        return blocks[cid.raw]

    assert len(list(iter_dag(root, get, has=lambda c: c.raw in blocks))) == 6
    assert read == [root]  # the directory node only: its links are walked
    read.clear()
    assert len(list(iter_dag(root, get))) == 6
    assert len(read) == 6  # without ``has`` every block is read and verified
    read.clear()
    # count_dag (a CAR directory's check): the same count, ``has`` asked of CID bytes
    assert count_dag(root, get, has=lambda raw: raw in blocks) == 6
    assert read == [root]


def test_a_listing_read_entry_by_entry_refuses_a_name_twice() -> None:
    blocks: dict[bytes, bytes] = {}
    body = b"data file"
    name = multihash_to_str(hash_bytes(body))
    twice = _dir([(name, _leaf(body, blocks)), (name, _leaf(b"other", blocks))], blocks)

    def get(cid: Cid) -> bytes:
        return blocks[cid.raw]

    assert [n for n, _ in iter_directory(twice, get)] == [name, name]
    with pytest.raises(FormatError, match="two entries named"):
        list_directory(twice, get)
    with pytest.raises(FormatError, match="two entries named"):
        _by_multihash(twice, iter_directory_raw(twice, get))


def _car(tmp_path: Path) -> tuple[Path, Path]:
    ds = create_root_dataset(tmp_path / "ds", blocks=12, data_bytes=24_000, seed=61).path
    out = tmp_path / "out"
    env = {"ODFWEB3_KEYSTORE": str(tmp_path / "keys"), "HOME": str(tmp_path)}
    assert main(["-q", "publish", str(ds), "--to", f"car:{out}"], env=env) == 0
    return ds, out


def test_a_car_dir_pull_lists_each_folder_once_on_two_threads_whatever_parallel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds, out = _car(tmp_path)
    replica = CarDirReplica(check_car_dir(out), f"car:{out}", out)
    threads: set[str] = set()
    listed: list[Cid] = []
    real_stream = CarDirReplica.stream_object
    real_iter = car_replica.iter_directory_raw

    def stream(
        self: CarDirReplica, kind: ObjectKind, mh: bytes, size: int | None
    ) -> Iterator[bytes]:
        threads.add(threading.current_thread().name)
        return real_stream(self, kind, mh, size)

    def listing(cid: Cid, get: object) -> Iterator[tuple[str, bytes]]:
        listed.append(cid)
        return real_iter(cid, get)  # type: ignore[arg-type]

    monkeypatch.setattr(CarDirReplica, "stream_object", stream)
    monkeypatch.setattr(car_replica, "iter_directory_raw", listing)
    res = pull_dataset(replica, tmp_path / "dest", parallel=8)
    monkeypatch.undo()
    assert res.objects_fetched == res.objects.total == 16 + 12 + 12  # 4 blocks before the data
    assert 1 <= len(threads) <= LOCAL_READ_THREADS
    # each folder listed once, by the first thread to ask; the others found it listed
    assert len(listed) == len(set(listed)) == 3
    assert len(replica._folders) == 3
    assert validate_dataset(tmp_path / "dest", deep=True).ok
    for folder in ("blocks", "data", "checkpoints"):
        for f in (ds / folder).iterdir():
            assert (tmp_path / "dest" / folder / f.name).read_bytes() == f.read_bytes()


def test_a_raw_leaf_is_read_whole_verified_and_bounded() -> None:
    """read_file of one raw leaf (every small object of a publish): its bytes, checked
    against the CID, refused above max_size or with no block allowed, nothing for an
    empty leaf, as the walk of a many-block file reads each of its leaves."""
    blocks: dict[bytes, bytes] = {}
    leaf, empty = _leaf(b"x" * 100, blocks), _leaf(b"", blocks)

    def get(cid: Cid) -> bytes:
        return blocks[cid.raw]

    assert list(read_file(leaf, get, max_size=100)) == [b"x" * 100]
    assert list(read_file(leaf, get)) == [b"x" * 100]
    assert list(read_file(empty, get, max_size=0)) == []
    with pytest.raises(FormatError, match="larger than the 99 bytes"):
        list(read_file(leaf, get, max_size=99))
    with pytest.raises(FormatError, match="more than the 0 blocks"):
        list(read_file(leaf, get, max_blocks=0))
    blocks[leaf.raw] = b"y" * 100
    with pytest.raises(HashMismatch):
        list(read_file(leaf, get, max_size=100))
