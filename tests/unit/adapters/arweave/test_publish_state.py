"""Typed publish state of the Arweave targets: parse / serialize round trips
(the JSON on disk unchanged) and a wrong type as one FormatError naming the file."""

import json

import pytest

from odfweb3.errors import FormatError
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import PublishState, load_summary_file
from odfweb3_arweave.publish.bundle_target import BundleTarget
from odfweb3_arweave.publish.state import (
    ManifestChain,
    UploadEntry,
    parse_arweave_state,
    serialize_arweave_state,
)

WHERE = "/s/x.json"
ID = "A" * 43
DRIVE = {
    "driveId": "4ede4866-08d2-45c7-964d-eac75f0caea4",
    "rootFolderId": "1c2ce524-4076-475e-987a-95e4838b0143",
    "folderIds": {
        "blocks": "c8378f27-a74a-4675-9de1-f62b841c3275",
        "checkpoints": "a896d32b-23f5-4c2d-a940-cc83d7ed1f35",
        "data": "dcab3024-2e98-463d-8659-4a0803883884",
        "refs": "4192769a-0ed6-4e8b-a41c-b4527f296f2b",
    },
    "privacy": "public",
}
# What the gateway target writes after posting an encrypted upload...
GATEWAY_RECORD = {
    "recordId": ID,
    "manifestId": "M" * 43,
    "bundleTxId": "T" * 43,
    "prevUpload": None,
    "unixTime": 1796126400,
    "reward": 1234,
    "status": "pending",
}
GATEWAY_EXTRA = {
    "recordId": ID,
    "prevUpload": None,
    "unixTime": 1796126400,
    "bundleTxId": "T" * 43,
    "bundleBytes": 2048,
    "bundleItems": 9,
    "reward": 1234,
    "drive": DRIVE,
    "owner": "O" * 43,
    "uploads": [
        {"recordId": ID, "head": "f1620aa", "manifestId": "M" * 43, "bundleTxId": "T" * 43}
    ],
    "fullManifestId": "M" * 43,
    "deltaUploads": 0,
    "encrypted": True,
    "keyEpoch": 2,
    "keyEnvelope": "K" * 43,
    "inputs": {"did:odf:a": "ar://" + "I" * 43},
    "raceCheck": "won",
}
# ... and what it rebuilds from the network (no full manifest found: null).
REBUILT_RECORD = {
    "recordId": ID,
    "manifestId": "M" * 43,
    "prevUpload": "P" * 43,
    "unixTime": 1,
    "status": "confirmed",
}
REBUILT_EXTRA = {
    "drive": DRIVE,
    "owner": "O" * 43,
    "uploads": [{"recordId": ID, "head": "f1620aa", "manifestId": "M" * 43}],
    "rebuilt": True,
    "fullManifestId": None,
    "deltaUploads": 0,
    "encrypted": True,
    "keyEnvelope": "K" * 43,
}


def _state(record, extra):
    return PublishState(dataset_id="did:odf:x", target="t", record=record, extra=extra)


def test_bundle_publish_json_reads_and_writes_back_unchanged(tmp_path, fixed_wallet):
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=1500, seed=41).path
    out = tmp_path / "out"
    for step in range(2):
        if step:
            append_blocks(ds, 1, data_bytes=400, seed=5)
        publish_dataset(ds, BundleTarget(out, fixed_wallet))
        state, _raw = load_summary_file(out / "publish.json")
        typed = parse_arweave_state(state, WHERE)
        assert typed.record is not None and typed.extra.upload is not None
        assert (typed.record.prev_upload is None) == (step == 0)  # written as null, kept
        assert typed.record.record_id == typed.extra.upload.record_id
        assert typed.extra.bundles is not None and len(typed.extra.bundles) == step + 1
        chain = typed.extra.manifests
        assert chain is not None and chain.deltas == step
        # the binary counter: the full upload, then upload 1 spanning itself
        assert chain.tiers is not None
        assert [(t.link.record_id, t.uploads) for t in chain.tiers][: step + 1] == (
            [(typed.record.record_id, 0)]
            if step == 0
            else [(typed.record.record_id, 1), (typed.record.prev_upload, 0)]
        )
        assert chain == ManifestChain(chain.full_manifest_id, step, chain.tiers)
        assert serialize_arweave_state(typed) == {"record": state.record, "extra": state.extra}


@pytest.mark.parametrize(
    ("record", "extra"), [(GATEWAY_RECORD, GATEWAY_EXTRA), (REBUILT_RECORD, REBUILT_EXTRA)]
)
def test_gateway_states_round_trip(record, extra):
    typed = parse_arweave_state(_state(record, extra), WHERE)
    assert typed.extra.uploads is not None and typed.extra.uploads[0].record_id == ID
    assert typed.extra.drive is not None and typed.extra.drive.drive_id == DRIVE["driveId"]
    assert serialize_arweave_state(typed) == {"record": record, "extra": extra}


def test_a_turbo_state_round_trips_with_its_receipts():
    receipt = {"id": ID, "version": "0.2.0", "deadlineHeight": 9, "timestamp": 1,
               "public": "p", "signature": "s"}  # fmt: skip
    extra = {**GATEWAY_EXTRA, "bundler": "B" * 43, "receipts": {ID: receipt}}
    typed = parse_arweave_state(_state(GATEWAY_RECORD, extra), WHERE)
    assert typed.extra.bundler == "B" * 43 and typed.extra.receipts == {ID: receipt}
    assert serialize_arweave_state(typed) == {"record": GATEWAY_RECORD, "extra": extra}


def test_absent_stays_absent_and_old_state_has_no_manifest_chain():
    typed = parse_arweave_state(_state({}, {"owner": "O"}), WHERE)
    assert typed.record is None and typed.extra.manifests is None
    assert serialize_arweave_state(typed) == {"record": {}, "extra": {"owner": "O"}}
    assert UploadEntry(ID).to_json() == {"recordId": ID}


@pytest.mark.parametrize(
    ("record", "extra", "field"),
    [
        ({"recordId": ID, "unixTime": "now"}, {}, "record.unixTime"),
        ({"recordId": 7}, {}, "record.recordId"),
        ({}, {"owner": 5}, "extra.owner"),
        ({}, {"bundles": "x.bundle"}, "extra.bundles"),
        ({}, {"uploads": [{"head": "f1"}]}, "extra.uploads.recordId"),
        ({}, {"uploads": {"recordId": ID}}, "extra.uploads"),
        ({}, {"deltaUploads": -1}, "extra.deltaUploads"),
        ({}, {"fullManifestId": 3}, "extra.fullManifestId"),
        ({}, {"rebuilt": "yes"}, "extra.rebuilt"),
        ({}, {"bundler": 1}, "extra.bundler"),
        ({}, {"receipts": [ID]}, "extra.receipts"),
        ({}, {"receipts": {ID: "sig"}}, "extra.receipts"),
    ],
)
def test_a_field_of_the_wrong_type_is_a_format_error_naming_the_file(record, extra, field):
    with pytest.raises(FormatError, match=rf"^{WHERE}: malformed publish state \({field}: "):
        parse_arweave_state(_state(record, extra), WHERE)


def test_a_malformed_drive_names_the_file():
    with pytest.raises(FormatError, match=rf"^{WHERE}: drive: drive layout"):
        parse_arweave_state(_state({}, {"drive": {"driveId": "x"}}), WHERE)


def test_bundle_target_refuses_a_malformed_publish_json_in_one_line(tmp_path, fixed_wallet):
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=1000, seed=42).path
    out = tmp_path / "out"
    publish_dataset(ds, BundleTarget(out, fixed_wallet))
    doc = json.loads((out / "publish.json").read_text())
    doc["record"]["unixTime"] = "yesterday"
    (out / "publish.json").write_text(json.dumps(doc))
    before = sorted(p.name for p in out.iterdir())
    append_blocks(ds, 1, data_bytes=300, seed=6)
    with pytest.raises(FormatError, match=r"publish\.json: malformed publish state \(record\."):
        publish_dataset(ds, BundleTarget(out, fixed_wallet))
    assert sorted(p.name for p in out.iterdir()) == before  # nothing written


def test_the_cli_sees_a_state_through_its_backend_and_typed_form():
    from odfweb3.backends import StateFacts, state_facts

    state = PublishState(
        dataset_id="did:odf:x", target="arweave:http://gw", record=GATEWAY_RECORD,
        extra=GATEWAY_EXTRA,
    )  # fmt: skip
    facts = state_facts(state)
    assert facts == StateFacts(record_id=ID, key_envelope="K" * 43, share=facts.share)
    assert [what for what, _ in facts.share] == [
        "latest version",
        "this version only",
        "ArFS drive",
    ]
    assert facts.share[1] == ("this version only", f"ar://{ID}")
