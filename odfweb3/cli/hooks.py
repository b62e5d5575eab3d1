"""The library's hooks (:class:`odfweb3.api.hooks.Hooks`) as the CLI fills them: messages on
stderr through :class:`odfweb3.cli.output.Output`, questions on the terminal."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from odfweb3.api.hooks import Hooks
    from odfweb3.cli.main import Context


__all__ = ["cli_hooks"]


def cli_hooks(ctx: Context) -> Hooks:
    """Hooks speaking through ``ctx.out`` (``-q``, ``-v``, ``--json`` as the user asked)."""
    from odfweb3.api.hooks import Hooks
    from odfweb3.cli.encryption import ask_on_terminal

    out = ctx.out
    return Hooks(
        info=out.info,
        warn=out.warn,
        debug=out.debug,
        ask=ask_on_terminal(ctx),
        progress=lambda label: out.progress(label, None),
    )
