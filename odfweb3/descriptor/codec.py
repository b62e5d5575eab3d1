"""The discovery descriptor's bytes: canonical JSON encoding, bounded verified decoding."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from odfweb3.errors import FormatError
from odfweb3.foreign_json import load_foreign_json
from odfweb3.odf.multihash import verify_bytes

__all__ = ["MAX_DESCRIPTOR_BYTES", "decode_descriptor", "encode_descriptor"]

# What a reader parses at most (every reader also bounds its fetch).
MAX_DESCRIPTOR_BYTES: Final = 4 << 20


def encode_descriptor(doc: Mapping[str, Any]) -> bytes:
    """Canonical bytes: UTF-8 JSON, keys sorted, no insignificant whitespace.

    The same document always gives the same bytes, hence the same CID or data item hash.
    (The only number that is not an integer is the context's ``"@version": 1.1``, which
    Python writes as ``1.1`` as every JSON writer does.)

    Raises:
        FormatError: the document holds a value JSON cannot represent (NaN, a set, …).
    """
    try:
        text = json.dumps(
            doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError) as exc:
        raise FormatError(f"descriptor is not JSON-serializable: {exc}") from None
    return text.encode("utf-8")


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
