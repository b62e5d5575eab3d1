"""The importer's hashing workers change nothing but speed: same CIDs, same blocks, same order.

Golden digests below were produced by the single-threaded importer as it was before the
hashing workers were added (``unixfs.py``, now ``publish/unixfs_import.py``, at 1818379, which also
passes the Kubo vectors in ``test_unixfs.py``): SHA-256 of the whole CAR written with
``CarWriter`` as the offline publish path writes it, and SHA-256 over ``cid + block`` in
sink order for a file with a three-level balanced DAG.
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from odfweb3_ipfs.formats.car import CarWriter, iter_car
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.publish.unixfs_import import (
    DEFAULT_CHUNK_SIZE,
    auto_hash_threads,
    import_file,
    import_tree,
)

from .kubo_testdata import DeterministicStream

C = DEFAULT_CHUNK_SIZE
# Sizes around chunk boundaries; "d" and "sub/e" are multi-chunk (hashed on the workers).
SIZES = {"empty": 0, "one": 1, "a": C - 1, "b": C, "c": C + 1, "d": 3 * C + 5, "sub/e": 2 * C}

TREE_CAR_SHA256 = {
    1: ("655bc60546e2a3b9bc760303549e4ed2c6e085791d1b1644d032ec69d65882e0", 2098764),
    0: ("3208b63e2e0b97aa88d3f40349e840c117fbcefd5362f49140fd15ef9dcca8c0", 2098834),
}
LEVELS_FILE = {  # 60,000 bytes, chunk_size 1000, max_links 4: 60 leaves, three levels
    1: (
        "bafybeicsu2zn5cvxb2rptmtvlumho3mcdqtp2baf3btaagngdysaul37ji",
        "dcf277e22efbd6325bf16a167bdc8eb1c12d03cab9e110dfc479573db3baf6f7",
    ),
    0: (
        "QmVi2H9DeGP3XLwXqc5jfzVa1emngx9rmT3QsfgLtrt1Z5",
        "ba894c4f56bdd994a142cd9d0ee412a7a820a8c9a25fbdbd0b0997885c3c734f",
    ),
}


def _content(size: int, seed: str) -> bytes:
    return io.BufferedReader(DeterministicStream(size, seed)).read()


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tree")
    for name, size in SIZES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_content(size, name))
    (root / "empty-dir").mkdir()
    return root


class ShortReads(io.RawIOBase):
    """A pipe-like stream: at most 700 bytes per read."""

    def __init__(self, data: bytes) -> None:
        self._io = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        chunk = self._io.read(min(len(buffer), 700))
        memoryview(buffer)[: len(chunk)] = chunk
        return len(chunk)


@pytest.mark.parametrize("threads", [0, 1, 2, 3])
@pytest.mark.parametrize("version", [1, 0])
def test_tree_car_bytes_match_single_threaded_importer(
    tree: Path, version: int, threads: int
) -> None:
    out = io.BytesIO()
    writer = CarWriter.with_root_later(out, cid_version=version)
    node = import_tree(tree, cid_version=version, sink=writer, threads=threads)
    writer.set_root(node.cid)
    car = out.getvalue()
    assert (hashlib.sha256(car).hexdigest(), len(car)) == TREE_CAR_SHA256[version]
    roots, blocks = iter_car(io.BytesIO(car))  # re-verifies every block's CID
    assert roots == [node.cid]
    assert sum(1 for _ in blocks) == writer.blocks_written


@pytest.mark.parametrize("short_reads", [False, True])
@pytest.mark.parametrize("threads", [0, 1, 2])
@pytest.mark.parametrize("version", [1, 0])
def test_multilevel_file_blocks_in_same_order(
    version: int, threads: int, short_reads: bool
) -> None:
    data = _content(60000, "levels")
    stream = ShortReads(data) if short_reads else io.BytesIO(data)
    seen = hashlib.sha256()
    count = [0]

    def sink(cid: Cid, block: bytes) -> None:
        assert type(block) is bytes  # the sink may keep it: never a reused buffer
        seen.update(cid.raw)
        seen.update(block)
        count[0] += 1

    node = import_file(
        stream,
        cid_version=version,
        chunk_size=1000,
        max_links=4,
        sink=sink,
        threads=threads,
    )
    assert (str(node.cid), seen.hexdigest()) == LEVELS_FILE[version]
    assert node.size == len(data)
    assert count[0] == 60 + 15 + 4 + 1  # leaves + three levels of parents


def _hash_workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("unixfs-hash")]


def test_files_of_a_few_batches_are_hashed_inline() -> None:
    # Two batches of 4 chunks stay on the importing thread (a worker would cost more
    # than it saves); from the third batch on a worker hashes.
    during: list[bool] = []

    def sink(cid: Cid, block: bytes) -> None:
        during.append(bool(_hash_workers()))

    import_file(io.BytesIO(_content(8 * 1000, "small")), chunk_size=1000, sink=sink, threads=1)
    assert during and not any(during)
    during.clear()
    import_file(io.BytesIO(_content(20 * 1000, "big")), chunk_size=1000, sink=sink, threads=1)
    assert any(during)
    assert _hash_workers() == []


def test_sink_error_propagates_and_workers_stop() -> None:
    class Full(Exception):
        pass

    calls = [0]

    def sink(cid: Cid, block: bytes) -> None:
        calls[0] += 1
        if calls[0] == 3:
            raise Full("disk full")

    with pytest.raises(Full):
        import_file(io.BytesIO(_content(10 * 4096, "err")), chunk_size=4096, sink=sink, threads=2)
    assert calls[0] == 3
    assert _hash_workers() == []


def test_read_error_propagates_and_workers_stop() -> None:
    class Broken(io.RawIOBase):
        def __init__(self) -> None:
            self.reads = 0

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: Any) -> int:
            self.reads += 1
            if self.reads > 5:
                raise OSError("device gone")
            memoryview(buffer)[:] = bytes(len(buffer))
            return len(buffer)

    with pytest.raises(OSError, match="device gone"):
        import_file(Broken(), chunk_size=4096, threads=2)
    assert _hash_workers() == []


def test_negative_threads_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="threads"):
        import_file(io.BytesIO(b"x"), threads=-1)
    with pytest.raises(ValueError, match="threads"):
        import_tree(tmp_path, threads=-1)


# --- CarWriter as the sink ----------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 0])
def test_car_writer_as_the_sink_writes_the_same_bytes(tree: Path, version: int) -> None:
    out = io.BytesIO()
    writer = CarWriter.with_root_later(out, cid_version=version)
    node = import_tree(tree, cid_version=version, sink=writer)
    writer.set_root(node.cid)
    car = out.getvalue()
    assert (hashlib.sha256(car).hexdigest(), len(car)) == TREE_CAR_SHA256[version]
    assert writer.bytes_written == len(car)


def test_auto_hash_threads_wants_a_second_core() -> None:
    assert auto_hash_threads(cpus=2) == 1
    assert auto_hash_threads(cpus=8) == 1
    assert auto_hash_threads(cpus=1) == 0  # a worker would share our core
    assert auto_hash_threads() == (1 if len(os.sched_getaffinity(0)) >= 2 else 0)


def test_default_threads_give_the_same_car(tree: Path) -> None:
    out = io.BytesIO()
    writer = CarWriter.with_root_later(out)
    writer.set_root(import_tree(tree, sink=writer).cid)  # threads=None: decided by load
    assert hashlib.sha256(out.getvalue()).hexdigest() == TREE_CAR_SHA256[1][0]


@pytest.mark.parametrize("version", [1, 0])
def test_worker_keeps_memory_bounded(version: int) -> None:
    class Pattern(io.RawIOBase):
        def __init__(self, size: int) -> None:
            self.left = size
            self.block = bytes(range(256)) * 4096

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: Any) -> int:
            n = min(len(buffer), self.left, len(self.block))
            memoryview(buffer)[:n] = self.block[:n]
            self.left -= n
            return n

    seen = [0]

    def sink(cid: Cid, data: bytes) -> None:
        seen[0] += len(data)

    tracemalloc.start()
    try:
        node = import_file(Pattern(60_000_000), cid_version=version, sink=sink, threads=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert seen[0] == node.tsize and node.size == 60_000_000
    assert peak < 4 * 1024 * 1024, f"peak {peak} bytes: chunks in flight are not bounded"
