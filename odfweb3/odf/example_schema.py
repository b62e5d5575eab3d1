"""The ODF data schemas (RFC-016) the example datasets declare in SetDataSchema.

kamu writes SetDataSchema with the structured ``schema`` field and no
``rawArrowSchema`` (kamu-cli ``SetDataSchema::new``; the Arrow flatbuffer form is
deprecated, kept only to read old chains). Every schema starts with the four
system columns in kamu's order and types (``DataSchemaBuilder::
with_changelog_system_fields``): ``offset`` Int64, ``op`` Int32, ``system_time``
and ``event_time`` Timestamp with the defaults left out (millisecond, ``UTC``),
all required. kamu checks a new schema holds them (``ValidateSetDataSchemaVisitor``).

Two archetypes:

- :data:`PAYLOAD_SCHEMA`: the system columns and ``payload`` (Binary), the bytes that
  make a data file the size asked for;
- :data:`VERSIONED_FILE_SCHEMA`: kamu's "versioned file" archetype (kamu-cli
  ``VersionedFileEntity::dataset_snapshot``): ``version`` Int32, ``content_hash`` String
  marked ``opendatafabric.org/type: {kind: ObjectLink, linkType: {kind: Multihash}}``
  (ODF RFC-017: the object is stored in ``data/<multihash>``), ``content_length`` Int64,
  ``content_type`` optional String, and ``kamu.dev/archetype: VersionedFile`` on the schema.

Extra attributes are a JSON object stored as text; written here with sorted keys
and no spaces, as :mod:`odfweb3.odf.yaml_form` writes them.
"""

from __future__ import annotations

import json
from typing import Any, Final

from odfweb3.odf.model_gen import (
    DataField,
    DataSchema,
    DataTypeBinary,
    DataTypeInt32,
    DataTypeInt64,
    DataTypeOption,
    DataTypeString,
    DataTypeTimestamp,
    ExtraAttributes,
    SetDataSchema,
)

__all__ = [
    "CONTENT_HASH_COLUMN",
    "LINKED_OBJECTS_KEY",
    "OBJECT_LINK_TYPE",
    "PAYLOAD_SCHEMA",
    "SYSTEM_FIELDS",
    "VERSIONED_FILE_SCHEMA",
    "extra_attributes",
    "set_data_schema",
]

LINKED_OBJECTS_KEY: Final = "opendatafabric.org/linkedObjects"
OBJECT_LINK_TYPE: Final = {"kind": "ObjectLink", "linkType": {"kind": "Multihash"}}
CONTENT_HASH_COLUMN: Final = "content_hash"


def extra_attributes(entries: dict[str, Any]) -> ExtraAttributes:
    """Extra attributes from a JSON object (sorted keys, compact)."""
    return ExtraAttributes(
        entries=json.dumps(entries, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    )


def _described(name: str, dtype: Any, description: str, **extra: Any) -> DataField:
    return DataField(
        name=name,
        type=dtype,
        extra=extra_attributes({"opendatafabric.org/description": description, **extra}),
    )


SYSTEM_FIELDS: Final = (
    DataField(name="offset", type=DataTypeInt64()),
    DataField(name="op", type=DataTypeInt32()),
    DataField(name="system_time", type=DataTypeTimestamp()),
    DataField(name="event_time", type=DataTypeTimestamp()),
)

PAYLOAD_SCHEMA: Final = DataSchema(
    fields=(
        *SYSTEM_FIELDS,
        _described("payload", DataTypeBinary(), "Pseudo-random bytes written by odfweb3 example"),
    )
)

VERSIONED_FILE_SCHEMA: Final = DataSchema(
    fields=(
        *SYSTEM_FIELDS,
        _described(
            "version",
            DataTypeInt32(),
            "Sequential identifier assigned to each entry as new versions are uploaded",
        ),
        _described(
            CONTENT_HASH_COLUMN,
            DataTypeString(),
            "Hash that references the externally-stored object content",
            **{"opendatafabric.org/type": OBJECT_LINK_TYPE},
        ),
        _described("content_length", DataTypeInt64(), "Size of the linked object in bytes"),
        _described(
            "content_type",
            DataTypeOption(inner=DataTypeString()),
            "Media type associated with the linked object",
        ),
    ),
    extra=extra_attributes({"kamu.dev/archetype": "VersionedFile"}),
)


def set_data_schema(schema: DataSchema) -> SetDataSchema:
    """The event as kamu writes it: the ODF schema, no raw Arrow schema."""
    return SetDataSchema(schema=schema)
