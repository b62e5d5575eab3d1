"""The local dataset a command's argument names: a dataset directory or a kamu name.

Inside a kamu workspace (a ``.kamu/`` here or above, or ``KAMU_WORKSPACE``) a command
that takes a local dataset also takes kamu's name for it (``name``, ``account/name``) or
its ``did:odf:`` ID, and works on the directory kamu keeps for it
(:mod:`odfweb3.odf.kamu_workspace`). A directory that is an ODF dataset always wins, so
every path that worked before means what it meant.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from odfweb3.errors import NotFound

if TYPE_CHECKING:
    from odfweb3.cli.main import Context

__all__ = ["local_dataset"]


def _is_dataset_dir(path: Path) -> bool:
    return (path / "refs").is_dir() or (path / "blocks").is_dir()


def local_dataset(arg: str, ctx: Context) -> str:
    """The dataset directory ``arg`` names, for a command run with context ``ctx``.

    ``arg`` itself when it is a dataset directory, or when it cannot be a kamu name, or
    outside a workspace (the command then reports the path as it always did); the
    workspace's directory for that name otherwise.

    Raises:
        NotFound: in a workspace, ``arg`` is neither a directory nor one of its names
            (the message lists the names).
        UsageError: a bare name several accounts' datasets have.
    """
    from odfweb3.odf.identity import DID_PREFIX
    from odfweb3.odf.kamu_workspace import find_workspace, is_dataset_alias, resolve_dataset_name

    path = Path(arg)
    if _is_dataset_dir(path):
        return arg
    if not (is_dataset_alias(arg) or arg.startswith(DID_PREFIX)):
        return arg
    cwd, env = ctx.cwd, ctx.env
    if find_workspace(cwd, env) is None:
        return arg
    if path.exists():
        # Not a dataset, but there: a workspace name only if the workspace has it.
        try:
            return str(resolve_dataset_name(arg, cwd, env))
        except NotFound:
            return arg
    return str(resolve_dataset_name(arg, cwd, env))
