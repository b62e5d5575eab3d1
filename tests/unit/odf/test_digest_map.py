"""DigestMap: a dict (or set) of digest-ended keys, exact whatever the bucket holds, and
bounded whatever keys a hostile input chooses."""

import hashlib
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import odfweb3.odf.digest_map as dm
from odfweb3.odf.digest_map import DigestMap

_PREFIXES = (b"\x16\x20", b"\x01\x55\x12\x20", b"\x01\x70\x12\x20", b"")
_DIGEST = st.one_of(
    st.binary(min_size=32, max_size=32),
    # digests that share their first bytes: with the crude bucket choice below, one bucket,
    # so matches across slots happen
    st.tuples(st.sampled_from([b"\x00\x00", b"\xab\xab"]), st.binary(min_size=30, max_size=30)).map(
        b"".join
    ),
    st.binary(max_size=30),  # short keys: the plain dict
)
# the real bucket choice, and a crude one that puts most digests in one of two buckets
_BUCKET_CHOICES: tuple[Callable[[bytes], int], ...] = (dm._bucket_of, lambda d: d[0] >> 7)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["put", "discard"]),
            st.integers(0, 3),
            _DIGEST,
            st.binary(min_size=5, max_size=5),
        )
    )
)
def test_a_digest_map_behaves_as_a_dict_of_bytes(ops: list[tuple[str, int, bytes, bytes]]) -> None:
    for bucket_of in _BUCKET_CHOICES:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(dm, "_bucket_of", bucket_of)
            got = DigestMap(5)
            model: dict[bytes, bytes] = {}
            for op, kind, digest, value in ops:
                key = _PREFIXES[kind] + digest
                if op == "put":
                    assert got.put(key, value) is (key not in model)
                    model[key] = value  # a key put twice keeps its last value
                else:
                    got.discard(key)
                    model.pop(key, None)
                assert len(got) == len(model)
            for _, _kind, digest, _value in ops:
                for prefix in _PREFIXES:
                    key = prefix + digest
                    assert got.get(key) == model.get(key)
                    assert (key in got) is (key in model)
            assert "not bytes" not in got
            with pytest.raises(ValueError):
                got.put(b"\x01" * 40, b"six by")


def test_a_digest_found_only_across_two_slots_is_not_a_member(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dm, "_bucket_of", lambda d: 0)  # one bucket for all
    a, b = b"\x00\x00" + b"\x11" * 28 + b"\x00\x00", b"\x00\x00" + b"\x22" * 30
    got = DigestMap()
    got.put(b"\x16\x20" + a)
    got.put(b"\x16\x20" + b)
    straddle = b"\x16\x20" + b"\x00\x00" * 2 + b"\x22" * 28  # a's last two, b's first thirty
    assert straddle not in got and got.put(straddle) and len(got) == 3
    got.discard(straddle)
    assert straddle not in got and b"\x16\x20" + a in got and b"\x16\x20" + b in got


def test_a_digest_map_of_width_0_is_a_set() -> None:
    keys = [b"\x16\x20" + hashlib.sha3_256(bytes([i])).digest() for i in range(200)]
    got = DigestMap()
    assert all(got.put(k) for k in keys) and not any(got.put(k) for k in keys)
    assert len(got) == 200 and all(k in got for k in keys)


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


def test_chosen_digests_do_not_share_a_bucket() -> None:
    # An identity CID's "digest" is its own bytes, so a hostile replica chooses it: 20,000
    # keys with the same prefix and the same first 30 bytes still spread over the buckets
    # (a bucket chosen by the first bytes would hold them all, each look-up a scan of all).
    prefix = b"\x01\x55\x00\x22" + b"\x00\x00"
    keys = [prefix + b"\xee" * 30 + i.to_bytes(2, "big") for i in range(20_000)]
    got = DigestMap()
    for key in keys:
        assert got.put(key)
    table = got._tables[prefix]
    assert max(len(b) for b in table.buckets) // 32 < 100  # about 5 a bucket on average
    assert all(k in got for k in keys)


def test_hostile_prefixes_make_a_few_tables_at_most() -> None:
    # identity CIDs of 33..100 bytes: each length and first byte a prefix of its own; a
    # table of 4,096 buckets each would cost some 260 KB a key
    keys = [
        b"\x01\x55\x00"
        + bytes((n,))
        + bytes((i,)) * (n - 32)
        + hashlib.sha256(bytes((i, n))).digest()
        for n in range(33, 101)
        for i in range(20)
    ]  # each a CID's bytes: version, codec, identity, length n, then the n bytes
    got = DigestMap()
    for key in keys:
        got.put(key)
    assert len(got._tables) <= dm._MAX_TABLES
    assert all(len(p) <= dm._MAX_PREFIX for p in got._tables)
    assert len(got) == len(set(keys)) and all(k in got for k in keys)
    for key in keys[::2]:
        got.discard(key)
    assert len(got) == len(set(keys[1::2]) - set(keys[::2]))


def test_items_lists_every_key_and_value() -> None:
    m = DigestMap(4)
    want = {
        b"\x12\x20" + bytes([i % 256, i // 256]) * 16: i.to_bytes(4, "big") for i in range(3000)
    }
    want[b"short"] = b"abcd"  # kept in the plain dict
    for k, v in want.items():
        m.put(k, v)
    assert dict(m.items()) == want
