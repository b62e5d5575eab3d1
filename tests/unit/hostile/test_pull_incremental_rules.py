"""An incremental pull checks every new block against every chain rule.

The attack: DEST holds an ancestor; the replica appends blocks that hash correctly but
break a rule (offsets, checkpoint, time, watermark, a second Seed, an event kamu cannot
append, a no-op).
Before the fix the rules were skipped for an incremental pull (exit 0, a dataset
``validate`` rejects). Now: one line, exit 65, DEST's head and files unchanged.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.chain import walk_chain
from odfweb3.odf.codec import block_hash, encode_block
from odfweb3.odf.layout import DatasetReader, DatasetWriter
from odfweb3.odf.model_gen import (
    AddData,
    Checkpoint,
    DatasetKind,
    DisablePushSource,
    MetadataBlock,
    Seed,
)
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.odf.timestamp import Timestamp
from odfweb3.odf.validate import chain_state, check_chain_rules, validate_dataset
from odfweb3.read.pull import pull_dataset
from odfweb3.read.replica import LocalReplica


def _tree(path: Path) -> dict[str, bytes]:
    out = {}
    for dirpath, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if d != ".odfweb3"]
        for f in files:
            p = os.path.join(dirpath, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, path)] = fh.read()
    return out


def _append_forged(src: Path, mutate: Callable[[MetadataBlock], MetadataBlock]) -> None:
    """Append one block to ``src``: a copy of its last AddData, continued, then mutated."""
    reader = DatasetReader.open(src)
    tip = next(walk_chain(reader))
    last = next(e for e in walk_chain(reader) if isinstance(e.block.event, AddData))
    ev = last.block.event
    assert isinstance(ev, AddData) and ev.new_data is not None and ev.new_checkpoint
    iv = ev.new_data.offset_interval
    assert iv is not None
    assert ev.new_watermark is not None
    good = AddData(  # a watermark-only block
        prev_checkpoint=ev.new_checkpoint.physical_hash,
        prev_offset=iv.end,
        new_data=None,
        new_checkpoint=ev.new_checkpoint,
        new_watermark=Timestamp.from_datetime(ev.new_watermark.to_datetime() + timedelta(1)),
    )
    block = MetadataBlock(
        system_time=Timestamp.from_datetime(tip.block.system_time.to_datetime() + timedelta(1)),
        prev_block_hash=tip.hash,
        sequence_number=tip.block.sequence_number + 1,
        event=good,
    )
    assert not check_chain_rules([block_entry(block)], after=chain_state(walk_chain(reader)))
    block = mutate(block)
    data = encode_block(block)
    h = block_hash(data)
    w = DatasetWriter(src)
    w.write_object("block", h, data)
    w.set_head(h)


def block_entry(block: MetadataBlock):  # type: ignore[no-untyped-def]
    from odfweb3.odf.chain import ChainEntry

    data = encode_block(block)
    return ChainEntry(block_hash(data), block, len(data))


def _event(b: MetadataBlock, **kw: object) -> MetadataBlock:
    return dataclasses.replace(b, event=dataclasses.replace(b.event, **kw))  # type: ignore[type-var]


def _earlier(b: MetadataBlock) -> MetadataBlock:
    return dataclasses.replace(
        b, system_time=Timestamp.from_datetime(b.system_time.to_datetime() - timedelta(days=30))
    )


def _watermark_back(b: MetadataBlock) -> MetadataBlock:
    ev = b.event
    assert isinstance(ev, AddData) and ev.new_watermark is not None
    back = Timestamp.from_datetime(ev.new_watermark.to_datetime() - timedelta(days=2))
    return _event(b, new_watermark=back)


def _unwatermarked(b: MetadataBlock) -> MetadataBlock:
    # a fresh checkpoint, so that only the watermark rule is broken
    return _event(b, new_watermark=None, new_checkpoint=Checkpoint(physical_hash=_CP, size=1))


_CP = b"\x16\x20" + bytes(range(32))

ATTACKS: dict[str, tuple[str, str, Callable[[MetadataBlock], MetadataBlock]]] = {
    "offset": ("prev-offset", "InvalidEvent", lambda b: _event(b, prev_offset=10**6)),
    "checkpoint": ("prev-checkpoint", "InvalidEvent", lambda b: _event(b, prev_checkpoint=None)),
    "time": ("system-time-monotonic", "SystemTimeIsNotMonotonic", _earlier),
    "watermark": ("watermark-monotonic", "WatermarkIsNotMonotonic", _watermark_back),
    "watermark-dropped": ("watermark-monotonic", "WatermarkIsNotMonotonic", _unwatermarked),
    "no-op": (
        "no-op",
        "NoOpEvent",
        lambda b: _event(b, new_watermark=_tip_watermark(b)),
    ),
    "unimplemented": (
        "unimplemented-event",
        "unimplemented!",
        lambda b: dataclasses.replace(b, event=DisablePushSource(source_name="a")),
    ),
    "seed-again": (
        "seed-once",
        "AppendingSeedBlockToNonEmptyChain",
        lambda b: dataclasses.replace(
            b, event=Seed(dataset_id=b"\x00" * 34, dataset_kind=DatasetKind.ROOT)
        ),
    ),
}


def _tip_watermark(b: MetadataBlock) -> Timestamp:
    """The watermark of the block before ``b`` (the same again changes nothing)."""
    ev = b.event
    assert isinstance(ev, AddData) and ev.new_watermark is not None
    return Timestamp.from_datetime(ev.new_watermark.to_datetime() - timedelta(1))


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_incremental_pull_checks_every_rule(tmp_path: Path, capsys, attack: str) -> None:
    rule, kamu, mutate = ATTACKS[attack]
    src = create_root_dataset(tmp_path / "src", blocks=3, data_bytes=3000, seed=5).path
    dest = tmp_path / "dest"
    pull_dataset(LocalReplica(DatasetReader.open(src)), dest)
    before = _tree(dest)
    _append_forged(src, mutate)
    env = {"ODFWEB3_KEYSTORE": str(tmp_path / "keys"), "HOME": str(tmp_path)}
    code = main(["pull", str(src), str(dest)], env=env)
    out, err = capsys.readouterr()
    assert code == 65, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and f" {rule}, kamu {kamu}]" in lines[0], err
    forged = next(walk_chain(DatasetReader.open(src)))
    where = f"block #{forged.block.sequence_number} ({multihash_to_str(forged.hash)})"
    assert where in lines[0], err  # the block: its number and hash
    assert _tree(dest) == before
    assert validate_dataset(dest).ok
    assert not (dest / ".odfweb3" / "incoming").exists()


def test_chain_state_reads_back_only_to_the_latest_data_event(tmp_path: Path) -> None:
    src = create_root_dataset(tmp_path / "src", blocks=4, data_bytes=4000, seed=6).path
    reader = DatasetReader.open(src)
    seen = []

    def walk():  # type: ignore[no-untyped-def]
        for e in walk_chain(reader):
            seen.append(e)
            yield e

    upcoming = [next(walk_chain(reader))]  # an AddData (a copy of the head, for the test)
    state = chain_state(walk(), upcoming)
    assert len(seen) == 1  # the head is an AddData: nothing more is read for an AddData
    whole_state = chain_state(walk_chain(reader)).rules
    assert whole_state.schema_event is not None
    # all of it but the latest SetDataSchema, which an AddData does not consult
    assert state.rules == dataclasses.replace(whole_state, schema_event=None)
    whole = list(reversed(list(walk_chain(reader))))
    assert check_chain_rules(whole) == []
    # The same rules from the state at any block as over the whole chain.
    for i in range(1, len(whole)):
        st = chain_state(reversed(whole[:i]))
        assert check_chain_rules(whole[i:], after=st) == []


def test_a_damaged_dest_chain_is_named_as_dests(tmp_path: Path, capsys) -> None:
    src = create_root_dataset(tmp_path / "src", blocks=3, data_bytes=3000, seed=5).path
    dest = tmp_path / "dest"
    pull_dataset(LocalReplica(DatasetReader.open(src)), dest)
    head = DatasetReader.open(dest).head()
    from odfweb3.odf.builder import append_blocks
    from odfweb3.odf.multihash import multihash_to_str

    append_blocks(src, 1, data_bytes=100)
    block = dest / "blocks" / multihash_to_str(head)
    block.write_bytes(block.read_bytes() + b"\x00")
    code = main(["pull", str(src), str(dest)], env={"HOME": str(tmp_path)})
    _, err = capsys.readouterr()
    assert code == 65 and err.count("\n") == 1
    assert f"{dest}: its own chain cannot be read back" in err, err


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_first_pull_checks_every_rule_walking_back(tmp_path: Path, capsys, attack: str) -> None:
    """A first pull holds no decoded block (the rules are fed walking back); a broken rule
    is named as the whole chain's check names it, before anything is written."""
    rule, kamu, mutate = ATTACKS[attack]
    src = create_root_dataset(tmp_path / "src", blocks=3, data_bytes=3000, seed=5).path
    _append_forged(src, mutate)
    dest = tmp_path / "dest"
    env = {"ODFWEB3_KEYSTORE": str(tmp_path / "keys"), "HOME": str(tmp_path)}
    code = main(["pull", str(src), str(dest)], env=env)
    out, err = capsys.readouterr()
    assert code == 65, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and f" {rule}, kamu {kamu}]" in lines[0], err
    whole = list(reversed(list(walk_chain(DatasetReader.open(src)))))
    assert str(check_chain_rules(whole)[0]) in lines[0], err
    assert not dest.exists()
