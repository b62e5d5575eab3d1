"""Bundler receipts (formats/receipt.py): decode, encode, verify; golden vector.

The independent check is the real Turbo upload service signing receipts in
tests/integration/test_turbo_node.py; here the format's edges and refusals.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from odfweb3.errors import FormatError, SignatureError
from odfweb3_arweave.formats.b64 import b64url_encode
from odfweb3_arweave.formats.receipt import (
    Receipt,
    decode_receipt,
    encode_receipt,
    receipt_message,
    verify_receipt,
)
from odfweb3_arweave.wallet import Wallet

ITEM = "A" * 43

# deep_hash(["Bundlr", "0.2.0", ITEM, "1200", "1764600000000"]) and the fixed wallet's
# signature over it (PSS salt length 0 is deterministic).
GOLDEN_MESSAGE = (
    "663eb721a459c44eb6d67a85582d6a6f55b1e74022544b848ae6919422b019c0"
    "35b6f03b794ec76bfaff0a14db9085af"
)
GOLDEN_SIGNATURE_SHA256 = "10d4ab1c77e3927b11afe849ec677ea25e9465fe689d46ceda42574d0c53e01e"


def _signed(wallet: Wallet, salt: int = 0, **over: Any) -> dict[str, Any]:
    base = Receipt(ITEM, "0.2.0", 1200, 1764600000000, wallet.owner, b"")
    signature = wallet.sign(receipt_message(base), salt_length=salt)
    doc = encode_receipt(base) | {"signature": b64url_encode(signature)}
    # Unsigned fields a bundler adds: ignored.
    doc |= {"winc": "999", "dataCaches": ["x"], "fastFinalityIndexes": [], "owner": "o"}
    return doc | over


def test_golden_vector(fixed_wallet: Wallet) -> None:
    doc = _signed(fixed_wallet)
    receipt = decode_receipt(doc)
    assert receipt_message(receipt).hex() == GOLDEN_MESSAGE
    assert hashlib.sha256(receipt.signature).hexdigest() == GOLDEN_SIGNATURE_SHA256
    assert receipt.signer == fixed_wallet.address
    verify_receipt(receipt, item_id=ITEM, signer=fixed_wallet.address)


def test_encode_decode_round_trip_keeps_only_signed_fields(fixed_wallet: Wallet) -> None:
    receipt = decode_receipt(_signed(fixed_wallet))
    kept = encode_receipt(receipt)
    assert set(kept) == {"id", "version", "deadlineHeight", "timestamp", "public", "signature"}
    assert decode_receipt(kept) == receipt


@pytest.mark.parametrize(
    ("field", "value"),
    [("deadlineHeight", 1201), ("timestamp", 1764600000001), ("version", "0.2.1")],
)
def test_a_changed_signed_field_does_not_verify(
    fixed_wallet: Wallet, field: str, value: object
) -> None:
    receipt = decode_receipt(_signed(fixed_wallet, **{field: value}))
    with pytest.raises(SignatureError, match="does not verify"):
        verify_receipt(receipt, item_id=ITEM, signer=fixed_wallet.address)


def test_unsigned_fields_change_nothing(fixed_wallet: Wallet) -> None:
    receipt = decode_receipt(_signed(fixed_wallet, winc="1", dataCaches=[]))
    verify_receipt(receipt, item_id=ITEM, signer=fixed_wallet.address)


def test_another_items_receipt_is_refused(fixed_wallet: Wallet) -> None:
    receipt = decode_receipt(_signed(fixed_wallet))
    with pytest.raises(SignatureError, match="not " + "B" * 43):
        verify_receipt(receipt, item_id="B" * 43, signer=fixed_wallet.address)


def test_another_key_is_refused(fixed_wallet: Wallet, session_wallet: Wallet) -> None:
    receipt = decode_receipt(_signed(session_wallet))
    with pytest.raises(SignatureError, match="not by the bundler's key"):
        verify_receipt(receipt, item_id=ITEM, signer=fixed_wallet.address)


def test_a_salted_signature_is_refused(fixed_wallet: Wallet) -> None:
    """The bundler signs with salt length 0; a PSS signature with another salt is not its."""
    receipt = decode_receipt(_signed(fixed_wallet, salt=32))
    with pytest.raises(SignatureError, match="does not verify"):
        verify_receipt(receipt, item_id=ITEM, signer=fixed_wallet.address)


@pytest.mark.parametrize(
    "over",
    [
        {"id": "short"},
        {"id": 5},
        {"deadlineHeight": "1200"},
        {"deadlineHeight": -1},
        {"timestamp": True},
        {"timestamp": 2**60},
        {"version": ""},
        {"public": "AAAA"},
        {"signature": "AAAA"},
        {"signature": "!!"},
    ],
)
def test_malformed_receipts_are_format_errors(fixed_wallet: Wallet, over: dict[str, Any]) -> None:
    with pytest.raises(FormatError):
        decode_receipt(_signed(fixed_wallet, **over))


def test_not_an_object() -> None:
    with pytest.raises(FormatError, match="not a JSON object"):
        decode_receipt(["id"])


def test_bundle_index_names_every_item_of_a_spooled_bundle(tmp_path, fixed_wallet: Wallet) -> None:
    """The turbo target posts items by the spool's header (publish/turbo_target.py)."""
    from odfweb3_arweave.formats.ans104 import create_data_item, encode_bundle, encode_data_item
    from odfweb3_arweave.publish.turbo_target import bundle_index

    items = [create_data_item(fixed_wallet, bytes([n]) * (n * 100)) for n in range(1, 4)]
    path = tmp_path / "x.bundle"
    path.write_bytes(encode_bundle(items))
    with open(path, "rb") as f:
        index = bundle_index(f)
        assert [i for i, _, _ in index] == [item.id_b64 for item in items]
        for (_, offset, size), item in zip(index, items, strict=True):
            f.seek(offset)
            assert f.read(size) == encode_data_item(item)
    path.write_bytes(encode_bundle(items)[:-1])
    with open(path, "rb") as f, pytest.raises(FormatError, match="do not add up"):
        bundle_index(f)
    path.write_bytes(b"\0" * 40)
    with open(path, "rb") as f, pytest.raises(FormatError, match="not a bundle"):
        bundle_index(f)
