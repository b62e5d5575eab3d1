"""Content identifiers (CIDs) for the UnixFS importer and the CAR codec.

A small, bytes-backed CID value type. The ``multiformats`` package can do all of
this, but building one of its ``CID`` objects costs about 0.3 ms, which is more
than hashing a 256 KiB chunk; the importer makes one CID per chunk, so it uses
this type and converts to ``multiformats.CID`` only on request.

Covered (CID spec, https://github.com/multiformats/cid):

- CIDv0: the bare sha2-256 multihash ``0x12 0x20 <32 bytes>``, implicitly dag-pb,
  printed in base58btc (``Qm…``).
- CIDv1: ``varint(1) varint(codec) multihash``, printed in base32 lower-case
  (``b…``) as Kubo prints it. Codecs used here: raw ``0x55``, dag-pb ``0x70``.
- Multihashes: ``varint(code) varint(length) digest``; sha2-256 (``0x12``) is
  what we create, identity (``0x00``) and others are parsed.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

from odfweb3.errors import FormatError, HashMismatch

__all__ = [
    "CODEC_DAG_PB",
    "CODEC_RAW",
    "MH_IDENTITY",
    "MH_SHA2_256",
    "Cid",
    "decode_uvarint",
    "encode_uvarint",
]

CODEC_RAW: Final = 0x55
CODEC_DAG_PB: Final = 0x70
MH_IDENTITY: Final = 0x00
MH_SHA2_256: Final = 0x12

_SHA256_MH_PREFIX: Final = b"\x12\x20"
_V1_RAW_PREFIX: Final = b"\x01\x55\x12\x20"
_V1_DAG_PB_PREFIX: Final = b"\x01\x70\x12\x20"
_V1_SHA256_PREFIXES: Final = frozenset((_V1_RAW_PREFIX, _V1_DAG_PB_PREFIX))
_MAX_VARINT_LEN: Final = 9  # unsigned-varint spec: at most 63 bits, 9 bytes
_MAX_DIGEST_LEN: Final = 1024  # sanity bound for parsing untrusted multihashes

# Single-byte varints, precomputed: nearly every varint we write is below 128.
_SMALL_VARINTS: Final = tuple(bytes((i,)) for i in range(128))


def encode_uvarint(value: int) -> bytes:
    """Encode a non-negative integer as an unsigned LEB128 varint.

    Args:
        value: integer in ``[0, 2**64)``.

    Returns:
        The varint bytes (protobuf and multiformats use the same encoding).
    """
    if 0 <= value < 128:
        return _SMALL_VARINTS[value]
    if value < 0 or value >= 1 << 64:
        raise ValueError(f"varint out of range: {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def decode_uvarint(
    data: bytes | memoryview, pos: int, where: str, max_len: int = _MAX_VARINT_LEN
) -> tuple[int, int]:
    """Read a minimal unsigned varint (multiformats rules) at ``pos``.

    Args:
        data: buffer to read from.
        pos: offset of the first varint byte.
        where: what is being parsed, for error messages.
        max_len: longest accepted encoding (9 for multiformats, 10 for protobuf int64).

    Returns:
        ``(value, next_pos)``.

    Raises:
        FormatError: truncated, longer than 9 bytes, or not minimally encoded.
    """
    value = 0
    shift = 0
    end = len(data)
    for i in range(max_len):
        if pos + i >= end:
            raise FormatError(f"{where}: truncated varint; the data is incomplete")
        byte = data[pos + i]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            if byte == 0 and i > 0:
                raise FormatError(f"{where}: varint is not minimally encoded")
            return value, pos + i + 1
        shift += 7
    raise FormatError(f"{where}: varint longer than {max_len} bytes")


_B32_ALPHABET: Final = "abcdefghijklmnopqrstuvwxyz234567"
_B32_TO_INT_DIGITS: Final = str.maketrans(_B32_ALPHABET, "0123456789abcdefghijklmnopqrstuv")


_B32_PAIRS: Final = tuple(x + y for x in _B32_ALPHABET for y in _B32_ALPHABET)


def _b32_lower_encode(raw: bytes) -> str:
    """Bytes -> unpadded lower-case RFC 4648 base32, ten bits at a time from one int
    (``base64.b32encode`` is pure Python and costs twice as much: a first publish names
    each of its objects by CID text twice, 60,000 at 10,000 blocks)."""
    n = len(raw)
    pad = -n % 5  # whole 40-bit groups: the pairs below end on a character boundary
    value = int.from_bytes(raw + bytes(pad), "big")
    pairs = _B32_PAIRS
    top = ((n + pad) * 8 // 10 - 1) * 10
    text = "".join([pairs[(value >> shift) & 1023] for shift in range(top, -1, -10)])
    return text[: (n * 8 + 4) // 5]


def _b32_lower_decode(body: str) -> bytes:
    """Unpadded lower-case RFC 4648 base32 -> bytes, via int() (C speed; ``base64.b32decode``
    is pure Python and dominated the loading of large publish states)."""
    if not body or body.strip("abcdefghijklmnopqrstuvwxyz234567"):
        raise ValueError("not lower-case base32")
    bits = len(body) * 5
    nbytes, extra = divmod(bits, 8)
    value = int(body.translate(_B32_TO_INT_DIGITS), 32)
    if extra >= 5 or value & ((1 << extra) - 1):
        raise ValueError("non-canonical base32 padding bits")
    return (value >> extra).to_bytes(nbytes, "big")


def _parse_cid(raw: bytes, where: str) -> tuple[int, int, int, int]:
    """Parse CID bytes; return (version, codec, hash code, digest offset)."""
    if len(raw) == 34 and raw[:2] == _SHA256_MH_PREFIX:
        return 0, CODEC_DAG_PB, MH_SHA2_256, 2
    if len(raw) == 36 and raw[:4] in _V1_SHA256_PREFIXES:
        # The common shapes (v1, raw or dag-pb, sha2-256) without the varint decoding:
        # loading a publish state parses one CID per object.
        return 1, raw[1], MH_SHA2_256, 4
    version, pos = decode_uvarint(raw, 0, where)
    if version != 1:
        raise FormatError(f"{where}: unsupported CID version {version}; only v0 and v1 exist")
    codec, pos = decode_uvarint(raw, pos, where)
    code, pos = decode_uvarint(raw, pos, where)
    length, pos = decode_uvarint(raw, pos, where)
    if length > _MAX_DIGEST_LEN:
        raise FormatError(f"{where}: multihash digest length {length} is implausible")
    if len(raw) - pos != length:
        raise FormatError(
            f"{where}: multihash says {length} digest bytes but {len(raw) - pos} follow"
        )
    return 1, codec, code, pos


class Cid:
    """An immutable CID held as its binary form.

    Construct with :meth:`from_bytes` / :meth:`decode` (validating) or the
    fast constructors :meth:`sha256` (for bytes the caller has just hashed).
    Equality and hashing are by the binary form, so a CIDv0 and the CIDv1 of
    the same block are different values (as for Kubo).
    """

    __slots__ = ("_code", "_codec", "_digest_at", "_raw", "_version")

    _raw: bytes
    _version: int
    _codec: int
    _code: int
    _digest_at: int

    def __init__(self, raw: bytes, *, where: str = "CID") -> None:
        """Validate and wrap binary CID bytes.

        Args:
            raw: binary CID (CIDv0 = bare multihash, CIDv1 = version-prefixed).
            where: context for error messages.

        Raises:
            FormatError: the bytes are not a CID.
        """
        raw = bytes(raw)
        version, codec, code, at = _parse_cid(raw, where)
        self._init(raw, version, codec, code, at)

    def _init(self, raw: bytes, version: int, codec: int, code: int, at: int) -> None:
        object.__setattr__(self, "_raw", raw)
        object.__setattr__(self, "_version", version)
        object.__setattr__(self, "_codec", codec)
        object.__setattr__(self, "_code", code)
        object.__setattr__(self, "_digest_at", at)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Cid is immutable")

    @classmethod
    def _trusted(cls, raw: bytes, version: int, codec: int, code: int, at: int) -> Cid:
        self = object.__new__(cls)
        self._init(raw, version, codec, code, at)
        return self

    @classmethod
    def from_bytes(cls, raw: bytes, *, where: str = "CID") -> Cid:
        """Parse a binary CID; raises :class:`FormatError` if malformed."""
        return cls(raw, where=where)

    @classmethod
    def sha256(cls, digest: bytes, *, version: int, codec: int) -> Cid:
        """Build the CID of a block from its sha2-256 digest (no validation beyond shape).

        Args:
            digest: the 32-byte SHA-256 digest of the block.
            version: 0 or 1 (CIDv0 only allows dag-pb).
            codec: ``CODEC_RAW`` or ``CODEC_DAG_PB`` (any multicodec for v1).
        """
        if len(digest) != 32:
            raise ValueError("sha2-256 digest must be 32 bytes")
        if version == 0:
            if codec != CODEC_DAG_PB:
                raise ValueError("CIDv0 can only address dag-pb blocks; use CIDv1 for raw")
            return cls._trusted(_SHA256_MH_PREFIX + digest, 0, CODEC_DAG_PB, MH_SHA2_256, 2)
        if version != 1:
            raise ValueError(f"unsupported CID version {version}")
        if codec == CODEC_RAW:
            prefix = _V1_RAW_PREFIX
        elif codec == CODEC_DAG_PB:
            prefix = _V1_DAG_PB_PREFIX
        else:
            prefix = b"\x01" + encode_uvarint(codec) + _SHA256_MH_PREFIX
        return cls._trusted(prefix + digest, 1, codec, MH_SHA2_256, len(prefix))

    @classmethod
    def of_block(cls, data: bytes, *, version: int = 1, codec: int = CODEC_RAW) -> Cid:
        """Hash ``data`` with sha2-256 and return its CID."""
        return cls.sha256(hashlib.sha256(data).digest(), version=version, codec=codec)

    @classmethod
    def decode(cls, value: str | bytes, *, where: str = "CID") -> Cid:
        """Parse a CID from its string (any multibase; bare base58 for v0) or binary form.

        Raises:
            FormatError: not a valid CID.
        """
        if isinstance(value, bytes | bytearray | memoryview):
            return cls(bytes(value), where=where)
        text = value.strip()
        try:
            if len(text) == 46 and text.startswith("Qm"):
                from multiformats import multibase

                raw = bytes(multibase.get("base58btc").raw_decoder(text))
            elif text[:1] == "b":
                raw = _b32_lower_decode(text[1:])
            else:
                from multiformats import multibase

                raw = bytes(multibase.decode(text))
        except (ValueError, KeyError, TypeError) as exc:
            raise FormatError(f"{where}: {text[:80]!r} is not a valid CID string") from exc
        return cls(raw, where=where)

    def __bytes__(self) -> bytes:
        return self._raw

    @property
    def raw(self) -> bytes:
        """The binary CID."""
        return self._raw

    @property
    def version(self) -> int:
        """CID version, 0 or 1."""
        return self._version

    @property
    def codec(self) -> int:
        """Multicodec of the addressed block (``0x70`` dag-pb, ``0x55`` raw, …)."""
        return self._codec

    @property
    def hash_code(self) -> int:
        """Multihash function code (``0x12`` sha2-256, ``0x00`` identity, …)."""
        return self._code

    @property
    def multihash(self) -> bytes:
        """The multihash (code, length and digest)."""
        if self._version == 0:
            return self._raw
        return self._raw[1 + len(encode_uvarint(self._codec)) :]

    @property
    def digest(self) -> bytes:
        """The raw digest bytes."""
        return self._raw[self._digest_at :]

    def to_v1(self) -> Cid:
        """The same block addressed as CIDv1."""
        if self._version == 1:
            return self
        return Cid.sha256(self.digest, version=1, codec=CODEC_DAG_PB)

    def encode(self) -> str:
        """Kubo's text form: base58btc for CIDv0, base32 (``b…``) for CIDv1."""
        if self._version == 0:
            from multiformats import multibase

            return str(multibase.get("base58btc").raw_encoder(self._raw))
        return "b" + _b32_lower_encode(self._raw)

    def to_multiformats(self) -> Any:
        """Convert to a ``multiformats.CID`` (slower; for interop)."""
        from multiformats import CID

        return CID.decode(self._raw)

    def verify(self, data: bytes | memoryview, *, where: str = "", what: str = "") -> None:
        """Check that ``data`` is the block this CID addresses.

        ``where`` names the block in the error; ``what`` instead names it as ``WHAT CID``,
        formatted only on failure (a CID's text form costs more than hashing a small block:
        a 10,000-block pull verifies 80,000).

        Raises:
            HashMismatch: the data hashes to something else.
            FormatError: the CID uses a hash function we cannot check.
        """
        digest = self.digest
        if self._code == MH_SHA2_256:
            actual = hashlib.sha256(data).digest()
        elif self._code == MH_IDENTITY:
            actual = bytes(data)
        elif self._code == 0x13:  # sha2-512
            actual = hashlib.sha512(data).digest()
        else:
            if what and not where:
                where = f"{what} {self}"
            raise FormatError(
                f"{where or self}: multihash code 0x{self._code:x} is not supported for "
                "verification; only sha2-256, sha2-512 and identity are"
            )
        if actual != digest:
            got = Cid._trusted(
                self._raw[: self._digest_at] + actual,
                self._version,
                self._codec,
                self._code,
                self._digest_at,
            )
            shown = got.encode() if len(actual) == len(digest) else f"{len(actual)} bytes"
            if what and not where:
                where = f"{what} {self}"
            raise HashMismatch(self.encode(), shown, where or "block")

    def __str__(self) -> str:
        return self.encode()

    def __repr__(self) -> str:
        return f"Cid({self.encode()!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Cid):
            return self._raw == other._raw
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._raw)

    def __lt__(self, other: Cid) -> bool:
        return self._raw < other._raw

    def __reduce__(self) -> tuple[type[Cid], tuple[bytes]]:
        return (Cid, (self._raw,))
