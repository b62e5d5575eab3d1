"""The tracked HAMT builder: the same trie as build_hamt, built from scratch or
updated from the previous trie's shard table, sending exactly the shards the previous trie
lacks (no list of the blocks sent before)."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odfweb3_ipfs.formats.hamt import build_hamt, build_hamt_partial, build_hamt_tracked, hamt_hash


def _link(name: bytes) -> tuple[bytes, int]:
    return b"\x01\x55\x12\x20" + hashlib.sha256(name).digest(), len(name) * 7 + 1


def _full(names: list[bytes], fanout: int) -> tuple[bytes, int, set[bytes]]:
    blocks: set[bytes] = set()
    cid, tsize, _ = build_hamt(
        [(n, *_link(n)) for n in names],
        cid_version=1,
        sink=lambda c, b: blocks.add(c.raw),
        fanout=fanout,
    )
    return cid.raw, tsize, blocks


names_st = st.lists(st.binary(min_size=1, max_size=6), min_size=2, max_size=120, unique=True)


@settings(max_examples=150, deadline=None)
@given(names_st, st.integers(min_value=0, max_value=30), st.sampled_from([8, 16, 256]))
def test_update_equals_full_build(names: list[bytes], n_added: int, fanout: int) -> None:
    n_added = min(n_added, len(names) - 1)
    old, added = names[: len(names) - n_added], names[len(names) - n_added :]
    _, _, table = build_hamt_tracked(old, _link, cid_version=1, sink=None, fanout=fanout)
    assert _full(old, fanout)[:2] == (table[""][0], table[""][1])
    sent: set[bytes] = set()
    asked: list[bytes] = []

    def link(name: bytes) -> tuple[bytes, int]:
        asked.append(name)
        return _link(name)

    cid, tsize, new_table = build_hamt_tracked(
        names, link, cid_version=1, sink=lambda c, b: sent.add(c.raw), fanout=fanout,
        previous=table, added=added,
    )  # fmt: skip
    root, full_tsize, all_blocks = _full(names, fanout)
    assert (cid.raw, tsize) == (root, full_tsize)
    assert {raw for raw, _ in new_table.values()} <= all_blocks
    assert all(len(path) <= 2 * len(f"{fanout - 1:X}") for path in new_table)  # depth <= 1
    # exactly the new trie's blocks the old one lacks (nothing sent twice, nothing missing)
    assert sent == all_blocks - _full(old, fanout)[2]
    fresh = build_hamt_tracked(names, _link, cid_version=1, sink=None, fanout=fanout)[2]
    assert new_table == fresh


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.binary(min_size=1, max_size=6), min_size=2, max_size=600, unique=True),
    st.integers(min_value=0, max_value=30),
)
def test_partial_update_equals_the_tracked_one(names: list[bytes], n_added: int) -> None:
    # build_hamt_partial (car:DIR's object index: only the changed root buckets' names)
    # gives the trie, the table and the sent blocks of build_hamt_tracked over every name.
    n_added = min(n_added, len(names) - 1)
    old, added = names[: len(names) - n_added], names[len(names) - n_added :]
    _, _, table = build_hamt_tracked(old, _link, cid_version=1, sink=None, fanout=256)
    want_sent: set[bytes] = set()
    want = build_hamt_tracked(
        names, _link, cid_version=1, sink=lambda c, b: want_sent.add(c.raw), fanout=256,
        previous=table, added=added,
    )  # fmt: skip
    by_bucket: dict[int, list[bytes]] = {}
    for n in names:
        by_bucket.setdefault(hamt_hash(n) >> 56, []).append(n)
    changed = {hamt_hash(n) >> 56 for n in added}
    buckets = {i: (group if i in changed else None) for i, group in by_bucket.items()}
    sent: set[bytes] = set()
    got = build_hamt_partial(
        buckets, _link, cid_version=1, sink=lambda c, b: sent.add(c.raw), previous=table,
        single=lambda i: by_bucket[i][0], added=added,
    )  # fmt: skip
    assert (got[0].raw, got[1]) == (want[0].raw, want[1])
    assert got[2] == want[2]
    assert sent == want_sent == _full(names, 256)[2] - _full(old, 256)[2]


def test_one_added_name_rebuilds_one_shard_path() -> None:
    names = [f"name-{i}".encode() for i in range(5000)]
    _, _, table = build_hamt_tracked(names[:-1], _link, cid_version=1, sink=None, fanout=256)
    sent: list[bytes] = []
    asked: list[bytes] = []

    def link(name: bytes) -> tuple[bytes, int]:
        asked.append(name)
        return _link(name)

    build_hamt_tracked(
        names, link, cid_version=1, sink=lambda c, b: sent.append(c.raw), fanout=256,
        previous=table, added=names[-1:],
    )  # fmt: skip
    assert 2 <= len(sent) <= 8  # the root and the shards on the new name's path only
    assert len(asked) < 300  # only the entries of those shards, not all 5,000


def test_the_table_stays_small_for_a_large_directory() -> None:
    # 100,000 entries: the root and its 256 children only (a publish state must stay small).
    names = [f"n{i}".encode() for i in range(100_000)]
    _, _, table = build_hamt_tracked(names, _link, cid_version=1, sink=None, fanout=256)
    assert len(table) == 257


# Fixed names at each fanout: root CID, tsize, shard count and every block (CID and bytes,
# hashed in sink order) as the builder gave them before its three forms became one
# (fanout 256 is also pinned to Kubo's vectors in test_unixfs.py).
@pytest.mark.parametrize(
    ("fanout", "count", "version", "root", "tsize", "shards", "blocks_sha256"),
    [
        (
            8,
            300,
            1,
            "bafybeig5udjfpgrrimcifxt2pre2yqcjh5vuvtxykewsn7aft4xadlcbri",
            64268,
            147,
            "e4f9984c100eed5187335c697463115b6d662257a62f3575b53c9a3eaa53643a",
        ),
        (
            16,
            1000,
            0,
            "QmaJNf6uTmxDaedbw7um3WmHNFGgBKSsei7QjbBoBaQnZb",
            206631,
            362,
            "127c61146a34761eff16b3f16f016ca6fb6883b271610befaf926fbf308d08f4",
        ),
        (
            256,
            3000,
            1,
            "bafybeia2rll4xotpje7wvz6eft52pm3rcspqnx6xsokapidllsbillo3pm",
            588955,
            308,
            "ad964efeb0b8babd2fd2fac05593e3e05ca708201a385161e86c42d11360392f",
        ),
    ],
)
def test_golden_tries(
    fanout: int, count: int, version: int, root: str, tsize: int, shards: int, blocks_sha256: str
) -> None:
    names = [
        hashlib.sha256(f"{fanout}-{i}".encode()).hexdigest()[: 8 + i % 20].encode()
        for i in range(count)
    ]
    h = hashlib.sha256()
    cid, size, n = build_hamt(
        [(x, *_link(x)) for x in names],
        cid_version=version,
        sink=lambda c, b: h.update(c.raw + b),
        fanout=fanout,
    )
    assert (cid.encode(), size, n, h.hexdigest()) == (root, tsize, shards, blocks_sha256)
    # The tracked form from scratch: the same blocks in the same order.
    h2 = hashlib.sha256()
    cid2, size2, table = build_hamt_tracked(
        names, _link, cid_version=version, sink=lambda c, b: h2.update(c.raw + b), fanout=fanout
    )
    assert (cid2.encode(), size2, h2.hexdigest()) == (root, tsize, blocks_sha256)
    assert table[""] == (cid2.raw, size2)
