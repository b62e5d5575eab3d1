"""``odfweb3 remote``: named publish targets (``add``, ``rename``, ``remove``, ``list``; bare
``remote`` lists them), like ``git remote``.

The names are used by ``publish --to NAME``, ``verify --against NAME`` and ``status``;
see :mod:`odfweb3.publish.remotes` (what a name stands for is the library's:
:func:`odfweb3.api.reading.replica_ref`, :func:`odfweb3.api.states.remote_names`).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from odfweb3.cli.text import shown_target
from odfweb3.errors import UsageError

if TYPE_CHECKING:
    from odfweb3.cli.main import Context

__all__ = ["register"]


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``remote`` and its subcommands."""
    p = sub.add_parser(
        "remote",
        parents=[common],
        help="named publish targets (like git remote): add, rename, remove, list",
        description="Give a publish target a short name, then use it with publish --to NAME, "
        "verify --against NAME and in status. Names are kept in the state directory "
        "(remotes.json); local directories are stored absolute. Without a subcommand, lists "
        "them (as git remote does).",
    )
    p.set_defaults(handler=_list)
    rsub = p.add_subparsers(dest="remote_command", metavar="SUBCOMMAND")
    rsub.required = False
    a = rsub.add_parser("add", parents=[common], help="name a target")
    a.add_argument("name", help="short name: a-z, 0-9, -, _ (not a target kind)")
    a.add_argument("target", help="car:DIR | ipfs | ipfs:URL | bundle:DIR | arweave | arweave:URL")
    a.set_defaults(handler=_add)
    mv = rsub.add_parser("rename", parents=[common], help="give a remote another name")
    mv.add_argument("old", metavar="OLD")
    mv.add_argument("new", metavar="NEW")
    mv.set_defaults(handler=_rename)
    r = rsub.add_parser("remove", parents=[common], help="forget a name (nothing published moves)")
    r.add_argument("name")
    r.set_defaults(handler=_remove)
    ls = rsub.add_parser("list", parents=[common], help="every name and its target")
    ls.set_defaults(handler=_list)


def _add(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.backends import backend_for_target, target_kinds
    from odfweb3.publish.remotes import Remotes

    # The target is checked now, by the backend registry, not when it is first used.
    if backend_for_target(args.target) is None:
        kinds = ", ".join(target_kinds())
        raise UsageError(
            f"remote {args.name}: {args.target!r} is not a target: its kind is none of "
            f"{kinds} (e.g. car:DIR, ipfs, arweave)"
        )
    stored = Remotes(ctx.config.state_dir).add(args.name, args.target, ctx.cwd)
    ctx.out.result({"name": args.name, "target": stored}, f"{args.name} -> {shown_target(stored)}")
    return 0


def _rename(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.publish.remotes import Remotes

    target = Remotes(ctx.config.state_dir).rename(args.old, args.new)
    ctx.out.result(
        {"name": args.new, "previousName": args.old, "target": target},
        f"renamed {args.old} -> {args.new} ({shown_target(target)})",
    )
    return 0


def _remove(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.publish.remotes import Remotes

    target = Remotes(ctx.config.state_dir).remove(args.name)
    ctx.out.result({"name": args.name, "target": target}, f"removed {args.name} ({target})")
    return 0


def _list(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.publish.remotes import Remotes

    remotes = Remotes(ctx.config.state_dir).load()
    width = max((len(n) for n in remotes), default=0)
    ctx.out.result(
        {"remotes": [{"name": n, "target": t} for n, t in remotes.items()]},
        lambda: (
            "\n".join(f"{n:<{width}}  {shown_target(t)}" for n, t in remotes.items())
            or "no remotes (add one: odfweb3 remote add NAME TARGET)"
        ),
    )
    return 0
