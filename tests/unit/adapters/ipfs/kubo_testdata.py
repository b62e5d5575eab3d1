"""Kubo's deterministic test inputs, regenerated in Python.

Kubo's CLI tests (ipfs/kubo ``test/cli/testutils/random_deterministic.go``) feed
``ipfs add`` with ChaCha20 keystream: key = SHA-256(seed), 12-byte zero nonce,
counter from 0. Directory tests (``test/cli/cid_profiles_test.go``,
``createDeterministicFiles``) draw file names from a 1 MiB stream of the same
kind: each name byte ``b`` becomes ``AlphabetEasy[b % 39]``, and every file
holds the single byte ``x``.
"""

from __future__ import annotations

import hashlib
import io

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

ALPHABET_EASY = "abcdefghijklmnopqrstuvwxyz01234567890-_"  # testutils/random_files.go
_ZEROS = bytes(1 << 20)


class DeterministicStream(io.RawIOBase):
    """``size`` bytes of Kubo's deterministic pseudo-random data for ``seed``."""

    def __init__(self, size: int, seed: str) -> None:
        key = hashlib.sha256(seed.encode()).digest()
        # cryptography's ChaCha20 nonce = 4-byte little-endian counter + 12-byte nonce
        self._enc = Cipher(algorithms.ChaCha20(key, bytes(16)), mode=None).encryptor()
        self._left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def, override]
        n = min(len(buffer), self._left, len(_ZEROS))
        if n <= 0:
            return 0
        memoryview(buffer)[:n] = self._enc.update(_ZEROS[:n])
        self._left -= n
        return n


def deterministic_names(count: int, name_len: int, last_len: int, seed: str) -> list[str]:
    """Kubo's ``createDeterministicFiles`` names (the last one has ``last_len`` chars)."""
    stream = DeterministicStream(1 << 20, seed)
    names = []
    for i in range(count):
        buf = bytearray(last_len if i == count - 1 else name_len)
        stream.readinto(buf)
        names.append("".join(ALPHABET_EASY[b % len(ALPHABET_EASY)] for b in buf))
    return names
