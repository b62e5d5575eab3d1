"""After every publish, what to give others, as the target's backend says (StateFacts.share):
the IPNS name after car:, ipfs and pinning: (Arweave targets: tests/unit/cli/test_wallet_cmds.py);
``share`` in ``--json``; said again when there is nothing new."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odfweb3.cli.main import main


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        "HOME": str(tmp_path / "home"),
        "ODFWEB3_STATE_DIR": str(tmp_path / "state"),
        "ODFWEB3_KEYSTORE": str(tmp_path / "keys"),
    }


def _run(capsys: pytest.CaptureFixture[str], env: dict[str, str], *argv: str) -> str:
    assert main(list(argv), env) == 0
    return capsys.readouterr().out


def _share_block(text: str) -> list[list[str]]:
    """The lines under ``share:``, each split in words."""
    lines = text.splitlines()
    at = lines.index("share:")
    return [line.split() for line in lines[at + 1 :] if line.startswith("    ")]


def test_car_publish_shares_the_ipns_name(
    tmp_path: Path, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    ds, car = tmp_path / "ds", tmp_path / "car"
    _run(capsys, env, "example", str(ds), "--blocks", "2", "-q")
    doc = json.loads(_run(capsys, env, "publish", str(ds), "--to", f"car:{car}", "--json"))
    ipns = f"ipns://{doc['record']['name']}"
    assert doc["share"] == [{"what": "latest version", "ref": ipns}]
    # Text mode, after an update and again when there is nothing new.
    _run(capsys, env, "example", str(ds), "--append", "1", "-q")
    text = _run(capsys, env, "publish", str(ds), "--to", f"car:{car}")
    assert _share_block(text) == [["latest", "version", ipns]]
    text = _run(capsys, env, "publish", str(ds), "--to", f"car:{car}")
    assert "nothing new" in text
    assert _share_block(text) == [["latest", "version", ipns]]


def test_a_dry_run_shares_nothing(
    tmp_path: Path, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    ds = tmp_path / "ds"
    _run(capsys, env, "example", str(ds), "--blocks", "2", "-q")
    argv = ["publish", str(ds), "--to", f"car:{tmp_path / 'car'}", "--dry-run"]
    assert "share" not in json.loads(_run(capsys, env, *argv, "--json"))
    assert "share:" not in _run(capsys, env, *argv)


def test_the_import_hint_says_every_car_oldest_first(
    tmp_path: Path, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    ds, car = tmp_path / "ds", tmp_path / "car"
    _run(capsys, env, "example", str(ds), "--blocks", "2", "-q")
    _run(capsys, env, "publish", str(ds), "--to", f"car:{car}", "-q")
    _run(capsys, env, "example", str(ds), "--append", "1", "-q")
    lines = _run(capsys, env, "publish", str(ds), "--to", f"car:{car}").splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("import into a node"))
    assert lines[at - 1].startswith("every CAR is needed, oldest first")
    doc = json.loads((car / "publish.json").read_text())
    cars = doc["import"][0].split()[3:]
    assert len(cars) >= 2 and all(c.endswith(".car") for c in cars)
    assert lines[at + 1].strip() == doc["import"][0]  # all of them, in one command, in order


def test_an_update_says_how_long_caches_may_show_the_previous_version(
    tmp_path: Path, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    ds, car = tmp_path / "ds", tmp_path / "car"
    config = tmp_path / "odfweb3.yaml"
    config.write_text("ipfs:\n  record_ttl: 120\n")
    publish = ["publish", str(ds), "--to", f"car:{car}", "--config", str(config)]
    _run(capsys, env, "example", str(ds), "--blocks", "2", "-q")
    first = _run(capsys, env, *publish)
    assert "previous version" not in first  # nothing was served before: nothing cached
    _run(capsys, env, "example", str(ds), "--append", "1", "-q")
    doc = json.loads(_run(capsys, env, *publish, "--json"))
    assert doc["cacheTtl"] == 120 and doc["record"]["ttl"] == 120
    _run(capsys, env, "example", str(ds), "--append", "1", "-q")
    text = _run(capsys, env, *publish)
    note = [line for line in text.splitlines() if line.startswith("note:")]
    assert note == [
        "note: resolvers and gateways may show the previous version for up to 2 min "
        "(the record's TTL, ipfs.record_ttl; docs/concepts.md)"
    ]
    # A rerun with nothing new changes no record: nothing to warn about.
    again = _run(capsys, env, *publish)
    assert "nothing new" in again and "previous version" not in again
    assert "cacheTtl" not in json.loads(_run(capsys, env, *publish, "--json"))
