"""HAMT-sharded UnixFS directories, built as Kubo (boxo ``ipld/unixfs/hamt``) builds them.

Facts taken from boxo (``hamt/hamt.go``, ``hamt/util.go``) and go-bitfield:

- Hash: murmur3 x64 128 with seed 0, of which boxo keeps the first 64-bit half
  (``h1``) written big-endian (spaolacci/murmur3 ``New64().Sum(nil)``). The
  ``mmh3`` package's ``mmh3_x64_128_digest`` returns ``h1`` then ``h2`` little-endian,
  so the boxo hash is the first 8 digest bytes reversed.
- Bucket index at depth ``d``: the next ``log2(fanout)`` bits of that hash, most
  significant bits first (8 bits = one hash byte per level for fanout 256).
- Shape: a bucket holding one entry links straight to it, named
  ``"%02X" % index + name``; a bucket holding several entries links to a child
  shard named ``"%02X" % index`` alone. The trie is canonical (boxo collapses
  shards on removal), so the result does not depend on insertion order.
- Node ``Data``: UnixFS ``{Type: HAMTShard, Data: bitfield, hashType: 0x22
  (murmur3-x64-64), fanout}``; the bitfield is big-endian with bit ``i`` set for
  each used bucket ``i`` and leading zero bytes stripped (go-bitfield ``Bytes``).
- Links in bucket order (upper-case hex prefixes sort the same way by bytes).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

import mmh3

from odfweb3.errors import FormatError
from odfweb3_ipfs.formats.cid import CODEC_DAG_PB, Cid, encode_uvarint
from odfweb3_ipfs.formats.dagpb import encode_link
from odfweb3_ipfs.formats.unixfs_data import DataType, UnixFSData, encode_unixfs_data

__all__ = [
    "DEFAULT_FANOUT",
    "HASH_MURMUR3_X64_64",
    "ShardEntry",
    "ShardTable",
    "build_hamt",
    "build_hamt_partial",
    "build_hamt_tracked",
    "hamt_hash",
]

DEFAULT_FANOUT: Final = 256
HASH_MURMUR3_X64_64: Final = 0x22

# (name bytes, child CID bytes, child tsize)
ShardEntry = tuple[bytes, bytes, int]
BlockSinkFn = Callable[[Cid, bytes], object]


def hamt_hash(name: bytes) -> int:
    """The 64-bit boxo HAMT hash of an entry name (murmur3 x64 128, first half)."""
    return int.from_bytes(mmh3.mmh3_x64_128_digest(name, 0)[:8], "little")


def _check_fanout(fanout: int) -> tuple[int, int]:
    if fanout < 8 or fanout & (fanout - 1) or fanout > 1024:
        raise ValueError("HAMT fanout must be a power of two between 8 and 1024")
    bits = fanout.bit_length() - 1
    width = len(f"{fanout - 1:X}")
    return bits, width


def build_hamt(
    entries: Sequence[ShardEntry],
    *,
    cid_version: int,
    sink: BlockSinkFn | None,
    fanout: int = DEFAULT_FANOUT,
) -> tuple[Cid, int, int]:
    """Build the sharded directory for ``entries``.

    Args:
        entries: ``(name, child cid bytes, child tsize)``, names unique.
        cid_version: CID version of the shard nodes (0 or 1).
        sink: receives every shard block as ``(cid, bytes)``.
        fanout: shard width (Kubo: 256).

    Returns:
        ``(root cid, root tsize, number of shard blocks)``.
    """
    links = {name: (cid, tsize) for name, cid, tsize in entries}
    count = 0

    def counted(cid: Cid, block: bytes) -> None:
        nonlocal count
        count += 1
        if sink is not None:
            sink(cid, block)

    # keep_depth -1: no table is kept (nobody updates this trie later).
    names = list(links)
    builder = _Builder(links.__getitem__, cid_version, counted, fanout, {}, None, -1, names)
    cid, tsize = builder.level(_items(names), 0, "")
    return cid, tsize, count


# Bucket path of a shard ("" for the root, then each level's upper-case hex index, e.g.
# "3A1F") -> (shard CID bytes, shard tsize): what an update needs of the previous trie.
ShardTable = dict[str, tuple[bytes, int]]


def build_hamt_tracked(
    names: Sequence[bytes],
    link_of: Callable[[bytes], tuple[bytes, int]],
    *,
    cid_version: int,
    sink: BlockSinkFn | None,
    fanout: int = DEFAULT_FANOUT,
    previous: ShardTable | None = None,
    added: Sequence[bytes] = (),
    keep_depth: int = 1,
) -> tuple[Cid, int, ShardTable]:
    """:func:`build_hamt` that records every shard, and reuses an earlier trie's.

    Args:
        names: every entry name (unique).
        link_of: an entry's ``(child cid bytes, child tsize)``; asked only for the entries
            of rebuilt shards.
        previous: the table of a trie built (with the same ``fanout`` and ``cid_version``)
            from ``names`` minus ``added``; None builds everything.
        added: the names ``previous`` lacks. A shard none of them falls under is the same
            node as before (the trie is canonical and entries were only added): linked by
            its recorded CID when the table has it, else rebuilt, and never sent to ``sink``
            (the previous trie's blocks were sent with it); only the shards on the added
            names' paths are, and they are all new (each holds an entry it never held).
        keep_depth: record shards down to this depth only (0 = the root): the root and its
            children (at most ``fanout + 1`` entries) keep the table small however large the
            directory; a changed child is rebuilt whole from its entries (1/``fanout`` of
            them), its unchanged descendants giving the blocks they gave before.

    Returns:
        ``(root cid, root tsize, table of every shard of the new trie)``.
    """
    _check_fanout(fanout)
    table: ShardTable = dict(previous) if previous is not None else {}
    dirty = _paths_of(added, fanout) if previous is not None else None
    builder = _Builder(link_of, cid_version, sink, fanout, table, dirty, keep_depth, names)
    root, tsize = builder.level(_items(names), 0, "")
    return root, tsize, table


def build_hamt_partial(
    buckets: Mapping[int, Sequence[bytes] | None],
    link_of: Callable[[bytes], tuple[bytes, int]],
    *,
    cid_version: int,
    sink: BlockSinkFn | None,
    previous: ShardTable,
    single: Callable[[int], bytes],
    added: Sequence[bytes],
) -> tuple[Cid, int, ShardTable]:
    """:func:`build_hamt_tracked` at fanout 256 from the root's buckets alone.

    The same trie, and the same blocks to ``sink``, as ``build_hamt_tracked(all names, ...,
    previous=previous, added=added)`` without naming every entry: ``buckets`` maps each used
    root bucket to every name in it when it changed (its child is rebuilt from them), or to
    None when it did not (its child shard is linked from ``previous``, or, when ``previous``
    records none there, the bucket's one entry is linked: ``single(bucket)`` names it).
    ``added`` are the names ``previous`` lacks (each in a changed bucket): only the shards
    on their paths are sent; a rebuilt child's other shards are the previous trie's.

    Returns:
        ``(root cid, root tsize, table of the root and its children)``.
    """
    fanout = DEFAULT_FANOUT
    table: ShardTable = dict(previous)
    flat: list[bytes] = []
    root: dict[int, list[int] | None] = {}
    for index, names in buckets.items():
        if names is None:
            root[index] = None
        else:
            root[index] = _items(names, len(flat))
            flat.extend(names)
    builder = _Builder(
        link_of, cid_version, sink, fanout, table, _paths_of(added, fanout), 1, flat, single
    )
    cid, tsize = builder.shard(root, 0, "")
    return cid, tsize, table


# An entry while a trie is built: its 64-bit HAMT hash above its index in the builder's
# names, in one int (some 36 bytes, where a (hash, name) tuple was some 100 and the names
# list another 100 an entry: a first publish's top directory holds 100,000 of them at
# 100,000 blocks, and the names may be made when asked).
_INDEX_BITS: Final = 32
_INDEX_MASK: Final = (1 << _INDEX_BITS) - 1


def _items(names: Iterable[bytes], first: int = 0) -> list[int]:
    """Each name's entry: its hash and its index (from ``first``)."""
    return [(hamt_hash(n) << _INDEX_BITS) | i for i, n in enumerate(names, first)]


def _paths_of(added: Sequence[bytes], fanout: int) -> set[str]:
    """The bucket paths of every shard an entry of ``added`` falls under, root (``""``)
    included: the shards an update that adds them changes."""
    bits, width = _check_fanout(fanout)
    paths: set[str] = set()
    for name in added:
        h = hamt_hash(name)
        path = ""
        for depth in range(64 // bits):
            paths.add(path)
            path += f"{(h >> (64 - (depth + 1) * bits)) & (fanout - 1):0{width}X}"
    return paths


class _Builder:
    """One trie build: shards rebuilt from entries, unchanged ones reused from a table."""

    def __init__(
        self,
        link_of: Callable[[bytes], tuple[bytes, int]],
        cid_version: int,
        sink: BlockSinkFn | None,
        fanout: int,
        table: ShardTable,
        dirty: set[str] | None,
        keep_depth: int,
        names: Sequence[bytes],
        single: Callable[[int], bytes] | None = None,
    ) -> None:
        self.link_of = link_of
        self.names = names
        self._single = single
        self.cid_version = cid_version
        self.sink = sink
        self.fanout = fanout
        self.bits, self.width = _check_fanout(fanout)
        self.table = table
        # None: reuse nothing from the table, send every shard; else only the shards on
        # these paths changed: the others are the previous trie's (reused or rebuilt, as
        # the table allows), never sent again (no list of every block sent).
        self.dirty = dirty
        self.keep_depth = keep_depth

    def level(self, items: list[int], depth: int, path: str) -> tuple[Cid, int]:
        """The shard at ``path`` (``depth`` levels down) holding ``items`` (:func:`_items`)."""
        shift = 64 - (depth + 1) * self.bits
        if shift < 0:
            # boxo: "sharded directory too deep" (needs a 64-bit hash collision)
            raise FormatError("HAMT directory too deep: entry names collide in all 64 hash bits")
        mask = self.fanout - 1
        shift += _INDEX_BITS
        buckets: dict[int, list[int] | None] = {}
        for item in items:
            index = (item >> shift) & mask
            group = buckets.get(index)
            if group is None:
                buckets[index] = [item]
            else:
                group.append(item)
        return self.shard(buckets, depth, path)

    def shard(
        self, buckets: Mapping[int, list[int] | None], depth: int, path: str
    ) -> tuple[Cid, int]:
        """The shard at ``path`` from its buckets: each used bucket's entries, or None for a
        bucket known unchanged without its entries (linked from the table, or its one entry
        named by :attr:`single`)."""
        width, table = self.width, self.table
        parts: list[bytes] = []
        bitfield = 0
        total = 0
        for index in sorted(buckets):
            group = buckets[index]
            bitfield |= 1 << index
            hexed = f"{index:0{width}X}"
            prefix = hexed.encode("ascii")
            sub = path + hexed
            if group is None:
                kept = table.get(sub)
                if kept is not None:
                    child, tsize = kept
                    parts.append(encode_link(child, prefix, tsize))
                else:
                    name = self.single(index)
                    child, tsize = self.link_of(name)
                    parts.append(encode_link(child, prefix + name, tsize))
            elif len(group) == 1:
                # One entry: linked straight, no child shard (none kept for this bucket).
                table.pop(sub, None)
                name = self.names[group[0] & _INDEX_MASK]
                child, tsize = self.link_of(name)
                parts.append(encode_link(child, prefix + name, tsize))
            else:
                reuse = self.dirty is not None and sub not in self.dirty
                kept = table.get(sub) if reuse else None
                if kept is not None:
                    child, tsize = kept
                else:
                    cid, tsize = self.level(group, depth + 1, sub)
                    child = cid.raw
                parts.append(encode_link(child, prefix, tsize))
            total += tsize
        fresh = self.dirty is None or path in self.dirty
        cid, size = _encode_shard(
            parts, bitfield, self.fanout, self.cid_version, self.sink if fresh else None
        )
        if depth <= self.keep_depth:
            table[path] = (cid.raw, size + total)
        return cid, size + total

    def single(self, index: int) -> bytes:
        """The one entry of an unchanged bucket the table records no shard for (only a
        partial build, which names buckets without their entries, asks)."""
        if self._single is None:
            raise FormatError(f"HAMT bucket {index:X} is unchanged but its entry is unknown")
        return self._single(index)


def _encode_shard(
    parts: list[bytes], bitfield: int, fanout: int, cid_version: int, sink: BlockSinkFn | None
) -> tuple[Cid, int]:
    """One shard node from its encoded links: its CID and block length."""
    data = encode_unixfs_data(
        UnixFSData(
            type=DataType.HAMT_SHARD,
            data=bitfield.to_bytes((bitfield.bit_length() + 7) // 8, "big") or None,
            hash_type=HASH_MURMUR3_X64_64,
            fanout=fanout,
        )
    )
    block = b"".join([*parts, b"\x0a" + encode_uvarint(len(data)), data])
    cid = Cid.sha256(hashlib.sha256(block).digest(), version=cid_version, codec=CODEC_DAG_PB)
    if sink is not None:
        sink(cid, block)
    return cid, len(block)
