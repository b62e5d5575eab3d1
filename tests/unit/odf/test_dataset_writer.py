"""``DatasetWriter`` writes through odfweb3.atomic_file: an object is whole or absent, its
temp files are ones the next run can clear, and a directory in an object's place is refused."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from odfweb3.atomic_file import remove_partials
from odfweb3.errors import UsageError
from odfweb3.odf.layout import DatasetReader, DatasetWriter, object_relpath
from odfweb3.odf.multihash import hash_bytes, multihash_to_str


def test_objects_and_head_written_whole(tmp_path: Path) -> None:
    w = DatasetWriter(tmp_path / "ds")
    data = b"a data file" * 1000
    mh = hash_bytes(data)
    w.write_object("data", mh, data)
    assert w.write_new_object("checkpoint", iter([data[:5], data[5:]])) == mh
    w.set_head(mh)
    r = DatasetReader(tmp_path / "ds")
    assert r.path_of("data", mh).read_bytes() == data
    assert r.path_of("checkpoint", mh).read_bytes() == data
    assert (tmp_path / "ds/refs/head").read_text() == multihash_to_str(mh)
    assert sorted(os.listdir(tmp_path / "ds/data")) == [multihash_to_str(mh)]


def test_an_interrupted_object_leaves_nothing_under_its_name(tmp_path: Path) -> None:
    w = DatasetWriter(tmp_path / "ds", fsync=False)

    def chunks():
        yield b"half of it"
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        w.write_new_object("data", chunks())
    assert os.listdir(tmp_path / "ds/data") == []


def test_a_killed_writers_temp_file_is_one_the_next_run_clears(tmp_path: Path) -> None:
    # A writer killed mid-object (SIGKILL: no cleanup runs) leaves .tmp-PID-XXXX.partial:
    # never an object's name (iter_stored skips it), and remove_partials takes it once
    # the process, and so its lock, is gone.
    code = (
        "import os, signal, sys\n"
        "from odfweb3.odf.layout import DatasetWriter\n"
        "def chunks():\n"
        "    yield b'never finished'\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "DatasetWriter(sys.argv[1], fsync=False).write_new_object('data', chunks())\n"
    )
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "ds")], check=False)
    assert r.returncode == -signal.SIGKILL
    left = os.listdir(tmp_path / "ds/data")
    assert len(left) == 1 and left[0].startswith(".tmp-") and left[0].endswith(".partial")
    assert list(DatasetReader(tmp_path / "ds").iter_stored("data")) == []
    assert remove_partials(tmp_path / "ds/data") == left
    assert os.listdir(tmp_path / "ds/data") == []


def test_a_directory_in_an_objects_place_is_one_usage_error(tmp_path: Path) -> None:
    w = DatasetWriter(tmp_path / "ds")
    mh = hash_bytes(b"x")
    (tmp_path / "ds" / object_relpath("block", mh)).mkdir()
    with pytest.raises(UsageError, match="is a directory"):
        w.write_object("block", mh, b"x")
