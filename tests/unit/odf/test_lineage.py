"""Derivative rules: each broken ExecuteTransform / SetTransform is reported by name."""

import dataclasses
import json
import shutil

import pytest

from odfweb3.cli.main import main
from odfweb3.errors import UsageError
from odfweb3.odf.builder import append_blocks, create_root_dataset, example_keypair
from odfweb3.odf.derivative import create_derivative_dataset
from odfweb3.odf.validate import validate_dataset

from .lineage_helpers import chain_of, make_lineage, replace_input, rewrite_event


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    return make_lineage(tmp_path_factory.mktemp("lin"))


@pytest.fixture
def lineage(pristine, tmp_path):
    out = []
    for p in pristine:
        shutil.copytree(p, tmp_path / p.name)
        out.append(tmp_path / p.name)
    return out


# x's blocks: 0 Seed, 1 SetInfo, 2 SetTransform, 3..5 ExecuteTransform; inputs (a, b).


def rules(report):
    return sorted({v.rule for v in report.violations})


def test_gap_in_block_interval(lineage):
    _a, _b, x, _ = lineage
    first_new = chain_of(x)[4].block.event.query_inputs[0].prev_block_hash  # None
    rewrite_event(x, 6, lambda ev: replace_input(ev, 0, prev_block_hash=first_new))
    report = validate_dataset(x)
    assert rules(report) == ["input-prev-block"]
    (v,) = report.violations
    assert v.sequence_number == 6 and "prevBlockHash absent, expected f1620" in v.message
    assert v.kamu == "InvalidEvent" and "[rule 28 input-prev-block, kamu InvalidEvent]" in str(v)


def test_gap_in_offset_interval(lineage):
    _a, _b, x, _ = lineage
    rewrite_event(x, 6, lambda ev: replace_input(ev, 1, prev_offset=10))
    report = validate_dataset(x)
    assert rules(report) == ["input-prev-offset"]
    assert "prevOffset 10, expected 14" in report.violations[0].message


def test_empty_interval_must_leave_new_absent(lineage):
    _a, _b, x, _ = lineage

    def same(ev):
        qi = ev.query_inputs[0]
        return replace_input(ev, 0, new_block_hash=qi.prev_block_hash)

    rewrite_event(x, 6, same)
    assert rules(validate_dataset(x)) == ["input-block-interval"]


def test_unknown_input(lineage):
    _a, _b, x, _ = lineage
    stranger = example_keypair(99).dataset_id.to_bytes()
    rewrite_event(x, 5, lambda ev: replace_input(ev, 1, dataset_id=stranger))
    report = validate_dataset(x)
    declared = [v for v in report.violations if v.rule == "transform-input-order"]
    assert declared and declared[0].sequence_number == 5
    assert f"input #1 is {example_keypair(99).dataset_id}" in declared[0].message


def test_inputs_out_of_order_or_missing(lineage):
    _a, _b, x, _ = lineage
    rewrite_event(x, 4, lambda ev: dataclasses.replace(ev, query_inputs=ev.query_inputs[::-1]))
    assert "transform-input-order" in rules(validate_dataset(x))
    # back in order (block 4 valid again), then block 5 drops one
    rewrite_event(x, 4, lambda ev: dataclasses.replace(ev, query_inputs=ev.query_inputs[::-1]))
    assert validate_dataset(x).ok
    rewrite_event(x, 5, lambda ev: dataclasses.replace(ev, query_inputs=ev.query_inputs[:1]))
    msgs = [v.message for v in validate_dataset(x).violations]
    assert any("1 listed, the SetTransform declares 2" in m for m in msgs), msgs


def test_new_block_not_in_input_chain(lineage):
    a, b, x, _ = lineage
    foreign = chain_of(b)[-1].hash  # a real block, of the other input
    rewrite_event(x, 6, lambda ev: replace_input(ev, 0, new_block_hash=foreign))
    assert validate_dataset(x).ok  # the chain alone cannot tell
    report = validate_dataset(x, inputs=[a, b])
    assert rules(report) == ["transform-input-block"]
    (v,) = report.violations
    assert v.sequence_number == 6 and "is not a block of the input's chain" in v.message


def test_interval_must_move_forward_along_input_chain(lineage):
    a, b, x, _ = lineage
    earlier = chain_of(a)[4].hash  # before tx 5's newBlockHash (#5), after tx 4's (#3)
    rewrite_event(x, 6, lambda ev: replace_input(ev, 0, new_block_hash=earlier, new_offset=9))
    report = validate_dataset(x, inputs=[a, b])
    assert "transform-input-interval" in rules(report)
    assert any("goes back" in v.message for v in report.violations)


def test_wrong_offsets(lineage):
    a, b, x, _ = lineage
    rewrite_event(x, 6, lambda ev: replace_input(ev, 0, new_offset=38))
    assert validate_dataset(x).ok
    report = validate_dataset(x, inputs=[a, b])
    assert rules(report) == ["transform-input-offset"]
    assert "consumed up to offset 38 at block #7" in report.violations[0].message
    assert "ends at offset 39" in report.violations[0].message


def test_input_at_an_older_head_than_consumed(lineage, tmp_path):
    a, b, _x, _ = lineage
    old = tmp_path / "a-old"
    shutil.copytree(a, old)
    append_blocks(a, 2, data_bytes=2000, seed=3, fsync=False)
    newer = create_derivative_dataset(tmp_path / "x2", [a, b], transactions=2, fsync=False)
    assert validate_dataset(newer.path, inputs=[a, b]).ok
    report = validate_dataset(newer.path, inputs=[old, b])
    assert rules(report) == ["transform-input-block"]


def test_mapping_key_must_be_the_datasets_own_id(lineage):
    a, _b, x, _ = lineage
    with pytest.raises(UsageError, match="under its own ID"):
        validate_dataset(x, inputs={str(example_keypair(2).dataset_id): a})


def test_cli_example_and_validate_inputs(capsys, tmp_path):
    def run(*argv):
        code = main(list(argv), env={"ODFWEB3_KEYSTORE": str(tmp_path / "keys")})
        out, err = capsys.readouterr()
        return code, out, err

    r1, r2, d = tmp_path / "r1", tmp_path / "r2", tmp_path / "d"
    assert run("example", str(r1), "--blocks", "3", "--seed", "1", "-q")[0] == 0
    assert run("example", str(r2), "--blocks", "2", "--seed", "2", "-q")[0] == 0
    code, out, _ = run("example", str(d), "--derivative-of", str(r1), str(r2), "--json")
    made = json.loads(out)
    assert code == 0 and made["blocks"] == 4 + 5 and made["datasetId"].startswith("did:odf:")
    code, out, _ = run("validate", str(d), "--deep", "--inputs", str(r1), str(r2), "--json")
    assert code == 0 and json.loads(out)["ok"] is True

    append_blocks(r1, 1, data_bytes=500, fsync=False)
    code, out, _ = run("example", str(d), "--derivative-of", str(r1), str(r2), "--append", "1")
    assert code == 0
    assert run("validate", str(d), "--inputs", str(r1), str(r2))[0] == 0

    create_root_dataset(tmp_path / "r1-short", blocks=1, data_bytes=100, seed=1, fsync=False)
    code, out, _ = run("validate", str(d), "--inputs", str(tmp_path / "r1-short"), str(r2))
    assert code == 1 and "[transform-input-block]" in out
