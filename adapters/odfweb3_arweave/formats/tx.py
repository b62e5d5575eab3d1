"""Arweave v2 (format 2) transactions: build, sign, verify, and their ``/tx`` JSON.

Fields and signing follow arweave-js ``Transaction`` (format 2):

- signature data = deep hash of ``["2", owner, target, quantity, reward, last_tx,
  [[tag name, tag value], ...], data_size, data_root]``, where ``quantity``, ``reward`` and
  ``data_size`` are decimal ASCII and the other blobs are raw bytes (empty when absent);
- ``signature`` = RSA-PSS/SHA-256 over the signature data by the owner's wallet;
- ``id`` = ``SHA-256(signature)``.

The JSON posted to ``POST /tx`` writes every binary field, and each tag's name and value,
as unpadded base64url; ``quantity``, ``reward`` and ``data_size`` as decimal strings.
Data larger than what one wants to inline is left out (``"data": ""``) and uploaded with
``POST /chunk`` (see :func:`iter_chunk_uploads`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, BinaryIO

from odfweb3.errors import FormatError, HashMismatch
from odfweb3.foreign_json import load_foreign_json
from odfweb3_arweave.formats.b64 import b64url_decode, b64url_encode
from odfweb3_arweave.formats.deephash import deep_hash
from odfweb3_arweave.formats.merkle import ChunkTree, compute_data_root, read_chunk
from odfweb3_arweave.formats.tags import Tag
from odfweb3_arweave.wallet import Wallet, verify_signature

__all__ = [
    "Transaction",
    "from_json",
    "iter_chunk_uploads",
    "new_transaction",
    "sign_transaction",
    "signature_data",
    "to_json",
    "to_json_dict",
    "verify_transaction",
]

_ADDRESS_LENGTH = 32
_ANCHOR_LENGTHS = (0, 32, 48)  # empty, a tx id, or a block hash (tx_anchor)


@dataclass(frozen=True)
class Transaction:
    """A format-2 Arweave transaction. Binary fields are raw bytes, not base64url.

    Attributes:
        owner: the signer's RSA modulus (512 bytes).
        last_tx: the anchor (``GET /tx_anchor``): empty, 32 or 48 bytes.
        tags: the tags, in order.
        target: recipient address for a transfer (32 bytes) or empty.
        quantity: winston transferred to ``target``.
        reward: fee in winston (``GET /price/{size}``).
        data_size: data size in bytes.
        data_root: the data's Merkle root (32 bytes), empty when there is no data.
        data: the data itself when held in memory, else ``None``.
        signature: the signature, empty when unsigned.
        format: always 2.
    """

    owner: bytes
    last_tx: bytes
    tags: tuple[Tag, ...]
    target: bytes
    quantity: int
    reward: int
    data_size: int
    data_root: bytes
    data: bytes | None = None
    signature: bytes = b""
    format: int = 2

    @property
    def id(self) -> bytes:
        """The transaction id, ``SHA-256(signature)`` (empty when unsigned)."""
        return hashlib.sha256(self.signature).digest() if self.signature else b""

    @property
    def id_b64(self) -> str:
        """The transaction id as base64url text."""
        return b64url_encode(self.id)

    def __repr__(self) -> str:
        return (
            f"Transaction(id={self.id_b64!r}, data_size={self.data_size}, "
            f"tags={len(self.tags)}, reward={self.reward})"
        )


def _check_fields(tx: Transaction) -> None:
    if tx.format != 2:
        raise FormatError(f"transaction format {tx.format} is not supported (only format 2)")
    if len(tx.target) not in (0, _ADDRESS_LENGTH):
        raise FormatError(f"transaction target is {len(tx.target)} bytes; expected 0 or 32")
    if len(tx.last_tx) not in _ANCHOR_LENGTHS:
        raise FormatError(f"transaction last_tx is {len(tx.last_tx)} bytes; expected 0, 32, 48")
    if tx.quantity < 0 or tx.reward < 0 or tx.data_size < 0:
        raise FormatError("transaction quantity, reward and data_size must not be negative")
    if tx.quantity > 0 and not tx.target:
        raise FormatError("transaction transfers winston but has no target address")
    if tx.data_size > 0 and len(tx.data_root) != 32:
        raise FormatError("transaction has data but its data_root is not 32 bytes")
    if tx.data_size == 0 and tx.data_root:
        raise FormatError("transaction has no data but a data_root")
    if tx.data is not None and len(tx.data) != tx.data_size:
        raise FormatError(f"transaction data is {len(tx.data)} bytes; data_size {tx.data_size}")


def new_transaction(
    *,
    owner: bytes,
    reward: int,
    last_tx: bytes,
    tags: Sequence[Tag] = (),
    data: bytes | None = None,
    data_size: int | None = None,
    data_root: bytes | None = None,
    target: bytes = b"",
    quantity: int = 0,
) -> Transaction:
    """Build an unsigned transaction.

    Pass either ``data`` (data_root is computed) or ``data_size`` and ``data_root`` (from a
    :class:`~.merkle.ChunkTree` built over a file), or neither for a data-less transaction.

    Args:
        owner: the signer's modulus (``wallet.owner``).
        reward: fee in winston.
        last_tx: the anchor bytes.
        tags: tags, in order.
        data: in-memory data.
        data_size: size of data held elsewhere.
        data_root: data_root of data held elsewhere.
        target: recipient address bytes, for transfers.
        quantity: winston to transfer.

    Returns:
        The unsigned :class:`Transaction`.

    Raises:
        FormatError: inconsistent fields.
    """
    if data is None and data_size is None and data_root is None:
        data = b""
    if data is not None:
        if data_size is not None or data_root is not None:
            raise ValueError("pass either data or data_size/data_root, not both")
        data_size = len(data)
        data_root = compute_data_root(data) if data else b""
    tx = Transaction(
        owner=owner,
        last_tx=last_tx,
        tags=tuple(tags),
        target=target,
        quantity=quantity,
        reward=reward,
        data_size=data_size or 0,
        data_root=data_root or b"",
        data=data,
    )
    _check_fields(tx)
    return tx


def signature_data(tx: Transaction) -> bytes:
    """Return the 48-byte deep hash that a format-2 transaction's signature covers.

    Args:
        tx: the transaction.

    Returns:
        The deep hash (arweave-js ``getSignatureData``, case 2).
    """
    return deep_hash(
        [
            str(tx.format).encode("ascii"),
            tx.owner,
            tx.target,
            str(tx.quantity).encode("ascii"),
            str(tx.reward).encode("ascii"),
            tx.last_tx,
            [[tag.name, tag.value] for tag in tx.tags],
            str(tx.data_size).encode("ascii"),
            tx.data_root,
        ]
    )


def sign_transaction(tx: Transaction, wallet: Wallet, salt_length: int = 32) -> Transaction:
    """Sign a transaction with a wallet.

    Args:
        tx: the unsigned transaction; its owner must be the wallet's.
        wallet: the signing wallet.
        salt_length: RSA-PSS salt length (32 by default; 0 gives deterministic signatures).

    Returns:
        A copy of ``tx`` with its signature (and so its id) set.

    Raises:
        FormatError: the owner is not the wallet's or fields are inconsistent.
        CryptoError: signing failed.
    """
    _check_fields(tx)
    if tx.owner != wallet.owner:
        raise FormatError(f"transaction owner is not wallet {wallet.address}; rebuild it")
    return replace(tx, signature=wallet.sign(signature_data(tx), salt_length=salt_length))


def verify_transaction(tx: Transaction, expected_id: bytes | None = None) -> None:
    """Verify a transaction's signature (and id, when one is expected).

    Args:
        tx: the signed transaction.
        expected_id: the id it was fetched or parsed under, if any.

    Raises:
        HashMismatch: ``expected_id`` is not ``SHA-256(signature)``, or the inline data does
            not match data_root.
        SignatureError: the signature does not verify against the owner.
    """
    if not tx.signature:
        raise FormatError("transaction is not signed")
    if expected_id is not None and expected_id != tx.id:
        raise HashMismatch(b64url_encode(expected_id), tx.id_b64, "transaction id")
    if tx.data:
        actual_root = compute_data_root(tx.data)
        if actual_root != tx.data_root:
            raise HashMismatch(
                b64url_encode(tx.data_root), b64url_encode(actual_root), "transaction data_root"
            )
    verify_signature(tx.owner, signature_data(tx), tx.signature, f"transaction {tx.id_b64}")


def to_json_dict(tx: Transaction, include_data: bool) -> dict[str, Any]:
    """Return the JSON object for ``POST /tx`` (arweave-js ``toJSON`` field set).

    Args:
        tx: the signed transaction.
        include_data: inline the data (``tx.data`` must be held); otherwise ``"data": ""``
            and the data goes up with ``POST /chunk``.

    Returns:
        A JSON-ready dict.
    """
    if include_data and tx.data is None:
        raise ValueError("include_data=True but the transaction holds no data")
    return {
        "format": tx.format,
        "id": tx.id_b64,
        "last_tx": b64url_encode(tx.last_tx),
        "owner": b64url_encode(tx.owner),
        "tags": [
            {"name": b64url_encode(tag.name), "value": b64url_encode(tag.value)} for tag in tx.tags
        ],
        "target": b64url_encode(tx.target),
        "quantity": str(tx.quantity),
        "data": b64url_encode(tx.data or b"") if include_data else "",
        "data_size": str(tx.data_size),
        "data_root": b64url_encode(tx.data_root),
        "data_tree": [],
        "reward": str(tx.reward),
        "signature": b64url_encode(tx.signature),
    }


def to_json(tx: Transaction, include_data: bool) -> str:
    """Serialize a transaction as compact JSON text for ``POST /tx``.

    Args:
        tx: the signed transaction.
        include_data: inline the data (see :func:`to_json_dict`).

    Returns:
        The JSON text.
    """
    return json.dumps(to_json_dict(tx, include_data), separators=(",", ":"))


def _decimal(obj: dict[str, Any], name: str) -> int:
    value = obj.get(name, "0")
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.isdigit() or not value.isascii():
        raise FormatError(f"transaction JSON: {name} is not a decimal string")
    return int(value)


def from_json(data: str | bytes | dict[str, Any], verify: bool = True) -> Transaction:
    """Parse a transaction from its JSON (as posted to or served by ``/tx``).

    Args:
        data: JSON text or an already parsed object.
        verify: check the signature, that ``id`` is ``SHA-256(signature)``, and that inline
            data matches data_root.

    Returns:
        The :class:`Transaction` (``data`` is ``None`` when the JSON carries none).

    Raises:
        FormatError: not a format-2 transaction JSON.
        HashMismatch: id or data_root do not match.
        SignatureError: the signature does not verify.
    """
    if isinstance(data, dict):
        obj = data
    else:
        raw = data.encode("utf-8") if isinstance(data, str) else data
        obj = load_foreign_json(raw, what="transaction JSON", max_bytes=len(raw))
    if not isinstance(obj, dict):
        raise FormatError("transaction JSON: expected an object")
    if obj.get("format", 1) not in (2, "2"):
        raise FormatError(f"transaction JSON: format {obj.get('format')!r} is not supported")

    def field_bytes(name: str) -> bytes:
        value = obj.get(name, "")
        if not isinstance(value, str):
            raise FormatError(f"transaction JSON: {name} is not a string")
        return b64url_decode(value, f"transaction {name}")

    raw_tags = obj.get("tags", [])
    if not isinstance(raw_tags, list) or not all(isinstance(t, dict) for t in raw_tags):
        raise FormatError("transaction JSON: tags is not a list of {name, value} objects")
    tags = tuple(
        Tag(
            b64url_decode(t.get("name", ""), f"transaction tag {i} name"),
            b64url_decode(t.get("value", ""), f"transaction tag {i} value"),
        )
        for i, t in enumerate(raw_tags)
    )
    inline = field_bytes("data")
    data_size = _decimal(obj, "data_size")
    tx = Transaction(
        owner=field_bytes("owner"),
        last_tx=field_bytes("last_tx"),
        tags=tags,
        target=field_bytes("target"),
        quantity=_decimal(obj, "quantity"),
        reward=_decimal(obj, "reward"),
        data_size=data_size,
        data_root=field_bytes("data_root"),
        data=inline if inline or data_size == 0 else None,
        signature=field_bytes("signature"),
    )
    _check_fields(tx)
    if verify:
        verify_transaction(tx, expected_id=field_bytes("id"))
    return tx


def iter_chunk_uploads(tree: ChunkTree, stream: BinaryIO) -> Iterator[dict[str, str]]:
    """Yield the ``POST /chunk`` JSON bodies for data read from a seekable stream.

    Each chunk is read, checked against its hash, and paired with its proof; one chunk is
    in memory at a time.

    Args:
        tree: the chunk tree built over the same data (its data_root is the tx's).
        stream: seekable binary stream over the data.

    Yields:
        ``{"data_root", "data_size", "data_path", "offset", "chunk"}`` with base64url
        binary fields and decimal strings.
    """
    root = b64url_encode(tree.data_root)
    for index, chunk in enumerate(tree.upload_chunks):
        proof = tree.proof(index)
        yield {
            "data_root": root,
            "data_size": str(tree.data_size),
            "data_path": b64url_encode(proof.data_path),
            "offset": str(proof.offset),
            "chunk": b64url_encode(read_chunk(stream, chunk)),
        }
