"""Cross-check IPNS records with an independent implementation: the npm ``ipns`` package.

Runs ``node tests/nodes/oracles/ipns_oracle.mjs`` (cwd tests/nodes/oracles). The
node_modules come from ``make nodes`` (part of ``make test``); when they are
missing these tests fail, never skip.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from odfweb3.errors import SignatureError
from odfweb3_ipfs.formats.ipns import (
    OdfExtension,
    RecordExpired,
    create_record,
    encode_record,
    name_of_private_key,
    parse_validity,
    verify_record,
)
from odfweb3_ipfs.formats.libp2p_keys import (
    private_key_to_protobuf,
    public_key_bytes,
    public_key_to_protobuf,
)

ORACLES = Path(__file__).resolve().parents[1] / "nodes" / "oracles"
VALUE = "/ipfs/bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi"
DATASET_ID = "did:odf:fed01" + "ab" * 32
HEAD = "f1620" + "11" * 32


def _oracle(*args: str) -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not on PATH: install Node 20 and run `make nodes`")
    if not (ORACLES / "node_modules" / "ipns").is_dir():
        pytest.fail(f"{ORACLES}/node_modules/ipns is missing: `make nodes` was not run")
    done = subprocess.run(
        [node, "ipns_oracle.mjs", *args],
        cwd=ORACLES,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"oracle failed: {done.stderr.strip()[:2000]}"
    return done.stdout.strip()


def _js_validate(name: str, data: bytes, tmp_path: Path) -> dict[str, object]:
    path = tmp_path / "record.ipns-record"
    path.write_bytes(data)
    result: dict[str, object] = json.loads(_oracle("validate", name, str(path)))
    return result


def test_js_ipns_validates_our_record_with_odf_extension(tmp_path):
    key = Ed25519PrivateKey.generate()
    ext = OdfExtension(DATASET_ID, HEAD, None, {"note": "x"})
    record = create_record(key, VALUE, 12, extensions={"_odf": ext})
    name = str(name_of_private_key(key))
    result = _js_validate(name, encode_record(record), tmp_path)
    assert result["ok"] is True, result
    assert result["value"] == VALUE
    assert result["sequence"] == "12"
    assert result["ttl"] == str(record.ttl_ns)
    assert result["validity"] == record.validity.decode()
    assert result["hasV1"] is True
    assert result["extensions"] == {
        "_odf": {"datasetId": DATASET_ID, "head": HEAD, "prevHead": None, "note": "x"}
    }


def test_js_ipns_validates_our_v2_only_record(tmp_path):
    key = Ed25519PrivateKey.generate()
    record = create_record(key, VALUE, 0, v1_compatible=False)
    result = _js_validate(str(name_of_private_key(key)), encode_record(record), tmp_path)
    assert result["ok"] is True and result["hasV1"] is False, result


def test_js_ipns_rejects_what_we_reject(tmp_path):
    key = Ed25519PrivateKey.generate()
    name = str(name_of_private_key(key))
    record = create_record(key, VALUE, 3)
    data = encode_record(record)
    tampered = data.replace(b"hSequence\x03", b"hSequence\x04")
    assert tampered != data
    with pytest.raises(SignatureError):
        verify_record(tampered, name)
    assert _js_validate(name, tampered, tmp_path)["ok"] is False
    other = str(name_of_private_key(Ed25519PrivateKey.generate()))
    with pytest.raises(SignatureError):
        verify_record(data, other)
    assert _js_validate(other, data, tmp_path)["ok"] is False
    past = create_record(key, VALUE, 4, validity=datetime(2001, 1, 1, tzinfo=UTC))
    with pytest.raises(RecordExpired):
        verify_record(encode_record(past), name)
    expired = _js_validate(name, encode_record(past), tmp_path)
    assert expired["ok"] is False and "expired" in str(expired["message"]).lower()


@pytest.mark.parametrize("flavour", ["v1", "v2"])
def test_we_verify_records_js_ipns_writes(flavour):
    key = Ed25519PrivateKey.generate()
    hexed = _oracle(
        "create", private_key_to_protobuf(key).hex(), VALUE, "42", "3600000", "7000", flavour
    )
    record = verify_record(bytes.fromhex(hexed), name_of_private_key(key))
    assert record.value_text == VALUE
    assert record.sequence == 42
    assert record.ttl_ns == 7000
    remaining = record.expires_at - datetime.now(UTC)
    assert timedelta(minutes=50) < remaining <= timedelta(hours=1)
    assert (record.entry.signature_v1 is not None) == (flavour == "v1")


def test_same_inputs_give_the_same_bytes_as_js_ipns():
    key = Ed25519PrivateKey.generate()
    eol = "2031-05-06T07:08:09.987654321Z"
    hexed = _oracle("create-at", private_key_to_protobuf(key).hex(), VALUE, "9", eol, "123456789")
    ours = create_record(key, VALUE, 9, parse_validity(eol.encode()), 123456789)
    assert encode_record(ours).hex() == hexed


def test_names_and_peer_ids_match_libp2p_peer_id():
    for _ in range(3):
        key = Ed25519PrivateKey.generate()
        raw = public_key_bytes(key)
        js = json.loads(_oracle("name", public_key_to_protobuf(raw).hex()))
        name = name_of_private_key(key)
        assert js == {"name": str(name), "peerId": name.peer_id}
