"""A publish lists every object it sends only when asked (-v, --json): a first publish
sends every object (300,000 at 100,000 blocks), and those lists were its peak memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odfweb3.cli import publish_cmds
from odfweb3.cli.main import main
from odfweb3.publish.plan import LazySequence, PublishPlan


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("ODFWEB3_STATE_DIR", "ODFWEB3_KEYSTORE", "ODFWEB3_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.chdir(tmp_path)
    assert main(["example", "ds", "--blocks", "3", "-q"]) == 0
    return tmp_path


def test_a_quiet_or_plain_publish_lists_no_object(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def listed(*args: object) -> object:
        raise AssertionError("every object listed, unasked")

    monkeypatch.setattr(publish_cmds, "_plan_detail", listed)
    monkeypatch.setattr(PublishPlan, "to_json", listed)
    assert main(["publish", "ds", "--to", "car:out", "-q"]) == 0
    assert main(["example", "ds", "--append", "1", "-q"]) == 0
    assert main(["publish", "ds", "--to", "car:out"]) == 0
    assert "publish" in capsys.readouterr().out


def test_verbose_and_json_still_list_what_is_sent(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["publish", "ds", "--to", "car:out", "-v"]) == 0
    sends = [line for line in capsys.readouterr().err.splitlines() if "  send " in line]
    assert main(["publish", "ds", "--to", "car:two", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)["plan"]
    assert len(sends) == len(plan["send"]) == plan["totalObjects"] > 3


def test_lazy_items_are_the_loaded_sequence() -> None:
    loaded = ("a", "b")
    lazy = LazySequence(2, lambda: loaded)
    assert not lazy.loaded
    assert lazy.items() is loaded and lazy.loaded
