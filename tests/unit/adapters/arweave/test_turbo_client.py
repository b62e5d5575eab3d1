"""A lying bundler (tests/support/hostile_server.py): what the real Turbo service never does.

The real service is tested in tests/integration/test_turbo_node.py and test_turbo_publish.py;
here the faults it cannot be made to produce: a receipt for another item, by another key, that
does not verify, not JSON; and the answers a real one gives when it has no credits for us
(402), which the test service cannot (it runs with balance checks off).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from odfweb3.errors import BackendRejected, FormatError, SignatureError
from odfweb3_arweave.client.turbo import TurboClient
from odfweb3_arweave.formats.ans104 import create_data_item, encode_data_item
from odfweb3_arweave.formats.b64 import b64url_encode
from odfweb3_arweave.formats.receipt import Receipt, encode_receipt, receipt_message
from odfweb3_arweave.wallet import Wallet
from tests.support.hostile_server import HostileServer, hostile_server


def _receipt(bundler: Wallet, item_id: str, **over: Any) -> bytes:
    base = Receipt(item_id, "0.2.0", 500, 1764600000000, bundler.owner, b"")
    doc = encode_receipt(base)
    doc["signature"] = b64url_encode(bundler.sign(receipt_message(base), salt_length=0))
    doc |= {"winc": "0", "dataCaches": ["arweave.net"], "owner": "x"}
    return json.dumps(doc | over).encode()


def _info(server: HostileServer, address: str) -> None:
    body = json.dumps({"version": "0.2.0", "addresses": {"arweave": address}}).encode()
    server.serve("/v1/info", body, headers={"content-type": "application/json"})


@pytest.fixture
def item(fixed_wallet: Wallet):
    return create_data_item(fixed_wallet, b"payload")


def test_a_good_receipt(fixed_wallet: Wallet, session_wallet: Wallet, item) -> None:
    with hostile_server() as server, TurboClient(server.url) as client:
        _info(server, session_wallet.address)
        server.serve("/v1/tx", _receipt(session_wallet, item.id_b64))
        receipt = client.post_item(item.id_b64, encode_data_item(item))
    assert receipt.signer == session_wallet.address and receipt.id == item.id_b64
    assert client.signer == session_wallet.address  # pinned from /v1/info


@pytest.mark.parametrize(
    ("forge", "match"),
    [
        ("other-item", "is for item"),
        ("other-key", "not by the bundler's key"),
        ("bad-signature", "does not verify"),
    ],
)
def test_a_lying_receipt_is_refused(
    fixed_wallet: Wallet, session_wallet: Wallet, item, forge: str, match: str
) -> None:
    bundler, signer = session_wallet, session_wallet
    item_id = item.id_b64
    over: dict[str, Any] = {}
    if forge == "other-item":
        item_id = "B" * 43
    elif forge == "other-key":
        signer = fixed_wallet
    else:
        over = {"deadlineHeight": 501}
    with hostile_server() as server, TurboClient(server.url) as client:
        _info(server, bundler.address)
        server.serve("/v1/tx", _receipt(signer, item_id, **over))
        with pytest.raises(SignatureError, match=match) as exc:
            client.post_item(item.id_b64, encode_data_item(item))
    assert "\n" not in str(exc.value) and exc.value.exit_code == 65


def test_not_json_and_wrong_shape(session_wallet: Wallet, item) -> None:
    with hostile_server() as server, TurboClient(server.url) as client:
        _info(server, session_wallet.address)
        server.serve("/v1/tx", b"<html>ok</html>")
        with pytest.raises(BackendRejected, match="not JSON"):
            client.post_item(item.id_b64, encode_data_item(item))
        server.serve("/v1/tx", b'{"id": 1}')
        with pytest.raises(FormatError, match="id"):
            client.post_item(item.id_b64, encode_data_item(item))


@pytest.mark.parametrize(
    ("status", "match"),
    [(402, "no Turbo credits"), (400, "refused the data item"), (202, "gave no receipt")],
)
def test_error_answers_are_one_line(session_wallet: Wallet, item, status: int, match: str) -> None:
    with hostile_server() as server, TurboClient(server.url) as client:
        _info(server, session_wallet.address)
        server.status("/v1/tx", status)
        with pytest.raises(BackendRejected, match=match) as exc:
            client.post_item(item.id_b64, encode_data_item(item))
        # never retried: a second post would only get 202 and no receipt
        assert server.count("/v1/tx") == 1
    assert exc.value.status == status and "\n" not in str(exc.value)
    assert exc.value.exit_code == 69


def test_info_naming_another_key_than_the_pinned_one(
    fixed_wallet: Wallet, session_wallet: Wallet
) -> None:
    with hostile_server() as server:
        _info(server, session_wallet.address)
        client = TurboClient(server.url, signer=fixed_wallet.address)
        with client, pytest.raises(SignatureError, match=r"set arweave\.turbo_address") as exc:
            client.pinned_signer()
        assert fixed_wallet.address in str(exc.value)
        server.serve("/v1/info", b'{"version": "0.2.0"}')
        with TurboClient(server.url) as client, pytest.raises(BackendRejected, match="names no"):
            client.info()


def test_status_states(session_wallet: Wallet) -> None:
    with hostile_server() as server, TurboClient(server.url) as client:
        server.serve("/v1/tx/abc/status", b'{"status": "FINALIZED", "bundleId": "b"}')
        assert client.status("abc").to_json() == {"state": "FINALIZED", "bundleId": "b"}
        server.status("/v1/tx/gone/status", 404)
        assert client.status("gone").state == "NOT_FOUND"
        server.serve("/v1/tx/odd/status", b'{"status": "MAYBE"}')
        with pytest.raises(BackendRejected, match="not one of"):
            client.status("odd")


@pytest.mark.parametrize(
    "body",
    [b'{"winc": "-5"}', b'{"winc": 1.5}', b'{"winc": "1e9"}', b'{"winc": true}', b"[]", b"nope"],
)
def test_a_payment_service_naming_no_price_is_one_line(body: bytes) -> None:
    from odfweb3_arweave.client.turbo import TurboPayment

    with hostile_server() as server:
        server.serve("/v1/price/bytes/100", body)
        payment = TurboPayment(server.url)
        with pytest.raises(BackendRejected, match="answered no price") as exc:
            payment.price(100)
        payment.close()
    assert "\n" not in str(exc.value) and exc.value.exit_code == 69


def test_a_price_too_long_to_be_one_is_refused() -> None:
    from odfweb3_arweave.client.turbo import TurboPayment

    with hostile_server() as server:
        server.serve("/v1/price/bytes/7", json.dumps({"winc": "9" * 31}).encode())
        with pytest.raises(BackendRejected, match="no price"):
            TurboPayment(server.url).price(7)


def test_turbo_price_sums_items_and_bounds_many_sizes() -> None:
    """Turbo prices each item: the sum, one request per distinct size; past 32 distinct
    sizes the sizes are rounded up to whole 256 KiB chunks (an upper bound, said so)."""
    from odfweb3_arweave.client.turbo import TurboPayment
    from odfweb3_arweave.publish.turbo_target import turbo_price

    chunk = 256 * 1024
    with hostile_server() as server:
        for n in (10, 20, chunk, 2 * chunk):
            server.serve(f"/v1/price/bytes/{n}", json.dumps({"winc": str(n * 3)}).encode())
        payment = TurboPayment(server.url)
        price = turbo_price(payment, [10, 20, 10])
        assert (price.amount, price.unit, price.size, price.items) == (120, "winc", 40, 3)
        assert not price.bound and server.count("/v1/price/bytes/") == 2
        many = [1 + i for i in range(40)] + [chunk + 1]
        bounded = turbo_price(payment, many)
        assert bounded.bound and bounded.items == 41
        assert bounded.amount == 40 * chunk * 3 + 2 * chunk * 3
        assert server.count("/v1/price/bytes/") == 4
        payment.close()
