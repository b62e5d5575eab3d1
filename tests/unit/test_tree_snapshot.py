"""tests/support/measure.py's tree_snapshot: what the hostile tests compare to say "nothing was
written" must see every byte that changes, sparse files included, without reading holes."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.measure import tree_snapshot


def _sparse(path: Path, size: int, data: bytes = b"", at: int = 0) -> None:
    with open(path, "wb") as f:
        f.truncate(size)
        if data:
            f.seek(at)
            f.write(data)


def test_equal_trees_give_equal_snapshots_and_any_byte_changes_them(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for root in (a, b):
        (root / "d").mkdir(parents=True)
        (root / "d" / "f").write_bytes(b"x" * 3_000_000)
        _sparse(root / "sparse", 1 << 30, b"data", 1 << 29)
        os.symlink("d/f", root / "l")
    assert tree_snapshot(a) == tree_snapshot(b)
    assert tree_snapshot(a)["sparse"].startswith(f"file:{1 << 30}:")

    before = tree_snapshot(a)
    with open(a / "d" / "f", "r+b") as f:  # one byte in the middle, size kept
        f.seek(1_500_000)
        f.write(b"y")
    assert tree_snapshot(a)["d/f"] != before["d/f"]
    with open(a / "sparse", "r+b") as f:  # a byte in the data extent
        f.seek((1 << 29) + 1)
        f.write(b"A")
    assert tree_snapshot(a)["sparse"] != before["sparse"]


def test_zeros_written_into_a_hole_change_the_snapshot(tmp_path: Path) -> None:
    # Bytes written are a write even when they are the zeros the hole read as.
    _sparse(tmp_path / "s", 1 << 24)
    before = tree_snapshot(tmp_path)
    with open(tmp_path / "s", "r+b") as f:
        f.seek(1 << 23)
        f.write(b"\0" * 4096)
        f.flush()
        os.fsync(f.fileno())
    after = tree_snapshot(tmp_path)
    probe = os.open(tmp_path / "s", os.O_RDONLY)
    try:
        holes = os.lseek(probe, 0, os.SEEK_DATA) != 0 or os.lseek(probe, 0, os.SEEK_HOLE) < 1 << 24
    finally:
        os.close(probe)
    # A file system that does not keep holes (every file one data extent) hashes the bytes.
    assert (after != before) if holes else (after == before)
