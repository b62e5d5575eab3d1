"""Builder, layout and chain walk, end to end on disk."""

import itertools
import os

import pytest

from odfweb3.errors import NotFound, UsageError
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.chain import iter_objects, walk_chain
from odfweb3.odf.codec import decode_block
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.model_gen import AddData, DatasetKind, Seed, SetInfo, SetLicense
from odfweb3.odf.multihash import hash_file, multihash_to_str
from odfweb3.odf.summary import summarize


def test_builder_is_deterministic(tmp_path):
    a = create_root_dataset(tmp_path / "a", blocks=3, data_bytes=3000, seed=7)
    b = create_root_dataset(tmp_path / "b", blocks=3, data_bytes=3000, seed=7)
    c = create_root_dataset(tmp_path / "c", blocks=3, data_bytes=3000, seed=8)
    assert a.head == b.head != c.head
    assert a.blocks == 6
    assert (tmp_path / "a/refs/head").read_text() == multihash_to_str(a.head)


def test_chain_walk_and_objects(tmp_path):
    built = create_root_dataset(tmp_path / "ds", blocks=4, data_bytes=10_000, seed=1)
    reader = DatasetReader.open(built.path)
    entries = list(walk_chain(reader))
    assert [e.block.sequence_number for e in entries] == [6, 5, 4, 3, 2, 1, 0]
    assert isinstance(entries[-1].block.event, Seed)
    assert entries[-1].block.event.dataset_kind == DatasetKind.ROOT
    assert isinstance(entries[-2].block.event, SetInfo)
    assert isinstance(entries[-3].block.event, SetLicense)
    objs = list(iter_objects(entries))
    kinds = [o.kind for o in objs]
    assert kinds.count("block") == 7 and kinds.count("data") == 4
    assert kinds.count("checkpoint") == 4
    for o in objs:
        path = reader.path_of(o.kind, o.hash)
        assert hash_file(path)[0] == o.hash
        assert path.stat().st_size == o.size
    # Every block on disk decodes and verifies against its name.
    for e in entries:
        assert decode_block(reader.read_block_bytes(e.hash), expected=e.hash) == e.block
    s = summarize(entries)
    assert s.data_bytes == 10_000 and s.data_files == 4 and s.blocks == 7
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
