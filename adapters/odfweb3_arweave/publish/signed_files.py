"""The file revisions a bundle adds, by path, over the ids the item spool holds raw.

A first ``bundle:`` upload adds one revision per object (300,000 at 100,000 blocks). Held as
a dict of :class:`~odfweb3_arweave.formats.record.AddedFile` and one of
:class:`~.bundle_plan.FileRef`, with both item ids as base64url text, that was some 0.6 KB
an object. :class:`SignedFiles` keeps per revision only the spool indexes of its data and
metadata items (whose 32-byte ids :class:`~.item_spool.ItemSpool` holds), its data size and
its place in path order, and makes each ``AddedFile`` or ``FileRef`` when asked; the plan's
entries (:class:`~.bundle_plan.FileToAdd`) give the path and the ``File-Id``.

A path is found by bisection over the revisions in path order. Readers that go through the
paths in sorted order (the record, the manifest) ask for the entry after the last one found
first: one comparison, not a bisection. The views iterate in path order and say so
(``path_ordered``), so those readers list no path
(:func:`~odfweb3_arweave.formats.manifest.in_path_order`).
"""

from __future__ import annotations

import heapq
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Generic, TypeVar

from odfweb3_arweave.formats.b64 import b64url_encode
from odfweb3_arweave.formats.record import AddedFile
from odfweb3_arweave.publish.bundle_plan import FileRef
from odfweb3_arweave.publish.item_spool import ItemSpool
from odfweb3_arweave.publish.planned_files import FileToAdd, PlannedFiles

__all__ = ["SignedFiles"]

V = TypeVar("V")


class SignedFiles:
    """Revision ``k`` is ``add[k]``, its data item spooled at ``data[k]``, its metadata
    item at ``meta[k]``, ``sizes[k]`` bytes of data (ciphertext size on a private drive)."""

    def __init__(
        self,
        add: Sequence[FileToAdd],
        spool: ItemSpool,
        data: Sequence[int],
        meta: Sequence[int],
        sizes: Sequence[int],
    ) -> None:
        if not len(add) == len(data) == len(meta) == len(sizes):
            raise ValueError("signed files: one data item, metadata item and size a revision")
        self._spool = spool
        self._data, self._meta, self._sizes = data, meta, sizes
        # The plan's packed entries give a path or File-Id without making the entry.
        if isinstance(add, PlannedFiles):
            self._path_of, self._file_id_of = add.path_at, add.file_id_at
        else:
            self._path_of = lambda k: add[k].path
            self._file_id_of = lambda k: add[k].file_id
        self._order = _path_order(len(add), self._path_of)
        self._hint = 0  # the place in path order after the last path found
        self.added: Mapping[str, AddedFile] = _View(self, self._added)
        self.files: Mapping[str, FileRef] = _View(self, self._file_ref)

    def __len__(self) -> int:
        return len(self._order)

    def path_at(self, place: int) -> str:
        """The path at ``place`` in path order."""
        return self._path_of(self._order[place])

    def find(self, path: str) -> int:
        """The revision of ``path``, or -1."""
        order, n, path_of = self._order, len(self._order), self._path_of
        place = self._hint
        if not (place < n and path_of(order[place]) == path):
            place = bisect_left(order, path, key=path_of)
            if place == n or path_of(order[place]) != path:
                return -1
        self._hint = place + 1
        return order[place]

    def _id(self, index: int) -> str:
        return b64url_encode(self._spool.item_id(index))

    def _added(self, k: int) -> AddedFile:
        return AddedFile(self._id(self._data[k]), self._id(self._meta[k]), self._file_id_of(k))

    def _file_ref(self, k: int) -> FileRef:
        data, meta = self._id(self._data[k]), self._id(self._meta[k])
        return FileRef(self._file_id_of(k), data, meta, self._sizes[k])


# Positions sorted this many at a time, then merged: sorting all at once would make a path
# string for every revision at once (~130 bytes each, 40 MB at 100,000 blocks).
_RUN = 1 << 14


def _path_order(n: int, path_of: Callable[[int], str]) -> array[int]:
    """``range(n)`` sorted by ``path_of``: sorted runs merged, a run's paths made at once."""
    runs = [
        array("I", sorted(range(start, min(n, start + _RUN)), key=path_of))
        for start in range(0, n, _RUN)
    ]
    if len(runs) <= 1:
        return runs[0] if runs else array("I")
    return array("I", heapq.merge(*runs, key=path_of))


class _View(Mapping[str, V], Generic[V]):
    """Path -> one form of a revision of ``files``; iterated in path order."""

    # Iterated in sorted path order already (formats.manifest.in_path_order: no sorted
    # list of every path made from it).
    path_ordered = True

    def __init__(self, files: SignedFiles, make: Callable[[int], V]) -> None:
        self._files = files
        self._make = make

    def __getitem__(self, path: str) -> V:
        k = self._files.find(path) if isinstance(path, str) else -1
        if k < 0:
            raise KeyError(path)
        return self._make(k)

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self._files.find(path) >= 0

    def __iter__(self) -> Iterator[str]:
        files = self._files
        return (files.path_at(place) for place in range(len(files)))

    def __len__(self) -> int:
        return len(self._files)
