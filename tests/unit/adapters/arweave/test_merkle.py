"""Chunking, data_root and proofs against arweave-js (test/chunks.ts vectors and rules)."""

from __future__ import annotations

import io
import itertools
import os

import pytest

from odfweb3.errors import FormatError, HashMismatch
from odfweb3_arweave.formats.b64 import b64url_decode
from odfweb3_arweave.formats.merkle import (
    MAX_CHUNK_SIZE,
    MIN_CHUNK_SIZE,
    build_tree_from_stream,
    chunk_ranges,
    compute_data_root,
    read_chunk,
    validate_path,
)

# arweave-js test/chunks.ts: a proof of the first chunk of an 836907-byte file.
ROOT = b64url_decode("t-GCOnjPWxdox950JsrFMu3nzOE4RktXpMcIlkqSUTw")
PATH = b64url_decode(
    "7EAC9FsACQRwe4oIzu7Mza9KjgWKT4toYxDYGjWrCdp0QgsrYS6AueMJ_rM6ZEGslGqjUekzD3WSe7B5_fwipgAAAAAAAAAA"
    "AAAAAAAAAAAAAAAAAAAAAAAAAAAACAAAnH6dASdQCigcL43lp0QclqBaSncF4TspuvxoFbn2L18EXpQrP1wkbwdIjSSWQQRt"
    "_F31yNvxtc09KkPFtzMKAwAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAABAAAIHiHU9QwOImFzjqSlfxkJJCtSbAox6Tb"
    "bFhQvlEapSgAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAQAAA"
)
OFFSET = 262143
DATA_SIZE = 836907


def test_golden_path_validates() -> None:
    result = validate_path(ROOT, OFFSET, 0, DATA_SIZE, PATH)
    assert result is not None
    assert (result.left_bound, result.right_bound, result.chunk_size) == (0, 262144, 262144)


def test_golden_path_rejects_other_root_and_path() -> None:
    bad_root = b64url_decode("lX5K7gAUlIMt2hYYkoXVrjmVMnnjF6P6c5sov6mPqCm")
    assert validate_path(bad_root, OFFSET, 0, DATA_SIZE, PATH) is None
    assert validate_path(ROOT, OFFSET, 0, DATA_SIZE, os.urandom(256)) is None
    assert validate_path(ROOT, OFFSET, 0, DATA_SIZE, PATH[:-1]) is None


def test_multiple_of_max_gets_zero_length_chunk() -> None:
    ranges = chunk_ranges(MAX_CHUNK_SIZE * 4)
    assert len(ranges) == 5
    assert [e - s for s, e in ranges] == [MAX_CHUNK_SIZE] * 4 + [0]


def test_last_two_chunks_rebalanced() -> None:
    ranges = chunk_ranges(MAX_CHUNK_SIZE + MIN_CHUNK_SIZE - 1)
    sizes = [e - s for s, e in ranges]
    assert len(sizes) == 2
    assert sizes[0] > MIN_CHUNK_SIZE and sizes[1] >= MIN_CHUNK_SIZE
    assert sizes[0] == sizes[1] + 1


def test_ranges_cover_data_contiguously() -> None:
    for size in (0, 1, MIN_CHUNK_SIZE, MAX_CHUNK_SIZE - 1, 3 * MAX_CHUNK_SIZE + 5, 2883584):
        ranges = chunk_ranges(size)
        assert ranges[0][0] == 0 and ranges[-1][1] == size
        assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
        assert all(e - s <= MAX_CHUNK_SIZE for s, e in ranges)
        if len(ranges) > 1 and ranges[-1][1] > ranges[-1][0]:
            assert ranges[-1][1] - ranges[-1][0] >= MIN_CHUNK_SIZE


@pytest.mark.parametrize(
    "size",
    [1, 1000, MAX_CHUNK_SIZE, MAX_CHUNK_SIZE + 1, 3 * MAX_CHUNK_SIZE + 7000, 5 * MAX_CHUNK_SIZE],
)
def test_stream_tree_matches_memory_and_proofs_validate(size: int) -> None:
    data = os.urandom(size)
    tree = build_tree_from_stream(io.BytesIO(data), size)
    assert tree.data_root == compute_data_root(data)
    upload = tree.upload_chunks
    assert all(c.size > 0 for c in upload)
    assert sum(c.size for c in upload) == size
    for index, chunk in enumerate(upload):
        proof = tree.proof(index)
        assert proof.offset == chunk.max_byte_range - 1
        result = validate_path(tree.data_root, proof.offset, 0, size, proof.data_path)
        assert result is not None
        assert (result.left_bound, result.right_bound) == (
            chunk.min_byte_range,
            chunk.max_byte_range,
        )
        # a proof does not lead to another chunk's range
        assert validate_path(b"\x00" * 32, proof.offset, 0, size, proof.data_path) is None


def test_read_chunk_checks_hash() -> None:
    data = os.urandom(MAX_CHUNK_SIZE + 10)
    tree = build_tree_from_stream(io.BytesIO(data), len(data))
    assert read_chunk(io.BytesIO(data), tree.chunks[1]) == data[tree.chunks[1].min_byte_range :]
    changed = bytearray(data)
    changed[-1] ^= 1
    with pytest.raises(HashMismatch):
        read_chunk(io.BytesIO(bytes(changed)), tree.chunks[1])


def test_short_stream_is_format_error() -> None:
    with pytest.raises(FormatError, match="early"):
        build_tree_from_stream(io.BytesIO(b"abc"), 10)
