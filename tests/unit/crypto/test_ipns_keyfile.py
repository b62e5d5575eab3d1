"""IPNS key files (keys export / import): every form round-trips, the encrypted one binds its
header, a wrong passphrase is one DecryptionError, and the cleartext forms are Kubo's bytes."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    Encoding,
    PrivateFormat,
)

from odfweb3.crypto.ipns_keyfile import (
    ENCRYPTED,
    FORMATS,
    LIBP2P_CLEARTEXT,
    PEM_CLEARTEXT,
    decode_key_file,
    encode_key_file,
    is_key_file,
)
from odfweb3.errors import DecryptionError, FormatError, UsageError
from odfweb3_ipfs.formats.libp2p_keys import private_key_from_protobuf, private_key_to_protobuf

DID = "did:odf:fed01" + "ab" * 32
SEED = bytes(range(32))
KEY = Ed25519PrivateKey.from_private_bytes(SEED)
N = 2**15  # the lowest work factor read: fast tests


def _pub(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes_raw()


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_form_round_trips(fmt):
    data = encode_key_file(KEY, fmt, dataset_id=DID, passphrase="correct horse", n=N)
    assert is_key_file(data)
    got = decode_key_file(data, passphrase=lambda: "correct horse")
    assert _pub(got.key) == _pub(KEY) and got.format == fmt
    assert got.dataset_id == (DID if fmt == ENCRYPTED else None)


def test_cleartext_forms_are_the_bytes_kubo_reads():
    # libp2p-protobuf-cleartext: the PrivateKey protobuf (the adapter's own encoder agrees).
    assert encode_key_file(KEY, LIBP2P_CLEARTEXT, dataset_id=DID) == private_key_to_protobuf(KEY)
    assert _pub(private_key_from_protobuf(encode_key_file(KEY, LIBP2P_CLEARTEXT, dataset_id=DID)))
    # pem-pkcs8-cleartext: RFC 8410 PKCS#8 of the seed (its DER ends with the 32 seed bytes).
    pem = encode_key_file(KEY, PEM_CLEARTEXT, dataset_id=DID)
    assert pem.startswith(b"-----BEGIN PRIVATE KEY-----\n")
    assert b"MC4CAQAwBQYDK2VwBCIEIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f" in pem


def test_encrypted_form_golden_vector():
    data = encode_key_file(
        KEY, ENCRYPTED, dataset_id=DID, passphrase="pw", n=N, salt=b"s" * 16, nonce=b"n" * 12
    )
    doc = json.loads(data)
    assert doc["kdf"] == {
        "name": "scrypt",
        "n": N,
        "r": 8,
        "p": 1,
        "salt": "c3Nzc3Nzc3Nzc3Nzc3Nzcw",
    }
    assert doc["publicKey"] == "A6EHv_POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg"
    # Pinned: a change of the KDF, the cipher or the associated data changes these bytes.
    assert hashlib.sha256(data).hexdigest() == GOLDEN_SHA256
    assert _pub(decode_key_file(data, passphrase=lambda: "pw").key) == _pub(KEY)
    # An independent reading: the standard library's scrypt, AES-GCM over the protobuf, the
    # header (everything but the ciphertext, canonical JSON) as associated data.
    kek = hashlib.scrypt(b"pw", salt=b"s" * 16, n=N, r=8, p=1, dklen=32, maxmem=64 << 20)
    head = {k: v for k, v in doc.items() if k != "ciphertext"}
    aad = json.dumps(head, sort_keys=True, separators=(",", ":")).encode()
    sealed = base64.urlsafe_b64decode(doc["ciphertext"] + "==")
    assert AESGCM(kek).decrypt(b"n" * 12, sealed, aad) == private_key_to_protobuf(KEY)


GOLDEN_SHA256 = "b112076eb3b8f67d4f4074d9446aac6a194c451c23e7373953479a5b4eee43ca"


def test_wrong_passphrase_is_one_decryption_error():
    data = encode_key_file(KEY, ENCRYPTED, dataset_id=DID, passphrase="right", n=N)
    with pytest.raises(DecryptionError, match="wrong passphrase") as info:
        decode_key_file(data, passphrase=lambda: "wrong", where="k.json")
    assert info.value.exit_code == 2 and "\n" not in str(info.value)


@pytest.mark.parametrize("field", ["datasetId", "publicKey"])
def test_the_header_is_bound_to_the_ciphertext(field):
    doc = json.loads(encode_key_file(KEY, ENCRYPTED, dataset_id=DID, passphrase="pw", n=N))
    other = Ed25519PrivateKey.generate().public_key().public_bytes_raw()
    doc[field] = (
        "did:odf:fed01" + "cd" * 32
        if field == "datasetId"
        else (
            json.loads(
                encode_key_file(
                    Ed25519PrivateKey.from_private_bytes(other),
                    ENCRYPTED,
                    dataset_id=DID,
                    passphrase="pw",
                    n=N,
                )
            )["publicKey"]
        )
    )
    with pytest.raises(DecryptionError):
        decode_key_file(json.dumps(doc).encode(), passphrase=lambda: "pw")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kdf": {"name": "scrypt", "n": 2**30, "r": 8, "p": 1, "salt": "AAAA"}}, "kdf.n"),
        ({"kdf": {"name": "pbkdf2"}}, "only scrypt"),
        ({"version": 2}, "version 1"),
        ({"nonce": "!!"}, "nonce"),
        ({"ciphertext": 7}, "base64url"),
    ],
)
def test_hostile_encrypted_files_are_refused_before_any_scrypt(change, message):
    doc = json.loads(encode_key_file(KEY, ENCRYPTED, dataset_id=DID, passphrase="pw", n=N))
    doc.update(change)

    def never() -> str:
        raise AssertionError("the passphrase was asked for a file refused on its face")

    with pytest.raises(FormatError, match=message):
        decode_key_file(json.dumps(doc).encode(), passphrase=never)


def test_openssl_style_encrypted_pkcs8_is_read_with_its_passphrase():
    pem = KEY.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(b"pw"))
    assert _pub(decode_key_file(pem, passphrase=lambda: "pw").key) == _pub(KEY)
    with pytest.raises(DecryptionError, match="wrong passphrase"):
        decode_key_file(pem, passphrase=lambda: "nope")


def test_not_a_key_file():
    assert not is_key_file(b'{"format": "odfweb3-key-envelope"}')
    with pytest.raises(FormatError, match="not an IPNS key file"):
        decode_key_file(b"hello")
    with pytest.raises(FormatError, match="does not match"):
        decode_key_file(b"\x08\x01\x12\x40" + b"\x00" * 64)
    with pytest.raises(UsageError, match="passphrase"):
        encode_key_file(KEY, ENCRYPTED, dataset_id=DID)
