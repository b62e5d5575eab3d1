"""mlcroissant kept inside a test's own directory.

mlcroissant downloads every http(s) ``contentUrl`` (``requests``, a 10 s timeout between
bytes, no size limit) into ``$CROISSANT_CACHE`` (default ``~/.cache/croissant``), which it
reads once at import into module constants; ``extract.py`` even copies ``EXTRACT_PATH`` by
name. :func:`sandbox_croissant` points all of them, and ``HOME``, at ``base``, so a test
neither reads another run's cached files nor leaves any in the user's home.
"""

from __future__ import annotations

from pathlib import Path

import pytest

__all__ = ["sandbox_croissant"]


def sandbox_croissant(monkeypatch: pytest.MonkeyPatch, base: Path) -> Path:
    """Every path mlcroissant writes, under ``base``; returns its download directory."""
    from mlcroissant._src.core import constants
    from mlcroissant._src.operation_graph.operations import extract

    cache = constants.epath.Path(base)
    monkeypatch.setenv("HOME", str(base))
    monkeypatch.setenv("CROISSANT_CACHE", str(base))
    monkeypatch.setattr(constants, "CROISSANT_CACHE", cache)
    monkeypatch.setattr(constants, "DOWNLOAD_PATH", cache / "dl")
    monkeypatch.setattr(constants, "EXTRACT_PATH", cache / "ex")
    monkeypatch.setattr(extract, "EXTRACT_PATH", cache / "ex")
    return base / "dl"
