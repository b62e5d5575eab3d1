"""The CLI as a person sees it: run in a real pseudo-terminal, then on a pipe.

On a terminal every long operation draws a bar with total, percent and ETA on stderr
(``validate --deep``, ``publish``, ``pull``, ``verify --deep``, ``example``); on a pipe, or with
``--json`` even on a terminal, there is no bar and no control character anywhere.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from odfweb3.odf.builder import create_root_dataset
from tests.support.pty_cli import BAR, cli_env, run_in_pty


def _env(tmp_path: Path) -> dict[str, str]:
    return cli_env(tmp_path)


def _in_pty(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    run = run_in_pty(argv, cwd, env, timeout=120)
    return run.code, run.text


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
