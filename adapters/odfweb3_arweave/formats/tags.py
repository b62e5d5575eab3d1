"""Arweave tags: name/value pairs of raw bytes.

Both L1 transactions and ANS-104 data items carry tags as byte strings; the protocol does
not require UTF-8 (arweave-js and arbundles only produce UTF-8, so we do by default).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Tag"]


@dataclass(frozen=True, slots=True)
class Tag:
    """One tag: a name and a value, both raw bytes.

    Attributes:
        name: the tag name bytes.
        value: the tag value bytes.
    """

    name: bytes
    value: bytes

    @classmethod
    def of(cls, name: str, value: str) -> Tag:
        """Build a tag from text, encoded as UTF-8 (as arweave-js and arbundles do)."""
        return cls(name.encode("utf-8"), value.encode("utf-8"))

    def text(self) -> tuple[str, str]:
        """Return ``(name, value)`` decoded as UTF-8, replacing invalid sequences."""
        return (
            self.name.decode("utf-8", errors="replace"),
            self.value.decode("utf-8", errors="replace"),
        )
