"""The CLI as a person sees it: run in a real pseudo-terminal, then on a pipe.

On a terminal every long operation draws a bar with total, percent and ETA on stderr
(``validate --deep``, ``publish``, ``pull``, ``verify --deep``, ``example``); on a pipe, or with
``--json`` even on a terminal, there is no bar and no control character anywhere.
"""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from odfweb3.odf.builder import create_root_dataset

BAR = re.compile(r"\[[#-]{24}\] +\d+\.\d% .+/s (ETA \d+:\d\d|in \d+:\d\d)")


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ODFWEB3_")}
    env.update(HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "cfg"), TERM="xterm")
    return env


def _in_pty(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """Run the CLI with stdin, stdout and stderr on a fresh pseudo-terminal."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "odfweb3.cli.main", *argv],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=cwd,
        env=env,
        close_fds=True,
    )
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    code = proc.wait(timeout=30)
    return code, b"".join(chunks).decode("utf-8", "replace")


def _on_pipe(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "odfweb3.cli.main", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("pty")
    create_root_dataset(root / "ds", blocks=4, data_bytes=3 << 20, seed=20, fsync=False)
    env = _env(root)
    r = _on_pipe(["publish", "ds", "--to", "car:out"], root, env)
    assert r.returncode == 0, r.stderr
    return root, env


@pytest.mark.parametrize(
    ("argv", "label", "total"),
    [
        (["validate", "ds", "--deep"], "validating", "3.0 MiB"),
        (["verify", "ds", "--against", "car:out", "--deep"], "verifying car:out", "3.0 MiB"),
        (["pull", "car:out", "{copy}"], "pulling", "3.0 MiB"),
        (["publish", "ds", "--to", "car:{copy}"], "publishing", "3.0 MiB"),
        # Counted in blocks: 300 small blocks write far more than their 64 KiB of payload
        # (each Parquet file has its own footer), so a byte bar sat at 100 % for most of it.
        (["example", "{copy}", "--blocks", "300"], "writing", "300/300 blocks"),
    ],
)
def test_bars_on_a_terminal_not_on_a_pipe_nor_with_json(world, argv, label, total):
    root, env = world
    n = len(list(root.iterdir()))

    def args(tag: str) -> list[str]:
        return [a.replace("{copy}", f"{tag}{n}") for a in argv]

    code, screen = _in_pty(args("tty"), root, env)
    assert code == 0, screen
    bars = [line for line in screen.split("\r") if line.startswith(label)]
    assert bars, screen
    final = bars[-1]
    assert BAR.search(final), final
    assert "100.0%" in final and total in final  # the total, reached

    piped = _on_pipe(args("pipe"), root, env)
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr == "" and "\r" not in piped.stdout and "\x1b" not in piped.stdout

    code, screen = _in_pty([*args("json"), "--json"], root, env)
    assert code == 0
    assert "\r" + label not in screen and "%" not in screen.split("{", 1)[0]
    assert "\x1b[K" not in screen
