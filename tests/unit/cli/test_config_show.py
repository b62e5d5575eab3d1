"""``odfweb3 config``: the settings in effect and where each comes from, run as a user
runs it (a subprocess with its own HOME); the configuration error names the key and the
keys known there, never a source path of odfweb3's own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def _run(
    args: list[str], cwd: Path, extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ODFWEB3_", "XDG_"))}
    env.update(HOME=str(cwd / "home"), XDG_CONFIG_HOME=str(cwd / "cfg"), **(extra or {}))
    return subprocess.run(
        [sys.executable, "-m", "odfweb3.cli.main", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _settings(r: subprocess.CompletedProcess[str]) -> dict[str, tuple[object, str]]:
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    return {s["key"]: (s["value"], s["source"]) for s in doc["settings"]}


def test_without_a_file_every_value_is_a_default(tmp_path):
    r = _run(["config", "--json"], tmp_path)
    settings = _settings(r)
    assert json.loads(r.stdout)["source"] is None
    assert settings["ipfs.api"] == ("http://127.0.0.1:5001", "default")
    assert settings["ipfs.record_ttl"] == (300, "default")
    home = tmp_path / "home" / ".local" / "share" / "odfweb3"
    assert settings["state_dir"] == (str(home / "state"), "default")
    assert {source for _, source in settings.values()} == {"default"}


def test_each_value_names_its_source_file_env_or_flag(tmp_path):
    (tmp_path / "odfweb3.yaml").write_text("ipfs:\n  record_ttl: 60\n")
    team = tmp_path / "team.yaml"
    team.write_text("ipfs:\n  record_ttl: 30\narweave:\n  gateway: http://127.0.0.1:1985\n")
    env = {"ODFWEB3_IPFS_API": "http://127.0.0.1:5099"}

    found = _settings(_run(["config", "show", "--json"], tmp_path, env))
    assert found["ipfs.record_ttl"] == (60, str(tmp_path / "odfweb3.yaml"))
    assert found["ipfs.api"] == ("http://127.0.0.1:5099", "env ODFWEB3_IPFS_API")
    assert found["ipfs.gateway"] == ("http://127.0.0.1:8080", "default")

    flagged = _settings(_run(["config", "--json", "--config", str(team)], tmp_path, env))
    assert flagged["ipfs.record_ttl"] == (30, f"{team} (--config)")
    assert flagged["arweave.gateway"] == ("http://127.0.0.1:1985", f"{team} (--config)")
    assert flagged["ipfs.api"][1] == "env ODFWEB3_IPFS_API"

    human = _run(["config"], tmp_path, env)
    assert human.returncode == 0, human.stderr
    lines = human.stdout.splitlines()
    assert lines[0] == f"configuration file: {tmp_path / 'odfweb3.yaml'}"
    ttl = next(line for line in lines if line.startswith("ipfs.record_ttl "))
    assert ttl.split() == ["ipfs.record_ttl", "60", str(tmp_path / "odfweb3.yaml")]
    api = next(line for line in lines if line.startswith("ipfs.api "))
    assert api.split() == ["ipfs.api", "http://127.0.0.1:5099", "env", "ODFWEB3_IPFS_API"]


def test_an_unknown_key_is_one_line_naming_the_known_keys_not_a_source_path(tmp_path):
    (tmp_path / "odfweb3.yaml").write_text("ipfs:\n  record_tll: 60\n")
    r = _run(["config"], tmp_path)
    assert r.returncode == 78
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    line = lines[0]
    assert str(tmp_path / "odfweb3.yaml") in line and "ipfs: unknown key 'record_tll'" in line
    assert "record_ttl" in line and "gateway" in line  # the keys that exist there
    assert "schemas/" not in line and ".schema.json" not in line
