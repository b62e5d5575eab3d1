"""ArFS private drive through a real Arweave gateway (the session's arlocal; issue 7).

Every request body sent is scanned for the dataset's markers and the drive password; the
items are read back through arlocal and decrypted by ardrive-core-js itself
(tests/nodes/oracles/ardrive_crypto.mjs) and by our code.
"""

from __future__ import annotations

from odfweb3.adapters.arweave.arfs import tag_value
from odfweb3.adapters.arweave.arfs_private import decrypt, derive_drive_key, derive_file_key
from odfweb3.adapters.arweave.gateway import ArweaveGateway
from odfweb3.adapters.arweave.gateway_target import GatewayTarget
from odfweb3.adapters.arweave.resolve import item_tags, lookup_items
from odfweb3.adapters.arweave.wallet import load_wallet
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import StateStore
from tests.integration.test_arweave_encrypted import RICH, RecordingTransport
from tests.support.encrypted import make_encrypted_world
from tests.support.oracles import run_oracle
from tests.unit.adapters.arweave.conftest import FIXED_WALLET_PATH

PASSWORD = "TEST-ONLY arlocal drive password 91ab"


def test_private_drive_through_arlocal(arlocal, tmp_path, monkeypatch) -> None:
    wallet = load_wallet(FIXED_WALLET_PATH)
    world = make_encrypted_world(tmp_path, monkeypatch, data_bytes=60_000, seed=29)
    arlocal.mint(wallet.address, RICH)
    transport = RecordingTransport()
    gw = ArweaveGateway(arlocal.url, transport=transport)
    states = StateStore(tmp_path / "state")
    target = GatewayTarget(gw, wallet, states, drive_password=PASSWORD)
    assert PASSWORD not in repr(target)
    outcome = publish_dataset(world.ds, target)
    arlocal.mine(1)
    sent = b"".join(transport.sent)
    assert len(sent) > 60_000
    state_bytes = b"".join(p.read_bytes() for p in states.root.rglob("*") if p.is_file())
    for blob, where in ((sent, "requests to the gateway"), (state_bytes, "state")):
        world.assert_no_leak(blob, where)
        assert PASSWORD.encode() not in blob, where

    drive = outcome.state.extra["drive"]
    assert drive["privacy"] == "private"
    reader = ArweaveGateway(arlocal.url)
    manifest_id = outcome.state.locator
    drive_key = derive_drive_key(wallet, drive["driveId"], PASSWORD)
    path = next(o.path for o in outcome.plan.objects if o.path.startswith("data/"))
    refs = outcome.state.objects
    nodes = lookup_items(reader, [r["dataItemId"] for r in refs.values()])
    ivs = {p: tag_value(item_tags(nodes[r["dataItemId"]]), "Cipher-IV") for p, r in refs.items()}
    assert len(refs) == len(outcome.plan.objects) + 1 and all(ivs.values())
    for p, ref in refs.items():
        data = reader.get_data(f"{manifest_id}/{p}")  # through arlocal's path manifest
        plain = decrypt(derive_file_key(drive_key, ref["fileId"]), str(ivs[p]), data, p)
        want = (
            multihash_to_str(world.built.head).encode()
            if p == "refs/head"
            else (world.ds / p).read_bytes()
        )
        assert plain == want, p

    # ardrive-core-js opens one object fetched from the gateway
    ref = outcome.state.objects[path]
    ct = tmp_path / "ct.bin"
    ct.write_bytes(reader.get_data(f"{manifest_id}/{path}"))
    iv = str(ivs[path])
    res = run_oracle(
        "ardrive_crypto.mjs",
        "decrypt-file",
        str(FIXED_WALLET_PATH.absolute()),
        drive["driveId"],
        ref["fileId"],
        iv,
        str(ct),
        str(tmp_path / "pt.bin"),
        input=PASSWORD.encode(),
    )
    assert res["ok"] is True
    assert (tmp_path / "pt.bin").read_bytes() == (world.ds / path).read_bytes()

    # the state rebuilt from the network keeps the drive private (no resend)
    again = GatewayTarget(
        ArweaveGateway(arlocal.url), wallet, StateStore(tmp_path / "s2"), drive_password=PASSWORD
    )
    view = again.inspect(world.did, world.built.head)
    assert view.head == world.built.head and view.state is not None
    assert view.state.extra["drive"]["privacy"] == "private"
    assert view.has
