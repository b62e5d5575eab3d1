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


# -- several keys per dataset (a target published under an imported key's name) -----------


def test_add_keeps_the_first_key_as_the_datasets_and_others_beside_it(store):
    first, second = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    path, new = store.add(DATASET, first)
    assert new and path == store.path_for(DATASET)
    assert store.add(DATASET, first) == (path, False)  # the same key twice: kept once
    extra, new = store.add(DATASET, second)
    assert new and extra != path and stat.S_IMODE(extra.stat().st_mode) == 0o600
    assert store.add(DATASET, second) == (extra, False)
    assert _pub(store.load(DATASET)) == _pub(first)  # never replaced
    assert [_pub(k) for k in store.keys_of(DATASET)] == [_pub(first), _pub(second)]
    assert _pub(store.find(DATASET, _pub(second))) == _pub(second)
    assert store.find(DATASET, _pub(Ed25519PrivateKey.generate())) is None
    assert store.find(OTHER, _pub(first)) is None
    assert store.list() == [DATASET]  # the other key is not a label of its own
    assert store.list_all() == [DATASET]
    assert store.labels_with(_pub(second)) == [DATASET]


def test_an_extra_key_file_holding_another_key_is_refused(store):
    first, second = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    store.add(DATASET, first)
    extra, _ = store.add(DATASET, second)
    os.chmod(extra, 0o600)
    extra.write_bytes(store.path_for(DATASET).read_bytes())  # someone swapped the file
    with pytest.raises(FormatError, match="another key than its name says"):
        store.keys_of(DATASET)


def test_add_to_a_label_without_a_key_of_its_own(store):
    only = Ed25519PrivateKey.generate()
    assert store.keys_of(DATASET) == []
    path, new = store.add(DATASET, only)
    assert new and store.has(DATASET) and path == store.path_for(DATASET)


# -- the highest IPNS sequence signed, per key --------------------------------------------


def test_highest_signed_only_grows_and_is_kept_per_key_in_a_private_file(store):
    key, other = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    store.add(DATASET, key)
    assert store.highest_signed(DATASET, _pub(key)) is None
    store.note_signed(DATASET, _pub(key), 3)
    store.note_signed(DATASET, _pub(key), 1)  # lower: ignored
    store.note_signed(DATASET, _pub(other), 0)
    assert store.highest_signed(DATASET, _pub(key)) == 3
    assert store.highest_signed(DATASET, _pub(other)) == 0
    assert store.highest_signed(OTHER, _pub(key)) is None
    entry = store.entry_path(DATASET)
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    assert store.list() == [DATASET]  # the entry file is not a key
    assert Keystore(store.root).highest_signed(DATASET, _pub(key)) == 3  # on disk


def test_highest_signed_under_concurrent_writers_is_the_maximum(store):
    import threading

    key = Ed25519PrivateKey.generate()
    store.add(DATASET, key)
    pub = _pub(key)

    def writer(start: int) -> None:
        for seq in range(start, 200, 4):
            Keystore(store.root).note_signed(DATASET, pub, seq)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.highest_signed(DATASET, pub) == 199


@pytest.mark.parametrize(
    "text",
    [
        b"not json",
        b'{"format": "other", "version": 1}',
        b'{"format": "odfweb3-keystore-entry", "version": 1, "datasetId": "did:odf:x", "keys": {}}',
        b'{"format": "odfweb3-keystore-entry", "version": 1, "datasetId": "DS", "keys": {"ab": 1}}',
        b'{"format": "odfweb3-keystore-entry", "version": 1, "datasetId": "DS",'
        b' "keys": {"' + b"ab" * 32 + b'": {"highestSequence": -1}}}',
    ],
)
def test_a_damaged_entry_is_one_format_error_naming_the_file(store, text):
    store.generate(DATASET)
    store.entry_path(DATASET).write_bytes(text.replace(b"DS", DATASET.encode()))
    with pytest.raises(FormatError, match="move it away") as info:
        store.highest_signed(DATASET, b"\xab" * 32)
    assert str(store.entry_path(DATASET)) in str(info.value)


def test_entry_codec_round_trips_golden_bytes():
    from odfweb3.crypto.keystore import decode_entry, encode_entry

    data = encode_entry("did:odf:x", {"ab" * 32: 7})
    assert data == (
        b'{\n "datasetId": "did:odf:x",\n "format": "odfweb3-keystore-entry",\n "keys": {\n  "'
        + b"ab" * 32
        + b'": {\n   "highestSequence": 7\n  }\n },\n "version": 1\n}\n'
    )
    assert decode_entry(data, "did:odf:x", "e") == {"ab" * 32: 7}
    with pytest.raises(FormatError, match="another dataset"):
        decode_entry(data, "did:odf:y", "e")
