"""Whether a new SetDataSchema may follow the current one, as kamu decides it.

kamu diffs the two ODF schemas (``DataSchema::diff`` in kamu-cli's
``src/odf/metadata/src/dtos/data_schema_cmp.rs``) and its SetDataSchema validator
(``metadata_chain_validators.rs``) compares them ignoring attributes and field order: no
difference at all is a no-op (``NoOpEvent``, "New schema is identical to the current"); a
difference that remains is allowed only when every part of it is a migration kamu allows
(attributes changed, fields reordered, an optional field added, and the same inside
structs and lists); anything else (a field removed, a required field added, a type changed,
a field becoming optional or required) is an ``InvalidEvent``.

The diff is kamu's, quirks included: fields are matched by position when both schemas
have the same names in the same order, otherwise by name, and then (as kamu's code does)
the types of the fields matched by name are not compared.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from odfweb3.odf.model_gen import (
    DataField,
    DataSchema,
    DataType,
    DataTypeList,
    DataTypeOption,
    DataTypeStruct,
    ExtraAttributes,
)

__all__ = ["SchemaChange", "schema_change"]

SchemaChange = Literal["identical", "allowed", "incompatible"]


@dataclass(frozen=True)
class _Item:
    """One difference: ``kind`` as kamu's ``DataSchemaDiffItem`` / ``DataTypeDiffItem``."""

    kind: str
    field: DataField | None = None  # FieldAdded: the new field
    inner: tuple[_Item, ...] = ()  # FieldTypeChanged / StructDiff / ListDiff


def _attrs(extra: ExtraAttributes | None) -> object:
    """Attributes as kamu compares them: the JSON value, not its text."""
    if extra is None or extra.entries is None:
        return None
    try:
        return json.loads(extra.entries)
    except ValueError:
        return extra.entries


def _type_diff(lhs: DataType | None, rhs: DataType | None) -> list[_Item]:
    if lhs == rhs:
        return []
    if isinstance(lhs, DataTypeOption) and isinstance(rhs, DataTypeOption):
        return _type_diff(lhs.inner, rhs.inner)
    if isinstance(rhs, DataTypeOption):
        return [_Item("BecameOptional"), *_type_diff(lhs, rhs.inner)]
    if isinstance(lhs, DataTypeOption):
        return [_Item("BecameRequired"), *_type_diff(lhs.inner, rhs)]
    if isinstance(lhs, DataTypeStruct) and isinstance(rhs, DataTypeStruct):
        inner = _fields_diff(lhs.fields or (), None, rhs.fields or (), None)
        return [_Item("StructDiff", inner=tuple(inner))] if inner else []
    if isinstance(lhs, DataTypeList) and isinstance(rhs, DataTypeList):
        inner = _type_diff(lhs.item_type, rhs.item_type)
        if not inner:
            return [_Item("Changed")]  # only the fixed length differs
        return [_Item("ListDiff", inner=tuple(inner))]
    return [_Item("Changed")]


def _fields_diff(
    lhs: tuple[DataField, ...],
    lhs_extra: ExtraAttributes | None,
    rhs: tuple[DataField, ...],
    rhs_extra: ExtraAttributes | None,
) -> list[_Item]:
    items: list[_Item] = []
    if _attrs(lhs_extra) != _attrs(rhs_extra):
        items.append(_Item("SchemaAttributesChanged"))
    pairs: list[tuple[DataField, DataField]] = []
    if len(lhs) == len(rhs) and all(a.name == b.name for a, b in zip(lhs, rhs, strict=True)):
        pairs = list(zip(lhs, rhs, strict=True))
    else:
        by_name = {f.name: (i, f) for i, f in enumerate(rhs)}
        for i, f in enumerate(lhs):
            match = by_name.pop(f.name, None)
            if match is None:
                items.append(_Item("FieldRemoved"))
            elif match[0] != i:
                items.append(_Item("FieldReordered"))
        # kamu lists what is left in name order (a BTreeMap)
        items.extend(_Item("FieldAdded", f) for _, (_, f) in sorted(by_name.items(), key=_key))
        # kamu's diff drops the matched pairs here: their types are not compared
    for a, b in pairs:
        inner = _type_diff(a.type, b.type)
        if inner:
            items.append(_Item("FieldTypeChanged", inner=tuple(inner)))
        if _attrs(a.extra) != _attrs(b.extra):
            items.append(_Item("FieldAttributesChanged"))
    return items


def _key(item: tuple[str | None, tuple[int, DataField]]) -> str:
    return item[0] or ""


def _equivalent(item: _Item) -> bool:
    """Not a difference once attributes and order are ignored (kamu's ``filter_equivalent``,
    optionality not ignored)."""
    if item.kind in ("SchemaAttributesChanged", "FieldAttributesChanged", "FieldReordered"):
        return True
    if item.kind == "FieldTypeChanged":
        return all(_type_equivalent(t) for t in item.inner)
    return False


def _type_equivalent(item: _Item) -> bool:
    if item.kind == "StructDiff":
        return all(_equivalent(i) for i in item.inner)
    if item.kind == "ListDiff":
        return all(_type_equivalent(i) for i in item.inner)
    return False


def _allowed(item: _Item) -> bool:
    """A migration kamu allows (``check_allowed_schema_migration_item``)."""
    if item.kind in ("SchemaAttributesChanged", "FieldAttributesChanged", "FieldReordered"):
        return True
    if item.kind == "FieldAdded":
        return item.field is not None and isinstance(item.field.type, DataTypeOption)
    if item.kind == "FieldTypeChanged":
        return all(_type_allowed(t) for t in item.inner)
    return False  # FieldRemoved


def _type_allowed(item: _Item) -> bool:
    if item.kind == "StructDiff":
        return all(_allowed(i) for i in item.inner)
    if item.kind == "ListDiff":
        return all(_type_allowed(i) for i in item.inner)
    return False  # Changed, BecameOptional, BecameRequired


def schema_change(prev: DataSchema, new: DataSchema) -> SchemaChange:
    """How ``new`` relates to the current schema ``prev`` (both ODF schemas)."""
    items = _fields_diff(prev.fields or (), prev.extra, new.fields or (), new.extra)
    if not items:
        return "identical"
    rest = [i for i in items if not _equivalent(i)]
    if not rest or all(_allowed(i) for i in rest):
        return "allowed"
    return "incompatible"
