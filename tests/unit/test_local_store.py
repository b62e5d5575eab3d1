"""The local dataset store (``odfweb3.store.local.LocalStore``, where ``pull`` writes): objects
verified before they are visible, refs set by compare-and-set."""

import os

import pytest

from odfweb3.errors import ConflictError, HashMismatch, NotFound
from odfweb3.odf.multihash import hash_bytes, multihash_to_str
from odfweb3.store.local import LocalStore


@pytest.fixture
def store(tmp_path):
    return LocalStore(tmp_path / "ds", fsync=False)


def test_put_get_has_list(store):
    data = b"some data file" * 1000
    mh = hash_bytes(data)
    assert not store.has("data", mh)
    store.put("data", mh, [data[:100], data[100:]])
    assert store.has("data", mh) and not store.has("checkpoint", mh)
    assert store.get("data", mh) == data
    assert list(store.list("data")) == [mh]


def test_put_refuses_wrong_bytes_and_stores_nothing(store):
    mh = hash_bytes(b"right")
    with pytest.raises(HashMismatch):
        store.put("block", mh, [b"wrong"])
    assert not store.has("block", mh)
    assert list(store.list("block")) == []


def test_get_missing(store):
    with pytest.raises(NotFound):
        store.get("data", hash_bytes(b"nothing"))


def test_refs_compare_and_set(store):
    a, b = hash_bytes(b"a"), hash_bytes(b"b")
    assert store.get_ref("head") is None
    store.set_ref("head", a, expected=None)
    assert store.get_ref("head") == a
    with pytest.raises(ConflictError):
        store.set_ref("head", b, expected=None)
    store.set_ref("head", b, expected=a)
    assert store.get_ref("head") == b


def test_put_is_atomic_and_public(tmp_path):
    # Through atomic_file: a temp name until the hash is checked, then renamed, with the
    # umask's mode (objects are not secrets; the pull's staged ones are 0644 alike).
    store = LocalStore(tmp_path / "ds", fsync=False)
    old = os.umask(0o022)
    try:
        data = b"an object"
        store.put("data", hash_bytes(data), [data])
    finally:
        os.umask(old)
    path = store.path_of("data", hash_bytes(data))
    assert path.stat().st_mode & 0o777 == 0o644
    assert os.listdir(path.parent) == [path.name]


def test_a_wrong_object_leaves_no_temp_file(tmp_path):
    store = LocalStore(tmp_path / "ds", fsync=False)
    with pytest.raises(HashMismatch):
        store.put("data", hash_bytes(b"right"), [b"wr", b"ong"])
    assert os.listdir(tmp_path / "ds" / "data") == []


def test_a_staging_store_removes_an_object_that_does_not_hash_to_its_name(tmp_path):
    staging = LocalStore(tmp_path / "incoming", fsync=False, in_place=True)
    right = hash_bytes(b"right")
    with pytest.raises(HashMismatch) as caught:
        staging.put("data", right, [b"wr", b"ong"])
    # the message names the hash asked for and the one the bytes have
    assert multihash_to_str(right) in str(caught.value)
    assert multihash_to_str(hash_bytes(b"wrong")) in str(caught.value)
    assert os.listdir(tmp_path / "incoming" / "data") == []
    staging.put("data", right, [b"ri", b"ght"])  # at its own name, no temp file
    assert os.listdir(tmp_path / "incoming" / "data") == [multihash_to_str(right)]
    assert staging.has_intact("data", right)
