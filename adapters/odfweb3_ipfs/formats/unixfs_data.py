"""The UnixFS ``Data`` protobuf message carried in a dag-pb node's ``Data`` field.

Spec: ipfs/specs ``src/unixfs.md`` and boxo ``ipld/unixfs/pb/unixfs.proto``::

    message Data {
      enum DataType { Raw = 0; Directory = 1; File = 2; Metadata = 3; Symlink = 4; HAMTShard = 5; }
      required DataType Type = 1;  optional bytes Data = 2;  optional uint64 filesize = 3;
      repeated uint64 blocksizes = 4;  optional uint64 hashType = 5;  optional uint64 fanout = 6;
      optional uint32 mode = 7;  optional UnixTime mtime = 8;
    }
    message UnixTime { required int64 Seconds = 1; optional fixed32 FractionalNanoseconds = 2; }

Written as boxo's (gogo) ``proto.Marshal`` writes it: fields in number order,
present optional fields only, and ``blocksizes`` NOT packed (proto2 ``repeated``
without ``[packed=true]``: one ``0x20 varint`` per entry). The decoder also
accepts the packed form and skips unknown fields, as protobuf requires.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from odfweb3.errors import FormatError
from odfweb3_ipfs.formats.cid import decode_uvarint, encode_uvarint

__all__ = ["DataType", "UnixFSData", "decode_unixfs_data", "encode_unixfs_data"]


class DataType(IntEnum):
    """UnixFS node types."""

    RAW = 0
    DIRECTORY = 1
    FILE = 2
    METADATA = 3
    SYMLINK = 4
    HAMT_SHARD = 5


@dataclass(frozen=True, slots=True)
class UnixFSData:
    """A UnixFS ``Data`` message; ``None`` means the optional field is absent.

    ``mtime`` is ``(seconds, nanoseconds or None)``.
    """

    type: DataType
    data: bytes | None = None
    filesize: int | None = None
    blocksizes: tuple[int, ...] = ()
    hash_type: int | None = None
    fanout: int | None = None
    mode: int | None = None
    mtime: tuple[int, int | None] | None = None


def _varint_field(tag: int, value: int) -> bytes:
    return bytes((tag,)) + encode_uvarint(value)


def encode_unixfs_data(msg: UnixFSData) -> bytes:
    """Serialize a UnixFS ``Data`` message exactly as boxo does."""
    parts = [_varint_field(0x08, int(msg.type))]
    if msg.data is not None:
        parts.append(b"\x12" + encode_uvarint(len(msg.data)))
        parts.append(msg.data)
    if msg.filesize is not None:
        parts.append(_varint_field(0x18, msg.filesize))
    parts.extend(_varint_field(0x20, size) for size in msg.blocksizes)
    if msg.hash_type is not None:
        parts.append(_varint_field(0x28, msg.hash_type))
    if msg.fanout is not None:
        parts.append(_varint_field(0x30, msg.fanout))
    if msg.mode is not None:
        parts.append(_varint_field(0x38, msg.mode))
    if msg.mtime is not None:
        seconds, nanos = msg.mtime
        inner = _varint_field(0x08, seconds & 0xFFFFFFFFFFFFFFFF)
        if nanos is not None:
            inner += b"\x15" + nanos.to_bytes(4, "little")
        parts.append(b"\x42" + encode_uvarint(len(inner)) + inner)
    return b"".join(parts)


def _skip(buf: bytes, pos: int, wire: int, where: str) -> int:
    if wire == 0:
        return decode_uvarint(buf, pos, where)[1]
    if wire == 1:
        end = pos + 8
    elif wire == 5:
        end = pos + 4
    elif wire == 2:
        length, pos = decode_uvarint(buf, pos, where)
        end = pos + length
    else:
        raise FormatError(f"{where}: unsupported protobuf wire type {wire}")
    if end > len(buf):
        raise FormatError(f"{where}: field runs past the end of the UnixFS data")
    return end


def _decode_mtime(buf: bytes, where: str) -> tuple[int, int | None]:
    seconds: int | None = None
    nanos: int | None = None
    pos = 0
    while pos < len(buf):
        key, pos = decode_uvarint(buf, pos, where)
        if key == 0x08:
            value, pos = decode_uvarint(buf, pos, where, max_len=10)  # negative int64
            seconds = value - (1 << 64) if value >= 1 << 63 else value
        elif key == 0x15:
            if pos + 4 > len(buf):
                raise FormatError(f"{where}: truncated mtime nanoseconds")
            nanos = int.from_bytes(buf[pos : pos + 4], "little")
            pos += 4
        else:
            pos = _skip(buf, pos, key & 7, where)
    if seconds is None:
        raise FormatError(f"{where}: UnixTime without Seconds")
    return seconds, nanos


def decode_unixfs_data(buf: bytes, *, where: str = "UnixFS data") -> UnixFSData:
    """Parse a UnixFS ``Data`` message.

    Raises:
        FormatError: malformed protobuf, missing or unknown ``Type``.
    """
    buf = bytes(buf)
    fields: dict[str, object] = {}
    blocksizes: list[int] = []
    pos = 0
    while pos < len(buf):
        key, pos = decode_uvarint(buf, pos, where)
        number, wire = key >> 3, key & 7
        if number == 2 and wire == 2:
            length, pos = decode_uvarint(buf, pos, where)
            if pos + length > len(buf):
                raise FormatError(f"{where}: Data field runs past the end")
            fields["data"] = buf[pos : pos + length]
            pos += length
        elif number == 4 and wire == 2:  # packed blocksizes, accepted on read
            length, pos = decode_uvarint(buf, pos, where)
            end = pos + length
            if end > len(buf):
                raise FormatError(f"{where}: blocksizes run past the end")
            while pos < end:
                value, pos = decode_uvarint(buf, pos, where)
                blocksizes.append(value)
            if pos != end:
                raise FormatError(f"{where}: packed blocksizes overrun their length")
        elif number == 8 and wire == 2:
            length, pos = decode_uvarint(buf, pos, where)
            if pos + length > len(buf):
                raise FormatError(f"{where}: mtime runs past the end")
            fields["mtime"] = _decode_mtime(buf[pos : pos + length], where)
            pos += length
        elif number in (1, 3, 4, 5, 6, 7) and wire == 0:
            value, pos = decode_uvarint(buf, pos, where)
            if number == 4:
                blocksizes.append(value)
            else:
                name = {1: "type", 3: "filesize", 5: "hash_type", 6: "fanout", 7: "mode"}[number]
                fields[name] = value
        else:
            pos = _skip(buf, pos, wire, where)
    if "type" not in fields:
        raise FormatError(f"{where}: UnixFS Data has no Type")
    try:
        kind = DataType(int(fields.pop("type")))  # type: ignore[call-overload]
    except ValueError as exc:
        raise FormatError(f"{where}: unknown UnixFS type") from exc
    return UnixFSData(type=kind, blocksizes=tuple(blocksizes), **fields)  # type: ignore[arg-type]
