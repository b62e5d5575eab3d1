"""The discovery descriptor's bytes: canonical JSON encoding, bounded verified decoding."""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

from odfweb3.errors import FormatError
from odfweb3.foreign_json import load_foreign_json
from odfweb3.odf.multihash import verify_bytes

__all__ = [
    "MAX_DESCRIPTOR_BYTES",
    "StreamedList",
    "decode_descriptor",
    "encode_descriptor",
    "encode_descriptor_chunks",
]

# What a reader parses at most (every reader also bounds its fetch).
MAX_DESCRIPTOR_BYTES: Final = 4 << 20


class StreamedList(Sequence[Any]):
    """A JSON array of a document whose items are made one at a time while it is encoded
    (:func:`encode_descriptor_chunks`), each time it is iterated: the Croissant and DCAT
    documents of a first publish list every data file, and their items held at once would
    be most of the publish's memory."""

    __slots__ = ("_length", "_make")

    def __init__(self, length: int, make: Callable[[], Iterable[Any]]) -> None:
        self._length = length
        self._make = make

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[Any]:
        return iter(self._make())

    def __getitem__(self, i: Any) -> Any:
        return list(self)[i]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StreamedList | list | tuple):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


_CHUNK: Final = 1 << 20  # bytes handed on at a time by encode_descriptor_chunks
_BATCH: Final = 64  # streamed items encoded at once


def _dumps(doc: object, default: Callable[[object], object] | None = None) -> str:
    try:
        return json.dumps(
            doc,
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
            allow_nan=False,
            default=default,
        )
    except (TypeError, ValueError) as exc:
        raise FormatError(f"descriptor is not JSON-serializable: {exc}") from None


def _batches(items: Iterable[Any]) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) == _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def encode_descriptor_chunks(doc: Mapping[str, Any]) -> Iterator[bytes]:
    """:func:`encode_descriptor`'s bytes in pieces of about 1 MiB, a :class:`StreamedList`
    encoded item by item: the same bytes as the whole document encoded at once (a JSON
    array is ``[`` + its items joined by ``,`` + ``]`` under these separators), without
    the document or its text in memory.

    Raises:
        FormatError: as :func:`encode_descriptor`.
    """
    # Each streamed list is written as a marker string no document holds (a random token
    # between NULs, which JSON writes escaped), then the marker's text replaced by its items.
    token = secrets.token_hex(16)
    lists: list[StreamedList] = []

    def swap(value: object) -> object:
        if not isinstance(value, StreamedList):
            raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
        lists.append(value)
        return f"\0{token}:{len(lists) - 1}\0"

    text = _dumps(doc, swap)
    if not lists:
        yield text.encode("utf-8")
        return
    marker = re.compile(r'"\\u0000' + token + r':(\d+)\\u0000"')
    pending: list[bytes] = []
    size = 0
    pos = 0
    for m in marker.finditer(text):
        pending.append(text[pos : m.start()].encode("utf-8"))
        sep = "["
        # Items encoded _BATCH at a time: a list's text is its items' texts joined by ","
        # between its brackets (one json.dumps per item cost a first publish of 10,000
        # blocks 30,000 encoder set-ups).
        for batch in _batches(lists[int(m.group(1))]):
            piece = (sep + _dumps(batch)[1:-1]).encode("utf-8")
            sep = ","
            pending.append(piece)
            size += len(piece)
            if size >= _CHUNK:
                yield b"".join(pending)
                pending, size = [], 0
        pending.append(b"[]" if sep == "[" else b"]")
        pos = m.end()
    pending.append(text[pos:].encode("utf-8"))
    yield b"".join(pending)


def encode_descriptor(doc: Mapping[str, Any]) -> bytes:
    """Canonical bytes: UTF-8 JSON, keys sorted, no insignificant whitespace.

    The same document always gives the same bytes, hence the same CID or data item hash.
    (The only number that is not an integer is the context's ``"@version": 1.1``, which
    Python writes as ``1.1`` as every JSON writer does.)

    Raises:
        FormatError: the document holds a value JSON cannot represent (NaN, a set, …).
    """
    return b"".join(encode_descriptor_chunks(doc))


def decode_descriptor(data: bytes, expected: bytes | None = None) -> dict[str, Any]:
    """Parse descriptor bytes; with ``expected`` (a multihash), verify them first.

    Raises:
        HashMismatch: the bytes do not hash to ``expected``.
        FormatError: not UTF-8 JSON, not an object, or without an ``@context``.
    """
    if expected is not None:
        verify_bytes(data, expected, "descriptor")
    doc = load_foreign_json(data, what="descriptor", max_bytes=MAX_DESCRIPTOR_BYTES)
    if not isinstance(doc, dict) or "@context" not in doc:
        raise FormatError("descriptor is not a JSON-LD object with an @context")
    return doc
