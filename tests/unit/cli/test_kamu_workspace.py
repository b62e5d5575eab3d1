"""Inside a kamu workspace, commands take kamu's dataset names.

The workspaces here are laid out as kamu-cli lays them out, read from its sources
(``odfweb3/odf/kamu_workspace.py`` cites each): ``.kamu/`` holds ``datasets/``, ``repos/``,
``cache/``, ``run/`` and ``version`` (``WorkspaceLayout::create``, format 5); each dataset
is ``.kamu/datasets/<dataset ID multibase>/`` (``DatasetStorageUnitLocalFs``:
``root.join(dataset_id.as_multibase())``) with ``blocks/ refs/ data/ checkpoints/ info/``
(``DatasetLayout::create``) and its alias in ``info/alias`` (``write_dataset_alias``:
``name``, or ``account/name`` in a multi-tenant workspace, whose ``workspace.config`` says
``multi_tenant: true``). Older kamu: ``datasets/<name>/`` (single-tenant) and
``datasets/<account>/<id>/`` (multi-tenant, ``DatasetMultiTenantStorageStrategy``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3.errors import NotFound, UsageError
from odfweb3.odf.builder import create_root_dataset, example_keypair
from odfweb3.odf.kamu_workspace import (
    find_workspace,
    kamu_alias_of,
    resolve_dataset_name,
    workspace_datasets,
)


def make_workspace(root: Path, *, multi_tenant: bool = False) -> Path:
    """An empty kamu workspace at ``root`` (``WorkspaceLayout::create``)."""
    kamu = root / ".kamu"
    for sub in ("datasets", "repos", "cache", "run"):
        (kamu / sub).mkdir(parents=True)
    (kamu / "version").write_text("5")
    if multi_tenant:
        (kamu / "workspace.config").write_text(
            "kind: WorkspaceConfig\nversion: 1\ncontent:\n  multi_tenant: true\n"
        )
    return kamu


def add_dataset(kamu: Path, alias: str | None, seed: int, *, under: str | None = None) -> Path:
    """A dataset stored as kamu stores it: named by its ID, its alias in ``info/alias``."""
    keypair = example_keypair(seed)
    dirname = str(keypair.dataset_id).removeprefix("did:odf:")
    parent = kamu / "datasets" / under if under else kamu / "datasets"
    path = parent / dirname
    create_root_dataset(path, blocks=1, data_bytes=512, seed=seed, keypair=keypair, fsync=False)
    (path / "info").mkdir()
    if alias is not None:
        (path / "info" / "alias").write_text(alias)  # kamu writes no newline
    return path


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}

    def run(*argv: str, extra_env: dict[str, str] | None = None) -> tuple[int, str, str]:
        code = main(list(argv), env=env | (extra_env or {}))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_a_name_is_resolved_from_any_folder_below_the_workspace(cli, tmp_path, monkeypatch):
    kamu = make_workspace(tmp_path / "ws")
    path = add_dataset(kamu, "com.example.deaths", 1)
    births = add_dataset(kamu, "com.example.births", 2)
    (tmp_path / "ws" / "notebooks" / "deep").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "ws" / "notebooks" / "deep")

    code, out, err = cli("--json", "inspect", "com.example.deaths")
    assert code == 0, err
    info = json.loads(out)
    assert info["path"] == str(path.resolve())
    assert info["datasetId"] == str(example_keypair(1).dataset_id)

    code, out, err = cli("validate", "com.example.deaths", "--deep", "--json")
    assert code == 0 and json.loads(out)["ok"] is True, err
    code, out, err = cli("log", "com.example.births", "--json")
    assert code == 0 and len(json.loads(out)["blocks"]) == 5, err
    # The dataset ID names it too.
    code, out, err = cli("--json", "inspect", str(example_keypair(2).dataset_id))
    assert code == 0 and json.loads(out)["path"] == str(births.resolve()), err


def test_publish_status_and_verify_by_name(cli, tmp_path, monkeypatch):
    # The workflow: publish by kamu name, see where it came from, verify the copy by name.
    kamu = make_workspace(tmp_path / "ws")
    path = add_dataset(kamu, "covid.cases", 3)
    monkeypatch.chdir(tmp_path / "ws")

    code, out, err = cli("publish", "covid.cases", "--to", "car:out", "--json")
    assert code == 0, err
    code, out, err = cli("status", "--json")
    assert code == 0, err
    (row,) = json.loads(out)["targets"]
    assert row["localPath"] == str(path.resolve()) and row["kamuName"] == "covid.cases"
    code, out, _ = cli("status", "covid.cases")
    assert code == 0 and "(kamu: covid.cases)" in out and "(up to date)" in out
    assert f"  path       {Path('.kamu/datasets') / path.name} (kamu: covid.cases)\n" in out
    code, out, err = cli("verify", "covid.cases", "--against", "car:out")
    assert code == 0, (out, err)


def test_unknown_name_is_one_line_listing_the_names(cli, tmp_path, monkeypatch):
    kamu = make_workspace(tmp_path / "ws")
    add_dataset(kamu, "b.second", 5)
    add_dataset(kamu, "a.first", 4)
    monkeypatch.chdir(tmp_path / "ws")
    for argv in (("inspect", "no.such"), ("publish", "no.such", "--to", "car:out")):
        code, out, err = cli(*argv)
        assert code == 66 and out == ""
        assert err.count("\n") == 1
        assert "no.such: no such dataset in the kamu workspace" in err
        assert "(it has: a.first, b.second)" in err
    assert not (tmp_path / "ws" / "out").exists()  # nothing written


def test_outside_a_workspace_a_name_is_a_missing_directory(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("inspect", "com.example.deaths")
    assert code == 66 and "no such dataset directory" in err and err.count("\n") == 1


def test_a_dataset_directory_wins_over_a_name(cli, tmp_path, monkeypatch):
    kamu = make_workspace(tmp_path / "ws")
    add_dataset(kamu, "same", 6)
    monkeypatch.chdir(tmp_path / "ws")
    mine = create_root_dataset(tmp_path / "ws" / "same", blocks=2, data_bytes=256, seed=7)
    code, out, _ = cli("--json", "inspect", "same")
    assert code == 0 and json.loads(out)["path"] == str(mine.path.resolve())


def test_kamu_workspace_env_var(cli, tmp_path, monkeypatch):
    # KAMU_WORKSPACE names the workspace's folder relative to the working directory.
    kamu = make_workspace(tmp_path / "elsewhere" / "ws")
    path = add_dataset(kamu, "x", 8)
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("--json", "inspect", "x", extra_env={"KAMU_WORKSPACE": "elsewhere/ws"})
    assert code == 0 and json.loads(out)["path"] == str(path.resolve()), err
    assert find_workspace(tmp_path, {"KAMU_WORKSPACE": "elsewhere/ws"}) == kamu
    assert find_workspace(tmp_path, {}) is None


def test_workspace_listing_skips_what_kamu_skips(tmp_path):
    kamu = make_workspace(tmp_path)
    good = add_dataset(kamu, "good", 9)
    unfinished = add_dataset(kamu, "unfinished", 10)
    (unfinished / "refs" / "head").unlink()  # kamu: no head => garbage
    hidden = kamu / "datasets" / ".tmp"
    shutil.copytree(good, hidden)
    (kamu / "datasets" / "stray.txt").write_text("x")
    (datasets,) = [workspace_datasets(kamu)]
    assert [(d.alias, d.path) for d in datasets] == [("good", good)]
    assert datasets[0].dataset_id == str(example_keypair(9).dataset_id)


def test_multi_tenant_and_old_layouts(tmp_path):
    kamu = make_workspace(tmp_path, multi_tenant=True)
    alice = add_dataset(kamu, "alice/weather", 11)
    bob = add_dataset(kamu, "bob/weather", 12)
    only = add_dataset(kamu, "bob/rain", 13)
    assert resolve_dataset_name("alice/weather", tmp_path) == alice
    assert resolve_dataset_name("bob/weather", tmp_path) == bob
    assert resolve_dataset_name("rain", tmp_path) == only  # one account has it
    with pytest.raises(UsageError, match=r"alice/weather, bob/weather\); give account/name"):
        resolve_dataset_name("weather", tmp_path)
    assert kamu_alias_of(alice) == "alice/weather"

    # Older kamu, multi-tenant: datasets/<account>/<id>/ (a bare alias is the account's).
    old_mt = add_dataset(kamu, "snow", 14, under="carol")
    assert resolve_dataset_name("carol/snow", tmp_path) == old_mt
    assert kamu_alias_of(old_mt) == "carol/snow"

    # Older kamu, single-tenant: datasets/<name>/, no alias file.
    old_st = kamu / "datasets" / "org.example.old"
    create_root_dataset(old_st, blocks=1, data_bytes=64, seed=15, fsync=False)
    assert resolve_dataset_name("org.example.old", tmp_path) == old_st
    assert kamu_alias_of(old_st) == "org.example.old"

    with pytest.raises(NotFound) as exc:
        resolve_dataset_name("nope", tmp_path)
    assert "(it has: alice/weather, bob/rain, bob/weather, carol/snow, org.example.old)" in str(
        exc.value
    )
    assert kamu_alias_of(tmp_path) is None


def test_hostile_alias_files_are_not_names(tmp_path):
    kamu = make_workspace(tmp_path)
    big = add_dataset(kamu, None, 16)
    (big / "info" / "alias").write_bytes(b"a" * 10_000)
    odd = add_dataset(kamu, None, 17)
    (odd / "info" / "alias").write_bytes(b"../../etc\n")
    bad = add_dataset(kamu, None, 18)
    (bad / "info" / "alias").write_bytes(b"\xff\xfe")
    datasets = workspace_datasets(kamu)
    assert [d.alias for d in datasets] == [None, None, None]
    with pytest.raises(NotFound, match="it has: did:odf:"):
        resolve_dataset_name("../../etc", tmp_path)
    # Still reachable by ID.
    assert resolve_dataset_name(str(example_keypair(17).dataset_id), tmp_path) == odd


def test_the_listing_of_a_big_workspace_stays_one_short_line(tmp_path):
    kamu = make_workspace(tmp_path)
    for i in range(25):
        add_dataset(kamu, f"ds{i:02d}", 100 + i)
    with pytest.raises(NotFound) as exc:
        resolve_dataset_name("nope", tmp_path)
    text = str(exc.value)
    assert "ds00, ds01" in text and "ds19 and 5 more)" in text and "ds20" not in text
    assert "\n" not in text
