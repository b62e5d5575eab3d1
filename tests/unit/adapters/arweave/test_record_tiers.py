"""Tiered upload records: the body's span, earlier files and skip chain (formats/record.py),
and the publisher's binary counter that writes them (publish/bundle_plan.plan_tier)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from odfweb3.errors import FormatError
from odfweb3.odf.builder import example_keypair
from odfweb3.odf.multihash import hash_bytes, multihash_to_str
from odfweb3_arweave.formats.arfs import DriveLayout
from odfweb3_arweave.formats.record import (
    AddedFile,
    SkipLink,
    UploadRecord,
    decode_record,
    encode_record,
    record_tags,
)
from odfweb3_arweave.publish.bundle_plan import (
    BundlePlan,
    PreviousUpload,
    Tier,
    plan_tier,
    rebuilt_tiers,
    tiers_after,
)

DATASET = str(example_keypair(1).dataset_id)
LAYOUT = DriveLayout.new()
FULL = "F" * 43
UUID = "9f7038c7-26bd-4856-a843-8de24b828d4e"


def rid(n: int) -> str:
    return f"{n:043d}"


def head(n: int) -> str:
    return multihash_to_str(hash_bytes(str(n).encode()))


def files(n: int) -> dict[str, AddedFile]:
    return {
        f"blocks/{head(n)}": AddedFile(rid(n), rid(n + 1), UUID),
        "refs/head": AddedFile(rid(n + 2), rid(n + 3), UUID),
    }


# Upload 6 since the full manifest spans 2 (itself and 5), then jumps to 4 and to the full 0.
TIERED = UploadRecord(
    dataset_id=DATASET,
    head=head(6),
    prev_head=head(5),
    prev_upload=rid(5),
    manifest_id=rid(600),
    drive=LAYOUT,
    added=files(6),
    unix_time=1700000006,
    app_version="0.1.0",
    full_manifest=FULL,
    delta_uploads=6,
    span_uploads=2,
    earlier={f"blocks/{head(5)}": AddedFile(rid(5), rid(6), UUID)},
    skip_chain=(SkipLink(rid(4), head(4), 4), SkipLink(rid(0), head(0), 0)),
)


def test_golden_body_and_round_trip() -> None:
    body = encode_record(TIERED)
    doc = json.loads(body)
    assert doc["spanUploads"] == 2
    assert doc["skipChain"] == [[rid(4), head(4), 4], [rid(0), head(0), 0]]
    assert list(doc["earlier"]) == [f"blocks/{head(5)}"]
    assert decode_record(record_tags(TIERED), body) == TIERED
    # tags are what they were: GraphQL sees the same record as before tiers
    assert record_tags(TIERED) == record_tags(
        replace(TIERED, span_uploads=None, earlier={}, skip_chain=())
    )
    plain = replace(TIERED, span_uploads=None, earlier={}, skip_chain=())
    assert "skipChain" not in json.loads(encode_record(plain))


def _broken(**doc_changes: object) -> str:
    doc = json.loads(encode_record(TIERED))
    doc.update(doc_changes)
    for key, value in list(doc.items()):
        if value is None:
            del doc[key]
    with pytest.raises(FormatError) as err:
        decode_record(record_tags(TIERED), json.dumps(doc).encode())
    assert "\n" not in str(err.value)
    return str(err.value)


def test_a_tier_cannot_make_the_walk_longer_or_lie_about_counts() -> None:
    assert "together" in _broken(earlier=None)
    assert "spanUploads" in _broken(spanUploads=7)  # more than the record's 6 deltas
    assert "spanUploads" in _broken(spanUploads=0)
    assert "spanUploads" in _broken(spanUploads=True)
    # the first jump must land exactly span uploads back, then count down to the full one
    assert "count down" in _broken(skipChain=[[rid(3), head(3), 3], [rid(0), head(0), 0]])
    assert "count down" in _broken(skipChain=[[rid(4), head(4), 4], [rid(2), head(2), 5]])
    assert "end of the chain" in _broken(
        skipChain=[[rid(4), head(4), 4], [rid(0), head(0), 0], [rid(9), head(9), 0]]
    )
    assert "1 to 64" in _broken(skipChain=[])
    assert "1 to 64" in _broken(skipChain=[[rid(4), head(4), 4]] + [[rid(0), head(0), 0]] * 64)
    assert "item id" in _broken(skipChain=[["../etc", head(4), 4], [rid(0), head(0), 0]])
    assert "repeats" in _broken(earlier={"refs/head": AddedFile(rid(1), rid(2), UUID).to_json()})


def test_a_span_of_one_jumps_to_the_previous_upload() -> None:
    one = replace(
        TIERED,
        delta_uploads=5,
        span_uploads=1,
        earlier={},
        skip_chain=(SkipLink(rid(4), head(4), 4), SkipLink(rid(0), head(0), 0)),
    )
    with pytest.raises(FormatError, match="ODF-Prev-Upload"):
        decode_record(record_tags(one), encode_record(one))
    ok = replace(one, prev_upload=rid(4), prev_head=head(4))
    assert decode_record(record_tags(ok), encode_record(ok)) == ok


def _plan(previous: PreviousUpload, n: int) -> tuple[BundlePlan, dict[str, AddedFile]]:
    added = files(10 * n)
    span, earlier, chain, rest = plan_tier(previous, n, added)
    bundle = BundlePlan(
        dataset_id=DATASET,
        head=head(n),
        prev_head=previous.head,
        prev_upload=previous.record_id,
        drive=LAYOUT,
        drive_name=DATASET,
        include_drive=False,
        add=(),
        keep={},
        unix_time=n,
        app_version="t",
        full_manifest=FULL,
        deltas=n,
        span_uploads=span,
        earlier=earlier,
        skip_chain=chain,
        tiers_after=rest,
    )
    return bundle, added


def test_the_binary_counter_spans_the_lowest_set_bit_and_jumps_by_the_others() -> None:
    tiers: tuple[Tier, ...] = (Tier(SkipLink(rid(0), head(0), 0), 0),)
    seen: dict[int, set[str]] = {}
    for n in range(1, 300):
        previous = PreviousUpload(
            LAYOUT, {}, rid(n - 1), head(n - 1), full_manifest_id=FULL, deltas=n - 1, tiers=tiers
        )
        bundle, added = _plan(previous, n)
        span = bundle.span_uploads
        assert span == n & -n  # the lowest set bit
        assert [link.deltas for link in bundle.skip_chain][-1] == 0
        assert len(bundle.skip_chain) == bin(n - span).count("1") + 1
        # the span lists exactly the objects of uploads n - span + 1 .. n - 1
        expect = {p for k in range(n - span + 1, n) for p in seen[k]}
        assert set(bundle.earlier) == expect
        seen[n] = set(added) - {"refs/head"}
        tiers = tiers_after(bundle, rid(n), added)
        # what a reader jumps through covers every upload since the full one
        covered = set()
        for t in tiers:
            covered |= {p for p, _ in t.files}
        assert covered == {p for k in range(1, n + 1) for p in seen[k]}
        assert sum(t.uploads for t in tiers) == n


def test_an_unknown_counter_jumps_to_the_previous_record_only() -> None:
    previous = PreviousUpload(LAYOUT, {}, rid(41), head(41), full_manifest_id=FULL, deltas=41)
    bundle, _ = _plan(previous, 42)
    assert bundle.span_uploads == 1 and not bundle.earlier
    assert bundle.skip_chain == (SkipLink(rid(41), head(41), 41),)
    # a counter left by another upload than the previous one is not trusted either
    stale = (Tier(SkipLink(rid(7), head(7), 40), 1, ()),)
    bundle, _ = _plan(replace(previous, tiers=stale), 42)
    assert bundle.skip_chain == (SkipLink(rid(41), head(41), 41),)


def _record_of(bundle: BundlePlan, added: dict[str, AddedFile]) -> UploadRecord:
    return UploadRecord(
        dataset_id=DATASET,
        head=bundle.head,
        prev_head=bundle.prev_head,
        prev_upload=bundle.prev_upload,
        manifest_id=rid(7000 + bundle.deltas),
        drive=LAYOUT,
        added=added,
        unix_time=bundle.unix_time,
        app_version="t",
        full_manifest=FULL,
        delta_uploads=bundle.deltas,
        span_uploads=bundle.span_uploads,
        earlier=bundle.earlier,
        skip_chain=bundle.skip_chain,
    )


def test_the_counter_is_rebuilt_from_the_records_a_reader_jumps_through() -> None:
    # A second machine has only the network: the latest record and the records its skip
    # chain names give back the publisher's counter exactly, so its next record keeps tiers.
    full = replace(TIERED, head=head(0), prev_head=None, prev_upload=None, manifest_id=FULL)
    full = replace(full, full_manifest=None, delta_uploads=None, span_uploads=None)
    full = replace(full, earlier={}, skip_chain=())
    records: dict[str, UploadRecord] = {rid(0): full}
    tiers: tuple[Tier, ...] = (Tier(SkipLink(rid(0), head(0), 0), 0),)
    for n in range(1, 70):
        previous = PreviousUpload(
            LAYOUT, {}, rid(n - 1), head(n - 1), full_manifest_id=FULL, deltas=n - 1, tiers=tiers
        )
        bundle, added = _plan(previous, n)
        records[rid(n)] = _record_of(bundle, added)
        tiers = tiers_after(bundle, rid(n), added)
        walked = [(rid(n), records[rid(n)])]
        walked += [(link.record_id, records[link.record_id]) for link in bundle.skip_chain]
        assert rebuilt_tiers(walked) == tiers, n
    assert rebuilt_tiers([(rid(0), full)]) == (Tier(SkipLink(rid(0), head(0), 0), 0),)
    # Not one skip chain (a record skipped, a record without a tier): unknown, never guessed.
    assert rebuilt_tiers(walked[:1] + walked[2:]) is None
    untiered = replace(records[rid(69)], span_uploads=None, earlier={}, skip_chain=())
    assert rebuilt_tiers([(rid(69), untiered), *walked[1:]]) is None
    assert rebuilt_tiers(walked[:-1]) is None  # no full upload reached
