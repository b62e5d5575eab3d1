"""bundle:DIR and the inputs map of a derivative's upload record.

A plain publish keeps the map the last ``--with-inputs`` publish recorded; a publish with
nothing new but another map writes a new record; state from disk is checked.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from odfweb3.errors import FormatError
from odfweb3.odf.builder import append_blocks, example_keypair
from odfweb3.odf.derivative import append_transform
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.plan import RemoteRecord
from odfweb3_arweave.formats.ans104 import iter_bundle
from odfweb3_arweave.formats.record import UploadRecord, decode_record, inputs_to_record
from odfweb3_arweave.publish.bundle_target import BundleTarget
from odfweb3_arweave.wallet import Wallet

from ...odf.lineage_helpers import make_lineage

A, B = str(example_keypair(1).dataset_id), str(example_keypair(2).dataset_id)
# Locators as publish --with-inputs writes them: ar:// + a 43-character record id.
MAP = {A: "ar://" + "a" * 43, B: "ar://" + "b" * 43}
OTHER = {A: "ar://" + "c" * 43, B: "ar://" + "b" * 43}


@pytest.fixture(scope="module")
def lineage(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, Path]:
    a, b, x, y = make_lineage(tmp_path_factory.mktemp("lin"))
    return a, b, x, y


def last_record(out: Path, record_id: str) -> UploadRecord:
    with open(out / f"{record_id}.bundle", "rb") as f:
        item = list(iter_bundle(f))[-1]  # the record is the last item
    assert item.id_b64 == record_id
    return decode_record(item.tags, item.data)


def test_inputs_to_record_prefers_the_asked_map_then_keeps_the_last() -> None:
    assert inputs_to_record(MAP, OTHER, "state") == MAP
    assert inputs_to_record(None, OTHER, "state") == OTHER
    assert inputs_to_record({}, OTHER, "state") == OTHER
    assert inputs_to_record(None, None, "state") is None
    assert inputs_to_record(None, {}, "state") is None  # an empty map is a plain record
    with pytest.raises(FormatError, match=r"^state: inputs: 'inputs' is not a map"):
        inputs_to_record(None, {A: 7}, "state")


def test_a_plain_publish_of_a_derivative_keeps_its_inputs_map(
    tmp_path: Path, lineage: tuple[Path, Path, Path, Path], fixed_wallet: Wallet
) -> None:
    a0, b, x0, _ = lineage
    a, x = tmp_path / "a", tmp_path / "x"
    shutil.copytree(a0, a)
    shutil.copytree(x0, x)
    out = tmp_path / "out"
    first = publish_dataset(x, BundleTarget(out, fixed_wallet), record_extra={"inputs": MAP})
    assert first.state is not None
    assert dict(last_record(out, first.state.record["recordId"]).inputs or {}) == MAP
    assert json.loads((out / "publish.json").read_text())["extra"]["inputs"] == MAP

    # x runs another transform; published plainly (e.g. as another derivative's input).
    append_blocks(a, 1, data_bytes=1000, seed=9, fsync=False)
    append_transform(x, [a, b], fsync=False)
    second = publish_dataset(x, BundleTarget(out, fixed_wallet))
    assert second.state is not None and second.plan.relation == "ahead"
    record = last_record(out, second.state.record["recordId"])
    assert record.prev_upload == first.state.record["recordId"]
    assert dict(record.inputs or {}) == MAP
    assert second.state.extra["inputs"] == MAP

    # Nothing new and the same map: nothing written. Another map: a new record.
    same = publish_dataset(x, BundleTarget(out, fixed_wallet))
    assert same.state is not None
    # The target reports the record it holds; the plan, not the target, keeps it.
    assert same.view.record == RemoteRecord(renewal_due=False, inputs=MAP)
    assert same.plan.keep_record
    assert same.state.record["recordId"] == second.state.record["recordId"]
    moved = publish_dataset(x, BundleTarget(out, fixed_wallet), record_extra={"inputs": OTHER})
    assert moved.state is not None and moved.plan.relation == "same"
    assert moved.plan.is_noop and not moved.plan.keep_record
    assert moved.state.record["recordId"] != second.state.record["recordId"]
    record = last_record(out, moved.state.record["recordId"])
    assert dict(record.inputs or {}) == OTHER
    assert record.head == last_record(out, second.state.record["recordId"]).head
    assert record.prev_upload == second.state.record["recordId"]


def test_with_inputs_after_a_plain_publish_at_the_same_head_writes_the_map(
    tmp_path: Path, lineage: tuple[Path, Path, Path, Path], fixed_wallet: Wallet
) -> None:
    _, _, x, _ = lineage
    out = tmp_path / "out"
    plain = publish_dataset(x, BundleTarget(out, fixed_wallet))
    assert plain.state is not None
    assert last_record(out, plain.state.record["recordId"]).inputs is None
    again = publish_dataset(x, BundleTarget(out, fixed_wallet), record_extra={"inputs": MAP})
    assert again.state is not None and again.plan.is_noop
    record = last_record(out, again.state.record["recordId"])
    assert record.prev_upload == plain.state.record["recordId"]
    assert record.head == last_record(out, plain.state.record["recordId"]).head
    assert dict(record.inputs or {}) == MAP


def test_a_malformed_inputs_map_in_publish_json_is_refused(
    tmp_path: Path, lineage: tuple[Path, Path, Path, Path], fixed_wallet: Wallet
) -> None:
    _, _, x, _ = lineage
    out = tmp_path / "out"
    publish_dataset(x, BundleTarget(out, fixed_wallet), record_extra={"inputs": MAP})
    doc = json.loads((out / "publish.json").read_text())
    doc["extra"]["inputs"] = ["not", "a", "map"]
    (out / "publish.json").write_text(json.dumps(doc))
    before = sorted(p.name for p in out.iterdir())
    with pytest.raises(FormatError, match=r"publish\.json: malformed publish state \(extra\.inp"):
        publish_dataset(x, BundleTarget(out, fixed_wallet))
    assert sorted(p.name for p in out.iterdir()) == before  # nothing written
