"""Deep hash against arbundles' fixed vectors (src/__tests__/deepHash.spec.ts)."""

from __future__ import annotations

import hashlib

import pytest

from odfweb3.errors import FormatError
from odfweb3_arweave.formats.deephash import Prehashed, deep_hash, hash_blob_stream

BLOB_123 = (
    "41300af79285f856e833164518c7ec4974f5869ec77ca345"
    "8113fe6c587680d050f9f6864fd77f9eb62bd4e2faea9ae8"
)
BLOB_EMPTY = (
    "fbf00cc444f5fea9dc3bedf62a13fba8ae87e7445fc91056"
    "7a23bec4eb82fadb1143c433069314d8362983dc3c2e4a38"
)
LIST_123_456 = (
    "4dacdcc81acd09f38c77a07a2a7ae81f77c61e6b97ee5cc7"
    "b92f3a7f258e8d5ba69d14d7d66070797b083873717c9896"
)


def test_blob_vector() -> None:
    assert deep_hash(bytes([1, 2, 3])).hex() == BLOB_123


def test_empty_blob_vector() -> None:
    assert deep_hash(b"").hex() == BLOB_EMPTY


def test_list_vector() -> None:
    assert deep_hash([bytes([1, 2, 3]), bytes([4, 5, 6])]).hex() == LIST_123_456


def test_definition_of_nested_list() -> None:
    inner = [b"a", b"bc"]
    acc = hashlib.sha384(b"list2").digest()
    for element in (b"x", inner):
        acc = hashlib.sha384(acc + deep_hash(element)).digest()
    assert deep_hash([b"x", inner]) == acc


def test_streamed_blob_equals_in_memory() -> None:
    data = bytes(range(256)) * 1000
    blocks = [data[i : i + 4096] for i in range(0, len(data), 4096)]
    streamed = hash_blob_stream(len(data), blocks)
    assert streamed.digest == deep_hash(data)
    assert deep_hash([b"x", streamed]) == deep_hash([b"x", data])


def test_streamed_blob_streams_single_chunk_vector() -> None:
    assert hash_blob_stream(3, [bytes([1, 2, 3])]).digest.hex() == BLOB_123


def test_prehashed_passes_through() -> None:
    assert deep_hash(Prehashed(b"\x01" * 48)) == b"\x01" * 48


@pytest.mark.parametrize("declared", [2, 4])
def test_streamed_blob_size_mismatch(declared: int) -> None:
    with pytest.raises(FormatError, match="expected"):
        hash_blob_stream(declared, [bytes([1, 2, 3])])
