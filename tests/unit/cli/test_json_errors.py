"""With ``--json`` every outcome is JSON: an error is one object on stdout
(``{"error": {"code", "exit", "message"}}``) besides its one line on stderr, in every
command family; and every number in a result is a number."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3.cli.text import format_winston, key_values


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        "HOME": str(tmp_path / "home"),
        "ODFWEB3_STATE_DIR": str(tmp_path / "state"),
        # Nothing listens on the discard port: an IPFS publish fails as a backend error.
        "ODFWEB3_IPFS_API": "http://127.0.0.1:9",
    }


@pytest.fixture
def dataset(tmp_path: Path, env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> Path:
    ds = tmp_path / "ds"
    assert main(["example", str(ds), "--blocks", "2", "-q"], env) == 0
    capsys.readouterr()
    return ds


def _one_error(capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, object], str]:
    out, err = capsys.readouterr()
    doc = json.loads(out)  # exactly one document: json.loads refuses trailing text
    assert set(doc) == {"error"}
    assert err.count("\n") == 1 and err.startswith("odfweb3: error: ")
    error = doc["error"]
    assert set(error) == {"code", "exit", "message"}
    assert isinstance(error["exit"], int) and isinstance(error["message"], str)
    assert error["message"] in err  # the same words on both streams
    return error, err


@pytest.mark.parametrize(
    ("argv", "code", "exit_code"),
    [
        # a failing publish: the node is unreachable
        (["publish", "{ds}", "--to", "ipfs"], "backend_unavailable", 69),
        (["publish", "{tmp}/nothing", "--to", "car:{tmp}/car"], "not_found", 66),
        (["pull", "car:{tmp}/none", "{tmp}/out"], "not_found", 66),
        (["pull", "ipns://bad", "{tmp}/out"], "format", 65),
        (["resolve", "did:odf:xyz"], "format", 65),
        (["verify", "{tmp}/nothing", "--against", "car:{tmp}/car"], "not_found", 66),
        (["keys", "recipients", "list", "{ds}"], "not_found", 66),
        (["remote", "remove", "nothere"], "not_found", 66),
        # a usage error is found before the options are parsed: JSON all the same
        (["pull", "ipns://x"], "usage", 64),
        (["frobnicate"], "usage", 64),
    ],
)
def test_every_command_family_fails_as_one_json_object(
    argv: list[str],
    code: str,
    exit_code: int,
    tmp_path: Path,
    dataset: Path,
    env: dict[str, str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = [a.format(ds=dataset, tmp=tmp_path) for a in argv]
    assert main([*args, "--json"], env) == exit_code
    error, _ = _one_error(capsys)
    assert error == {"code": code, "exit": exit_code, "message": error["message"]}


def test_json_before_the_command_counts_too(
    tmp_path: Path, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--json", "inspect", str(tmp_path / "none")], env) == 66
    error, _ = _one_error(capsys)
    assert error["code"] == "not_found"


def test_without_json_stdout_stays_empty(
    tmp_path: Path, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", str(tmp_path / "none")], env) == 66
    out, err = capsys.readouterr()
    assert out == "" and "no such dataset" in err


def test_a_hostile_message_is_escaped_on_stderr_and_exact_in_json(
    tmp_path: Path, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "a\x1b[31mred\nline"
    assert main(["inspect", str(bad), "--json"], env) == 66
    out, err = capsys.readouterr()
    assert "\x1b" not in err and "\\x1b" in err and err.count("\n") == 1
    assert "\x1b" not in out  # json.dumps escapes it
    assert str(bad) in json.loads(out)["error"]["message"]


def test_subprocess_stdout_is_one_json_document(tmp_path: Path, env: dict[str, str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "odfweb3.cli.main", "inspect", str(tmp_path / "x"), "--json"],
        capture_output=True,
        text=True,
        env={**env, "PATH": "/usr/bin:/bin"},
        timeout=120,
        check=False,
    )
    assert proc.returncode == 66
    assert json.loads(proc.stdout)["error"]["exit"] == 66
    assert proc.stderr.startswith("odfweb3: error: ") and proc.stderr.count("\n") == 1


def test_a_cost_is_winston_in_json_and_ar_in_text() -> None:
    # The arweave summary carries "cost" as an integer; text mode shows both units.
    assert key_values([("cost", 11785938495)]) == ["  cost  " + format_winston(11785938495)]
    assert format_winston(11785938495) == "11785938495 winston (0.011785938495 AR)"
