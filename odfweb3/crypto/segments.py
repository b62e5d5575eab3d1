"""The object encryption format: a header plus AES-256-GCM over fixed-size segments.

Used for every object of an encrypted dataset on IPFS, and on Arweave outside ArFS
private drives (docs/design.md, "Encryption"). Layout of one encrypted object::

    header (48 bytes)
      magic        6  b"ODFENC"
      version      1  1
      algorithm    1  1 = AES-256-GCM, HKDF-SHA256 object key, STREAM-style nonces
      segment_size 4  plaintext bytes per segment, big-endian (16 .. 16 MiB; default 64 KiB)
      epoch        4  key epoch of the dataset's content key, big-endian
      salt        32  random per object
    segment 0 .. n-1  AES-256-GCM(plaintext segment) || 16-byte tag

- Object key = HKDF-SHA256(content key of ``epoch``, salt, info binds dataset ID and
  epoch) (:meth:`~odfweb3.crypto.keys.ContentKey.object_key`): a fresh key per object.
- Nonce of segment i = i as 11 bytes big-endian || final flag (1 on the last segment,
  else 0). Keys are per object and counters never repeat within one, so no nonce is
  ever reused; the final flag makes truncation at a segment boundary and appended
  segments detectable (the STREAM construction of Hoang, Reyhanitabar, Rogaway, Vizár).
- Associated data of every segment = the header bytes || the object path (UTF-8, e.g.
  ``data/f1620…``): a ciphertext moved to another path, or a modified header, fails.
- Every segment holds exactly ``segment_size`` plaintext bytes except the last, which
  holds 1 .. ``segment_size`` (0 only when the object is empty: one empty final segment).

Exact size: ``ciphertext_size(n) = 48 + n + 16 * max(1, ceil(n / segment_size))``.

Errors: :class:`~odfweb3.errors.FormatError` for a header that is not ours (magic,
version, algorithm, sizes), :class:`~odfweb3.errors.DecryptionError` for everything a
key holder could observe after that: wrong key or path, tampering, truncation,
reordering, appended data. Messages never contain key material.
"""

from __future__ import annotations

import secrets
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import BinaryIO, Final, cast

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from odfweb3.crypto.keys import ContentKey, KeyRing
from odfweb3.errors import DecryptionError, FormatError, HashMismatch, UsageError
from odfweb3.odf.multihash import multihash_to_str, new_hasher

__all__ = [
    "ALGORITHM_AES256GCM_HKDF",
    "DEFAULT_SEGMENT_SIZE",
    "HEADER_SIZE",
    "MAGIC",
    "TAG_SIZE",
    "VERSION",
    "EncryptingReader",
    "Header",
    "ciphertext_size",
    "decode_header",
    "decrypt_bytes",
    "decrypt_object",
    "decrypt_stream",
    "encode_header",
    "encrypt_bytes",
    "encrypt_stream",
    "plaintext_size",
]

MAGIC: Final = b"ODFENC"
VERSION: Final = 1
ALGORITHM_AES256GCM_HKDF: Final = 1
DEFAULT_SEGMENT_SIZE: Final = 64 * 1024
MIN_SEGMENT_SIZE: Final = 16
MAX_SEGMENT_SIZE: Final = 16 * 1024 * 1024
SALT_SIZE: Final = 32
TAG_SIZE: Final = 16
_HEADER: Final = struct.Struct(">6sBBII32s")
HEADER_SIZE: Final = _HEADER.size  # 48
_HAS_ENCRYPT_INTO: Final = hasattr(AESGCM, "encrypt_into")

Source = BinaryIO | Iterable[bytes]


@dataclass(frozen=True)
class Header:
    """The parsed header of one encrypted object (nothing in it is secret)."""

    segment_size: int
    epoch: int
    salt: bytes
    version: int = VERSION
    algorithm: int = ALGORITHM_AES256GCM_HKDF


def _check_segment_size(size: int) -> None:
    if not MIN_SEGMENT_SIZE <= size <= MAX_SEGMENT_SIZE:
        raise UsageError(f"segment size {size}: use {MIN_SEGMENT_SIZE} .. {MAX_SEGMENT_SIZE} bytes")


def encode_header(header: Header) -> bytes:
    """The 48 header bytes."""
    _check_segment_size(header.segment_size)
    if len(header.salt) != SALT_SIZE:
        raise UsageError(f"object salt must be {SALT_SIZE} bytes")
    return _HEADER.pack(
        MAGIC, header.version, header.algorithm, header.segment_size, header.epoch, header.salt
    )


def decode_header(data: bytes, where: str = "object") -> Header:
    """Parse the first 48 bytes of an encrypted object.

    Raises:
        FormatError: too short, not our magic, or an unknown version, algorithm or size.
    """
    if len(data) < HEADER_SIZE:
        raise FormatError(
            f"{where}: encrypted header truncated ({len(data)} of {HEADER_SIZE} bytes)"
        )
    magic, version, algorithm, seg, epoch, salt = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise FormatError(f"{where}: not an odfweb3 encrypted object (bad magic)")
    if version != VERSION:
        raise FormatError(f"{where}: encryption format version {version} unknown; upgrade odfweb3")
    if algorithm != ALGORITHM_AES256GCM_HKDF:
        raise FormatError(f"{where}: encryption algorithm {algorithm} unknown; upgrade odfweb3")
    if not MIN_SEGMENT_SIZE <= seg <= MAX_SEGMENT_SIZE:
        raise FormatError(f"{where}: segment size {seg} out of range")
    return Header(seg, epoch, bytes(salt), version, algorithm)


def ciphertext_size(plaintext_size: int, segment_size: int = DEFAULT_SEGMENT_SIZE) -> int:
    """Exact size of the encrypted form of ``plaintext_size`` bytes."""
    if plaintext_size < 0:
        raise UsageError("plaintext size must not be negative")
    _check_segment_size(segment_size)
    segments = max(1, -(-plaintext_size // segment_size))
    return HEADER_SIZE + plaintext_size + TAG_SIZE * segments


def plaintext_size(ciphertext_size: int, segment_size: int = DEFAULT_SEGMENT_SIZE) -> int:
    """Inverse of :func:`ciphertext_size`.

    Raises:
        FormatError: no plaintext size encrypts to ``ciphertext_size`` bytes.
    """
    _check_segment_size(segment_size)
    body = ciphertext_size - HEADER_SIZE
    full, rest = divmod(body, segment_size + TAG_SIZE)
    if body < TAG_SIZE or (rest and rest < TAG_SIZE) or (full and rest == TAG_SIZE):
        raise FormatError(f"{ciphertext_size} bytes is not a valid encrypted object size")
    return full * segment_size + (rest - TAG_SIZE if rest else 0)


def _nonce(index: int, final: bool) -> bytes:
    return index.to_bytes(11, "big") + (b"\x01" if final else b"\x00")


def _aad(header: bytes, path: str) -> bytes:
    return header + path.encode("utf-8")


def _read_exact(raw: BinaryIO, n: int) -> bytes:
    data = raw.read(n)
    if len(data) == n or not data:
        return data
    parts = [data]
    got = len(data)
    while got < n:
        more = raw.read(n - got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def _pieces(source: Source, size: int) -> Iterator[bytes]:
    """Cut ``source`` into pieces of exactly ``size`` bytes; the last may be shorter.

    Yields no empty piece (an empty source yields nothing).
    """
    if hasattr(source, "read"):
        raw: BinaryIO = source  # type: ignore[assignment]
        while True:
            piece = _read_exact(raw, size)
            if piece:
                yield piece
            if len(piece) < size:
                return
    buf = bytearray()
    for chunk in source:
        view = memoryview(chunk)
        if buf:  # top up the partial piece first
            need = size - len(buf)
            buf += view[:need]
            view = view[need:]
            if len(buf) < size:
                continue
            yield bytes(buf)
            buf = bytearray()
        while len(view) >= size:  # whole pieces straight from the chunk
            yield bytes(view[:size])
            view = view[size:]
        buf += view
    if buf:
        yield bytes(buf)


def encrypt_stream(
    source: Source,
    key: ContentKey,
    path: str,
    *,
    segment_size: int = DEFAULT_SEGMENT_SIZE,
    salt: bytes | None = None,
) -> Iterator[bytes]:
    """Encrypt ``source`` (a binary stream or byte chunks) for the object at ``path``.

    Yields the header, then one ciphertext segment at a time: memory stays at about
    two segments whatever the size of the object.

    Args:
        source: the plaintext.
        key: the content key (its epoch goes into the header).
        path: the object's path in the dataset (``data/f1620…``), bound as associated data.
        segment_size: plaintext bytes per segment.
        salt: the object salt; random unless given (give one only in tests).
    """
    header = encode_header(Header(segment_size, key.epoch, salt or secrets.token_bytes(32)))
    aead = AESGCM(key.object_key(header[-SALT_SIZE:]))
    aad = _aad(header, path)
    yield header
    # STREAM: a segment is sealed only once the next piece (or the end) is known, so
    # the last one, and only it, gets the final flag (module docstring).
    encrypt = aead.encrypt
    index = 0
    pending: bytes | None = None
    for piece in _pieces(source, segment_size):
        if pending is not None:
            yield encrypt(_nonce(index, False), pending, aad)
            index += 1
        pending = piece
    yield encrypt(_nonce(index, True), pending or b"", aad)


def encrypt_bytes(data: bytes, key: ContentKey, path: str, **kwargs: int) -> bytes:
    """Encrypt a small object held in memory (e.g. ``refs/head``, a block)."""
    return b"".join(encrypt_stream([data], key, path, **kwargs))  # type: ignore[arg-type]


def _key_for(keys: KeyRing | ContentKey, epoch: int, where: str) -> ContentKey:
    if isinstance(keys, ContentKey):
        if keys.epoch != epoch:
            raise DecryptionError(
                f"{where}: encrypted under key epoch {epoch}, but the key given is epoch "
                f"{keys.epoch}; use the dataset's key ring"
            )
        return keys
    return keys.for_epoch(epoch)


def decrypt_stream(source: Source, keys: KeyRing | ContentKey, path: str) -> Iterator[bytes]:
    """Decrypt an object encrypted by :func:`encrypt_stream`; yields plaintext segments.

    Every segment is authenticated before it is yielded; a truncated object raises
    after the segments that did verify, so consumers must not trust the output before
    the iterator is exhausted without error.

    Raises:
        FormatError: the header is not an odfweb3 encrypted-object header.
        DecryptionError: wrong key or path, tampered, truncated, reordered or extended.
    """
    where = path or "object"
    if hasattr(source, "read"):
        head = _read_exact(source, HEADER_SIZE)  # type: ignore[arg-type]
        body: Source = source
    else:
        chunks = iter(source)
        acc = bytearray()
        for chunk in chunks:
            acc += chunk
            if len(acc) >= HEADER_SIZE:
                break
        head = bytes(acc[:HEADER_SIZE])
        body = _prepend(bytes(acc[HEADER_SIZE:]), chunks)
    header = decode_header(head, where)
    aead = AESGCM(_key_for(keys, header.epoch, where).object_key(header.salt))
    aad = _aad(head, path)
    seg = header.segment_size + TAG_SIZE
    index = 0
    pending: bytes | None = None
    for piece in _pieces(body, seg):
        if pending is not None:
            yield _open(aead, index, pending, aad, where, final=False)
            index += 1
        pending = piece
    if pending is None:
        raise DecryptionError(f"{where}: encrypted object has no segments (truncated)")
    yield _open(aead, index, pending, aad, where, final=True)


def _prepend(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    if first:
        yield first
    yield from rest


def _open(aead: AESGCM, index: int, data: bytes, aad: bytes, where: str, *, final: bool) -> bytes:
    if len(data) < TAG_SIZE:
        raise DecryptionError(f"{where}: segment {index} is cut short (truncated)")
    try:
        return aead.decrypt(_nonce(index, final), data, aad)
    except InvalidTag:
        pass
    # Only to say what went wrong: does it verify with the other final flag?
    try:
        aead.decrypt(_nonce(index, not final), data, aad)
    except InvalidTag:
        hint = (
            "wrong key, wrong path, or tampered data"
            if index == 0
            else "tampered or reordered data"
        )
        raise DecryptionError(f"{where}: segment {index} failed authentication ({hint})") from None
    if final:
        raise DecryptionError(
            f"{where}: ends after segment {index}, which is not the last (truncated)"
        ) from None
    raise DecryptionError(
        f"{where}: data after the final segment {index} (appended or reordered)"
    ) from None


def decrypt_bytes(data: bytes, keys: KeyRing | ContentKey, path: str) -> bytes:
    """Decrypt a small object held in memory."""
    return b"".join(decrypt_stream([data], keys, path))


def decrypt_object(
    source: Source,
    keys: KeyRing | ContentKey,
    path: str,
    expected_hash: bytes | None = None,
) -> Iterator[bytes]:
    """Decrypt an object and, at the end, check the ODF hash of its plaintext.

    For pull and verify: ``expected_hash`` is the object's multihash (for ``data/``,
    ``checkpoints/`` and ``blocks/`` objects, the hash in its path).

    Raises:
        DecryptionError, FormatError: as :func:`decrypt_stream`.
        HashMismatch: the plaintext is not what ``expected_hash`` says.
    """
    hasher = new_hasher(expected_hash[0]) if expected_hash else None
    for piece in decrypt_stream(source, keys, path):
        if hasher is not None:
            hasher.update(piece)
        yield piece
    if hasher is not None and expected_hash is not None:
        actual = bytes((expected_hash[0], hasher.digest_size)) + hasher.digest()
        if actual != expected_hash:
            raise HashMismatch(multihash_to_str(expected_hash), multihash_to_str(actual), path)


def _readinto_of(raw: BinaryIO) -> Callable[[memoryview], int]:
    readinto = getattr(raw, "readinto", None)
    if readinto is not None:
        return cast(Callable[[memoryview], int], readinto)

    def from_read(view: memoryview) -> int:
        data = raw.read(len(view))
        view[: len(data)] = data
        return len(data)

    return from_read


class _InPlaceSealer:
    """The segments of one object, sealed straight into the caller's buffers.

    The same bytes as :func:`encrypt_stream` without a new object per segment: the
    plaintext is read with ``readinto`` into two reused segment buffers (the second is
    the look-ahead that decides the STREAM final flag, as there) and
    ``AESGCM.encrypt_into`` writes each ciphertext segment where the reader of the stream
    wants it (cryptography >= 45; older versions copy from ``encrypt``).
    """

    def __init__(self, raw: BinaryIO, aead: AESGCM, aad: bytes, segment_size: int) -> None:
        self._readinto = _readinto_of(raw)
        self._seg = segment_size
        self._aead = aead
        self._aad = aad
        self._cur = memoryview(bytearray(segment_size))
        self._next = memoryview(bytearray(segment_size))
        self._cur_n = -1  # the first buffer is read on first use, not in the constructor
        self._off = 0  # start of the next segment in _cur
        self._index = 0
        self.done = False

    def _read_full(self, view: memoryview) -> int:
        """Fill ``view`` (like Go's io.ReadFull): short only at the end of the stream."""
        got = 0
        while got < len(view):
            n = self._readinto(view[got:])
            if not n:
                break
            got += n
        return got

    def next_size(self) -> int:
        """Ciphertext bytes of the next segment (call only while not :attr:`done`)."""
        if self._cur_n < 0:
            self._cur_n = self._read_full(self._cur)
        return min(self._seg, self._cur_n - self._off) + TAG_SIZE

    def seal_into(self, out: memoryview) -> None:
        """Seal the next segment into ``out``, exactly :meth:`next_size` bytes long."""
        start = self._off
        end = start + self.next_size() - TAG_SIZE
        next_n = -1
        if end < self._cur_n:
            final = False  # more of this buffer follows
        elif self._cur_n < len(self._cur):
            final = True  # a short read is the end of the stream (0 bytes: empty object)
        else:
            next_n = self._read_full(self._next)
            final = next_n == 0
        nonce = _nonce(self._index, final)
        if _HAS_ENCRYPT_INTO:
            self._aead.encrypt_into(nonce, self._cur[start:end], self._aad, out)
        else:  # pragma: no cover - cryptography < 45
            out[:] = self._aead.encrypt(nonce, self._cur[start:end], self._aad)
        self._index += 1
        if final:
            self.done = True
        elif next_n < 0:
            self._off = end
        else:
            self._cur, self._next, self._cur_n, self._off = self._next, self._cur, next_n, 0


class EncryptingReader:
    """A read-only binary stream of the ciphertext of ``raw`` (for readers of streams).

    Everything runs on the caller's thread and each segment is sealed in place, straight
    into the buffer given to :meth:`readinto` (no object per segment). Reading and
    encrypting on a helper thread was measured and dropped: on 2 cores it cost more CPU
    than it hid (bench/RESULTS.md).

    Args:
        raw: the plaintext stream (closed with this reader).
        key: the content key.
        path: the object's path (associated data).
        segment_size: plaintext bytes per segment.
        size: the plaintext size if known; then :attr:`size` is the exact ciphertext size.
        salt: the object salt; random unless given.
    """

    def __init__(
        self,
        raw: BinaryIO,
        key: ContentKey,
        path: str,
        *,
        segment_size: int = DEFAULT_SEGMENT_SIZE,
        size: int | None = None,
        salt: bytes | None = None,
    ) -> None:
        self._raw = raw
        header = encode_header(
            Header(segment_size, key.epoch, salt or secrets.token_bytes(SALT_SIZE))
        )
        aead = AESGCM(key.object_key(header[-SALT_SIZE:]))
        self._sealer = _InPlaceSealer(raw, aead, _aad(header, path), segment_size)
        self._scratch = memoryview(bytearray(segment_size + TAG_SIZE))
        self._buf = memoryview(header)
        self.size = ciphertext_size(size, segment_size) if size is not None else None
        self.produced = 0

    def __repr__(self) -> str:
        return f"EncryptingReader(produced={self.produced})"

    def _fill(self) -> bool:
        """Make :attr:`_buf` non-empty unless the ciphertext is all read."""
        while not self._buf:
            if self._sealer.done:
                return False
            out = self._scratch[: self._sealer.next_size()]
            self._sealer.seal_into(out)
            self._buf = out
        return True

    def readinto(self, buf: bytearray | memoryview) -> int:
        """Fill ``buf`` with ciphertext, across segments; short only at the end, 0 after it."""
        out = memoryview(buf).cast("B")
        want = len(out)
        filled = 0
        sealer = self._sealer
        while filled < want:
            if not self._buf and not sealer.done:
                n = sealer.next_size()
                if n <= want - filled:  # room for a whole segment: seal it in place
                    sealer.seal_into(out[filled : filled + n])
                    filled += n
                    continue
            if not self._fill():
                break
            n = min(want - filled, len(self._buf))
            out[filled : filled + n] = self._buf[:n]
            self._buf = self._buf[n:]
            filled += n
        self.produced += filled
        return filled

    def read(self, n: int = -1) -> bytes:
        """Read up to ``n`` bytes of ciphertext (all the rest when negative)."""
        parts = []
        want = -1 if n is None or n < 0 else n
        while want != 0 and self._fill():
            take = self._buf if want < 0 else self._buf[:want]
            parts.append(bytes(take))
            self._buf = self._buf[len(take) :]
            if want > 0:
                want -= len(take)
        data = b"".join(parts)
        self.produced += len(data)
        return data

    def readable(self) -> bool:
        """Always true."""
        return True

    def close(self) -> None:
        """Close the plaintext stream."""
        self._raw.close()

    def __enter__(self) -> EncryptingReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
