"""The pure part: an item rebuilt from a gateway's fields verifies only if
its signer really signed those owner, tags and data (ANS-104 data items and L1 v2
transactions); id = SHA-256(signature); the owner is the publisher expected."""

from __future__ import annotations

import dataclasses

import pytest

from odfweb3.errors import IntegrityError, ReplicaMismatch, SignatureError
from odfweb3_arweave.formats.ans104 import create_data_item
from odfweb3_arweave.formats.b64 import b64url_encode
from odfweb3_arweave.formats.item_check import (
    ItemProof,
    proof_of,
    verify_data_item_proof,
    verify_transaction_item,
)
from odfweb3_arweave.formats.tags import Tag
from odfweb3_arweave.formats.tx import new_transaction, sign_transaction, to_json_dict

TAGS = (Tag.of("App-Name", "odfweb3"), Tag.of("ODF-Head", "f1620abc"))
DATA = b'{"format":"odfweb3/upload-record/1"}'


@pytest.fixture(scope="module")
def item(fixed_wallet):
    made = create_data_item(fixed_wallet, DATA, TAGS)
    proof = ItemProof(b64url_encode(made.header.signature), fixed_wallet.owner_b64, "", "")
    return made, proof


def test_an_honest_item_verifies_and_names_its_signer(item, fixed_wallet) -> None:
    made, proof = item
    got = verify_data_item_proof(
        made.id_b64, proof, TAGS, DATA, expected_owner=fixed_wallet.address, where="it"
    )
    assert (got.id, got.owner, got.tags, got.data) == (
        made.id_b64,
        fixed_wallet.address,
        TAGS,
        DATA,
    )


def test_graphql_node_fields_make_the_same_proof(item, fixed_wallet) -> None:
    made, proof = item
    node = {
        "id": made.id_b64,
        "signature": proof.signature,
        "owner": {"address": fixed_wallet.address, "key": proof.owner_key},
        "recipient": "",
        "anchor": "",
    }
    assert proof_of(node) == proof
    assert proof_of({"id": "x", "owner": {"address": "a"}}) is None  # no key, no signature


@pytest.mark.parametrize(
    "lie",
    ["tags", "data", "owner key", "id", "anchor"],
)
def test_every_lie_is_refused(item, session_wallet, lie: str) -> None:
    made, proof = item
    tags, data, item_id = TAGS, DATA, made.id_b64
    if lie == "tags":
        tags = (Tag.of("App-Name", "odfweb3"), Tag.of("ODF-Head", "f1620bad"))
    elif lie == "data":
        data = DATA + b" "
    elif lie == "owner key":
        proof = dataclasses.replace(proof, owner_key=session_wallet.owner_b64)
    elif lie == "id":
        item_id = b64url_encode(bytes(32))
    else:
        proof = dataclasses.replace(proof, anchor=b64url_encode(bytes(32)))
    with pytest.raises(SignatureError):
        verify_data_item_proof(item_id, proof, tags, data, expected_owner=None, where="it")


def test_another_owners_valid_item_is_a_mismatch(item, session_wallet) -> None:
    made, proof = item
    with pytest.raises(ReplicaMismatch, match="not by the publisher"):
        verify_data_item_proof(
            made.id_b64, proof, TAGS, DATA, expected_owner=session_wallet.address, where="it"
        )


@pytest.fixture(scope="module")
def l1(fixed_wallet):
    tx = sign_transaction(
        new_transaction(
            owner=fixed_wallet.owner, reward=1, last_tx=bytes(32), tags=TAGS, data=DATA
        ),
        fixed_wallet,
    )
    return tx, to_json_dict(tx, include_data=False)


def test_an_l1_transaction_verifies_with_its_data_root(l1, fixed_wallet) -> None:
    tx, header = l1
    got = verify_transaction_item(
        tx.id_b64, header, DATA, expected_owner=fixed_wallet.address, where="tx"
    )
    assert got.owner == fixed_wallet.address and got.tags == TAGS and got.data == DATA


def test_an_l1_transaction_with_other_data_or_tags_or_id_is_refused(l1, session_wallet) -> None:
    tx, header = l1
    with pytest.raises(IntegrityError, match="data_root"):
        verify_transaction_item(tx.id_b64, header, DATA + b"!", expected_owner=None, where="tx")
    forged = dict(header, tags=[{"name": b64url_encode(b"ODF-Head"), "value": b64url_encode(b"x")}])
    with pytest.raises(SignatureError):
        verify_transaction_item(tx.id_b64, forged, DATA, expected_owner=None, where="tx")
    with pytest.raises(SignatureError, match="another id"):
        verify_transaction_item("A" * 43, header, DATA, expected_owner=None, where="tx")
    with pytest.raises(ReplicaMismatch):
        verify_transaction_item(
            tx.id_b64, header, DATA, expected_owner=session_wallet.address, where="tx"
        )
