"""Checking what a gateway says about an item against the item's own signature (no I/O).

GraphQL answers are the gateway's word: a hostile gateway can put any owner and any tags
on any id. Before an upload record (its owner, its tags, its body) is
used, the item is rebuilt from what the gateway served and its signature is checked:

- **an ANS-104 data item** (every odfweb3 record: one bundle per publish): the header is
  rebuilt from GraphQL's ``signature``, ``owner { key }``, ``recipient``, ``anchor`` and
  ``tags`` (Avro-encoded as arbundles writes them, :func:`.ans104.encode_tags`) and the
  data served by ``GET /{id}``; the RSA-PSS signature over
  ``deep_hash(["dataitem", "1", "1", owner, target, anchor, raw_tags, data])`` must verify
  against the owner key (:func:`.ans104.verify_data_item`);
- **an L1 transaction** (format 2): the header from ``GET /tx/{id}`` with its v2 signature
  (:func:`.tx.from_json`), and the data's Merkle root equal to its ``data_root``;

and in both cases the id must be ``SHA-256(signature)`` and the owner's address
``SHA-256(owner key)`` the publisher expected. Then owner, tags and data are the
signer's, whatever the gateway said. Not checked (cannot be, from one item): block
heights and whether the gateway left newer items out; see docs/security.md.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from odfweb3.errors import FormatError, IntegrityError, ReplicaMismatch, SignatureError
from odfweb3_arweave.formats.ans104 import (
    SIGNATURE_LENGTH,
    SIGNATURE_TYPE_ARWEAVE,
    DataItem,
    DataItemHeader,
    encode_tags,
    verify_data_item,
)
from odfweb3_arweave.formats.b64 import b64url_decode, b64url_encode
from odfweb3_arweave.formats.merkle import compute_data_root
from odfweb3_arweave.formats.tags import Tag
from odfweb3_arweave.formats.tx import from_json
from odfweb3_arweave.wallet import OWNER_LENGTH, owner_to_address

__all__ = [
    "ItemProof",
    "VerifiedItem",
    "proof_of",
    "verify_data_item_proof",
    "verify_transaction_item",
]


@dataclass(frozen=True)
class ItemProof:
    """The fields of a GraphQL node that let an item's bytes be checked (base64url text).

    Attributes:
        signature: the item's signature.
        owner_key: the signer's RSA modulus.
        target: the recipient (empty when none).
        anchor: the anchor (empty when none).
    """

    signature: str
    owner_key: str
    target: str
    anchor: str


@dataclass(frozen=True)
class VerifiedItem:
    """An item whose signature verified: these are the signer's, not the gateway's, words.

    Attributes:
        id: the item id (``SHA-256(signature)``, base64url).
        owner: the signer's address.
        tags: the signed tags.
        data: the signed data.
    """

    id: str
    owner: str
    tags: tuple[Tag, ...]
    data: bytes


def proof_of(node: Any) -> ItemProof | None:
    """The proof fields of a GraphQL ``transactions`` node, or None when some are missing."""
    if not isinstance(node, Mapping):
        return None
    owner = node.get("owner")
    key = owner.get("key") if isinstance(owner, Mapping) else None
    signature = node.get("signature")
    if not isinstance(key, str) or not isinstance(signature, str):
        return None
    target = node.get("recipient") or ""
    anchor = node.get("anchor") or ""
    if not isinstance(target, str) or not isinstance(anchor, str):
        return None
    return ItemProof(signature, key, target.strip(), anchor.strip())


def _check_owner(owner: bytes, expected_owner: str | None, where: str) -> str:
    address = owner_to_address(owner)
    if expected_owner is not None and address != expected_owner:
        raise ReplicaMismatch(
            f"{where}: signed by {address}, not by the publisher {expected_owner}; the gateway "
            "served another owner's item under this name"
        )
    return address


def _check_id(signature: bytes, item_id: str, where: str) -> None:
    actual = b64url_encode(hashlib.sha256(signature).digest())
    if actual != item_id:
        raise SignatureError(
            f"{where}: id is not SHA-256 of the signature served ({actual}); the gateway "
            "served another item's signature"
        )


def verify_data_item_proof(
    item_id: str,
    proof: ItemProof,
    tags: Sequence[Tag],
    data: bytes,
    *,
    expected_owner: str | None,
    where: str,
) -> VerifiedItem:
    """Check an ANS-104 data item rebuilt from GraphQL fields and its served data.

    Raises:
        SignatureError: the signature does not verify, or the id is not its hash.
        ReplicaMismatch: the item is validly signed by someone other than ``expected_owner``.
        FormatError: the fields are not base64url of the right lengths.
    """
    try:
        signature = b64url_decode(proof.signature, f"{where} signature")
        owner = b64url_decode(proof.owner_key, f"{where} owner key")
        target = b64url_decode(proof.target, f"{where} recipient") if proof.target else b""
        anchor = b64url_decode(proof.anchor, f"{where} anchor") if proof.anchor else b""
    except FormatError as exc:
        raise SignatureError(
            f"{where}: the gateway's signature fields are unusable ({exc})"
        ) from None
    if len(signature) != SIGNATURE_LENGTH or len(owner) != OWNER_LENGTH:
        raise SignatureError(
            f"{where}: signature or owner key of the wrong length for an Arweave-signed item"
        )
    if len(target) not in (0, 32) or len(anchor) not in (0, 32):
        raise SignatureError(f"{where}: recipient or anchor of the wrong length")
    _check_id(signature, item_id, where)
    try:
        raw_tags = encode_tags(tags)
    except FormatError as exc:
        raise SignatureError(f"{where}: tags cannot be a signed item's ({exc})") from None
    header = DataItemHeader(
        SIGNATURE_TYPE_ARWEAVE, signature, owner, target, anchor, tuple(tags), raw_tags, len(data)
    )
    try:
        verify_data_item(DataItem(header, data))
    except SignatureError as exc:
        raise SignatureError(
            f"{where}: the signature does not cover the owner, tags and data served ({exc}); "
            "the gateway forged or altered the item"
        ) from None
    address = _check_owner(owner, expected_owner, where)
    return VerifiedItem(item_id, address, tuple(tags), data)


def verify_transaction_item(
    item_id: str, header: Any, data: bytes, *, expected_owner: str | None, where: str
) -> VerifiedItem:
    """Check an L1 transaction: its JSON header's v2 signature and id, and its data's root.

    Raises:
        SignatureError: the signature does not verify, or the id is not its hash.
        IntegrityError: the data is not what the signed ``data_root`` says.
        ReplicaMismatch: validly signed by someone other than ``expected_owner``.
    """
    if not isinstance(header, Mapping) or header.get("id") != item_id:
        raise SignatureError(f"{where}: the gateway's transaction header is for another id")
    try:
        tx = from_json(dict(header), verify=True)
    except (FormatError, IntegrityError) as exc:
        raise SignatureError(f"{where}: transaction header does not verify ({exc})") from None
    except SignatureError as exc:
        raise SignatureError(f"{where}: transaction signature does not verify ({exc})") from None
    if len(data) != tx.data_size or (tx.data_size and compute_data_root(data) != tx.data_root):
        raise IntegrityError(
            f"{where}: the data served is not the data the signed transaction names "
            "(size or data_root differs); the gateway altered it"
        )
    address = _check_owner(tx.owner, expected_owner, where)
    return VerifiedItem(item_id, address, tx.tags, data)
