"""kamu's ExecuteTransform input rules on every path that checks a chain.

The attack: a derivative dataset (real ExecuteTransform blocks over real input chains)
gains one more ExecuteTransform that hashes correctly but whose query inputs kamu would
refuse to append (another dataset listed, an interval not continued, an empty interval
written out, new offsets without new blocks). ``validate`` names it (exit 1); ``publish``
(a first publish, and one above a head published and cached before) and ``pull`` (into
an empty DEST, and incrementally) refuse it in one line naming the block, the rule and
kamu's name for it, exit 65, nothing published or changed. Each rule is the same code on
every path (``odfweb3.odf.chain_rules``); ``verify --deep`` calls a replica holding it
CORRUPT (exit 65).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3.odf.builder import example_keypair
from odfweb3.odf.chain import ChainEntry, walk_chain
from odfweb3.odf.codec import block_hash, encode_block
from odfweb3.odf.layout import DatasetReader, DatasetWriter
from odfweb3.odf.model_gen import ExecuteTransform, ExecuteTransformInput, MetadataBlock
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.odf.timestamp import Timestamp
from odfweb3.odf.validate import RULES, chain_state, check_chain_rules, validate_dataset

from ..odf.lineage_helpers import make_lineage

Inputs = tuple[ExecuteTransformInput, ...]


def _first(qis: Inputs, **kw: object) -> Inputs:
    return (dataclasses.replace(qis[0], **kw), *qis[1:])  # type: ignore[arg-type]


def _offset(qi: ExecuteTransformInput) -> int:
    assert qi.prev_offset is not None
    return qi.prev_offset


STRANGER = example_keypair(77).dataset_id.to_bytes()

# rule -> how the query inputs of a valid (watermark-only) ExecuteTransform are broken
FORGERIES: dict[str, Callable[[Inputs], Inputs]] = {
    "transform-input-order": lambda q: (*q[:-1], dataclasses.replace(q[-1], dataset_id=STRANGER)),
    "input-prev-block": lambda q: _first(q, prev_block_hash=q[-1].prev_block_hash),
    "input-prev-offset": lambda q: _first(q, prev_offset=_offset(q[0]) + 1),
    "input-block-interval": lambda q: _first(q, new_block_hash=q[0].prev_block_hash),
    "input-offset-interval": lambda q: _first(
        q, new_block_hash=q[-1].prev_block_hash, new_offset=_offset(q[0])
    ),
    "input-offsets-without-blocks": lambda q: _first(q, new_offset=_offset(q[0]) + 1),
}


def _forge(path: Path, rule: str) -> ChainEntry:
    """Append to the derivative at ``path`` an ExecuteTransform breaking ``rule`` only."""
    reader = DatasetReader.open(path)
    tip = next(walk_chain(reader))
    ev = tip.block.event
    assert isinstance(ev, ExecuteTransform) and ev.new_checkpoint is not None
    assert ev.new_watermark is not None and ev.query_inputs and len(ev.query_inputs) == 2
    # Each input continues where the tip's ended and consumes nothing new; the watermark
    # advances, the checkpoint is written again: a block kamu appends.
    carried = tuple(
        ExecuteTransformInput(
            dataset_id=qi.dataset_id,
            prev_block_hash=qi.new_block_hash or qi.prev_block_hash,
            prev_offset=qi.new_offset if qi.new_offset is not None else qi.prev_offset,
        )
        for qi in ev.query_inputs
    )
    good = ExecuteTransform(
        query_inputs=carried,
        prev_checkpoint=ev.new_checkpoint.physical_hash,
        prev_offset=ev.new_data.offset_interval.end  # type: ignore[union-attr]
        if ev.new_data is not None
        else ev.prev_offset,
        new_checkpoint=ev.new_checkpoint,
        new_watermark=Timestamp.from_datetime(ev.new_watermark.to_datetime() + timedelta(1)),
    )
    block = MetadataBlock(
        system_time=Timestamp.from_datetime(tip.block.system_time.to_datetime() + timedelta(1)),
        prev_block_hash=tip.hash,
        sequence_number=tip.block.sequence_number + 1,
        event=good,
    )
    after = chain_state(walk_chain(reader))
    assert check_chain_rules([_entry(block)], after=after) == []
    bad = dataclasses.replace(
        block, event=dataclasses.replace(good, query_inputs=FORGERIES[rule](carried))
    )
    entry = _entry(bad)
    assert {v.rule for v in check_chain_rules([entry], after=after)} == {rule}
    w = DatasetWriter(path, fsync=False)
    w.write_object("block", entry.hash, encode_block(bad))
    w.set_head(entry.hash)
    return entry


def _entry(block: MetadataBlock) -> ChainEntry:
    data = encode_block(block)
    return ChainEntry(block_hash(data), block, len(data))


def _tree(path: Path) -> dict[str, bytes]:
    out = {}
    for dirpath, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if d != ".odfweb3"]
        for f in files:
            p = os.path.join(dirpath, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, path)] = fh.read()
    return out


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    return make_lineage(tmp_path_factory.mktemp("lin"))[2]  # x: a derivative of a and b


@pytest.fixture
def x(pristine, tmp_path) -> Path:
    shutil.copytree(pristine, tmp_path / "x")
    return tmp_path / "x"


def _run(tmp_path: Path, capsys, *argv: str) -> tuple[int, str, str]:
    env = {
        "HOME": str(tmp_path),
        "ODFWEB3_KEYSTORE": str(tmp_path / "keys"),
        "ODFWEB3_STATE_DIR": str(tmp_path / "state"),
    }
    code = main(list(argv), env=env)
    out, err = capsys.readouterr()
    return code, out, err


def _names(line: str, entry: ChainEntry, rule: str) -> None:
    r = RULES[rule]
    assert f"block #{entry.block.sequence_number} ({multihash_to_str(entry.hash)})" in line, line
    assert f"[rule {r.number} {rule}, kamu InvalidEvent]" in line, line


RULE_NAMES = sorted(FORGERIES)


def test_the_forgeries_cover_every_input_rule_but_the_missing_set_transform() -> None:
    assert set(FORGERIES) | {"transform-before-execute"} == {
        name for name, r in RULES.items() if r.number >= RULES["transform-before-execute"].number
    }


@pytest.mark.parametrize("rule", RULE_NAMES)
def test_validate_names_it(rule: str, x: Path, tmp_path: Path, capsys) -> None:
    forged = _forge(x, rule)
    code, out, err = _run(tmp_path, capsys, "validate", str(x))
    assert code == 1, (out, err)
    (line,) = [ln for ln in (out + err).splitlines() if "[rule " in ln]
    _names(line, forged, rule)
    assert not validate_dataset(x).ok


@pytest.mark.parametrize("rule", RULE_NAMES)
def test_a_first_publish_refuses_it(rule: str, x: Path, tmp_path: Path, capsys) -> None:
    forged = _forge(x, rule)
    code, out, err = _run(tmp_path, capsys, "publish", str(x), "--to", f"car:{tmp_path / 'out'}")
    assert code == 65, (out, err)
    (line,) = err.strip().splitlines()
    _names(line, forged, rule)
    assert "nothing was published" in line
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.mark.parametrize("rule", RULE_NAMES)
def test_a_publish_above_a_cached_head_refuses_it(
    rule: str, x: Path, tmp_path: Path, capsys
) -> None:
    out_dir = tmp_path / "out"
    code, out, err = _run(tmp_path, capsys, "publish", str(x), "--to", f"car:{out_dir}")
    assert code == 0, (out, err)
    assert any((tmp_path / "state" / "cache" / "verified-chains").iterdir())
    before = _tree(out_dir)
    forged = _forge(x, rule)
    code, out, err = _run(tmp_path, capsys, "publish", str(x), "--to", f"car:{out_dir}")
    assert code == 65, (out, err)
    (line,) = err.strip().splitlines()
    _names(line, forged, rule)
    assert _tree(out_dir) == before


@pytest.mark.parametrize("rule", RULE_NAMES)
def test_a_pull_refuses_it(rule: str, x: Path, tmp_path: Path, capsys) -> None:
    forged = _forge(x, rule)
    dest = tmp_path / "dest"
    code, out, err = _run(tmp_path, capsys, "pull", str(x), str(dest))
    assert code == 65, (out, err)
    (line,) = err.strip().splitlines()
    _names(line, forged, rule)
    assert not (dest / "refs" / "head").exists()


@pytest.mark.parametrize("rule", RULE_NAMES)
def test_an_incremental_pull_refuses_it(rule: str, x: Path, tmp_path: Path, capsys) -> None:
    dest = tmp_path / "dest"
    code, out, err = _run(tmp_path, capsys, "pull", str(x), str(dest))
    assert code == 0, (out, err)
    before = _tree(dest)
    forged = _forge(x, rule)
    code, out, err = _run(tmp_path, capsys, "pull", str(x), str(dest))
    assert code == 65, (out, err)
    (line,) = err.strip().splitlines()
    _names(line, forged, rule)
    assert _tree(dest) == before
    assert validate_dataset(dest).ok


@pytest.mark.parametrize("rule", RULE_NAMES)
def test_verify_deep_calls_such_a_replica_corrupt(
    rule: str, x: Path, tmp_path: Path, capsys
) -> None:
    replica = tmp_path / "replica"
    shutil.copytree(x, replica)
    forged = _forge(replica, rule)
    code, out, err = _run(tmp_path, capsys, "verify", str(x), "--against", str(replica), "--deep")
    assert code == 65, (out, err)
    lines = [ln for ln in (out + err).splitlines() if "[rule " in ln]  # CORRUPT, problem
    assert lines, (out, err)
    _names(lines[0], forged, rule)
