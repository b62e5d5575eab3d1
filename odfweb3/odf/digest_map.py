"""A compact map from keys ending in a 32-byte digest (multihashes, CID bytes) to
fixed-size values: the memory of the per-object tables a publish, a verify or a pull keeps
(300,000 objects, 400,000 CAR blocks at 100,000 blocks)."""

from __future__ import annotations

from typing import Final

__all__ = ["DigestMap"]

_DIGEST: Final = 32  # a sha2-256 / sha3-256 digest
_FIRST_BITS: Final = 12  # a new bucket table: 4,096 buckets
_MAX_BITS: Final = 24  # the bucket is chosen by at most the digest's first three bytes
_GROW_AT: Final = 64  # entries per bucket on average before the table doubles


class _Table:
    """One key prefix's entries (digest, then value; ``slot`` bytes each): ``2**bits``
    ``bytearray`` buckets chosen by the digest's first bits."""

    __slots__ = ("bits", "buckets", "count", "slot")

    def __init__(self, slot: int) -> None:
        self.slot = slot
        self.bits = _FIRST_BITS
        self.buckets = [bytearray() for _ in range(1 << _FIRST_BITS)]
        self.count = 0

    def bucket(self, digest: bytes) -> bytearray:
        return self.buckets[int.from_bytes(digest[:3], "big") >> (_MAX_BITS - self.bits)]

    def find(self, bucket: bytearray, digest: bytes) -> int:
        """The slot offset of ``digest`` in ``bucket``, or -1: a match that does not start
        at a slot (across two entries, or in a value) is skipped."""
        at = bucket.find(digest)
        while at > 0 and at % self.slot:
            at = bucket.find(digest, at + 1)
        return at

    def grow(self) -> None:
        """Double the buckets (one more bit of the digest): each entry moves once."""
        self.bits += 1
        shift = _MAX_BITS - self.bits
        buckets = [bytearray() for _ in range(1 << self.bits)]
        slot = self.slot
        for old in self.buckets:
            for at in range(0, len(old), slot):
                entry = old[at : at + slot]
                buckets[int.from_bytes(entry[:3], "big") >> shift] += entry
        self.buckets = buckets


class DigestMap:
    """Keys ending in a 32-byte digest -> values of ``width`` bytes (0: a set).

    The digest and its value share one slot of a ``bytearray`` bucket chosen by the
    digest's first bits, in one bucket table per key prefix (the bytes before the digest:
    a multihash's code and length, a CID's version, codec and multihash prefix), that
    doubles past 64 entries a bucket on average, so a look-up scans about ``64 * slot``
    bytes: about ``32 + width + 3`` bytes an entry, where a ``dict`` of ``bytes`` costs
    some 150 and a ``set`` of ``(str, bytes)`` tuples some 150 too. Exact: the prefix
    chooses the table and the whole digest is compared at slot boundaries only. A key of
    32 bytes or fewer goes to a plain ``dict``. A key put twice keeps its last value.
    """

    __slots__ = ("_len", "_other", "_tables", "_width")

    def __init__(self, width: int = 0) -> None:
        self._width = width
        self._tables: dict[bytes, _Table] = {}
        self._other: dict[bytes, bytes] = {}
        self._len = 0

    def __len__(self) -> int:
        return self._len

    def get(self, key: bytes) -> bytes | None:
        """The value of ``key`` (``b""`` in a set), or None."""
        if len(key) <= _DIGEST:
            return self._other.get(key)
        table = self._tables.get(key[:-_DIGEST])
        if table is None:
            return None
        digest = key[-_DIGEST:]
        bucket = table.bucket(digest)
        at = table.find(bucket, digest)
        return None if at < 0 else bytes(bucket[at + _DIGEST : at + _DIGEST + self._width])

    def __contains__(self, key: object) -> bool:
        return isinstance(key, bytes) and self.get(key) is not None

    def put(self, key: bytes, value: bytes = b"") -> bool:
        """Map ``key`` to ``value`` (exactly ``width`` bytes); True if ``key`` was new."""
        if len(value) != self._width:
            raise ValueError(f"a value of {len(value)} bytes, not {self._width}")
        if len(key) <= _DIGEST:
            new = key not in self._other
            self._other[key] = value
            self._len += new
            return new
        prefix, digest = key[:-_DIGEST], key[-_DIGEST:]
        table = self._tables.get(prefix)
        if table is None:
            table = self._tables[prefix] = _Table(_DIGEST + self._width)
        bucket = table.bucket(digest)
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
