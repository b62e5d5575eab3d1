"""The ``[y/N]`` confirmation that needs no network: ``publish --no-encrypt`` of a dataset
published encrypted from here (odfweb3.cli.confirm; ``pay and send?`` is checked against
arlocal in tests/integration/test_confirm_pay_pty.py).

On a real pseudo-terminal: the question's words; an unclear answer is asked again, three
times in all; n, an empty answer, end of input (Ctrl-D) and three unclear answers are no:
exit 64 (usage, ``odfweb3 --help``), one line naming ``--yes``, nothing written to the target
or the state; yes after an unclear answer publishes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from odfweb3.odf.builder import create_root_dataset
from tests.support.pty_answers import EOF, answer_in_pty
from tests.support.sticky import home_env, snapshot

QUESTION = (
    b"ds was published encrypted from here before. Publish it in PLAINTEXT anyway? Once "
    b"published this cannot be taken back. [y/N] "
)
REFUSAL = (
    "publishing it in plaintext needs a confirmation: add --yes to --no-encrypt (plaintext "
    "once published can never be taken back; nothing was sent)"
)
AGAIN = "please answer y or n"


@pytest.fixture
def encrypted(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=4096, seed=3301, fsync=False)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ODFWEB3_", "XDG_"))}
    env.update(home_env(tmp_path / "home"), TERM="xterm")
    first = subprocess.run(
        [sys.executable, "-m", "odfweb3.cli.main", "publish", "ds", "--to", "car:out", "--encrypt"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert first.returncode == 0, first.stderr
    return tmp_path, env


ARGV = ["publish", "ds", "--to", "car:out", "--no-encrypt"]


@pytest.mark.parametrize(
    ("answers", "asked"),
    [
        ([b"n"], 1),
        ([b"No"], 1),
        ([b""], 1),  # the default
        ([EOF], 1),  # Ctrl-D
        ([b"maybe", EOF], 2),
        ([b"maybe", b"sure", b"ok"], 3),  # three unclear answers: no, never a fourth question
    ],
    ids=["n", "No", "empty", "eof", "unclear-then-eof", "three-unclear"],
)
def test_no_is_no_and_nothing_is_done(encrypted, answers, asked) -> None:
    root, env = encrypted
    before = snapshot(root / "out", root / "home" / "state")
    run = answer_in_pty(ARGV, root, env, QUESTION, answers)
    assert run.asked == asked, run.text
    assert run.text.count(AGAIN) == sum(
        1 for a in answers[:asked] if a not in (b"n", b"No", b"", EOF)
    )
    assert run.code == 64, run.text
    assert REFUSAL in run.text.replace("\r\n", " ").replace("\n", " "), run.text
    assert "Traceback" not in run.text
    assert snapshot(root / "out", root / "home" / "state") == before


def test_yes_after_an_unclear_answer_publishes(encrypted) -> None:
    root, env = encrypted
    run = answer_in_pty(ARGV, root, env, QUESTION, [b"perhaps", b"YES"])
    assert (run.asked, run.text.count(AGAIN), run.code) == (2, 1, 0), run.text
    assert "share:" in run.text
    # asked once more, with --yes: no question
    again = answer_in_pty([*ARGV, "--yes"], root, env, QUESTION, [])
    assert (again.asked, again.code) == (0, 0), again.text
