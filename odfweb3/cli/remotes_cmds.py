"""``odfweb3 remote``: named publish targets (``add``, ``rename``, ``remove``, ``list``; bare
``remote`` lists them), like ``git remote``.

The names are used by ``publish --to NAME``, ``verify --against NAME`` and ``status``;
see :mod:`odfweb3.publish.remotes`. Also the helpers those commands share: what a name
stands for, and which name a target has.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from odfweb3.cli.text import shown_target
from odfweb3.errors import UsageError

if TYPE_CHECKING:
    from odfweb3.cli.main import Context
    from odfweb3.publish.state import PublishState

__all__ = ["effective_target", "known_states", "register", "remote_names", "replica_ref"]


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


def effective_target(spec: str, config: Any) -> str:
    """The name a target gets once opened: ``ipfs`` -> ``ipfs:<ipfs.api>`` and so on."""
    from odfweb3.backends import opened_name

    return opened_name(spec, config)


def remote_names(ctx: Context, target_name: str) -> list[str]:
    """The remotes naming the target called ``target_name`` (e.g. ``car:/abs/out``)."""
    from odfweb3.publish.remotes import Remotes

    remotes = Remotes(ctx.config.state_dir).load()
    return [n for n, t in remotes.items() if effective_target(t, ctx.config) == target_name]


def known_states(ctx: Context, dataset_id: str) -> list[PublishState]:
    """This machine's publishes of ``dataset_id`` (:func:`odfweb3.publish.offline.known_states`)."""
    from odfweb3.publish.offline import known_states as known

    return known(ctx.config.state_dir, dataset_id)


def replica_ref(ctx: Context, name: str, dataset_id: str | None) -> str:
    """What ``verify --against NAME`` reads: a remote's directory, or its record locator.

    Raises:
        UsageError: a node remote without a dataset, or never published to from here.
    """
    from odfweb3.backends import target_traits
    from odfweb3.publish.remotes import Remotes

    target = Remotes(ctx.config.state_dir).resolve(name)
    if target == name:
        return name  # not a remote: a reference as given
    if target_traits(target).offline:
        return target
    if dataset_id is None:
        raise UsageError(f"--against {name}: give the local DATASET, to know which record to read")
    from odfweb3.backends import backend_for_target

    wanted = effective_target(target, ctx.config)
    for state in known_states(ctx, dataset_id):
        backend = backend_for_target(state.target)
        locator = backend.record_locator(state) if backend is not None else None
        if state.target == wanted and locator:
            return locator
    raise UsageError(
        f"--against {name}: {dataset_id} was never published to {target} from here; give its "
        "reference instead (ipns://NAME or ar://ID)"
    )
