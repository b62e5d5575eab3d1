"""The terminal question of ``publish``'s encryption decision (the decision's I/O is the
library's, :mod:`odfweb3.api.encryption`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from odfweb3.cli.main import Context

__all__ = ["ask_on_terminal"]


def ask_on_terminal(ctx: Context) -> Callable[[str], bool]:
    """A question put on the terminal (:func:`odfweb3.cli.confirm.ask_yes_no`): True for
    yes. Without a terminal on both, or with ``--json``, nothing is asked: False."""
    from odfweb3.cli.confirm import ask_yes_no

    def ask(question: str) -> bool:
        return ask_yes_no(ctx, question)

    return ask
