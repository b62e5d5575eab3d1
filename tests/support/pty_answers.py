"""The CLI on a fresh pseudo-terminal, typing an answer each time a question shows.

For the ``[y/N]`` confirmations (``odfweb3.cli.confirm``): the tests check the question's
words, that an unclear answer is asked again and that end of input is no. An answer is typed
with a newline; :data:`EOF` is Ctrl-D at the start of a line (the terminal's end of input).
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

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
    seen, asked = b"", 0
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        seen += data
        while seen.count(question) > asked:
            answer = answers[asked] if asked < len(answers) else EOF
            os.write(master, answer if answer == EOF else answer + b"\n")
            asked += 1
    os.close(master)
    return Answered(proc.wait(timeout=60), seen.decode("utf-8", "replace"), asked)
