"""``ipfs.record_ttl`` sets the TTL the IPNS record is signed with (default: the spec's 5 min)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3_ipfs.formats.ipns import DEFAULT_TTL_NS, decode_record


def _publish_ttl(tmp_path: Path, capsys: pytest.CaptureFixture[str], config: str | None) -> int:
    env = {"HOME": str(tmp_path), "ODFWEB3_STATE_DIR": str(tmp_path / "state")}
    ds, out = tmp_path / "ds", tmp_path / "out"
    assert main(["example", str(ds), "--blocks", "1", "-q"], env) == 0
    argv = ["publish", str(ds), "--to", f"car:{out}", "--json"]
    if config is not None:
        cfg = tmp_path / "odfweb3.yaml"
        cfg.write_text(config)
        argv += ["--config", str(cfg)]
    assert main(argv, env) == 0
    name = json.loads(capsys.readouterr().out)["record"]["name"]
    record = decode_record((out / f"{name}.ipns-record").read_bytes())
    return record.ttl_ns


def test_default_ttl_is_five_minutes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _publish_ttl(tmp_path, capsys, None) == DEFAULT_TTL_NS == 300 * 10**9


def test_record_ttl_is_configurable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _publish_ttl(tmp_path, capsys, "ipfs:\n  record_ttl: 30\n") == 30 * 10**9


def test_a_bad_record_ttl_is_a_config_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "odfweb3.yaml"
    cfg.write_text("ipfs:\n  record_ttl: -1\n")
    env = {"HOME": str(tmp_path), "ODFWEB3_STATE_DIR": str(tmp_path / "state")}
    assert main(["inspect", str(tmp_path), "--config", str(cfg)], env) == 78
    assert "record_ttl" in capsys.readouterr().err
