"""The file entity revisions a bundle adds (:class:`FileToAdd`), kept packed.

A first upload adds a revision per object (300,000 at 100,000 blocks). A ``FileToAdd`` per
object, its :class:`~odfweb3.odf.chain.DatasetObject`, path string and ``File-Id`` text
held from the plan to the end of the publish were some 0.45 KB an object.
:class:`PlannedFiles` keeps per object only its ``File-Id`` as 16 raw bytes and its data
size, over the publish plan's own list of objects (the chain's packed
:class:`~odfweb3.odf.chain.ObjectList`), and makes each entry when asked; the last entry
(``refs/head``, its content in memory) is held as it is.
"""

from __future__ import annotations

import uuid
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import overload

from odfweb3.odf.chain import DatasetObject, ObjectList
from odfweb3_arweave.formats.arfs import OCTET_STREAM, DriveLayout, is_uuid

__all__ = ["FileToAdd", "PlannedFiles"]


@dataclass(frozen=True, slots=True)
class FileToAdd:
    """One file entity revision the bundle adds.

    Attributes:
        path: dataset path (``data/f1620…``, ``refs/head``).
        folder_id: parent folder id.
        file_id: ``File-Id`` (reused when the path was uploaded before).
        size: data size.
        content_type: media type of the data.
        obj: the dataset object to stream, or None for in-memory ``content``.
        content: the bytes (``refs/head``) when ``obj`` is None.
    """

    path: str
    folder_id: str
    file_id: str
    size: int
    content_type: str
    obj: DatasetObject | None = None
    content: bytes | None = None

    @property
    def name(self) -> str:
        """The ArFS file name: the last path segment."""
        return self.path.rsplit("/", 1)[-1]


class PlannedFiles(Sequence[FileToAdd]):
    """The objects of ``send`` (each an ``application/octet-stream`` file in its layout
    folder of ``drive``), then ``last``; built by :meth:`append` in ``send``'s order."""

    def __init__(self, send: Sequence[DatasetObject], drive: DriveLayout) -> None:
        self._send, self._drive = send, drive
        self._ids = bytearray()
        self._sizes = array("q")
        self._odd: dict[int, str] = {}  # a File-Id that is not a lower-case UUID, as given
        self._last: FileToAdd | None = None

    def append(self, file_id: str, size: int) -> None:
        """The next object of ``send``: its ``File-Id`` and data size."""
        k = len(self._sizes)
        if k >= len(self._send):
            raise IndexError("planned files: more entries than objects sent")
        if is_uuid(file_id):
            self._ids += uuid.UUID(file_id).bytes  # lower-case hyphenated: str() gives it back
        else:
            self._ids += bytes(16)
            self._odd[k] = file_id
        self._sizes.append(size)

    def close(self, last: FileToAdd) -> None:
        """The last entry (``refs/head``), after every object of ``send``."""
        if len(self._sizes) != len(self._send):
            raise ValueError("planned files: an object sent without its entry")
        self._last = last

    def path_at(self, k: int) -> str:
        """The path of entry ``k`` (no entry made)."""
        if k == len(self._sizes):
            return self._end().path
        send = self._send
        return send.path_at(k) if isinstance(send, ObjectList) else send[k].path

    def file_id_at(self, k: int) -> str:
        """The ``File-Id`` of entry ``k`` (no entry made)."""
        if k == len(self._sizes):
            return self._end().file_id
        odd = self._odd.get(k)
        if odd is not None:
            return odd
        return str(uuid.UUID(bytes=bytes(self._ids[16 * k : 16 * k + 16])))

    def _end(self) -> FileToAdd:
        if self._last is None:
            raise ValueError("planned files: not closed")
        return self._last

    def _at(self, k: int) -> FileToAdd:
        n = len(self._sizes)
        if k == n:
            return self._end()
        if not 0 <= k < n:
            raise IndexError("planned file index out of range")
        obj = self._send[k]
        path = obj.path
        folder = self._drive.folder_for(path)
        return FileToAdd(path, folder, self.file_id_at(k), self._sizes[k], OCTET_STREAM, obj)

    def __len__(self) -> int:
        return len(self._sizes) + (self._last is not None)

    def __iter__(self) -> Iterator[FileToAdd]:
        for k in range(len(self)):
            yield self._at(k)

    @overload
    def __getitem__(self, k: int) -> FileToAdd: ...
    @overload
    def __getitem__(self, k: slice) -> Sequence[FileToAdd]: ...
    def __getitem__(self, k: int | slice) -> FileToAdd | Sequence[FileToAdd]:
        if isinstance(k, slice):
            return [self._at(i) for i in range(*k.indices(len(self)))]
        return self._at(k + len(self) if k < 0 else k)
