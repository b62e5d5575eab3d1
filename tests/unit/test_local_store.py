"""The local dataset store (``odfweb3.store.local.LocalStore``, where ``pull`` writes): objects
verified before they are visible, refs set by compare-and-set."""

import pytest

from odfweb3.errors import ConflictError, HashMismatch, NotFound
from odfweb3.odf.multihash import hash_bytes
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
