"""pull writes its objects without an fsync each and flushes them together: a crash (the
process killed) at any point of a pull leaves no head pointing at a missing or broken object,
and the rerun completes; a staged file cut short (what a power loss leaves of bytes that
never reached the disk) is fetched again, never trusted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.chain import iter_objects, walk_chain
from odfweb3.odf.layout import DatasetReader, object_relpath
from odfweb3.odf.validate import validate_dataset
from odfweb3.read.pull import pull_dataset
from odfweb3.read.replica import LocalReplica
from odfweb3.store.local import LocalStore

# The child pulls SRC into DEST and kills itself (SIGKILL: no cleanup, no finally) at the
# Nth call of FUNC: an object streamed, a file renamed, a file or folder fsynced, or the
# one flush of everything staged (before the first rename into the layout).
_CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from odfweb3.odf.layout import DatasetReader
    from odfweb3.read import pull
    from odfweb3.read.replica import LocalReplica
    from odfweb3.store import local

    src, dest, func, nth = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    calls = [0]

    def dying(real):
        def wrapped(*a, **k):
            calls[0] += 1
            if calls[0] == nth:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(*a, **k)
        return wrapped

    replica = LocalReplica(DatasetReader.open(src))
    if func == "stream":
        replica.stream_object = dying(replica.stream_object)
    elif func == "replace":
        pull.os.replace = dying(os.replace)
    elif func == "fsync":
        local.os.fsync = dying(os.fsync)
    elif func == "flush":
        pull.sync_filesystem = dying(local.sync_filesystem)
    pull.pull_dataset(replica, dest, parallel=2)
    sys.exit(3)  # never reached when the kill happened
    """
)


def _crash(src: Path, dest: Path, func: str, nth: int) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(src), str(dest), func, str(nth)],
        env=env,
        capture_output=True,
        timeout=600,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]


def _no_dangling_head(dest: Path) -> None:
    """A head in DEST only when every block and object of its chain is there and intact."""
    head = LocalStore.read_head(dest)
    if head is None:
        return
    reader = DatasetReader.open(dest)
    entries = list(walk_chain(reader, head))
    for obj in iter_objects(entries):
        assert (dest / object_relpath(obj.kind, obj.hash)).is_file(), obj.path
    assert validate_dataset(dest, deep=True).ok


@pytest.mark.parametrize(
    ("func", "nth"),
    [
        ("stream", 5),
        ("flush", 1),
        ("fsync", 3),
        # 4 renames in all for a first pull: data/, checkpoints/, blocks/, then refs/head
        ("replace", 1),
        ("replace", 2),
        ("replace", 3),
        ("replace", 4),
    ],
)
def test_a_pull_killed_anywhere_leaves_no_dangling_head_and_the_rerun_completes(
    tmp_path: Path, func: str, nth: int
) -> None:
    src = create_root_dataset(tmp_path / "src", blocks=4, data_bytes=20_000, seed=41).path
    dest = tmp_path / "dest"
    _crash(src, dest, func, nth)
    _no_dangling_head(dest)
    replica = LocalReplica(DatasetReader.open(src))
    res = pull_dataset(replica, dest, parallel=2)
    assert res.head == replica.head()
    assert validate_dataset(dest, deep=True).ok
    assert not (dest / ".odfweb3" / "incoming").exists()


def test_an_incremental_pull_killed_keeps_the_old_head_whole(tmp_path: Path) -> None:
    from odfweb3.odf.builder import append_blocks

    src = create_root_dataset(tmp_path / "src", blocks=3, data_bytes=9_000, seed=42).path
    dest = tmp_path / "dest"
    replica = LocalReplica(DatasetReader.open(src))
    first = pull_dataset(replica, dest)
    append_blocks(src, 3, data_bytes=9_000)
    _crash(src, dest, "replace", 4)
    assert LocalStore.read_head(dest) == first.head
    _no_dangling_head(dest)
    res = pull_dataset(LocalReplica(DatasetReader.open(src)), dest)
    assert res.previous_head == first.head and res.new_blocks == 3
    assert validate_dataset(dest, deep=True).ok


def test_a_staged_file_cut_short_is_fetched_again(tmp_path: Path) -> None:
    src = create_root_dataset(tmp_path / "src", blocks=4, data_bytes=40_000, seed=43).path
    dest = tmp_path / "dest"
    # Killed at the flush: every object is staged, none is durable yet.
    _crash(src, dest, "flush", 1)
    incoming = dest / ".odfweb3" / "incoming"
    staged = sorted(p for d in ("data", "checkpoints") for p in (incoming / d).iterdir())
    assert len(staged) == 8, "the killed pull staged every data file and checkpoint"
    victim = staged[0]
    victim.write_bytes(victim.read_bytes()[:100])  # what a power loss may leave of it
    replica = LocalReplica(DatasetReader.open(src))
    res = pull_dataset(replica, dest, parallel=1)
    assert res.head == replica.head()
    assert res.objects_present == len(staged) - 1  # the short one was not counted
    assert validate_dataset(dest, deep=True).ok
