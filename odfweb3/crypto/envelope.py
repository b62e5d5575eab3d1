"""Key envelopes: a dataset's content keys wrapped for each recipient.

docs/design.md, "Encryption".

The envelope is published beside the encrypted dataset (never inside its root). It is
a JSON document; binary fields are base64url without padding::

    {"format": "odfweb3-key-envelope", "version": 1,
     "datasetId": "did:odf:…", "currentEpoch": 2,
     "recipients": [
       {"id": "x25519:<32 hex>", "kind": "x25519", "publicKey": "<b64u 32 bytes>",
        "active": true},
       {"id": "passphrase:default", "kind": "passphrase", "salt": "<b64u 16 bytes>",
        "n": 262144, "r": 8, "p": 1, "active": true}],
     "wrapped": [
       {"epoch": 1, "recipient": "x25519:…", "ephemeralKey": "<b64u>", "nonce": "<b64u>",
        "ciphertext": "<b64u 32+16 bytes>"}, …]}

Wrapping (AES-256-GCM, 12-byte random nonce, associated data =
``"odfweb3/v1/key-envelope" 0x00 dataset-id 0x00 epoch(u32 BE) 0x00 recipient-id``):

- ``x25519``: ephemeral-static ECDH. A fresh ephemeral key per wrapped entry;
  key-encryption key = HKDF-SHA256(shared secret, salt = ephemeral public || recipient
  public, info ``"odfweb3/v1/x25519-wrap"``). The recipient ID is the fingerprint
  ``"x25519:" + hex(SHA-256(public key))[:32]``.
- ``passphrase``: key-encryption key = scrypt(NFC UTF-8 passphrase, salt, n, r, p), 32
  bytes; one salt per recipient, so opening every epoch costs one scrypt. The key holder
  keeps that key-encryption key in its private key file so rotation does not ask for
  the passphrase again. ``odfweb3 keys`` writes n = 2**18, r = 8, p = 1 (age's work
  factor; 256 MiB and about a second per scrypt); envelopes written before with
  n = 2**15 still open.

Limits (an envelope is read from the network, so its cost to open is bounded by what
``odfweb3 keys`` writes; anything beyond is a ``FormatError`` before any KDF runs):
scrypt n a power of two in 2**15 .. 2**18 with r = 8 and p = 1; at most
``MAX_RECIPIENTS`` (1,000) recipients of which at most ``MAX_PASSPHRASE_RECIPIENTS`` (4)
are passphrases; at most 10,000 wrapped entries. Opening tries only the entries of the
reader's own recipient (an identity's fingerprint), and passphrase recipients active
first, stopping once the current epoch opens: the worst case is 4 scrypts.

Rotation: a new epoch is wrapped only for the *active* recipients. Removing a recipient
marks it inactive: it gets no future epoch, but its entries for old epochs stay (it
held those keys already, and every envelope ever published stays readable). Nothing
published can be deleted: whoever had an old epoch's key can read that epoch's
objects forever.

The envelope holds no plaintext key material; its ``repr`` shows only counts.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from odfweb3.crypto.keys import KEY_SIZE, ContentKey, KeyRing
from odfweb3.errors import DecryptionError, FormatError, UsageError
from odfweb3.foreign_json import load_foreign_json

__all__ = [
    "DEFAULT_SCRYPT_N",
    "ENVELOPE_FORMAT",
    "ENVELOPE_VERSION",
    "MAX_ENVELOPE_SIZE",
    "MAX_PASSPHRASE_RECIPIENTS",
    "MAX_RECIPIENTS",
    "MAX_SCRYPT_N",
    "MIN_SCRYPT_N",
    "PUBLIC_KEY_PREFIX",
    "Envelope",
    "Recipient",
    "WrappedKey",
    "add_recipient",
    "decode_envelope",
    "decode_public_key",
    "derive_passphrase_kek",
    "encode_envelope",
    "encode_public_key",
    "fingerprint",
    "new_envelope",
    "open_envelope",
    "passphrase_recipient",
    "remove_recipient",
    "rotate_envelope",
    "x25519_recipient",
]

ENVELOPE_FORMAT: Final = "odfweb3-key-envelope"
ENVELOPE_VERSION: Final = 1
# Passphrase KDF: what ``odfweb3 keys`` writes now (age's scrypt work factor, 2**18),
# the oldest it wrote (2**15; still opens), and the fixed r and p. A reader refuses
# anything costlier before running the KDF.
DEFAULT_SCRYPT_N: Final = 2**18
MAX_ENVELOPE_SIZE: Final = 4 << 20  # the largest key envelope read from anywhere
MIN_SCRYPT_N: Final = 2**15
MAX_SCRYPT_N: Final = DEFAULT_SCRYPT_N
SCRYPT_R: Final = 8
SCRYPT_P: Final = 1
MAX_RECIPIENTS: Final = 1000
MAX_PASSPHRASE_RECIPIENTS: Final = 4
MAX_ENVELOPE_BYTES: Final = 4 << 20  # 10,000 wrapped entries take ~2.3 MB
_MAX_WRAPPED: Final = 10_000
PUBLIC_KEY_PREFIX: Final = "odf-x25519-pub:"
_WRAP_INFO: Final = b"odfweb3/v1/x25519-wrap"
_NONCE: Final = 12

Kind = Literal["x25519", "passphrase"]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: object, what: str, size: int | None = None) -> bytes:
    if not isinstance(text, str) or "=" in text:
        raise FormatError(f"key envelope: {what} must be unpadded base64url text")
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise FormatError(f"key envelope: {what} is not base64url") from exc
    if _b64(data) != text:
        raise FormatError(f"key envelope: {what} is not canonical base64url")
    if size is not None and len(data) != size:
        raise FormatError(f"key envelope: {what} must be {size} bytes, not {len(data)}")
    return data


def fingerprint(public_key: bytes) -> str:
    """The recipient ID of an X25519 public key: ``x25519:`` + 32 hex digits of SHA-256."""
    return "x25519:" + hashlib.sha256(public_key).hexdigest()[:32]


def encode_public_key(public_key: bytes) -> str:
    """The text form users exchange: ``odf-x25519-pub:<base64url>``."""
    return PUBLIC_KEY_PREFIX + _b64(public_key)


def decode_public_key(text: str) -> bytes:
    """Parse :func:`encode_public_key`'s form.

    Raises:
        FormatError: not an odfweb3 X25519 public key.
    """
    text = text.strip()
    if not text.startswith(PUBLIC_KEY_PREFIX):
        raise FormatError(f"not an X25519 public key (expected {PUBLIC_KEY_PREFIX}…)")
    return _unb64(text[len(PUBLIC_KEY_PREFIX) :], "public key", 32)


@dataclass(frozen=True)
class Recipient:
    """Someone who can open the envelope: an X25519 key or a passphrase (no secrets here)."""

    id: str
    kind: Kind
    public_key: bytes = b""
    salt: bytes = b""
    n: int = 0
    r: int = 0
    p: int = 0
    active: bool = True


@dataclass(frozen=True)
class WrappedKey:
    """One epoch's content key wrapped for one recipient."""

    epoch: int
    recipient: str
    nonce: bytes
    ciphertext: bytes = field(repr=False)
    ephemeral_key: bytes = b""


@dataclass(frozen=True)
class Envelope:
    """The key envelope of one dataset."""

    dataset_id: str
    current_epoch: int
    recipients: tuple[Recipient, ...] = ()
    wrapped: tuple[WrappedKey, ...] = ()

    def __repr__(self) -> str:
        return (
            f"Envelope(dataset_id={self.dataset_id!r}, current_epoch={self.current_epoch}, "
            f"recipients={len(self.recipients)}, wrapped={len(self.wrapped)})"
        )

    def recipient(self, recipient_id: str) -> Recipient | None:
        """The recipient with that ID, if listed."""
        return next((r for r in self.recipients if r.id == recipient_id), None)

    def epochs_of(self, recipient_id: str) -> list[int]:
        """The epochs wrapped for ``recipient_id``."""
        return sorted({w.epoch for w in self.wrapped if w.recipient == recipient_id})


def x25519_recipient(public_key: bytes) -> Recipient:
    """A recipient for an X25519 public key (32 raw bytes)."""
    if len(public_key) != 32:
        raise UsageError("an X25519 public key is 32 bytes")
    return Recipient(fingerprint(public_key), "x25519", public_key=public_key)


def _normalize(passphrase: str) -> bytes:
    if not passphrase:
        raise UsageError("the passphrase must not be empty")
    return unicodedata.normalize("NFC", passphrase).encode("utf-8")


def passphrase_recipient(
    passphrase: str, *, label: str = "default", n: int = DEFAULT_SCRYPT_N
) -> tuple[Recipient, bytes]:
    """A passphrase recipient and its key-encryption key (keep the key secret).

    Raises:
        UsageError: ``n`` is not a power of two in 2**15 .. 2**18, or the passphrase is
            empty.
    """
    if n < MIN_SCRYPT_N or n > MAX_SCRYPT_N or n & (n - 1):
        raise UsageError(f"scrypt n must be a power of two in {MIN_SCRYPT_N} .. {MAX_SCRYPT_N}")
    if not label.isprintable() or not label or len(label) > 64:
        raise UsageError("a passphrase label is 1-64 printable characters")
    recipient = Recipient(f"passphrase:{label}", "passphrase", salt=os.urandom(16), n=n)
    recipient = replace(recipient, r=SCRYPT_R, p=SCRYPT_P)
    return recipient, derive_passphrase_kek(recipient, passphrase)


def derive_passphrase_kek(recipient: Recipient, passphrase: str) -> bytes:
    """scrypt of the passphrase with the recipient's stored salt and parameters."""
    kdf = Scrypt(salt=recipient.salt, length=KEY_SIZE, n=recipient.n, r=recipient.r, p=recipient.p)
    return kdf.derive(_normalize(passphrase))


def _aad(dataset_id: str, epoch: int, recipient_id: str) -> bytes:
    return b"\x00".join(
        (
            b"odfweb3/v1/key-envelope",
            dataset_id.encode(),
            epoch.to_bytes(4, "big"),
            recipient_id.encode(),
        )
    )


def _x25519_kek(shared: bytes, ephemeral: bytes, recipient_public: bytes) -> bytes:
    hkdf = HKDF(
        algorithm=hashes.SHA256(),
        length=KEY_SIZE,
        salt=ephemeral + recipient_public,
        info=_WRAP_INFO,
    )
    return hkdf.derive(shared)


def _raw_public(key: X25519PublicKey) -> bytes:
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw)


def _wrap(recipient: Recipient, key: ContentKey, kek: bytes | None) -> WrappedKey:
    nonce = os.urandom(_NONCE)  # secrets.token_bytes is os.urandom; secrets loads random
    aad = _aad(key.dataset_id, key.epoch, recipient.id)
    if recipient.kind == "x25519":
        ephemeral = X25519PrivateKey.generate()
        eph_pub = _raw_public(ephemeral.public_key())
        shared = ephemeral.exchange(X25519PublicKey.from_public_bytes(recipient.public_key))
        wrap_key = _x25519_kek(shared, eph_pub, recipient.public_key)
        ct = AESGCM(wrap_key).encrypt(nonce, key.secret, aad)
        return WrappedKey(key.epoch, recipient.id, nonce, ct, eph_pub)
    if kek is None:
        raise UsageError(f"recipient {recipient.id}: the passphrase is needed to wrap a new key")
    return WrappedKey(key.epoch, recipient.id, nonce, AESGCM(kek).encrypt(nonce, key.secret, aad))


def new_envelope(ring: KeyRing) -> Envelope:
    """An envelope with no recipients yet for ``ring``'s dataset."""
    return Envelope(ring.dataset_id, ring.current)


def add_recipient(
    envelope: Envelope,
    ring: KeyRing,
    recipient: Recipient,
    kek: bytes | None = None,
    epochs: Iterable[int] | None = None,
) -> Envelope:
    """Wrap ``epochs`` (default: every epoch in ``ring``) for ``recipient``.

    A recipient listed before (even removed) is made active again and keeps its entries.

    Args:
        envelope: the current envelope.
        ring: the key holder's ring (must hold the epochs to wrap).
        recipient: who to add.
        kek: the key-encryption key of a passphrase recipient.
        epochs: which epochs to give; default all.
    """
    _same_dataset(envelope, ring)
    existing = envelope.recipient(recipient.id)
    recipients = [r for r in envelope.recipients if r.id != recipient.id]
    if existing is None:
        _check_counts([*recipients, recipient], UsageError)
    recipients.append(replace(existing or recipient, active=True))
    chosen = sorted(set(ring.epochs if epochs is None else epochs))
    have = set(envelope.epochs_of(recipient.id))
    wrapped = list(envelope.wrapped)
    target = existing or recipient
    for epoch in chosen:
        if epoch not in have:
            wrapped.append(_wrap(target, ring.for_epoch(epoch), kek))
    return Envelope(envelope.dataset_id, ring.current, tuple(recipients), tuple(wrapped))


def remove_recipient(envelope: Envelope, recipient_id: str, *, purge: bool = False) -> Envelope:
    """Give ``recipient_id`` no future epochs (rotate next, so new objects exclude it).

    With ``purge`` its entries for old epochs are dropped from *this* envelope too;
    envelopes already published still hold them, so that is cosmetic.

    Raises:
        NotFound-like UsageError: the recipient is not listed.
    """
    found = envelope.recipient(recipient_id)
    if found is None:
        raise UsageError(f"{recipient_id} is not a recipient of {envelope.dataset_id}")
    if purge:
        recipients = tuple(r for r in envelope.recipients if r.id != recipient_id)
        wrapped = tuple(w for w in envelope.wrapped if w.recipient != recipient_id)
    else:
        recipients = tuple(
            replace(r, active=False) if r.id == recipient_id else r for r in envelope.recipients
        )
        wrapped = envelope.wrapped
    return Envelope(envelope.dataset_id, envelope.current_epoch, recipients, wrapped)


def rotate_envelope(envelope: Envelope, ring: KeyRing, keks: Mapping[str, bytes]) -> Envelope:
    """Wrap ``ring``'s current epoch (a new one, from :meth:`KeyRing.rotated`) for the
    active recipients only.

    Args:
        envelope: the envelope before rotation.
        ring: the rotated ring.
        keks: key-encryption keys of the passphrase recipients, by recipient ID.
    """
    _same_dataset(envelope, ring)
    key = ring.current_key()
    wrapped = list(envelope.wrapped)
    for r in envelope.recipients:
        if r.active and key.epoch not in envelope.epochs_of(r.id):
            wrapped.append(_wrap(r, key, keks.get(r.id)))
    return Envelope(envelope.dataset_id, ring.current, envelope.recipients, tuple(wrapped))


def _same_dataset(envelope: Envelope, ring: KeyRing) -> None:
    if envelope.dataset_id != ring.dataset_id:
        raise UsageError(
            f"key ring of {ring.dataset_id} used with envelope of {envelope.dataset_id}"
        )


def open_envelope(envelope: Envelope, secret: X25519PrivateKey | str) -> KeyRing:
    """Unwrap every epoch the holder of ``secret`` (identity key or passphrase) was given.

    Raises:
        DecryptionError: nothing in the envelope opens with ``secret`` (not a recipient,
            wrong passphrase, or tampered entries).
    """
    keys: dict[int, ContentKey] = {}
    if isinstance(secret, X25519PrivateKey):
        own = _raw_public(secret.public_key())
        rid = fingerprint(own)
        entries = [w for w in envelope.wrapped if w.recipient == rid]
        for w in entries:
            try:
                shared = secret.exchange(X25519PublicKey.from_public_bytes(w.ephemeral_key))
            except ValueError:
                continue  # a low-order ephemeral point: not a valid entry
            kek = _x25519_kek(shared, w.ephemeral_key, own)
            _unwrap_into(keys, envelope.dataset_id, w, kek)
        if not keys:
            why = "entries do not open (tampered?)" if entries else "not a recipient"
            raise DecryptionError(
                f"key envelope of {envelope.dataset_id}: {rid} {why}; ask a key holder to add you"
            )
    else:
        # Active recipients first; stop once the current epoch opens (a removed
        # recipient only holds older epochs): each scrypt costs ~256 MiB and a second.
        phrases = [r for r in envelope.recipients if r.kind == "passphrase"]
        for r in sorted(phrases, key=lambda r: not r.active):
            if envelope.current_epoch in keys:
                break
            entries = [w for w in envelope.wrapped if w.recipient == r.id]
            if not entries:
                continue
            kek = derive_passphrase_kek(r, secret)
            for w in entries:
                _unwrap_into(keys, envelope.dataset_id, w, kek)
        if not keys:
            raise DecryptionError(
                f"key envelope of {envelope.dataset_id}: wrong passphrase "
                "(or no passphrase recipient)"
            )
    current = envelope.current_epoch if envelope.current_epoch in keys else max(keys)
    return KeyRing(envelope.dataset_id, keys, current)


def _unwrap_into(keys: dict[int, ContentKey], dataset_id: str, w: WrappedKey, kek: bytes) -> None:
    try:
        secret = AESGCM(kek).decrypt(w.nonce, w.ciphertext, _aad(dataset_id, w.epoch, w.recipient))
    except InvalidTag:
        return
    keys[w.epoch] = ContentKey(dataset_id, w.epoch, secret)


# --- JSON form --------------------------------------------------------------------------


def encode_envelope(envelope: Envelope) -> bytes:
    """The envelope as canonical JSON (sorted keys, UTF-8, trailing newline)."""
    recipients: list[dict[str, Any]] = []
    for r in envelope.recipients:
        item: dict[str, Any] = {"id": r.id, "kind": r.kind, "active": r.active}
        if r.kind == "x25519":
            item["publicKey"] = _b64(r.public_key)
        else:
            item |= {"salt": _b64(r.salt), "n": r.n, "r": r.r, "p": r.p}
        recipients.append(item)
    wrapped: list[dict[str, Any]] = []
    for w in envelope.wrapped:
        entry: dict[str, Any] = {
            "epoch": w.epoch,
            "recipient": w.recipient,
            "nonce": _b64(w.nonce),
            "ciphertext": _b64(w.ciphertext),
        }
        if w.ephemeral_key:
            entry["ephemeralKey"] = _b64(w.ephemeral_key)
        wrapped.append(entry)
    doc = {
        "format": ENVELOPE_FORMAT,
        "version": ENVELOPE_VERSION,
        "datasetId": envelope.dataset_id,
        "currentEpoch": envelope.current_epoch,
        "recipients": recipients,
        "wrapped": wrapped,
    }
    return (json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n").encode()


def _int(value: object, what: str, lo: int, hi: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise FormatError(f"key envelope: {what} must be an integer in {lo} .. {hi}")
    return value


def _str(value: object, what: str) -> str:
    if not isinstance(value, str) or not value or len(value) > 300:
        raise FormatError(f"key envelope: {what} must be a non-empty string")
    return value


def _obj(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise FormatError(f"key envelope: {what} must be an object")
    return value


def decode_envelope(data: bytes) -> Envelope:
    """Parse and check an envelope document.

    Raises:
        FormatError: not a version-1 odfweb3 key envelope, or inconsistent.
    """
    doc = load_foreign_json(data, what="key envelope", max_bytes=MAX_ENVELOPE_BYTES)
    doc = _obj(doc, "document")
    if doc.get("format") != ENVELOPE_FORMAT:
        raise FormatError(f"key envelope: format is not {ENVELOPE_FORMAT!r}")
    if doc.get("version") != ENVELOPE_VERSION:
        raise FormatError(f"key envelope: version {doc.get('version')!r} unknown; upgrade odfweb3")
    dataset_id = _str(doc.get("datasetId"), "datasetId")
    current = _int(doc.get("currentEpoch"), "currentEpoch", 0, 2**32 - 1)
    recipients: list[Recipient] = []
    for i, raw in enumerate(_list(doc.get("recipients"), "recipients")):
        item = _obj(raw, f"recipients[{i}]")
        rid = _str(item.get("id"), f"recipients[{i}].id")
        active = item.get("active")
        if not isinstance(active, bool):
            raise FormatError(f"key envelope: recipients[{i}].active must be true or false")
        if item.get("kind") == "x25519":
            pub = _unb64(item.get("publicKey"), f"recipients[{i}].publicKey", 32)
            if rid != fingerprint(pub):
                raise FormatError(f"key envelope: recipients[{i}].id is not its key's fingerprint")
            recipients.append(Recipient(rid, "x25519", public_key=pub, active=active))
        elif item.get("kind") == "passphrase":
            # The KDF cost is bounded before any scrypt runs: at most what keys writes.
            n = _int(item.get("n"), f"recipients[{i}].n", MIN_SCRYPT_N, MAX_SCRYPT_N)
            if n & (n - 1):
                raise FormatError(f"key envelope: recipients[{i}].n must be a power of two")
            recipients.append(
                Recipient(
                    rid,
                    "passphrase",
                    salt=_unb64(item.get("salt"), f"recipients[{i}].salt", 16),
                    n=n,
                    r=_int(item.get("r"), f"recipients[{i}].r", SCRYPT_R, SCRYPT_R),
                    p=_int(item.get("p"), f"recipients[{i}].p", SCRYPT_P, SCRYPT_P),
                    active=active,
                )
            )
        else:
            raise FormatError(f"key envelope: recipients[{i}].kind must be x25519 or passphrase")
    ids = [r.id for r in recipients]
    if len(set(ids)) != len(ids):
        raise FormatError("key envelope: a recipient is listed twice")
    _check_counts(recipients, FormatError)
    kinds = {r.id: r.kind for r in recipients}
    wrapped: list[WrappedKey] = []
    for i, raw in enumerate(_list(doc.get("wrapped"), "wrapped")):
        item = _obj(raw, f"wrapped[{i}]")
        rid = _str(item.get("recipient"), f"wrapped[{i}].recipient")
        if rid not in kinds:
            raise FormatError(f"key envelope: wrapped[{i}] names an unlisted recipient")
        eph = b""
        if kinds[rid] == "x25519":
            eph = _unb64(item.get("ephemeralKey"), f"wrapped[{i}].ephemeralKey", 32)
        wrapped.append(
            WrappedKey(
                _int(item.get("epoch"), f"wrapped[{i}].epoch", 0, 2**32 - 1),
                rid,
                _unb64(item.get("nonce"), f"wrapped[{i}].nonce", _NONCE),
                _unb64(item.get("ciphertext"), f"wrapped[{i}].ciphertext", KEY_SIZE + 16),
                eph,
            )
        )
    return Envelope(dataset_id, current, tuple(recipients), tuple(wrapped))


def _list(value: object, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise FormatError(f"key envelope: {what} must be a list")
    if len(value) > _MAX_WRAPPED:
        raise FormatError(f"key envelope: more than {_MAX_WRAPPED} {what}")
    return value


def _check_counts(recipients: Iterable[Recipient], error: type[FormatError | UsageError]) -> None:
    """At most MAX_RECIPIENTS recipients, at most MAX_PASSPHRASE_RECIPIENTS passphrases."""
    listed = list(recipients)
    phrases = sum(1 for r in listed if r.kind == "passphrase")
    if len(listed) > MAX_RECIPIENTS:
        raise error(f"key envelope: more than {MAX_RECIPIENTS} recipients")
    if phrases > MAX_PASSPHRASE_RECIPIENTS:
        raise error(
            f"key envelope: more than {MAX_PASSPHRASE_RECIPIENTS} passphrase recipients; "
            "remove one with odfweb3 keys recipients remove --purge first"
        )
