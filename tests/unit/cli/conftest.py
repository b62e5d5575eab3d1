"""Every CLI test runs with its own HOME: nothing it publishes, remembers or hints at lands
in the user's ``~/.local/share/odfweb3`` (commands called with ``env={}`` read defaults
from the process's HOME)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _own_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "ODFWEB3_STATE_DIR", "ODFWEB3_KEYSTORE"):
        monkeypatch.delenv(name, raising=False)
