"""What a publish target needs to encrypt a dataset: one object at a time.

A :class:`Sealer` holds the dataset's current content key and its key envelope
(public). Targets get one through their options and read every object through
:func:`odfweb3.publish.source.open_for_publish`, which verifies the plaintext and
yields the ciphertext (:mod:`odfweb3.crypto.segments`). Object paths do not change;
the envelope is published beside the dataset, never inside its root.

:func:`sensitive_setting` reads the ``sensitive: true`` setting: a sensitive dataset may
only be published encrypted (the decision is :func:`odfweb3.crypto.policy.decide_encryption`).
:func:`discovery_setting` reads ``encryptedDiscovery``: what an encrypted publish may say in
plaintext beside the ciphertext (``none``, the default, or ``summary``:
:mod:`odfweb3.descriptor.summary`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, BinaryIO, Final, Literal, cast

from odfweb3.crypto.keys import ContentKey
from odfweb3.errors import UsageError

if TYPE_CHECKING:
    from odfweb3.crypto.segments import EncryptingReader

__all__ = ["ENVELOPE_FILE", "Discovery", "Sealer", "discovery_setting", "sensitive_setting"]

ENVELOPE_FILE: Final = "key-envelope.json"
#: What an encrypted publish puts in plaintext beside the dataset: nothing, or the summary
#: descriptor of the catalogue facts (:mod:`odfweb3.descriptor.summary`).
Discovery = Literal["none", "summary"]


class Sealer:
    """Encrypts the objects of one dataset for publishing.

    Args:
        key: the content key new objects are encrypted with (the ring's current epoch).
        envelope: the encoded key envelope to publish beside the dataset.
        segment_size: plaintext bytes per AEAD segment.
        discovery: what the publish may say in plaintext beside the ciphertext
            (:data:`Discovery`; ``none`` unless the user allowed the summary).
    """

    def __init__(
        self,
        key: ContentKey,
        envelope: bytes,
        *,
        segment_size: int | None = None,
        discovery: Discovery = "none",
    ) -> None:
        # The segment code is imported with the first sealer: a plaintext publish, whose
        # start-up imports this module for its types, never loads it.
        from odfweb3.crypto.segments import DEFAULT_SEGMENT_SIZE

        self._key = key
        self.envelope = envelope
        self.segment_size = DEFAULT_SEGMENT_SIZE if segment_size is None else segment_size
        self.discovery: Discovery = discovery

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
        from odfweb3.crypto.segments import EncryptingReader

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
        from odfweb3.crypto.segments import encrypt_bytes

        return encrypt_bytes(data, self._key, path, segment_size=self.segment_size)

    def sealed_size(self, plaintext_size: int) -> int:
        """Exact ciphertext size of an object of ``plaintext_size`` bytes."""
        from odfweb3.crypto.segments import ciphertext_size

        return ciphertext_size(plaintext_size, self.segment_size)


def sensitive_setting(settings: Mapping[str, Any], where: str) -> bool:
    """The dataset's ``sensitive`` setting (``config.dataset_settings_for``): true means
    it is only ever published encrypted (:func:`odfweb3.crypto.policy.decide_encryption`).

    Raises:
        UsageError: the setting is not true or false.
    """
    sensitive = settings.get("sensitive", False)
    if not isinstance(sensitive, bool):
        raise UsageError(f"{where}: datasets.<id>.sensitive must be true or false")
    return sensitive


def discovery_setting(settings: Mapping[str, Any], where: str) -> Discovery:
    """The dataset's ``encryptedDiscovery`` setting (``config.dataset_settings_for``):
    ``none`` (the default: an encrypted publish says nothing readable) or ``summary``.

    Raises:
        UsageError: the setting is another value.
    """
    value = settings.get("encryptedDiscovery", "none")
    if value == "none" or value == "summary":
        return cast(Discovery, value)
    raise UsageError(
        f"{where}: datasets.<id>.encryptedDiscovery must be none or summary, "
        f"not {str(value)[:40]!r}"
    )
