"""DigestMap: a dict (or set) of digest-ended keys, exact whatever the bucket holds."""

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import odfweb3.odf.digest_map as dm
from odfweb3.odf.digest_map import DigestMap

_PREFIXES = (b"\x16\x20", b"\x01\x55\x12\x20", b"\x01\x70\x12\x20", b"")
_DIGEST = st.one_of(
    st.binary(min_size=32, max_size=32),
    # digests that share their first bytes: one bucket, matches across slots
    st.tuples(st.sampled_from([b"\x00\x00", b"\xab\xab"]), st.binary(min_size=30, max_size=30)).map(
        b"".join
    ),
    st.binary(max_size=30),  # short keys: the plain dict
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), _DIGEST, st.binary(min_size=5, max_size=5))))
def test_a_digest_map_behaves_as_a_dict_of_bytes(puts: list[tuple[int, bytes, bytes]]) -> None:
    got = DigestMap(5)
    model: dict[bytes, bytes] = {}
    for kind, digest, value in puts:
        key = _PREFIXES[kind] + digest
        assert got.put(key, value) is (key not in model)
        model[key] = value  # a key put twice keeps its last value
        assert len(got) == len(model)
    for _, digest, _value in puts:
        for prefix in _PREFIXES:
            key = prefix + digest
            assert got.get(key) == model.get(key)
            assert (key in got) is (key in model)
    assert "not bytes" not in got
    with pytest.raises(ValueError):
        got.put(b"\x01" * 40, b"six by")


def test_a_digest_map_of_width_0_is_a_set() -> None:
    keys = [b"\x16\x20" + hashlib.sha3_256(bytes([i])).digest() for i in range(200)]
    got = DigestMap()
    assert all(got.put(k) for k in keys) and not any(got.put(k) for k in keys)
    assert len(got) == 200 and all(k in got for k in keys)
    # a digest found only across two slots of a bucket is not a member
    a, b = b"\x00\x00" + b"\x11" * 28 + b"\x00\x00", b"\x00\x00" + b"\x22" * 30
    fresh = DigestMap()
    fresh.put(b"\x16\x20" + a)
    fresh.put(b"\x16\x20" + b)
    straddle = b"\x16\x20" + b"\x00\x00" * 2 + b"\x22" * 28  # a's last two, b's first thirty
    assert straddle not in fresh and fresh.put(straddle) and len(fresh) == 3


def test_a_digest_map_grows_and_a_value_never_matches_a_digest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dm, "_FIRST_BITS", 1)  # 2 buckets, doubled past 2 per bucket
    monkeypatch.setattr(dm, "_GROW_AT", 2)
    keys = [b"\x16\x20" + hashlib.sha256(i.to_bytes(4, "big")).digest() for i in range(2000)]
    got = DigestMap(32)
    for i, key in enumerate(keys):
        got.put(key, keys[(i + 1) % len(keys)][-32:])  # values that are other keys' digests
    table = next(iter(got._tables.values()))
    assert table.bits > 1 and table.count == 2000  # it grew, and no entry was lost
    assert all(got.get(k) == keys[(i + 1) % 2000][-32:] for i, k in enumerate(keys))
    assert got.get(b"\x16\x20" + bytes(32)) is None and got.get(b"\x01\x55" + keys[0]) is None
