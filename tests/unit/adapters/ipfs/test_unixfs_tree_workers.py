"""import_tree reading and hashing on workers: the blocks a one-file-at-a-time walk gives,
in its order, in bounded memory; a file that changes under the import is refused.

The reference is the walk written with the public building blocks (``import_file``,
``import_symlink``, ``build_directory``), each checked against Kubo's vectors elsewhere.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
import tracemalloc
from pathlib import Path

import pytest

from odfweb3.errors import FormatError
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.publish.leaf_reader import UNIT_FILES, LeafReader, Unit
from odfweb3_ipfs.publish.unixfs_import import (
    Entry,
    build_directory,
    import_file,
    import_symlink,
    import_tree,
)

CHUNK = 4096


def _sequential(
    path: Path, sink: list[tuple[Cid, bytes]], version: int, on_entry: dict[str, Entry], rel: str
) -> Entry:
    children: dict[str, Entry] = {}

    def keep(cid: Cid, block: bytes) -> None:
        sink.append((cid, block))

    for item in sorted(os.scandir(path), key=lambda e: os.fsencode(e.name)):
        child_rel = f"{rel}/{item.name}" if rel else item.name
        mode = item.stat(follow_symlinks=False).st_mode
        entry: Entry
        if stat.S_ISLNK(mode):
            entry = import_symlink(os.readlink(item.path), cid_version=version, sink=keep)
        elif stat.S_ISDIR(mode):
            entry = _sequential(Path(item.path), sink, version, on_entry, child_rel)
        else:
            entry = import_file(
                item.path, cid_version=version, sink=keep, chunk_size=CHUNK, max_links=4, threads=0
            )
        children[item.name] = entry
        on_entry[child_rel] = entry
    return build_directory(children, cid_version=version, sink=keep)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every shape: runs of one-chunk files longer than a unit, files of many units,
    chunk-boundary sizes, empty files and folders, symlinks, nesting, a large folder."""
    root = tmp_path_factory.mktemp("tree")
    seed = hashlib.sha256(b"tree-workers").digest()

    def content(n: int, tag: str) -> bytes:
        out = bytearray()
        k = 0
        while len(out) < n:
            out += hashlib.sha256(seed + tag.encode() + k.to_bytes(4, "big")).digest()
            k += 1
        return bytes(out[:n])

    many = root / "many"
    many.mkdir()
    for i in range(UNIT_FILES + 40):  # more one-chunk files than a unit holds
        (many / f"s{i:04d}").write_bytes(content(i * 13 % (CHUNK + 1), f"s{i}"))
    sizes = {"empty": 0, "a": CHUNK - 1, "b": CHUNK, "c": CHUNK + 1, "big": 300 * CHUNK + 7}
    for name, size in sizes.items():
        (root / name).write_bytes(content(size, name))
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "sub" / "deeper" / "x").write_bytes(content(5 * CHUNK, "x"))
    (root / "sub" / "y").write_bytes(content(10, "y"))
    (root / "empty-dir").mkdir()
    os.symlink("../a", root / "sub" / "link")
    os.symlink("/nowhere", root / "dangling")
    return root


@pytest.mark.parametrize("window", [1, 64 * CHUNK, 16 << 20])
@pytest.mark.parametrize("threads", [0, 1, 2])
@pytest.mark.parametrize("version", [1, 0])
def test_blocks_and_entries_as_a_sequential_walk(
    tree: Path, version: int, threads: int, window: int
) -> None:
    expected: list[tuple[Cid, bytes]] = []
    expected_entries: dict[str, Entry] = {}
    root = _sequential(tree, expected, version, expected_entries, "")
    got: list[tuple[Cid, bytes]] = []
    entries: dict[str, Entry] = {}

    def sink(cid: Cid, block: bytes) -> None:
        assert type(block) is bytes  # the sink may keep it: never a reused buffer
        got.append((cid, block))

    node = import_tree(
        tree,
        cid_version=version,
        sink=sink,
        chunk_size=CHUNK,
        max_links=4,
        threads=threads,
        window=window,
        on_entry=entries.__setitem__,
    )
    assert node.cid == root.cid and node.tsize == root.tsize
    assert got == expected  # same blocks, same order
    assert list(entries.items()) == list(expected_entries.items())  # same calls, same order
    for cid, block in got:
        assert (
            Cid.sha256(hashlib.sha256(block).digest(), version=cid.version, codec=cid.codec) == cid
        )
    # without a sink: the same root (blocks are hashed, never kept)
    bare = import_tree(tree, cid_version=version, chunk_size=CHUNK, max_links=4, threads=threads)
    assert bare == node


def test_memory_bounded_with_a_sink(tmp_path: Path) -> None:
    for i in range(24):
        (tmp_path / f"f{i:02d}").write_bytes(os.urandom(1 << 20))
    seen = [0]

    def sink(cid: Cid, block: bytes) -> None:
        seen[0] += len(block)

    tracemalloc.start()
    try:
        node = import_tree(tmp_path, sink=sink, threads=2, window=1 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert seen[0] == node.tsize and node.tsize > 24 << 20
    # a unit (1 MiB) in flight beyond the window, one being handed over: far below 24 MiB
    assert peak < 5 << 20, f"peak {peak} bytes: read-ahead is not bounded"


def _workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("unixfs-read")]


@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("raw", [True, False])
def test_a_file_that_changed_size_is_refused(tmp_path: Path, keep: bool, raw: bool) -> None:
    path = tmp_path / "f"
    leaf = None if raw else (lambda chunk: b"pb" + chunk)
    for listed, actual in (
        (10, 9),
        (10, 11),
        (3 * CHUNK, 3 * CHUNK - 1),
        (3 * CHUNK, 3 * CHUNK + 1),
    ):
        path.write_bytes(b"z" * actual)
        with LeafReader(2, CHUNK, leaf, keep) as reader:
            if listed <= CHUNK:
                units = [Unit([(str(path), listed, None)], -1, 1, True)]
            else:
                units = reader.file_units(str(path), listed, None)
            for unit in units:
                reader.submit(unit)
            with pytest.raises(FormatError, match="changed while it was being imported"):
                for unit in units:
                    unit.wait()
        # the file as listed is read without complaint
        path.write_bytes(b"z" * listed)
        with LeafReader(0, CHUNK, leaf, keep) as reader:
            units = (
                [Unit([(str(path), listed, None)], -1, 1, True)]
                if listed <= CHUNK
                else reader.file_units(str(path), listed, None)
            )
            for unit in units:
                reader.submit(unit)
            leaves = [lf for unit in units for lf in unit.wait()]
        assert sum(n for _, _, _, n in leaves) == listed
        assert all((block is not None) == keep for _, block, _, _ in leaves)
    assert _workers() == []


def test_special_file_refused_and_workers_stop(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(os.urandom(3 * CHUNK))
    os.mkfifo(tmp_path / "b-fifo")
    with pytest.raises(FormatError, match="not a regular file"):
        import_tree(tmp_path, chunk_size=CHUNK, threads=2)
    assert _workers() == []


def test_sink_error_stops_the_workers(tmp_path: Path) -> None:
    for i in range(8):
        (tmp_path / f"f{i}").write_bytes(os.urandom(5 * CHUNK))

    class Full(Exception):
        pass

    def sink(cid: Cid, block: bytes) -> None:
        raise Full("disk full")

    with pytest.raises(Full):
        import_tree(tmp_path, sink=sink, chunk_size=CHUNK, threads=2)
    assert _workers() == []
