"""IPNS key files: a dataset's Ed25519 signing key carried to another machine (or to Kubo).

``odfweb3 keys export NAME`` writes one of three forms, ``keys import`` reads them all
(and an encrypted PKCS#8 PEM that ``openssl`` made):

- ``odfweb3-encrypted`` (the default): JSON ``{"format": "odfweb3-ipns-key", "version": 1,
  "datasetId", "publicKey", "kdf": {"name": "scrypt", "n", "r", "p", "salt"}, "cipher":
  "AES-256-GCM", "nonce", "ciphertext"}``, the ciphertext being the libp2p ``PrivateKey``
  protobuf sealed with scrypt(NFC passphrase) and the rest of the document as associated
  data, so the dataset ID and public key cannot be swapped. Kubo reads no encrypted key
  form (``ipfs key import -f`` takes ``libp2p-protobuf-cleartext`` or
  ``pem-pkcs8-cleartext``), and the encrypted PKCS#8 PEM that ``cryptography`` writes uses
  PBKDF2 with a fixed 2,048 iterations, too cheap to guess against; scrypt at the key
  envelopes' work factor (:mod:`odfweb3.crypto.envelope`) is what this project uses for
  every passphrase.
- ``libp2p-protobuf-cleartext``: the 68 bytes Kubo's ``ipfs key import`` reads by default
  (the keystore's own ``.key`` bytes).
- ``pem-pkcs8-cleartext``: ``-----BEGIN PRIVATE KEY-----``, Kubo's ``-f pem-pkcs8-cleartext``
  and openssl's form.

The cleartext forms do not say which dataset the key signs for; ``keys import`` asks for it.
Pure functions: the caller reads and writes the file (mode 0600) and asks the passphrase.
Nothing here puts key bytes in a message.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
    load_pem_private_key,
)

from odfweb3.crypto.envelope import DEFAULT_SCRYPT_N, MAX_SCRYPT_N, MIN_SCRYPT_N
from odfweb3.crypto.names import (
    ENCRYPTED,
    FORMATS,
    KUBO_FORMATS,
    LIBP2P_CLEARTEXT,
    PEM_CLEARTEXT,
    PEM_ENCRYPTED,
)
from odfweb3.errors import DecryptionError, FormatError, UsageError
from odfweb3.foreign_json import load_foreign_json

__all__ = [
    "ENCRYPTED",
    "FORMATS",
    "KUBO_FORMATS",
    "LIBP2P_CLEARTEXT",
    "MAX_KEY_FILE",
    "PEM_CLEARTEXT",
    "KeyFile",
    "decode_key_file",
    "encode_key_file",
    "is_key_file",
]

MAX_KEY_FILE: Final = 64 << 10

_DOC_FORMAT: Final = "odfweb3-ipns-key"
_PROTOBUF_HEADER: Final = b"\x08\x01\x12\x40"  # libp2p PrivateKey: Type=Ed25519, Data: 64 bytes
_PEM_PLAIN: Final = b"-----BEGIN PRIVATE KEY-----"
_PEM_ENCRYPTED: Final = b"-----BEGIN ENCRYPTED PRIVATE KEY-----"
_R: Final = 8
_P: Final = 1


@dataclass(frozen=True)
class KeyFile:
    """What a key file holds: the key, the dataset it signs for (None in the cleartext
    forms, which do not say) and the form it was in."""

    key: Ed25519PrivateKey = field(repr=False)
    dataset_id: str | None
    format: str


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(value: object, what: str, where: str) -> bytes:
    if not isinstance(value, str):
        raise FormatError(f"{where}: {what} must be base64url text")
    try:
        return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    except (binascii.Error, ValueError):
        raise FormatError(f"{where}: {what} is not base64url") from None


def _public(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def _protobuf(key: Ed25519PrivateKey) -> bytes:
    seed = key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
    return _PROTOBUF_HEADER + seed + _public(key)


def _from_protobuf(data: bytes, where: str) -> Ed25519PrivateKey:
    if len(data) != len(_PROTOBUF_HEADER) + 64 or not data.startswith(_PROTOBUF_HEADER):
        raise FormatError(f"{where}: not a libp2p Ed25519 private key")
    key = Ed25519PrivateKey.from_private_bytes(data[4:36])
    if _public(key) != data[36:]:
        raise FormatError(f"{where}: the public half does not match the private key")
    return key


def _kek(passphrase: str, salt: bytes, n: int) -> bytes:
    text = unicodedata.normalize("NFC", passphrase).encode("utf-8")
    return Scrypt(salt=salt, length=32, n=n, r=_R, p=_P).derive(text)


def _aad(doc: dict[str, Any]) -> bytes:
    head = {k: v for k, v in doc.items() if k != "ciphertext"}
    return json.dumps(head, sort_keys=True, separators=(",", ":")).encode()


def encode_key_file(
    key: Ed25519PrivateKey,
    fmt: str,
    *,
    dataset_id: str,
    passphrase: str | None = None,
    n: int = DEFAULT_SCRYPT_N,
    salt: bytes | None = None,
    nonce: bytes | None = None,
) -> bytes:
    """The file ``keys export`` writes in form ``fmt`` (secret: write it with mode 0600).

    Args:
        key: the IPNS key.
        fmt: one of :data:`FORMATS`.
        dataset_id: the dataset it signs for (kept in the encrypted form only).
        passphrase: required for :data:`ENCRYPTED`.
        n: scrypt work factor (a power of two, 2**15 .. 2**18).
        salt, nonce: fixed values for golden vectors (random by default).

    Raises:
        UsageError: an unknown form, no passphrase, or a bad work factor.
    """
    if fmt == LIBP2P_CLEARTEXT:
        return _protobuf(key)
    if fmt == PEM_CLEARTEXT:
        return key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    if fmt != ENCRYPTED:
        raise UsageError(f"key file format {fmt!r}: use one of {', '.join(FORMATS)}")
    if not passphrase:
        raise UsageError("an encrypted key file needs a passphrase")
    if n < MIN_SCRYPT_N or n > MAX_SCRYPT_N or n & (n - 1):
        raise UsageError(f"scrypt n must be a power of two in {MIN_SCRYPT_N} .. {MAX_SCRYPT_N}")
    salt = salt if salt is not None else os.urandom(16)
    nonce = nonce if nonce is not None else os.urandom(12)
    doc: dict[str, Any] = {
        "format": _DOC_FORMAT,
        "version": 1,
        "datasetId": dataset_id,
        "publicKey": _b64(_public(key)),
        "kdf": {"name": "scrypt", "n": n, "r": _R, "p": _P, "salt": _b64(salt)},
        "cipher": "AES-256-GCM",
        "nonce": _b64(nonce),
    }
    sealed = AESGCM(_kek(passphrase, salt, n)).encrypt(nonce, _protobuf(key), _aad(doc))
    doc["ciphertext"] = _b64(sealed)
    return (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode()


def is_key_file(data: bytes) -> bool:
    """Whether ``data`` looks like an IPNS key file (else, e.g., a content key envelope)."""
    head = data.lstrip()[:4096]
    if head.startswith((_PEM_PLAIN, _PEM_ENCRYPTED)) or (
        len(data) == 68 and data.startswith(_PROTOBUF_HEADER)
    ):
        return True
    return head.startswith(b"{") and b'"odfweb3-ipns-key"' in head


def _int(value: object, what: str, lo: int, hi: int, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise FormatError(f"{where}: {what} must be an integer in {lo} .. {hi}")
    return value


def _decode_encrypted(data: bytes, passphrase: Callable[[], str], where: str) -> KeyFile:
    doc = load_foreign_json(data, what=where, max_bytes=MAX_KEY_FILE)
    if not isinstance(doc, dict) or doc.get("format") != _DOC_FORMAT or doc.get("version") != 1:
        raise FormatError(f"{where}: not an odfweb3 IPNS key file (version 1)")
    did = doc.get("datasetId")
    kdf = doc.get("kdf")
    if not isinstance(did, str) or not did or len(did) > 200 or not did.isprintable():
        raise FormatError(f"{where}: datasetId must be a dataset ID")
    if (
        not isinstance(kdf, dict)
        or kdf.get("name") != "scrypt"
        or doc.get("cipher") != ("AES-256-GCM")
    ):
        raise FormatError(f"{where}: only scrypt and AES-256-GCM are read")
    # The KDF cost is bounded before any scrypt runs: at most what keys export writes.
    n = _int(kdf.get("n"), "kdf.n", MIN_SCRYPT_N, MAX_SCRYPT_N, where)
    if n & (n - 1) or kdf.get("r") != _R or kdf.get("p") != _P:
        raise FormatError(f"{where}: kdf.n must be a power of two, r 8 and p 1")
    salt = _unb64(kdf.get("salt"), "kdf.salt", where)
    nonce = _unb64(doc.get("nonce"), "nonce", where)
    public = _unb64(doc.get("publicKey"), "publicKey", where)
    sealed = _unb64(doc.get("ciphertext"), "ciphertext", where)
    if len(salt) < 16 or len(nonce) != 12 or len(public) != 32:
        raise FormatError(f"{where}: salt, nonce or public key of the wrong size")
    try:
        clear = AESGCM(_kek(passphrase(), salt, n)).decrypt(nonce, sealed, _aad(doc))
    except InvalidTag:
        raise DecryptionError(
            f"{where}: wrong passphrase (or the file was altered); nothing was imported"
        ) from None
    key = _from_protobuf(clear, where)
    if _public(key) != public:
        raise FormatError(f"{where}: the key does not match its publicKey")
    return KeyFile(key, did, ENCRYPTED)


def decode_key_file(
    data: bytes, *, passphrase: Callable[[], str] | None = None, where: str = "key file"
) -> KeyFile:
    """Read any form :func:`encode_key_file` writes, or an encrypted PKCS#8 PEM.

    Args:
        data: the file's bytes (at most :data:`MAX_KEY_FILE`).
        passphrase: asked only for an encrypted form.
        where: the file, for messages.

    Raises:
        FormatError: not a key file, or not an Ed25519 key.
        DecryptionError: wrong passphrase, or an altered encrypted file.
        UsageError: an encrypted file and no way to ask the passphrase.
    """
    if len(data) > MAX_KEY_FILE:
        raise FormatError(f"{where}: larger than {MAX_KEY_FILE} bytes: not a key file")
    if len(data) == 68 and data.startswith(_PROTOBUF_HEADER):
        return KeyFile(_from_protobuf(data, where), None, LIBP2P_CLEARTEXT)
    stripped = data.lstrip()
    if stripped.startswith((_PEM_PLAIN, _PEM_ENCRYPTED)):
        encrypted = stripped.startswith(_PEM_ENCRYPTED)
        if encrypted and passphrase is None:
            raise UsageError(f"{where} is encrypted: give its passphrase")
        password = passphrase().encode("utf-8") if encrypted and passphrase else None
        try:
            key = load_pem_private_key(data, password=password)
        except (ValueError, TypeError):
            if encrypted:
                raise DecryptionError(
                    f"{where}: wrong passphrase (or not a PKCS#8 key); nothing was imported"
                ) from None
            raise FormatError(f"{where}: not a PKCS#8 PEM private key") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise FormatError(f"{where}: not an Ed25519 key (IPNS keys here are Ed25519)")
        return KeyFile(key, None, PEM_ENCRYPTED if encrypted else PEM_CLEARTEXT)
    if stripped.startswith(b"{"):
        if passphrase is None:
            raise UsageError(f"{where} is encrypted: give its passphrase")
        return _decode_encrypted(data, passphrase, where)
    raise FormatError(
        f"{where}: not an IPNS key file ({', '.join(FORMATS)}, or an encrypted PKCS#8 PEM)"
    )
