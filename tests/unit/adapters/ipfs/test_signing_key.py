"""Which key signs (adapters/odfweb3_ipfs/publish/signing_key.py): the pure decision, and the
names a car:DIR is published under (records checked, hostile ones naming nothing)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from odfweb3.crypto.keystore import Keystore
from odfweb3.errors import SigningKeyMissing
from odfweb3_ipfs.formats.ipns import OdfExtension, create_record, encode_record
from odfweb3_ipfs.formats.libp2p_keys import IpnsName, public_key_bytes
from odfweb3_ipfs.publish.signing_key import KeyChooser, KnownName, names_in_car_dir, plan_key

DID = "did:odf:fed01" + "ab" * 32
HEAD = "f1620" + "cd" * 32


def _name(key: Ed25519PrivateKey) -> IpnsName:
    return IpnsName.from_public_key(public_key_bytes(key))


A, B, C = (_name(Ed25519PrivateKey.generate()) for _ in range(3))


@pytest.mark.parametrize(
    ("target", "others", "held", "expected"),
    [
        ([], [], [], ("create", None)),
        ([], [], [A], ("use", A)),
        ([A], [], [A], ("use", A)),
        ([A], [], [B, A], ("use", A)),  # the target's name, not the dataset's first key
        ([A], [], [B], ("refuse", A)),  # a key of the dataset is here, but not the name's
        ([A], [], [], ("refuse", A)),
        ([], [C], [], ("refuse", C)),  # known elsewhere, no key at all: no second name
        ([], [C], [B], ("use", B)),  # this machine has a key: a new target gets it
        ([C, A], [], [A], ("use", A)),
    ],
)
def test_plan_key(target, others, held, expected):
    plan = plan_key([KnownName(n, "t") for n in target], [KnownName(n, "o") for n in others], held)
    assert (plan.action, plan.name) == expected


def _record_file(out_dir, key, did=DID, *, forge=False):
    now = datetime.now(UTC)
    ext = OdfExtension(dataset_id=did, head=HEAD)
    record = create_record(
        key, "/ipfs/bafkqaaa", 0, now + timedelta(hours=1), extensions={"_odf": ext}, now=now
    )
    raw = bytearray(encode_record(record))
    if forge:
        raw[-5] ^= 1
    (out_dir / f"{_name(key)}.ipns-record").write_bytes(bytes(raw))


def test_names_in_car_dir_are_verified_records_of_the_dataset(tmp_path):
    ours, theirs, forged = (Ed25519PrivateKey.generate() for _ in range(3))
    _record_file(tmp_path, ours)
    _record_file(tmp_path, theirs, did="did:odf:fed01" + "ef" * 32)
    _record_file(tmp_path, forged, forge=True)
    (tmp_path / "garbage.ipns-record").write_bytes(b"\x00" * 50)
    assert [k.name for k in names_in_car_dir(tmp_path, DID)] == [_name(ours)]


def test_the_chooser_refuses_before_creating_and_announces_a_created_key_once(tmp_path):
    said: list[str] = []
    keystore = Keystore(tmp_path / "keys")
    chooser = KeyChooser(keystore, "car:/x", announce=said.append)
    chooser.decide(DID, [KnownName(A, "car:/x/publish.json")])
    with pytest.raises(SigningKeyMissing) as info:
        chooser.check(DID)  # what upload does first
    assert info.value.exit_code == 77 and str(A) in str(info.value)
    with pytest.raises(SigningKeyMissing):
        chooser.key(DID)
    assert keystore.keys_of(DID) == []
    chooser.decide(DID, [])
    key = chooser.key(DID)
    assert chooser.key(DID) is not None and len(said) == 1
    assert str(_name(key)) in said[0] and str(keystore.path_for(DID)) in said[0]
    again = KeyChooser(keystore, "car:/y", announce=said.append)
    again.decide(DID, [])
    assert public_key_bytes(again.key(DID)) == public_key_bytes(key) and len(said) == 1
