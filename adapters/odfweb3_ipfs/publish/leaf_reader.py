"""Files read and their UnixFS leaves hashed on worker threads, for a tree import.

:func:`.unixfs_import.import_tree` cuts every regular file into *units* of work: a run
of whole files that fit in one chunk, or a range of chunks of a larger file. A worker
opens the file itself, reads its chunks with ``pread`` (each unit on its own, so two
workers read two parts of one large file at once) and computes each leaf block's
SHA-256; the importing thread only turns digests into CIDs, hands blocks to the sink in
file order and builds the internal nodes and directories. ``pread`` and hashlib both
release the GIL (hashlib above 2 KiB of input), so reading and hashing run on every core
and the Python work per file stays on one thread: on two cores this is what brings an
import to Kubo's ``ipfs add`` speed (bench/bench_import_kubo.py).

Every file is read at the size its directory listing gave (the chunking, and so every
CID, is planned from it): a file that is shorter, or longer, when it is read changed
under the import and is refused, rather than imported half old and half new.

Memory: without a sink the blocks are not kept (each worker reads into its own chunk
buffer); with one, a unit keeps its blocks until the importing thread took them, and the
importer bounds the bytes of the units in flight (:data:`UNIT_BYTES`, its window).
"""

from __future__ import annotations

import hashlib
import os
import queue
import threading
from collections.abc import Callable
from typing import Final

from odfweb3.errors import FormatError

__all__ = ["UNIT_BYTES", "LeafReader", "Unit"]

# Bytes of chunks a unit reads at most (about; a one-chunk file larger than this is a unit of
# its own): one thread handoff per MiB, however small the files.
UNIT_BYTES: Final = 1 << 20
# One-chunk files per unit at most (a unit of tiny files still hands over in bulk).
UNIT_FILES: Final = 256
_OPEN_FLAGS: Final = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)

# A leaf as a worker leaves it: (SHA-256 of the block, the block when kept, block length,
# chunk length).
Leaf = tuple[bytes, bytes | None, int, int]


class Unit:
    """One piece of work: whole one-chunk files (``first < 0``), or chunks
    ``first .. first + count - 1`` of one file (the last unit of a file also checks that the
    file ends where its listing said).

    ``files`` holds ``(path, size, tag)``; ``tag`` is the importer's own (what the file is to
    it), handed back untouched. :meth:`wait` gives one :data:`Leaf` per chunk, in order.
    """

    __slots__ = ("_done", "count", "error", "files", "first", "last", "leaves", "nbytes")

    def __init__(
        self, files: list[tuple[str, int, object]], first: int, count: int, last: bool
    ) -> None:
        self.files = files
        self.first = first
        self.count = count
        self.last = last
        self.nbytes = 0  # bytes of chunks to read (set by the planner)
        self.leaves: list[Leaf] = []
        self.error: BaseException | None = None
        self._done = threading.Lock()
        self._done.acquire()

    def wait(self) -> list[Leaf]:
        """The unit's leaves, once a worker has read and hashed them; raises its error."""
        self._done.acquire()
        self._done.release()  # waiting twice is harmless
        if self.error is not None:
            raise self.error
        return self.leaves


def _changed(path: str, size: int) -> FormatError:
    return FormatError(
        f"{path}: changed while it was being imported (listed with {size} bytes); "
        "import again once nothing writes to it"
    )


class LeafReader:
    """Worker threads running :class:`Unit` s (``threads=0``: each runs when submitted).

    Args:
        threads: worker threads.
        chunk_size: the import's chunk size.
        leaf: turns a chunk into its leaf block (None: raw leaves, the chunk is the block).
        keep_blocks: units keep their blocks (for a sink); else only digests.
    """

    def __init__(
        self,
        threads: int,
        chunk_size: int,
        leaf: Callable[[bytes], bytes] | None,
        keep_blocks: bool,
    ) -> None:
        if threads < 0:
            raise ValueError(f"threads must be 0 or more, not {threads}")
        self.chunk_size = chunk_size
        self._leaf = leaf
        self._keep = keep_blocks
        self._jobs: queue.SimpleQueue[Unit | None] = queue.SimpleQueue()
        self._inline_buffer: bytearray | None = None
        self._workers = [
            threading.Thread(target=self._work, name=f"unixfs-read-{i}", daemon=True)
            for i in range(threads)
        ]
        for worker in self._workers:
            worker.start()

    # --- planning (importing thread) ---------------------------------------------------

    def file_units(self, path: str, size: int, tag: object) -> list[Unit]:
        """The units of one file of more than one chunk, in order."""
        chunk = self.chunk_size
        chunks = -(-size // chunk)
        per_unit = max(1, UNIT_BYTES // chunk)
        units = []
        for first in range(0, chunks, per_unit):
            count = min(per_unit, chunks - first)
            unit = Unit([(path, size, tag)], first, count, first + count == chunks)
            unit.nbytes = min(size, (first + count) * chunk) - first * chunk
            units.append(unit)
        return units

    # --- running ---------------------------------------------------------------------

    def submit(self, unit: Unit) -> None:
        if self._workers:
            self._jobs.put(unit)
        else:
            if self._inline_buffer is None:
                self._inline_buffer = bytearray(self.chunk_size)
            self._run(unit, self._inline_buffer)

    def _work(self) -> None:
        buffer = bytearray(self.chunk_size)
        while (unit := self._jobs.get()) is not None:
            self._run(unit, buffer)

    def _run(self, unit: Unit, buffer: bytearray) -> None:
        try:
            if unit.first < 0:
                for path, size, _ in unit.files:
                    unit.leaves.append(self._small(path, size, buffer))
            else:
                path, size, _ = unit.files[0]
                self._range(unit, path, size, buffer)
        except BaseException as exc:  # handed to the importing thread by wait()
            unit.error = exc
        finally:
            unit._done.release()

    def _hash(self, chunk: bytes | memoryview) -> Leaf:
        n = len(chunk)
        if self._leaf is not None:
            block = self._leaf(bytes(chunk))
            return hashlib.sha256(block).digest(), block if self._keep else None, len(block), n
        if self._keep:
            return hashlib.sha256(chunk).digest(), bytes(chunk), n, n
        return hashlib.sha256(chunk).digest(), None, n, n

    def _small(self, path: str, size: int, buffer: bytearray) -> Leaf:
        fd = os.open(path, _OPEN_FLAGS)
        try:
            if self._keep or self._leaf is not None:
                data = _pread_exact(fd, size + 1, 0)  # one byte more: a grown file is refused
                if len(data) != size:
                    raise _changed(path, size)
                return self._hash(data)
            view = memoryview(buffer)
            got = _preadinto(fd, view[:size], 0)
            if got != size or os.pread(fd, 1, size):
                raise _changed(path, size)
            return self._hash(view[:size])
        finally:
            os.close(fd)

    def _range(self, unit: Unit, path: str, size: int, buffer: bytearray) -> None:
        chunk = self.chunk_size
        view = memoryview(buffer)
        copy = self._keep or self._leaf is not None
        fd = os.open(path, _OPEN_FLAGS)
        try:
            for index in range(unit.first, unit.first + unit.count):
                offset = index * chunk
                n = min(chunk, size - offset)
                if copy:
                    data = _pread_exact(fd, n, offset)
                    if len(data) != n:
                        raise _changed(path, size)
                    unit.leaves.append(self._hash(data))
                else:
                    if _preadinto(fd, view[:n], offset) != n:
                        raise _changed(path, size)
                    unit.leaves.append(self._hash(view[:n]))
            if unit.last and os.pread(fd, 1, size):
                raise _changed(path, size)
        finally:
            os.close(fd)

    def close(self) -> None:
        """Stop the workers once they ran every unit submitted."""
        for _ in self._workers:
            self._jobs.put(None)
        for worker in self._workers:
            worker.join()
        self._workers.clear()

    def __enter__(self) -> LeafReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _pread_exact(fd: int, n: int, offset: int) -> bytes:
    """``n`` bytes at ``offset``, fewer only at the end of the file."""
    data = os.pread(fd, n, offset)
    if len(data) == n or not data:
        return data
    parts = [data]
    got = len(data)
    while got < n:
        more = os.pread(fd, n - got, offset + got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def _preadinto(fd: int, view: memoryview, offset: int) -> int:
    """Fill ``view`` from ``offset``; the bytes read (fewer only at the end of the file)."""
    got = 0
    while got < len(view):
        n = os.preadv(fd, [view[got:]], offset + got)
        if not n:
            break
        got += n
    return got
