"""pull's staging area: objects written at their staged names (no temp file, one rename
into the layout), flushed by one syncfs of the file system (per-file fsyncs where it has
none), and one pull at a time per destination."""

from __future__ import annotations

import errno
import fcntl
import os
import sys
from pathlib import Path

import pytest

from odfweb3.errors import ConflictError, HashMismatch, LocalIOError
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import hash_bytes
from odfweb3.odf.validate import validate_dataset
from odfweb3.read import pull
from odfweb3.read.pull import pull_dataset
from odfweb3.read.replica import LocalReplica
from odfweb3.store import local
from odfweb3.store.local import LocalStore, sync_filesystem


def test_an_in_place_store_writes_at_the_name_and_keeps_nothing_that_does_not_hash(
    tmp_path: Path,
) -> None:
    store = LocalStore(tmp_path / "incoming", fsync=False, in_place=True)
    good = b"x" * 5000
    mh = hash_bytes(good)
    store.put("data", mh, [good[:100], good[100:]])
    assert store.has_intact("data", mh)
    assert sorted(os.listdir(tmp_path / "incoming" / "data")) == [
        Path(store.os_path("data", mh)).name
    ]
    other = hash_bytes(b"other")
    with pytest.raises(HashMismatch):
        store.put("data", other, [b"not the bytes of that hash"])
    assert not store.has("data", other)
    assert len(os.listdir(tmp_path / "incoming" / "data")) == 1  # no temp file, no liar


def test_a_leftover_cut_short_at_the_staged_name_is_replaced(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "incoming", fsync=False, in_place=True)
    good = b"y" * 3000
    mh = hash_bytes(good)
    Path(store.os_path("data", mh)).write_bytes(good[:10])  # what a crash left
    assert not store.has_intact("data", mh)  # found out and removed
    store.put("data", mh, [good])
    assert store.get("data", mh) == good


def test_sync_filesystem_is_one_syncfs_of_the_folder(tmp_path: Path) -> None:
    calls: list[int] = []

    def syncfs(fd: int) -> int:
        calls.append(os.fstat(fd).st_ino)
        return 0

    sync_filesystem(tmp_path, [tmp_path / "a", tmp_path / "b"], syncfs=syncfs)
    assert calls == [os.stat(tmp_path).st_ino]


def test_a_failed_syncfs_is_one_local_io_error(tmp_path: Path) -> None:
    import ctypes

    def failing(fd: int) -> int:
        ctypes.set_errno(errno.EIO)
        return -1

    with pytest.raises(LocalIOError, match="cannot write"):
        sync_filesystem(tmp_path, [], syncfs=failing)


def test_without_syncfs_every_file_is_fsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = [tmp_path / f"f{i}" for i in range(3)]
    for f in files:
        f.write_bytes(b"z")
    synced: list[str] = []
    monkeypatch.setattr(local, "_syncfs", lambda: None)
    monkeypatch.setattr(local, "sync_paths", lambda paths: synced.extend(map(str, paths)))
    sync_filesystem(tmp_path, files)
    assert synced == [str(f) for f in files]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="syncfs(2) is Linux's")
def test_linux_has_syncfs() -> None:
    fn = local._syncfs()
    assert fn is not None
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert fn(fd) == 0
    finally:
        os.close(fd)


def _counting(monkeypatch: pytest.MonkeyPatch) -> tuple[list[int], list[tuple[str, str]]]:
    """Count the flushes of the staging area (and how many files each covers) and the
    renames, for the pulls that follow."""
    flushed: list[int] = []
    real_flush = pull.sync_filesystem

    def flush(folder: str | Path, paths: object) -> None:
        flushed.append(len(list(paths)))  # type: ignore[call-overload]
        real_flush(folder, [])

    renames: list[tuple[str, str]] = []
    real_replace = os.replace

    def replace(a: str, b: str) -> None:
        renames.append((str(a), str(b)))
        real_replace(a, b)

    monkeypatch.setattr(pull, "sync_filesystem", flush)
    monkeypatch.setattr(os, "replace", replace)
    return flushed, renames


def test_a_first_pull_uses_one_flush_and_moves_each_folder_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = create_root_dataset(tmp_path / "src", blocks=5, data_bytes=10_000, seed=51).path
    replica = LocalReplica(DatasetReader.open(src))
    flushed, renames = _counting(monkeypatch)
    res = pull_dataset(replica, tmp_path / "dest")
    monkeypatch.undo()
    assert flushed == [res.objects_fetched]  # the glossary's count: the new blocks included
    dest = tmp_path / "dest"
    # DEST's layout folders were empty: each staged folder renamed over its own, objects
    # first, blocks last, then refs/head
    assert [b for a, b in renames] == [
        f"{dest}/data",
        f"{dest}/checkpoints",
        f"{dest}/blocks",
        f"{dest}/refs/head",
    ]
    assert validate_dataset(dest, deep=True).ok
    assert not (dest / ".odfweb3" / "incoming").exists()


def test_an_incremental_pull_renames_each_object_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from odfweb3.odf.builder import append_blocks

    src = create_root_dataset(tmp_path / "src", blocks=3, data_bytes=6_000, seed=53).path
    dest = tmp_path / "dest"
    pull_dataset(LocalReplica(DatasetReader.open(src)), dest)
    append_blocks(src, 2, data_bytes=4_000)
    flushed, renames = _counting(monkeypatch)
    res = pull_dataset(LocalReplica(DatasetReader.open(src)), dest)
    monkeypatch.undo()
    moved = res.objects_fetched
    assert res.new_blocks == 2 and flushed == [moved]
    into_layout = [b for a, b in renames if "/.odfweb3/incoming/" in a]
    assert len(into_layout) == moved and len(set(into_layout)) == moved  # one file each
    assert len(renames) == moved + 1  # and refs/head
    assert validate_dataset(dest, deep=True).ok


def test_a_staged_folder_holding_anything_else_is_moved_object_by_object(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = create_root_dataset(tmp_path / "src", blocks=3, data_bytes=6_000, seed=54).path
    dest = tmp_path / "dest"
    stray = dest / ".odfweb3" / "incoming" / "data" / "not-an-object"
    stray.parent.mkdir(parents=True)
    stray.write_bytes(b"left by someone else")
    _, renames = _counting(monkeypatch)
    res = pull_dataset(LocalReplica(DatasetReader.open(src)), dest)
    monkeypatch.undo()
    into_data = [b for a, b in renames if b.startswith(f"{dest}/data")]
    assert len(into_data) == res.objects.data_files  # one by one: the stray stays out
    assert not (dest / "data" / "not-an-object").exists()
    assert [b for a, b in renames if b == f"{dest}/blocks"]  # the other folders whole
    report = validate_dataset(dest, deep=True)
    assert report.ok and not report.orphans


def test_a_second_pull_into_the_same_directory_is_refused_while_one_runs(
    tmp_path: Path,
) -> None:
    src = create_root_dataset(tmp_path / "src", blocks=3, data_bytes=6_000, seed=52).path
    replica = LocalReplica(DatasetReader.open(src))
    dest = tmp_path / "dest"
    (dest / ".odfweb3").mkdir(parents=True)
    fd = os.open(dest / ".odfweb3" / "incoming.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another pull holds it
        with pytest.raises(ConflictError, match="another pull into it is running"):
            pull_dataset(replica, dest)
        assert LocalStore.read_head(dest) is None
        assert not (dest / ".odfweb3" / "incoming").exists()
    finally:
        os.close(fd)
    res = pull_dataset(replica, dest)  # released: the rerun completes
    assert res.head == replica.head()
    assert validate_dataset(dest, deep=True).ok
