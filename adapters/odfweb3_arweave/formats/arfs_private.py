"""ArFS private drives: key derivation and AES-256-GCM exactly as ArDrive does it.

ArFS 0.15 ("Privacy", docs.ardrive.io) with the behaviour of ardrive-core-js 3.1.0
(``lib/utils/crypto.js``), so ArDrive tools open a drive we wrote with the same wallet and
drive password:

- drive key (``deriveDriveKey``, ``Signature-Type: 1``): the wallet signs ``b"drive" +
  the 16 bytes of the drive id UUID`` with RSA-PSS / SHA-256 and salt length 0 (so the
  signature, and the key, are deterministic); then HKDF-SHA256 (RFC 5869, no salt) with the
  signature as input key material, the password as ``info``, 32 bytes. Upstream quirk: the
  password goes through the ``utf8`` package's ``encode`` (a string of UTF-8 byte
  values) and then ``Buffer.from`` (UTF-8 again), so a non-ASCII password is UTF-8 encoded
  twice; :func:`_password_info` does the same;
- file key (``deriveFileKey``): HKDF-SHA256 (no salt) of the drive key with the 16 bytes
  of the file id UUID as ``info``, 32 bytes;
- encryption (``driveEncrypt`` / ``fileEncrypt``): AES-256-GCM, a fresh random 12-byte IV,
  no associated data, the 16-byte tag appended to the ciphertext; tags ``Cipher:
  AES256-GCM`` and ``Cipher-IV: <IV, standard base64>``. Drive and folder metadata JSON
  are encrypted with the drive key, file metadata JSON and file data with the file key.

Keys are wrapped in :class:`DriveKey` / :class:`FileKey`, whose ``repr`` shows nothing.
"""

from __future__ import annotations

import base64
import binascii
import os
import uuid
from dataclasses import dataclass, field
from typing import Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from odfweb3.errors import DecryptionError, FormatError
from odfweb3.streams import VerifiedStream
from odfweb3_arweave.formats.arfs import OCTET_STREAM, Entity, app_tags
from odfweb3_arweave.formats.tags import Tag
from odfweb3_arweave.wallet import Wallet

__all__ = [
    "AUTH_MODE",
    "CIPHER",
    "IV_SIZE",
    "SIGNATURE_TYPE",
    "TAG_SIZE",
    "DriveKey",
    "EncryptingStream",
    "FileKey",
    "cipher_tags",
    "decrypt",
    "derive_drive_key",
    "derive_file_key",
    "encrypt",
    "encrypted_size",
    "private_data_tags",
    "seal_entity",
]

CIPHER: Final = "AES256-GCM"
AUTH_MODE: Final = "password"
SIGNATURE_TYPE: Final = "1"  # DriveSignatureType.v1: the raw RSA-PSS signature
IV_SIZE: Final = 12
TAG_SIZE: Final = 16  # constants.authTagLength
_KEY_SIZE: Final = 32


@dataclass(frozen=True)
class DriveKey:
    """A private drive's key (32 bytes). Never printed: ``repr`` hides the bytes."""

    key: bytes = field(repr=False)


@dataclass(frozen=True)
class FileKey:
    """A private file's key (32 bytes). Never printed: ``repr`` hides the bytes."""

    key: bytes = field(repr=False)


def _uuid_bytes(text: str, what: str) -> bytes:
    try:
        return uuid.UUID(text).bytes
    except ValueError:
        raise FormatError(f"ArFS {what} {text[:40]!r} is not a UUID") from None


def _hkdf(ikm: bytes, info: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=_KEY_SIZE, salt=None, info=info).derive(ikm)


def _password_info(password: str) -> bytes:
    # ardrive-core-js: Buffer.from(utf8.encode(password)): UTF-8, then each byte as a
    # character, UTF-8 encoded again (identical for ASCII passwords).
    return password.encode("utf-8").decode("latin-1").encode("utf-8")


def derive_drive_key(wallet: Wallet, drive_id: str, password: str) -> DriveKey:
    """The drive key of ``drive_id`` for ``wallet`` and ``password`` (``Signature-Type: 1``).

    Raises:
        FormatError: ``drive_id`` is not a UUID or the password is empty.
        CryptoError: signing failed.
    """
    if not password:
        raise FormatError("ArFS private drive: the drive password is empty; set one")
    signature = wallet.sign(b"drive" + _uuid_bytes(drive_id, "drive id"), salt_length=0)
    return DriveKey(_hkdf(signature, _password_info(password)))


def derive_file_key(drive_key: DriveKey, file_id: str) -> FileKey:
    """The key of file ``file_id`` in the drive of ``drive_key``.

    Raises:
        FormatError: ``file_id`` is not a UUID.
    """
    return FileKey(_hkdf(drive_key.key, _uuid_bytes(file_id, "file id")))


def encrypted_size(size: int) -> int:
    """Ciphertext size of ``size`` plaintext bytes (the GCM tag is appended)."""
    return size + TAG_SIZE


def cipher_tags(iv: bytes) -> tuple[Tag, Tag]:
    """``Cipher: AES256-GCM`` and ``Cipher-IV: <base64 of iv>``."""
    return (Tag.of("Cipher", CIPHER), Tag.of("Cipher-IV", base64.b64encode(iv).decode("ascii")))


def encrypt(key: DriveKey | FileKey, data: bytes, iv: bytes | None = None) -> tuple[bytes, bytes]:
    """Encrypt ``data``: return ``(iv, ciphertext || tag)``; ``iv`` fresh random by default."""
    iv = os.urandom(IV_SIZE) if iv is None else iv
    if len(iv) != IV_SIZE:
        raise FormatError(f"ArFS cipher IV: {len(iv)} bytes, need {IV_SIZE}")
    return iv, AESGCM(key.key).encrypt(iv, data, None)


def decrypt(key: DriveKey | FileKey, cipher_iv: str | bytes, data: bytes, where: str) -> bytes:
    """Decrypt an ArFS ciphertext (``ciphertext || tag``) given its ``Cipher-IV`` tag.

    Raises:
        DecryptionError: wrong key (wallet or password), altered bytes or a bad IV.
    """
    try:
        iv = base64.b64decode(cipher_iv, validate=True) if isinstance(cipher_iv, str) else cipher_iv
    except binascii.Error:
        raise DecryptionError(f"{where}: Cipher-IV is not base64") from None
    if len(iv) != IV_SIZE or len(data) < TAG_SIZE:
        raise DecryptionError(f"{where}: ArFS ciphertext or IV too short")
    try:
        return AESGCM(key.key).decrypt(iv, data, None)
    except InvalidTag:
        raise DecryptionError(
            f"{where}: ArFS decryption failed: wrong wallet or drive password, or altered data"
        ) from None


def seal_entity(entity: Entity, key: DriveKey | FileKey, iv: bytes | None = None) -> Entity:
    """The private form of a public ArFS metadata entity (drive, folder or file).

    As ardrive-core-js's ``ArFSPrivate*MetaDataPrototype``: ``Content-Type:
    application/octet-stream``; after the entity's own tags ``Cipher`` and ``Cipher-IV``,
    and for a drive also ``Drive-Auth-Mode: password`` and ``Signature-Type: 1``; then the
    app tags and ``ArFS``. The JSON body is encrypted with ``key`` (the drive key for a
    drive or folder, the file key for a file).

    Raises:
        FormatError: ``entity`` is not a public drive, folder or file metadata entity.
    """
    names = [t.name for t in entity.tags]
    if b"App-Name" not in names or names[0] != b"Content-Type":
        raise FormatError("ArFS private entity: not an ArFS metadata entity")
    iv, body = encrypt(key, entity.body, iv)
    extra: list[Tag] = list(cipher_tags(iv))
    own = list(entity.tags[1 : names.index(b"App-Name")])
    if any(t.name == b"Drive-Privacy" for t in own):
        own = [Tag.of("Drive-Privacy", "private") if t.name == b"Drive-Privacy" else t for t in own]
        extra += [Tag.of("Drive-Auth-Mode", AUTH_MODE), Tag.of("Signature-Type", SIGNATURE_TYPE)]
    tail = entity.tags[names.index(b"App-Name") :]
    return Entity((Tag.of("Content-Type", OCTET_STREAM), *own, *extra, *tail), body)


def private_data_tags(iv: bytes, app_version: str) -> tuple[Tag, ...]:
    """Tags of a private file's data item: ``Content-Type: application/octet-stream``,
    ``Cipher``, ``Cipher-IV``, then the app tags (``ArFSPrivateFileDataPrototype``)."""
    return (Tag.of("Content-Type", OCTET_STREAM), *cipher_tags(iv), *app_tags(app_version))


class EncryptingStream:
    """Reads plaintext from ``source``, yields ArFS ciphertext (GCM tag at the end).

    Bounded memory: one read at a time. ``finish`` and ``close`` are passed on to the
    source (a verified reader checks its hash there).
    """

    def __init__(self, key: FileKey, iv: bytes, source: VerifiedStream) -> None:
        if len(iv) != IV_SIZE:
            raise FormatError(f"ArFS cipher IV: {len(iv)} bytes, need {IV_SIZE}")
        self._enc = Cipher(algorithms.AES(key.key), modes.GCM(iv)).encryptor()
        self._source = source
        self._pending = b""
        self._done = False

    def read(self, n: int = -1) -> bytes:
        """Up to ``n`` ciphertext bytes (all of the rest when ``n`` < 0)."""
        while not self._done and (n < 0 or len(self._pending) < n):
            chunk = self._source.read(1 << 20 if n < 0 else max(n, 1 << 16))
            if chunk:
                self._pending += self._enc.update(chunk)
            else:
                self._pending += self._enc.finalize() + self._enc.tag
                self._done = True
        if n < 0:
            out, self._pending = self._pending, b""
        else:
            out, self._pending = self._pending[:n], self._pending[n:]
        return out

    def finish(self) -> None:
        """Pass on to the source's ``finish`` (hash and size check)."""
        self._source.finish()

    def close(self) -> None:
        """Close the source."""
        self._source.close()
