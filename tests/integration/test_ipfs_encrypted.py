"""Encrypted publishing to the live IPFS node (docs/design.md, "Encryption").

The dataset's data files and SetInfo carry marker strings. Every request body sent to
the node goes through a recording transport (a real httpx transport underneath), and
afterwards every block of the published root's DAG is read back from the node: no
marker, no slice of a plaintext object and no key bytes may appear in either. A
recipient then decrypts every object read through the node and checks its ODF hash.
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
from odfweb3.crypto.keystore import Keystore
from odfweb3.crypto.sealer import Sealer
from odfweb3.crypto.segments import decrypt_bytes, decrypt_object
from odfweb3.errors import DecryptionError
from odfweb3.odf import builder
from odfweb3.odf.chain import walk_chain
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_from_str, multihash_to_str
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import StateStore
from odfweb3_ipfs.client.kubo import KuboClient
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.formats.libp2p_keys import IpnsName, public_key_bytes
from odfweb3_ipfs.formats.unixfs_reader import iter_dag, list_directory, read_file, resolve_path
from odfweb3_ipfs.publish.node_target import IpfsNodeTarget, read_node_record
from tests.support.encrypted import (
    DATA_MARKER,
    INFO_MARKER,
    EncryptedWorld,
    make_encrypted_world,
)


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
def encrypted(tmp_path, monkeypatch) -> EncryptedWorld:
    """The marker dataset (tests/support/encrypted.py), its key and recipient alice."""
    return make_encrypted_world(tmp_path, monkeypatch, data_bytes=400_000, seed=9)


@pytest.fixture
def world(encrypted):
    return encrypted.built, encrypted.sealer, encrypted.alice, encrypted.ring


@pytest.fixture
def world_fresh_key(tmp_path, monkeypatch):
    """Another dataset (another seed, so another did:odf) for a publish under a fresh key of
    the test's own keystore: ``world``'s dataset is published on the session node under its
    own name by another test, and a keystore without that name's key is refused there."""
    w = make_encrypted_world(tmp_path, monkeypatch, data_bytes=400_000, seed=10)
    return w.built, w.sealer, w.alice, w.ring


def test_encrypted_publish_to_node_leaks_nothing_and_decrypts(
    tmp_path, ipfs_node, world, encrypted
):
    built, sealer, alice, _ring = world
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
    forbidden = encrypted.forbidden()
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

    # status shows the envelope's CID, so ipfs://CID readers can find --key-envelope
    assert main(["--json", "status", str(built.path), "--offline"], env=env) == 0
    (row,) = json.loads(capsys.readouterr().out)["targets"]
    assert row["keyEnvelope"] == result["keyEnvelope"]
    assert main(["status", str(built.path), "--offline"], env=env) == 0
    assert f"envelope   {result['keyEnvelope']}" in capsys.readouterr().out


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


# --- issue 7: every reference form of an encrypted publish (resolve, pull, verify) ----------


def _publish_encrypted(tmp_path, ipfs_node, built, sealer, *, dataset_key=False):
    """Publish encrypted; with ``dataset_key`` the dataset's own key signs the IPNS record
    (so did:odf finds it), else a fresh key of this test's own keystore."""
    did = str(built.keypair.dataset_id)
    keystore = Keystore(tmp_path / "ipns-keys")
    if dataset_key:
        keystore.store(did, built.keypair.signing_key())
    target = IpfsNodeTarget(
        KuboClient(ipfs_node.api_url),
        keystore,
        StateStore(tmp_path / "publisher-state"),
        tmp_dir=tmp_path,
        sealer=sealer,
    )
    outcome = publish_dataset(built.path, target, sealer=sealer)
    assert outcome.state is not None and outcome.upload is not None
    name = IpnsName.from_public_key(public_key_bytes(keystore.load(did)))
    return outcome, name


def _chain_length(path) -> int:
    return len(list(walk_chain(DatasetReader.open(path))))


def _reader_env(tmp_path, ipfs_node, keys_dir):
    return {
        "ODFWEB3_IPFS_API": ipfs_node.api_url,
        "ODFWEB3_IPFS_GATEWAY": ipfs_node.gateway_url,
        "ODFWEB3_KEYSTORE": str(keys_dir),
        "ODFWEB3_STATE_DIR": str(tmp_path / f"state-{keys_dir.name}"),
        "HOME": str(tmp_path),
    }


def _resolve_json(capsys, env, *args):
    code = main(["--json", "resolve", *args], env=env)
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


def test_resolve_encrypted_ipns_and_did_with_and_without_keys(tmp_path, ipfs_node, capsys, world):
    built, sealer, _alice, _ring = world
    did = str(built.keypair.dataset_id)
    outcome, name = _publish_encrypted(tmp_path, ipfs_node, built, sealer, dataset_key=True)
    head = multihash_to_str(built.head)
    holder = _reader_env(tmp_path, ipfs_node, tmp_path / "keys")  # holds the content key
    IdentityStore(tmp_path / "stranger-keys").create("eve")
    stranger = _reader_env(tmp_path, ipfs_node, tmp_path / "stranger-keys")

    for ref, where in ((f"ipns://{name}", f"ipns://{name}"), (did, f"ipns://{name}")):
        # a key holder: decrypted, chain walked to the Seed, Seed's ID == record's ID
        code, doc, err = _resolve_json(capsys, holder, ref)
        assert code == 0, err
        (r,) = doc["results"]
        assert (r["ref"], r["datasetId"], r["head"]) == (where, did, head)
        assert (r["encrypted"], r["contentChecked"], r["blocks"]) == (
            True,
            True,
            _chain_length(built.path),
        )
        assert r["sequence"] == 0 and r["expires"]
        assert r["locator"] == f"/ipfs/{outcome.upload.locator}"

        # no key: the signed record's claims, marked unchecked; exit 0 with a warning
        code, doc, err = _resolve_json(capsys, stranger, ref)
        assert code == 0, err
        (r,) = doc["results"]
        assert (r["datasetId"], r["head"], r["sequence"]) == (did, head, 0)
        assert (r["encrypted"], r["contentChecked"], r["blocks"]) == (True, False, None)
        assert any("not decrypted" in n and "not walked" in n for n in r["notes"])
        assert "content not checked" in err
    # the human form says it too
    assert main(["resolve", f"ipns://{name}"], env=stranger) == 0
    out, _ = capsys.readouterr()
    assert "content:  encrypted, NOT checked" in out and head in out


def test_pull_verify_resolve_ipfs_cid_with_key_envelope(
    tmp_path, ipfs_node, capsys, world_fresh_key
):
    built, sealer, _alice, _ring = world_fresh_key
    did = str(built.keypair.dataset_id)
    outcome, _name = _publish_encrypted(tmp_path, ipfs_node, built, sealer)
    envelope_cid = outcome.state.extra["keyEnvelope"]
    ref = f"ipfs://{outcome.upload.locator}"
    holder = _reader_env(tmp_path, ipfs_node, tmp_path / "keys")
    envelope_file = tmp_path / "dataset.envelope"
    envelope_file.write_bytes(sealer.envelope)

    # no record, no envelope: one clear line naming --key-envelope, nothing written
    code = main(["pull", ref, str(tmp_path / "nokey")], env=holder)
    _out, err = capsys.readouterr()
    assert code != 0 and "--key-envelope" in err and "encrypted" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "nokey" / "refs" / "head").exists()
    code, _doc, err = _resolve_json(capsys, holder, ref)
    assert code != 0 and "--key-envelope" in err

    # with the envelope as a file, and as ipfs://CID of the published envelope
    for n, src in enumerate((str(envelope_file), f"ipfs://{envelope_cid}")):
        dest = tmp_path / f"pulled-{n}"
        code = main(["--json", "pull", ref, str(dest), "--key-envelope", src], env=holder)
        out, err = capsys.readouterr()
        assert code == 0, err
        assert json.loads(out)["head"] == multihash_to_str(built.head)
        for folder in ("blocks", "data", "checkpoints"):
            for p in (built.path / folder).iterdir():
                assert (dest / folder / p.name).read_bytes() == p.read_bytes()
    assert main(["validate", str(tmp_path / "pulled-1"), "--deep"], env=holder) == 0
    capsys.readouterr()

    code = main(
        [
            *("--json", "verify", str(built.path), "--against", ref, "--deep"),
            *("--key-envelope", str(envelope_file)),
        ],
        env=holder,
    )
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert [r["status"] for r in json.loads(out)["replicas"]] == ["identical"]

    code, doc, err = _resolve_json(capsys, holder, ref, "--key-envelope", str(envelope_file))
    assert code == 0, err
    (r,) = doc["results"]
    assert (r["datasetId"], r["head"]) == (did, multihash_to_str(built.head))
    assert r["blocks"] == _chain_length(built.path)
    assert (r["encrypted"], r["contentChecked"], r["sequence"]) == (True, True, None)

    # the envelope but no key: the dataset ID the envelope names, head unknown, unchecked
    IdentityStore(tmp_path / "stranger-keys").create("eve")
    stranger = _reader_env(tmp_path, ipfs_node, tmp_path / "stranger-keys")
    code, doc, err = _resolve_json(capsys, stranger, ref, "--key-envelope", str(envelope_file))
    assert code == 0, err
    (r,) = doc["results"]
    assert (r["datasetId"], r["head"], r["contentChecked"]) == (did, None, False)
    code = main(
        ["pull", ref, str(tmp_path / "eve"), "--key-envelope", str(envelope_file)], env=stranger
    )
    _out, err = capsys.readouterr()
    assert code != 0 and "no key" in err and not (tmp_path / "eve" / "refs").exists()


def test_wrong_key_envelope_is_a_clear_error(tmp_path, ipfs_node, capsys, world_fresh_key):
    built, sealer, _alice, _ring = world_fresh_key
    outcome, name = _publish_encrypted(tmp_path, ipfs_node, built, sealer)
    ref = f"ipfs://{outcome.upload.locator}"
    # another dataset whose keys this keystore also holds
    other = builder.create_root_dataset(tmp_path / "other", blocks=2, data_bytes=1000, seed=3)
    other_did = str(other.keypair.dataset_id)
    other_keys = ContentKeyStore(tmp_path / "keys").load_or_create(other_did)
    wrong = tmp_path / "other.envelope"
    wrong.write_bytes(encode_envelope(other_keys.envelope))
    holder = _reader_env(tmp_path, ipfs_node, tmp_path / "keys")

    code = main(["pull", ref, str(tmp_path / "w1"), "--key-envelope", str(wrong)], env=holder)
    _out, err = capsys.readouterr()
    assert code != 0 and "does not decrypt" in err and "another dataset" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "w1" / "refs").exists()

    # with a signed record naming the dataset, the mismatch is seen before any decryption
    code = main(
        ["pull", f"ipns://{name}", str(tmp_path / "w2"), "--key-envelope", str(wrong)],
        env=holder,
    )
    _out, err = capsys.readouterr()
    assert code != 0 and other_did in err and "signed record" in err
    code, _doc, err = _resolve_json(capsys, holder, f"ipns://{name}", "--key-envelope", str(wrong))
    assert code != 0 and other_did in err
