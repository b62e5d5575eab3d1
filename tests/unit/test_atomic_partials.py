"""Temp files never look like results: ``.tmp-PID-XXXX[.car].partial``, locked while written,
removed by the next run once their writer is gone (odfweb3.atomic_file)."""

from __future__ import annotations

import fcntl
import glob
import os
import subprocess
import sys
from pathlib import Path

import pytest

from odfweb3.atomic_file import open_atomic, open_partial, remove_partials, write_file_atomic
from odfweb3.errors import UsageError


def test_a_partial_car_matches_no_result_glob(tmp_path: Path) -> None:
    fd, tmp = open_partial(tmp_path, ".car")
    os.write(fd, b"half a CAR")
    assert Path(tmp).name.startswith(".tmp-") and tmp.endswith(".car.partial")
    for pattern in ("*.car", "*.bundle", "*.json", "*.pack"):  # dot files included
        assert not list(tmp_path.glob(pattern)), pattern
    assert not glob.glob(str(tmp_path / "*"))  # a shell's * skips dot files
    os.close(fd)


def test_a_live_writers_partial_stays(tmp_path: Path) -> None:
    fd, tmp = open_partial(tmp_path, ".bundle")
    os.write(fd, b"being written")
    assert remove_partials(tmp_path) == []
    assert Path(tmp).exists()
    os.close(fd)  # the writer is gone: its lock with it
    assert remove_partials(tmp_path) == [Path(tmp).name]
    assert not Path(tmp).exists()


def test_a_killed_writers_partial_is_removed(tmp_path: Path) -> None:
    # A real process takes the lock and dies with SIGKILL, as a killed publisher does.
    code = (
        "import os, signal, sys; from pathlib import Path;"
        "from odfweb3.atomic_file import open_partial;"
        "fd, tmp = open_partial(Path(sys.argv[1]), '.car'); os.write(fd, b'x' * 1000);"
        "print(tmp, flush=True); os.kill(os.getpid(), signal.SIGKILL)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == -9
    left = Path(proc.stdout.strip())
    assert left.exists()
    assert remove_partials(tmp_path) == [left.name]
    assert not left.exists()


def test_only_temp_files_are_removed(tmp_path: Path) -> None:
    keep = ["a.car", "publish.json", "index-ab.pack", ".publish.lock", ".tmp-notes.txt"]
    for name in keep:
        (tmp_path / name).write_bytes(b"result")
    (tmp_path / ".tmp-abc.car").write_bytes(b"an older version's temp CAR")
    (tmp_path / ".tmp-dir.partial").mkdir()
    (tmp_path / ".tmp-link.car.partial").symlink_to(tmp_path / "a.car")
    assert remove_partials(tmp_path) == [".tmp-abc.car"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [*keep, ".tmp-dir.partial", ".tmp-link.car.partial"]
    )
    assert (tmp_path / "a.car").read_bytes() == b"result"


def test_a_fresh_empty_partial_is_left_while_its_writer_lives(tmp_path: Path) -> None:
    # mkstemp, then flock: an empty file may be a writer's that has not locked it yet.
    fd, tmp = open_partial(tmp_path)
    assert Path(tmp).name.startswith(f".tmp-{os.getpid()}-")
    fcntl.flock(fd, fcntl.LOCK_UN)
    assert remove_partials(tmp_path) == []
    os.close(fd)
    (tmp_path / ".tmp-abcdefgh.car.partial").touch()  # an earlier version's: whose is unknown
    assert remove_partials(tmp_path) == []


def test_a_killed_writers_empty_partial_is_removed_at_once(tmp_path: Path) -> None:
    # Killed before its first write (a CAR writer buffers): the rerun, seconds later, must
    # not leave the empty file because it is young.
    code = (
        "import os, signal, sys; from pathlib import Path;"
        "from odfweb3.atomic_file import open_partial;"
        "fd, tmp = open_partial(Path(sys.argv[1]), '.car');"
        "print(tmp, flush=True); os.kill(os.getpid(), signal.SIGKILL)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == -9
    left = Path(proc.stdout.strip())
    assert left.stat().st_size == 0
    assert remove_partials(tmp_path) == [left.name]
    assert not left.exists()


def test_atomic_writes_leave_no_partial(tmp_path: Path) -> None:
    write_file_atomic(tmp_path / "publish.json", b"{}")
    assert [p.name for p in tmp_path.iterdir()] == ["publish.json"]


def test_a_secret_is_private_from_the_start_and_never_replaced_unless_asked(tmp_path) -> None:
    from odfweb3.atomic_file import write_secret_atomic
    from odfweb3.errors import ConflictError, UsageError

    key = tmp_path / "key"
    write_secret_atomic(key, b"one", replace=False)
    assert key.read_bytes() == b"one" and key.stat().st_mode & 0o777 == 0o600
    with pytest.raises(ConflictError, match="never replaced"):
        write_secret_atomic(key, b"two", replace=False)
    assert key.read_bytes() == b"one"
    write_secret_atomic(key, b"three", replace=True)
    assert key.read_bytes() == b"three" and key.stat().st_mode & 0o777 == 0o600
    (tmp_path / "dir").mkdir()
    with pytest.raises(UsageError, match="is a directory"):
        write_secret_atomic(tmp_path / "dir", b"x", replace=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir", "key"]  # no temp file left


# The streaming form (open_atomic), which the CAR and bundle writers use.


def test_open_atomic_commits_by_name_with_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        with open_atomic(tmp_path / "out", suffix=".car", public=True) as out:
            out.file.write(b"a whole CAR")
            assert Path(out.tmp).name.endswith(".car.partial")
            assert out.commit("bafyroot.car")
    finally:
        os.umask(old)
    path = tmp_path / "out" / "bafyroot.car"
    assert path.read_bytes() == b"a whole CAR"
    assert path.stat().st_mode & 0o777 == 0o644
    assert os.listdir(tmp_path / "out") == ["bafyroot.car"]


def test_open_atomic_leaves_nothing_when_interrupted(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt), open_atomic(tmp_path, suffix=".bundle") as out:
        out.file.write(b"half a bundle")
        raise KeyboardInterrupt
    assert os.listdir(tmp_path) == []


def test_open_atomic_keeps_a_content_named_file_already_there(tmp_path: Path) -> None:
    (tmp_path / "bafyroot.car").write_bytes(b"the earlier CAR")
    with open_atomic(tmp_path, suffix=".car") as out:
        out.file.write(b"the same blocks again")
        assert not out.commit("bafyroot.car", keep_existing=True)
    assert (tmp_path / "bafyroot.car").read_bytes() == b"the earlier CAR"
    assert os.listdir(tmp_path) == ["bafyroot.car"]


def test_open_atomic_refuses_a_directory_in_the_files_place(tmp_path: Path) -> None:
    (tmp_path / "x.bundle").mkdir()
    with pytest.raises(UsageError, match="is a directory"), open_atomic(tmp_path) as out:
        out.file.write(b"bytes")
        out.commit("x.bundle")
    assert sorted(os.listdir(tmp_path)) == ["x.bundle"]


def test_not_durable_writes_skip_every_fsync(tmp_path: Path, monkeypatch) -> None:
    # durable=False: many files made durable together by the caller (one sync), so the
    # writer itself must fsync neither the file nor its directory.
    calls: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: calls.append(fd) or real(fd))
    write_file_atomic(tmp_path / "a", b"one", durable=False)
    assert calls == [] and (tmp_path / "a").read_bytes() == b"one"
    write_file_atomic(tmp_path / "b", b"two")
    assert len(calls) == 2  # the file, then its directory
