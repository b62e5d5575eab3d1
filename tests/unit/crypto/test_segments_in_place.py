"""Encryption fast paths (issue 7 benchmark): same bytes as before, errors kept, bounded.

Golden vectors: SHA-256 of the ciphertext of fixed key, salt, path and plaintext, taken
from the format as first committed (ba3c1b3, before the issue 7 speed work), so any
change of the wire format fails here. An independent rebuild of the format from its
description (header fields, HKDF object key, STREAM nonces, header || path as AAD) with
plain ``AESGCM`` checks the same bytes.
"""

from __future__ import annotations

import hashlib
import io
import struct
import tracemalloc

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from odfweb3.crypto.keys import ContentKey
from odfweb3.crypto.sealer import Sealer
from odfweb3.crypto.segments import (
    DEFAULT_SEGMENT_SIZE,
    TAG_SIZE,
    EncryptingReader,
    ciphertext_size,
    encrypt_stream,
)

DID = "did:odf:fed01" + "ab" * 32
PATH = "data/f1620" + "11" * 32
KEY = ContentKey(DID, 1, bytes(range(32)))
SALT = bytes(range(100, 132))

# (segment size, plaintext size, ciphertext size, SHA-256 of the ciphertext)
GOLDEN = [
    (64, 0, 64, "284b2cdd2a78c6aa319abe2ceb4fde879ffd7a5a9ff78c2f4686403f58334287"),
    (64, 1, 65, "f5f3e5b2df8051b3b9213d05d6384b556e863decd7a5d3933dc5820a59d16fc6"),
    (64, 64, 128, "774f7efeb0dbcc59a87f2cc1579c9ee0772ab5be635af9f6a1b240e020befbe6"),
    (64, 65, 145, "2f0ce6ad6a36f9533a1abc9db31f394bcbb70c3077b4e6d60a5e1da297aef9e3"),
    (64, 1000, 1304, "92dd6ca4bbe57d68e14006167d1cdd609ff43ef3ba3172bac65fa86687bd7d9d"),
    (65536, 0, 64, "2311fba907431fe4468a010e9cdd6a15246157cd27b3c7aabdebbe5e3c7ece5f"),
    (65536, 65536, 65600, "c6b51f1972079059e66d6955f207e5fe809d000e3e8ad7c67361f64c85fc80bc"),
    (65536, 65537, 65617, "98871b2dc6c8acfd1a9c32b7a7c416aa0a7fea98853e40d62db46cd4ef1c01dc"),
    (65536, 300000, 300128, "65e050673bcb240b33ee13e3a1203b8c6bdd851203f1d562e5c5523f6a5e1d85"),
    (65536, 1 << 20, 1048880, "513c2450e8468ed5b9c84a950adc71646fdab40bd9075ee9885df563ed674189"),
]


def _plain(n: int) -> bytes:
    return bytes((i * 7 + 3) % 251 for i in range(n))


class _ReadOnly:
    """A plaintext stream with ``read`` only (no ``readinto``), in small pieces."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def read(self, n: int = -1) -> bytes:
        return self._data.read(min(n, 1000) if n >= 0 else 1000)

    def close(self) -> None:
        self._data.close()


def _drain(reader: EncryptingReader, bufsize: int) -> bytes:
    out = bytearray()
    buf = bytearray(bufsize)
    while n := reader.readinto(buf):
        out += buf[:n]
    return bytes(out)


def _rebuild(data: bytes, seg: int) -> bytes:
    """The format from its description only (segments.py module docstring)."""
    header = b"ODFENC" + bytes((1, 1)) + struct.pack(">II", seg, KEY.epoch) + SALT
    aead = AESGCM(KEY.object_key(SALT))
    aad = header + PATH.encode()
    pieces = [data[i : i + seg] for i in range(0, len(data), seg)] or [b""]
    out = [header]
    for i, piece in enumerate(pieces):
        nonce = i.to_bytes(11, "big") + (b"\x01" if i == len(pieces) - 1 else b"\x00")
        out.append(aead.encrypt(nonce, piece, aad))
    return b"".join(out)


@pytest.mark.parametrize(("seg", "n", "size", "digest"), GOLDEN)
def test_golden_ciphertext_every_path(seg, n, size, digest):
    data = _plain(n)
    expected = _rebuild(data, seg)
    assert len(expected) == size == ciphertext_size(n, seg)
    assert hashlib.sha256(expected).hexdigest() == digest
    streamed = b"".join(encrypt_stream([data], KEY, PATH, segment_size=seg, salt=SALT))
    assert streamed == expected
    # buffer sizes: smaller than a segment (copied from scratch), exactly one ciphertext
    # segment of 64 or 65536 bytes (sealed in place), several segments
    for bufsize in (7, 80, 65552, 262144):
        for raw in (io.BytesIO(data), _ReadOnly(data)):
            reader = EncryptingReader(raw, KEY, PATH, segment_size=seg, size=n, salt=SALT)
            assert _drain(reader, bufsize) == expected
            assert reader.produced == size
            reader.close()
    reader = EncryptingReader(io.BytesIO(data), KEY, PATH, segment_size=seg, salt=SALT)
    assert reader.read(5) + reader.read(70000) + reader.read() == expected
    reader.close()


def test_readinto_fills_the_buffer_across_segments():
    data = _plain(10 * 64 + 3)
    reader = EncryptingReader(io.BytesIO(data), KEY, PATH, segment_size=64, salt=SALT)
    buf = bytearray(300)  # more than four ciphertext segments of 80 bytes
    assert reader.readinto(buf) == 300
    assert reader.readinto(bytearray(10_000)) == ciphertext_size(len(data), 64) - 300
    assert reader.readinto(buf) == 0


def test_sealer_gives_the_same_bytes():
    data = _plain(4 * DEFAULT_SEGMENT_SIZE + 5)
    sealed = Sealer(KEY, b"{}").open(io.BytesIO(data), PATH, len(data), salt=SALT)
    assert sealed.read() == _rebuild(data, DEFAULT_SEGMENT_SIZE)
    sealed.close()


class _Zeros(io.RawIOBase):
    """``good`` zero bytes of plaintext, then end of file, or a read error if ``fail``."""

    def __init__(self, good: int, *, fail: bool = False) -> None:
        self.left = good
        self.fail = fail

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:  # type: ignore[no-untyped-def]
        if self.left <= 0 and self.fail:
            raise OSError("disk read failed")
        n = min(len(buf), self.left)
        buf[:n] = bytes(n)
        self.left -= n
        return n


def test_a_read_error_reaches_the_reader():
    raw = io.BufferedReader(_Zeros(5 * DEFAULT_SEGMENT_SIZE + 10, fail=True))
    reader = EncryptingReader(raw, KEY, PATH, size=10 * DEFAULT_SEGMENT_SIZE)
    with pytest.raises(OSError, match="disk read failed"):
        _drain(reader, 262144)
    reader.close()


def test_memory_stays_bounded():
    size = 64 * 1024 * 1024
    raw = io.BufferedReader(_Zeros(size))
    tracemalloc.start()
    try:
        reader = EncryptingReader(raw, KEY, PATH, size=size)
        buf = bytearray(262144)
        total = 0
        while n := reader.readinto(buf):
            total += n
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total == ciphertext_size(size) and total > size + TAG_SIZE
    assert peak < 4 * 1024 * 1024, peak


@pytest.mark.parametrize("n", [255, 256, 257, 511, 512, 513, 4 * 256])
def test_sizes_around_segment_multiples(n):
    # the final flag goes on the last segment also when the object ends exactly at a
    # multiple of the segment size (the look-ahead buffer then reads 0 bytes)
    data = _plain(n)
    reader = EncryptingReader(io.BytesIO(data), KEY, PATH, segment_size=64, size=n, salt=SALT)
    assert _drain(reader, 200) == _rebuild(data, 64)
    reader.close()
