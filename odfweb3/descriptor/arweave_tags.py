"""The discovery descriptor's facts as Arweave (ANS-104) tags, within the tag size limits."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from odfweb3.descriptor.build import (
    MEDIA_TYPE,
)

__all__ = ["descriptor_tags"]

# ANS-104: a tag value holds at most 3072 bytes (names 1024).
_TAG_VALUE_MAX: Final = 3072


def _truncate_utf8(text: str, limit: int) -> str:
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    ellipsis = "…"
    cut = data[: limit - len(ellipsis.encode("utf-8"))].decode("utf-8", errors="ignore")
    return cut + ellipsis


def descriptor_tags(doc: Mapping[str, Any], max_total: int = 3584) -> list[tuple[str, str]]:
    """Arweave tags for the descriptor's data item: content type, dataset, head, title, text.

    ANS-104 limits each value to 3072 bytes, and bundlers (arbundles ``MAX_TAG_BYTES``) all
    tags of an item to 4096 bytes once Avro-encoded. So each value is cut to 3072 bytes and
    names plus values together to ``max_total`` bytes (the default leaves room for the
    caller's ``App-Name``/``App-Version`` and the encoding), title before description; cuts
    fall on a character boundary and end with an ellipsis. Absent fields give no tag.
    """
    tags = [("Content-Type", MEDIA_TYPE)]
    left = max_total - len("Content-Type") - len(MEDIA_TYPE)
    for name, key in (
        ("ODF-Dataset-Id", "id"),
        ("ODF-Head", "head"),
        ("Title", "title"),
        ("Description", "description"),
    ):
        value = doc.get(key)
        room = min(_TAG_VALUE_MAX, left - len(name))
        if isinstance(value, str) and value and room > len("…".encode()):
            value = _truncate_utf8(value, room)
            tags.append((name, value))
            left -= len(name) + len(value.encode("utf-8"))
    return tags


# --- Turtle ----------------------------------------------------------------------------------
