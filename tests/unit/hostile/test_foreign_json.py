"""The one loader for foreign JSON refuses in one FormatError line."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odfweb3.errors import FormatError
from odfweb3.foreign_json import _NOT_BRACKET, _STRING, check_depth, load_foreign_json


def _load(data: bytes, **kw):  # type: ignore[no-untyped-def]
    return load_foreign_json(
        data, what="publish.json", max_bytes=kw.pop("max_bytes", 1 << 20), **kw
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"[" * 1_000_000 + b"]" * 1_000_000, "nested deeper than 64"),
        (b'{"a":' * 200_000 + b"1" + b"}" * 200_000, "nested deeper than 64"),
        (b'{"k": "\xff\xfe"}', "not UTF-8"),
        (b'{"k": "\xed\xa0\x80"}', "not UTF-8"),  # a UTF-8-encoded lone surrogate
        (b"\xef\xbb\xbf{}", "byte-order mark"),
        (b'{"n": NaN}', "not JSON"),
        (b"{} {}", "not JSON"),
        (b"", "not JSON"),
        (b"[1]", "JSON dict was expected"),
    ],
)
def test_hostile_documents_are_one_format_error(data: bytes, message: str) -> None:
    with pytest.raises(FormatError, match=message) as info:
        _load(data, max_bytes=8 << 20, expect=dict)
    assert "publish.json" in str(info.value) and "\n" not in str(info.value)


def test_size_is_checked_before_anything_else() -> None:
    with pytest.raises(FormatError, match="larger than 100 bytes"):
        _load(b"\xff" * 101, max_bytes=100)


def test_brackets_inside_strings_do_not_count() -> None:
    doc = {"s": "[" * 1000 + '\\"{' * 100, "deep": [[[[1]]]]}
    assert _load(json.dumps(doc).encode()) == doc


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='[]{}"\\ab', max_size=80), st.integers(min_value=0, max_value=6))
def test_depth_fast_path_agrees_with_the_string_regex(text: str, limit: int) -> None:
    # Documents without escapes take a split instead of the regex; both must
    # refuse exactly the same inputs (the regex path is the reference).
    data = text.encode()
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKET)
    depth = deepest = 0
    for b in brackets:
        depth += 1 if b in b"[{" else -1
        deepest = max(deepest, depth)
    if deepest > limit:
        with pytest.raises(FormatError, match="nested deeper"):
            check_depth(data, limit, "doc")
    else:
        check_depth(data, limit, "doc")


def test_depth_64_is_accepted_65_refused() -> None:
    assert _load(b"[" * 64 + b"]" * 64) is not None
    with pytest.raises(FormatError):
        _load(b"[" * 65 + b"]" * 65)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_give_a_value_or_a_format_error(data: bytes) -> None:
    try:
        value = _load(data)
    except FormatError as exc:
        assert "\n" not in str(exc)
    else:
        assert value == json.loads(data)


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
        max_leaves=30,
    )
)
def test_round_trip(value: object) -> None:
    assert _load(json.dumps(value).encode()) == value
