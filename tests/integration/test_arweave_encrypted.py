"""Encrypted publishing through a real Arweave gateway (the session's arlocal; issue 7).

Every request body sent to the gateway goes through a recording transport (a real httpx
transport underneath) and is scanned for the dataset's markers; a recipient then reads
every path through arlocal's manifest and decrypts it, checking the ODF hashes.
"""

from __future__ import annotations

import httpx
import pytest

from odfweb3.adapters.arweave.gateway import ArweaveGateway
from odfweb3.adapters.arweave.gateway_target import GatewayTarget
from odfweb3.adapters.arweave.wallet import Wallet, generate_wallet
from odfweb3.crypto.envelope import decode_envelope, open_envelope
from odfweb3.crypto.segments import decrypt_bytes, decrypt_object
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import StateStore
from tests.support.encrypted import make_encrypted_world

RICH = 10**15


class RecordingTransport(httpx.BaseTransport):
    """The real HTTP transport, keeping a copy of every request body sent."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.sent: list[bytes] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(str(request.url).encode() + b"\n" + request.read())
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


@pytest.fixture(scope="module")
def wallet() -> Wallet:
    return generate_wallet()


def test_encrypted_round_trip_through_arlocal(arlocal, wallet, tmp_path, monkeypatch) -> None:
    world = make_encrypted_world(tmp_path, monkeypatch, data_bytes=60_000, seed=23)
    arlocal.mint(wallet.address, RICH)
    transport = RecordingTransport()
    gw = ArweaveGateway(arlocal.url, transport=transport)
    target = GatewayTarget(gw, wallet, StateStore(tmp_path / "state"), sealer=world.sealer)
    outcome = publish_dataset(world.ds, target, sealer=world.sealer)
    arlocal.mine(1)
    assert outcome.state.extra["encrypted"] is True
    sent = b"".join(transport.sent)
    assert len(sent) > 60_000
    world.assert_no_leak(sent, "requests to the gateway")
    world.assert_no_leak(
        b"".join(p.read_bytes() for p in (tmp_path / "state").rglob("*") if p.is_file()), "state"
    )

    reader = ArweaveGateway(arlocal.url)
    manifest_id = outcome.state.locator
    envelope = decode_envelope(reader.get_data(str(outcome.state.extra["keyEnvelope"])))
    ring = open_envelope(envelope, world.alice)
    head_ct = reader.get_data(f"{manifest_id}/refs/head")
    assert decrypt_bytes(head_ct, ring, "refs/head").decode() == multihash_to_str(world.built.head)
    for obj in outcome.plan.objects:
        data = reader.get_data(f"{manifest_id}/{obj.path}")
        plain = b"".join(decrypt_object([data], ring, obj.path, obj.hash))
        assert plain == (world.ds / obj.path).read_bytes()

    # the state rebuilt from the network knows the upload was encrypted
    again = GatewayTarget(
        ArweaveGateway(arlocal.url), wallet, StateStore(tmp_path / "state2"), sealer=world.sealer
    )
    view = again.inspect(world.did, world.built.head)
    assert view.head == world.built.head and view.state is not None
    assert view.state.extra.get("encrypted") is True
    assert view.has  # nothing to resend
