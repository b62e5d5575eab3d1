"""Linked objects (ODF RFC-017, "Large Files Linking"): which columns link, what a block sums.

A root dataset may keep large binaries beside its data as ``data/<multihash>``, named
from an ``ObjectLink`` data column: a ``String`` field whose extra attributes say
``opendatafabric.org/type: {kind: ObjectLink, linkType: {kind: Multihash}}``. The chain
carries no list of them, only each ``AddData``'s summary in its extra attributes,
``opendatafabric.org/linkedObjects: {numObjectsNaive, sizeNaive}``: every non-null link
counted, duplicates included. The head hash is still the Merkle root of them all,
through the data files' hashes.

The names follow kamu-cli (``odf::schema::ext::LinkedObjectsSummary``, serialized
camelCase with unknown fields denied); the RFC's first draft said ``numObjects``, kamu
and the published RFC say ``numObjectsNaive``. kamu reads the link columns of an ingested
file only (``DataWriterDataFusion::compute_linked_objects_summary``): ``AddData`` blocks,
not ``ExecuteTransform`` (the RFC leaves linked objects of derivative datasets open), and
refuses an ``ObjectLink`` on anything but a top-level (optionally nullable) ``String``
column or with a link type other than ``Multihash``; so does this module.

Pure: no I/O (the Parquet side is :mod:`odfweb3.odf.parquet_links`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from odfweb3.errors import FormatError
from odfweb3.odf.model_gen import (
    AddData,
    DataField,
    DataTypeOption,
    DataTypeString,
    DataTypeStruct,
    ExtraAttributes,
    SetDataSchema,
)

__all__ = [
    "SUMMARY_KEY",
    "TYPE_KEY",
    "LinkedSummary",
    "decode_summary",
    "encode_summary",
    "link_columns",
    "object_link_extra",
]

TYPE_KEY: Final = "opendatafabric.org/type"
SUMMARY_KEY: Final = "opendatafabric.org/linkedObjects"
# Extra attributes are a few hundred bytes; a schema's or a block's far larger is hostile.
_MAX_EXTRA: Final = 1 << 20


@dataclass(frozen=True)
class LinkedSummary:
    """``opendatafabric.org/linkedObjects`` of one ``AddData`` (kamu's field names)."""

    num_objects_naive: int
    size_naive: int

    def to_json(self) -> dict[str, int]:
        """The attribute's value as kamu writes it."""
        return {"numObjectsNaive": self.num_objects_naive, "sizeNaive": self.size_naive}


def _entries(extra: ExtraAttributes | None, where: str) -> dict[str, Any]:
    if extra is None or not extra.entries:
        return {}
    if len(extra.entries) > _MAX_EXTRA:
        raise FormatError(f"{where}: extra attributes larger than {_MAX_EXTRA} bytes")
    try:
        value = json.loads(extra.entries)
    except ValueError:
        raise FormatError(f"{where}: extra attributes are not JSON") from None
    if not isinstance(value, dict):
        raise FormatError(f"{where}: extra attributes are not a JSON object")
    return value


def _is_object_link(field: DataField, where: str) -> bool:
    """Whether the field's extra attributes declare it an ``ObjectLink``.

    Raises:
        FormatError: an ``ObjectLink`` whose link type is not ``Multihash`` (kamu:
            "Unsupported link type").
    """
    ext = _entries(field.extra, f"{where}: field {field.name!r}").get(TYPE_KEY)
    if not isinstance(ext, dict) or ext.get("kind") != "ObjectLink":
        return False
    link_type = ext.get("linkType")
    if not isinstance(link_type, dict) or link_type.get("kind") != "Multihash":
        raise FormatError(
            f"{where}: field {field.name!r} is an ObjectLink of link type "
            f"{json.dumps(link_type)}, not Multihash (the only one ODF RFC-017 defines)"
        )
    return True


def link_columns(event: SetDataSchema, where: str = "SetDataSchema") -> tuple[str, ...]:
    """Names of the top-level ``ObjectLink`` columns the schema declares, in field order.

    A schema given only as a raw Arrow schema (before RFC-016) declares none.

    Raises:
        FormatError: an ``ObjectLink`` on a column that is not a top-level (optionally
            nullable) ``String``, or with another link type (refused as kamu does).
    """
    schema = event.schema
    if schema is None or not schema.fields:
        return ()
    found: list[str] = []
    for field in schema.fields:
        link = _is_object_link(field, where)
        inner = field.type
        while isinstance(inner, DataTypeOption):
            inner = inner.inner
        if isinstance(inner, DataTypeString):
            if link:
                if not field.name:
                    raise FormatError(f"{where}: an ObjectLink column has no name")
                found.append(field.name)
            continue
        if link:
            raise FormatError(
                f"{where}: field {field.name!r} is an ObjectLink but not a String column"
            )
        if isinstance(inner, DataTypeStruct):
            _refuse_nested(inner, where)
    return tuple(found)


def _refuse_nested(struct: DataTypeStruct, where: str) -> None:
    for sub in struct.fields or ():
        if _is_object_link(sub, where):
            raise FormatError(
                f"{where}: field {sub.name!r} is an ObjectLink inside a struct (nested "
                "ObjectLink columns are not supported, as in kamu)"
            )
        inner = sub.type
        while isinstance(inner, DataTypeOption):
            inner = inner.inner
        if isinstance(inner, DataTypeStruct):
            _refuse_nested(inner, where)


def decode_summary(event: AddData, where: str = "AddData") -> LinkedSummary | None:
    """The block's ``opendatafabric.org/linkedObjects``, or None when absent.

    Raises:
        FormatError: present but not ``{numObjectsNaive, sizeNaive}`` of non-negative
            integers (kamu denies unknown fields too).
    """
    value = _entries(event.extra, where).get(SUMMARY_KEY)
    if value is None:
        return None
    if (
        not isinstance(value, dict)
        or set(value) != {"numObjectsNaive", "sizeNaive"}
        or not all(
            isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 64
            for v in value.values()
        )
    ):
        raise FormatError(
            f"{where}: {SUMMARY_KEY} is not {{numObjectsNaive, sizeNaive}} of unsigned "
            f"integers: {json.dumps(value)[:200]}"
        )
    return LinkedSummary(value["numObjectsNaive"], value["sizeNaive"])


def encode_summary(summary: LinkedSummary, extra: ExtraAttributes | None = None) -> ExtraAttributes:
    """``extra`` with the summary set (as kamu writes an ``AddData``'s extra attributes)."""
    entries = _entries(extra, "extra attributes")
    entries[SUMMARY_KEY] = summary.to_json()
    return ExtraAttributes(json.dumps(entries, separators=(",", ":")))


def object_link_extra() -> ExtraAttributes:
    """A field's extra attributes declaring it an ``ObjectLink`` to a ``Multihash``."""
    value = {TYPE_KEY: {"kind": "ObjectLink", "linkType": {"kind": "Multihash"}}}
    return ExtraAttributes(json.dumps(value, separators=(",", ":")))
