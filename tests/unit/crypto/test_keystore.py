"""Keystore: one Ed25519 key per dataset, private files, never replaced."""

from __future__ import annotations

import os
import stat

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)

from odfweb3.crypto.keystore import Keystore
from odfweb3.errors import ConflictError, CryptoError, FormatError, NotFound, UsageError
from odfweb3_ipfs.formats.libp2p_keys import private_key_from_protobuf

DATASET = "did:odf:fed01" + "ab" * 32
OTHER = "did:odf:fed01" + "cd" * 32


def _pub(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def _seed(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())


@pytest.fixture
def store(tmp_path):
    old = os.umask(0o022)  # a typical umask must not loosen the modes we ask for
    try:
        yield Keystore(tmp_path / "keys")
    finally:
        os.umask(old)


def test_generate_creates_private_files_and_loads_back(store):
    key = store.generate(DATASET)
    path = store.path_for(DATASET)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.root.stat().st_mode) == 0o700
    assert _pub(store.load(DATASET)) == _pub(key)
    assert store.has(DATASET) and not store.has(OTHER)
    assert [p.name for p in store.root.iterdir()] == [path.name]  # no temp files left


def test_never_replaces_an_existing_key(store):
    first = store.generate(DATASET)
    with pytest.raises(ConflictError):
        store.generate(DATASET)
    with pytest.raises(ConflictError):
        store.store(DATASET, Ed25519PrivateKey.generate())
    assert _pub(store.load(DATASET)) == _pub(first)
    assert len(list(store.root.iterdir())) == 1


def test_load_or_generate_is_stable(store):
    key = store.load_or_generate(DATASET)
    assert _pub(store.load_or_generate(DATASET)) == _pub(key)


def test_store_identity_key_and_export_for_ipfs_key_import(store):
    identity = Ed25519PrivateKey.generate()
    store.store(DATASET, identity)
    exported = store.export_libp2p(DATASET)
    assert exported[:4] == bytes.fromhex("08011240")
    assert exported == store.path_for(DATASET).read_bytes()
    assert _pub(private_key_from_protobuf(exported)) == _pub(identity)


def test_list_round_trips_labels_with_any_characters(store):
    labels = [DATASET, OTHER, "name/with/slashes", "späce and %"]
    for label in labels:
        store.generate(label)
    assert store.list() == sorted(labels)
    for name in os.listdir(store.root):
        assert "/" not in name and ":" not in name


def test_missing_key_and_empty_store(store):
    assert store.list() == []
    with pytest.raises(NotFound):
        store.load(DATASET)


@pytest.mark.parametrize("label", ["", "x" * 201, "tab\there", "new\nline"])
def test_bad_labels(store, label):
    with pytest.raises(UsageError):
        store.path_for(label)


def test_refuses_keys_readable_by_others(store):
    store.generate(DATASET)
    path = store.path_for(DATASET)
    path.chmod(0o644)
    with pytest.raises(CryptoError, match="chmod"):
        store.load(DATASET)
    path.chmod(0o600)
    store.root.chmod(0o755)
    with pytest.raises(CryptoError, match="chmod"):
        store.load(DATASET)
    with pytest.raises(CryptoError):
        store.generate(OTHER)


def test_refuses_symlinked_key_file(store, tmp_path):
    key = store.generate(DATASET)
    target = tmp_path / "elsewhere.key"
    target.write_bytes(store.path_for(DATASET).read_bytes())
    target.chmod(0o600)
    store.path_for(DATASET).unlink()
    store.path_for(DATASET).symlink_to(target)
    with pytest.raises(CryptoError):
        store.load(DATASET)
    assert _pub(key)  # the key object itself is still usable


@pytest.mark.parametrize("damage", ["truncate", "flip-public", "wrong-header"])
def test_corrupt_key_file_is_a_format_error(store, damage):
    store.generate(DATASET)
    path = store.path_for(DATASET)
    data = bytearray(path.read_bytes())
    if damage == "truncate":
        data = data[:-1]
    elif damage == "flip-public":
        data[-1] ^= 1
    else:
        data[1] = 0  # RSA key type
    path.write_bytes(bytes(data))
    with pytest.raises(FormatError):
        store.load(DATASET)


def test_no_key_material_in_repr_or_errors(store):
    key = store.generate(DATASET)
    secret = _seed(key)
    texts = [repr(store), str(store.root)]
    with pytest.raises(ConflictError) as info:
        store.generate(DATASET)
    texts.append(str(info.value))
    for text in texts:
        assert secret.hex() not in text
        assert secret.hex()[:16] not in text
