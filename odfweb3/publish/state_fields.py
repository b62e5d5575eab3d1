"""Typed reads of the adapter-defined maps of a publish state.

:class:`~odfweb3.publish.state.PublishState` keeps ``record`` and ``extra`` as JSON maps
whose meaning each network adapter defines; the adapters read them into frozen dataclasses
(``odfweb3_ipfs.publish.state``, ``odfweb3_arweave.publish.state``) with these helpers, so
a field of the wrong type is one :class:`~odfweb3.errors.FormatError` naming the state file,
and a field absent on disk is ``None`` (and stays absent when written back, :func:`present`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from odfweb3.errors import FormatError

__all__ = [
    "hex_list",
    "json_object",
    "malformed",
    "opt_field",
    "present",
    "str_list",
    "str_map",
]

T = TypeVar("T")


def malformed(where: str, part: str, key: str, what: str) -> FormatError:
    """``WHERE: malformed publish state (PART.KEY: expected WHAT)``."""
    return FormatError(f"{where}: malformed publish state ({part}.{key}: expected {what})")


def opt_field(raw: Mapping[str, Any], key: str, kind: type[T], where: str, part: str) -> T | None:
    """``raw[key]`` when it is a ``kind``, None when absent or null.

    Raises:
        FormatError: present with another type (a bool is never an int here).
    """
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise malformed(where, part, key, kind.__name__)
    return value


def str_list(raw: Mapping[str, Any], key: str, where: str, part: str) -> tuple[str, ...] | None:
    """``raw[key]`` as a tuple of strings (None when absent)."""
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise malformed(where, part, key, "a list of strings")
    return tuple(value)


def hex_list(raw: Mapping[str, Any], key: str, where: str, part: str) -> tuple[str, ...] | None:
    """``raw[key]`` as a tuple of hex strings (None when absent)."""
    value = str_list(raw, key, where, part)
    if value is not None:
        try:
            for v in value:
                bytes.fromhex(v)
        except ValueError:
            raise malformed(where, part, key, "a list of hex strings") from None
    return value


def str_map(raw: Mapping[str, Any], key: str, where: str, part: str) -> dict[str, str] | None:
    """``raw[key]`` as a map of strings to strings (None when absent)."""
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise malformed(where, part, key, "a map of strings")
    return {str(k): v for k, v in value.items()}


def json_object(raw: Mapping[str, Any], key: str, where: str, part: str) -> dict[str, Any] | None:
    """``raw[key]`` when it is a JSON object, unparsed (None when absent)."""
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise malformed(where, part, key, "a JSON object")
    return value


def present(pairs: Mapping[str, Any]) -> dict[str, Any]:
    """``pairs`` without the None values: a field absent on disk stays absent."""
    return {k: v for k, v in pairs.items() if v is not None}
