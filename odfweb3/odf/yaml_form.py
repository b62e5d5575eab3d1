"""The ODF spec's YAML/JSON form of events and blocks, read and written with pyyaml.

Conventions (ODF JSON schemas, ``schemas/dataset/v1alpha1/*.json``): keys are the camelCase of
the FlatBuffers field names; a union value is a mapping with a ``kind`` tag, the member's name
without the union's prefix (``FetchStepUrl`` -> ``Url``; ``MetadataEvent`` members keep their
full name, e.g. ``kind: SetInfo``); enums are written by their schema names (``Root``);
timestamps are RFC 3339 (UTC, ``Z``, nanoseconds kept); multihash fields are multibase base16
(``f1620…``); ``datasetId`` is ``did:odf:`` + multibase base16 of the stored bytes (multicodec
ed25519-pub varint ``0xed 0x01`` + 32-byte key); ``ExtraAttributes`` is an object (stored in the
block as compact JSON text with sorted keys, as the reference implementation writes it). Absent
fields are omitted. A block is ``{kind: MetadataBlock, version: 3, content: {...}}``.

This is kamu-cli's YAML (``src/odf/metadata/src/serde/yaml/derivations_generated.rs``, the
serde definitions it reads and writes manifests with), checked against it:

- a union is written with its variant's PascalCase name (``kind: FilesGlob``, ``kind: UInt8``)
  and read also by the two aliases kamu accepts, lowerCamel and lowercase (``filesGlob``,
  ``filesglob``; ``uInt8``, ``uint8``), nothing else; an enum the same way (``ByEventTime``,
  ``byEventTime``, ``byeventtime``);
- ``SetPollingSource.prepare`` is a list of ``PrepStep`` unions (``{kind: Decompress,
  format: Gzip}``): the FlatBuffers schema wraps each step in a ``PrepStepWrapper`` table only
  because a FlatBuffers vector cannot hold a union, and the YAML has no such level (odfweb3's
  older ``{value: {kind: ...}}`` is still read);
- a read step's ``schema`` given as a list of strings is the DDL schema (``ddlSchema``), as
  kamu's own snapshots still write it (``resources/molecule/*.yaml``); a mapping is the ODF
  ``DataSchema``;
- a dataset snapshot is ``{kind: DatasetSnapshot, version: 1, content: {name, kind,
  metadata: [events]}}`` (``YamlDatasetSnapshotDeserializer``).

Everything here is schema-driven (:data:`odfweb3.odf.model_gen.SCHEMA_FIELDS`), so every table of
the model has a dict form.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
from typing import Any

import yaml

from odfweb3.errors import FormatError
from odfweb3.odf import model_gen as m
from odfweb3.odf.timestamp import Timestamp

__all__ = [
    "DatasetSnapshot",
    "block_from_dict",
    "block_to_dict",
    "dump_yaml",
    "event_from_dict",
    "event_to_dict",
    "load_yaml",
    "snapshot_from_dict",
    "snapshot_to_dict",
    "table_from_dict",
    "table_to_dict",
]

_DID_ODF = "did:odf:"
_BLOCK_VERSION = 3

# [ubyte] fields that are not multihashes.
_DID_FIELDS = frozenset({"dataset_id"})
_BASE64_FIELDS = frozenset({"raw_arrow_schema"})  # opaque Arrow flatbuffer (deprecated field)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _enum_name(member: enum.IntEnum) -> str:
    return "".join(p.capitalize() for p in member.name.split("_"))


def _tag(union: str, cls: type) -> str:
    name = cls.__name__
    return name[len(union) :] if name.startswith(union) and name != union else name


_FIELDS: dict[type, tuple[tuple[str, str, str], ...]] = {
    cls: tuple((f, t, _camel(f)) for f, t in fields) for cls, fields in m.SCHEMA_FIELDS.items()
}
# Fields with no dataclass default whose type still admits None: absent means None.
_NULLABLE_REQUIRED: dict[type, tuple[str, ...]] = {
    cls: tuple(
        f.name
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and str(f.type).endswith("| None")
    )
    for cls in _FIELDS
}
_TAGS: dict[str, dict[str, type]] = {
    u: {_tag(u, c): c for c in members} for u, members in m.UNION_MEMBERS.items()
}


def _kamu_aliases(name: str) -> tuple[str, str, str]:
    """The spellings kamu reads for a union variant or enum value: itself, lowerCamel,
    lowercase (``#[serde(alias = ...)]`` on every variant of derivations_generated.rs)."""
    return name, name[:1].lower() + name[1:], name.lower()


_TAG_READ: dict[str, dict[str, type]] = {
    u: {alias: c for tag, c in tags.items() for alias in _kamu_aliases(tag)}
    for u, tags in _TAGS.items()
}
_ENUM_READ: dict[type, dict[str, enum.IntEnum]] = {
    e: {alias: member for member in e for alias in _kamu_aliases(_enum_name(member))}
    for e in vars(m).values()
    if isinstance(e, type) and issubclass(e, enum.IntEnum) and e is not enum.IntEnum
}
# Read steps that have both the deprecated DDL schema and the ODF DataSchema.
_DDL_AND_SCHEMA: frozenset[type] = frozenset(
    cls
    for cls, fields in m.SCHEMA_FIELDS.items()
    if {"ddl_schema", "schema"} <= {f for f, _ in fields}
)


def _multibase_decode(text: str, where: str) -> bytes:
    """Decode any final multibase encoding (we write base16 ``f``; kamu also reads ``z``)."""
    if not isinstance(text, str) or not text:
        raise FormatError(f"{where}: expected a multibase string, got {text!r}")
    try:
        if text[0] == "f":  # fast path for the form we write
            return bytes.fromhex(text[1:])
        from multiformats import multibase  # the other encodings: rare, and slow to import

        return bytes(multibase.decode(text))
    except (ValueError, KeyError) as exc:
        raise FormatError(f"{where}: not a valid multibase string: {text!r}") from exc


# ---------------------------------------------------------------------------------------------
# to dict
# ---------------------------------------------------------------------------------------------


def _value_to(ftype: str, fname: str, value: Any) -> Any:
    if ftype == "[ubyte]":
        if fname in _DID_FIELDS:
            return _DID_ODF + "f" + value.hex()
        if fname in _BASE64_FIELDS:
            return base64.b64encode(value).decode("ascii")
        return "f" + value.hex()
    if ftype.startswith("["):
        elem = ftype[1:-1]
        return [_value_to(elem, fname, v) for v in value]
    if ftype == "Timestamp":
        return value.isoformat()
    if isinstance(value, enum.IntEnum):
        return _enum_name(value)
    if ftype in m.UNION_MEMBERS:
        out = {"kind": _tag(ftype, type(value))}
        out.update(table_to_dict(value))
        return out
    if isinstance(value, m.PrepStepWrapper):
        # No wrapper in the YAML: a prepare step is the PrepStep union itself.
        return {} if value.value is None else _value_to("PrepStep", fname, value.value)
    if isinstance(value, m.ExtraAttributes):
        if value.entries is None:
            return {}
        # A JSON string inside a block from a replica (its size bounded by the block's):
        # odfweb3.odf may not use odfweb3.foreign_json (dependency rule), so a document
        # too deep for the parser is refused here in one line.
        try:
            return json.loads(value.entries)
        except (ValueError, RecursionError) as exc:
            raise FormatError(f"extra attributes: not JSON ({str(exc)[:100]})") from None
    if type(value) in _FIELDS:
        return table_to_dict(value)
    return value


def table_to_dict(table: Any) -> dict[str, Any]:
    """Dict form of any model table (fields that are absent/``None`` are omitted)."""
    out: dict[str, Any] = {}
    for fname, ftype, key in _FIELDS[type(table)]:
        value = getattr(table, fname)
        if value is not None:
            out[key] = _value_to(ftype, fname, value)
    return out


def event_to_dict(event: m.MetadataEvent) -> dict[str, Any]:
    """The spec's form of an event: ``{kind: SetInfo, description: ...}``."""
    return _value_to("MetadataEvent", "event", event)  # type: ignore[no-any-return]


def block_to_dict(block: m.MetadataBlock) -> dict[str, Any]:
    """The spec's manifest form of a block: ``{kind: MetadataBlock, version: 3, content: ...}``."""
    return {"kind": "MetadataBlock", "version": _BLOCK_VERSION, "content": table_to_dict(block)}


# ---------------------------------------------------------------------------------------------
# from dict
# ---------------------------------------------------------------------------------------------


def _value_from(ftype: str, fname: str, value: Any, where: str) -> Any:
    if ftype == "[ubyte]":
        if fname in _DID_FIELDS:
            if not isinstance(value, str) or not value.startswith(_DID_ODF):
                raise FormatError(f"{where}: expected a did:odf:... string, got {value!r}")
            return _multibase_decode(value[len(_DID_ODF) :], where)
        if fname in _BASE64_FIELDS:
            try:
                return base64.b64decode(value, validate=True)
            except (ValueError, TypeError) as exc:
                raise FormatError(f"{where}: expected base64 text") from exc
        return _multibase_decode(value, where)
    if ftype.startswith("["):
        if not isinstance(value, list):
            raise FormatError(f"{where}: expected a list, got {type(value).__name__}")
        elem = ftype[1:-1]
        return tuple(_value_from(elem, fname, v, f"{where}[{i}]") for i, v in enumerate(value))
    if ftype == "string":
        if not isinstance(value, str):
            raise FormatError(f"{where}: expected a string, got {type(value).__name__}")
        return value
    if ftype == "Timestamp":
        try:
            if hasattr(value, "isoformat") and not isinstance(value, str):
                value = value.isoformat()  # pyyaml turns unquoted timestamps into datetimes
                if value.endswith("+00:00"):
                    value = value[:-6] + "Z"
            return Timestamp.parse(value)
        except (ValueError, TypeError) as exc:
            raise FormatError(f"{where}: expected an RFC 3339 timestamp, got {value!r}") from exc
    if ftype == "PrepStepWrapper":
        if isinstance(value, dict) and set(value) == {"value"}:  # odfweb3's older form
            value = value["value"]
        return m.PrepStepWrapper(_value_from("PrepStep", fname, value, where))
    if ftype in m.UNION_MEMBERS:
        if isinstance(value, str) and ftype == "DataType":  # "union-or-string": `type: Int32`
            value = {"kind": value}
        if not isinstance(value, dict) or "kind" not in value:
            raise FormatError(f"{where}: expected a mapping with 'kind' for union {ftype}")
        tag = value["kind"]
        cls = _TAG_READ[ftype].get(tag) if isinstance(tag, str) else None
        if cls is None:
            raise FormatError(f"{where}: unknown {ftype} kind {value['kind']!r}")
        return table_from_dict(cls, {k: v for k, v in value.items() if k != "kind"}, where)
    enum_cls = getattr(m, ftype, None)
    if isinstance(enum_cls, type) and issubclass(enum_cls, enum.IntEnum):
        found = _ENUM_READ[enum_cls].get(value) if isinstance(value, str) else None
        if found is not None:
            return found
        raise FormatError(f"{where}: unknown {ftype} value {value!r}")
    if ftype == "ExtraAttributes":
        if not isinstance(value, dict):
            raise FormatError(f"{where}: expected a mapping of extra attributes")
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return m.ExtraAttributes(entries=text)
    if isinstance(enum_cls, type) and enum_cls in _FIELDS:
        return table_from_dict(enum_cls, value, where)
    if ftype == "bool":
        if not isinstance(value, bool):
            raise FormatError(f"{where}: expected true/false, got {value!r}")
        return value
    if ftype in ("float", "double", "float32", "float64"):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise FormatError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise FormatError(f"{where}: expected an integer, got {value!r}")
    return value


def table_from_dict(cls: type, data: Any, where: str | None = None) -> Any:
    """Build a model table of class ``cls`` from its dict form.

    Raises:
        FormatError: a key is unknown or a value has the wrong shape (names the key path).
    """
    where = where or cls.__name__
    if not isinstance(data, dict):
        raise FormatError(f"{where}: expected a mapping, got {type(data).__name__}")
    fields = _FIELDS[cls]
    if cls in _DDL_AND_SCHEMA and isinstance(data.get("schema"), list) and "ddlSchema" not in data:
        data = {("ddlSchema" if k == "schema" else k): v for k, v in data.items()}
    known = {key for _, _, key in fields}
    unknown = sorted(set(data) - known)
    if unknown:
        raise FormatError(f"{where}: unknown key(s) {', '.join(map(str, unknown))}")
    kwargs = {}
    for fname, ftype, key in fields:
        if key in data and data[key] is not None:
            kwargs[fname] = _value_from(ftype, fname, data[key], f"{where}.{key}")
    for name in _NULLABLE_REQUIRED.get(cls, ()):
        kwargs.setdefault(name, None)  # e.g. MetadataBlock.prev_block_hash of a Seed block
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise FormatError(f"{where}: {exc}") from exc


def event_from_dict(data: Any) -> m.MetadataEvent:
    """Build an event from its spec form (``kind`` names the event type)."""
    event: m.MetadataEvent = _value_from("MetadataEvent", "event", data, "event")
    return event


def block_from_dict(data: Any) -> m.MetadataBlock:
    """Build a block from its manifest form (or from the bare ``content`` mapping)."""
    if isinstance(data, dict) and data.get("kind") == "MetadataBlock":
        data = data.get("content")
    block: m.MetadataBlock = table_from_dict(m.MetadataBlock, data, "MetadataBlock")
    return block


@dataclasses.dataclass(frozen=True)
class DatasetSnapshot:
    """A dataset's definition as kamu's ``kamu add`` reads it: its alias, kind and events."""

    name: str
    kind: m.DatasetKind
    metadata: tuple[m.MetadataEvent, ...]


_SNAPSHOT_VERSION = 1


def snapshot_from_dict(data: Any) -> DatasetSnapshot:
    """Read a ``DatasetSnapshot`` manifest (or its bare ``content`` mapping).

    Raises:
        FormatError: not a snapshot of version 1, an unknown key, or a bad event.
    """
    if isinstance(data, dict) and data.get("kind") == "DatasetSnapshot":
        if data.get("version") != _SNAPSHOT_VERSION:
            raise FormatError(
                f"DatasetSnapshot: version {data.get('version')!r}, expected {_SNAPSHOT_VERSION}"
            )
        data = data.get("content")
    if not isinstance(data, dict):
        raise FormatError("DatasetSnapshot: expected a mapping")
    unknown = sorted(set(data) - {"name", "kind", "metadata"})
    if unknown:
        raise FormatError(f"DatasetSnapshot: unknown key(s) {', '.join(map(str, unknown))}")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise FormatError("DatasetSnapshot.name: expected the dataset's alias")
    kind = _value_from("DatasetKind", "kind", data.get("kind"), "DatasetSnapshot.kind")
    events = data.get("metadata")
    if not isinstance(events, list):
        raise FormatError("DatasetSnapshot.metadata: expected a list of events")
    metadata = tuple(
        _value_from("MetadataEvent", "event", e, f"DatasetSnapshot.metadata[{i}]")
        for i, e in enumerate(events)
    )
    return DatasetSnapshot(name=name, kind=kind, metadata=metadata)


def snapshot_to_dict(snapshot: DatasetSnapshot) -> dict[str, Any]:
    """The ``DatasetSnapshot`` manifest kamu writes (``YamlDatasetSnapshotSerializer``)."""
    return {
        "kind": "DatasetSnapshot",
        "version": _SNAPSHOT_VERSION,
        "content": {
            "name": snapshot.name,
            "kind": _enum_name(snapshot.kind),
            "metadata": [event_to_dict(e) for e in snapshot.metadata],
        },
    }


def dump_yaml(obj: Any) -> str:
    """YAML text of a dict form, or of a block/event/table (converted first)."""
    if isinstance(obj, m.MetadataBlock):
        obj = block_to_dict(obj)
    elif isinstance(obj, DatasetSnapshot):
        obj = snapshot_to_dict(obj)
    elif type(obj) in m.UNION_MEMBERS["MetadataEvent"]:
        obj = event_to_dict(obj)
    elif type(obj) in _FIELDS:
        obj = table_to_dict(obj)
    return yaml.safe_dump(obj, sort_keys=False, allow_unicode=True)


class _Loader(yaml.SafeLoader):
    """SafeLoader that keeps timestamps as text, so nanoseconds survive (pyyaml's datetime
    conversion would truncate them to microseconds)."""


_Loader.yaml_implicit_resolvers = {
    ch: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for ch, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_yaml(text: str) -> Any:
    """Parse YAML text (safe loader only; timestamps stay strings).

    Raises:
        FormatError: the text is not valid YAML.
    """
    try:
        return yaml.load(text, Loader=_Loader)  # a SafeLoader subclass: safe
    except yaml.YAMLError as exc:
        raise FormatError(f"invalid YAML: {str(exc).splitlines()[0]}") from exc
