"""How the CLI talks: human text or ``--json``, verbosity, and progress bars.

Human output goes to stdout; diagnostics and progress to stderr. With ``--json``
stdout carries exactly one JSON document per command. Progress bars are drawn
only on a terminal and never with ``--json`` or ``-q``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

__all__ = ["Output", "Progress", "format_bytes"]


def format_bytes(n: float) -> str:
    """Human size with binary units: ``1.5 MiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


@dataclass
class Progress:
    """A one-line progress bar with bytes, rate and (when the total is known) percent."""

    label: str
    total: int | None
    stream: TextIO
    enabled: bool
    done: int = 0
    _start: float = field(default_factory=time.monotonic)
    _last_draw: float = 0.0

    def advance(self, n: int) -> None:
        """Count ``n`` more bytes; redraws at most ten times a second."""
        self.done += n
        now = time.monotonic()
        if self.enabled and now - self._last_draw >= 0.1:
            self._last_draw = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        elapsed = max(now - self._start, 1e-9)
        rate = self.done / elapsed
        if self.total:
            pct = min(100.0, 100.0 * self.done / self.total)
            width = 24
            fill = int(width * pct / 100)
            bar = "#" * fill + "-" * (width - fill)
            text = (
                f"\r{self.label} [{bar}] {pct:5.1f}% {format_bytes(self.done)}"
                f"/{format_bytes(self.total)} {format_bytes(rate)}/s"
            )
        else:
            text = f"\r{self.label} {format_bytes(self.done)} {format_bytes(rate)}/s"
        self.stream.write(text + "\x1b[K")
        self.stream.flush()

    def set_total(self, total: int) -> None:
        """Set the total once it is known."""
        self.total = total

    def close(self) -> None:
        """Draw the final state and end the line."""
        if self.enabled:
            self._draw(time.monotonic())
            self.stream.write("\n")
            self.stream.flush()

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

    def result(self, data: Any, human: Callable[[], str] | str) -> None:
        """Print the command's result: ``data`` as JSON, or the human text."""
        if self.json_mode:
            json.dump(data, self.out, indent=2, sort_keys=False, default=str)
            self.out.write("\n")
        else:
            text = human() if callable(human) else human
            if text:
                self.out.write(text.rstrip("\n") + "\n")
        self.out.flush()

    def info(self, message: str) -> None:
        """A progress note on stderr (hidden by -q and --json)."""
        if self.verbosity >= 0 and not self.json_mode:
            self.err.write(message + "\n")

    def debug(self, message: str) -> None:
        """Detail shown with -v."""
        if self.verbosity >= 1:
            self.err.write(message + "\n")

    def warn(self, message: str) -> None:
        """A warning on stderr (shown even with --json; hidden by -q)."""
        if self.verbosity >= 0:
            self.err.write(f"warning: {message}\n")

    def progress(self, label: str, total: int | None) -> Progress:
        """A progress bar, drawn only on a terminal in normal human mode."""
        enabled = (
            not self.json_mode
            and self.verbosity >= 0
            and hasattr(self.err, "isatty")
            and self.err.isatty()
        )
        return Progress(label, total, self.err, enabled)
