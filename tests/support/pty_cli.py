"""The CLI on a real pseudo-terminal, as a person runs it (stdin, stdout and stderr one tty).

One runner for every test that looks at what a terminal shows: progress bars, the price
question, passphrase prompts, an interrupt mid-upload. ``react`` sees the output so far
after each read and may act on it (type an answer, send a signal); it returns True when it
acted, and keeps its own count of what it did. With ``controlling_tty`` the terminal is the
CLI's controlling terminal (getpass reads /dev/tty). Deadlines are generous (a loaded
machine): nothing here is timed.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import subprocess
import sys
import termios
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PtyRun", "answer_each", "answer_once", "cli_env", "run_in_pty", "screen_lines"]

# A drawn bar: "label [####----] 42.0% ... /s ETA 0:03" (or "in 0:03" once done).
BAR = re.compile(r"\[[#-]{24}\] +\d+\.\d% .+/s (ETA (\d+:\d\d|-:--)|in \d+:\d\d)")


@dataclass(frozen=True)
class PtyRun:
    """A finished run: exit code, everything the terminal received, how often ``react``
    acted."""

    code: int
    text: str
    reacted: int


def cli_env(home: Path | None = None) -> dict[str, str]:
    """The environment of a CLI run: no ODFWEB3_* of the caller, an xterm; with ``home``,
    HOME and XDG_CONFIG_HOME under it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ODFWEB3_")}
    env["TERM"] = "xterm"
    if home is not None:
        env.update(HOME=str(home / "home"), XDG_CONFIG_HOME=str(home / "cfg"))
    return env


def run_in_pty(
    argv: list[str],
    cwd: Path,
    env: Mapping[str, str] | None = None,
    *,
    react: Callable[[bytes, int, subprocess.Popen[bytes]], bool] | None = None,
    timeout: float = 300.0,
    controlling_tty: bool = False,
) -> PtyRun:
    """Run ``odfweb3 argv`` on a fresh pseudo-terminal until it closes the terminal."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "odfweb3.cli.main", *argv],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=cwd,
        env=dict(env) if env is not None else cli_env(),
        close_fds=True,
        preexec_fn=_controlling_tty if controlling_tty else None,
    )
    os.close(slave)
    seen, reacted = b"", 0
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            seen += data
            if react is not None and react(seen, master, proc):
                reacted += 1
    finally:
        os.close(master)
    return PtyRun(proc.wait(timeout=60), seen.decode("utf-8", "replace"), reacted)


def _controlling_tty() -> None:
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def answer_once(question: bytes, answer: bytes | None) -> Callable[..., bool]:
    """A ``react`` that types ``answer`` (and Enter) once ``question`` shows (None: only
    notes that it was asked)."""
    done = [False]

    def react(seen: bytes, master: int, proc: subprocess.Popen[bytes]) -> bool:
        if done[0] or question not in seen:
            return False
        if answer is not None:
            os.write(master, answer + b"\n")
        done[0] = True
        return True

    return react


def answer_each(prompts: tuple[bytes, ...], answers: list[bytes]) -> Callable[..., bool]:
    """A ``react`` that types the next of ``answers`` (an empty line once they run out)
    each time one of ``prompts`` shows (counted apart, the longest first: a prompt that
    contains another is not counted twice)."""
    asked = [0]

    def count(seen: bytes) -> int:
        total = 0
        for p in sorted(prompts, key=len, reverse=True):
            total += seen.count(p)
            seen = seen.replace(p, b"")
        return total

    def react(seen: bytes, master: int, proc: subprocess.Popen[bytes]) -> bool:
        acted = False
        while count(seen) > asked[0]:
            i = asked[0]
            os.write(master, (answers[i] if i < len(answers) else b"") + b"\n")
            asked[0] += 1
            acted = True
        return acted

    return react


def screen_lines(text: str) -> list[list[str]]:
    """The terminal's lines, each as the segments ``\\r`` drew over one another
    (``\\x1b[K``, erase to the end of the line, dropped)."""
    return [
        line.replace("\x1b[K", "").split("\r") for line in text.replace("\r\n", "\n").split("\n")
    ]
