"""Sequences kept packed: their items' fields in flat arrays, each item made when asked.

A first publish holds an entry per object of the chain (300,000 at 100,000 blocks) and per
data file from the chain walk to the end. As Python objects with their bytes and ints these
were some 200-260 bytes each; in flat arrays some 50. :class:`PackedSequence` is the sequence
protocol over one ``_at(i)``; :func:`append_end` keeps where each of the byte strings laid
one after the other in a ``bytearray`` ends.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import TypeVar, overload

__all__ = ["PackedSequence", "append_end", "start_of"]

T = TypeVar("T")


def append_end(ends: range | array[int], end: int, width: int) -> range | array[int]:
    """``ends`` with one more string, ``width`` bytes ending at ``end``: a ``range`` while
    every string has one length (a dataset's multihashes are all sha3-256, 34 bytes: no 8
    bytes an item kept), an array of the ends from the first string of another length."""
    if isinstance(ends, range):
        if width and (not ends or ends.step == width):
            return range(width, end + 1, width)
        ends = array("Q", ends)
    ends.append(end)
    return ends


def start_of(ends: range | array[int], i: int) -> int:
    """Where string ``i`` starts (where the one before it ends)."""
    return ends[i - 1] if i else 0


class PackedSequence(Sequence[T]):
    """The sequence protocol over ``_at(i)`` (an index already in range) and ``__len__``:
    negative indices, slices (``_slice``: a list unless the subclass packs them again),
    iteration, and equality with any sequence holding the same items (so, defining
    ``__eq__``, unhashable unless the subclass says how: Python sets ``__hash__`` to None)."""

    __slots__ = ()

    def _at(self, i: int) -> T:
        raise NotImplementedError

    def _slice(self, items: Iterable[T]) -> Sequence[T]:
        return list(items)

    @overload
    def __getitem__(self, i: int) -> T: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[T]: ...
    def __getitem__(self, i: int | slice) -> T | Sequence[T]:
        if isinstance(i, slice):
            return self._slice(self._at(k) for k in range(*i.indices(len(self))))
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"{type(self).__name__} index out of range")
        return self._at(i)

    def __iter__(self) -> Iterator[T]:
        for i in range(len(self)):
            yield self._at(i)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
