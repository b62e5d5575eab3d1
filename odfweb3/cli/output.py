"""How the CLI talks: human text or ``--json``, verbosity, and progress bars.

Human output goes to stdout; diagnostics and progress to stderr. With ``--json``
stdout carries exactly one JSON document per command. Progress bars (total, percent,
rate, ETA) are drawn only when stderr is a terminal, and never with ``--json`` or
``-q``. ``-q`` prints nothing but errors (and what a command exists to print: a
script, a page, an address); ``-v`` adds what was checked, sent and skipped.

Text that reaches a terminal may carry bytes from outside (a name, a path or a message
read from a shared output directory or a remote): :func:`terminal_text`, applied here and
to the error line (``odfweb3.cli.main``), shows control characters as visible escapes, so
no escape sequence from outside is ever interpreted by the terminal.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

__all__ = ["Output", "Progress", "format_bytes", "format_duration", "terminal_text"]

# C0 controls but tab and newline, DEL, C1 controls (ECMA-48: what a terminal acts on), and
# Unicode's bidirectional overrides and isolates (which reorder what is shown: "Trojan
# Source", CVE-2021-42574).
_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[{_CONTROLS}]")
_CONTROL_OR_NEWLINE = re.compile(f"[{_CONTROLS}\t\n]")


def terminal_text(text: str, *, one_line: bool = False) -> str:
    """``text`` with every control character shown as an escape (``\\x1b``, ``\\u202e``);
    with ``one_line``, tabs and newlines too (an error is one line)."""
    pattern = _CONTROL_OR_NEWLINE if one_line else _CONTROL
    return pattern.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def format_bytes(n: float) -> str:
    """Human size with binary units: ``1.5 MiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


def format_duration(seconds: float) -> str:
    """``0:07``, ``12:34``, ``1:02:03``: an ETA or an elapsed time."""
    total = max(0, round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


@dataclass
class Progress:
    """A one-line progress bar: total, percent, bytes, rate and ETA once the total is known.

    Drawn on ``stream`` only when ``enabled`` (a terminal, not ``--json``, not ``-q``);
    otherwise it only counts, so callers never check. An operation in phases
    (:meth:`phase`: an Arweave upload signs, sends, then waits) reuses the bar: a phase
    that moved ends its line with its final state, the next starts where it really is (a
    resumed upload at the bytes sent before). With ``lines`` (``-v`` when stderr is no
    terminal) each phase is told in plain lines instead: when it starts, at most every
    ``LINE_EVERY`` seconds, and its final state; no ``\r``, no escape.
    """

    LINE_EVERY = 10.0

    label: str
    total: int | None
    stream: TextIO
    enabled: bool
    unit: str = "bytes"  # or a word counted as is ("blocks"), or "time" (a wait)
    done: int = 0
    clock: Callable[[], float] = time.monotonic
    lines: bool = False  # phases as plain lines (-v on a pipe)
    _base: int = 0  # where the phase started (a resumed upload): not counted in the rate
    _phased: bool = False  # phase() was called: lines mode speaks
    _start: float = -1.0
    _last_draw: float = 0.0
    _drawn: bool = False
    _closed: bool = False
    _shown: bool = False  # the bar is on the line now (not cleared for a message)

    def __post_init__(self) -> None:
        self._start = self.clock()

    def advance(self, n: int) -> None:
        """Count ``n`` more bytes; redraws at most ten times a second."""
        self.done += n
        now = self.clock()
        if self.enabled and now - self._last_draw >= 0.1:
            self._last_draw = now
            self._draw(now)
        elif self._speaks_lines() and now - self._last_draw >= self.LINE_EVERY:
            self._last_draw = now
            self._write_line(now)

    def _speaks_lines(self) -> bool:
        return self.lines and not self.enabled and self._phased and not self._closed

    def _write_line(self, now: float) -> None:
        self.stream.write(self.line(now) + "\n")
        self.stream.flush()

    def phase(self, label: str, total: int | None, *, unit: str = "bytes", done: int = 0) -> None:
        """Start the phase ``label``: the bar now counts ``unit`` towards ``total`` from
        ``done``. The phase before keeps its own line when it moved (its final state);
        one that never moved is replaced on its line."""
        now = self.clock()
        moved = self.done > self._base or self.unit == "time"
        if self.enabled and self._drawn and not self._closed and moved:
            self._draw(now)
            self.stream.write("\n")
            self.stream.flush()
        elif self._speaks_lines() and moved:
            self._write_line(now)
        self.label, self.total, self.unit = label, total, unit
        self.done = self._base = done
        self._start = self._last_draw = now
        self._drawn = False
        self._phased = True
        if self.enabled and not self._closed:
            self._draw(now)
        elif self._speaks_lines():
            self._write_line(now)

    def line(self, now: float) -> str:
        """The bar's text at time ``now`` (no control characters)."""
        elapsed = max(now - self._start, 1e-9)
        if self.unit == "time":
            return f"{self.label} ({format_duration(elapsed)})"
        rate = (self.done - self._base) / elapsed
        if self.total:
            frac = min(1.0, self.done / self.total)
            width = 24
            fill = int(width * frac)
            bar = "#" * fill + "-" * (width - fill)
            left = self.total - self.done
            if left <= 0:
                eta = f"in {format_duration(elapsed)}"
            elif rate > 0:
                eta = f"ETA {format_duration(left / rate)}"
            else:
                eta = "ETA -:--"
            if self.unit != "bytes":
                return (
                    f"{self.label} [{bar}] {100 * frac:5.1f}% {self.done}/{self.total} "
                    f"{self.unit} {rate:.0f} {self.unit}/s {eta}"
                )
            return (
                f"{self.label} [{bar}] {100 * frac:5.1f}% {format_bytes(self.done)}"
                f"/{format_bytes(self.total)} {format_bytes(rate)}/s {eta}"
            )
        if self.unit != "bytes":
            return f"{self.label} {self.done} {self.unit} {rate:.0f} {self.unit}/s"
        return f"{self.label} {format_bytes(self.done)} {format_bytes(rate)}/s"

    def _draw(self, now: float) -> None:
        self.stream.write("\r" + self.line(now) + "\x1b[K")
        self.stream.flush()
        self._drawn = True
        self._shown = True

    def clear(self) -> None:
        """Take the bar off its line (a message or a question goes there instead); the
        next :meth:`advance` or :meth:`redraw` puts it back."""
        if self.enabled and self._shown and not self._closed:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = False

    def redraw(self) -> None:
        """Put the bar back after :meth:`clear` (nothing if it was never drawn)."""
        if self.enabled and self._drawn and not self._closed:
            self._draw(self.clock())

    def set_total(self, total: int) -> None:
        """Set the total once it is known (redraws: the bar appears even before bytes move)."""
        self.total = total
        if self.enabled:
            self._draw(self.clock())

    def close(self) -> None:
        """Draw the final state and end the line (nothing if nothing was ever drawn)."""
        if self.enabled and not self._closed and (self._drawn or self.done):
            self._draw(self.clock())
            self.stream.write("\n")
            self.stream.flush()
        elif self._speaks_lines():
            self._write_line(self.clock())
        self._closed = True

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class Output:
    """The CLI's voice: ``json`` mode, verbosity (-1 quiet, 0 normal, 1+ verbose)."""

    json_mode: bool = False
    verbosity: int = 0
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    _said: set[str] = field(default_factory=set, repr=False)
    bar: Progress | None = None  # the bar on stderr now: a message never overwrites it

    def _say(self, line: str) -> None:
        """One line on stderr: the bar (if one is drawn) taken off first, then put back."""
        bar = self.bar
        if bar is not None:
            bar.clear()
        self.err.write(line)
        if bar is not None:
            bar.redraw()

    def result(self, data: Any, human: Callable[[], str] | str, *, product: bool = False) -> None:
        """Print the command's result: ``data`` as JSON, or the human text.

        ``-q`` hides the human text unless it is the ``product`` the command exists to
        print (a completion script, the man page, an address, a descriptor).
        """
        if not self.json_mode and self.verbosity < 0 and not product:
            return
        if self.json_mode:
            json.dump(data, self.out, indent=2, sort_keys=False, default=str)
            self.out.write("\n")
        else:
            text = human() if callable(human) else human
            if text:
                self.out.write(terminal_text(text.rstrip("\n")) + "\n")
        self.out.flush()

    def info(self, message: str) -> None:
        """A progress note on stderr (hidden by -q and --json)."""
        if self.verbosity >= 0 and not self.json_mode:
            self._say(terminal_text(message) + "\n")

    def debug(self, message: str) -> None:
        """Detail shown with -v."""
        if self.verbosity >= 1:
            self._say(terminal_text(message) + "\n")

    def warn(self, message: str) -> None:
        """A warning on stderr (shown even with --json; hidden by -q)."""
        if self.verbosity >= 0:
            self._say(f"warning: {terminal_text(message)}\n")

    def warn_once(self, message: str) -> None:
        """:meth:`warn`, at most once per command for the same message (a command that
        publishes to several targets says a fact of the dataset once, not per target)."""
        if message not in self._said:
            self._said.add(message)
            self.warn(message)

    def progress(self, label: str, total: int | None, *, unit: str = "bytes") -> Progress:
        """A progress bar, drawn only on a terminal in normal human mode."""
        enabled = (
            not self.json_mode
            and self.verbosity >= 0
            and hasattr(self.err, "isatty")
            and self.err.isatty()
        )
        lines = not enabled and not self.json_mode and self.verbosity >= 1
        self.bar = Progress(label, total, self.err, enabled, unit, lines=lines)
        return self.bar
