"""The CLI's conventions: subcommands, --json, exit codes, one-line errors."""

import json
import subprocess
import sys

import pytest

from odfweb3.cli.main import main


def run(capsys, *argv, env=None):
    code = main(list(argv), env=env or {})
    out, err = capsys.readouterr()
    return code, out, err


def test_example_inspect_validate_json(capsys, tmp_path):
    ds = tmp_path / "ds"
    code, out, _ = run(capsys, "example", str(ds), "--blocks", "3", "--data-bytes", "30K", "--json")
    assert code == 0
    made = json.loads(out)
    assert made["blocks"] == 7 and made["datasetId"].startswith("did:odf:")

    code, out, _ = run(capsys, "--json", "inspect", str(ds))
    assert code == 0
    info = json.loads(out)
    assert info["head"] == made["head"] and info["dataFiles"] == 3
    assert info["dataBytes"] == 30720 and info["kind"] == "Root"
    assert info["license"]["spdxId"] == "CC0-1.0"

    code, out, _ = run(capsys, "validate", str(ds), "--deep", "--json")
    assert code == 0 and json.loads(out)["ok"] is True

    code, out, _ = run(capsys, "example", str(ds), "--append", "2", "--json")
    assert code == 0 and json.loads(out)["blocks"] == 9
    code, out, _ = run(capsys, "validate", str(ds), "--deep")
    assert code == 0 and "valid" in out


def test_invalid_dataset_exit_1_and_names_block(capsys, tmp_path):
    ds = tmp_path / "ds"
    run(capsys, "example", str(ds), "--blocks", "2")
    data = sorted((ds / "data").iterdir())[0]
    data.write_bytes(b"tampered")
    code, out, _ = run(capsys, "validate", str(ds), "--deep")
    assert code == 1
    assert "object-size" in out and data.name in out


@pytest.mark.parametrize(
    ("argv", "code", "needle"),
    [
        (["inspect", "/nonexistent/x"], 66, "no such dataset"),
        (["validate"], 64, "required"),
        (["frobnicate"], 64, "unknown command 'frobnicate'"),
        (["example", "x", "--data-bytes", "lots"], 64, "not a size"),
    ],
)
def test_errors_are_one_line(capsys, argv, code, needle):
    got, _out, err = run(capsys, *argv)
    assert got == code
    assert err.startswith("odfweb3: error:") and err.count("\n") == 1
    assert needle in err and "Traceback" not in err


def test_not_a_dataset_dir(capsys, tmp_path):
    code, _, err = run(capsys, "inspect", str(tmp_path))
    assert code == 66 and "not an ODF dataset" in err


def test_console_script_runs(tmp_path):
    exe = [sys.executable, "-m", "odfweb3.cli.main"]
    r = subprocess.run([*exe, "--version"], capture_output=True, text=True, check=False)
    assert r.returncode == 0 and r.stdout.startswith("odfweb3 ")


def test_bad_config_names_file_and_key(capsys, tmp_path):
    cfg = tmp_path / "odfweb3.yaml"
    cfg.write_text("ipfs:\n  api: 5\n")
    code, _, err = run(capsys, "--config", str(cfg), "inspect", str(tmp_path))
    assert code == 78
    assert str(cfg) in err and "ipfs.api" in err
