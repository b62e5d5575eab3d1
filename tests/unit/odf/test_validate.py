"""Validation: a good dataset passes; each kind of damage is named, nothing is written."""

import os
import shutil

import pytest

from odfweb3.errors import FormatError, ValidationFailed
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.chain import iter_objects, walk_chain
from odfweb3.odf.codec import block_hash, decode_block, encode_block
from odfweb3.odf.layout import DatasetReader, DatasetWriter
from odfweb3.odf.model_gen import AddData, MetadataBlock
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.odf.validate import require_valid, validate_dataset


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    return create_root_dataset(
        tmp_path_factory.mktemp("v") / "ds", blocks=4, data_bytes=8000, seed=11
    )


@pytest.fixture
def ds(pristine, tmp_path):
    dest = tmp_path / "ds"
    shutil.copytree(pristine.path, dest)
    return dest


def snapshot(path):
    out = {}
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            p = os.path.join(dirpath, f)
            with open(p, "rb") as fh:
                out[p] = fh.read()
    return out


def rules(report):
    return {v.rule for v in report.violations}


def test_good_dataset_is_valid(ds):
    before = snapshot(ds)
    r = validate_dataset(ds, deep=True)
    assert r.ok, r.violations
    assert r.blocks == 8 and r.objects_checked == 8 + 8  # the blocks, data files, checkpoints
    assert r.bytes_hashed == 8000 + 4 * 1024
    assert snapshot(ds) == before  # read-only
    require_valid(r)


def test_missing_head(ds):
    os.unlink(ds / "refs/head")
    r = validate_dataset(ds)
    assert rules(r) == {"head"} and "refs/head is missing" in str(r.violations[0])


def test_head_names_absent_block(ds):
    (ds / "refs/head").write_text("f1620" + "ab" * 32)
    r = validate_dataset(ds)
    assert not r.ok and "missing" in str(r.violations[0])


def test_garbage_head(ds):
    (ds / "refs/head").write_text("not a hash")
    assert rules(validate_dataset(ds)) == {"head"}


def _head_block(ds):
    reader = DatasetReader.open(ds)
    h = reader.head()
    return h, ds / "blocks" / multihash_to_str(h)


def test_truncated_block(ds):
    _h, path = _head_block(ds)
    path.write_bytes(path.read_bytes()[:20])
    r = validate_dataset(ds)
    assert not r.ok
    assert r.violations[0].rule in {"block-hash", "block-format"}


def test_block_bytes_not_matching_name(ds):
    reader = DatasetReader.open(ds)
    entries = list(walk_chain(reader))
    # Replace block #3 with block #4's bytes: valid FlatBuffers, wrong hash.
    victim = ds / "blocks" / multihash_to_str(entries[3].hash)
    victim.write_bytes(reader.read_block_bytes(entries[2].hash))
    r = validate_dataset(ds)
    assert rules(r) == {"block-hash"}
    assert multihash_to_str(entries[3].hash) in str(r.violations[0])


def test_wrong_sequence_number(ds):
    reader = DatasetReader.open(ds)
    head = reader.head()
    blk = decode_block(reader.read_block_bytes(head))
    bad = MetadataBlock(
        system_time=blk.system_time,
        prev_block_hash=blk.prev_block_hash,
        sequence_number=blk.sequence_number + 5,
        event=blk.event,
    )
    data = encode_block(bad)
    w = DatasetWriter(ds)
    w.write_object("block", block_hash(data), data)
    w.set_head(block_hash(data))
    r = validate_dataset(ds)
    assert not r.ok and "sequence" in str(r.violations[0])


def test_offset_rule_names_block(ds):
    reader = DatasetReader.open(ds)
    head = reader.head()
    blk = decode_block(reader.read_block_bytes(head))
    assert isinstance(blk.event, AddData)
    ev = blk.event
    bad_event = AddData(
        prev_checkpoint=ev.prev_checkpoint,
        prev_offset=(ev.prev_offset or 0) + 1,
        new_data=ev.new_data,
        new_checkpoint=ev.new_checkpoint,
        new_watermark=ev.new_watermark,
    )
    bad = MetadataBlock(blk.system_time, blk.prev_block_hash, blk.sequence_number, bad_event)
    data = encode_block(bad)
    w = DatasetWriter(ds)
    w.write_object("block", block_hash(data), data)
    w.set_head(block_hash(data))
    r = validate_dataset(ds)
    # kamu: the slice does not start at prevOffset + 1 (OffsetsAreNotSequential) and
    # prevOffset is not the previous block's last offset (InvalidEvent)
    assert rules(r) == {"offsets-sequential", "prev-offset"}
    v = r.violations[0]
    assert f"block #{blk.sequence_number}" in str(v) and "kamu OffsetsAreNotSequential" in str(v)
    assert v.sequence_number == blk.sequence_number and v.block_hash == block_hash(data)
    with pytest.raises(ValidationFailed):
        require_valid(r)


@pytest.mark.parametrize("damage", ["missing", "size", "hash"])
def test_deep_data_damage(ds, damage):
    reader = DatasetReader.open(ds)
    data_obj = next(o for o in iter_objects(walk_chain(reader)) if o.kind == "data")
    path = ds / data_obj.path
    if damage == "missing":
        path.unlink()
    elif damage == "size":
        path.write_bytes(path.read_bytes() + b"x")
    else:
        raw = bytearray(path.read_bytes())
        raw[0] ^= 1
        path.write_bytes(bytes(raw))
    assert validate_dataset(ds).ok  # shallow does not read data
    r = validate_dataset(ds, deep=True)
    assert rules(r) == {f"object-{'present' if damage == 'missing' else damage}"}
    assert data_obj.path in str(r.violations[0])


def test_symlink_outside_is_refused(ds, tmp_path):
    reader = DatasetReader.open(ds)
    data_obj = next(o for o in iter_objects(walk_chain(reader)) if o.kind == "data")
    outside = tmp_path / "outside"
    outside.write_bytes((ds / data_obj.path).read_bytes())
    (ds / data_obj.path).unlink()
    os.symlink(outside, ds / data_obj.path)
    r = validate_dataset(ds, deep=True)
    assert not r.ok and "outside the dataset" in str(r.violations[0])
    with pytest.raises(FormatError):
        reader.path_of("data", data_obj.hash)


@pytest.mark.parametrize("text", ["{h}\n", "{h}\r\n", " {h}", "{h} "])
def test_a_head_with_whitespace_is_refused(ds, text):
    """kamu reads refs/head as is (no trimming): a trailing newline makes the dataset
    unreadable to it, so it is refused here too, not silently stripped."""
    h = (ds / "refs/head").read_text()
    (ds / "refs/head").write_text(text.format(h=h))
    r = validate_dataset(ds)
    assert rules(r) == {"head"} and "whitespace" in str(r.violations[0])
    with pytest.raises(FormatError, match="printf %s HASH > refs/head"):
        DatasetReader.open(ds).head()
    (ds / "refs/head").write_text(h)
    assert validate_dataset(ds).ok


def test_pull_refuses_a_dest_head_with_a_newline(ds, tmp_path, capsys):
    """The same for pull's DEST (the local store reads refs/head itself): one line, 65."""
    from odfweb3.cli.main import main
    from odfweb3.store.local import LocalStore

    dest = tmp_path / "dest"
    shutil.copytree(ds, dest)
    h = (dest / "refs/head").read_text()
    (dest / "refs/head").write_text(h + "\n")
    with pytest.raises(FormatError, match="whitespace"):
        LocalStore.read_head(dest)
    code = main(["pull", str(ds), str(dest)], env={"HOME": str(tmp_path)})
    err = capsys.readouterr().err
    assert code == 65 and len(err.strip().splitlines()) == 1 and "newline" in err, err
    assert (dest / "refs/head").read_text() == h + "\n"  # left as it was
