"""What a publish target needs to encrypt a dataset: one object at a time.

A :class:`Sealer` holds the dataset's current content key and its key envelope
(public). Targets get one through their options and read every object through
:func:`odfweb3.publish.source.open_for_publish`, which verifies the plaintext and
yields the ciphertext (:mod:`odfweb3.crypto.segments`). Object paths do not change;
the envelope is published beside the dataset, never inside its root.

:func:`encryption_required` is the ``sensitive: true`` policy: a sensitive dataset may
only be published encrypted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, BinaryIO, Final

from odfweb3.crypto.keys import ContentKey
from odfweb3.crypto.segments import (
    DEFAULT_SEGMENT_SIZE,
    EncryptingReader,
    ciphertext_size,
    encrypt_bytes,
)
from odfweb3.errors import UsageError

__all__ = ["ENVELOPE_FILE", "Sealer", "encryption_required"]

ENVELOPE_FILE: Final = "key-envelope.json"


class Sealer:
    """Encrypts the objects of one dataset for publishing.

    Args:
        key: the content key new objects are encrypted with (the ring's current epoch).
        envelope: the encoded key envelope to publish beside the dataset.
        segment_size: plaintext bytes per AEAD segment.
    """

    def __init__(
        self,
        key: ContentKey,
        envelope: bytes,
        *,
        segment_size: int = DEFAULT_SEGMENT_SIZE,
    ) -> None:
        self._key = key
        self.envelope = envelope
        self.segment_size = segment_size

    @property
    def dataset_id(self) -> str:
        """The dataset whose key this is."""
        return self._key.dataset_id

    @property
    def epoch(self) -> int:
        """The key epoch new objects get."""
        return self._key.epoch

    def __repr__(self) -> str:
        return f"Sealer(dataset_id={self.dataset_id!r}, epoch={self.epoch})"

    def open(
        self, raw: BinaryIO, path: str, size: int | None = None, *, salt: bytes | None = None
    ) -> EncryptingReader:
        """A stream of the ciphertext of ``raw`` (the object at ``path``).

        ``salt`` (random unless given) makes a second read of the same object yield the
        same ciphertext: for targets that sign a stream, then read it again to send it.
        """
        return EncryptingReader(
            raw,
            self._key,
            path,
            segment_size=self.segment_size,
            size=size,
            salt=salt,
        )

    def seal_bytes(self, data: bytes, path: str) -> bytes:
        """Encrypt a small object held in memory (``refs/head``)."""
        return encrypt_bytes(data, self._key, path, segment_size=self.segment_size)

    def sealed_size(self, plaintext_size: int) -> int:
        """Exact ciphertext size of an object of ``plaintext_size`` bytes."""
        return ciphertext_size(plaintext_size, self.segment_size)


def encryption_required(settings: Mapping[str, Any], encrypt: bool, where: str) -> bool:
    """Whether this publish encrypts: ``encrypt`` or the dataset's ``sensitive`` setting.

    Args:
        settings: the dataset's settings (``config.dataset_settings(path, did)``).
        encrypt: ``--encrypt`` was given.
        where: the dataset, for the message.

    Raises:
        UsageError: the dataset is ``sensitive: true`` but ``encrypt`` is false.
    """
    sensitive = settings.get("sensitive", False)
    if not isinstance(sensitive, bool):
        raise UsageError(f"{where}: datasets.<id>.sensitive must be true or false")
    if sensitive and not encrypt:
        raise UsageError(
            f"{where} is marked `sensitive: true` in the configuration: publish it with "
            "--encrypt (an unencrypted publish can never be taken back)"
        )
    return encrypt or sensitive
