"""A pull destination that is not what it should be.

Attacks rebuilt: ``DEST/.odfweb3`` a link to X (pull deleted ``X/incoming`` and made
``X/lock``), ``DEST/data`` a link to X (objects written into X), ``DEST/refs/head`` a link
to a huge file, DEST a regular file, ``DEST/refs/head`` a directory, ``DEST/data/<hash>``
a directory. Each: one line, exit 64, nothing written outside DEST, DEST's previous head
intact.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.chain import iter_objects, walk_chain
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.validate import validate_dataset
from odfweb3.read.pull import pull_dataset
from odfweb3.read.replica import LocalReplica


def _snapshot(path: Path) -> dict[str, object]:
    out: dict[str, object] = {}
    for dirpath, dirs, files in os.walk(path):
        for name in dirs + files:
            p = Path(dirpath, name)
            rel = str(p.relative_to(path))
            if p.is_symlink():
                out[rel] = ("link", os.readlink(p))
            elif p.is_file() and p.stat().st_size > 1 << 20:
                out[rel] = ("big", p.stat().st_size, p.stat().st_mtime_ns)
            elif p.is_file():
                out[rel] = p.read_bytes()
            else:
                out[rel] = "dir"
    return out


@pytest.fixture
def world(tmp_path: Path):  # type: ignore[no-untyped-def]
    src = create_root_dataset(tmp_path / "src", blocks=2, data_bytes=3000, seed=4).path
    dest = tmp_path / "dest"
    pull_dataset(LocalReplica(DatasetReader.open(src)), dest)
    append_blocks(src, 2, data_bytes=2000)  # something new to pull
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "incoming").mkdir()
    (outside / "incoming" / "keep").write_text("precious")
    return src, dest, outside, tmp_path


def _new_data_path(src: Path, dest: Path) -> str:
    old = DatasetReader.open(dest).head()
    entries = list(walk_chain(DatasetReader.open(src), stop_at=old))
    return next(o.path for o in iter_objects(entries) if o.kind == "data")


def _link_work_dir(src: Path, dest: Path, outside: Path) -> None:
    shutil.rmtree(dest / ".odfweb3", ignore_errors=True)
    os.symlink(outside, dest / ".odfweb3")


def _link_data_dir(src: Path, dest: Path, outside: Path) -> None:
    for p in (dest / "data").iterdir():
        os.rename(p, outside / p.name)
    os.rmdir(dest / "data")
    os.symlink(outside, dest / "data")


def _link_head_to_huge(src: Path, dest: Path, outside: Path) -> None:
    huge = outside / "huge"
    with open(huge, "wb") as f:
        f.truncate(3 << 30)  # sparse: 3 GB that costs no disk
    os.replace(dest / "refs" / "head", outside / "old-head")
    os.symlink(huge, dest / "refs" / "head")


def _head_is_a_dir(src: Path, dest: Path, outside: Path) -> None:
    os.replace(dest / "refs" / "head", outside / "old-head")
    (dest / "refs" / "head").mkdir()


def _object_is_a_dir(src: Path, dest: Path, outside: Path) -> None:
    (dest / _new_data_path(src, dest)).mkdir()


def _lock_is_a_link(src: Path, dest: Path, outside: Path) -> None:
    (dest / ".odfweb3").mkdir(exist_ok=True)
    (dest / ".odfweb3" / "lock").unlink(missing_ok=True)
    os.symlink(outside / "lock", dest / ".odfweb3" / "lock")


ATTACKS: dict[str, tuple[Callable[[Path, Path, Path], None], str]] = {
    "work-dir-link": (_link_work_dir, ".odfweb3 is a symbolic link"),
    "data-dir-link": (_link_data_dir, "data is a symbolic link"),
    "head-link-to-3GB": (_link_head_to_huge, "refs/head is a symbolic link"),
    "head-is-a-dir": (_head_is_a_dir, "refs/head is a directory"),
    "object-is-a-dir": (_object_is_a_dir, "is a directory"),
    "lock-is-a-link": (_lock_is_a_link, "lock is a symbolic link"),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_dest_with_links_or_wrong_kinds_is_refused(world, capsys, attack: str) -> None:
    src, dest, outside, tmp = world
    plant, message = ATTACKS[attack]
    plant(src, dest, outside)
    before_dest, before_outside = _snapshot(dest), _snapshot(outside)
    code = main(["pull", str(src), str(dest)], env={"HOME": str(tmp)})
    out, err = capsys.readouterr()
    assert code == 64, (out, err)
    assert err.count("\n") == 1 and message in err, err
    assert _snapshot(dest) == before_dest
    assert _snapshot(outside) == before_outside


def test_dest_a_regular_file_is_refused(world, capsys) -> None:
    src, _dest, _outside, tmp = world
    target = tmp / "file"
    target.write_text("not a directory")
    code = main(["pull", str(src), str(target)], env={"HOME": str(tmp)})
    _, err = capsys.readouterr()
    assert code == 64 and err.count("\n") == 1 and "not a directory" in err, err
    assert target.read_text() == "not a directory"


def test_an_intact_dest_still_pulls(world) -> None:
    src, dest, _outside, _tmp = world
    result = pull_dataset(LocalReplica(DatasetReader.open(src)), dest)
    assert result.new_blocks == 2
    assert validate_dataset(dest, deep=True).ok


def test_head_linked_to_3gb_costs_nothing(world) -> None:
    """The 3 GB ``refs/head`` link, in a child process: peak memory and time bounded."""
    from tests.support.measure import run_cli

    src, dest, outside, tmp = world
    _link_head_to_huge(src, dest, outside)
    run = run_cli(["pull", str(src), str(dest)], env={"HOME": str(tmp)}, timeout=60)
    assert run.code == 64 and len(run.lines) == 1, run.summary()
    assert "refs/head is a symbolic link" in run.lines[0]
    assert run.peak_rss_mb < 256 and not run.timed_out, run.summary()
