"""Derivative builder: valid chains whose intervals follow the inputs' real chains."""

import shutil

import pytest

from odfweb3.errors import UsageError
from odfweb3.odf.builder import append_blocks, create_root_dataset, example_keypair
from odfweb3.odf.derivative import (
    append_transform,
    create_derivative_dataset,
    derivative_keypair,
)
from odfweb3.odf.lineage import InputChain
from odfweb3.odf.model_gen import DatasetKind, ExecuteTransform, Seed, SetTransform, TransformSql
from odfweb3.odf.validate import validate_dataset

from .lineage_helpers import chain_of, make_lineage


@pytest.fixture(scope="module")
def lineage(tmp_path_factory):
    return make_lineage(tmp_path_factory.mktemp("lin"))


def executes(path):
    return [e.block.event for e in chain_of(path) if isinstance(e.block.event, ExecuteTransform)]


def test_builder_output_validates_plain_and_with_inputs(lineage):
    a, b, x, y = lineage
    for path, inputs in ((x, [a, b]), (y, [x, a])):
        plain = validate_dataset(path, deep=True)
        assert plain.ok, plain.violations
        full = validate_dataset(path, deep=True, inputs=inputs)
        assert full.ok, full.violations
        # The mapping form (dataset ID -> directory) is the same check.
        by_id = {InputChain.from_entries(chain_of(p)).did: p for p in inputs}
        assert validate_dataset(path, inputs=by_id).ok


def test_seed_and_set_transform(lineage):
    _a, _b, x, _ = lineage
    entries = chain_of(x)
    seed = entries[0].block.event
    assert isinstance(seed, Seed) and seed.dataset_kind == DatasetKind.DERIVATIVE
    assert seed.dataset_id == derivative_keypair(0).dataset_id.to_bytes()
    assert seed.dataset_id != example_keypair(0).dataset_id.to_bytes()
    st = entries[2].block.event
    assert isinstance(st, SetTransform)
    assert [i.alias for i in st.inputs] == ["a", "b"]
    assert [i.dataset_ref for i in st.inputs] == [
        str(example_keypair(1).dataset_id),
        str(example_keypair(2).dataset_id),
    ]
    assert isinstance(st.transform, TransformSql)
    assert st.transform.engine == "datafusion" and st.transform.query is None
    (q,) = st.transform.queries
    assert q.alias is None and q.query == 'SELECT * FROM "a" UNION ALL SELECT * FROM "b"'


def test_intervals_follow_input_chains_and_carry_over(lineage):
    a, b, x, _ = lineage
    ca, cb = InputChain.from_entries(chain_of(a)), InputChain.from_entries(chain_of(b))
    txs = executes(x)
    assert len(txs) == 3
    for chain in (ca, cb):
        last_block, last_offset = None, None
        for tx in txs:
            (qi,) = [q for q in tx.query_inputs if q.dataset_id == chain.dataset_id]
            assert qi.prev_block_hash == last_block and qi.prev_offset == last_offset
            if qi.new_block_hash is not None:
                last_block = qi.new_block_hash
            if qi.new_offset is not None:
                last_offset = qi.new_offset
            # The offset consumed is the input's data end at the block consumed.
            assert last_offset == chain.last_offsets[chain.position(last_block)]
        # The last transaction reaches the input's head and its last record.
        assert last_block == chain.hashes[-1]
        assert last_offset == chain.last_offsets[-1]
    # a: 8 blocks over 3 transactions -> #3 (SetDataSchema, no data), #5, #7.
    first = txs[0].query_inputs[0]
    assert first.new_block_hash == ca.hashes[3] and first.new_offset is None
    assert [t.query_inputs[0].new_offset for t in txs] == [None, 19, 39]
    # Output records = the input records consumed (the query is a UNION ALL).
    assert txs[0].new_data is None and txs[0].new_checkpoint is not None
    assert txs[1].new_data.offset_interval.start == 0
    assert txs[1].new_data.offset_interval.end == 20 + 15 - 1
    assert txs[2].prev_offset == 34 and txs[2].new_data.offset_interval.end == 34 + 20 + 15
    # Watermark: the least of the inputs' at the consumed blocks, never going back.
    assert txs[0].new_watermark is None
    assert txs[1].new_watermark == min(ca.watermarks[5], cb.watermarks[4])
    assert txs[2].new_watermark == min(ca.watermarks[7], cb.watermarks[5])


def test_deterministic_for_a_seed(tmp_path, lineage):
    a, b, x, _ = lineage
    again = create_derivative_dataset(tmp_path / "x2", [a, b], transactions=3, seed=0, fsync=False)
    assert again.head == chain_of(x)[-1].hash
    other = create_derivative_dataset(tmp_path / "x3", [a, b], transactions=3, seed=7, fsync=False)
    assert other.head != again.head


def test_append_transform_consumes_what_inputs_gained(tmp_path, lineage):
    a0, b0, x0, _ = lineage
    a, b, x = tmp_path / "a", tmp_path / "b", tmp_path / "x"
    for src, dst in ((a0, a), (b0, b), (x0, x)):
        shutil.copytree(src, dst)
    with pytest.raises(UsageError, match="no input has new blocks"):
        append_transform(x, [a, b], fsync=False)
    with pytest.raises(UsageError, match="not given"):
        append_transform(x, [a], fsync=False)
    append_blocks(a, 3, data_bytes=3000, seed=9, fsync=False)
    built = append_transform(x, [b, a], transactions=2, fsync=False)
    assert built.blocks == 9
    report = validate_dataset(x, deep=True, inputs=[a, b])
    assert report.ok, report.violations
    ca = InputChain.from_entries(chain_of(a))
    last = executes(x)[-1]
    qa, qb = last.query_inputs
    assert qa.new_block_hash == ca.hashes[-1] and qa.new_offset == ca.last_offsets[-1]
    assert qb.new_block_hash is None and qb.new_offset is None  # b did not move
    assert qb.prev_block_hash is not None and qb.prev_offset == 29


def test_append_refuses_an_input_that_lost_the_consumed_block(tmp_path, lineage):
    _a0, b0, x0, _ = lineage
    shutil.copytree(x0, tmp_path / "x")
    short = create_root_dataset(tmp_path / "a", blocks=1, data_bytes=100, seed=1, fsync=False)
    with pytest.raises(UsageError, match="does not hold block"):
        append_transform(tmp_path / "x", [short.path, b0], fsync=False)


def test_bad_arguments(tmp_path, lineage):
    a, b, _, _ = lineage
    with pytest.raises(UsageError, match="at least one input"):
        create_derivative_dataset(tmp_path / "n", [])
    with pytest.raises(UsageError, match="twice"):
        create_derivative_dataset(tmp_path / "n", [a, a])
    with pytest.raises(UsageError, match="not a derivative"):
        append_transform(a, [b])
