"""Encrypted publishing through a real Arweave gateway (the session's arlocal).

Every request body sent to the gateway goes through a recording transport (a real httpx
transport underneath) and is scanned for the dataset's markers; a recipient then reads
every path through arlocal's manifest and decrypts it, checking the ODF hashes.
"""

from __future__ import annotations

import json

import httpx
import pytest

from odfweb3.cli.main import main
from odfweb3.crypto.envelope import (
    add_recipient,
    decode_envelope,
    encode_envelope,
    open_envelope,
    x25519_recipient,
)
from odfweb3.crypto.keyfiles import ContentKeyStore, DatasetKeys, IdentityStore
from odfweb3.crypto.sealer import Sealer
from odfweb3.crypto.segments import decrypt_bytes, decrypt_object
from odfweb3.odf.builder import append_blocks
from odfweb3.odf.chain import walk_chain
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import StateStore
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.publish.gateway_target import GatewayTarget
from odfweb3_arweave.wallet import Wallet, generate_wallet
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
    assert view.state.extra.encrypted is True
    assert view.has  # nothing to resend


def test_recipient_pulls_and_verifies_ar_record_through_cli(
    arlocal, wallet, tmp_path, monkeypatch, capsys
) -> None:
    """A keystore holding only bob's identity pulls ar://RECORD: the record's envelope opens."""
    world = make_encrypted_world(tmp_path, monkeypatch, data_bytes=60_000, seed=29)
    bob_keys = tmp_path / "bob-keys"
    IdentityStore(bob_keys).create("bob")
    store = ContentKeyStore(world.keys_dir)
    keys = store.load(world.did)
    bob_pub = IdentityStore(bob_keys).public_key("bob")
    envelope = add_recipient(keys.envelope, keys.ring, x25519_recipient(bob_pub))
    store.save(DatasetKeys(keys.ring, envelope, keys.keks))
    sealer = Sealer(keys.ring.current_key(), encode_envelope(envelope))

    arlocal.mint(wallet.address, RICH)
    target = GatewayTarget(
        ArweaveGateway(arlocal.url), wallet, StateStore(tmp_path / "state"), sealer=sealer
    )
    outcome = publish_dataset(world.ds, target, sealer=sealer)
    arlocal.mine(1)
    ref = f"ar://{outcome.state.record['recordId']}"
    env = {
        "ODFWEB3_ARWEAVE_GATEWAY": arlocal.url,
        "ODFWEB3_KEYSTORE": str(bob_keys),
        "ODFWEB3_STATE_DIR": str(tmp_path / "bob-state"),
        "HOME": str(tmp_path),
    }
    dest = tmp_path / "pulled"
    code = main(["--json", "pull", ref, str(dest)], env=env)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["head"] == multihash_to_str(world.built.head)
    for obj in outcome.plan.objects:
        assert (dest / obj.path).read_bytes() == (world.ds / obj.path).read_bytes()
    assert main(["validate", str(dest), "--deep"], env=env) == 0, capsys.readouterr()
    capsys.readouterr()

    code = main(["--json", "verify", str(world.ds), "--against", ref, "--deep"], env=env)
    out, err = capsys.readouterr()
    assert code == 0, out + err
    report = json.loads(out)
    assert report["ok"] is True
    assert [r["status"] for r in report["replicas"]] == ["identical"]
    assert report["replicas"][0]["objectsChecked"] > 0

    # without a key that opens the envelope: a clear error, nothing pulled
    IdentityStore(tmp_path / "eve-keys").create("eve")
    code = main(
        ["pull", ref, str(tmp_path / "eve")],
        env=dict(env, ODFWEB3_KEYSTORE=str(tmp_path / "eve-keys")),
    )
    _out, err = capsys.readouterr()
    assert code != 0 and "no key" in err and not (tmp_path / "eve" / "blocks").exists()

    # by its bare manifest: nothing signed is checkable (no raw manifest bytes on arlocal),
    # so it is refused before any read, and the error says what to open
    code = main(["pull", f"ar://{outcome.state.locator}", str(tmp_path / "m")], env=env)
    _out, err = capsys.readouterr()
    assert code == 69 and "is a path manifest" in err and "ar://RECORD_ID" in err
    assert not (tmp_path / "m" / "blocks").exists()

    # An encrypted update stores a delta manifest; the reader walks back to the
    # full one for the older (ciphertext) paths, and a delta manifest alone is refused.
    append_blocks(world.ds, 1, data_bytes=3_000, seed=31)
    update = publish_dataset(world.ds, target, sealer=sealer)
    assert update.state.extra["deltaUploads"] == 1
    assert update.state.extra["fullManifestId"] == outcome.state.locator
    ref2 = f"ar://{update.state.record['recordId']}"
    code = main(["--json", "pull", ref2, str(tmp_path / "pulled2")], env=env)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["head"] == multihash_to_str(DatasetReader.open(world.ds).head())
    for obj in update.plan.objects:
        assert (tmp_path / "pulled2" / obj.path).read_bytes() == (world.ds / obj.path).read_bytes()
    code = main(["pull", f"ar://{update.state.locator}", str(tmp_path / "d")], env=env)
    _out, err = capsys.readouterr()
    assert code != 0 and "delta path manifest" in err and "ar://RECORD_ID" in err
    assert not (tmp_path / "d" / "blocks").exists()


def test_resolve_encrypted_ar_record_and_did_with_and_without_keys(
    arlocal, wallet, tmp_path, monkeypatch, capsys
) -> None:
    """resolve ar://RECORD and did:odf (--owner) of an --encrypt upload."""
    world = make_encrypted_world(tmp_path, monkeypatch, data_bytes=20_000, seed=37)
    arlocal.mint(wallet.address, RICH)
    target = GatewayTarget(
        ArweaveGateway(arlocal.url), wallet, StateStore(tmp_path / "state"), sealer=world.sealer
    )
    outcome = publish_dataset(world.ds, target, sealer=world.sealer)
    arlocal.mine(1)
    record = f"ar://{outcome.state.record['recordId']}"
    head = multihash_to_str(world.built.head)
    base = {
        "ODFWEB3_ARWEAVE_GATEWAY": arlocal.url,
        "ODFWEB3_STATE_DIR": str(tmp_path / "reader-state"),
        "HOME": str(tmp_path),
    }
    holder = dict(base, ODFWEB3_KEYSTORE=str(world.keys_dir))
    IdentityStore(tmp_path / "eve-keys").create("eve")
    stranger = dict(base, ODFWEB3_KEYSTORE=str(tmp_path / "eve-keys"))

    for args in ([record], [world.did, "--owner", wallet.address]):
        code = main(["--json", "resolve", *args], env=holder)
        out, err = capsys.readouterr()
        assert code == 0, err
        results = [r for r in json.loads(out)["results"] if r["ref"] == record]
        assert len(results) == 1, out
        (r,) = results
        assert (r["datasetId"], r["head"], r["encrypted"], r["contentChecked"]) == (
            world.did,
            head,
            True,
            True,
        )
        assert r["blocks"] == len(list(walk_chain(DatasetReader.open(world.ds))))

        code = main(["--json", "resolve", *args], env=stranger)
        out, err = capsys.readouterr()
        assert code == 0, err
        (r,) = [r for r in json.loads(out)["results"] if r["ref"] == record]
        assert (r["datasetId"], r["head"], r["encrypted"], r["contentChecked"]) == (
            world.did,
            head,
            True,
            False,
        )
        assert r["blocks"] is None and "content not checked" in err
