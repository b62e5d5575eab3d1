"""The terminal question of ``publish``'s encryption decision (the decision's I/O is the
library's, :mod:`odfweb3.api.encryption`)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from odfweb3.cli.main import Context

__all__ = ["ask_on_terminal"]


def ask_on_terminal(ctx: Context) -> Callable[[str], bool]:
    """A question put on the terminal (stderr, answered on stdin): True for yes. Without
    a terminal on both, or with ``--json``, nothing is asked: False. An unclear answer
    is asked again (three tries)."""

    def ask(question: str) -> bool:
        if ctx.out.json_mode or not (sys.stdin.isatty() and sys.stderr.isatty()):
            return False
        # An answer that is neither yes nor no (a typo) is asked again, three times in all;
        # an empty answer is the default, no.
        for _ in range(3):
            sys.stderr.write(question)
            sys.stderr.flush()
            answer = sys.stdin.readline().strip().lower()
            if answer in ("y", "yes"):
                return True
            if answer in ("", "n", "no"):
                return False
            sys.stderr.write("please answer y or n\n")
        return False

    return ask
