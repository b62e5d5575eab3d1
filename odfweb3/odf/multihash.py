"""Multihashes and their multibase text form, as ODF uses them.

ODF names every block, data file and checkpoint by a multihash: SHA3-256
(code ``0x16``, 32 bytes) in practice, SHA2-256 (``0x12``) accepted on read. Text
forms are multibase; we *write* base16 (``f1620…``, ODF RFC-012) and *read* every
encoding in the multibase spec's final state (base16, base32, base58btc, base64,
…), via the ``multiformats`` package.

File hashing streams in 1 MiB reads into one reusable buffer, so memory stays
bounded whatever the file size.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, Final

from odfweb3.errors import FormatError, HashMismatch

__all__ = [
    "SHA2_256",
    "SHA3_256",
    "digest_of",
    "hash_bytes",
    "hash_fd",
    "hash_file",
    "hash_stream",
    "multihash_from_str",
    "multihash_to_str",
    "new_hasher",
    "split_multihash",
    "verify_bytes",
]

SHA3_256: Final = 0x16
SHA2_256: Final = 0x12

_HASHERS: Final[dict[int, Callable[[], hashlib._Hash]]] = {
    SHA3_256: hashlib.sha3_256,
    SHA2_256: hashlib.sha256,
}
_READ_SIZE: Final = 1 << 20
_LOCAL: Final = threading.local()


def new_hasher(code: int = SHA3_256) -> hashlib._Hash:
    """Return a fresh hashlib object for a supported multihash code."""
    try:
        return _HASHERS[code]()
    except KeyError:
        raise FormatError(f"unsupported multihash code 0x{code:x}: use SHA3-256 (0x16)") from None


def _wrap(code: int, digest: bytes) -> bytes:
    # Both supported codes and the 32-byte length fit in one varint byte each.
    return bytes((code, len(digest))) + digest


def hash_bytes(data: bytes | bytearray | memoryview, code: int = SHA3_256) -> bytes:
    """Multihash (raw bytes) of ``data``."""
    h = new_hasher(code)
    h.update(data)
    return _wrap(code, h.digest())


def hash_stream(stream: BinaryIO, code: int = SHA3_256) -> tuple[bytes, int]:
    """Multihash and byte count of everything left in ``stream``, in bounded memory."""
    h = new_hasher(code)
    # One 1 MiB buffer per thread, reused: allocating (and zeroing) it per file costs
    # more than hashing a small file, and deep validation hashes tens of thousands of
    # them. Taken out while in use, so a nested call gets a fresh one.
    buf: bytearray = getattr(_LOCAL, "buf", None) or bytearray(_READ_SIZE)
    _LOCAL.buf = None
    try:
        return _hash_into(stream, h, buf, code)
    finally:
        _LOCAL.buf = buf


def _hash_into(stream: BinaryIO, h: hashlib._Hash, buf: bytearray, code: int) -> tuple[bytes, int]:
    view = memoryview(buf)
    size = 0
    readinto = getattr(stream, "readinto", None)
    while True:
        if readinto is not None:
            n = readinto(buf)
            if not n:
                break
            h.update(view[:n])
        else:
            chunk = stream.read(_READ_SIZE)
            if not chunk:
                break
            n = len(chunk)
            h.update(chunk)
        size += n
    return _wrap(code, h.digest()), size


def hash_fd(fd: int, code: int = SHA3_256, *, regular: bool = False) -> tuple[bytes, int]:
    """Multihash and byte count of what is left to read from file descriptor ``fd``.

    ``fd`` is not closed. With ``regular`` (the descriptor is a regular file, e.g.
    checked with ``fstat``) a short read is taken as the end of the file, which
    saves one ``read`` per small file.
    """
    h = new_hasher(code)
    buf: bytearray = getattr(_LOCAL, "buf", None) or bytearray(_READ_SIZE)
    _LOCAL.buf = None
    try:
        view = memoryview(buf)
        size = 0
        while n := os.readv(fd, (buf,)):
            h.update(view[:n])
            size += n
            if regular and n < _READ_SIZE:
                break
        return _wrap(code, h.digest()), size
    finally:
        _LOCAL.buf = buf


def hash_file(path: Path, code: int = SHA3_256) -> tuple[bytes, int]:
    """Multihash and size of the file at ``path``, streamed."""
    with open(path, "rb", buffering=0) as f:
        return hash_stream(f, code)


def split_multihash(mh: bytes) -> tuple[int, bytes]:
    """Split a multihash into (code, digest), checking code and length.

    Raises:
        FormatError: unknown code, wrong length or trailing bytes.
    """
    if len(mh) < 2 or mh[0] & 0x80 or mh[1] & 0x80:
        raise FormatError(f"malformed multihash {mh[:8].hex()}…: expected <code><len><digest>")
    code, length = mh[0], mh[1]
    if code not in _HASHERS:
        raise FormatError(f"unsupported multihash code 0x{code:x}: use SHA3-256 (0x16)")
    if length != 32 or len(mh) != 2 + length:
        raise FormatError(f"malformed multihash: code 0x{code:x} wants 32 digest bytes")
    return code, mh[2:]


def digest_of(mh: bytes) -> bytes:
    """The digest part of a multihash."""
    return split_multihash(mh)[1]


def multihash_to_str(mh: bytes) -> str:
    """Text form of a multihash: multibase base16, lower case (``f1620…``)."""
    return "f" + mh.hex()


def multihash_from_str(text: str) -> bytes:
    """Parse a multibase multihash in any final multibase encoding.

    Raises:
        FormatError: not multibase, or not a supported multihash.
    """
    text = text.strip()
    if text.startswith("f") and len(text) == 69:
        # Fast path for the base16 form we write everywhere.
        try:
            mh = bytes.fromhex(text[1:])
        except ValueError:
            raise FormatError(f"not a multibase hash: {text[:80]!r}") from None
    else:
        from multiformats import multibase  # the other encodings: rare, and slow to import

        try:
            mh = multibase.decode(text)
        except Exception as exc:  # multiformats raises several unrelated types
            raise FormatError(f"not a multibase hash: {text[:80]!r}") from exc
    split_multihash(mh)
    return bytes(mh)


def verify_bytes(data: bytes | bytearray | memoryview, expected: bytes, where: str = "") -> None:
    """Raise :class:`HashMismatch` unless ``data`` hashes to the multihash ``expected``."""
    code, _ = split_multihash(expected)
    actual = hash_bytes(data, code)
    if actual != expected:
        raise HashMismatch(multihash_to_str(expected), multihash_to_str(actual), where)
