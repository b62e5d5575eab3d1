"""The CLI's one ``[y/N]`` question: asked on a terminal only, three tries, no by default.

Every confirmation (``publish --no-encrypt`` over an encrypted dataset, ``pay and send?``
before a paid upload) goes through :func:`ask_yes_no`, so each behaves as the others: an
answer that is neither yes nor no is asked again (three times in all, as sudo asks a
password), an empty answer, end of input (Ctrl-D) or three unclear ones are no, and no means
nothing is done (the command exits 64 naming the flag that skips the question). Without a
terminal on both stdin and stderr, or with ``--json``, nothing is asked: the caller decides
(a refusal naming ``--yes``, or going on where a cap such as ``--max-cost`` holds it).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from odfweb3.cli.main import Context

__all__ = ["TRIES", "ask_yes_no", "interactive"]

TRIES = 3


def interactive(ctx: Context) -> bool:
    """Whether a question can be asked: a terminal on stdin and stderr, and not ``--json``."""
    return not ctx.out.json_mode and sys.stdin.isatty() and sys.stderr.isatty()


def ask_yes_no(ctx: Context, question: str) -> bool:
    """``question`` (ending ``[y/N] ``) on stderr, answered on stdin: True for y/yes.

    False without a terminal (:func:`interactive`), for n/no, an empty answer, end of
    input, or after :data:`TRIES` answers that are neither."""
    if not interactive(ctx):
        return False
    bar = ctx.out.bar
    if bar is not None:  # the question gets the bar's line, never written over it
        bar.clear()
    for _ in range(TRIES):
        sys.stderr.write(question)
        sys.stderr.flush()
        line = sys.stdin.readline()
        if not line:  # end of input: no answer is no
            sys.stderr.write("\n")
            return False
        answer = line.strip().lower()
        if answer in ("y", "yes"):
            return True
        if answer in ("", "n", "no"):
            return False
        sys.stderr.write("please answer y or n\n")
    return False
