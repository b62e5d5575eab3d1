"""pull never mixes or replaces silently: a non-empty DEST that is not a dataset is refused;
one holding another dataset is named as such, and --force then removes what the new
dataset does not have (only files of the layout); an interrupted pull, rerun, counts what
it had already staged as present."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3.errors import BackendUnavailable
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.validate import validate_dataset
from odfweb3.read.pull import pull_dataset
from odfweb3.read.replica import LocalReplica
from tests.unit.test_pull import FlakyReplica


def cli(capsys: pytest.CaptureFixture[str], tmp_path: Path, *argv: str) -> tuple[int, str, str]:
    env = {
        "ODFWEB3_KEYSTORE": str(tmp_path / "keys"),
        "ODFWEB3_STATE_DIR": str(tmp_path / "state"),
        "HOME": str(tmp_path),
    }
    code = main(list(argv), env=env)
    out, err = capsys.readouterr()
    return code, out, err


def tree(path: Path) -> dict[str, bytes]:
    out = {}
    for dirpath, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if d != ".odfweb3"]
        for f in files:
            p = Path(dirpath) / f
            out[p.relative_to(path).as_posix()] = p.read_bytes()
    return out


@pytest.fixture
def published(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    ds = create_root_dataset(tmp_path / "ds", blocks=3, data_bytes=30_000, seed=41).path
    out = tmp_path / "out"
    assert cli(capsys, tmp_path, "publish", str(ds), "--to", f"car:{out}", "-q")[0] == 0
    return ds, out


def test_a_non_empty_directory_that_is_not_a_dataset_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], published: tuple[Path, Path]
) -> None:
    _, out = published
    dest = tmp_path / "home-dir"
    dest.mkdir()
    (dest / "notes.txt").write_text("mine")
    (dest / "data").mkdir()  # a folder named like the layout's does not make it a dataset
    before = tree(dest)
    code, stdout, err = cli(capsys, tmp_path, "pull", f"car:{out}", str(dest))
    assert code == 64 and stdout == "" and err.count("\n") == 1
    assert "not empty and not a dataset (it holds notes.txt)" in err
    assert tree(dest) == before and sorted(os.listdir(dest)) == ["data", "notes.txt"]


def test_an_empty_directory_is_fine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], published: tuple[Path, Path]
) -> None:
    ds, out = published
    dest = tmp_path / "empty"
    dest.mkdir()
    assert cli(capsys, tmp_path, "pull", f"car:{out}", str(dest), "-q")[0] == 0
    assert tree(dest) == tree(ds)


def test_another_dataset_is_named_and_force_replaces_it_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], published: tuple[Path, Path]
) -> None:
    ds, out = published
    other = create_root_dataset(tmp_path / "other", blocks=5, data_bytes=50_000, seed=42).path
    (other / "README.txt").write_text("not part of the layout")
    (other / "refs" / "stale").write_text("a ref of the old dataset")
    ours = json.loads(cli(capsys, tmp_path, "inspect", str(other), "--json")[1])["datasetId"]
    theirs = json.loads(cli(capsys, tmp_path, "inspect", str(ds), "--json")[1])["datasetId"]
    assert ours != theirs
    before = tree(other)
    code, _, err = cli(capsys, tmp_path, "pull", f"car:{out}", str(other))
    assert code == 75 and err.count("\n") == 1
    assert f"{other} holds another dataset {ours}" in err and theirs in err
    assert tree(other) == before
    code, text, err = cli(capsys, tmp_path, "pull", f"car:{out}", str(other), "--force", "--json")
    assert code == 0, err
    result = json.loads(text)
    # Nothing of the old chain is left in the layout; what is outside it is kept.
    assert tree(other) == tree(ds) | {"README.txt": b"not part of the layout"}
    removed = {p for p in before if p not in tree(ds) and p != "README.txt"}
    assert result["filesRemoved"] == len(removed) > 0
    assert validate_dataset(other, deep=True).ok


def test_an_interrupted_pull_rerun_counts_what_it_staged_as_present(tmp_path: Path) -> None:
    src = create_root_dataset(tmp_path / "src", blocks=4, data_bytes=40_000, seed=5).path
    replica = LocalReplica(DatasetReader.open(src))
    dest = tmp_path / "dest"
    with pytest.raises(BackendUnavailable):
        pull_dataset(FlakyReplica(replica, 3), dest, parallel=1)
    # The work directory of the interrupted pull does not make DEST "not a dataset".
    res = pull_dataset(replica, dest, parallel=1)
    full = pull_dataset(replica, tmp_path / "fresh", parallel=1)
    assert res.objects_present == 3  # the three the first run verified and staged
    assert res.objects_fetched == full.objects_fetched - 3
    assert res.objects_present + res.objects_fetched == full.objects_fetched
    assert validate_dataset(dest, deep=True).ok
