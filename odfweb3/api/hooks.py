"""How the library talks to its caller: messages, questions and progress, passed in.

The library never writes to a terminal or reads one: the CLI passes hooks that do
(``odfweb3.cli.output``), a program passes its own or none (everything is then silent,
and a question that needs an answer is answered no).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Protocol

__all__ = ["QUIET", "Hooks", "Note", "Progress"]

Note = Callable[[str], None]


class Progress(Protocol):
    """A progress display for one operation: its total once known, then steps done."""

    def set_total(self, total: int) -> None:
        """The operation's size (bytes), once known."""
        ...

    def advance(self, n: int) -> None:
        """``n`` more done."""
        ...

    def phase(self, label: str, total: int | None, *, unit: str = "bytes", done: int = 0) -> None:
        """A new phase of the operation replaces the current one (an Arweave upload: signing,
        sending, confirming; :class:`odfweb3.publish.target.Phases`)."""
        ...


class _NoProgress:
    def set_total(self, total: int) -> None:
        return None

    def phase(self, label: str, total: int | None, *, unit: str = "bytes", done: int = 0) -> None:
        return None

    def advance(self, n: int) -> None:
        return None


@contextmanager
def _no_progress(label: str) -> Iterator[Progress]:
    yield _NoProgress()


def _silent(_: str) -> None:
    return None


def _no(_: str) -> bool:
    return False


@dataclass(frozen=True)
class Hooks:
    """What the library says and asks while it works.

    Attributes:
        info: progress of the operation worth a line (a pin's status, a price).
        warn: something the caller should know and may act on (a key was created).
        debug: detail (``-v``).
        ask: a yes/no question (a confirmation); False when nobody can answer.
        progress: a progress display for the operation named by its label.
    """

    info: Note = _silent
    warn: Note = _silent
    debug: Note = _silent
    ask: Callable[[str], bool] = _no
    progress: Callable[[str], AbstractContextManager[Progress]] = _no_progress


#: Hooks that say nothing and answer every question no.
QUIET = Hooks()
