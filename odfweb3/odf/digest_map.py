"""A compact map from keys ending in a 32-byte digest (multihashes, CID bytes) to
fixed-size values: the memory of the per-object tables a publish, a verify or a pull keeps
(300,000 objects, 400,000 CAR blocks at 100,000 blocks)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

__all__ = ["DigestMap"]

_DIGEST: Final = 32  # a sha2-256 / sha3-256 digest
_FIRST_BITS: Final = 12  # a new bucket table: 4,096 buckets
_MAX_BITS: Final = 24  # at most 16 Mi buckets
_GROW_AT: Final = 64  # entries per bucket on average before the table doubles
# Bucket tables are made for short key prefixes only, and a few of them: real keys have a
# handful of prefixes (CID version, codec, multihash code and length), while a hostile
# replica's identity CIDs put their own bytes before the last 32 and would otherwise cost a
# table of 4,096 buckets each. Other keys go to the plain dict.
_MAX_PREFIX: Final = 8
_MAX_TABLES: Final = 8


def _bucket_of(digest: bytes) -> int:
    """A digest's bucket number before masking: Python's own hash of the bytes, seeded per
    process, so keys whose digest a hostile input chose (an identity CID's bytes) cannot be
    made to share one bucket and turn each look-up into a scan of all of them."""
    return hash(digest)


class _Table:
    """One key prefix's entries (digest, then value; ``slot`` bytes each): ``2**bits``
    ``bytearray`` buckets chosen by the digest's hash."""

    __slots__ = ("bits", "buckets", "count", "mask", "slot")

    def __init__(self, slot: int) -> None:
        self.slot = slot
        self.bits = _FIRST_BITS
        self.mask = (1 << _FIRST_BITS) - 1
        self.buckets = [bytearray() for _ in range(1 << _FIRST_BITS)]
        self.count = 0

    def bucket(self, digest: bytes) -> bytearray:
        return self.buckets[_bucket_of(digest) & self.mask]

    def find(self, bucket: bytearray, digest: bytes) -> int:
        """The slot offset of ``digest`` in ``bucket``, or -1: a match that does not start
        at a slot (across two entries, or in a value) is skipped."""
        at = bucket.find(digest)
        while at > 0 and at % self.slot:
            at = bucket.find(digest, at + 1)
        return at

    def grow(self) -> None:
        """Double the buckets (one more bit of the hash): each entry moves once."""
        self.bits += 1
        self.mask = mask = (1 << self.bits) - 1
        buckets = [bytearray() for _ in range(1 << self.bits)]
        slot = self.slot
        for old in self.buckets:
            for at in range(0, len(old), slot):
                entry = old[at : at + slot]
                buckets[_bucket_of(bytes(entry[:_DIGEST])) & mask] += entry
        self.buckets = buckets


class DigestMap:
    """Keys ending in a 32-byte digest -> values of ``width`` bytes (0: a set).

    The digest and its value share one slot of a ``bytearray`` bucket chosen by the
    digest's hash, in one bucket table per key prefix (the bytes before the digest: a
    multihash's code and length, a CID's version, codec and multihash prefix), that
    doubles past 64 entries a bucket on average, so a look-up scans about ``64 * slot``
    bytes: about ``32 + width + 3`` bytes an entry, where a ``dict`` of ``bytes`` costs
    some 150 and a ``set`` of ``(str, bytes)`` tuples some 150 too. Exact: the prefix
    chooses the table and the whole digest is compared at slot boundaries only. A key of
    32 bytes or fewer, or with a prefix longer than 8 bytes, or of a ninth prefix, goes to
    a plain ``dict``. A key put twice keeps its last value.
    """

    __slots__ = ("_len", "_other", "_tables", "_width")

    def __init__(self, width: int = 0) -> None:
        self._width = width
        self._tables: dict[bytes, _Table] = {}
        self._other: dict[bytes, bytes] = {}
        self._len = 0

    def __len__(self) -> int:
        return self._len

    def _table(self, key: bytes) -> _Table | None:
        if len(key) <= _DIGEST:
            return None
        return self._tables.get(key[:-_DIGEST])

    def get(self, key: bytes) -> bytes | None:
        """The value of ``key`` (``b""`` in a set), or None."""
        # _table, _Table.bucket and _Table.find inline: a pull of 10,000 blocks looks up
        # some 100,000 keys, and the calls were half of each look-up.
        table = self._tables.get(key[:-_DIGEST]) if len(key) > _DIGEST else None
        if table is None:
            return self._other.get(key)
        digest = key[-_DIGEST:]
        bucket = table.buckets[_bucket_of(digest) & table.mask]
        at = bucket.find(digest)
        if at < 0:
            return None
        slot = table.slot
        while at % slot:
            at = bucket.find(digest, at + 1)
            if at < 0:
                return None
        return bytes(bucket[at + _DIGEST : at + slot])

    def __contains__(self, key: object) -> bool:
        return isinstance(key, bytes) and self.get(key) is not None

    def put(self, key: bytes, value: bytes = b"") -> bool:
        """Map ``key`` to ``value`` (exactly ``width`` bytes); True if ``key`` was new."""
        if len(value) != self._width:
            raise ValueError(f"a value of {len(value)} bytes, not {self._width}")
        table = self._tables.get(key[:-_DIGEST]) if len(key) > _DIGEST else None
        if table is None:
            prefix = key[:-_DIGEST]
            if len(key) <= _DIGEST or len(prefix) > _MAX_PREFIX or len(self._tables) >= _MAX_TABLES:
                new = key not in self._other
                self._other[key] = value
                self._len += new
                return new
            table = self._tables[prefix] = _Table(_DIGEST + self._width)
        digest = key[-_DIGEST:]
        bucket = table.buckets[_bucket_of(digest) & table.mask]
        at = table.find(bucket, digest)
        if at >= 0:
            bucket[at + _DIGEST : at + _DIGEST + self._width] = value
            return False
        bucket += digest
        bucket += value
        table.count += 1
        if table.count > _GROW_AT << table.bits and table.bits < _MAX_BITS:
            table.grow()
        self._len += 1
        return True

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        """Every ``(key, value)``, in no particular order (the map must not change while
        they are read)."""
        width = self._width
        for prefix, table in self._tables.items():
            slot = table.slot
            for bucket in table.buckets:
                for at in range(0, len(bucket), slot):
                    yield (
                        prefix + bucket[at : at + _DIGEST],
                        bytes(bucket[at + _DIGEST : at + _DIGEST + width]),
                    )
        yield from self._other.items()

    def discard(self, key: bytes) -> None:
        """Remove ``key`` if present."""
        table = self._table(key)
        if table is None:
            if self._other.pop(key, None) is not None:
                self._len -= 1
            return
        digest = key[-_DIGEST:]
        bucket = table.bucket(digest)
        at = table.find(bucket, digest)
        if at >= 0:
            del bucket[at : at + _DIGEST + self._width]
            table.count -= 1
            self._len -= 1
