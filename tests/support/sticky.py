"""The flag-forgotten workflow of an encrypted dataset, shared by every target's test.

A dataset whose data files are made of a marker of its own (not the encryption tests'
markers: the confirmed plaintext publish of these tests puts it on the shared nodes), and
the needles to look for in whatever a target received: the marker and a slice of every
plaintext object (metadata blocks, data files, checkpoints). :func:`leaks` reports which
needles are in a set of files; the tests check it finds them after ``--no-encrypt --yes``
(so the scan is known to see plaintext where there is some) and nowhere before.
"""

from __future__ import annotations

import functools
import random
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

from odfweb3.cli.main import main
from odfweb3.odf import builder

MARKER = b"STICKY-PLAINTEXT-7c2e"


class _MarkedRandom(random.Random):
    calls = 0

    def randbytes(self, n: int) -> bytes:
        _MarkedRandom.calls += 1
        unit = MARKER + b"-%d;" % _MarkedRandom.calls
        return (unit * (n // len(unit) + 1))[:n]


def make_marked_dataset(path: Path, monkeypatch, *, seed: int) -> builder.BuiltDataset:
    """A small root dataset (3 blocks) whose data files repeat :data:`MARKER`."""
    with monkeypatch.context() as m:
        m.setattr(builder.random, "Random", _MarkedRandom)
        return builder.create_root_dataset(
            path, blocks=3, data_bytes=20_000, seed=seed, fsync=False
        )


def append_marked(path: Path, monkeypatch, *, seed: int) -> None:
    """One more block, its data file marked too."""
    with monkeypatch.context() as m:
        m.setattr(builder.random, "Random", _MarkedRandom)
        builder.append_blocks(path, 1, data_bytes=5_000, seed=seed)


@functools.cache
def _common_bytes() -> bytes:
    """Every file of an unrelated example dataset: bytes every example shares (the license
    text, the schema's field names, Parquet's footer) are found in any plaintext another test
    published to the same session node, so they say nothing about this dataset."""
    root = Path(tempfile.mkdtemp(prefix="sticky-control-")) / "ds"
    builder.create_root_dataset(root, blocks=3, data_bytes=20_000, seed=424_242, fsync=False)
    builder.append_blocks(root, 1, data_bytes=5_000, seed=424_243, fsync=False)
    data = b"\0".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())
    shutil.rmtree(root.parent, ignore_errors=True)
    return data


def _distinctive(data: bytes, common: bytes, size: int = 24) -> bytes | None:
    """A ``size``-byte window of ``data`` that an unrelated dataset does not contain."""
    for start in range(len(data) // 2, max(len(data) - size, 0) + 1, 8):
        window = data[start : start + size]
        if window not in common:
            return window
    for start in range(0, len(data) // 2, 8):
        window = data[start : start + size]
        if window not in common:
            return window
    return None


def needles(ds: Path) -> dict[str, bytes]:
    """What plaintext looks like: the marker and a 24-byte slice of every object that no
    unrelated dataset shares (see :func:`_common_bytes`)."""
    out = {"marker": MARKER}
    common = _common_bytes()
    for p in sorted(ds.rglob("*")):
        if p.is_file() and p.parent.name in ("blocks", "data", "checkpoints"):
            window = _distinctive(p.read_bytes(), common)
            if window is not None:
                out[f"{p.parent.name}/{p.name}"] = window
    return out


def file_bytes(*roots: Path) -> Iterable[tuple[Path, bytes]]:
    for root in roots:
        if root.is_file():
            yield root, root.read_bytes()
        elif root.is_dir():
            for p in sorted(root.rglob("*")):
                if p.is_file():
                    yield p, p.read_bytes()


def leaks(ds: Path, *roots: Path) -> list[str]:
    """The needles of ``ds`` found in any file under ``roots`` (``path: needle``)."""
    found = []
    wanted = needles(ds)
    for path, data in file_bytes(*roots):
        found += [f"{path}: {name}" for name, n in wanted.items() if n in data]
    return found


def run(capsys, env: dict[str, str], *argv: str) -> tuple[int, str, str]:
    """The CLI in-process; its exit code, stdout and stderr."""
    code = main(list(argv), env=env)
    out, err = capsys.readouterr()
    return code, out, err


def home_env(root: Path, **extra: str) -> dict[str, str]:
    """A machine: its own HOME, keystore and state directory under ``root``."""
    return {
        "HOME": str(root),
        "ODFWEB3_KEYSTORE": str(root / "keys"),
        "ODFWEB3_STATE_DIR": str(root / "state"),
        "XDG_CONFIG_HOME": str(root / "cfg"),
        **extra,
    }


def snapshot(*roots: Path) -> dict[str, bytes]:
    """Every file under ``roots`` and its bytes: to show a refused publish wrote nothing."""
    return {str(p): b for p, b in file_bytes(*roots)}
