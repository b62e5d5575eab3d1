"""Reading the objects to publish, verifying them on the way out.

Adapters read every object they send through :func:`open_verified`: the bytes
are hashed as they stream past (no second pass over the file), and the stream
raises at end of file unless size and hash match what the block records. An
adapter checks ``finish()`` before it makes anything visible, so a corrupt local
file is never published under a name.

Encrypted publishes read through :func:`open_for_publish` with a
:class:`~odfweb3.crypto.sealer.Sealer`: the plaintext is verified as above while
the target reads the ciphertext (docs/design.md, "Encryption"), in the same single pass.
"""

from __future__ import annotations

from typing import BinaryIO

from odfweb3.crypto.sealer import Sealer
from odfweb3.errors import HashMismatch, IntegrityError
from odfweb3.odf.chain import DatasetObject
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str, new_hasher
from odfweb3.streams import VerifiedStreamBase

__all__ = [
    "SealedReader",
    "VerifyingReader",
    "open_for_publish",
    "open_verified",
]


class VerifyingReader(VerifiedStreamBase):
    """A read-only binary stream that hashes what it yields and checks it at the end."""

    def __init__(self, raw: BinaryIO, obj: DatasetObject, where: str) -> None:
        self._raw = raw
        self._obj = obj
        self._where = where
        self.where = where
        self._hasher = new_hasher(obj.hash[0])
        self.size = 0
        self._deferred = False
        self._hashed = 0

    def defer_hashing(self) -> VerifyingReader:
        """Hash later: reads only count bytes from now on, and every chunk read must be
        handed to :meth:`absorb`, in order (on any one thread at a time), before
        :meth:`check`; :meth:`check` refuses a file not every byte of which was hashed.
        Lets an importer hash on another core (``unixfs_import.import_files``)."""
        self._deferred = True
        return self

    def absorb(self, chunk: bytes) -> None:
        """Hash the next chunk read (deferred hashing, see :meth:`defer_hashing`)."""
        if self._deferred:
            self._hasher.update(chunk)
            self._hashed += len(chunk)

    def readinto(self, buf: bytearray | memoryview) -> int:
        """Fill ``buf`` from the file, hashing what was read."""
        n = self._raw.readinto(buf)  # type: ignore[attr-defined]
        if n:
            if not self._deferred:
                self._hasher.update(memoryview(buf)[:n])
                self._hashed += n
            self.size += n
        return int(n or 0)

    def read(self, n: int = -1) -> bytes:
        """Read up to ``n`` bytes (all when negative), hashing them."""
        data = self._raw.read(n)
        if not self._deferred:
            self._hasher.update(data)
            self._hashed += len(data)
        self.size += len(data)
        return data

    def end(self) -> None:
        """Raise unless the file was read to its end (nothing follows the last read)."""
        if self._raw.read(1):
            raise IntegrityError(f"{self._where}: not read to the end")

    def finish(self) -> None:
        """Raise unless everything was read and matched the recorded size and hash."""
        self.end()
        self.check()

    def check(self) -> None:
        """Raise unless what was read matched the recorded size and hash (after :meth:`end`)."""
        if self._hashed != self.size:
            raise IntegrityError(
                f"{self._where}: {self.size - self._hashed} of {self.size} bytes read were "
                "never hashed; nothing was published"
            )
        if self._obj.size is not None and self.size != self._obj.size:
            raise IntegrityError(
                f"{self._where}: has {self.size} bytes but its block records {self._obj.size}; "
                "the file is corrupt"
            )
        actual = bytes((self._obj.hash[0], self._hasher.digest_size)) + self._hasher.digest()
        if actual != self._obj.hash:
            raise HashMismatch(
                multihash_to_str(self._obj.hash), multihash_to_str(actual), self._where
            )

    def close(self) -> None:
        """Close the file."""
        self._raw.close()


def open_verified(reader: DatasetReader, obj: DatasetObject) -> VerifyingReader:
    """Open an object of the dataset for a verified single-pass read."""
    return VerifyingReader(reader.open_object(obj.kind, obj.hash), obj, f"{reader.root}/{obj.path}")


class SealedReader(VerifiedStreamBase):
    """The ciphertext of a verified object: read it, then ``finish()`` checks the plaintext.

    Attributes:
        size: the exact ciphertext size when the block records the plaintext size.
    """

    def __init__(
        self,
        plain: VerifyingReader,
        sealer: Sealer,
        path: str,
        size: int | None,
        salt: bytes | None = None,
    ):
        self._plain = plain
        self._cipher = sealer.open(plain, path, size, salt=salt)  # type: ignore[arg-type]
        self.size = self._cipher.size

    def readinto(self, buf: bytearray | memoryview) -> int:
        """Fill ``buf`` with ciphertext."""
        return self._cipher.readinto(buf)

    def read(self, n: int = -1) -> bytes:
        """Read up to ``n`` bytes of ciphertext."""
        return self._cipher.read(n)

    def finish(self) -> None:
        """Raise unless all ciphertext was read and the plaintext matched size and hash."""
        if self._cipher.read(1):
            raise IntegrityError(f"{self._plain.where}: ciphertext not read to the end")
        self._plain.finish()

    # The importer's protocol (``unixfs_import.ImportSource``): the plaintext is verified
    # as it is decrypted-for-reading on the importing thread, so all of it happens in end().
    def absorb(self, chunk: bytes) -> None:
        """Nothing to hash later: the plaintext is hashed as it is read."""

    def end(self) -> None:
        """Everything :meth:`finish` checks, right after the last read."""
        self.finish()

    def check(self) -> None:
        """Done in :meth:`end`."""

    def close(self) -> None:
        """Close the file."""
        self._plain.close()


def open_for_publish(
    reader: DatasetReader,
    obj: DatasetObject,
    sealer: Sealer | None,
    *,
    salt: bytes | None = None,
    defer_hashing: bool = False,
) -> VerifyingReader | SealedReader:
    """Open an object for sending: verified plaintext, or its ciphertext when ``sealer``.

    The object's path (``data/f1620…``) is bound into the ciphertext. ``salt`` (random
    unless given) lets a target read the same ciphertext twice (sign, then send).
    ``defer_hashing``: a plaintext reader hashes what :meth:`VerifyingReader.absorb` is
    given instead of what it reads (see :meth:`VerifyingReader.defer_hashing`).
    """
    plain = open_verified(reader, obj)
    if sealer is None:
        return plain.defer_hashing() if defer_hashing else plain
    return SealedReader(plain, sealer, obj.path, obj.size, salt)
