"""Encrypted publishing to the live IPFS node (issue 7, DESIGN.md section 6).

The dataset's data files and SetInfo carry marker strings. Every request body sent to
the node goes through a recording transport (a real httpx transport underneath), and
afterwards every block of the published root's DAG is read back from the node: no
marker, no slice of a plaintext object and no key bytes may appear in either. A
recipient then decrypts every object read through the node and checks its ODF hash.
"""

from __future__ import annotations

import base64
import json
import random

import httpx
import pytest

from odfweb3.adapters.ipfs.cid import Cid
from odfweb3.adapters.ipfs.kubo import KuboClient
from odfweb3.adapters.ipfs.libp2p_keys import IpnsName, public_key_bytes
from odfweb3.adapters.ipfs.node_target import IpfsNodeTarget, read_node_record
from odfweb3.adapters.ipfs.unixfs_reader import iter_dag, list_directory, read_file, resolve_path
from odfweb3.cli.main import main
from odfweb3.crypto.envelope import (
    add_recipient,
    decode_envelope,
    encode_envelope,
    open_envelope,
    x25519_recipient,
)
from odfweb3.crypto.keyfiles import ContentKeyStore, DatasetKeys, IdentityStore
from odfweb3.crypto.keystore import Keystore
from odfweb3.crypto.sealer import Sealer
from odfweb3.crypto.segments import decrypt_bytes, decrypt_object
from odfweb3.errors import DecryptionError
from odfweb3.odf import builder
from odfweb3.odf.multihash import multihash_from_str, multihash_to_str
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import StateStore

DATA_MARKER = b"SECRET-ROW-5d1e02"
INFO_MARKER = "SECRET-DESCRIPTION-c0ffee42"


class _MarkerRandom(random.Random):
    """Example data made of marker strings (a plaintext leak is easy to spot)."""

    calls = 0

    def randbytes(self, n: int) -> bytes:
        _MarkerRandom.calls += 1
        unit = DATA_MARKER + b"-%d;" % _MarkerRandom.calls
        return (unit * (n // len(unit) + 1))[:n]


class RecordingTransport(httpx.BaseTransport):
    """The real HTTP transport, keeping a copy of every request (URL and body) sent."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.sent: list[bytes] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()  # buffers a streamed body so it can still be sent
        self.sent.append(str(request.url).encode() + b"\n" + body)
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


@pytest.fixture
def world(tmp_path, monkeypatch):
    monkeypatch.setattr(builder.random, "Random", _MarkerRandom)
    built = builder.create_root_dataset(
        tmp_path / "ds", blocks=3, data_bytes=400_000, seed=9, description=INFO_MARKER, fsync=False
    )
    monkeypatch.undo()
    did = str(built.keypair.dataset_id)
    identities = IdentityStore(tmp_path / "keys")
    alice = identities.create("alice")
    store = ContentKeyStore(tmp_path / "keys")
    keys = store.load_or_create(did)
    envelope = add_recipient(
        keys.envelope, keys.ring, x25519_recipient(identities.public_key("alice"))
    )
    store.save(DatasetKeys(keys.ring, envelope, keys.keks))
    sealer = Sealer(keys.ring.current_key(), encode_envelope(envelope))
    return built, sealer, alice, keys.ring


def _forbidden(ds, ring):
    secret = ring.current_key().secret
    out = [
        DATA_MARKER,
        INFO_MARKER.encode(),
        secret,
        secret.hex().encode(),
        base64.urlsafe_b64encode(secret).rstrip(b"="),
        base64.b64encode(secret).rstrip(b"="),
    ]
    for p in ds.rglob("*"):
        if p.is_file() and p.parent.name in ("blocks", "data", "checkpoints"):
            data = p.read_bytes()
            out.append(data[len(data) // 2 : len(data) // 2 + 24])
    return out


def test_encrypted_publish_to_node_leaks_nothing_and_decrypts(tmp_path, ipfs_node, world):
    built, sealer, alice, ring = world
    ds = built.path
    transport = RecordingTransport()
    keystore = Keystore(tmp_path / "ipns-keys")
    target = IpfsNodeTarget(
        KuboClient(ipfs_node.api_url, transport=transport),
        keystore,
        StateStore(tmp_path / "state"),
        tmp_dir=tmp_path,
        sealer=sealer,
    )
    outcome = publish_dataset(ds, target, sealer=sealer)
    assert outcome.state is not None and outcome.upload is not None
    envelope_cid = outcome.state.extra["keyEnvelope"]
    assert outcome.state.extra["encrypted"] is True

    client = KuboClient(ipfs_node.api_url)
    root = Cid.decode(outcome.state.locator)

    def get(cid: Cid) -> bytes:
        return client.call("block/get", [cid.encode()])

    # --- leak scan: every request body, every block of the root's DAG, the state -----------
    forbidden = _forbidden(ds, ring)
    sent = b"".join(transport.sent)
    assert len(sent) > 400_000
    dag_bytes = b"".join(get(c) for c in iter_dag(root, get))
    state_bytes = b"".join(p.read_bytes() for p in (tmp_path / "state").rglob("*") if p.is_file())
    for needle in forbidden:
        assert needle not in sent
        assert needle not in dag_bytes
        assert needle not in state_bytes

    # --- the record names the envelope; the envelope is pinned on its own ------------------
    name = IpnsName.from_public_key(public_key_bytes(keystore.load(outcome.plan.dataset_id)))
    record = read_node_record(client, name)
    assert record is not None and record.record.odf is not None
    assert record.record.odf.extra["keyEnvelope"] == envelope_cid
    assert client.has_pin(Cid.decode(envelope_cid))

    # --- a recipient reads everything back through the node --------------------------------
    envelope = decode_envelope(b"".join(read_file(Cid.decode(envelope_cid), get)))
    opened = open_envelope(envelope, alice)
    head_ct = b"".join(read_file(resolve_path(root, "refs/head", get), get))
    assert decrypt_bytes(head_ct, opened, "refs/head").decode() == multihash_to_str(built.head)
    checked = 0
    for folder in ("blocks", "data", "checkpoints"):
        for fname, cid in list_directory(resolve_path(root, folder, get), get).items():
            ct = b"".join(read_file(cid, get))
            path = f"{folder}/{fname}"
            plain = b"".join(decrypt_object([ct], opened, path, multihash_from_str(fname)))
            assert plain == (ds / folder / fname).read_bytes()
            checked += 1
    assert checked == len(outcome.plan.objects)

    # the gateway serves the same ciphertext; it does not decrypt under another path
    r = httpx.get(f"{ipfs_node.gateway_url}/ipfs/{root.encode()}/refs/head", timeout=30)
    assert r.status_code == 200 and r.content == head_ct
    with pytest.raises(DecryptionError):
        decrypt_bytes(head_ct, opened, "refs/headx")

    # --- state rebuilt from the node's record (encrypted refs/head): head from _odf --------
    (tmp_path / "state").rename(tmp_path / "state-lost")
    again = IpfsNodeTarget(
        KuboClient(ipfs_node.api_url),
        keystore,
        StateStore(tmp_path / "state"),
        tmp_dir=tmp_path,
        sealer=sealer,
    )
    view = again.inspect(outcome.plan.dataset_id, built.head)
    assert view.head == built.head


def test_cli_publish_encrypt_to_ipfs(tmp_path, ipfs_node, capsys, world):
    built, _sealer, _alice, _ring = world
    env = {
        "ODFWEB3_KEYSTORE": str(tmp_path / "keys"),
        "ODFWEB3_STATE_DIR": str(tmp_path / "state"),
        "HOME": str(tmp_path),
    }
    code = main(
        ["--json", "publish", str(built.path), "--to", f"ipfs:{ipfs_node.api_url}", "--encrypt"],
        env=env,
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out)
    assert result["keyEnvelope"]
    for needle in (DATA_MARKER, INFO_MARKER.encode()):
        assert needle.decode() not in out + err


def _add_identity_recipient(world_keys, did: str, recipient_keys) -> Sealer:
    """Add a fresh identity ``bob`` (in its own keystore) as a recipient; the new sealer."""
    bob = IdentityStore(recipient_keys)
    bob.create("bob")
    store = ContentKeyStore(world_keys)
    keys = store.load(did)
    envelope = add_recipient(keys.envelope, keys.ring, x25519_recipient(bob.public_key("bob")))
    store.save(DatasetKeys(keys.ring, envelope, keys.keks))
    return Sealer(keys.ring.current_key(), encode_envelope(envelope))


def test_recipient_pulls_and_verifies_ipns_through_cli(tmp_path, ipfs_node, capsys, world):
    """A keystore holding only bob's identity pulls ipns://NAME: the record's envelope opens."""
    built, _sealer, _alice, _ring = world
    did = str(built.keypair.dataset_id)
    bob_keys = tmp_path / "bob-keys"
    sealer = _add_identity_recipient(tmp_path / "keys", did, bob_keys)
    keystore = Keystore(tmp_path / "ipns-keys")
    target = IpfsNodeTarget(
        KuboClient(ipfs_node.api_url),
        keystore,
        StateStore(tmp_path / "state"),
        tmp_dir=tmp_path,
        sealer=sealer,
    )
    outcome = publish_dataset(built.path, target, sealer=sealer)
    assert outcome.state is not None and outcome.state.extra["encrypted"] is True
    name = IpnsName.from_public_key(public_key_bytes(keystore.load(outcome.plan.dataset_id)))
    ref = f"ipns://{name}"
    env = {
        "ODFWEB3_IPFS_API": ipfs_node.api_url,
        "ODFWEB3_IPFS_GATEWAY": ipfs_node.gateway_url,
        "ODFWEB3_KEYSTORE": str(bob_keys),
        "ODFWEB3_STATE_DIR": str(tmp_path / "bob-state"),
        "HOME": str(tmp_path),
    }
    assert [p.name for p in bob_keys.rglob("*") if p.is_file() and did in p.name] == []

    dest = tmp_path / "pulled"
    code = main(["--json", "pull", ref, str(dest)], env=env)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["head"] == multihash_to_str(built.head)
    for folder in ("blocks", "data", "checkpoints"):
        for p in (built.path / folder).iterdir():
            assert (dest / folder / p.name).read_bytes() == p.read_bytes()
    assert main(["validate", str(dest), "--deep"], env=env) == 0, capsys.readouterr()
    capsys.readouterr()

    code = main(["--json", "verify", str(built.path), "--against", ref, "--deep"], env=env)
    out, err = capsys.readouterr()
    assert code == 0, out + err
    report = json.loads(out)
    assert report["ok"] is True
    assert [r["status"] for r in report["replicas"]] == ["identical"]
    assert report["replicas"][0]["objectsChecked"] > 0  # --deep: data and checkpoints re-hashed

    # a keystore with no identity that opens the envelope gets a clear DecryptionError
    stranger = dict(env, ODFWEB3_KEYSTORE=str(tmp_path / "stranger-keys"))
    IdentityStore(tmp_path / "stranger-keys").create("eve")
    code = main(["pull", ref, str(tmp_path / "eve")], env=stranger)
    _out, err = capsys.readouterr()
    assert code != 0 and "no key" in err and not (tmp_path / "eve" / "blocks").exists()
