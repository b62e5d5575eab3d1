"""odfweb3.read.claims for encrypted publishes: decrypted and checked, or claims only."""

from __future__ import annotations

import pytest

from odfweb3.cli.main import main
from odfweb3.errors import ReplicaMismatch, ResolutionError
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.chain import walk_chain
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.read.claims import NameClaims, resolve_dataset, resolve_sealed
from odfweb3.read.sealed_replica import DecryptingReplica
from odfweb3_ipfs.read.car_replica import CarDirReplica, check_car_dir
from tests.support.encrypted import make_encrypted_world


@pytest.fixture
def sealed(tmp_path, monkeypatch, capsys):
    world = make_encrypted_world(tmp_path, monkeypatch, data_bytes=20_000, seed=41)
    env = {
        "ODFWEB3_KEYSTORE": str(world.keys_dir),
        "ODFWEB3_STATE_DIR": str(tmp_path / "state"),
        "HOME": str(tmp_path),
    }
    out = tmp_path / "out"
    code = main(["publish", str(world.ds), "--to", f"car:{out}", "--encrypt"], env=env)
    assert code == 0, capsys.readouterr().err
    return world, CarDirReplica(check_car_dir(out), f"car:{out}", out)


def test_key_holder_gets_the_full_check(sealed):
    world, replica = sealed
    head = DatasetReader.open(world.ds).head()
    claims = NameClaims(locator="/ipfs/x", dataset_id=world.did, head=head, sequence=2)
    got = resolve_dataset(
        "ipns://x", DecryptingReplica(replica, world.ring), claims, encrypted=True
    )
    assert (got.dataset_id, got.head, got.encrypted, got.content_checked) == (
        world.did,
        head,
        True,
        True,
    )
    assert got.blocks == len(list(walk_chain(DatasetReader.open(world.ds))))
    doc = got.to_json()
    assert (doc["encrypted"], doc["contentChecked"]) == (True, True)
    assert "encrypted, decrypted and checked" in got.describe()
    # the decrypted chain's Seed is still checked against the record's claim
    other = create_root_dataset(world.ds.parent / "other", blocks=1, data_bytes=100, seed=5)
    wrong = NameClaims(locator="/ipfs/x", dataset_id=str(other.keypair.dataset_id))
    with pytest.raises(ReplicaMismatch, match="the chain's Seed is"):
        resolve_dataset("ipns://x", DecryptingReplica(replica, world.ring), wrong, encrypted=True)


def test_without_keys_the_signed_claims_are_reported_unchecked(sealed):
    world, _replica = sealed
    head = DatasetReader.open(world.ds).head()
    claims = NameClaims(
        locator="/ipfs/x", dataset_id=world.did, head=head, sequence=7, notes=("record ok",)
    )
    got = resolve_sealed(
        "ipns://x", claims, envelope_dataset_id=world.did, reason="no keys offered"
    )
    assert (got.dataset_id, got.head, got.sequence, got.blocks) == (world.did, head, 7, None)
    assert (got.encrypted, got.content_checked) == (True, False)
    assert got.notes[0] == "record ok"
    assert "no keys offered" in got.notes[-1] and "not walked" in got.notes[-1]
    assert "signed record's claims" in got.notes[-1]
    doc = got.to_json()
    assert doc["head"] == multihash_to_str(head) and doc["blocks"] is None
    assert (doc["encrypted"], doc["contentChecked"]) == (True, False)
    text = got.describe()
    assert "NOT checked" in text and multihash_to_str(head) in text and "blocks" not in text


def test_without_a_record_the_envelope_names_the_dataset(sealed):
    world, _replica = sealed
    got = resolve_sealed(
        "ipfs://x", NameClaims("/ipfs/x"), envelope_dataset_id=world.did, reason="no key"
    )
    assert (got.dataset_id, got.head, got.sequence) == (world.did, None, None)
    assert "key envelope's claims" in got.notes[-1]
    assert got.to_json()["head"] is None and "unknown" in got.describe()
    with pytest.raises(ResolutionError, match="--key-envelope"):
        resolve_sealed("ipfs://x", NameClaims("/ipfs/x"), envelope_dataset_id=None, reason="-")


def test_envelope_record_and_request_must_agree(sealed, tmp_path):
    world, _replica = sealed
    other = str(
        create_root_dataset(tmp_path / "o", blocks=1, data_bytes=10, seed=6).keypair.dataset_id
    )
    claims = NameClaims("/ipfs/x", dataset_id=world.did)
    with pytest.raises(ReplicaMismatch, match="the key envelope is for dataset " + other):
        resolve_sealed("ipns://x", claims, envelope_dataset_id=other, reason="-")
    with pytest.raises(ReplicaMismatch, match="asked for dataset " + other):
        resolve_sealed(
            "did", claims, envelope_dataset_id=world.did, reason="-", expect_dataset_id=other
        )
    ok = resolve_sealed(
        "did", claims, envelope_dataset_id=None, reason="-", expect_dataset_id=world.did
    )
    assert ok.dataset_id == world.did
