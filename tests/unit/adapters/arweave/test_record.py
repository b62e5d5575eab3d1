"""Upload records: tags, body, round trip, and every inconsistency refused."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from odfweb3.errors import FormatError, ResolutionError
from odfweb3.odf.builder import example_keypair
from odfweb3.odf.multihash import hash_bytes, multihash_to_str
from odfweb3_arweave.formats.arfs import DriveLayout
from odfweb3_arweave.formats.record import (
    AddedFile,
    RecordTags,
    UploadRecord,
    check_delta_link,
    decode_record,
    encode_record,
    encode_record_chunks,
    parse_record_tags,
    record_tags,
)
from odfweb3_arweave.formats.tags import Tag

DATASET = str(example_keypair(1).dataset_id)
HEAD = multihash_to_str(hash_bytes(b"head"))
PREV = multihash_to_str(hash_bytes(b"prev"))
ID1, ID2, ID3, ID4 = ("A" * 42 + c for c in "BCDE")
LAYOUT = DriveLayout.new()
RECORD = UploadRecord(
    dataset_id=DATASET,
    head=HEAD,
    prev_head=PREV,
    prev_upload=ID1,
    manifest_id=ID2,
    drive=LAYOUT,
    added={"refs/head": AddedFile(ID3, ID4, "9f7038c7-26bd-4856-a843-8de24b828d4e")},
    unix_time=1700000000,
    app_version="0.1.0",
)


def test_tags_in_documented_order() -> None:
    assert [t.text() for t in record_tags(RECORD)] == [
        ("App-Name", "odfweb3"),
        ("App-Version", "0.1.0"),
        ("Content-Type", "application/json"),
        ("ODF-Dataset-Id", DATASET),
        ("ODF-Head", HEAD),
        ("ODF-Prev-Head", PREV),
        ("ODF-Prev-Upload", ID1),
        ("ODF-Manifest", ID2),
        ("Unix-Time", "1700000000"),
    ]
    first = replace(RECORD, prev_head=None, prev_upload=None)
    names = [t.text()[0] for t in record_tags(first)]
    assert "ODF-Prev-Head" not in names and "ODF-Prev-Upload" not in names


@pytest.mark.parametrize("record", [RECORD, replace(RECORD, prev_head=None, prev_upload=None)])
def test_round_trip(record: UploadRecord) -> None:
    body = encode_record(record)
    assert body == encode_record(record)
    doc = json.loads(body)
    assert list(doc) == sorted(doc) and doc["drive"]["driveId"] == LAYOUT.drive_id
    assert doc["added"]["refs/head"]["dataItemId"] == ID3
    assert decode_record(record_tags(record), body) == record
    assert parse_record_tags(record_tags(record)) == record.tags_view


def _swap(tags: tuple[Tag, ...], name: str, value: str | None) -> list[Tag]:
    out = [t for t in tags if t.name != name.encode()]
    return out + ([Tag.of(name, value)] if value is not None else [])


@pytest.mark.parametrize(
    ("name", "value", "needle"),
    [
        ("App-Name", "ArDrive-Core", "App-Name"),
        ("ODF-Dataset-Id", "did:web:example.org", "ODF-Dataset-Id"),
        ("ODF-Dataset-Id", None, "ODF-Dataset-Id"),
        ("ODF-Head", "zzz", "ODF-Head"),
        ("ODF-Prev-Upload", "short", "ODF-Prev-Upload"),
        ("ODF-Manifest", None, "ODF-Manifest"),
        ("Unix-Time", "yesterday", "Unix-Time"),
    ],
)
def test_bad_tags_refused(name: str, value: str | None, needle: str) -> None:
    with pytest.raises(FormatError, match=needle):
        parse_record_tags(_swap(record_tags(RECORD), name, value))


def test_body_must_agree_with_tags() -> None:
    tags = record_tags(RECORD)
    other = encode_record(replace(RECORD, head=PREV))
    with pytest.raises(FormatError, match="disagree"):
        decode_record(tags, other)
    doc = json.loads(encode_record(RECORD))
    for broken in [
        doc | {"format": "something/else"},
        doc | {"added": []},
        doc
        | {"added": {"../x": {"dataItemId": ID1, "metaItemId": ID1, "fileId": LAYOUT.drive_id}}},
        doc | {"added": {"a": {"dataItemId": ID1, "metaItemId": ID1, "fileId": "x"}}},
        doc | {"added": {"a": {"dataItemId": "x", "metaItemId": ID1, "fileId": LAYOUT.drive_id}}},
        doc | {"drive": {}},
    ]:
        with pytest.raises(FormatError):
            decode_record(tags, json.dumps(broken).encode())
    with pytest.raises(FormatError, match="not UTF-8"):
        decode_record(tags, b"\xff")


def test_a_delta_record_names_the_full_manifest_in_tags_and_body() -> None:
    # A delta upload's manifest maps only what it added; ODF-Full-Manifest says so.
    delta = replace(RECORD, full_manifest=ID4)
    tags = record_tags(delta)
    assert [t.text()[0] for t in tags][-3:] == ["ODF-Manifest", "ODF-Full-Manifest", "Unix-Time"]
    body = encode_record(delta)
    assert json.loads(body)["fullManifestId"] == ID4
    back = decode_record(tags, body)
    assert back == delta and back.delta and back.tags_view.delta
    assert parse_record_tags(tags).full_manifest == ID4
    # a full upload (and every record written before delta manifests) has neither
    assert "fullManifestId" not in json.loads(encode_record(RECORD))
    assert not decode_record(record_tags(RECORD), encode_record(RECORD)).delta


def test_full_manifest_tag_and_body_must_agree() -> None:
    delta = replace(RECORD, full_manifest=ID4)
    with pytest.raises(FormatError, match="body and tags disagree"):
        decode_record(record_tags(RECORD), encode_record(delta))
    with pytest.raises(FormatError, match="body and tags disagree"):
        decode_record(record_tags(delta), encode_record(RECORD))
    bad = [
        t if t.text()[0] != "ODF-Full-Manifest" else Tag.of(t.text()[0], "x")
        for t in record_tags(delta)
    ]
    with pytest.raises(FormatError, match="ODF-Full-Manifest"):
        parse_record_tags(bad)


def test_a_delta_record_counts_its_deltas_in_tags_and_body() -> None:
    delta = replace(RECORD, full_manifest=ID4, delta_uploads=3)
    tags = record_tags(delta)
    assert [t.text()[0] for t in tags][-4:] == [
        "ODF-Manifest",
        "ODF-Full-Manifest",
        "ODF-Delta-Uploads",
        "Unix-Time",
    ]
    assert dict(t.text() for t in tags)["ODF-Delta-Uploads"] == "3"
    body = encode_record(delta)
    assert json.loads(body)["deltaUploads"] == 3
    assert decode_record(tags, body) == delta
    # a delta written before the count existed still reads (no count: the walk's own bound)
    older = replace(RECORD, full_manifest=ID4)
    assert decode_record(record_tags(older), encode_record(older)).delta_uploads is None
    with pytest.raises(FormatError, match="body and tags disagree"):
        decode_record(record_tags(older), body)
    for value in ("0", "-1", "x", "1" * 10):
        bad = [
            t if t.text()[0] != "ODF-Delta-Uploads" else Tag.of(t.text()[0], value) for t in tags
        ]
        with pytest.raises(FormatError, match="ODF-Delta-Uploads"):
            parse_record_tags(bad)
    # only a delta upload counts deltas
    full_with_count = [*record_tags(RECORD)[:-1], Tag.of("ODF-Delta-Uploads", "1")]
    with pytest.raises(FormatError, match="ODF-Delta-Uploads"):
        parse_record_tags(full_with_count)


@pytest.mark.parametrize(
    ("later", "earlier", "needle"),
    [
        (1, 4, "longer than its records say"),  # a first delta after another delta
        (3, 0, "this one is full"),  # deltas announced, a full upload found
        (3, 1, "counts 1 delta uploads after one counting 3"),
    ],
)
def test_the_count_of_deltas_must_hold_at_every_link(later: int, earlier: int, needle: str) -> None:
    def tags_of(count: int) -> RecordTags:
        rec = replace(RECORD, full_manifest=ID4, delta_uploads=count) if count else RECORD
        return rec.tags_view

    with pytest.raises(ResolutionError, match=needle):
        check_delta_link(tags_of(later), tags_of(earlier), "here")
    check_delta_link(tags_of(2), tags_of(1), "here")
    check_delta_link(tags_of(1), tags_of(0), "here")
    check_delta_link(replace(RECORD, full_manifest=ID4).tags_view, tags_of(7), "here")  # older


def test_a_large_record_is_encoded_in_pieces_of_the_same_bytes() -> None:
    """A first upload's record lists every path: encoded an entry at a time, in pieces,
    the bytes of the whole document dumped at once (sorted keys, compact, ASCII)."""
    added = {
        f"data/{n:05d}é" if n == 7 else f"data/{n:05d}": AddedFile(ID3, ID4, f"file-{n}")
        for n in range(30_000)  # about 2.7 MB: three pieces
    }
    record = replace(RECORD, added={**added, **RECORD.added})
    pieces = list(encode_record_chunks(record))
    assert len(pieces) >= 3 and all(pieces)
    doc = json.loads(b"".join(pieces))
    want = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode("ascii")
    assert b"".join(pieces) == want == encode_record(record)
    assert doc["added"]["data/00007é"] == {"dataItemId": ID3, "metaItemId": ID4, "fileId": "file-7"}
    empty = replace(RECORD, added={})
    assert json.loads(encode_record(empty))["added"] == {}
