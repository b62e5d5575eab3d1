"""The real Turbo bundler (ArDrive's turbo-upload-service; tests/support/turbo.py).

Our own ANS-104 signer makes the item; the bundler's receipt is checked by our verifier
(formats/receipt.py) against the key its `/v1/info` names; the bundler bundles the item into
arlocal, and our reader finds it there by id, its signature checked. Never skipped: the
`turbo` fixture starts every part (`make turbonode` installs them).
"""

from __future__ import annotations

import os

import httpx
import pytest

from odfweb3.errors import BackendRejected, SignatureError
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.client.turbo import TurboClient
from odfweb3_arweave.formats.ans104 import create_data_item, encode_data_item
from odfweb3_arweave.formats.item_check import proof_of, verify_data_item_proof
from odfweb3_arweave.formats.receipt import decode_receipt, verify_receipt
from odfweb3_arweave.formats.tags import Tag
from odfweb3_arweave.read.lookup import lookup_items
from odfweb3_arweave.wallet import generate_wallet
from tests.support.turbo import TurboNode


def _item(payload: bytes, *tags: Tag):
    wallet = generate_wallet()
    return wallet, create_data_item(wallet, payload, [Tag.of("App-Name", "odfweb3-test"), *tags])


def test_receipt_verifies_and_the_item_reaches_arlocal(turbo: TurboNode) -> None:
    payload = os.urandom(3000)
    wallet, item = _item(payload, Tag.of("Content-Type", "application/octet-stream"))
    raw = encode_data_item(item)

    info = httpx.get(f"{turbo.url}/v1/info", timeout=30).json()
    assert info["addresses"]["arweave"] == turbo.address

    r = httpx.post(
        f"{turbo.url}/v1/tx",
        content=raw,
        headers={"content-type": "application/octet-stream"},
        timeout=120,
    )
    assert r.status_code == 200, r.text
    doc = r.json()
    receipt = decode_receipt(doc)
    # The real service's signature, checked by our verifier, by the key /v1/info names.
    verify_receipt(receipt, item_id=item.id_b64, signer=info["addresses"]["arweave"])
    assert receipt.deadline_height > 0

    turbo.wait_seeded(item.id_b64)
    turbo.arlocal.mine(20)
    status = turbo.wait_status(item.id_b64, "FINALIZED")
    assert status["bundleId"]

    with ArweaveGateway(turbo.arlocal.url) as gateway:
        node = lookup_items(gateway, [item.id_b64])[item.id_b64]
        served = gateway.get_data(item.id_b64, limit=1 << 20)
    assert served == payload
    proof = proof_of(node)
    assert proof is not None
    tags = [Tag.of(t["name"], t["value"]) for t in node["tags"]]
    verified = verify_data_item_proof(
        item.id_b64, proof, tags, served, expected_owner=wallet.address, where="arlocal"
    )
    assert verified.owner == wallet.address


def test_client_pins_the_key_and_refuses_another(turbo: TurboNode) -> None:
    _, item = _item(b"pinned")
    raw = encode_data_item(item)
    with TurboClient(turbo.url) as client:
        assert client.pinned_signer() == turbo.address
        receipt = client.post_item(item.id_b64, raw)
    assert receipt.id == item.id_b64 and receipt.signer == turbo.address

    other = generate_wallet().address
    with TurboClient(turbo.url, signer=other) as client, pytest.raises(SignatureError) as exc:
        client.pinned_signer()
    assert other in str(exc.value) and "\n" not in str(exc.value)


def test_a_corrupt_item_is_a_400_in_one_line(turbo: TurboNode) -> None:
    _, item = _item(b"corrupt me")
    raw = bytearray(encode_data_item(item))
    raw[-1] ^= 0xFF  # the data no longer matches the signature
    with TurboClient(turbo.url) as client, pytest.raises(BackendRejected) as exc:
        client.post_item(item.id_b64, bytes(raw))
    assert exc.value.status == 400
    assert "\n" not in str(exc.value) and "refused the data item" in str(exc.value)
