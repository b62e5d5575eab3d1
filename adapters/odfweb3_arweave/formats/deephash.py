"""Arweave deep hash (SHA-384), with a streaming form for large data blobs.

The algorithm, as arweave-js ``deepHash`` and arbundles implement it:

- a blob ``b``: ``SHA384(SHA384("blob" + str(len(b))) + SHA384(b))``;
- a list ``l``: start with ``acc = SHA384("list" + str(len(l)))``, then for each element
  ``acc = SHA384(acc + deep_hash(element))``; the result is ``acc``.

Lengths are written in decimal ASCII. For a blob too large to hold in memory,
:func:`hash_blob_stream` computes the blob's deep hash from its size and a chunk iterator;
the result, wrapped in :class:`Prehashed`, can stand in for the blob inside a list.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from odfweb3.errors import FormatError

__all__ = ["DeepHashItem", "Prehashed", "deep_hash", "hash_blob_digest", "hash_blob_stream"]


@dataclass(frozen=True, slots=True)
class Prehashed:
    """A node whose deep hash is already known (e.g. a streamed blob).

    Attributes:
        digest: the 48-byte deep hash of the node it replaces.
    """

    digest: bytes


DeepHashItem: TypeAlias = bytes | Prehashed | Sequence["DeepHashItem"]


def _sha384(data: bytes) -> bytes:
    return hashlib.sha384(data).digest()


def deep_hash(item: DeepHashItem) -> bytes:
    """Deep-hash a blob, a pre-hashed node, or a (nested) list of them.

    Args:
        item: ``bytes`` (a blob), :class:`Prehashed`, or a sequence of items.

    Returns:
        The 48-byte SHA-384 deep hash.
    """
    if isinstance(item, Prehashed):
        return item.digest
    if isinstance(item, bytes | bytearray | memoryview):
        blob = bytes(item)
        tag = b"blob" + str(len(blob)).encode("ascii")
        return _sha384(_sha384(tag) + _sha384(blob))
    acc = _sha384(b"list" + str(len(item)).encode("ascii"))
    for element in item:
        acc = _sha384(acc + deep_hash(element))
    return acc


def hash_blob_stream(size: int, chunks: Iterable[bytes]) -> Prehashed:
    """Deep-hash one blob given as a stream of chunks, in bounded memory.

    Args:
        size: the blob's total size in bytes (it is part of the hash, so it must be known).
        chunks: the blob's bytes, in order.

    Returns:
        The blob's deep hash, usable as an element of a list passed to :func:`deep_hash`.

    Raises:
        FormatError: the chunks do not add up to ``size`` bytes.
    """
    inner = hashlib.sha384()
    seen = 0
    for chunk in chunks:
        seen += len(chunk)
        inner.update(chunk)
    if seen != size:
        raise FormatError(f"deep hash of a streamed blob: expected {size} bytes, read {seen}")
    return hash_blob_digest(size, inner.digest())


def hash_blob_digest(size: int, digest: bytes) -> Prehashed:
    """Deep-hash a blob of ``size`` bytes whose SHA-384 is ``digest`` (what
    :func:`hash_blob_stream` computes from the bytes)."""
    tag = b"blob" + str(size).encode("ascii")
    return Prehashed(_sha384(_sha384(tag) + digest))
