"""``--no-encrypt`` on a terminal asks before publishing plaintext of an encrypted dataset.

Run in a real pseudo-terminal: the question appears on it; "n" (or anything but yes)
refuses with exit 64 and writes nothing, "y" publishes plaintext.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.pty_cli import answer_once, run_in_pty
from tests.support.sticky import home_env, leaks, make_marked_dataset, snapshot

QUESTION = b"[y/N] "


def _answer_in_pty(argv: list[str], cwd: Path, env: dict[str, str], answer: bytes):
    """Run the CLI on a fresh pseudo-terminal; type ``answer`` once the question shows."""
    run = run_in_pty(argv, cwd, env, react=answer_once(QUESTION, answer), timeout=120)
    return run.code, run.text, bool(run.reacted)


def test_no_encrypt_asks_on_a_terminal(tmp_path, monkeypatch):
    ds = tmp_path / "sec"
    make_marked_dataset(ds, monkeypatch, seed=71)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ODFWEB3_")}
    env.update(home_env(tmp_path / "home"), TERM="xterm")
    first = subprocess.run(
        [
            sys.executable,
            "-m",
            "odfweb3.cli.main",
            "publish",
            "sec",
            "--to",
            "car:out",
            "--encrypt",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert first.returncode == 0, first.stderr
    before = snapshot(tmp_path / "out")
    argv = ["publish", "sec", "--to", "car:out", "--no-encrypt"]

    code, text, answered = _answer_in_pty(argv, tmp_path, env, b"n")
    assert answered, text
    assert "was published encrypted from here before" in text and "PLAINTEXT" in text
    assert code == 64, text
    assert "--yes" in text
    assert snapshot(tmp_path / "out") == before

    code, text, answered = _answer_in_pty(argv, tmp_path, env, b"y")
    assert answered and code == 0, text
    assert leaks(ds, tmp_path / "out")  # plaintext now, as confirmed
