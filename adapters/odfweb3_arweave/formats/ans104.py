"""ANS-104 data items and bundles, signature type 1 (Arweave RSA-4096).

Data item layout (ANS-104 section 1.3; integers little-endian)::

    signature type   2 bytes      (1 = Arweave RSA-PSS 4096)
    signature        512 bytes
    owner            512 bytes    (the RSA modulus)
    target           1 presence byte (0 or 1) + 32 bytes when present
    anchor           1 presence byte (0 or 1) + 32 bytes when present
    number of tags   8 bytes
    tag bytes        8 bytes      (length of the Avro-encoded tags)
    tags             Avro array of {name: bytes, value: bytes}
    data             the rest

Signing: what the deployed implementations sign (arbundles ``getSignatureData``), which
differs from the spec text (it adds the signature type and hashes the *raw* Avro tag
bytes, not a list of tag pairs): ``deep_hash(["dataitem", "1", "1", owner, target,
anchor, raw_tags, data])``. The id is ``SHA-256(signature)``.

Tags: Avro array encoding as arbundles' ``AVSCTap`` writes it: one block with a positive
zigzag-varint count, each name and value as zigzag length + bytes, then a 0 terminator;
no tags are written as zero bytes. Reading also accepts negative block counts (followed by
a block byte size), as Avro allows. Limits: ANS-104 section 2.1 (at most 128 tags, name at
most 1024 bytes, value at most 3072 bytes, neither empty) and arbundles' ``MAX_TAG_BYTES``
(4096 bytes of encoded tags; ``DataItem.verify`` rejects items above it).

Bundle layout (ANS-104 section 1.1): item count as 32 bytes little-endian, then per item
its size (32 bytes LE) and its raw id (32 bytes), then the items back to back. An L1
transaction carrying a bundle has the tags ``Bundle-Format: binary`` and
``Bundle-Version: 2.0.0`` (:data:`BUNDLE_TAGS`).
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO

from odfweb3.errors import FormatError, HashMismatch
from odfweb3_arweave.formats.b64 import b64url_encode
from odfweb3_arweave.formats.deephash import (
    DeepHashItem,
    Prehashed,
    deep_hash,
    hash_blob_digest,
    hash_blob_stream,
)
from odfweb3_arweave.formats.tags import Tag
from odfweb3_arweave.wallet import OWNER_LENGTH, Wallet, verify_signature

__all__ = [
    "BUNDLE_TAGS",
    "MAX_TAGS",
    "MAX_TAG_BYTES",
    "MAX_TAG_NAME_BYTES",
    "MAX_TAG_VALUE_BYTES",
    "SIGNATURE_LENGTH",
    "SIGNATURE_TYPE_ARWEAVE",
    "DataItem",
    "DataItemHeader",
    "StreamedDataItem",
    "check_tags",
    "create_data_item",
    "decode_bundle",
    "decode_data_item",
    "decode_tags",
    "encode_bundle",
    "encode_data_item",
    "encode_tags",
    "iter_bundle",
    "read_data_item_header",
    "sign_data_item_digest",
    "sign_data_item_stream",
    "sign_data_item_stream_digest",
    "verify_data_item",
    "write_bundle",
]

SIGNATURE_TYPE_ARWEAVE = 1
SIGNATURE_LENGTH = 512
MAX_TAGS = 128
MAX_TAG_NAME_BYTES = 1024
MAX_TAG_VALUE_BYTES = 3072
MAX_TAG_BYTES = 4096
_MIN_ITEM_SIZE = 80  # arbundles MIN_BINARY_SIZE
_MAX_BUNDLE_ITEMS = 2**32
_COPY_BLOCK = 256 * 1024

BUNDLE_TAGS = (Tag(b"Bundle-Format", b"binary"), Tag(b"Bundle-Version", b"2.0.0"))


# --- tags -------------------------------------------------------------------------------


def check_tags(tags: Sequence[Tag]) -> None:
    """Check tags against the ANS-104 limits.

    Args:
        tags: the tags.

    Raises:
        FormatError: more than 128 tags, an empty or oversized name or value, or more than
            4096 bytes once encoded.
    """
    if len(tags) > MAX_TAGS:
        raise FormatError(f"data item has {len(tags)} tags; ANS-104 allows at most {MAX_TAGS}")
    for i, tag in enumerate(tags):
        label = tag.name[:40].decode("utf-8", errors="replace")
        if not tag.name or not tag.value:
            raise FormatError(
                f"data item tag {i} ({label!r}): ANS-104 forbids an empty name or value"
            )
        if len(tag.name) > MAX_TAG_NAME_BYTES:
            raise FormatError(
                f"data item tag {i}: name is {len(tag.name)} bytes; "
                f"ANS-104 allows at most {MAX_TAG_NAME_BYTES}"
            )
        if len(tag.value) > MAX_TAG_VALUE_BYTES:
            raise FormatError(
                f"data item tag {i} ({label!r}): value is {len(tag.value)} bytes; "
                f"ANS-104 allows at most {MAX_TAG_VALUE_BYTES}"
            )


def _zigzag(value: int) -> bytes:
    encoded = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        byte = encoded & 0x7F
        encoded >>= 7
        if encoded:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def encode_tags(tags: Sequence[Tag]) -> bytes:
    """Avro-encode tags as arbundles ``serializeTags`` does (checks the limits first).

    Args:
        tags: the tags.

    Returns:
        The raw tag bytes (empty for no tags).

    Raises:
        FormatError: the tags break the ANS-104 limits or exceed 4096 encoded bytes.
    """
    check_tags(tags)
    if not tags:
        return b""
    parts = [_zigzag(len(tags))]
    for tag in tags:
        parts += [_zigzag(len(tag.name)), tag.name, _zigzag(len(tag.value)), tag.value]
    parts.append(b"\x00")
    raw = b"".join(parts)
    if len(raw) > MAX_TAG_BYTES:
        raise FormatError(
            f"data item tags take {len(raw)} bytes encoded; bundlers accept at most "
            f"{MAX_TAG_BYTES} (arbundles MAX_TAG_BYTES): shorten or drop tags"
        )
    return raw


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def long(self) -> int:
        shift = 0
        result = 0
        while True:
            if self.pos >= len(self.data) or shift > 63:
                raise FormatError("data item tags: truncated or overlong Avro varint")
            byte = self.data[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return (result >> 1) ^ -(result & 1)

    def blob(self) -> bytes:
        size = self.long()
        if size < 0 or self.pos + size > len(self.data):
            raise FormatError("data item tags: Avro string length runs past the tag bytes")
        out = self.data[self.pos : self.pos + size]
        self.pos += size
        return out


def decode_tags(raw: bytes) -> tuple[Tag, ...]:
    """Decode Avro tag bytes (positive or negative block counts) and check the limits.

    Args:
        raw: the raw tag bytes of a data item.

    Returns:
        The tags.

    Raises:
        FormatError: malformed Avro, trailing bytes, or tags breaking the ANS-104 limits.
    """
    if not raw:
        return ()
    if len(raw) > MAX_TAG_BYTES:
        raise FormatError(f"data item tags take {len(raw)} bytes; at most {MAX_TAG_BYTES}")
    reader = _Reader(raw)
    tags: list[Tag] = []
    while True:
        count = reader.long()
        if count == 0:
            break
        if count < 0:  # Avro: a negative count is followed by the block's byte size
            count = -count
            reader.long()
        if len(tags) + count > MAX_TAGS:
            raise FormatError(f"data item has more than {MAX_TAGS} tags")
        for _ in range(count):
            name = reader.blob()
            tags.append(Tag(name, reader.blob()))
    if reader.pos != len(raw):
        raise FormatError(f"data item tags: {len(raw) - reader.pos} bytes after the Avro array")
    check_tags(tags)
    return tuple(tags)


# --- data items -------------------------------------------------------------------------


@dataclass(frozen=True)
class DataItemHeader:
    """Everything of a data item but its data bytes.

    Attributes:
        signature_type: 1 (Arweave RSA-4096).
        signature: 512 bytes (zeros while unsigned).
        owner: the signer's modulus, 512 bytes.
        target: 32 bytes or empty.
        anchor: 32 bytes or empty.
        tags: the decoded tags.
        raw_tags: the Avro tag bytes exactly as signed.
        data_size: length of the data that follows the header.
    """

    signature_type: int
    signature: bytes
    owner: bytes
    target: bytes
    anchor: bytes
    tags: tuple[Tag, ...]
    raw_tags: bytes
    data_size: int

    @property
    def id(self) -> bytes:
        """The raw item id, ``SHA-256(signature)``."""
        return hashlib.sha256(self.signature).digest()

    @property
    def id_b64(self) -> str:
        """The item id as base64url text."""
        return b64url_encode(self.id)

    def encode(self) -> bytes:
        """Return the header bytes (the item's bytes before its data)."""
        parts = [
            self.signature_type.to_bytes(2, "little"),
            self.signature,
            self.owner,
            b"\x01" + self.target if self.target else b"\x00",
            b"\x01" + self.anchor if self.anchor else b"\x00",
            len(self.tags).to_bytes(8, "little"),
            len(self.raw_tags).to_bytes(8, "little"),
            self.raw_tags,
        ]
        return b"".join(parts)

    @property
    def header_size(self) -> int:
        """Length of :meth:`encode`'s output."""
        return (
            2
            + len(self.signature)
            + len(self.owner)
            + 1
            + len(self.target)
            + 1
            + len(self.anchor)
            + 16
            + len(self.raw_tags)
        )

    @property
    def size(self) -> int:
        """Total item size in bytes (header + data)."""
        return self.header_size + self.data_size

    def __repr__(self) -> str:
        return (
            f"DataItemHeader(id={self.id_b64!r}, tags={len(self.tags)}, data_size={self.data_size})"
        )


@dataclass(frozen=True)
class DataItem:
    """A data item held in memory.

    Attributes:
        header: the header fields.
        data: the data bytes.
    """

    header: DataItemHeader
    data: bytes

    @property
    def id(self) -> bytes:
        """The raw item id."""
        return self.header.id

    @property
    def id_b64(self) -> str:
        """The item id as base64url text."""
        return self.header.id_b64

    @property
    def tags(self) -> tuple[Tag, ...]:
        """The item's tags."""
        return self.header.tags

    def __repr__(self) -> str:
        return f"DataItem(id={self.id_b64!r}, tags={len(self.tags)}, data_size={len(self.data)})"


@dataclass(frozen=True)
class StreamedDataItem:
    """A signed data item whose data is read from a stream when written into a bundle.

    Attributes:
        header: the signed header (from :func:`sign_data_item_stream`).
        open_data: returns a fresh binary stream over exactly the data that was signed.
    """

    header: DataItemHeader
    open_data: Callable[[], BinaryIO]


def _signature_data(header: DataItemHeader, data: bytes | Prehashed) -> bytes:
    parts: list[DeepHashItem] = [
        b"dataitem",
        b"1",
        str(header.signature_type).encode("ascii"),
        header.owner,
        header.target,
        header.anchor,
        header.raw_tags,
        data,
    ]
    return deep_hash(parts)


def _unsigned_header(
    wallet: Wallet, tags: Sequence[Tag], target: bytes, anchor: bytes, data_size: int
) -> DataItemHeader:
    if len(target) not in (0, 32):
        raise FormatError(f"data item target is {len(target)} bytes; it must be 32 (or absent)")
    if len(anchor) not in (0, 32):
        raise FormatError(f"data item anchor is {len(anchor)} bytes; it must be 32 (or absent)")
    if len(wallet.owner) != OWNER_LENGTH:
        raise FormatError("ANS-104 signature type 1 needs an RSA-4096 wallet")
    raw_tags = encode_tags(tags)
    return DataItemHeader(
        signature_type=SIGNATURE_TYPE_ARWEAVE,
        signature=bytes(SIGNATURE_LENGTH),
        owner=wallet.owner,
        target=target,
        anchor=anchor,
        tags=tuple(tags),
        raw_tags=raw_tags,
        data_size=data_size,
    )


def _with_signature(header: DataItemHeader, signature: bytes) -> DataItemHeader:
    return DataItemHeader(
        header.signature_type,
        signature,
        header.owner,
        header.target,
        header.anchor,
        header.tags,
        header.raw_tags,
        header.data_size,
    )


def create_data_item(
    wallet: Wallet,
    data: bytes,
    tags: Sequence[Tag] = (),
    target: bytes = b"",
    anchor: bytes = b"",
) -> DataItem:
    """Create and sign a data item held in memory.

    Args:
        wallet: the signing wallet (RSA-4096).
        data: the data bytes.
        tags: the tags (checked against the ANS-104 limits).
        target: optional 32-byte target address.
        anchor: optional 32-byte anchor.

    Returns:
        The signed :class:`DataItem`.

    Raises:
        FormatError: tags over the limits, or a target/anchor not 32 bytes.
        CryptoError: signing failed.
    """
    header = _unsigned_header(wallet, tags, target, anchor, len(data))
    signature = wallet.sign(_signature_data(header, data))
    return DataItem(_with_signature(header, signature), data)


def _iter_blocks(stream: BinaryIO, size: int) -> Iterator[bytes]:
    left = size
    while left > 0:
        block = stream.read(min(left, _COPY_BLOCK))
        if not block:
            raise FormatError(f"data item data: stream ended {left} bytes early")
        left -= len(block)
        yield block


def sign_data_item_stream(
    wallet: Wallet,
    stream: BinaryIO,
    data_size: int,
    tags: Sequence[Tag] = (),
    target: bytes = b"",
    anchor: bytes = b"",
) -> DataItemHeader:
    """Sign a data item whose data is read once from a stream (bounded memory).

    Args:
        wallet: the signing wallet.
        stream: binary stream positioned at the data's start.
        data_size: exact number of data bytes to read.
        tags: the tags.
        target: optional 32-byte target.
        anchor: optional 32-byte anchor.

    Returns:
        The signed header; pair it with the data source in a :class:`StreamedDataItem`.

    Raises:
        FormatError: bad tags/target/anchor, or the stream is shorter than ``data_size``.
        CryptoError: signing failed.
    """
    return sign_data_item_stream_digest(wallet, stream, data_size, tags, target, anchor)[0]


def sign_data_item_stream_digest(
    wallet: Wallet,
    stream: BinaryIO,
    data_size: int,
    tags: Sequence[Tag] = (),
    target: bytes = b"",
    anchor: bytes = b"",
) -> tuple[DataItemHeader, bytes]:
    """:func:`sign_data_item_stream`, also giving the SHA-384 of the data read.

    The signature covers the data through that digest (its deep hash), so a writer that
    reads the data again to put it into a bundle proves it got the bytes signed by
    getting the same SHA-384.

    Returns:
        The signed header and the data's SHA-384 digest.
    """
    inner = hashlib.sha384()
    for block in _iter_blocks(stream, data_size):  # exactly data_size bytes, or FormatError
        inner.update(block)
    digest = inner.digest()
    return sign_data_item_digest(wallet, data_size, digest, tags, target, anchor), digest


def sign_data_item_digest(
    wallet: Wallet,
    data_size: int,
    digest: bytes,
    tags: Sequence[Tag] = (),
    target: bytes = b"",
    anchor: bytes = b"",
) -> DataItemHeader:
    """The signed header of a data item whose ``data_size`` bytes of data have the SHA-384
    ``digest`` (the deep hash covers the data only through it), for data hashed as it was
    written elsewhere.

    Raises:
        FormatError: tags over the limits, or a target/anchor not 32 bytes.
        CryptoError: signing failed.
    """
    header = _unsigned_header(wallet, tags, target, anchor, data_size)
    data_hash = hash_blob_digest(data_size, digest)
    return _with_signature(header, wallet.sign(_signature_data(header, data_hash)))


def encode_data_item(item: DataItem) -> bytes:
    """Serialize a data item to its binary form.

    Args:
        item: the data item.

    Returns:
        The item bytes.
    """
    return item.header.encode() + item.data


def _parse_header(head: bytes, item_size: int) -> DataItemHeader:
    """Parse a header from the first bytes of an item of ``item_size`` bytes."""
    if item_size < _MIN_ITEM_SIZE:
        raise FormatError(f"data item is {item_size} bytes; too short to be a data item")

    def need(end: int) -> None:
        if end > len(head) or end > item_size:
            raise FormatError(f"data item truncated: header needs {end} bytes")

    need(2)
    sig_type = int.from_bytes(head[0:2], "little")
    if sig_type != SIGNATURE_TYPE_ARWEAVE:
        raise FormatError(
            f"data item signature type {sig_type} is not supported (only 1, Arweave RSA)"
        )
    pos = 2
    need(pos + SIGNATURE_LENGTH + OWNER_LENGTH + 1)
    signature = head[pos : pos + SIGNATURE_LENGTH]
    pos += SIGNATURE_LENGTH
    owner = head[pos : pos + OWNER_LENGTH]
    pos += OWNER_LENGTH
    optional: list[bytes] = []
    for name in ("target", "anchor"):
        need(pos + 1)
        flag = head[pos]
        pos += 1
        if flag == 1:
            need(pos + 32)
            optional.append(head[pos : pos + 32])
            pos += 32
        elif flag == 0:
            optional.append(b"")
        else:
            raise FormatError(f"data item {name} presence byte is {flag}; ANS-104 allows 0 or 1")
    need(pos + 16)
    tag_count = int.from_bytes(head[pos : pos + 8], "little")
    tag_bytes = int.from_bytes(head[pos + 8 : pos + 16], "little")
    pos += 16
    if tag_bytes > MAX_TAG_BYTES:
        raise FormatError(f"data item declares {tag_bytes} tag bytes; at most {MAX_TAG_BYTES}")
    need(pos + tag_bytes)
    raw_tags = head[pos : pos + tag_bytes]
    pos += tag_bytes
    tags = decode_tags(raw_tags)
    if len(tags) != tag_count:
        raise FormatError(f"data item declares {tag_count} tags but its tag bytes hold {len(tags)}")
    return DataItemHeader(
        sig_type, signature, owner, optional[0], optional[1], tags, raw_tags, item_size - pos
    )


# The largest header: type + signature + owner + target + anchor + counts + tags.
_MAX_HEADER = 2 + SIGNATURE_LENGTH + OWNER_LENGTH + 33 + 33 + 16 + MAX_TAG_BYTES


def read_data_item_header(stream: BinaryIO, item_size: int) -> DataItemHeader:
    """Read and parse a data item's header from a stream, leaving it at the data's start.

    Args:
        stream: binary stream positioned at the item's first byte.
        item_size: the item's total size (from a bundle header or the file size).

    Returns:
        The parsed (not yet verified) header.

    Raises:
        FormatError: malformed header.
    """
    fixed = 2 + SIGNATURE_LENGTH + OWNER_LENGTH
    head = _read_exactly(stream, min(item_size, fixed), "data item header")
    for _ in range(2):  # target and anchor presence bytes, each maybe followed by 32 bytes
        if len(head) >= item_size:
            break
        flag = _read_exactly(stream, 1, "data item header")
        head += flag
        if flag == b"\x01":
            head += _read_exactly(stream, min(32, item_size - len(head)), "data item header")
    head += _read_exactly(stream, min(16, item_size - len(head)), "data item header")
    if len(head) >= fixed + 18:
        tag_bytes = int.from_bytes(head[-8:], "little")
        if tag_bytes <= MAX_TAG_BYTES:
            head += _read_exactly(stream, min(tag_bytes, item_size - len(head)), "data item header")
    return _parse_header(head, item_size)


def decode_data_item(data: bytes, verify: bool = True) -> DataItem:
    """Parse a data item from its bytes.

    Args:
        data: the item bytes.
        verify: check the signature against the owner.

    Returns:
        The :class:`DataItem`.

    Raises:
        FormatError: malformed item.
        SignatureError: the signature does not verify.
    """
    header = _parse_header(data[:_MAX_HEADER], len(data))
    item = DataItem(header, data[header.header_size :])
    if verify:
        verify_data_item(item)
    return item


def verify_data_item(item: DataItem | DataItemHeader, data: BinaryIO | None = None) -> None:
    """Verify a data item's signature (its id is derived from it).

    Args:
        item: an in-memory item, or a header whose data is read from ``data``.
        data: for a header, a stream positioned at the data's start.

    Raises:
        SignatureError: the signature does not verify against the owner.
        FormatError: the data stream is shorter than the header says.
    """
    if isinstance(item, DataItem):
        header, payload = item.header, item.data
        message = _signature_data(header, payload)
    else:
        if data is None:
            raise ValueError("verifying a header needs its data stream")
        header = item
        message = _signature_data(
            header, hash_blob_stream(header.data_size, _iter_blocks(data, header.data_size))
        )
    verify_signature(header.owner, message, header.signature, f"data item {header.id_b64}")


# --- bundles ----------------------------------------------------------------------------


def write_bundle(out: BinaryIO, items: Sequence[DataItem | StreamedDataItem]) -> int:
    """Write a bundle, streaming each item's data (items are written, never buffered whole).

    Args:
        out: binary stream to write to.
        items: signed items, in order.

    Returns:
        Number of bytes written.

    Raises:
        FormatError: a streamed item's data is shorter than its header says.
    """
    headers = [item.header for item in items]
    written = out.write(len(items).to_bytes(32, "little"))
    for header in headers:
        written += out.write(header.size.to_bytes(32, "little") + header.id)
    for item in items:
        written += out.write(item.header.encode())
        if isinstance(item, DataItem):
            written += out.write(item.data)
        else:
            with item.open_data() as stream:
                for block in _iter_blocks(stream, item.header.data_size):
                    written += out.write(block)
    return written


def encode_bundle(items: Sequence[DataItem]) -> bytes:
    """Serialize in-memory items as a bundle.

    Args:
        items: signed items.

    Returns:
        The bundle bytes.
    """
    buffer = io.BytesIO()
    write_bundle(buffer, items)
    return buffer.getvalue()


def _read_exactly(stream: BinaryIO, size: int, what: str) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise FormatError(f"{what}: expected {size} bytes, the stream ended after {len(data)}")
    return data


def iter_bundle(stream: BinaryIO, verify: bool = True) -> Iterator[DataItem]:
    """Read a bundle item by item, checking offsets, sizes, ids and signatures.

    One item is held in memory at a time.

    Args:
        stream: binary stream positioned at the bundle's start.
        verify: verify each item's signature.

    Yields:
        Each :class:`DataItem`, in order.

    Raises:
        FormatError: bad count, sizes that do not fit the bundle, trailing bytes, or a
            malformed item.
        HashMismatch: an item's id in the bundle header is not ``SHA-256(signature)``.
        SignatureError: an item's signature does not verify.
    """
    count = int.from_bytes(_read_exactly(stream, 32, "bundle item count"), "little")
    if count > _MAX_BUNDLE_ITEMS:
        raise FormatError(f"bundle declares {count} items; not a bundle")
    entries: list[tuple[int, bytes]] = []
    for index in range(count):
        entry = _read_exactly(stream, 64, f"bundle header entry {index}")
        entries.append((int.from_bytes(entry[:32], "little"), entry[32:]))
    offset = 32 + 64 * count
    total = sum(size for size, _ in entries)
    if stream.seekable():
        # Check the offsets against the real length before parsing any item, so a bad
        # header is reported as such, not as the bad signature of a misaligned item.
        here = stream.tell()
        remaining = stream.seek(0, io.SEEK_END) - here
        stream.seek(here)
        if remaining != total:
            raise FormatError(
                f"bundle header: item sizes add up to {total} bytes but {remaining} bytes "
                f"follow the header at offset {offset}: bad offsets or truncated bundle"
            )
    for index, (size, expected_id) in enumerate(entries):
        if size < _MIN_ITEM_SIZE:
            raise FormatError(f"bundle item {index} at offset {offset} declares size {size}")
        if size > 2**53:
            raise FormatError(f"bundle item {index} at offset {offset} declares size {size}")
        data = stream.read(size)
        if len(data) != size:
            raise FormatError(
                f"bundle item {index} at offset {offset} declares {size} bytes but only "
                f"{len(data)} remain: truncated bundle or bad offsets"
            )
        item = decode_data_item(data, verify=False)
        if item.id != expected_id:
            raise HashMismatch(b64url_encode(expected_id), item.id_b64, f"bundle item {index} id")
        if verify:
            verify_data_item(item)
        offset += size
        yield item
    if stream.read(1):
        raise FormatError(f"bundle has bytes after its last item (offset {offset})")


def decode_bundle(data: bytes, verify: bool = True) -> list[DataItem]:
    """Parse and verify a whole in-memory bundle.

    Args:
        data: the bundle bytes.
        verify: verify each item's signature.

    Returns:
        The items, in order.
    """
    return list(iter_bundle(io.BytesIO(data), verify=verify))
