"""pull: from an offline publish (car:DIR) into a local dataset, verified and incremental."""

import json
import os
import shutil

import pytest

from odfweb3.cli.main import main
from odfweb3.errors import ConflictError, IntegrityError, OdfWeb3Error
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.validate import validate_dataset
from odfweb3.read.pull import pull_dataset
from odfweb3.read.replica import LocalReplica


def cli(capsys, tmp_path, *argv):
    env = {"ODFWEB3_KEYSTORE": str(tmp_path / "keys"), "HOME": str(tmp_path)}
    code = main(list(argv), env=env)
    out, err = capsys.readouterr()
    return code, out, err


def tree(path):
    out = {}
    for dirpath, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if d != ".odfweb3"]
        for f in files:
            p = os.path.join(dirpath, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, path)] = fh.read()
    return out


def test_pull_from_car_then_incremental(capsys, tmp_path):
    ds = create_root_dataset(tmp_path / "ds", blocks=3, data_bytes=400_000, seed=2).path
    out = tmp_path / "out"
    cli(capsys, tmp_path, "publish", str(ds), "--to", f"car:{out}", "-q")
    dest = tmp_path / "copy"
    code, text, _ = cli(capsys, tmp_path, "pull", f"car:{out}", str(dest), "--json")
    assert code == 0, text
    first = json.loads(text)
    assert first["newBlocks"] == 7 and first["objectsFetched"] == 7 + 6  # blocks, files
    assert validate_dataset(dest, deep=True).ok
    assert tree(dest) == tree(ds)

    append_blocks(ds, 2)
    cli(capsys, tmp_path, "publish", str(ds), "--to", f"car:{out}", "-q")
    code, text, _ = cli(capsys, tmp_path, "pull", f"car:{out}", str(dest), "--json")
    second = json.loads(text)
    assert second["newBlocks"] == 2 and second["objectsFetched"] == 2 + 4
    assert second["previousHead"] == first["head"]
    assert validate_dataset(dest, deep=True).ok


def test_bad_replica_leaves_dest_unchanged(tmp_path):
    src = create_root_dataset(tmp_path / "src", blocks=2, data_bytes=5000, seed=3).path
    dest = create_root_dataset(tmp_path / "dest", blocks=1, data_bytes=100, seed=3).path
    shutil.rmtree(dest)
    shutil.copytree(src, dest)
    append_blocks(src, 1, data_bytes=2000)
    newest = max((src / "data").iterdir(), key=lambda p: p.stat().st_mtime_ns)
    newest.write_bytes(newest.read_bytes()[:-1] + b"!")
    before = tree(dest)
    with pytest.raises(IntegrityError):
        pull_dataset(_local(src), dest)
    assert tree(dest) == before


def _local(path):
    from odfweb3.odf.layout import DatasetReader

    return LocalReplica(DatasetReader.open(path))


def test_diverged_dest_refused(tmp_path):
    a = create_root_dataset(tmp_path / "a", blocks=2, seed=4).path
    b = tmp_path / "b"
    shutil.copytree(a, b)
    append_blocks(a, 1, seed=1)
    append_blocks(b, 1, seed=2)
    before = tree(b)
    with pytest.raises(ConflictError, match="diverged"):
        pull_dataset(_local(a), b)
    assert tree(b) == before
    res = pull_dataset(_local(a), b, force=True)
    assert res.head == _local(a).head()


class FlakyReplica:
    """A local replica whose network 'drops' after a number of objects (a fault a real
    gateway cannot be made to produce on demand)."""

    def __init__(self, inner, fail_after):
        self.inner = inner
        self.name = "flaky"
        self.left = fail_after

    def head(self):
        return self.inner.head()

    def read_block(self, mh):
        return self.inner.read_block(mh)

    def stream_object(self, kind, mh, size):
        from odfweb3.errors import BackendUnavailable

        if self.left <= 0:
            raise BackendUnavailable("flaky: connection reset")
        self.left -= 1
        return self.inner.stream_object(kind, mh, size)


def test_interrupted_pull_resumes(tmp_path):
    from odfweb3.errors import BackendUnavailable

    src = create_root_dataset(tmp_path / "src", blocks=4, data_bytes=40_000, seed=5).path
    dest = tmp_path / "dest"
    with pytest.raises(BackendUnavailable):
        pull_dataset(FlakyReplica(_local(src), 3), dest, parallel=1)
    assert not (dest / "refs" / "head").exists()
    res = pull_dataset(_local(src), dest, parallel=1)
    assert res.head == _local(src).head()
    # Three objects came from the first run's staging area, not the replica.
    assert res.bytes_fetched < 40_000 + 4 * 1024
    assert validate_dataset(dest, deep=True).ok
    assert not (dest / ".odfweb3" / "incoming").exists()


def test_lying_replica_creates_nothing_in_a_new_dest(tmp_path):
    src = create_root_dataset(tmp_path / "src", blocks=2, data_bytes=2000, seed=6).path
    blk = sorted((src / "blocks").iterdir())[0]
    blk.write_bytes(blk.read_bytes()[:-3])  # the replica serves a broken chain
    dest = tmp_path / "dest"
    with pytest.raises(OdfWeb3Error):
        pull_dataset(_local(src), dest)
    assert not dest.exists()


def test_a_staged_folder_is_counted_unless_the_pull_staged_it_all(tmp_path):
    from odfweb3.read.pull import _swap_folder

    staged, target = tmp_path / "staged", tmp_path / "target"
    staged.mkdir()
    target.mkdir()
    for name in ("a", "b"):
        (staged / name).write_bytes(b"x")
    # listed: two files where the pull staged one (a leftover) -> object by object
    assert not _swap_folder(str(staged), str(target), 1)
    (target / "held").write_bytes(b"y")
    # a target that is not empty is never replaced, counted or not
    assert not _swap_folder(str(staged), str(target), 2, counted=True)
    (target / "held").unlink()
    # the pull staged all of it (the staging area was empty when it took the lock)
    assert _swap_folder(str(staged), str(target), 2, counted=True)
    assert sorted(p.name for p in target.iterdir()) == ["a", "b"] and not staged.exists()
