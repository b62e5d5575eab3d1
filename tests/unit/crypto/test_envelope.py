"""Key envelopes: several recipients, passphrases, rotation, JSON form, hostile input."""

from __future__ import annotations

import base64
import contextlib
import json

import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from hypothesis import given, settings
from hypothesis import strategies as st

from odfweb3.crypto.envelope import (
    add_recipient,
    decode_envelope,
    decode_public_key,
    encode_envelope,
    encode_public_key,
    fingerprint,
    new_envelope,
    open_envelope,
    passphrase_recipient,
    remove_recipient,
    rotate_envelope,
    x25519_recipient,
)
from odfweb3.crypto.keys import KeyRing
from odfweb3.crypto.segments import decrypt_bytes, encrypt_bytes
from odfweb3.errors import DecryptionError, FormatError, UsageError

DID = "did:odf:fed01" + "ab" * 32


def _pub(key: X25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


@pytest.fixture(scope="module")
def setup():
    people = [X25519PrivateKey.generate() for _ in range(3)]
    ring = KeyRing.new(DID)
    env = new_envelope(ring)
    for p in people:
        env = add_recipient(env, ring, x25519_recipient(_pub(p)))
    pw, kek = passphrase_recipient("correct horse battery staple")
    env = add_recipient(env, ring, pw, kek)
    return people, ring, env, kek


def test_three_recipients_and_a_passphrase_open_the_same_key(setup):
    people, ring, env, _ = setup
    env = decode_envelope(encode_envelope(env))  # through the published form
    for p in people:
        got = open_envelope(env, p)
        assert got.current_key() == ring.current_key()
    assert open_envelope(env, "correct horse battery staple").current_key() == ring.current_key()
    ct = encrypt_bytes(b"rows", ring.current_key(), "data/x")
    assert decrypt_bytes(ct, open_envelope(env, people[2]), "data/x") == b"rows"


def test_wrong_passphrase_and_stranger_fail(setup):
    _, _, env, _ = setup
    with pytest.raises(DecryptionError, match="wrong passphrase"):
        open_envelope(env, "correct horse battery stapler")
    with pytest.raises(DecryptionError, match="not a recipient"):
        open_envelope(env, X25519PrivateKey.generate())


def test_passphrase_is_unicode_normalized(setup):
    ring = KeyRing.new(DID)
    rec, kek = passphrase_recipient("caf\u00e9")
    env = add_recipient(new_envelope(ring), ring, rec, kek)
    assert open_envelope(env, "cafe\u0301").current_key() == ring.current_key()


def test_rotation_drops_removed_recipient_from_new_epochs_only(setup):
    people, ring, env, kek = setup
    alice, bob, carol = people
    env = remove_recipient(env, fingerprint(_pub(bob)))
    ring2 = ring.rotated()
    env2 = rotate_envelope(env, ring2, {"passphrase:default": kek})
    assert env2.current_epoch == 2
    assert open_envelope(env2, alice).epochs == [1, 2]
    assert open_envelope(env2, carol).current == 2
    assert open_envelope(env2, "correct horse battery staple").epochs == [1, 2]
    bobs = open_envelope(env2, bob)
    assert bobs.epochs == [1]  # keeps what he had, nothing new
    new_obj = encrypt_bytes(b"after", ring2.current_key(), "data/y")
    old_obj = encrypt_bytes(b"before", ring2.for_epoch(1), "data/x")
    assert decrypt_bytes(old_obj, bobs, "data/x") == b"before"
    with pytest.raises(DecryptionError, match="epoch 2"):
        decrypt_bytes(new_obj, bobs, "data/y")
    purged = remove_recipient(env2, fingerprint(_pub(bob)), purge=True)
    with pytest.raises(DecryptionError):
        open_envelope(purged, bob)


def test_rotation_needs_passphrase_kek(setup):
    _, ring, env, _ = setup
    with pytest.raises(UsageError, match="passphrase"):
        rotate_envelope(env, ring.rotated(), {})


def test_new_recipient_gets_all_epochs_and_readding_reactivates(setup):
    _, ring, env, kek = setup
    ring2 = ring.rotated()
    env2 = rotate_envelope(env, ring2, {"passphrase:default": kek})
    dave = X25519PrivateKey.generate()
    env3 = add_recipient(env2, ring2, x25519_recipient(_pub(dave)))
    assert open_envelope(env3, dave).epochs == [1, 2]
    only_new = add_recipient(env2, ring2, x25519_recipient(_pub(dave)), epochs=[2])
    assert open_envelope(only_new, dave).epochs == [2]


def test_json_form_has_no_key_material(setup):
    people, ring, env, kek = setup
    text = encode_envelope(env)
    doc = json.loads(text)
    assert doc["format"] == "odfweb3-key-envelope" and doc["version"] == 1
    assert {r["kind"] for r in doc["recipients"]} == {"x25519", "passphrase"}
    assert all(
        r["id"] == fingerprint(_pub(p)) for r, p in zip(doc["recipients"][:3], people, strict=True)
    )
    for secret in [k.secret for k in ring] + [kek]:
        for form in (secret.hex(), base64.urlsafe_b64encode(secret).decode().rstrip("=")):
            assert form.encode() not in text
            assert form not in repr(env)
    assert decode_envelope(text) == env
    assert encode_envelope(decode_envelope(text)) == text


def test_public_key_text_form():
    pub = _pub(X25519PrivateKey.generate())
    assert decode_public_key(encode_public_key(pub)) == pub
    with pytest.raises(FormatError):
        decode_public_key("ssh-ed25519 AAAA")


def test_tampered_wrapped_entry_does_not_open(setup):
    people, _, env, _ = setup
    doc = json.loads(encode_envelope(env))
    for w in doc["wrapped"]:
        if w["recipient"] == fingerprint(_pub(people[0])):
            w["epoch"] = 7  # moved to another epoch: the AAD no longer matches
    with pytest.raises(DecryptionError):
        open_envelope(decode_envelope(json.dumps(doc).encode()), people[0])


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(version=2),
        lambda d: d.update(format="x"),
        lambda d: d["recipients"][0].update(id="x25519:" + "0" * 32),
        lambda d: d["recipients"][3].update(n=2**14),
        lambda d: d["recipients"][3].update(n=3 * 2**15),
        lambda d: d["wrapped"][0].update(nonce="AAAA"),
        lambda d: d["wrapped"][0].update(recipient="nobody"),
        lambda d: d["recipients"].append(dict(d["recipients"][0])),
    ],
)
def test_bad_documents_are_format_errors(setup, mutate):
    doc = json.loads(encode_envelope(setup[2]))
    mutate(doc)
    with pytest.raises(FormatError):
        decode_envelope(json.dumps(doc).encode())


def test_weak_scrypt_refused_on_creation():
    with pytest.raises(UsageError):
        passphrase_recipient("pw", n=2**14)


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=12), c, max_size=6),
        max_leaves=30,
    )
)
def test_fuzz_decode_raises_only_format_error(doc):
    with contextlib.suppress(FormatError):
        decode_envelope(json.dumps(doc).encode())


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_fuzz_decode_bytes(data):
    with pytest.raises(FormatError):
        decode_envelope(data)
