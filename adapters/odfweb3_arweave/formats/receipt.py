"""A bundler's signed upload receipt (ArDrive Turbo, Irys/Bundlr: ``POST /v1/tx`` answers).

A bundler that accepted a data item answers with a receipt it signs with its Arweave key::

    {"id": ITEM, "timestamp": MS, "version": "0.2.0", "deadlineHeight": H,
     "public": B64URL(modulus), "signature": B64URL(sig),
     "winc": "...", "dataCaches": [...], "fastFinalityIndexes": [...], "owner": ADDR}

The signature is RSA-PSS / SHA-256 with **salt length 0** (arweave-js ``crypto.sign`` with
``saltLength: 0``) over the deep hash (:mod:`.deephash`) of the UTF-8 strings
``["Bundlr", version, id, str(deadlineHeight), str(timestamp)]`` — the form both Turbo and
Irys sign since the Irys migration (turbo-upload-service ``src/utils/signReceipt.ts``
``prepareHash``). Only those fields are signed: ``winc``, ``dataCaches``,
``fastFinalityIndexes`` and ``owner`` are not, so nothing here keeps or trusts them.

What a verified receipt proves: the holder of ``public`` (whose Arweave address is the
SHA-256 of the modulus) promised to get item ``id`` into a block by ``deadlineHeight``. The
caller pins that key: the address ``GET /v1/info`` names must be the one configured or seen
before (:mod:`odfweb3_arweave.client.turbo`).

Pure: :func:`decode_receipt` parses and bounds the JSON, :func:`encode_receipt` writes the
signed fields back (the form kept in publish state), :func:`verify_receipt` checks it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from odfweb3.errors import FormatError, SignatureError
from odfweb3_arweave.formats.b64 import b64url_decode, b64url_encode
from odfweb3_arweave.formats.deephash import deep_hash
from odfweb3_arweave.wallet import PUBLIC_EXPONENT, owner_to_address

__all__ = [
    "Receipt",
    "decode_receipt",
    "encode_receipt",
    "receipt_message",
    "verify_receipt",
]

_MAX_VERSION: Final = 32
_MAX_KEY_BYTES: Final = 1024  # RSA-4096 is 512; anything past 8192 bits is not a bundler key
_MAX_INT: Final = 2**53  # JSON numbers a JavaScript signer can write exactly


@dataclass(frozen=True)
class Receipt:
    """The signed fields of a bundler receipt (nothing unsigned is kept).

    Attributes:
        id: the data item's id (base64url of its 32 bytes).
        version: the receipt version (``"0.2.0"``).
        deadline_height: the block height the bundler promised the item by.
        timestamp: the bundler's upload time, milliseconds since the epoch.
        public: the bundler's RSA modulus (its Arweave owner).
        signature: RSA-PSS (salt length 0) over :func:`receipt_message`.
    """

    id: str
    version: str
    deadline_height: int
    timestamp: int
    public: bytes
    signature: bytes

    @property
    def signer(self) -> str:
        """The Arweave address of the key that signed (SHA-256 of the modulus)."""
        address: str = owner_to_address(self.public)
        return address


def _int(doc: dict[str, Any], key: str, where: str) -> int:
    value = doc.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < _MAX_INT:
        raise FormatError(f"{where}: {key} is not a non-negative integer")
    return value


def _text(doc: dict[str, Any], key: str, where: str, limit: int) -> str:
    value = doc.get(key)
    if not isinstance(value, str) or not value or len(value) > limit:
        raise FormatError(f"{where}: {key} is missing or not a short string")
    return value


def decode_receipt(doc: Any, where: str = "receipt") -> Receipt:
    """The signed fields of a receipt's JSON (an answer of ``POST /v1/tx`` or kept state).

    Raises:
        FormatError: not an object, or a signed field missing or of the wrong shape.
    """
    if not isinstance(doc, dict):
        raise FormatError(f"{where}: not a JSON object")
    item_id = _text(doc, "id", where, 64)
    if len(b64url_decode(item_id, f"{where}: id")) != 32:
        raise FormatError(f"{where}: id is not 32 bytes")
    public = b64url_decode(_text(doc, "public", where, 2 * _MAX_KEY_BYTES), f"{where}: public")
    signature = b64url_decode(
        _text(doc, "signature", where, 2 * _MAX_KEY_BYTES), f"{where}: signature"
    )
    if not public or len(public) > _MAX_KEY_BYTES or len(signature) != len(public):
        raise FormatError(f"{where}: public key or signature has the wrong length")
    return Receipt(
        id=item_id,
        version=_text(doc, "version", where, _MAX_VERSION),
        deadline_height=_int(doc, "deadlineHeight", where),
        timestamp=_int(doc, "timestamp", where),
        public=public,
        signature=signature,
    )


def encode_receipt(receipt: Receipt) -> dict[str, Any]:
    """The receipt's signed fields as JSON (what publish state keeps; decodes back)."""
    return {
        "id": receipt.id,
        "version": receipt.version,
        "deadlineHeight": receipt.deadline_height,
        "timestamp": receipt.timestamp,
        "public": b64url_encode(receipt.public),
        "signature": b64url_encode(receipt.signature),
    }


def receipt_message(receipt: Receipt) -> bytes:
    """The 48-byte deep hash the bundler signs."""
    return deep_hash(
        [
            b"Bundlr",
            receipt.version.encode("utf-8"),
            receipt.id.encode("utf-8"),
            str(receipt.deadline_height).encode("ascii"),
            str(receipt.timestamp).encode("ascii"),
        ]
    )


def verify_receipt(receipt: Receipt, *, item_id: str, signer: str, where: str = "receipt") -> None:
    """Check that ``receipt`` is for ``item_id`` and signed by the address ``signer``.

    Raises:
        SignatureError: another item's receipt, another key, or a signature that does not
            verify (RSA-PSS/SHA-256, salt length 0, exactly as the bundler signs).
    """
    if receipt.id != item_id:
        raise SignatureError(f"{where}: the receipt is for item {receipt.id}, not {item_id}")
    if receipt.signer != signer:
        raise SignatureError(
            f"{where}: the receipt is signed by {receipt.signer}, not by the bundler's key {signer}"
        )
    try:
        key = rsa.RSAPublicNumbers(PUBLIC_EXPONENT, int.from_bytes(receipt.public, "big"))
        key.public_key().verify(
            receipt.signature,
            receipt_message(receipt),
            padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=0),
            hashes.SHA256(),
        )
    except InvalidSignature:
        raise SignatureError(f"{where}: the receipt's signature does not verify") from None
    except ValueError:
        raise SignatureError(f"{where}: the receipt's key is not a usable RSA key") from None
