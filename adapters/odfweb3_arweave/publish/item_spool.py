"""Signed bundle items kept on disk, not in memory, until the bundle is written.

An initial ``bundle:`` publish signs ~6 items per block (each object's data item and its
ArFS metadata): held as Python objects (header, 512-byte signature, decoded tags, metadata
body) that was ~20 KB per block, 2.4 GB at 100,000 blocks. :class:`ItemSpool` writes each
signed item's header (without the owner, the same 512 bytes for every item of a wallet)
and, for an in-memory item, its data to an anonymous temporary file as it is signed, and
keeps per item only its id, size and spool offset in flat arrays. A streamed object's data
is read again through one ``reopen`` function given its key (:meth:`ItemSpool.add_streamed`:
the signer's index of the object; a function an item kept ~0.2 KB an object alive); the few
other streamed items (the documents, manifest and record) keep their own opener.
:meth:`ItemSpool.write` writes the ANS-104 bundle (count, the size/id table, then each
item) in the order given, the same bytes as
:func:`~odfweb3_arweave.formats.ans104.write_bundle` of the items themselves.

An item whose data is made in pieces (the Croissant and DCAT documents, which list every
data file: ~5 KB a block) is not joined in memory either: :meth:`ItemSpool.write_data`
writes the pieces into the spool while hashing them (the SHA-384 its signature covers), and
the item signed over that digest reads them back from there (:meth:`ItemSpool.open_data`).

The spool is unnamed (removed by the OS when closed or when the process dies).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from array import array
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from types import TracebackType
from typing import BinaryIO, cast

from odfweb3.errors import FormatError
from odfweb3_arweave.formats.ans104 import DataItem, DataItemHeader, StreamedDataItem

__all__ = ["ItemSpool"]

_COPY_BLOCK = 1 << 20


class ItemSpool:
    """Signed items in bundle order: ids, sizes and spool offsets; the bytes in a temp file."""

    def __init__(self, owner: bytes, reopen: Callable[[int], BinaryIO] | None = None) -> None:
        """``reopen(key)``: the data of an item spooled by :meth:`add_streamed` with ``key``."""
        self._owner = owner
        self._reopen = reopen
        self._file = tempfile.TemporaryFile(prefix="odfweb3-items-")  # noqa: SIM115
        self._end = 0
        self._ids = bytearray()
        # per item (~62 bytes: a first upload spools 600,000 at 100,000 blocks): spool
        # offset, spool length (its header split at the owner: the first `split` bytes, then
        # the owner, then the rest), data size when the data is streamed (else -1: the data
        # is in the spool) and its ``reopen`` key (-1: its opener is in ``_openers``). The
        # item's size is the length, the owner and a streamed item's data.
        self._offsets = array("q")
        self._lengths = array("q")
        self._splits = array("H")
        self._streamed = array("q")
        self._keys = array("i")
        self._openers: dict[int, Callable[[], BinaryIO]] = {}
        self._order = array("I")

    def set_order(self, order: Sequence[int]) -> None:
        """The bundle's items: these spooled items, in this order."""
        self._order = array("I", order)

    def add(self, item: DataItem | StreamedDataItem) -> int:
        """Spool ``item`` (signed); return its index (:meth:`set_order` orders them)."""
        if isinstance(item, DataItem):
            return self._add(item.header, item.data, -1, None)
        return self._add(item.header, None, -1, item.open_data)

    def add_streamed(self, header: DataItemHeader, key: int) -> int:
        """Spool the signed ``header`` of an item whose data ``reopen(key)`` reads again
        when the bundle is written; return its index."""
        if self._reopen is None:
            raise ValueError("item spool: no reopen function for streamed items by key")
        return self._add(header, None, key, None)

    def _add(
        self,
        header: DataItemHeader,
        data: bytes | None,
        key: int,
        opener: Callable[[], BinaryIO] | None,
    ) -> int:
        if header.owner != self._owner:
            raise FormatError(f"data item {header.id_b64}: signed by another owner")
        encoded = header.encode()
        split = 2 + len(header.signature)
        rest = encoded[split + len(self._owner) :]
        index = len(self._offsets)
        self._file.seek(self._end)
        self._file.write(encoded[:split])
        self._file.write(rest)
        length = split + len(rest)
        if data is not None:
            self._file.write(data)
            length += len(data)
            self._streamed.append(-1)
        else:
            self._streamed.append(header.data_size)
            if opener is not None:
                self._openers[index] = opener
        self._keys.append(key)
        self._ids += header.id
        self._offsets.append(self._end)
        self._lengths.append(length)
        self._splits.append(split)
        self._end += length
        if self._size(index) != header.size:  # the size as the table will write it
            raise FormatError(f"data item {header.id_b64}: size {header.size} does not add up")
        return index

    def write_data(self, pieces: Iterable[bytes]) -> tuple[Callable[[], BinaryIO], int, bytes]:
        """Spool an item's data from ``pieces`` (before its header: it is signed over the
        digest); return the opener of those bytes (a :class:`StreamedDataItem`'s
        ``open_data``), their size and their SHA-384."""
        start = self._end
        digest = hashlib.sha384()
        self._file.seek(start)
        for piece in pieces:
            digest.update(piece)
            self._file.write(piece)
            self._end += len(piece)
        size = self._end - start
        return partial(self.open_data, start, size), size, digest.digest()

    def open_data(self, offset: int, size: int) -> BinaryIO:
        """A stream over ``size`` spooled bytes at ``offset`` (positioned reads: the
        writer's own reads of the spool are not moved)."""
        self._file.flush()
        return cast(BinaryIO, _SpoolRange(self._file.fileno(), offset, size))

    def item_id(self, index: int) -> bytes:
        """The id (32 bytes) of spooled item ``index``."""
        if not 0 <= index < len(self._offsets):
            raise IndexError("item spool: no such item")
        return bytes(self._ids[32 * index : 32 * index + 32])

    def __len__(self) -> int:
        """The number of items in the bundle (:meth:`set_order`)."""
        return len(self._order)

    def sizes(self) -> list[int]:
        """Each item's size in bundle order (what a bundler charges per item)."""
        return [self._size(i) for i in self._order]

    def _size(self, i: int) -> int:
        return self._lengths[i] + len(self._owner) + max(self._streamed[i], 0)

    def bundle_size(self) -> int:
        """The bytes :meth:`write` writes: the ANS-104 header (32 + 64 per item), then
        the items."""
        return 32 + 64 * len(self._order) + sum(self.sizes())

    def write(self, out: BinaryIO) -> int:
        """Write the ANS-104 bundle of the items in order to ``out``; return its bytes.

        Raises:
            FormatError: a streamed item's data is shorter than its header says.
        """
        order = self._order
        self._file.flush()
        written = out.write(len(order).to_bytes(32, "little"))
        for i in order:
            written += out.write(
                self._size(i).to_bytes(32, "little") + bytes(self._ids[32 * i : 32 * i + 32])
            )
        for i in order:
            self._file.seek(self._offsets[i])
            split = self._splits[i]
            head = self._file.read(split)
            written += out.write(head)
            written += out.write(self._owner)
            left = self._lengths[i] - split
            while left > 0:
                block = self._file.read(min(left, _COPY_BLOCK))
                if not block:
                    raise FormatError("bundle item spool: ended early")
                left -= len(block)
                written += out.write(block)
            size = self._streamed[i]
            if size >= 0:
                key = self._keys[i]
                opener = self._openers.get(i)
                if key >= 0 and self._reopen is not None:
                    reopened = self._reopen(key)
                elif opener is not None:
                    reopened = opener()
                else:
                    raise FormatError("bundle item spool: a streamed item without its data")
                with reopened as stream:
                    left = size
                    while left > 0:
                        block = stream.read(min(left, _COPY_BLOCK))
                        if not block:
                            raise FormatError(f"data item data: stream ended {left} bytes early")
                        left -= len(block)
                        written += out.write(block)
        return written

    def close(self) -> None:
        """Remove the spool."""
        self._file.close()


class _SpoolRange:
    """Reads of one range of the spool by ``os.pread`` (the file position is the writer's)."""

    def __init__(self, fd: int, offset: int, size: int) -> None:
        self._fd, self._pos, self._end = fd, offset, offset + size

    def read(self, n: int = -1) -> bytes:
        left = self._end - self._pos
        want = left if n < 0 else min(n, left)
        if want <= 0:
            return b""
        data = os.pread(self._fd, want, self._pos)
        self._pos += len(data)
        return data

    def close(self) -> None:
        self._pos = self._end

    def __enter__(self) -> _SpoolRange:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
