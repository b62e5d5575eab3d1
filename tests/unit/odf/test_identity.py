import pytest
from multiformats import multibase

from odfweb3.errors import FormatError
from odfweb3.odf.identity import DatasetId, generate_keypair


def test_did_round_trip_and_binary_form():
    kp = generate_keypair(bytes(32))
    did = kp.dataset_id
    assert did.to_bytes()[:2] == b"\xed\x01"
    text = str(did)
    assert text.startswith("did:odf:fed01")
    assert DatasetId.parse(text) == did
    # Any final multibase reads back.
    assert DatasetId.parse("did:odf:" + multibase.encode(did.to_bytes(), "base58btc")) == did


def test_keypair_is_deterministic_and_secret_not_in_repr():
    a = generate_keypair(b"\x01" * 32)
    b = generate_keypair(b"\x01" * 32)
    assert a == b
    assert (b"\x01" * 32).hex() not in repr(a)
    assert generate_keypair().dataset_id != generate_keypair().dataset_id


@pytest.mark.parametrize("bad", ["did:odf:", "did:key:fed01", "did:odf:f1234", "did:odf:!!"])
def test_bad_ids(bad):
    with pytest.raises(FormatError):
        DatasetId.parse(bad)
