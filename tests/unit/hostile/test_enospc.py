"""A full disk while pulling, publishing or writing an example.

The disk is filled for real: a 512 KiB tmpfs mounted for the test (the suite runs as
root here). Where mounting is not permitted the same ENOSPC is injected instead, by
making ``os.fsync`` fail with it (every odfweb3 writer fsyncs before its rename; see
``small_disk`` in conftest.py). Each case: one line, exit 74, DEST's previous head intact,
no half-written example left to block a rerun.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.validate import validate_dataset
from odfweb3.read.pull import pull_dataset
from odfweb3.read.replica import LocalReplica
from tests.unit.hostile.conftest import SMALL_DISK_SIZE as _SIZE


def _run(capsys, tmp: Path, *argv: str) -> tuple[int, str, str]:
    env = {"ODFWEB3_KEYSTORE": str(tmp / "keys"), "HOME": str(tmp)}
    env["ODFWEB3_STATE_DIR"] = str(tmp / "state")
    code = main(list(argv), env=env)
    out, err = capsys.readouterr()
    return code, out, err


def test_pull_onto_a_full_disk_keeps_the_old_head(small_disk: Path, tmp_path: Path, capsys):
    src = create_root_dataset(tmp_path / "src", blocks=2, data_bytes=2000, seed=7).path
    dest = small_disk / "dest"
    pull_dataset(LocalReplica(DatasetReader.open(src)), dest)
    old = DatasetReader.open(dest).head()
    append_blocks(src, 2, data_bytes=2 * _SIZE)
    code, out, err = _run(capsys, tmp_path, "pull", str(src), str(dest))
    assert code == 74, (out, err)
    assert err.count("\n") == 1 and "No space left on device" in err, err
    assert DatasetReader.open(dest).head() == old
    assert validate_dataset(dest, deep=True).ok


def test_example_onto_a_full_disk_leaves_nothing_behind(small_disk: Path, tmp_path, capsys):
    target = small_disk / "ex"
    args = ["example", str(target), "--blocks", "2"]
    code, out, err = _run(capsys, tmp_path, *args, "--data-bytes", str(2 * _SIZE))
    assert code == 74, (out, err)
    assert err.count("\n") == 1 and "No space left on device" in err, err
    assert list(small_disk.iterdir()) == []  # no half-written dataset, no temp dir
    code, out, err = _run(capsys, tmp_path, *args, "--data-bytes", "4000")  # rerun works
    assert code == 0, err
    assert validate_dataset(target, deep=True).ok


def test_publish_onto_a_full_disk_is_one_line(small_disk: Path, tmp_path: Path, capsys):
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=2 * _SIZE, seed=8).path
    out_dir = small_disk / "out"
    code, out, err = _run(capsys, tmp_path, "publish", str(ds), "--to", f"car:{out_dir}")
    assert code == 74, (out, err)
    assert err.count("\n") == 1 and "No space left on device" in err, err
    assert not (out_dir / "publish.json").exists()
    state = tmp_path / "state"
    # No publish state names a head (the verified-chain cache under state/cache/ may: it
    # records the local chain's verification, not a publish).
    assert not state.exists() or not any(
        json.loads(p.read_text()).get("head")
        for p in state.rglob("*.json")
        if p.relative_to(state).parts[0] != "cache"
    )


def test_state_and_record_files_keep_the_old_content_on_a_full_disk(small_disk: Path) -> None:
    from odfweb3.atomic_file import write_file_atomic
    from odfweb3.errors import LocalIOError

    path = small_disk / "publish.json"
    write_file_atomic(path, b"old")
    with pytest.raises(LocalIOError, match="No space left on device"):
        write_file_atomic(path, b"x" * (2 * _SIZE))
    assert path.read_bytes() == b"old"
    assert [p.name for p in small_disk.iterdir()] == ["publish.json"]


def test_a_directory_where_a_file_belongs_is_one_line(tmp_path: Path) -> None:
    from odfweb3.atomic_file import write_file_atomic
    from odfweb3.errors import UsageError

    (tmp_path / "k51.ipns-record").mkdir()
    with pytest.raises(UsageError, match="is a directory"):
        write_file_atomic(tmp_path / "k51.ipns-record", b"record")
