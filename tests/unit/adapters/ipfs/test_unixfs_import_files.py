"""``import_files``: the publish importer hashing on workers changes nothing but speed.

Same blocks in the same sink order and the same file roots as :func:`import_file` one file
at a time (itself pinned to Kubo's vectors in ``test_unixfs.py`` and to golden CARs in
``test_unixfs_threads.py``), for every thread count, CID version and window; and a file's own
check (the verifying reader's SHA3-256) still refuses a bad file before the iteration ends.
"""

from __future__ import annotations

import hashlib
import io
import threading
from pathlib import Path

import pytest

from odfweb3.errors import HashMismatch, IntegrityError
from odfweb3.odf.chain import DatasetObject
from odfweb3.odf.multihash import hash_bytes
from odfweb3.publish.source import VerifyingReader
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.publish.unixfs_import import FileNode, import_file, import_files

from .kubo_testdata import DeterministicStream

CHUNK = 1000
# Around chunk boundaries, an empty file, and files of several jobs (JOB_BYTES is 1 MiB).
SIZES = [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 7 * CHUNK + 3, 3000, 1_500_000, 5, 2_200_000, 0]


def _content(size: int, seed: str) -> bytes:
    return io.BufferedReader(DeterministicStream(size, seed)).read()


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Path, bytes]]:
    root = tmp_path_factory.mktemp("files")
    out = []
    for i, size in enumerate(SIZES):
        data = _content(size, f"f{i}")
        path = root / f"f{i}"
        path.write_bytes(data)
        out.append((path, data))
    return out


class _Checked:
    """A source like the publish's: the caller-side hash of what was read, checked at the end."""

    def __init__(self, path: Path, expected: bytes, log: list[str]) -> None:
        self._f = open(path, "rb")  # noqa: SIM115 - closed by close()
        self._expected = expected
        self._hash = hashlib.sha3_256()
        self._log = log
        self.read_bytes = 0
        self.absorbed = 0
        self.absorb_threads: set[str] = set()

    def read(self, n: int) -> bytes:
        data = self._f.read(n)
        self.read_bytes += len(data)
        return data

    def absorb(self, chunk: bytes) -> None:
        self.absorb_threads.add(threading.current_thread().name)
        self._hash.update(chunk)
        self.absorbed += len(chunk)

    def end(self) -> None:
        assert self._f.read(1) == b""

    def check(self) -> None:
        self._log.append("check")
        if self.absorbed != self.read_bytes or self._hash.digest() != self._expected:
            raise HashMismatch("expected", self._hash.hexdigest(), str(self._f.name))

    def close(self) -> None:
        self._f.close()


def _one_by_one(
    files: list[tuple[Path, bytes]], cid_version: int
) -> tuple[list[tuple[Cid, bytes]], list[FileNode]]:
    blocks: list[tuple[Cid, bytes]] = []
    nodes = [
        import_file(
            path,
            cid_version=cid_version,
            chunk_size=CHUNK,
            max_links=4,
            sink=lambda c, b: blocks.append((c, b)),
            threads=0,
        )
        for path, _ in files
    ]
    return blocks, nodes


@pytest.mark.parametrize("cid_version", [1, 0])
@pytest.mark.parametrize(("threads", "window"), [(0, 1 << 20), (1, 2 << 20), (2, 32 << 20)])
def test_same_blocks_order_and_roots_as_one_by_one(
    files: list[tuple[Path, bytes]], cid_version: int, threads: int, window: int
) -> None:
    want_blocks, want_nodes = _one_by_one(files, cid_version)
    blocks: list[tuple[Cid, bytes]] = []
    log: list[str] = []
    sources: dict[Path, _Checked] = {}

    def open_source(item: tuple[Path, bytes]) -> _Checked:
        path, data = item
        src = sources[path] = _Checked(path, hashlib.sha3_256(data).digest(), log)
        return src

    got = list(
        import_files(
            files,
            open_source,
            cid_version=cid_version,
            chunk_size=CHUNK,
            max_links=4,
            sink=lambda c, b: blocks.append((c, b)),
            threads=threads,
            window=window,
        )
    )
    assert [item for item, _ in got] == files  # in order, each once
    assert [node for _, node in got] == want_nodes
    assert [(c.raw, b) for c, b in blocks] == [(c.raw, b) for c, b in want_blocks]
    assert log == ["check"] * len(files)  # every file checked once, before the end
    assert all(s.absorbed == s.read_bytes for s in sources.values())
    if threads:  # the checks' hashing ran on the workers
        workers = set().union(*(s.absorb_threads for s in sources.values()))
        assert workers and all(name.startswith("unixfs-import-") for name in workers)


@pytest.mark.parametrize("threads", [0, 2])
def test_a_failed_check_is_raised_before_the_iteration_ends(
    files: list[tuple[Path, bytes]], threads: int
) -> None:
    log: list[str] = []

    def open_source(item: tuple[Path, bytes]) -> _Checked:
        path, data = item
        wrong = hashlib.sha3_256(data + b"x").digest() if path.name == "f9" else None
        return _Checked(path, wrong or hashlib.sha3_256(data).digest(), log)

    it = import_files(files, open_source, chunk_size=CHUNK, threads=threads, window=2 << 20)
    with pytest.raises(HashMismatch):
        for _ in it:
            pass


def _verifying(tmp_path: Path, data: bytes, stored: bytes) -> VerifyingReader:
    path = tmp_path / "obj"
    path.write_bytes(stored)
    obj = DatasetObject("data", hash_bytes(data), len(data))
    return VerifyingReader(open(path, "rb"), obj, str(path)).defer_hashing()


def test_deferred_verifying_reader_hashes_what_it_is_given(tmp_path: Path) -> None:
    data = _content(5000, "v")
    reader = _verifying(tmp_path, data, data)
    chunks = [reader.read(2000) for _ in range(3)]
    reader.end()
    reader.close()
    for chunk in chunks:
        reader.absorb(chunk)
    reader.check()  # size and SHA3-256 of what was absorbed


def test_deferred_verifying_reader_refuses_bytes_never_hashed(tmp_path: Path) -> None:
    data = _content(5000, "v")
    reader = _verifying(tmp_path, data, data)
    first = reader.read(4000)
    reader.read(4000)
    reader.end()
    reader.absorb(first)  # the second chunk is never handed over
    with pytest.raises(IntegrityError, match="never hashed"):
        reader.check()
    reader.close()


def test_deferred_verifying_reader_refuses_a_corrupt_file(tmp_path: Path) -> None:
    data = _content(5000, "v")
    reader = _verifying(tmp_path, data, data[:-1] + b"\x00")
    chunk = reader.read(8000)
    reader.end()
    reader.absorb(chunk)
    with pytest.raises(HashMismatch):
        reader.check()
    reader.close()


def test_publish_importer_checks_every_object_through_the_verifying_reader(
    files: list[tuple[Path, bytes]], tmp_path: Path
) -> None:
    # The way dataset_dag opens objects: VerifyingReader with deferred hashing; a corrupt
    # file among many is refused by the time the iteration ends.
    items = []
    for i, (path, data) in enumerate(files):
        stored = data if i != 7 else data[:-1] + bytes([data[-1] ^ 1])
        copy = tmp_path / path.name
        copy.write_bytes(stored)
        items.append((copy, DatasetObject("data", hash_bytes(data), len(data))))

    def open_source(item: tuple[Path, DatasetObject]) -> VerifyingReader:
        path, obj = item
        return VerifyingReader(open(path, "rb"), obj, str(path)).defer_hashing()

    with pytest.raises(HashMismatch):
        list(import_files(items, open_source, chunk_size=CHUNK, threads=2))
    good = [(p, o) for k, (p, o) in enumerate(items) if k != 7]
    assert len(list(import_files(good, open_source, chunk_size=CHUNK, threads=2))) == len(good)


@pytest.mark.parametrize("cid_version", [1, 0])
@pytest.mark.parametrize("threads", [0, 1, 2])
def test_one_chunk_files_read_on_workers_give_the_same_blocks(
    files: list[tuple[Path, bytes]], cid_version: int, threads: int
) -> None:
    # size_of says which files fit one chunk: those are opened, read and checked on the
    # workers (threads > 0); blocks, order and roots stay those of import_file.
    want_blocks, want_nodes = _one_by_one(files, cid_version)
    blocks: list[tuple[Cid, bytes]] = []
    log: list[str] = []
    opened_on: dict[Path, str] = {}
    sources: dict[Path, _Checked] = {}

    def open_source(item: tuple[Path, bytes]) -> _Checked:
        path, data = item
        opened_on[path] = threading.current_thread().name
        src = sources[path] = _Checked(path, hashlib.sha3_256(data).digest(), log)
        return src

    got = list(
        import_files(
            files,
            open_source,
            cid_version=cid_version,
            chunk_size=CHUNK,
            max_links=4,
            sink=lambda c, b: blocks.append((c, b)),
            threads=threads,
            window=2 << 20,
            size_of=lambda item: len(item[1]),
        )
    )
    assert [item for item, _ in got] == files
    assert [node for _, node in got] == want_nodes
    assert [(c.raw, b) for c, b in blocks] == [(c.raw, b) for c, b in want_blocks]
    assert log == ["check"] * len(files)
    assert all(s.absorbed == s.read_bytes for s in sources.values())
    small = {path for path, data in files if len(data) <= CHUNK}
    on_workers = {p for p, name in opened_on.items() if name.startswith("unixfs-import-")}
    assert on_workers == (small if threads else set())


def test_a_one_chunk_file_longer_than_recorded_is_refused(
    files: list[tuple[Path, bytes]], tmp_path: Path
) -> None:
    # The recorded size says one chunk, the file holds more: refused, not imported short.
    items = []
    for i, (path, data) in enumerate(files):
        stored = data + b"more" if i == 2 else data  # CHUNK - 1 bytes recorded
        copy = tmp_path / path.name
        copy.write_bytes(stored)
        items.append((copy, DatasetObject("data", hash_bytes(data), len(data))))

    def open_source(item: tuple[Path, DatasetObject]) -> VerifyingReader:
        path, obj = item
        return VerifyingReader(open(path, "rb"), obj, str(path)).defer_hashing()

    def size_of(item: tuple[Path, DatasetObject]) -> int | None:
        return item[1].size

    with pytest.raises(IntegrityError, match="not read to the end"):
        list(import_files(items, open_source, chunk_size=CHUNK, threads=2, size_of=size_of))
    # A file shorter than recorded (still one chunk) fails its check.
    items[2][0].write_bytes(files[2][1][:5])
    with pytest.raises(IntegrityError, match="block records"):
        list(import_files(items, open_source, chunk_size=CHUNK, threads=2, size_of=size_of))


def test_a_one_chunk_file_is_read_at_its_recorded_size(
    files: list[tuple[Path, bytes]], tmp_path: Path
) -> None:
    # A worker asks for the recorded size, not a whole chunk: CPython allocates what read(n)
    # asks before shrinking it (256 KiB per 2 KB file raised glibc's mmap threshold); same nodes.
    asked: dict[str, list[int]] = {}
    lock = threading.Lock()

    class Asked(VerifyingReader):
        def read(self, n: int = -1) -> bytes:
            with lock:
                asked.setdefault(self._where, []).append(n)
            return super().read(n)

    items = [(p, DatasetObject("data", hash_bytes(d), len(d))) for p, d in files]
    small = [(p, obj) for p, obj in items if obj.size is not None and obj.size <= CHUNK]

    def open_source(item: tuple[Path, DatasetObject]) -> VerifyingReader:
        path, obj = item
        return Asked(open(path, "rb"), obj, str(path)).defer_hashing()

    got = list(
        import_files(
            small, open_source, chunk_size=CHUNK, threads=2, size_of=lambda item: item[1].size
        )
    )
    want = [import_file(io.BytesIO(p.read_bytes()), chunk_size=CHUNK) for p, _ in small]
    assert [node for _, node in got] == want
    # Each file: its recorded size (end() then reads past it below this reader).
    assert asked == {str(p): [obj.size] for p, obj in small}
