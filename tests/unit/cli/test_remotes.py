"""``odfweb3 remote`` and names in publish / verify / status."""

from __future__ import annotations

import json

import pytest

from odfweb3.cli.main import main
from odfweb3.errors import FormatError
from odfweb3.publish.remotes import REMOTES_FILE, Remotes


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv), env=env)
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_remote_add_list_remove(cli, tmp_path):
    assert cli("remote", "list")[1] == "no remotes (add one: odfweb3 remote add NAME TARGET)\n"
    assert cli("remote", "add", "origin", "car:out") == (0, "origin -> car:out\n", "")
    assert cli("remote", "add", "live", "ipfs")[0] == 0
    code, out, _ = cli("remote", "list", "--json")
    assert json.loads(out)["remotes"] == [
        {"name": "origin", "target": f"car:{tmp_path / 'out'}"},  # stored absolute
        {"name": "live", "target": "ipfs"},
    ]
    code, _, err = cli("remote", "add", "origin", "car:x")
    assert code == 64 and "remote origin already exists" in err
    for bad in ("car", "ipfs", "Origin", "1x", "a/b"):
        code, _, err = cli("remote", "add", bad, "car:y")
        assert code == 64 and err.count("\n") == 1, bad
    assert cli("remote", "remove", "live")[0] == 0
    code, _, err = cli("remote", "remove", "live")
    assert code == 66 and "no remote named 'live'" in err


def test_bare_remote_lists_like_git_remote(cli, tmp_path):
    assert cli("remote") == (0, "no remotes (add one: odfweb3 remote add NAME TARGET)\n", "")
    assert cli("remote", "add", "origin", "car:out")[0] == 0
    assert cli("remote", "add", "live", "ipfs")[0] == 0
    code, out, _ = cli("remote")
    assert code == 0 and out.split() == ["origin", "car:out", "live", "ipfs"]
    assert json.loads(cli("remote", "--json")[1]) == json.loads(cli("remote", "list", "--json")[1])


@pytest.mark.parametrize("target", ["foo:bar", "carr:/x", "s3://bucket", "ipfss"])
def test_remote_add_refuses_a_target_no_backend_publishes_to(cli, target):
    code, out, err = cli("remote", "add", "bad", target)
    assert code == 64 and out == "" and err.count("\n") == 1
    # One line naming what is known, from the backend registry.
    assert f"{target!r} is not a target" in err
    for kind in ("car", "ipfs", "pinning", "bundle", "arweave", "turbo"):
        assert kind in err
    assert cli("remote", "list", "--json")[1] == '{\n  "remotes": []\n}\n'  # nothing stored


def test_remote_rename_keeps_the_target_and_the_order(cli, tmp_path):
    cli("remote", "add", "origin", "car:out")
    cli("remote", "add", "live", "ipfs")
    code, out, _ = cli("remote", "rename", "origin", "backup", "--json")
    assert code == 0
    assert json.loads(out) == {
        "name": "backup",
        "previousName": "origin",
        "target": f"car:{tmp_path / 'out'}",
    }
    assert cli("remote")[1].split() == ["backup", "car:out", "live", "ipfs"]
    # A renamed remote is used by its new name.
    assert cli("example", "ds", "--blocks", "1", "-q")[0] == 0
    code, out, _ = cli("publish", "ds", "--to", "backup", "--json")
    assert code == 0 and json.loads(out)["plan"]["target"] == f"car:{tmp_path / 'out'}"
    code, _, err = cli("remote", "rename", "origin", "x")
    assert code == 66 and "no remote named 'origin'" in err
    code, _, err = cli("remote", "rename", "backup", "live")
    assert code == 64 and "remote live already exists" in err
    code, _, err = cli("remote", "rename", "backup", "ipfs")
    assert code == 64 and "not a target kind" in err
    # Every backend's target kinds, as declared (turbo was once missing from a fixed list).
    code, _, err = cli("remote", "add", "turbo", "car:out3")
    assert code == 64 and "not a target kind" in err
    assert cli("remote")[1].split() == ["backup", "car:out", "live", "ipfs"]


def test_publish_verify_status_by_name_and_publish_to_all(cli, tmp_path):
    cli("example", "ds", "--blocks", "1", "-q")
    cli("remote", "add", "origin", "car:out")
    cli("remote", "add", "backup", "car:out2")
    assert cli("publish", "ds", "--to", "origin", "-q")[0] == 0
    assert cli("publish", "ds", "--to", "backup", "-q")[0] == 0
    assert (tmp_path / "out" / "publish.json").is_file()
    code, out, _ = cli("verify", "ds", "--against", "origin", "--against", "backup", "--json")
    assert code == 0
    assert [r["replica"] for r in json.loads(out)["replicas"]] == [
        f"car:{tmp_path / 'out'}",
        f"car:{tmp_path / 'out2'}",
    ]
    code, out, _ = cli("status", "--json")
    assert [r["remotes"] for r in json.loads(out)["targets"]] == [["origin"], ["backup"]]
    assert "  remote     origin\n" in cli("status")[1]

    # Without --to: every target the dataset was published to from here.
    cli("example", "ds", "--append", "1", "-q")
    code, out, _ = cli("publish", "ds", "--json")
    assert code == 0
    done = json.loads(out)["publishes"]
    assert [(p["remotes"], p["plan"]["relation"]) for p in done] == [
        (["origin"], "ahead"),
        (["backup"], "ahead"),
    ]
    code, out, _ = cli("verify", "ds", "--against", "origin", "--against", "backup")
    assert code == 0 and out.count("identical") == 2
    code, out, _ = cli("publish", "ds")
    assert code == 0 and out.count("nothing new") == 2


def test_publish_without_to_and_no_history_says_what_to_do(cli):
    cli("example", "ds", "--blocks", "1", "-q")
    code, _, err = cli("publish", "ds")
    assert code == 64 and "was never published from here; give --to TARGET" in err


def test_verify_against_a_node_remote_needs_a_publish_from_here(cli):
    cli("example", "ds", "--blocks", "1", "-q")
    cli("remote", "add", "live", "ipfs")
    code, _, err = cli("verify", "ds", "--against", "live")
    assert code == 64 and "was never published to ipfs from here" in err


def test_a_damaged_remotes_file_is_one_line(cli, tmp_path):
    state = tmp_path / "home" / ".local" / "share" / "odfweb3" / "state"
    state.mkdir(parents=True)
    (state / REMOTES_FILE).write_text('{"remotes": [1]}')
    code, _, err = cli("remote", "list")
    assert code == 65 and err.count("\n") == 1 and "not a remotes file" in err
    with pytest.raises(FormatError):
        Remotes(state).load()
