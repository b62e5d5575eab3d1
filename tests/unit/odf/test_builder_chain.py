"""Builder, layout and chain walk, end to end on disk."""

import itertools
import os

import pytest

from odfweb3.errors import NotFound, UsageError
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.chain import count_objects, iter_objects, walk_chain
from odfweb3.odf.codec import decode_block
from odfweb3.odf.derivative import create_derivative_dataset
from odfweb3.odf.layout import DatasetReader, DatasetWriter
from odfweb3.odf.model_gen import (
    AddData,
    DatasetKind,
    ExecuteTransform,
    Seed,
    SetDataSchema,
    SetInfo,
    SetLicense,
)
from odfweb3.odf.multihash import hash_file, multihash_to_str
from odfweb3.odf.summary import summarize


def test_builder_is_deterministic(tmp_path):
    a = create_root_dataset(tmp_path / "a", blocks=3, data_bytes=3000, seed=7)
    b = create_root_dataset(tmp_path / "b", blocks=3, data_bytes=3000, seed=7)
    c = create_root_dataset(tmp_path / "c", blocks=3, data_bytes=3000, seed=8)
    assert a.head == b.head != c.head
    assert a.blocks == 7  # Seed, SetInfo, SetLicense, SetDataSchema, 3 AddData
    assert (tmp_path / "a/refs/head").read_text() == multihash_to_str(a.head)


def test_chain_walk_and_objects(tmp_path):
    built = create_root_dataset(tmp_path / "ds", blocks=4, data_bytes=10_000, seed=1)
    reader = DatasetReader.open(built.path)
    entries = list(walk_chain(reader))
    assert [e.block.sequence_number for e in entries] == [7, 6, 5, 4, 3, 2, 1, 0]
    assert isinstance(entries[-1].block.event, Seed)
    assert entries[-1].block.event.dataset_kind == DatasetKind.ROOT
    assert isinstance(entries[-2].block.event, SetInfo)
    assert isinstance(entries[-3].block.event, SetLicense)
    schema = entries[-4].block.event
    assert isinstance(schema, SetDataSchema) and schema.raw_arrow_schema is None
    assert schema.schema is not None and schema.schema.fields is not None
    names = [f.name for f in schema.schema.fields]
    assert names[:4] == ["offset", "op", "system_time", "event_time"]
    objs = list(iter_objects(entries))
    kinds = [o.kind for o in objs]
    assert kinds.count("block") == 8 and kinds.count("data") == 4
    assert kinds.count("checkpoint") == 4
    for o in objs:
        path = reader.path_of(o.kind, o.hash)
        assert hash_file(path)[0] == o.hash
        assert path.stat().st_size == o.size
    # Every block on disk decodes and verifies against its name.
    for e in entries:
        assert decode_block(reader.read_block_bytes(e.hash), expected=e.hash) == e.block
    s = summarize(entries)
    assert s.data_bytes == 10_000 and s.data_files == 4 and s.blocks == 8
    assert s.records == sum(max(1, n // 100) for n in (2500,) * 4)
    assert str(s.dataset_id) == str(built.keypair.dataset_id)


def test_append_continues_offsets_and_checkpoints(tmp_path):
    built = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=1000, seed=3)
    more = append_blocks(built.path, 3, data_bytes=900)
    assert more.blocks == built.blocks + 3
    entries = list(walk_chain(DatasetReader.open(built.path)))
    adds = [e.block.event for e in reversed(entries) if isinstance(e.block.event, AddData)]
    assert len(adds) == 5
    for prev, cur in itertools.pairwise(adds):
        assert cur.prev_offset == prev.new_data.offset_interval.end
        assert cur.new_data.offset_interval.start == prev.new_data.offset_interval.end + 1
        assert cur.prev_checkpoint == prev.new_checkpoint.physical_hash
    # Only refs/head changed among existing files; the old head block is still there.
    assert DatasetReader.open(built.path).has("block", built.head)


def test_builder_refuses_non_empty_dir(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "file").write_text("keep me")
    with pytest.raises(UsageError):
        create_root_dataset(tmp_path / "x")
    assert (tmp_path / "x" / "file").read_text() == "keep me"


def test_no_temp_files_left(tmp_path):
    built = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=100)
    for _dirpath, _dirs, files in os.walk(built.path):
        assert not [f for f in files if f.startswith(".tmp-")]


def test_reader_refuses_non_dataset(tmp_path):
    with pytest.raises(NotFound):
        DatasetReader.open(tmp_path)
    with pytest.raises(NotFound):
        DatasetReader.open(tmp_path / "absent")


def _kamu_append_problems(entries):
    """kamu's AddData / ExecuteTransform append checks (ValidateAddDataVisitor and
    ValidateExecuteTransformVisitor in kamu-cli), written out on a chain, Seed first."""
    problems, schema, prev = [], False, None
    for e in entries:
        ev = e.block.event
        if isinstance(ev, SetDataSchema):
            schema = True
        if not isinstance(ev, AddData | ExecuteTransform):
            continue
        seq = e.block.sequence_number
        if ev.new_data is not None and not schema:
            problems.append((seq, "data before SetDataSchema"))
        expected_cp = prev.new_checkpoint.physical_hash if prev and prev.new_checkpoint else None
        if ev.prev_checkpoint != expected_cp:
            problems.append((seq, "prevCheckpoint"))
        if prev is not None:
            last = prev.new_data.offset_interval.end if prev.new_data else prev.prev_offset
            if ev.prev_offset != last:
                problems.append((seq, "prevOffset"))
            if prev.new_watermark is not None and (
                ev.new_watermark is None or ev.new_watermark < prev.new_watermark
            ):
                problems.append((seq, "watermark"))
        if ev.new_data is not None:
            start = 0 if ev.prev_offset is None else ev.prev_offset + 1
            if ev.new_data.offset_interval.start != start:
                problems.append((seq, "offsets"))
        cp = ev.new_checkpoint.physical_hash if ev.new_checkpoint else None
        prev_wm = prev.new_watermark if prev else None
        if ev.new_data is None and cp == ev.prev_checkpoint and ev.new_watermark == prev_wm:
            problems.append((seq, "no-op"))
        prev = ev
    return problems


def test_example_chains_follow_kamus_append_rules(tmp_path):
    a = create_root_dataset(tmp_path / "a", blocks=3, data_bytes=3000, seed=4).path
    append_blocks(a, 2, data_bytes=500, seed=5)
    b = create_root_dataset(tmp_path / "b", blocks=2, data_bytes=900, seed=6).path
    d = create_derivative_dataset(tmp_path / "d", [a, b], transactions=3, seed=1).path
    for path in (a, b, d):
        entries = list(reversed(list(walk_chain(DatasetReader.open(path)))))
        assert _kamu_append_problems(entries) == [], path
        (schema,) = [e.block.event for e in entries if isinstance(e.block.event, SetDataSchema)]
        # kamu writes the ODF schema (RFC-016) and no Arrow flatbuffer.
        assert schema.raw_arrow_schema is None and schema.schema is not None
        fields = schema.schema.fields
        assert [(f.name, type(f.type).__name__) for f in fields[:4]] == [
            ("offset", "DataTypeInt64"),
            ("op", "DataTypeInt32"),
            ("system_time", "DataTypeTimestamp"),
            ("event_time", "DataTypeTimestamp"),
        ]


def test_append_to_a_chain_without_a_schema_declares_one_first(tmp_path):
    built = create_root_dataset(tmp_path / "ds", blocks=0, seed=2)
    reader = DatasetReader.open(built.path)
    # Drop the SetDataSchema: the chain as the example wrote it before it declared one.
    entries = list(walk_chain(reader))
    assert isinstance(entries[0].block.event, SetDataSchema)
    DatasetWriter(built.path).set_head(entries[1].hash)
    append_blocks(built.path, 2, data_bytes=400, seed=3)
    chain = list(reversed(list(walk_chain(DatasetReader.open(built.path)))))
    kinds = [type(e.block.event).__name__ for e in chain]
    assert kinds == ["Seed", "SetInfo", "SetLicense", "SetDataSchema", "AddData", "AddData"]
    assert _kamu_append_problems(chain) == []


def test_object_list_is_the_objects_it_was_given(tmp_path):
    from odfweb3.odf.chain import DatasetObject, ObjectList

    built = create_root_dataset(tmp_path / "ds", blocks=3, data_bytes=3000, seed=2)
    objects = list(iter_objects(walk_chain(DatasetReader.open(built.path))))
    objects.append(DatasetObject("linked", b"\x16\x20" + b"\x01" * 32, None))  # no size
    packed = ObjectList(objects)
    assert len(packed) == len(objects) and packed == objects and packed == tuple(objects)
    assert list(packed) == objects and [o.path for o in packed] == [o.path for o in objects]
    assert packed[0] == objects[0] and packed[-1] == objects[-1] and packed[-1].size is None
    assert packed[1:3] == objects[1:3]
    assert packed != objects[:-1] and packed != [*objects[:-1], objects[0]]
    with pytest.raises(IndexError):
        packed[len(objects)]
    # the packed fields a pull reads without making items: the same as the items'
    fields = [(o.kind, o.hash, o.size) for o in objects]
    assert list(packed.fields()) == fields
    assert [
        (packed.kind_at(i), packed.hash_at(i), packed.size_at(i)) for i in range(len(packed))
    ] == fields
    assert packed.object_count() == count_objects(objects) and packed.object_count().linked == 1
    assert ObjectList().object_count().total == 0 and not list(ObjectList().fields())
    obj = packed[0]
    path = "".join(obj.path)  # the same text, another string
    assert obj.with_path(path).path is path
    with pytest.raises(ValueError):
        obj.with_path(objects[1].path)
