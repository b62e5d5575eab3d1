"""The CLI on a fresh pseudo-terminal, typing an answer each time a question shows.

For the ``[y/N]`` confirmations (``odfweb3.cli.confirm``): the tests check the question's
words, that an unclear answer is asked again and that end of input is no. An answer is typed
with a newline; :data:`EOF` is Ctrl-D at the start of a line (the terminal's end of input).
The terminal itself is :func:`tests.support.pty_cli.run_in_pty`'s.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.support.pty_cli import run_in_pty

__all__ = ["EOF", "Answered", "answer_in_pty"]

EOF = b"\x04"


@dataclass(frozen=True)
class Answered:
    """How the run ended: its exit status, what the terminal showed, how often it asked."""

    code: int
    text: str
    asked: int


def answer_in_pty(
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    question: bytes,
    answers: list[bytes],
    *,
    deadline_s: float = 300.0,
) -> Answered:
    """Run ``odfweb3 argv``; type the next of ``answers`` each time ``question`` shows (an
    answer left over when the questions stop is not typed; a question past the answers
    gets end of input)."""
    asked = [0]

    def react(seen: bytes, master: int, proc: subprocess.Popen[bytes]) -> bool:
        acted = False
        while seen.count(question) > asked[0]:
            answer = answers[asked[0]] if asked[0] < len(answers) else EOF
            os.write(master, answer if answer == EOF else answer + b"\n")
            asked[0] += 1
            acted = True
        return acted

    run = run_in_pty(argv, cwd, env, react=react, timeout=deadline_s)
    return Answered(run.code, run.text, asked[0])
