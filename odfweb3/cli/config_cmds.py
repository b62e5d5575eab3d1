"""``odfweb3 config`` (``config show``): the settings in effect and where each comes from
(a default, the configuration file, an ``ODFWEB3_*`` variable; ``--config FILE`` is named
as such), like ``git config --list --show-origin``.

``odfweb3 config check``: is the configuration what it seems to be?

The file was already validated against its schema when it was loaded (a bad key or value
is a ``ConfigError``, exit 78, before any command runs). ``check`` says which file is in
effect and reports each ``datasets:`` key that matches no dataset: a path key (resolved
relative to the configuration file) where there is no dataset directory and which is no
dataset name of a kamu workspace (found from there or the working directory), a ``did:odf``
key of no dataset known here (published from here, given keys here, or named by a path
key). Such a key protects nothing: ``sensitive: true`` under a mistyped path would let a
plain publish through.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from odfweb3.errors import OdfWeb3Error

if TYPE_CHECKING:
    from odfweb3.cli.main import Context

__all__ = ["register"]


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``config`` and its subcommands ``show`` (the default) and ``check``."""
    cfg = sub.add_parser(
        "config",
        parents=[common],
        help="the configuration: show the settings in effect and their sources, check it",
        description="The configuration: odfweb3.yaml (--config FILE, ./odfweb3.yaml or "
        "~/.config/odfweb3/odfweb3.yaml), then ODFWEB3_* variables over it. Without a "
        "subcommand: show (every setting in effect and where it comes from).",
    )
    cfg.set_defaults(handler=_show)
    cs = cfg.add_subparsers(dest="config_command", metavar="SUBCOMMAND")
    cs.required = False
    show = cs.add_parser(
        "show",
        parents=[common],
        help="every setting in effect and where it comes from (default, file, env)",
        description="Print each setting in effect (key, value, source): the values of the "
        "configuration file (its path; '(--config)' when given so), those of ODFWEB3_* "
        "variables ('env NAME'), and the defaults of the settings left unset ('default').",
    )
    show.set_defaults(handler=_show)
    p = cs.add_parser(
        "check",
        parents=[common],
        help="report datasets: keys that match no dataset (exit 1 if any)",
        description="Say which configuration file is in effect and report every datasets: "
        "key that matches no dataset: a path (relative to the configuration file) with no "
        "dataset directory, or a did:odf of no dataset known here. Exit 1 when one is found.",
    )
    p.set_defaults(handler=_check)


def _show(args: argparse.Namespace, ctx: Context) -> int:
    settings = ctx.config.settings()
    source = str(ctx.config.source) if ctx.config.source is not None else None

    def human() -> str:
        where = source or "none (defaults and ODFWEB3_* variables)"
        lines = [f"configuration file: {where}"]
        width = max((len(s.key) for s in settings), default=0)
        vwidth = min(max((len(_text(s.value)) for s in settings), default=0), 48)
        lines += [f"{s.key:<{width}}  {_text(s.value):<{vwidth}}  {s.source}" for s in settings]
        return "\n".join(lines)

    ctx.out.result(
        {
            "source": source,
            "settings": [{"key": s.key, "value": s.value, "source": s.source} for s in settings],
        },
        human,
    )
    return 0


def _text(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(v) for v in value) or "[]"
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _known_ids(ctx: Context) -> set[str]:
    """Dataset IDs this machine knows: published from here, or with keys here."""
    from odfweb3.crypto.keyfiles import ContentKeyStore
    from odfweb3.crypto.keystore import Keystore
    from odfweb3.publish.offline import OfflineIndex
    from odfweb3.publish.state import StateStore

    known = set(ContentKeyStore(ctx.config.keystore_dir).list())
    known |= {k for k in Keystore(ctx.config.keystore_dir).list() if k.startswith("did:odf:")}
    try:
        known |= {s.dataset_id for s in StateStore(ctx.config.state_dir).all()}
        known |= {e.dataset_id for e in OfflineIndex(ctx.config.state_dir).entries()}
    except OdfWeb3Error as exc:  # a damaged state file: say so, check the rest
        ctx.out.warn(f"publish states not all read: {exc}")
    return known


def _dataset_at(path: Path) -> str | None:
    """The dataset ID of the dataset directory at ``path``, or None when there is none."""
    from odfweb3.publish.dataset_id import dataset_id_of

    if not (path / "refs" / "head").is_file():
        return None
    try:
        return dataset_id_of(str(path))[0]
    except OdfWeb3Error:
        return None


def _kamu_named(key: str, ctx: Context) -> str | None:
    """The dataset ID of the dataset a kamu workspace (found from the configuration file's
    directory, then the working directory) names ``key``, or None."""
    from odfweb3.odf.kamu_workspace import find_workspace, is_dataset_alias, resolve_dataset_name

    if not is_dataset_alias(key):
        return None
    starts = [ctx.config.source.parent] if ctx.config.source is not None else []
    for start in [*starts, ctx.cwd]:
        if find_workspace(start, ctx.env) is None:
            continue
        try:
            did = _dataset_at(resolve_dataset_name(key, start, ctx.env))
        except OdfWeb3Error:
            continue
        if did is not None:
            return did
    return None


def _check(args: argparse.Namespace, ctx: Context) -> int:
    config = ctx.config
    table = config.get("datasets", default={}) or {}
    source = str(config.source) if config.source is not None else None
    found: dict[str, str] = {}  # key -> dataset ID, for the keys that name a directory
    problems: list[dict[str, str]] = []
    for key in table:
        path = config.dataset_key_path(key, ctx.cwd)
        if path is None:
            continue
        did = _dataset_at(path)
        if did is None:
            did = _kamu_named(key, ctx)
        if did is None:
            problems.append(
                {
                    "key": key,
                    "problem": f"no dataset directory at {path}, and no dataset of that "
                    "name in a kamu workspace here",
                    "resolved": str(path),
                }
            )
        else:
            found[key] = did
    has_ids = any(k.startswith("did:odf:") for k in table)
    known = _known_ids(ctx) | set(found.values()) if has_ids else set()
    for key in table:
        if key.startswith("did:odf:") and key not in known:
            problems.append(
                {
                    "key": key,
                    "problem": "no dataset with this ID is known here (never published from "
                    "here, no keys, no path key naming it)",
                }
            )
    where = source or "no configuration file (defaults and ODFWEB3_* variables)"
    lines = [f"configuration: {where}"]
    lines += [f"datasets.{p['key']}: matches no dataset: {p['problem']}" for p in problems]
    if table and not problems:
        lines.append(f"datasets: every key matches a dataset ({len(table)})")
    ctx.out.result(
        {"source": source, "datasets": {"keys": list(table), "unmatched": problems}},
        "\n".join(lines),
    )
    return 1 if problems else 0
