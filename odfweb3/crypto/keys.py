"""The key hierarchy of an encrypted dataset (docs/design.md, "Encryption").

::

    content key, epoch E  (32 random bytes, one per dataset and epoch; wrapped in envelopes)
      └── object key      HKDF-SHA256(ikm=content key, salt=object salt,
                                      info="odfweb3/v1/object" 0x00 dataset-id 0x00 epoch(u32 BE))

Every object gets a fresh random 32-byte salt (stored in its header), hence its own
AES-256-GCM key; nonces are then a segment counter under that key and can never
repeat across objects (see :mod:`odfweb3.crypto.segments`).

Rotation adds a new epoch: new objects are encrypted under the new epoch's key, old
objects keep theirs. Nothing published can be deleted, so whoever held an old epoch's
key can read the objects of that epoch forever.

:class:`ContentKey` and :class:`KeyRing` never show key bytes in their ``repr``.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from odfweb3.errors import DecryptionError, UsageError

__all__ = [
    "KEY_SIZE",
    "ContentKey",
    "KeyRing",
    "derive_key",
    "new_content_key",
]

KEY_SIZE: Final = 32
_MAX_EPOCH: Final = 2**32 - 1


def derive_key(secret: bytes, salt: bytes, purpose: str, dataset_id: str, epoch: int) -> bytes:
    """HKDF-SHA256 of ``secret``; ``info`` binds purpose, dataset ID and epoch.

    Args:
        secret: the input key material (a content key).
        salt: a per-use random salt (the object's salt).
        purpose: what the key is for (e.g. ``"object"``); different purposes give
            independent keys.
        dataset_id: the dataset the key belongs to.
        epoch: the key epoch.
    """
    info = (
        b"odfweb3/v1/"
        + purpose.encode()
        + b"\x00"
        + dataset_id.encode()
        + b"\x00"
        + epoch.to_bytes(4, "big")
    )
    return HKDF(algorithm=hashes.SHA256(), length=KEY_SIZE, salt=salt, info=info).derive(secret)


@dataclass(frozen=True)
class ContentKey:
    """One epoch's content key of one dataset.

    Attributes:
        dataset_id: the ``did:odf:`` ID the key belongs to (bound into every derived key).
        epoch: the key epoch (1, 2, … ; a rotation adds one).
        secret: the 32 key bytes (never shown in ``repr``).
    """

    dataset_id: str
    epoch: int
    secret: bytes = field(repr=False)

    def __post_init__(self) -> None:
        if len(self.secret) != KEY_SIZE:
            raise UsageError(f"content key for {self.dataset_id}: must be {KEY_SIZE} bytes")
        if not 0 <= self.epoch <= _MAX_EPOCH:
            raise UsageError(f"content key for {self.dataset_id}: epoch out of range")

    def object_key(self, salt: bytes) -> bytes:
        """The AES-256-GCM key of the object whose header carries ``salt``."""
        return derive_key(self.secret, salt, "object", self.dataset_id, self.epoch)


def new_content_key(dataset_id: str, epoch: int = 1) -> ContentKey:
    """A fresh random content key for ``dataset_id`` and ``epoch``."""
    return ContentKey(dataset_id, epoch, secrets.token_bytes(KEY_SIZE))


@dataclass(frozen=True)
class KeyRing:
    """The content keys of one dataset by epoch; ``current`` encrypts new objects.

    Attributes:
        dataset_id: the dataset.
        keys: epoch -> key (a reader may hold only some epochs).
        current: the epoch used for new objects (0 if the ring holds no key yet).
    """

    dataset_id: str
    keys: Mapping[int, ContentKey] = field(default_factory=dict, repr=False)
    current: int = 0

    def __repr__(self) -> str:
        return f"KeyRing(dataset_id={self.dataset_id!r}, epochs={sorted(self.keys)})"

    def __iter__(self) -> Iterator[ContentKey]:
        return iter(self.keys[e] for e in sorted(self.keys))

    @property
    def epochs(self) -> list[int]:
        """The epochs this ring holds, ascending."""
        return sorted(self.keys)

    def for_epoch(self, epoch: int) -> ContentKey:
        """The key of ``epoch``.

        Raises:
            DecryptionError: this ring does not hold that epoch's key.
        """
        key = self.keys.get(epoch)
        if key is None:
            raise DecryptionError(
                f"no content key for epoch {epoch} of {self.dataset_id}; "
                f"ask a key holder to add you as a recipient for that epoch"
            )
        return key

    def current_key(self) -> ContentKey:
        """The key new objects are encrypted with."""
        if self.current not in self.keys:
            raise UsageError(f"{self.dataset_id}: no current content key; run `odfweb3 keys`")
        return self.keys[self.current]

    def rotated(self) -> KeyRing:
        """A ring with one more epoch (a fresh key) that becomes current."""
        epoch = max(self.keys, default=0) + 1
        keys = dict(self.keys)
        keys[epoch] = new_content_key(self.dataset_id, epoch)
        return KeyRing(self.dataset_id, keys, epoch)

    def merged(self, other: KeyRing) -> KeyRing:
        """This ring plus the epochs of ``other`` (same dataset); the higher current wins."""
        if other.dataset_id != self.dataset_id:
            raise UsageError(f"cannot merge keys of {other.dataset_id} into {self.dataset_id}")
        keys = dict(other.keys)
        keys.update(self.keys)
        return KeyRing(self.dataset_id, keys, max(self.current, other.current))

    @classmethod
    def new(cls, dataset_id: str) -> KeyRing:
        """A ring with one fresh key, epoch 1."""
        return cls(dataset_id, {1: new_content_key(dataset_id, 1)}, 1)
