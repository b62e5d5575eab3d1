"""The spec's YAML/JSON form of events and blocks (odfweb3.odf.yaml_form)."""

from __future__ import annotations

import pytest

from odfweb3.errors import FormatError
from odfweb3.odf import model_gen as m
from odfweb3.odf.codec import decode_block, encode_block
from odfweb3.odf.timestamp import Timestamp
from odfweb3.odf.yaml_form import (
    block_from_dict,
    block_to_dict,
    dump_yaml,
    event_from_dict,
    event_to_dict,
    load_yaml,
)
from tests.unit.odf.test_codec import TS_NANO, mh, sample_events, seeded_dataset_id


@pytest.mark.parametrize("event", sample_events(), ids=lambda e: type(e).__name__)
def test_event_round_trip_through_yaml(event):
    d = event_to_dict(event)
    assert d["kind"] == type(event).__name__
    assert event_from_dict(d) == event
    assert event_from_dict(load_yaml(dump_yaml(event))) == event


@pytest.mark.parametrize("event", sample_events(), ids=lambda e: type(e).__name__)
def test_block_round_trip_through_yaml_keeps_hash(event):
    block = m.MetadataBlock(TS_NANO, mh(b"prev"), 42, event)
    text = dump_yaml(block)
    back = block_from_dict(load_yaml(text))
    assert back == block
    assert encode_block(back) == encode_block(block)


def test_spec_form_of_seed_and_block():
    did = seeded_dataset_id(b"multihash")
    seed = m.Seed(dataset_id=did, dataset_kind=m.DatasetKind.ROOT)
    assert event_to_dict(seed) == {
        "kind": "Seed",
        "datasetId": "did:odf:"
        + "fed012126262ba49e1ba8392c26f7a39e1ba8d756c7469786d3365200c68402ff65dc",
        "datasetKind": "Root",
    }
    block = m.MetadataBlock(Timestamp.parse("2050-01-01T12:00:00Z"), mh(b"x"), 1, seed)
    d = block_to_dict(block)
    assert d["kind"] == "MetadataBlock"
    assert d["version"] == 3
    assert d["content"]["systemTime"] == "2050-01-01T12:00:00Z"
    assert d["content"]["prevBlockHash"] == "f" + mh(b"x").hex()
    assert d["content"]["sequenceNumber"] == 1
    assert d["content"]["event"]["kind"] == "Seed"


def test_reads_handwritten_spec_yaml():
    text = """
kind: MetadataBlock
version: 2
content:
  systemTime: 2050-01-01T12:00:00.000000001Z
  sequenceNumber: 3
  event:
    kind: SetPollingSource
    fetch:
      kind: Url
      url: https://example.org/a.csv
    prepare:
      - value:
          kind: Decompress
          format: gzip
    read:
      kind: Csv
      header: true
      schema:
        fields:
          - name: a
            type: Int32
          - name: b
            type:
              kind: List
              itemType: {kind: String}
    merge:
      kind: Ledger
      primaryKey: [a]
"""
    block = block_from_dict(load_yaml(text))
    assert block.system_time == Timestamp(2050, 1, 43200, 1)
    ev = block.event
    assert isinstance(ev, m.SetPollingSource)
    assert ev.fetch == m.FetchStepUrl(url="https://example.org/a.csv")
    assert ev.prepare == (m.PrepStepWrapper(m.PrepStepDecompress(m.CompressionFormat.GZIP)),)
    assert isinstance(ev.read, m.ReadStepCsv)
    assert ev.read.header is True
    assert ev.read.schema is not None
    assert ev.read.schema.fields[0] == m.DataField(name="a", type=m.DataTypeInt32())
    assert ev.read.schema.fields[1].type == m.DataTypeList(item_type=m.DataTypeString())
    assert ev.merge == m.MergeStrategyLedger(primary_key=("a",))
    assert decode_block(encode_block(block)) == block


def test_extra_attributes_are_objects_stored_as_sorted_compact_json():
    ev = event_from_dict(
        {"kind": "AddData", "extra": {"z": 1, "opendatafabric.org/linkedObjects": {"n": 2}}}
    )
    assert ev == m.AddData(
        extra=m.ExtraAttributes('{"opendatafabric.org/linkedObjects":{"n":2},"z":1}')
    )
    assert event_to_dict(ev)["extra"] == {"z": 1, "opendatafabric.org/linkedObjects": {"n": 2}}


def test_base58_multibase_did_is_accepted():
    # kamu-cli test_dataset_id.rs: the same DID in base16 and base58btc.
    ev = event_from_dict(
        {"kind": "Seed", "datasetId": "did:odf:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"}
    )
    assert isinstance(ev, m.Seed)
    assert ev.dataset_id is not None
    assert (
        "f" + ev.dataset_id.hex()
        == "fed012e6fcce36701dc791488e0d0b1745cc1e33a4c1c9fcc41c63bd343dbbe0970e6"
    )


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"kind": "NoSuchEvent"}, "unknown MetadataEvent kind"),
        ({"description": "no kind"}, "kind"),
        ({"kind": "SetInfo", "descripton": "typo"}, "unknown key"),
        ({"kind": "SetInfo", "keywords": "not-a-list"}, "expected a list"),
        ({"kind": "AddData", "prevOffset": "nine"}, "expected an integer"),
        ({"kind": "AddData", "prevCheckpoint": "not multibase!"}, "multibase"),
        ({"kind": "AddData", "newWatermark": "yesterday"}, "RFC 3339"),
        ({"kind": "Seed", "datasetId": "fed01"}, "did:odf"),
        ({"kind": "Seed", "datasetKind": "Sideways"}, "DatasetKind"),
        ("just a string", "mapping"),
    ],
)
def test_bad_dicts_raise_format_error_naming_the_key(data, match):
    with pytest.raises(FormatError, match=match):
        event_from_dict(data)


def test_invalid_yaml():
    with pytest.raises(FormatError, match="invalid YAML"):
        load_yaml("kind: [unclosed")


def test_timestamp_text_forms():
    assert Timestamp.parse("2020-01-01T12:00:00Z").isoformat() == "2020-01-01T12:00:00Z"
    assert Timestamp.parse("2020-01-01T12:00:00.5Z").isoformat() == "2020-01-01T12:00:00.500Z"
    assert Timestamp.parse("2020-01-01T12:00:00.000001Z").nanoseconds == 1000
    assert TS_NANO.isoformat() == "2024-12-31T23:59:59.123456789Z"
    assert Timestamp.parse(TS_NANO.isoformat()) == TS_NANO
    # offsets normalise to UTC, across a day and a year boundary
    assert Timestamp.parse("2021-01-01T01:00:00+02:00").isoformat() == "2020-12-31T23:00:00Z"
    assert Timestamp.parse("2020-01-01T00:00:00Z") < Timestamp.parse("2020-01-01T00:00:00.1Z")
    dt = Timestamp.parse("2050-01-01T12:00:00.123456Z").to_datetime()
    assert Timestamp.from_datetime(dt) == Timestamp.parse("2050-01-01T12:00:00.123456Z")
    for bad in ("2020-13-01T00:00:00Z", "2020-01-01 noon", "2020-01-01T24:00:00Z"):
        with pytest.raises(ValueError):
            Timestamp.parse(bad)
    with pytest.raises(ValueError):
        Timestamp(2021, 366, 0, 0)  # not a leap year
