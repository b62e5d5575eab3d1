"""Minimal protobuf wire-format reading and writing for the small messages IPFS uses.

Covers what libp2p keys and IPNS ``IpnsEntry`` need: varint and length-delimited
fields (wire types 0 and 2); fixed 32/64-bit fields (wire types 5 and 1) are
read and skipped so unknown fields of those types are tolerated, as protobuf
requires. Groups (wire types 3 and 4) are rejected. Writers emit fields in the
order the caller gives them; callers give ascending field numbers, as Go's
``proto.Marshal`` and js ``protons`` do, so our bytes match theirs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from odfweb3.errors import FormatError

__all__ = [
    "WIRE_LEN",
    "WIRE_VARINT",
    "encode_bytes_field",
    "encode_uvarint",
    "encode_varint_field",
    "iter_fields",
]

WIRE_VARINT: Final = 0
WIRE_I64: Final = 1
WIRE_LEN: Final = 2
WIRE_I32: Final = 5

_MAX_VARINT_BYTES: Final = 10  # a uint64 needs at most 10 groups of 7 bits


def encode_uvarint(value: int) -> bytes:
    """Encode a non-negative integer below 2**64 as a protobuf/multiformats varint."""
    if value < 0 or value >= 1 << 64:
        raise ValueError(f"varint out of range: {value}")
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def encode_varint_field(number: int, value: int) -> bytes:
    """Encode one varint field (wire type 0)."""
    return encode_uvarint(number << 3 | WIRE_VARINT) + encode_uvarint(value)


def encode_bytes_field(number: int, value: bytes) -> bytes:
    """Encode one length-delimited field (wire type 2)."""
    return encode_uvarint(number << 3 | WIRE_LEN) + encode_uvarint(len(value)) + value


def _read_uvarint(data: bytes, pos: int, where: str) -> tuple[int, int]:
    value = 0
    for i in range(_MAX_VARINT_BYTES):
        if pos + i >= len(data):
            raise FormatError(f"{where}: truncated varint at byte {pos}")
        byte = data[pos + i]
        value |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            if value >= 1 << 64:
                raise FormatError(f"{where}: varint at byte {pos} exceeds 64 bits")
            return value, pos + i + 1
    raise FormatError(f"{where}: varint at byte {pos} longer than 10 bytes")


def iter_fields(data: bytes, where: str) -> Iterator[tuple[int, int, int | bytes]]:
    """Yield ``(field_number, wire_type, value)`` for every field of a message.

    Varint fields yield an ``int``, length-delimited fields ``bytes``; fixed-size
    fields yield their raw bytes (callers normally ignore them as unknown).

    Args:
        data: the serialized message.
        where: what is being parsed, for error messages.

    Raises:
        FormatError: truncated input, field number 0, or a group wire type.
    """
    pos = 0
    end = len(data)
    while pos < end:
        key, pos = _read_uvarint(data, pos, where)
        number, wire = key >> 3, key & 7
        if number == 0 or number >= 1 << 29:
            raise FormatError(f"{where}: invalid protobuf field number {number}")
        if wire == WIRE_VARINT:
            value, pos = _read_uvarint(data, pos, where)
            yield number, wire, value
        elif wire == WIRE_LEN:
            length, pos = _read_uvarint(data, pos, where)
            if length > end - pos:
                raise FormatError(f"{where}: field {number} runs past the end of the message")
            yield number, wire, data[pos : pos + length]
            pos += length
        elif wire in (WIRE_I64, WIRE_I32):
            size = 8 if wire == WIRE_I64 else 4
            if size > end - pos:
                raise FormatError(f"{where}: field {number} runs past the end of the message")
            yield number, wire, data[pos : pos + size]
            pos += size
        else:
            raise FormatError(f"{where}: unsupported protobuf wire type {wire} (field {number})")
