"""The network targets' one state home (odfweb3.publish.state_home): lock, compare-and-set,
the upload checkpoint, packs before the state, the state written last."""

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest

from odfweb3.errors import ConflictError, FormatError
from odfweb3.publish.pack_index import IndexLayout, PackIndex, write_pack
from odfweb3.publish.state import (
    MAX_CHECKPOINT_SIZE,
    RAW_CODEC,
    PublishState,
    StateStore,
    save_state_file,
)
from odfweb3.publish.state_home import StateHome

DID = "did:odf:fed0119d20360650afd3d412c6b11529778b784c697559c0107d37ee5da61465726eb"
TARGET = "ipfs:http://127.0.0.1:5001"
HEAD_A = b"\x12\x20" + b"a" * 32
HEAD_B = b"\x12\x20" + b"b" * 32


def _state(head: bytes | None, **kw: Any) -> PublishState:
    return PublishState(dataset_id=DID, target=TARGET, head=head, locator="L", **kw)


def _home(tmp_path: Path) -> StateHome:
    return StateHome(StateStore(tmp_path / "state"), TARGET, RAW_CODEC)


def test_a_live_publishers_lock_refuses_and_a_dead_ones_is_taken_over(tmp_path: Path) -> None:
    home = _home(tmp_path)
    home.inspect(DID)
    lock = home.path(DID).with_suffix(".lock")
    lock.parent.mkdir(parents=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        lock.write_text(str(holder.pid))  # alive, not us
        refused = pytest.raises(ConflictError, match=rf"another publisher \(pid {holder.pid}\)")
        with refused, home.session():
            pass
        assert lock.read_text() == str(holder.pid)  # a live holder's lock is left alone
    finally:
        holder.communicate(b"")  # it exits: its pid is gone
    with home.session():  # a dead holder's lock is taken over
        assert lock.read_text() == str(os.getpid())
    assert not lock.exists()


def test_the_session_is_dropped_however_the_publish_ends(tmp_path: Path) -> None:
    home = _home(tmp_path)
    home.inspect(DID)
    with pytest.raises(RuntimeError), home.session():
        raise RuntimeError("upload failed")
    assert not home.path(DID).with_suffix(".lock").exists()
    other = StateHome(home.states, TARGET, RAW_CODEC)  # the next publisher of the pair gets it
    other.inspect(DID)
    with other.session():
        pass


def test_a_state_saved_by_another_publish_after_inspect_is_a_conflict(tmp_path: Path) -> None:
    ours, theirs = _home(tmp_path), _home(tmp_path)
    ours.write(_state(HEAD_A))
    ours.inspect(DID)
    ours.check_unchanged()  # the same file
    theirs.inspect(DID)
    theirs.write(_state(HEAD_B, record={"sequence": 2}))
    with pytest.raises(ConflictError, match=r"another publish of .* saved .* meanwhile"):
        ours.check_unchanged()


def test_a_state_the_targets_rule_calls_settled_is_built_on_not_a_conflict(
    tmp_path: Path,
) -> None:
    def settled(seen: PublishState, now: PublishState) -> bool:
        return now.evolve(record={**now.record, "status": seen.record["status"]}) == seen

    ours = StateHome(StateStore(tmp_path / "state"), TARGET, RAW_CODEC, settled=settled)
    theirs = _home(tmp_path)
    ours.write(_state(HEAD_A, record={"status": "pending"}))
    ours.inspect(DID)
    assert ours.settled_now is None
    theirs.inspect(DID)
    theirs.write(_state(HEAD_A, record={"status": "finalized"}))  # a ``status`` marked it
    ours.check_unchanged()
    assert ours.settled_now is not None and ours.settled_now.record == {"status": "finalized"}
    assert ours.seen == ours.settled_now
    theirs.write(_state(HEAD_B, record={"status": "pending"}))  # a rival's publish
    with pytest.raises(ConflictError, match=r"another publish of .* saved .* meanwhile"):
        ours.check_unchanged()


def test_our_own_writes_and_an_identical_rewrite_are_no_conflict(tmp_path: Path) -> None:
    home = _home(tmp_path)
    home.inspect(DID)  # nothing saved yet
    home.check_unchanged()
    home.write(_state(HEAD_A, extra={"pending": {"root": "x"}}))  # our checkpoint in the state
    home.check_unchanged()
    assert home.seen is not None and home.seen.extra == {"pending": {"root": "x"}}
    # Another file with the same state (a copy put back): compared, not refused.
    save_state_file(home.path(DID), _state(HEAD_A, extra={"pending": {"root": "x"}}))
    home.check_unchanged()


def test_a_state_removed_after_inspect_is_a_conflict(tmp_path: Path) -> None:
    home = _home(tmp_path)
    home.write(_state(HEAD_A))
    home.inspect(DID)
    home.path(DID).unlink()
    with pytest.raises(ConflictError, match="saved nothing meanwhile"):
        home.check_unchanged()


def test_the_checkpoint_is_read_bounded_written_whole_and_cleared(tmp_path: Path) -> None:
    home = _home(tmp_path)
    cp = home.checkpoint(DID)
    assert cp.read() is None and not cp.exists()
    cp.write({"tx": {"id": "t"}, "nextChunk": 3})
    raw = cp.path.read_bytes()
    assert json.loads(raw) == {
        "datasetId": DID,
        "target": TARGET,
        "tx": {"id": "t"},
        "nextChunk": 3,
    }
    assert raw == json.dumps(json.loads(raw), sort_keys=True).encode()  # the same bytes as before
    assert cp.read() == json.loads(raw)
    # What scan (`status`) finds beside the states: the same file.
    (found,) = home.states.scan().unfinished
    assert (found.path, found.dataset_id, found.target) == (cp.path, DID, TARGET)
    cp.path.write_bytes(b"{" + b" " * MAX_CHECKPOINT_SIZE + b"}")
    with pytest.raises(FormatError):
        cp.read()
    cp.path.write_bytes(b'{"half": ')
    with pytest.raises(FormatError):
        cp.read()
    cp.path.write_bytes(b"[1]")
    with pytest.raises(FormatError):
        cp.read()
    cp.clear()
    cp.clear()  # none: nothing to do
    assert not cp.exists()


def _encode(entry: Mapping[str, Any]) -> Any:
    return entry["v"]


def _decode(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, int):
        raise FormatError(f"{where}: bad entry")
    return {"v": raw}


class _Index(PackIndex):
    layout: ClassVar[IndexLayout] = IndexLayout(
        ("blocks",), lambda name: ord(name[0]), _encode, _decode
    )


def _packed(home: StateHome, objects: dict[str, dict[str, Any]]) -> _Index:
    index, pack = _Index.of_objects(home.index_dir(DID), objects)
    index.out_dir.mkdir(parents=True, exist_ok=True)
    write_pack(index.out_dir, pack)
    return index


def _packs(home: StateHome) -> set[str]:
    return {p.name for p in home.index_dir(DID).glob("index-*.pack")}


def test_a_crash_between_the_pack_and_the_state_leaves_the_state_whole(tmp_path: Path) -> None:
    first = _home(tmp_path)
    first.inspect(DID)
    one = _packed(first, {"blocks/a": {"v": 1}})
    first.write(_state(HEAD_A, objects=one, extra={"objectIndex": one.to_json()}))
    doc = json.loads(first.path(DID).read_text())
    assert doc["objects"] == {}  # the entries stay in the packs
    # The next publish writes its pack, then dies before the state.
    crashed = _home(tmp_path)
    crashed.inspect(DID)
    orphan = _packed(crashed, {"blocks/a": {"v": 1}, "blocks/b": {"v": 2}})
    assert json.loads(first.path(DID).read_text()) == doc  # the state as it was
    assert _packs(first) == one.packs | orphan.packs  # every pack it names still there
    # A rerun that began after the crash drops the pack no state names once its state is
    # written; a pack newer than its start (another publisher's, not saved yet) would stay.
    past = time.time() - 60
    os.utime(home_pack(crashed, orphan), (past, past))
    rerun = _home(tmp_path)
    rerun.inspect(DID)
    new = _packed(rerun, {"blocks/c": {"v": 3}})
    os.utime(home_pack(rerun, one), (past, past))
    rerun.write(_state(HEAD_B, objects=new, extra={"objectIndex": new.to_json()}))
    assert _packs(rerun) == new.packs


def home_pack(home: StateHome, index: _Index) -> Path:
    (name,) = index.packs
    return home.index_dir(DID) / name
