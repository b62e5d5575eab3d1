"""Identity and content-key files: 0600/0700, never replaced, no secrets in reprs."""

from __future__ import annotations

import base64
import os
import stat

import pytest

from odfweb3.crypto.envelope import (
    add_recipient,
    fingerprint,
    open_envelope,
    passphrase_recipient,
    x25519_recipient,
)
from odfweb3.crypto.keyfiles import (
    ContentKeyStore,
    DatasetKeys,
    IdentityStore,
    decode_keyring,
    encode_keyring,
)
from odfweb3.crypto.keystore import Keystore
from odfweb3.errors import ConflictError, CryptoError, FormatError, NotFound, UsageError

DID = "did:odf:fed01" + "ab" * 32


@pytest.fixture
def keydir(tmp_path):
    old = os.umask(0o022)
    try:
        yield tmp_path / "keys"
    finally:
        os.umask(old)


def _mode(p):
    return stat.S_IMODE(p.stat().st_mode)


def test_identity_files_private_and_never_replaced(keydir):
    ids = IdentityStore(keydir)
    key = ids.create("alice")
    path = ids.path_for("alice")
    assert _mode(path) == 0o600 and _mode(path.parent) == 0o700 and _mode(keydir) == 0o700
    assert ids.public_key("alice") == ids.load("alice").public_key().public_bytes_raw()
    assert ids.load("alice").private_bytes_raw() == key.private_bytes_raw()
    with pytest.raises(ConflictError):
        ids.create("alice")
    assert ids.list() == ["alice"]
    with pytest.raises(UsageError):
        ids.path_for("../evil")
    with pytest.raises(NotFound):
        ids.load("bob")
    os.chmod(path, 0o644)
    with pytest.raises(CryptoError, match="group or others"):
        ids.load("alice")


def test_content_keys_round_trip_and_modes(keydir):
    store = ContentKeyStore(keydir)
    keys = store.load_or_create(DID)
    assert keys.ring.current == 1 and not keys.envelope.recipients
    ids = IdentityStore(keydir)
    alice = ids.create("alice")
    rec, kek = passphrase_recipient("pass phrase")
    env = add_recipient(keys.envelope, keys.ring, x25519_recipient(ids.public_key("alice")))
    env = add_recipient(env, keys.ring, rec, kek)
    store.save(DatasetKeys(keys.ring, env, {rec.id: kek}))
    path = store.path_for(DID)
    assert _mode(path) == 0o600 and _mode(path.parent) == 0o700
    loaded = store.load(DID)
    assert loaded.ring.current_key() == keys.ring.current_key()
    assert loaded.keks == {rec.id: kek} and loaded.envelope == env
    assert open_envelope(loaded.envelope, alice).current_key() == keys.ring.current_key()
    assert store.list() == [DID]
    # the Ed25519 keystore sharing the directory still sees only its own keys
    Keystore(keydir).generate(DID)
    assert Keystore(keydir).list() == [DID]
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp files


def test_load_or_create_keeps_existing_keys(keydir):
    store = ContentKeyStore(keydir)
    first = store.load_or_create(DID)
    assert store.load_or_create(DID).ring.current_key() == first.ring.current_key()


def test_reprs_and_errors_hold_no_key_material(keydir):
    store = ContentKeyStore(keydir)
    keys = store.load_or_create(DID)
    rec, kek = passphrase_recipient("pw pw pw")
    keys = DatasetKeys(keys.ring, add_recipient(keys.envelope, keys.ring, rec, kek), {rec.id: kek})
    texts = [repr(keys), repr(keys.ring), repr(keys.envelope), repr(store), str(keys.ring.keys)]
    texts.append(repr(keys.ring.current_key()))
    broken = encode_keyring(keys).replace(b'"version": 1', b'"version": 9')
    with pytest.raises(FormatError) as exc:
        decode_keyring(broken)
    texts.append(str(exc.value))
    for secret in (keys.ring.current_key().secret, kek):
        b64 = base64.urlsafe_b64encode(secret).decode().rstrip("=")
        for text in texts:
            assert secret.hex() not in text and b64 not in text and str(secret) not in text
    assert fingerprint(b"\x00" * 32).startswith("x25519:")


def test_symlinked_key_file_refused(keydir, tmp_path):
    store = ContentKeyStore(keydir)
    store.load_or_create(DID)
    path = store.path_for(DID)
    target = tmp_path / "elsewhere.json"
    target.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(target)
    with pytest.raises(CryptoError):
        store.load(DID)
