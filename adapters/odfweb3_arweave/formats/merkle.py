"""Arweave v2 data chunking, the data_root Merkle tree and chunk proofs (data_path).

Behaviour follows arweave-js ``common/lib/merkle`` (itself a port of the node's
``ar_merkle.erl``), quirks included:

- Chunks are at most 256 KiB. When the bytes left after a full chunk would form a last
  chunk shorter than 32 KiB, the last two chunks are rebalanced: the second-to-last takes
  ``ceil(rest / 2)`` bytes and the last one the remainder.
- Data whose size is a multiple of 256 KiB (and empty data) gets one trailing
  *zero-length* chunk. It takes part in the tree (so in ``data_root``) but is dropped from
  the chunks and proofs that are uploaded (arweave-js ``generateTransactionChunks``).
- ``hash(x)`` is SHA-256; a "note" is an offset written as a 32-byte big-endian integer.
  Leaf id = ``hash(hash(data_hash) + hash(note(max_byte_range)))``; branch id =
  ``hash(hash(left.id) + hash(right.id) + hash(note(left.max_byte_range)))``. Leaves are
  paired left to right, layer by layer; an odd node out is promoted unchanged.
- A proof (data_path) is, from the root down, ``left.id + right.id + note(split)`` per
  branch, then ``data_hash + note(max_byte_range)`` of the leaf; its offset is
  ``max_byte_range - 1``.

Data is read in one pass, one chunk at a time, so memory is bounded by the chunk size plus
about 100 bytes of tree per chunk. Proofs are computed on demand from the stored layers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from odfweb3.errors import FormatError, HashMismatch

__all__ = [
    "HASH_SIZE",
    "MAX_CHUNK_SIZE",
    "MIN_CHUNK_SIZE",
    "NOTE_SIZE",
    "Chunk",
    "ChunkTree",
    "PathResult",
    "Proof",
    "build_tree",
    "build_tree_from_stream",
    "chunk_ranges",
    "compute_data_root",
    "read_chunk",
    "validate_path",
]

MAX_CHUNK_SIZE = 256 * 1024
MIN_CHUNK_SIZE = 32 * 1024
NOTE_SIZE = 32
HASH_SIZE = 32

_READ_BLOCK = 64 * 1024


def _sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _note(value: int) -> bytes:
    return value.to_bytes(NOTE_SIZE, "big")


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk of the data.

    Attributes:
        data_hash: SHA-256 of the chunk bytes.
        min_byte_range: offset of the chunk's first byte in the data.
        max_byte_range: offset one past its last byte.
    """

    data_hash: bytes
    min_byte_range: int
    max_byte_range: int

    @property
    def size(self) -> int:
        """Number of bytes in the chunk."""
        return self.max_byte_range - self.min_byte_range


@dataclass(frozen=True, slots=True)
class Proof:
    """The Merkle path of one chunk, as ``POST /chunk`` wants it.

    Attributes:
        offset: ``max_byte_range - 1`` of the chunk.
        data_path: the concatenated path bytes (see the module docstring).
    """

    offset: int
    data_path: bytes


@dataclass(frozen=True, slots=True)
class PathResult:
    """What a valid data_path proves about a chunk.

    Attributes:
        offset: the chunk's last byte offset.
        left_bound: start of the chunk.
        right_bound: end of the chunk (exclusive).
        chunk_size: ``right_bound - left_bound``.
    """

    offset: int
    left_bound: int
    right_bound: int
    chunk_size: int


def chunk_ranges(size: int) -> list[tuple[int, int]]:
    """Split ``size`` bytes into chunk ranges exactly as arweave-js ``chunkData`` does.

    Args:
        size: the data size in bytes.

    Returns:
        ``(start, end)`` pairs, including the trailing zero-length chunk when ``size`` is a
        multiple of 256 KiB (or zero).
    """
    if size < 0:
        raise ValueError("data size must not be negative")
    ranges: list[tuple[int, int]] = []
    cursor = 0
    rest = size
    while rest >= MAX_CHUNK_SIZE:
        chunk_size = MAX_CHUNK_SIZE
        next_size = rest - MAX_CHUNK_SIZE
        # arweave-js: rebalance so that the last chunk is not below MIN_CHUNK_SIZE.
        if 0 < next_size < MIN_CHUNK_SIZE:
            chunk_size = -(-rest // 2)
        ranges.append((cursor, cursor + chunk_size))
        cursor += chunk_size
        rest -= chunk_size
    ranges.append((cursor, cursor + rest))
    return ranges


@dataclass(frozen=True)
class ChunkTree:
    """The chunk Merkle tree of some data.

    Attributes:
        data_size: size of the data in bytes.
        chunks: every chunk in the tree, including a trailing zero-length one.
        layers: node ids per layer (``layers[0]`` are the leaves, the last holds the root).
        maxes: ``max_byte_range`` per node, parallel to ``layers``.
    """

    data_size: int
    chunks: tuple[Chunk, ...]
    layers: tuple[tuple[bytes, ...], ...]
    maxes: tuple[tuple[int, ...], ...]

    @property
    def data_root(self) -> bytes:
        """The 32-byte data_root (the root node id)."""
        return self.layers[-1][0]

    @property
    def upload_chunks(self) -> tuple[Chunk, ...]:
        """The chunks to upload: all but a trailing zero-length chunk."""
        if self.chunks[-1].size == 0:
            return self.chunks[:-1]
        return self.chunks

    def proof(self, index: int) -> Proof:
        """Compute the data_path of the chunk at ``index``.

        Args:
            index: position of the chunk in :attr:`chunks`.

        Returns:
            The chunk's :class:`Proof`.
        """
        if not 0 <= index < len(self.chunks):
            raise IndexError(f"chunk index {index} out of range 0..{len(self.chunks) - 1}")
        parts: list[bytes] = []
        # Walk from the root down. Node j of layer k+1 has children 2j and 2j+1 of layer k,
        # or only 2j when that one was promoted (then the proof gets nothing for it).
        for level in range(len(self.layers) - 2, -1, -1):
            parent = index >> (level + 1)
            left, right = 2 * parent, 2 * parent + 1
            ids = self.layers[level]
            if right < len(ids):
                parts += [ids[left], ids[right], _note(self.maxes[level][left])]
        chunk = self.chunks[index]
        parts += [chunk.data_hash, _note(chunk.max_byte_range)]
        return Proof(offset=chunk.max_byte_range - 1, data_path=b"".join(parts))

    def proofs(self) -> Iterator[Proof]:
        """Yield the proof of every chunk to upload, in order."""
        for index in range(len(self.upload_chunks)):
            yield self.proof(index)


def _leaf_id(chunk: Chunk) -> bytes:
    return _sha256(_sha256(chunk.data_hash) + _sha256(_note(chunk.max_byte_range)))


def build_tree(chunks: list[Chunk] | tuple[Chunk, ...], data_size: int) -> ChunkTree:
    """Build the Merkle tree over ``chunks`` (as from :func:`chunk_ranges`).

    Args:
        chunks: all chunks, in order, including a trailing zero-length one.
        data_size: the data size (the last chunk's ``max_byte_range``).

    Returns:
        The :class:`ChunkTree`.
    """
    if not chunks:
        raise ValueError("a chunk tree needs at least one chunk")
    ids = tuple(_leaf_id(c) for c in chunks)
    maxes = tuple(c.max_byte_range for c in chunks)
    layers = [ids]
    max_layers = [maxes]
    while len(ids) > 1:
        next_ids: list[bytes] = []
        next_maxes: list[int] = []
        for i in range(0, len(ids), 2):
            if i + 1 < len(ids):
                next_ids.append(
                    _sha256(_sha256(ids[i]) + _sha256(ids[i + 1]) + _sha256(_note(maxes[i])))
                )
                next_maxes.append(maxes[i + 1])
            else:  # odd node out: promoted unchanged (arweave-js hashBranch(left, undefined))
                next_ids.append(ids[i])
                next_maxes.append(maxes[i])
        ids, maxes = tuple(next_ids), tuple(next_maxes)
        layers.append(ids)
        max_layers.append(maxes)
    return ChunkTree(data_size, tuple(chunks), tuple(layers), tuple(max_layers))


def _read_exact(stream: BinaryIO, size: int, what: str) -> Iterator[bytes]:
    left = size
    while left > 0:
        block = stream.read(min(left, _READ_BLOCK))
        if not block:
            raise FormatError(f"{what}: stream ended {left} bytes early; was the file changed?")
        left -= len(block)
        yield block


def build_tree_from_stream(stream: BinaryIO, size: int) -> ChunkTree:
    """Chunk and hash ``size`` bytes read from ``stream``, in bounded memory.

    Args:
        stream: a binary stream positioned at the start of the data.
        size: how many bytes to read (the data size).

    Returns:
        The :class:`ChunkTree`.

    Raises:
        FormatError: the stream ends before ``size`` bytes.
    """
    chunks: list[Chunk] = []
    for start, end in chunk_ranges(size):
        hasher = hashlib.sha256()
        for block in _read_exact(stream, end - start, "chunking data"):
            hasher.update(block)
        chunks.append(Chunk(hasher.digest(), start, end))
    return build_tree(chunks, size)


def compute_data_root(data: bytes) -> bytes:
    """Compute the data_root of in-memory data.

    Args:
        data: the transaction data.

    Returns:
        The 32-byte data_root.
    """
    chunks = [Chunk(_sha256(data[s:e]), s, e) for s, e in chunk_ranges(len(data))]
    return build_tree(chunks, len(data)).data_root


def read_chunk(stream: BinaryIO, chunk: Chunk) -> bytes:
    """Read one chunk's bytes from a seekable stream and check its hash.

    Args:
        stream: seekable binary stream over the whole data.
        chunk: the chunk to read.

    Returns:
        The chunk bytes.

    Raises:
        FormatError: the stream is too short.
        HashMismatch: the bytes differ from those that were chunked.
    """
    stream.seek(chunk.min_byte_range)
    data = b"".join(_read_exact(stream, chunk.size, "reading a chunk"))
    actual = _sha256(data)
    if actual != chunk.data_hash:
        raise HashMismatch(
            chunk.data_hash.hex(), actual.hex(), f"chunk at offset {chunk.min_byte_range}"
        )
    return data


def validate_path(
    data_root: bytes, dest: int, left_bound: int, right_bound: int, path: bytes
) -> PathResult | None:
    """Check a data_path against a data_root, as arweave-js ``validatePath``.

    Args:
        data_root: the 32-byte root id.
        dest: an offset inside the chunk the path leads to.
        left_bound: lower bound of the data range (0 for a whole transaction).
        right_bound: upper bound (the data size).
        path: the data_path bytes.

    Returns:
        The chunk's bounds when the path is valid, else ``None``.
    """
    node_id = data_root
    if right_bound <= 0:
        return None
    if dest >= right_bound:
        dest, left_bound = 0, right_bound - 1
    if dest < 0:
        dest, left_bound = 0, 0
    rest = path
    while True:
        if len(rest) == HASH_SIZE + NOTE_SIZE:
            data_hash, end_note = rest[:HASH_SIZE], rest[HASH_SIZE:]
            if _sha256(_sha256(data_hash) + _sha256(end_note)) != node_id:
                return None
            return PathResult(right_bound - 1, left_bound, right_bound, right_bound - left_bound)
        if len(rest) < 2 * HASH_SIZE + NOTE_SIZE:
            return None
        left = rest[:HASH_SIZE]
        right = rest[HASH_SIZE : 2 * HASH_SIZE]
        split_note = rest[2 * HASH_SIZE : 2 * HASH_SIZE + NOTE_SIZE]
        rest = rest[2 * HASH_SIZE + NOTE_SIZE :]
        if _sha256(_sha256(left) + _sha256(right) + _sha256(split_note)) != node_id:
            return None
        split = int.from_bytes(split_note, "big")
        if dest < split:
            node_id, right_bound = left, min(right_bound, split)
        else:
            node_id, left_bound = right, max(left_bound, split)
