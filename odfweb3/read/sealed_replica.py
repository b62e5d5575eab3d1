"""Reading an encrypted replica: decrypt, then let the usual checks verify the plaintext.

An encrypted publish (docs/design.md, "Encryption") keeps the ODF layout, but every object and
``refs/head`` is ciphertext of :mod:`odfweb3.crypto.segments` with its path bound in.
:class:`DecryptingReplica` wraps any :class:`~odfweb3.read.replica.Replica` serving such a
layout and yields plaintext: the chain walk re-hashes blocks and
:func:`~odfweb3.read.replica.read_object_verified` / pull re-hash objects, so the ODF hashes
of the *plaintext* are what is checked. Authentication failures (wrong key, a ciphertext
moved to another path, truncation, tampering) raise
:class:`~odfweb3.errors.DecryptionError` before any plaintext is trusted.

The head is the one the inner replica established from its signed name record; where
the inner replica also serves the encrypted ``refs/head`` (``sealed_head()``), it is
decrypted and must agree.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from odfweb3.errors import ReplicaMismatch
from odfweb3.odf.layout import LAYOUT_DIRS, ObjectKind
from odfweb3.odf.multihash import multihash_from_str, multihash_to_str
from odfweb3.read.replica import (
    LineageInputsSource,
    LocalInputsSource,
    RecordSigner,
    Replica,
    SignedRecordSource,
)

if TYPE_CHECKING:
    from odfweb3.crypto.keys import KeyRing

# The segment code (odfweb3.crypto.segments) is loaded by the methods that decrypt: every
# pull asks the protocols here whether its replica is encrypted, and a plain one's loads
# no cipher code (where no bytecode is written, each module loaded is compiled again).

__all__ = [
    "DecryptingReplica",
    "EncryptedReplica",
    "KeyEnvelopeSource",
    "SealedHeadBinder",
    "SealedHeadSource",
    "max_ciphertext_size",
]


@runtime_checkable
class KeyEnvelopeSource(Protocol):
    """A replica that can tell whether it is encrypted: its published key envelope.

    ``car:DIR``, ``ipns://`` (the record's ``_odf.keyEnvelope``) and ``ar://`` (the upload
    record's ``keyEnvelope``) replicas implement it; ``ipfs://<cid>`` has no record and
    answers None.
    """

    def key_envelope(self) -> bytes | None:
        """The envelope's bytes, verified against its reference, or None if unencrypted."""
        ...


@runtime_checkable
class EncryptedReplica(KeyEnvelopeSource, Protocol):
    """A replica that knows whether it serves ciphertext (its record names a key envelope)."""

    @property
    def encrypted(self) -> bool:
        """True when every object and ``refs/head`` is ciphertext."""
        ...


@runtime_checkable
class SealedHeadBinder(Protocol):
    """A replica with no signed record binding its head: the head is what its encrypted
    ``refs/head`` decrypts to (``ipfs://CID --key-envelope``)."""

    def bind_sealed_head(self, keys: KeyRing) -> None:
        """Take the head from the decrypted ``refs/head`` if nothing bound it yet."""
        ...


@runtime_checkable
class SealedHeadSource(Protocol):
    """A replica that can also serve its encrypted ``refs/head`` bytes."""

    def sealed_head(self) -> bytes:
        """The raw (encrypted) bytes of ``refs/head``."""
        ...


def max_ciphertext_size(plaintext_size: int) -> int:
    """The largest ciphertext any allowed segment size gives for ``plaintext_size`` bytes."""
    from odfweb3.crypto.segments import MIN_SEGMENT_SIZE, ciphertext_size

    return ciphertext_size(plaintext_size, MIN_SEGMENT_SIZE)


class DecryptingReplica:
    """``replica`` with every object decrypted by ``keys`` (see the module docstring).

    Args:
        replica: the replica serving the encrypted layout.
        keys: the dataset's key ring (the epochs the reader holds).
    """

    def __init__(self, replica: Replica, keys: KeyRing) -> None:
        self.inner = replica
        self.keys = keys
        self.name = replica.name

    def __repr__(self) -> str:
        return f"DecryptingReplica({self.inner.name!r}, {self.keys!r})"

    def head(self) -> bytes:
        """The inner replica's head, checked against the decrypted ``refs/head`` if served.

        Raises:
            DecryptionError: ``refs/head`` does not decrypt with these keys.
            ReplicaMismatch: it decrypts to another head than the name record's.
        """
        from odfweb3.crypto.segments import decrypt_bytes

        head = self.inner.head()
        if isinstance(self.inner, SealedHeadSource):
            text = decrypt_bytes(self.inner.sealed_head(), self.keys, "refs/head")
            served = multihash_from_str(text.decode("ascii", "replace").strip())
            if served != head:
                raise ReplicaMismatch(
                    f"{self.name}: refs/head decrypts to {multihash_to_str(served)}, the name "
                    f"record says {multihash_to_str(head)}"
                )
        return head

    def lineage_inputs(self) -> Mapping[str, str]:
        """The inner replica's inputs map, if it has one: records are not sealed."""
        inner = self.inner
        return dict(inner.lineage_inputs()) if isinstance(inner, LineageInputsSource) else {}

    def local_inputs(self) -> Mapping[str, str]:
        """The inner replica's local stand-ins for network locators (a ``car:DIR``'s)."""
        inner = self.inner
        return dict(inner.local_inputs()) if isinstance(inner, LocalInputsSource) else {}

    def signer(self) -> RecordSigner | None:
        """Who signed the inner replica's record, when it says (records are not sealed)."""
        return self.inner.signed_by() if isinstance(self.inner, SignedRecordSource) else None

    def read_block(self, mh: bytes) -> bytes:
        """A block's plaintext (the chain walk checks its hash)."""
        from odfweb3.crypto.segments import decrypt_bytes

        path = f"blocks/{multihash_to_str(mh)}"
        return decrypt_bytes(self.inner.read_block(mh), self.keys, path)

    def stream_object(self, kind: ObjectKind, mh: bytes, size: int | None) -> Iterator[bytes]:
        """Decrypted segments of a data file or checkpoint (authenticated one by one)."""
        from odfweb3.crypto.segments import decrypt_stream

        path = f"{LAYOUT_DIRS[kind]}/{multihash_to_str(mh)}"
        bound = max_ciphertext_size(size) if size is not None else None
        return decrypt_stream(self.inner.stream_object(kind, mh, bound), self.keys, path)
