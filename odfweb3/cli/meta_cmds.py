"""Commands about the tool itself: ``version``, ``completion`` and ``man``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from odfweb3 import __version__
from odfweb3.cli.completion import SHELLS, VALUE_KINDS
from odfweb3.errors import UsageError

if TYPE_CHECKING:
    from odfweb3.cli.main import Context

__all__ = ["register"]


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``version``, ``completion`` and ``man``."""
    p = sub.add_parser(
        "version",
        parents=[common],
        help="print the odfweb3 version (also -V / --version)",
        description="Print the odfweb3 version; with --json also the Python version.",
    )
    p.set_defaults(handler=_version)

    p = sub.add_parser(
        "completion",
        parents=[common],
        help="print a shell completion script (bash, zsh, fish)",
        description="Print the completion script for SHELL, generated from the command line "
        "parser itself (so it always knows every command and option).",
    )
    p.add_argument("shell", nargs="?", choices=SHELLS, help="bash, zsh or fish")
    # What the scripts ask at TAB time (target kinds, remotes, dataset names): hidden.
    p.add_argument("--list", choices=VALUE_KINDS, default=None, help=argparse.SUPPRESS)
    p.set_defaults(handler=_completion)

    p = sub.add_parser(
        "man",
        parents=[common],
        help="print the odfweb3(1) man page (roff), generated from the parser",
        description="Print the man page in roff (man macros): every command, option, example "
        "and exit code. Install it in a man1 directory on MANPATH.",
    )
    p.set_defaults(handler=_man)


def _version(args: argparse.Namespace, ctx: Context) -> int:
    import platform  # here: the other commands' start-up does not load it

    ctx.out.result(
        {"version": __version__, "python": platform.python_version()},
        f"odfweb3 {__version__}",
        product=True,
    )
    return 0


def _completion(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.cli.completion import candidates, render
    from odfweb3.cli.main import build_parser

    if args.list is not None:
        words = candidates(args.list, ctx.config, ctx.cwd, ctx.env)
        ctx.out.result({"list": args.list, "words": words}, "\n".join(words), product=True)
        return 0
    if args.shell is None:
        raise UsageError("completion: name the shell (bash, zsh or fish)")
    script = render(build_parser(), args.shell)
    ctx.out.result({"shell": args.shell, "script": script}, script, product=True)
    return 0


def _man(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.cli.main import build_parser
    from odfweb3.cli.manpage import render

    page = render(build_parser())
    ctx.out.result({"man": page}, page, product=True)
    return 0
