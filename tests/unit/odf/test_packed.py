"""odfweb3.odf.packed: where packed strings end, and the sequence protocol over ``_at``."""

from __future__ import annotations

from array import array

import pytest

from odfweb3.odf.packed import PackedSequence, append_end, start_of


def _ends_of(widths: list[int]) -> range | array[int]:
    ends: range | array[int] = range(0)
    end = 0
    for w in widths:
        end += w
        ends = append_end(ends, end, w)
    return ends


def test_strings_of_one_length_keep_a_range_and_another_length_turns_it_into_an_array() -> None:
    same = _ends_of([34, 34, 34])
    assert same == range(34, 103, 34) and list(same) == [34, 68, 102]
    mixed = _ends_of([34, 34, 5, 34])
    assert isinstance(mixed, array) and list(mixed) == [34, 68, 73, 107]
    assert [start_of(mixed, i) for i in range(4)] == [0, 34, 68, 73]
    assert list(_ends_of([0, 3])) == [0, 3]  # an empty string first: no range of step 0


class _Squares(PackedSequence[int]):
    __slots__ = ("_n",)

    def __init__(self, n: int) -> None:
        self._n = n

    def _at(self, i: int) -> int:
        return i * i

    def __len__(self) -> int:
        return self._n


def test_the_sequence_protocol_over_at() -> None:
    s = _Squares(5)
    assert list(s) == [0, 1, 4, 9, 16] and s[-1] == 16 and s[1:4] == [1, 4, 9]
    assert s == (0, 1, 4, 9, 16) and s != [0, 1, 4] and s.index(9) == 3 and 4 in s
    with pytest.raises(IndexError, match="_Squares index out of range"):
        s[5]
    with pytest.raises(TypeError):
        hash(s)
