"""Format-2 transactions: the arweave-js signing fixture, JSON, verification, chunks."""

from __future__ import annotations

import io
import json
import os

import pytest

from odfweb3.errors import FormatError, HashMismatch, SignatureError
from odfweb3_arweave.formats.b64 import b64url_decode, b64url_encode
from odfweb3_arweave.formats.merkle import build_tree_from_stream, validate_path
from odfweb3_arweave.formats.tags import Tag
from odfweb3_arweave.formats.tx import (
    Transaction,
    from_json,
    iter_chunk_uploads,
    new_transaction,
    sign_transaction,
    to_json,
    to_json_dict,
    verify_transaction,
)
from odfweb3_arweave.wallet import Wallet, load_wallet

from .conftest import VECTORS

SIGNED_FIXTURE = json.loads((VECTORS / "arweave_js_signed_v2_tx.json").read_text())
ANCHOR = bytes(range(32))


def test_arweave_js_fixture_signature_is_reproduced() -> None:
    """arweave-js test/transactions.ts signs this tx with salt length 0: same bytes."""
    wallet = load_wallet(VECTORS / "arweave_js_keyfile.json")
    tx = new_transaction(
        owner=wallet.owner,
        reward=100 * 10**12,
        last_tx=b"",
        data_size=2883584,
        data_root=b64url_decode(SIGNED_FIXTURE["data_root"]),
    )
    signed = sign_transaction(tx, wallet, salt_length=0)
    assert b64url_encode(signed.signature) == SIGNED_FIXTURE["signature"]


def test_arweave_js_fixture_parses_and_verifies() -> None:
    tx = from_json(SIGNED_FIXTURE, verify=False)
    verify_transaction(tx)
    assert tx.data is None and tx.data_size == 2883584
    # The fixture's "id" is stale (not SHA-256 of its signature): verify-on-read catches it.
    with pytest.raises(HashMismatch, match="transaction id"):
        from_json(SIGNED_FIXTURE)


def _signed(wallet: Wallet, data: bytes = b"hello arweave") -> Transaction:
    tx = new_transaction(
        owner=wallet.owner,
        reward=1234,
        last_tx=ANCHOR,
        tags=[Tag.of("Content-Type", "text/plain"), Tag.of("Grüße", "日本語")],
        data=data,
    )
    return sign_transaction(tx, wallet)


def test_json_round_trip_with_and_without_data(fixed_wallet: Wallet) -> None:
    tx = _signed(fixed_wallet)
    text = to_json(tx, include_data=True)
    back = from_json(text)
    assert back == tx
    without = from_json(to_json(tx, include_data=False))
    assert without.data is None and without.id == tx.id


def test_json_fields(fixed_wallet: Wallet) -> None:
    tx = _signed(fixed_wallet)
    obj = to_json_dict(tx, include_data=False)
    assert obj["format"] == 2
    assert obj["data"] == "" and obj["data_size"] == "13" and obj["reward"] == "1234"
    assert obj["quantity"] == "0" and obj["target"] == ""
    assert obj["owner"] == fixed_wallet.owner_b64
    assert obj["tags"][1] == {
        "name": b64url_encode("Grüße".encode()),
        "value": b64url_encode("日本語".encode()),
    }
    # serializing twice gives the same text (arweave-python-client re-encoded tags)
    assert to_json(tx, False) == to_json(tx, False)


def test_tampering_is_detected(fixed_wallet: Wallet) -> None:
    obj = to_json_dict(_signed(fixed_wallet), include_data=True)
    bad_tag = json.loads(json.dumps(obj))
    bad_tag["tags"][0]["value"] = b64url_encode(b"text/html")
    with pytest.raises(SignatureError):
        from_json(bad_tag)
    bad_data = json.loads(json.dumps(obj))
    bad_data["data"] = b64url_encode(b"hello arweavf")
    with pytest.raises(HashMismatch, match="data_root"):
        from_json(bad_data)
    bad_reward = {**obj, "reward": "1"}
    with pytest.raises(SignatureError):
        from_json(bad_reward)


def test_transfer_and_field_checks(fixed_wallet: Wallet) -> None:
    target = bytes(32)
    tx = sign_transaction(
        new_transaction(
            owner=fixed_wallet.owner, reward=1, last_tx=ANCHOR, target=target, quantity=10**12
        ),
        fixed_wallet,
    )
    verify_transaction(from_json(to_json(tx, include_data=True)))
    with pytest.raises(FormatError, match="no target"):
        new_transaction(owner=fixed_wallet.owner, reward=1, last_tx=ANCHOR, quantity=1)
    with pytest.raises(FormatError, match="last_tx"):
        new_transaction(owner=fixed_wallet.owner, reward=1, last_tx=b"x")


def test_sign_with_other_wallet_refused(fixed_wallet: Wallet, session_wallet: Wallet) -> None:
    tx = new_transaction(owner=fixed_wallet.owner, reward=1, last_tx=ANCHOR, data=b"x")
    with pytest.raises(FormatError, match="owner"):
        sign_transaction(tx, session_wallet)


def test_bad_json() -> None:
    with pytest.raises(FormatError):
        from_json("{")
    with pytest.raises(FormatError, match="format"):
        from_json({**SIGNED_FIXTURE, "format": 1})
    with pytest.raises(FormatError, match="base64url"):
        from_json({**SIGNED_FIXTURE, "owner": "a+b/"})
    with pytest.raises(FormatError, match="decimal"):
        from_json({**SIGNED_FIXTURE, "reward": "-5"})


def test_chunk_uploads_for_file_data(fixed_wallet: Wallet) -> None:
    data = os.urandom(600_000)
    tree = build_tree_from_stream(io.BytesIO(data), len(data))
    tx = sign_transaction(
        new_transaction(
            owner=fixed_wallet.owner,
            reward=1,
            last_tx=ANCHOR,
            data_size=len(data),
            data_root=tree.data_root,
        ),
        fixed_wallet,
    )
    verify_transaction(tx)
    bodies = list(iter_chunk_uploads(tree, io.BytesIO(data)))
    assert b"".join(b64url_decode(b["chunk"]) for b in bodies) == data
    for body in bodies:
        assert body["data_root"] == b64url_encode(tx.data_root)
        assert body["data_size"] == str(len(data))
        result = validate_path(
            tx.data_root, int(body["offset"]), 0, len(data), b64url_decode(body["data_path"])
        )
        assert result is not None and result.chunk_size == len(b64url_decode(body["chunk"]))
