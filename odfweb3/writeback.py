"""A file written in one pass whose pages start going to disk while it is written.

A publish writes a CAR or a bundle of up to the dataset's size and then fsyncs it
(docs/design.md, "Commit order"): left to the kernel, most of a 1 GB file is still dirty
when ``fsync`` is called, and the publish waits there for all of it (0.3 s on an idle
disk, 1-4 s on this project's shared machine: bench/RESULTS.md).
:class:`WritebackFile` asks the kernel to write back each ``every`` bytes as soon as they
are written (``posix_fadvise(POSIX_FADV_DONTNEED)``: Linux starts writing the dirty pages
of the range back without waiting, and drops the clean ones from the page cache, which a
file read only by others later does not need), so the final ``fsync`` finds little left.
It is advice: where it is missing or refused, the file is written the same.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import BinaryIO, Final

__all__ = ["DEFAULT_WRITEBACK_EVERY", "WritebackFile"]

DEFAULT_WRITEBACK_EVERY: Final = 32 << 20

Advise = Callable[[int, int, int, int], None]


def _advise() -> Advise | None:
    return getattr(os, "posix_fadvise", None)


class WritebackFile:
    """Writes through to ``stream`` (a buffered file); every ``every`` bytes appended, the
    bytes written so far are flushed and handed to the kernel to write back.

    Only :meth:`write`, :meth:`seek` and :meth:`tell` (what ``CarWriter`` and the bundle
    writer use); the caller flushes, fsyncs and closes ``stream`` itself.

    Args:
        stream: a file opened for writing, with ``fileno``.
        every: bytes between two write-back requests.
        advise: ``os.posix_fadvise`` (None where the platform has none: no advice).
    """

    __slots__ = ("_advise", "_done", "_every", "_fd", "_next", "_pos", "_stream")

    def __init__(
        self,
        stream: BinaryIO,
        every: int = DEFAULT_WRITEBACK_EVERY,
        advise: Advise | None = None,
    ) -> None:
        if every <= 0:
            raise ValueError("every must be positive")
        self._stream = stream
        self._every = every
        self._advise = advise if advise is not None else _advise()
        self._fd = stream.fileno()
        self._pos = stream.tell()
        self._done = self._pos  # bytes before this offset were handed over
        self._next = self._pos + every

    def write(self, data: bytes | memoryview) -> int:
        """Write ``data``; start writing back once ``every`` more bytes were written."""
        n = self._stream.write(data)
        self._pos += n
        if self._pos >= self._next and self._advise is not None:
            self._write_back()
        return n

    def _write_back(self) -> None:
        self._stream.flush()
        end = self._stream.tell()
        if end > self._done and self._advise is not None:
            try:
                self._advise(self._fd, self._done, end - self._done, os.POSIX_FADV_DONTNEED)
            except OSError:  # advice only (e.g. a file system that refuses it)
                self._advise = None
        self._done = end
        self._next = end + self._every

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        """Move in the file (``CarWriter.set_root`` rewrites the header at 0)."""
        self._pos = self._stream.seek(offset, whence)
        return self._pos

    def tell(self) -> int:
        """The current offset."""
        return self._pos
