"""The dict/YAML form is kamu's: its snapshots round-trip, every union and enum is spelled as
kamu spells it (kamu-cli ``src/odf/metadata/src/serde/yaml/derivations_generated.rs``).

The vectors in ``kamu_yaml/`` are kamu-cli's own files (path and commit on each first line).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from odfweb3.errors import FormatError
from odfweb3.odf import model_gen as m
from odfweb3.odf.codec import decode_block, encode_block
from odfweb3.odf.timestamp import Timestamp
from odfweb3.odf.yaml_form import (
    _ENUM_READ,
    _TAGS,
    DatasetSnapshot,
    dump_yaml,
    event_from_dict,
    event_to_dict,
    load_yaml,
    snapshot_from_dict,
    snapshot_to_dict,
)

VECTORS = Path(__file__).parent / "kamu_yaml"
# Vectors whose every event uses an alias or the legacy DDL list (checked in detail below).
ALIASES_ONLY = {"ca.vancouver.opendata.property.parcel-polygons.yaml", "mqtt-temp.yaml"}
FILES = sorted(VECTORS.glob("*.yaml"))

# The variant names of each union and enum in kamu's serde definitions (the names it writes;
# each also read in lowerCamel and lowercase), copied from derivations_generated.rs.
KAMU_UNIONS = {
    "MetadataEvent": "AddData ExecuteTransform Seed SetPollingSource SetTransform SetVocab "
    "SetAttachments SetInfo SetLicense SetDataSchema AddPushSource DisablePushSource "
    "DisablePollingSource",
    "FetchStep": "Url FilesGlob Container Mqtt EthereumLogs",
    "PrepStep": "Decompress Pipe",
    "ReadStep": "Csv GeoJson EsriShapefile Parquet Json NdJson NdGeoJson",
    "Transform": "Sql",
    "MergeStrategy": "Append Ledger Snapshot ChangelogStream UpsertStream",
    "EventTimeSource": "FromMetadata FromPath FromSystemTime",
    "SourceCaching": "Forever",
    "Attachments": "Embedded",
    "DataType": "Binary Bool Date Decimal Duration Float16 Float32 Float64 Int8 Int16 Int32 "
    "Int64 UInt8 UInt16 UInt32 UInt64 List Map Null Option Struct Time Timestamp String",
}
KAMU_ENUMS = {
    m.CompressionFormat: "Gzip Zip",
    m.DatasetKind: "Root Derivative",
    m.MqttQos: "AtMostOnce AtLeastOnce ExactlyOnce",
    m.SourceOrdering: "ByEventTime ByName",
    m.TimeUnit: "Second Millisecond Microsecond Nanosecond",
}


def test_every_union_variant_is_spelled_as_kamu_spells_it():
    assert {u: sorted(tags) for u, tags in _TAGS.items()} == {
        u: sorted(names.split()) for u, names in KAMU_UNIONS.items()
    }


def test_every_enum_value_is_spelled_as_kamu_spells_it():
    for cls, names in KAMU_ENUMS.items():
        written = [name for name in _ENUM_READ[cls] if name[0].isupper()]
        assert written == names.split(), cls


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("kind: FilesGlob\npath: a\norder: ByName", "ByName"),
        ("kind: filesGlob\npath: a\norder: byName", "ByName"),
        ("kind: filesglob\npath: a\norder: byname", "ByName"),
    ],
)
def test_kamus_aliases_are_read_and_its_own_name_written(text, expected):
    polling = {
        "kind": "SetPollingSource",
        "fetch": load_yaml(text),
        "read": {"kind": "Csv"},
        "merge": {"kind": "Append"},
    }
    event = event_from_dict(polling)
    assert event_to_dict(event)["fetch"] == {"kind": "FilesGlob", "path": "a", "order": expected}


@pytest.mark.parametrize("bad", ["FILESGLOB", "Files_Glob", "filesGLOB"])
def test_spellings_kamu_refuses_are_refused(bad):
    with pytest.raises(FormatError, match="unknown FetchStep kind"):
        event_from_dict(
            {
                "kind": "SetPollingSource",
                "fetch": {"kind": bad, "path": "a"},
                "read": {"kind": "Csv"},
                "merge": {"kind": "Append"},
            }
        )
    with pytest.raises(FormatError, match="unknown SourceOrdering value"):
        event_from_dict(
            {
                "kind": "SetPollingSource",
                "fetch": {"kind": "FilesGlob", "path": "a", "order": "BYNAME"},
                "read": {"kind": "Csv"},
                "merge": {"kind": "Append"},
            }
        )


def test_prepare_steps_are_unions_not_wrapped():
    # kamu's SetPollingSourceDef: `prepare: Option<Vec<PrepStep>>`, each step `kind`-tagged.
    text = """
kind: SetPollingSource
fetch: {kind: Url, url: "ftp://kamu.dev/test.zip", cache: {kind: Forever}}
prepare:
  - kind: Decompress
    format: Zip
    subPath: data_*.csv
  - kind: Pipe
    command: [sed, -e, 1d]
read: {kind: Csv, header: true}
merge: {kind: Snapshot, primaryKey: [id]}
"""
    event = event_from_dict(load_yaml(text))
    assert event.prepare == (
        m.PrepStepWrapper(
            m.PrepStepDecompress(format=m.CompressionFormat.ZIP, sub_path="data_*.csv")
        ),
        m.PrepStepWrapper(m.PrepStepPipe(command=("sed", "-e", "1d"))),
    )
    d = event_to_dict(event)
    assert d["prepare"] == [
        {"kind": "Decompress", "format": "Zip", "subPath": "data_*.csv"},
        {"kind": "Pipe", "command": ["sed", "-e", "1d"]},
    ]
    # The form odfweb3 wrote before still reads.
    old = dict(d, prepare=[{"value": step} for step in d["prepare"]])
    assert event_from_dict(old) == event


def _block_round_trip(event: m.MetadataEvent) -> m.MetadataEvent:
    block = m.MetadataBlock(Timestamp.parse("2025-01-01T00:00:00Z"), None, 0, event)
    back = decode_block(encode_block(block)).event
    assert encode_block(m.MetadataBlock(block.system_time, None, 0, back)) == encode_block(block)
    return back


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_kamu_snapshot_round_trips(path):
    doc = load_yaml(path.read_text(encoding="utf-8"))
    snapshot = snapshot_from_dict(doc)
    assert snapshot.name == doc["content"]["name"]
    # Through FlatBuffers blocks and back: the same events.
    assert tuple(_block_round_trip(e) for e in snapshot.metadata) == snapshot.metadata
    # What we write is what we read, and YAML text round-trips too.
    written = snapshot_to_dict(snapshot)
    assert snapshot_from_dict(written) == snapshot
    assert snapshot_from_dict(load_yaml(dump_yaml(snapshot))) == snapshot
    # Events kamu wrote in its own spelling come back key for key.
    compared = 0
    for original, ours in zip(
        doc["content"]["metadata"], written["content"]["metadata"], strict=True
    ):
        if not _uses_aliases_or_legacy(original):
            assert ours == original, original["kind"]
            compared += 1
    assert compared or path.name in ALIASES_ONLY


def _uses_aliases_or_legacy(event: dict) -> bool:
    text = repr(event)
    legacy_schema = any(
        isinstance(step, dict) and isinstance(step.get("schema"), list)
        for step in (event.get("read"),)
    )
    return legacy_schema or any(
        f"'kind': '{k}'" in text for k in ("mqtt", "url", "geoJson", "append", "setPollingSource")
    )


def test_what_the_vectors_mean():
    def load(name: str) -> DatasetSnapshot:
        return snapshot_from_dict(load_yaml((VECTORS / name).read_text(encoding="utf-8")))

    # Lowercase aliases throughout (kind: root, setPollingSource, url, geoJson, append).
    parcels = load("ca.vancouver.opendata.property.parcel-polygons.yaml")
    assert parcels.kind is m.DatasetKind.ROOT
    (polling,) = parcels.metadata
    assert isinstance(polling.fetch, m.FetchStepUrl)
    assert isinstance(polling.read, m.ReadStepGeoJson)
    assert isinstance(polling.merge, m.MergeStrategyAppend)
    assert event_to_dict(polling)["fetch"]["kind"] == "Url"

    mqtt = load("mqtt-temp.yaml").metadata[0]
    assert mqtt.fetch.topics[0].qos is m.MqttQos.AT_MOST_ONCE
    # A read step's `schema` list is the DDL schema, written back as kamu writes it.
    assert mqtt.read.ddl_schema == ("event_time TIMESTAMP", "value FLOAT")
    assert event_to_dict(mqtt)["read"] == {
        "kind": "NdJson",
        "ddlSchema": ["event_time TIMESTAMP", "value FLOAT"],
    }

    files = load("molecule-project-file.yaml").metadata[0]
    link = next(f for f in files.schema.fields if f.name == "content_hash")
    assert event_to_dict(files)["schema"]["fields"][5]["extra"]["opendatafabric.org/type"] == {
        "kind": "ObjectLink",
        "linkType": {"kind": "Multihash"},
    }
    assert link.type == m.DataTypeString()

    derivative = load("com.acme.shipments.overdue.yaml")
    assert derivative.kind is m.DatasetKind.DERIVATIVE
    transform = derivative.metadata[0]
    assert [i.dataset_ref for i in transform.inputs] == ["com.acme.orders", "com.acme.shipments"]
    assert [q.alias for q in transform.transform.queries] == [
        "order_shipments",
        "order_shipments_agg",
        None,
    ]


def test_snapshot_errors_are_one_line():
    with pytest.raises(FormatError, match="version 2, expected 1"):
        snapshot_from_dict({"kind": "DatasetSnapshot", "version": 2, "content": {}})
    with pytest.raises(FormatError, match=r"unknown key\(s\) extra"):
        snapshot_from_dict({"name": "x", "kind": "Root", "metadata": [], "extra": 1})
    with pytest.raises(FormatError, match=r"metadata\[0\]"):
        snapshot_from_dict({"name": "x", "kind": "Root", "metadata": [{"kind": "Nope"}]})
