"""A small, strict DAG-CBOR codec (IPLD DAG-CBOR spec) for IPNS data and CAR headers.

Data model mapping (Python ⇄ CBOR major type):

- ``int`` ⇄ 0 (unsigned) / 1 (negative), range ``-2**64 .. 2**64-1``
- ``bytes`` ⇄ 2, ``str`` ⇄ 3 (valid UTF-8), ``list`` ⇄ 4
- ``dict[str, ...]`` ⇄ 5 with string keys only
- ``multiformats.CID`` ⇄ tag 42 over ``0x00`` + binary CID (the only tag allowed)
- ``False``/``True``/``None`` ⇄ simple values 20/21/22
- ``float`` ⇄ 64-bit IEEE 754 only, never NaN or ±Infinity

Encoding is canonical as DAG-CBOR requires: shortest-form lengths and integers,
definite lengths, map keys sorted by the length of their UTF-8 bytes first and
then bytewise (RFC 7049 canonical order, the order the IPNS spec names).

The decoder is strict and raises :class:`~odfweb3.errors.FormatError` for any
input another encoder could not have produced canonically: indefinite lengths,
non-shortest integers or lengths, duplicate or mis-ordered map keys, non-string
keys, tags other than 42, simple values other than false/true/null, floats that
are not 64-bit or are NaN/Infinity, invalid UTF-8, nesting deeper than
:data:`MAX_DEPTH`, and trailing bytes.

``cbor2`` was not used: it accepts indefinite lengths, non-canonical integers,
duplicate keys and unsorted maps without complaint, so it cannot tell a
canonical document from a merely well-formed one, and signatures depend on that.
"""

from __future__ import annotations

import math
import struct
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final, cast

from odfweb3.errors import FormatError

__all__ = ["MAX_DEPTH", "DagCborValue", "decode_dagcbor", "encode_dagcbor", "sort_key"]

if TYPE_CHECKING:
    from multiformats import CID

MAX_DEPTH: Final = 64
"""Deepest nesting of lists/maps the decoder accepts."""

CID_TAG: Final = 42

DagCborValue = object
"""Any value of the mapping in the module docstring (typed loosely on purpose)."""

_MAJOR_UINT, _MAJOR_NINT, _MAJOR_BYTES, _MAJOR_TEXT = 0, 1, 2, 3
_MAJOR_ARRAY, _MAJOR_MAP, _MAJOR_TAG, _MAJOR_SIMPLE = 4, 5, 6, 7


def sort_key(key: str) -> tuple[int, bytes]:
    """DAG-CBOR map key order: UTF-8 length first, then bytewise."""
    raw = key.encode("utf-8")
    return len(raw), raw


def _head(major: int, value: int) -> bytes:
    # Shortest form of an argument (RFC 8949 section 3; DAG-CBOR "integer encoding").
    if value < 24:
        return bytes([major << 5 | value])
    if value < 1 << 8:
        return bytes([major << 5 | 24, value])
    if value < 1 << 16:
        return bytes([major << 5 | 25]) + value.to_bytes(2, "big")
    if value < 1 << 32:
        return bytes([major << 5 | 26]) + value.to_bytes(4, "big")
    return bytes([major << 5 | 27]) + value.to_bytes(8, "big")


def encode_dagcbor(value: DagCborValue) -> bytes:
    """Encode a value canonically as DAG-CBOR.

    Args:
        value: a value of the mapping in the module docstring.

    Returns:
        The canonical DAG-CBOR bytes.

    Raises:
        TypeError: a value of an unsupported type (or a non-string map key).
        ValueError: an integer out of range or a non-finite float.
    """
    out = bytearray()
    _encode(value, out, 0)
    return bytes(out)


def _is_cid(value: object) -> bool:
    # multiformats is imported where a CID is decoded, not here: a car: publish encodes
    # its IPNS record's DAG-CBOR (no CID in it) and would import it for this test alone.
    # No value is a CID before the module that defines the class was imported.
    mf = sys.modules.get("multiformats")
    return mf is not None and isinstance(value, mf.CID)


def _encode(value: DagCborValue, out: bytearray, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ValueError(f"DAG-CBOR: nesting deeper than {MAX_DEPTH}")
    if value is None:
        out.append(0xF6)
    elif value is True:
        out.append(0xF5)
    elif value is False:
        out.append(0xF4)
    elif isinstance(value, int):
        if 0 <= value < 1 << 64:
            out += _head(_MAJOR_UINT, value)
        elif -(1 << 64) <= value < 0:
            out += _head(_MAJOR_NINT, -1 - value)
        else:
            raise ValueError(f"DAG-CBOR: integer {value} outside the 64-bit range")
    elif isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        out += _head(_MAJOR_BYTES, len(raw))
        out += raw
    elif isinstance(value, str):
        raw = value.encode("utf-8")
        out += _head(_MAJOR_TEXT, len(raw))
        out += raw
    elif _is_cid(value):
        raw = b"\x00" + bytes(cast("CID", value))
        out += _head(_MAJOR_TAG, CID_TAG)
        out += _head(_MAJOR_BYTES, len(raw))
        out += raw
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("DAG-CBOR: NaN and Infinity cannot be encoded")
        out.append(0xFB)
        out += struct.pack(">d", value)
    elif isinstance(value, Mapping):
        keys = list(value.keys())
        for key in keys:
            if not isinstance(key, str):
                raise TypeError(f"DAG-CBOR: map keys must be strings, not {type(key).__name__}")
        out += _head(_MAJOR_MAP, len(keys))
        for key in sorted(keys, key=sort_key):
            _encode(key, out, depth + 1)
            _encode(value[key], out, depth + 1)
    elif isinstance(value, Sequence):
        out += _head(_MAJOR_ARRAY, len(value))
        for item in value:
            _encode(item, out, depth + 1)
    else:
        raise TypeError(f"DAG-CBOR: cannot encode a {type(value).__name__}")


def decode_dagcbor(data: bytes) -> DagCborValue:
    """Decode exactly one strict DAG-CBOR value from ``data``.

    Args:
        data: the complete encoded document (nothing may follow it).

    Returns:
        The decoded value (see the module docstring for the type mapping).

    Raises:
        FormatError: malformed or non-canonical DAG-CBOR, or trailing bytes.
    """
    reader = _Reader(bytes(data))
    value = reader.value(0)
    if reader.pos != len(reader.data):
        raise FormatError(
            f"DAG-CBOR: {len(reader.data) - reader.pos} trailing bytes after the value"
        )
    return value


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, n: int) -> bytes:
        if n > len(self.data) - self.pos:
            raise FormatError(f"DAG-CBOR: truncated input at byte {self.pos}")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def _head(self) -> tuple[int, int, int]:
        """Return (major, additional info, argument), enforcing shortest form."""
        start = self.pos
        initial = self._take(1)[0]
        major, info = initial >> 5, initial & 0x1F
        if major == _MAJOR_SIMPLE:
            return major, info, 0  # arguments of major 7 are interpreted by the caller
        if info < 24:
            return major, info, info
        if info == 31:
            raise FormatError(f"DAG-CBOR: indefinite length at byte {start} is not allowed")
        if info > 27:
            raise FormatError(f"DAG-CBOR: reserved additional info {info} at byte {start}")
        size = 1 << (info - 24)
        arg = int.from_bytes(self._take(size), "big")
        minimum = 24 if size == 1 else 1 << (4 * size)
        if arg < minimum:
            raise FormatError(f"DAG-CBOR: non-shortest integer or length at byte {start}")
        return major, info, arg

    def value(self, depth: int) -> DagCborValue:
        if depth > MAX_DEPTH:
            raise FormatError(f"DAG-CBOR: nesting deeper than {MAX_DEPTH}")
        start = self.pos
        major, info, arg = self._head()
        if major == _MAJOR_UINT:
            return arg
        if major == _MAJOR_NINT:
            return -1 - arg
        if major == _MAJOR_BYTES:
            return self._take(arg)
        if major == _MAJOR_TEXT:
            try:
                return self._take(arg).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise FormatError(f"DAG-CBOR: invalid UTF-8 in string at byte {start}") from exc
        if major == _MAJOR_ARRAY:
            self._check_count(arg, start)
            return [self.value(depth + 1) for _ in range(arg)]
        if major == _MAJOR_MAP:
            return self._map(arg, start, depth)
        if major == _MAJOR_TAG:
            return self._cid(arg, start)
        return self._simple(info, start)

    def _check_count(self, count: int, start: int) -> None:
        # Every item takes at least one byte: refuse absurd counts before allocating.
        if count > len(self.data) - self.pos:
            raise FormatError(f"DAG-CBOR: item count at byte {start} exceeds the input size")

    def _map(self, count: int, start: int, depth: int) -> dict[str, DagCborValue]:
        self._check_count(count, start)
        result: dict[str, DagCborValue] = {}
        previous: tuple[int, bytes] | None = None
        for _ in range(count):
            key_at = self.pos
            key = self.value(depth + 1)
            if not isinstance(key, str):
                raise FormatError(f"DAG-CBOR: map key at byte {key_at} is not a string")
            order = sort_key(key)
            if previous is not None:
                if order == previous:
                    raise FormatError(f"DAG-CBOR: duplicate map key {key!r} at byte {key_at}")
                if order < previous:
                    raise FormatError(
                        f"DAG-CBOR: map key {key!r} at byte {key_at} is out of canonical order"
                    )
            previous = order
            result[key] = self.value(depth + 1)
        return result

    def _cid(self, tag: int, start: int) -> CID:
        if tag != CID_TAG:
            raise FormatError(f"DAG-CBOR: tag {tag} at byte {start} is not allowed (only 42)")
        content_at = self.pos
        major, _info, length = self._head()
        if major != _MAJOR_BYTES:
            raise FormatError(f"DAG-CBOR: CID tag at byte {start} does not wrap a byte string")
        raw = self._take(length)
        if not raw or raw[0] != 0:
            raise FormatError(f"DAG-CBOR: CID at byte {content_at} lacks the 0x00 prefix")
        from multiformats import CID

        try:
            return CID.decode(raw[1:])
        except Exception as exc:  # multiformats raises several unrelated types
            raise FormatError(f"DAG-CBOR: invalid CID at byte {content_at}") from exc

    def _simple(self, info: int, start: int) -> DagCborValue:
        if info == 20:
            return False
        if info == 21:
            return True
        if info == 22:
            return None
        if info == 27:
            number: float = struct.unpack(">d", self._take(8))[0]
            if not math.isfinite(number):
                raise FormatError(f"DAG-CBOR: NaN or Infinity at byte {start}")
            return number
        if info in (25, 26):
            raise FormatError(f"DAG-CBOR: float at byte {start} is not 64-bit")
        raise FormatError(f"DAG-CBOR: simple value {info} at byte {start} is not allowed")
