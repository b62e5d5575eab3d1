"""The offline targets' one state home (odfweb3.publish.out_dir): lock, compare-and-set,
publish.json written last."""

import os
from pathlib import Path

import pytest

from odfweb3.errors import ConflictError
from odfweb3.publish.out_dir import LOCK_NAME, OutDirHome
from odfweb3.publish.state import RAW_CODEC, PublishState

DID = "did:odf:fed0119d20360650afd3d412c6b11529778b784c697559c0107d37ee5da61465726eb"


def _state(head: bytes | None) -> PublishState:
    return PublishState(dataset_id=DID, target="car:/x", head=head, locator="L")


def test_a_live_publisher_holds_the_directory_and_a_dead_ones_lock_is_taken_over(
    tmp_path: Path,
) -> None:
    home = OutDirHome(tmp_path / "out", RAW_CODEC)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / LOCK_NAME).write_text(str(os.getppid()))  # alive, not us
    with pytest.raises(ConflictError, match=r"another publisher \(pid"), home.session():
        pass
    (tmp_path / "out" / LOCK_NAME).write_text("999999999")  # no such process
    with home.session():
        assert (tmp_path / "out" / LOCK_NAME).read_text() == str(os.getpid())
    assert not (tmp_path / "out" / LOCK_NAME).exists()


def test_a_session_that_wrote_nothing_leaves_no_directory(tmp_path: Path) -> None:
    ended = []
    home = OutDirHome(tmp_path / "out", RAW_CODEC)
    with pytest.raises(RuntimeError), home.session(lambda: ended.append(1)):
        raise RuntimeError("refused before writing")
    assert not (tmp_path / "out").exists() and ended == [1]


def test_publish_json_moved_after_inspect_is_a_conflict(tmp_path: Path) -> None:
    home = OutDirHome(tmp_path, RAW_CODEC)
    home.write(_state(b"\x12\x20" + b"a" * 32), {}, large=False, seal=None, files=(), written=())
    home.inspect()
    home.check_unchanged()  # the same file
    home.write(
        _state(b"\x12\x20" + b"a" * 32), {"x": 1}, large=False, seal=None, files=(), written=()
    )
    home.check_unchanged()  # another file, the same head
    home.write(_state(b"\x12\x20" + b"b" * 32), {}, large=False, seal=None, files=(), written=())
    with pytest.raises(ConflictError, match="another publish moved it to"):
        home.check_unchanged()
