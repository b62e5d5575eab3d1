"""The system-call-saving read paths (``open_fd``, ``hash_fd``, block reads, pipelined deep
validation) give the same answers as the plain ones, and keep refusing what they refused."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from odfweb3.errors import FormatError, NotFound
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.chain import iter_objects, walk_chain
from odfweb3.odf.layout import MAX_BLOCK_SIZE, DatasetReader
from odfweb3.odf.multihash import SHA2_256, SHA3_256, hash_bytes, hash_fd
from odfweb3.odf.validate import validate_dataset


@pytest.fixture
def ds(tmp_path: Path) -> Path:
    path = tmp_path / "ds"
    create_root_dataset(path, blocks=6, data_bytes=3 * (1 << 20) + 17, fsync=False)
    return path


@pytest.mark.parametrize("size", [0, 1, 1 << 20, (1 << 20) + 1, 3 * (1 << 20) - 5])
@pytest.mark.parametrize("regular", [True, False])
def test_hash_fd_matches_hashlib(tmp_path: Path, size: int, regular: bool) -> None:
    data = os.urandom(size)
    path = tmp_path / "f"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        mh, n = hash_fd(fd, SHA3_256, regular=regular)
    finally:
        os.close(fd)
    assert n == size
    assert mh == bytes((0x16, 32)) + hashlib.sha3_256(data).digest()


def test_hash_fd_reads_a_pipe_to_its_end() -> None:
    # Short reads from a pipe are not its end: without ``regular`` every byte is hashed.
    data = os.urandom(200_000)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: write in small pieces, then exit
        os.close(r)
        for i in range(0, len(data), 7000):
            os.write(w, data[i : i + 7000])
        os._exit(0)
    os.close(w)
    try:
        mh, n = hash_fd(r, SHA2_256)
    finally:
        os.close(r)
        os.waitpid(pid, 0)
    assert (mh, n) == (hash_bytes(data, SHA2_256), len(data))


def test_open_fd_and_block_reads_match_the_files(ds: Path) -> None:
    reader = DatasetReader.open(ds)
    entries = list(walk_chain(reader))
    assert entries[-1].block.sequence_number == 0
    for obj in iter_objects(entries):
        want = (ds / obj.path).read_bytes()
        fd, st = reader.open_fd(obj.kind, obj.hash)
        try:
            assert st.st_size == len(want)
            mh, _ = hash_fd(fd, regular=True)
        finally:
            os.close(fd)
        assert mh == obj.hash
        if obj.kind == "block":
            assert reader.read_block_bytes(obj.hash) == want


def test_open_fd_refusals(ds: Path, tmp_path: Path) -> None:
    reader = DatasetReader.open(ds)
    data_obj = next(o for o in iter_objects(walk_chain(reader)) if o.kind == "data")
    target = ds / data_obj.path
    body = target.read_bytes()

    target.unlink()
    with pytest.raises(NotFound):
        reader.open_fd("data", data_obj.hash)

    outside = tmp_path / "outside"
    outside.write_bytes(body)
    target.symlink_to(outside)
    with pytest.raises(FormatError, match="outside the dataset"):
        reader.open_fd("data", data_obj.hash)

    # A link that stays inside the dataset is followed, as path_of does.
    target.unlink()
    inside = ds / "data" / "elsewhere"
    inside.write_bytes(body)
    target.symlink_to(inside)
    fd, st = reader.open_fd("data", data_obj.hash)
    os.close(fd)
    assert st.st_size == len(body)

    # A FIFO is refused at once instead of blocking the open.
    target.unlink()
    os.mkfifo(target)
    with pytest.raises(FormatError, match="not a regular file"):
        reader.open_fd("data", data_obj.hash)


def test_oversized_block_is_refused(ds: Path) -> None:
    reader = DatasetReader.open(ds)
    head = reader.head()
    with open(ds / "blocks" / f"f{head.hex()}", "ab") as f:
        f.truncate(MAX_BLOCK_SIZE + 1)
    with pytest.raises(FormatError, match="larger than any metadata block"):
        reader.read_block_bytes(head)


def test_deep_validation_reports_objects_in_chain_order(ds: Path) -> None:
    # Pipelined hashing must report the same violations, Seed first, as a sequential pass.
    reader = DatasetReader.open(ds)
    objs = [o for o in iter_objects(reversed(list(walk_chain(reader)))) if o.kind != "block"]
    for obj in objs[::2]:
        with open(ds / obj.path, "r+b") as f:
            f.write(b"\xff")
    seen: list[int] = []
    totals: list[int] = []
    for workers in (1, 2, 4):
        report = validate_dataset(
            ds, deep=True, workers=workers, progress=seen.append, on_total=totals.append
        )
        assert [v.rule for v in report.violations] == ["object-hash"] * len(objs[::2])
        assert [v.message.split(" ")[0] for v in report.violations] == [o.path for o in objs[::2]]
        assert report.objects_checked - report.blocks == len(objs)
        assert report.bytes_hashed == sum(o.size or 0 for o in objs)
    assert totals == [sum(o.size or 0 for o in objs)] * 3
    assert sum(seen) == 3 * totals[0]


@pytest.mark.parametrize("per_worker", [1, 1024])
@pytest.mark.parametrize("batch_files", [1, 3, 7, 1000])
def test_deep_validation_across_batch_boundaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch_files: int, per_worker: int
) -> None:
    # Objects reach the pool in batches: every batch size (one object, boundaries inside
    # a block's pair, everything in one batch) gives the sequential answer, in chain order,
    # whether the walk waits for the pool after every batch or never.
    from odfweb3.odf import validate

    monkeypatch.setattr(validate, "_BATCH_FILES", batch_files)
    monkeypatch.setattr(validate, "_BATCHES_PER_WORKER", per_worker)
    path = tmp_path / "ds"
    create_root_dataset(path, blocks=11, data_bytes=11 * 5000, fsync=False)
    reader = DatasetReader.open(path)
    objs = [o for o in iter_objects(reversed(list(walk_chain(reader)))) if o.kind != "block"]
    missing, short, flipped = objs[2], objs[5], objs[-1]
    (path / missing.path).unlink()
    with open(path / short.path, "r+b") as f:
        f.truncate((short.size or 1) - 1)
    with open(path / flipped.path, "r+b") as f:
        f.write(b"\x00\xff")
    expected = [
        ("object-present", missing.path),
        ("object-size", short.path),
        ("object-hash", flipped.path),
    ]
    hashed = sum(o.size or 0 for o in objs if o not in (missing, short))
    for workers in (1, 2):
        seen: list[int] = []
        report = validate_dataset(path, deep=True, workers=workers, progress=seen.append)
        assert [(v.rule, v.message.split(" ")[0]) for v in report.violations] == expected
        assert report.objects_checked - report.blocks == len(objs)
        assert report.bytes_hashed == hashed
        assert sum(seen) == hashed
