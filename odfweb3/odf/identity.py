"""Dataset identity: ``did:odf:`` IDs from Ed25519 keys.

An ODF dataset ID is the DID ``did:odf:<multibase>`` where the multibase payload
is the multicodec ``ed25519-pub`` (``0xed``, varint ``ed 01``) followed by the 32
byte public key. The Seed block stores the binary form (``ed 01`` + key); text
forms are written in base16 (``did:odf:fed01…``) and read in any final multibase.

Key pairs are generated with ``cryptography``; the private key is the dataset's
identity, and where odfweb3 holds it the dataset's IPNS name follows from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from odfweb3.errors import FormatError

__all__ = ["DID_PREFIX", "ED25519_PUB", "DatasetId", "DatasetKeyPair", "generate_keypair"]

DID_PREFIX: Final = "did:odf:"
ED25519_PUB: Final = b"\xed\x01"  # multicodec 0xed as an unsigned varint


@dataclass(frozen=True, order=True)
class DatasetId:
    """A dataset ID: the 32-byte Ed25519 public key it is made of."""

    public_key: bytes

    def __post_init__(self) -> None:
        if len(self.public_key) != 32:
            raise FormatError("dataset ID: an Ed25519 public key has 32 bytes")

    @classmethod
    def from_bytes(cls, data: bytes) -> DatasetId:
        """Parse the binary form stored in ``Seed.dataset_id`` (``ed 01`` + key)."""
        if len(data) != 34 or data[:2] != ED25519_PUB:
            raise FormatError(
                f"dataset ID bytes {data[:4].hex()}…: expected multicodec ed25519-pub + 32 bytes"
            )
        return cls(bytes(data[2:]))

    @classmethod
    def parse(cls, text: str) -> DatasetId:
        """Parse ``did:odf:<multibase>`` in any final multibase encoding."""
        text = text.strip()
        if not text.startswith(DID_PREFIX):
            raise FormatError(f"not a dataset ID: {text[:80]!r} (expected did:odf:…)")
        from multiformats import multibase  # local: a publish's start-up parses no ID text

        try:
            raw = multibase.decode(text[len(DID_PREFIX) :])
        except Exception as exc:  # multiformats raises several unrelated types
            raise FormatError(f"not a dataset ID: {text[:80]!r} (bad multibase)") from exc
        return cls.from_bytes(bytes(raw))

    def to_bytes(self) -> bytes:
        """The binary form stored in ``Seed.dataset_id``."""
        return ED25519_PUB + self.public_key

    def __str__(self) -> str:
        return DID_PREFIX + "f" + self.to_bytes().hex()


@dataclass(frozen=True)
class DatasetKeyPair:
    """An Ed25519 key pair whose public half is a dataset's ID.

    The private key never appears in ``repr`` or ``str``.
    """

    private_key: bytes = field(repr=False)
    dataset_id: DatasetId

    @classmethod
    def from_private_bytes(cls, private_key: bytes) -> DatasetKeyPair:
        """Rebuild the pair from the 32-byte Ed25519 private seed."""
        if len(private_key) != 32:
            raise FormatError("dataset key: an Ed25519 private key has 32 bytes")
        key = Ed25519PrivateKey.from_private_bytes(private_key)
        pub = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return cls(private_key=bytes(private_key), dataset_id=DatasetId(pub))

    def signing_key(self) -> Ed25519PrivateKey:
        """The key as a ``cryptography`` object, for signing."""
        return Ed25519PrivateKey.from_private_bytes(self.private_key)


def generate_keypair(seed: bytes | None = None) -> DatasetKeyPair:
    """A new dataset key pair; deterministic when a 32-byte ``seed`` is given (tests, demo)."""
    if seed is None:
        from os import urandom

        seed = urandom(32)
    return DatasetKeyPair.from_private_bytes(seed)
