"""kamu workspaces: finding the dataset directory kamu keeps for a dataset name.

kamu-cli (the ODF reference implementation) keeps its datasets in a *workspace*, a
``.kamu/`` directory. What follows is read from kamu-cli's sources (0.265 era), not
guessed:

- **Finding the workspace** (``WorkspaceService::find_workspace``,
  ``src/app/cli/src/services/workspace/workspace_service.rs``): if ``KAMU_WORKSPACE`` is
  set, the workspace is ``<cwd>/$KAMU_WORKSPACE/.kamu``; otherwise the first ``.kamu``
  that exists in the current directory or any parent (kamu stops at the first one, file or
  directory; it is a workspace only if it is a directory).
- **Its layout** (``WorkspaceLayout::new``, ``workspace_layout.rs``): ``.kamu/datasets/``
  (the datasets), ``repos/``, ``cache/``, ``run/``, ``version`` (the workspace format,
  5 = ``V5_BreakingMetadataChanges``) and, only when not the default,
  ``workspace.config`` (``multi_tenant: true``).
- **A dataset's directory, current layout** (``DatasetStorageUnitLocalFs``,
  ``src/odf/dataset-impl/src/entities/dataset_storage_unit_local_fs.rs``): one directory
  per dataset directly under ``datasets/``, named by its dataset ID in multibase
  (``did:odf:fed01…`` without ``did:odf:``), in single- and multi-tenant workspaces
  alike. Names starting with ``.`` are skipped; a directory without ``refs/head`` is an
  unfinished creation, not a dataset (kamu: "No head => garbage"). Its layout
  (``DatasetLayout``) is ``blocks/ refs/ data/ checkpoints/ info/``.
- **Its name** (``write_dataset_alias`` / ``read_dataset_alias``,
  ``src/odf/dataset/src/entities/dataset.rs``): the ``info/alias`` file, the alias as
  text, trimmed when read: ``name`` in a single-tenant workspace
  (``CreateDatasetUseCaseHelper`` drops the account there), ``account/name`` in a
  multi-tenant one.
- **Older kamu** (``DatasetRepositoryLocalFs`` with its storage strategies,
  ``src/infra/core/src/repos/dataset_repository_local_fs.rs``): single-tenant
  ``datasets/<name>/`` (the directory name is the name; no alias file) and multi-tenant
  ``datasets/<account>/<dataset-id>/`` with ``info/alias`` (a bare name there belongs to
  the account of its directory). Both are still read, so an old workspace resolves too.

Names follow kamu's grammar (``Grammar::match_dataset_name``: a hostname, subdomains of
ASCII letters and digits joined by single ``-``, separated by ``.``; an account name is
the same). Matching is exact, as kamu's ``DatasetAlias`` equality.

Everything here is local and read-only; an alias file is read bounded.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from odfweb3.errors import FormatError, NotFound, UsageError
from odfweb3.odf.identity import DID_PREFIX, DatasetId

__all__ = [
    "ENV_KAMU_WORKSPACE",
    "KAMU_DIR",
    "WorkspaceDataset",
    "find_workspace",
    "is_dataset_alias",
    "kamu_alias_of",
    "resolve_dataset_name",
    "workspace_datasets",
]

KAMU_DIR: Final = ".kamu"
ENV_KAMU_WORKSPACE: Final = "KAMU_WORKSPACE"
_MAX_ALIAS_FILE: Final = 4096  # an alias is a few dozen bytes; bound the read
_MAX_LISTED: Final = 20  # names an error lists: one line, however big the workspace
_SUBDOMAIN: Final = r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*"
_HOSTNAME: Final = rf"{_SUBDOMAIN}(?:\.{_SUBDOMAIN})*"
_ALIAS: Final = re.compile(rf"(?:{_HOSTNAME}/)?{_HOSTNAME}")
_HOST: Final = re.compile(_HOSTNAME)


@dataclass(frozen=True)
class WorkspaceDataset:
    """One dataset of a kamu workspace.

    ``alias`` is kamu's name for it (``name`` or ``account/name``; ``None`` when its
    directory has no alias file), ``path`` its dataset directory, ``dataset_id`` the
    ``did:odf:`` ID its directory is named by (``None`` in the old single-tenant layout,
    where the directory is named by the dataset name).
    """

    alias: str | None
    path: Path
    dataset_id: str | None

    @property
    def name(self) -> str | None:
        """The dataset name without the account."""
        return None if self.alias is None else self.alias.rpartition("/")[2]


def is_dataset_alias(text: str) -> bool:
    """Whether ``text`` is a kamu dataset alias: ``name`` or ``account/name``."""
    return _ALIAS.fullmatch(text) is not None


def find_workspace(start_dir: Path, env: Mapping[str, str] | None = None) -> Path | None:
    """The ``.kamu`` directory kamu would use from ``start_dir``, or None outside a workspace.

    ``env`` is the environment to read ``KAMU_WORKSPACE`` from (passed in, never read here).
    """
    start = Path(start_dir).absolute()
    override = (env or {}).get(ENV_KAMU_WORKSPACE)
    if override:
        candidate = start / override / KAMU_DIR
        return candidate if candidate.is_dir() else None
    for folder in (start, *start.parents):
        candidate = folder / KAMU_DIR
        if candidate.exists():  # as kamu's `root_dir.exists()`: a dangling link is not one
            return candidate if candidate.is_dir() else None
    return None


def workspace_datasets(workspace: Path) -> tuple[WorkspaceDataset, ...]:
    """Every dataset of the workspace ``workspace`` (its ``.kamu`` directory), sorted by alias.

    Entries that are not datasets (no ``refs/head``, hidden, not directories) are left out,
    as kamu leaves them out.
    """
    datasets_dir = Path(workspace) / "datasets"
    found: list[WorkspaceDataset] = []
    for entry in _subdirs(datasets_dir):
        dataset_id = _dataset_id_named(entry.name)
        if dataset_id is not None:
            if _has_head(entry):
                found.append(WorkspaceDataset(_read_alias(entry), entry, dataset_id))
        elif _has_head(entry):
            if _HOST.fullmatch(entry.name):  # old single-tenant: datasets/<name>/
                found.append(WorkspaceDataset(entry.name, entry, None))
        elif _HOST.fullmatch(entry.name):  # old multi-tenant: datasets/<account>/<id>/
            for inner in _subdirs(entry):
                inner_id = _dataset_id_named(inner.name)
                if inner_id is None or not _has_head(inner):
                    continue
                alias = _read_alias(inner)
                if alias is not None and "/" not in alias:
                    alias = f"{entry.name}/{alias}"
                found.append(WorkspaceDataset(alias, inner, inner_id))
    return tuple(sorted(found, key=lambda d: (d.alias or "", d.dataset_id or "")))


def resolve_dataset_name(name: str, start_dir: Path, env: Mapping[str, str] | None = None) -> Path:
    """The dataset directory kamu keeps for ``name`` in the workspace found from ``start_dir``.

    ``name`` is an alias (``name`` or ``account/name``; a bare name also matches one
    account's dataset of that name in a multi-tenant workspace) or a ``did:odf:`` ID.

    Raises:
        NotFound: no workspace here or above, or no dataset of that name in it (the
            message lists the names it has).
        UsageError: a bare name that several accounts' datasets have.
    """
    workspace = find_workspace(start_dir, env)
    if workspace is None:
        raise NotFound(
            f"{name}: no such dataset directory, and no kamu workspace ({KAMU_DIR}/) in "
            f"{Path(start_dir).absolute()} or above; give the dataset directory"
        )
    datasets = workspace_datasets(workspace)
    if name.startswith(DID_PREFIX):
        matches = [d for d in datasets if d.dataset_id == _canonical_id(name)]
    else:
        matches = [d for d in datasets if d.alias == name]
        if not matches and "/" not in name:
            matches = [d for d in datasets if d.name == name]
    if len(matches) == 1:
        return matches[0].path
    if len(matches) > 1:
        names = ", ".join(d.alias or str(d.path) for d in matches)
        raise UsageError(
            f"{name}: several datasets of the workspace {workspace} have this name "
            f"({names}); give account/name"
        )
    known = [d.alias or d.dataset_id or d.path.name for d in datasets]
    listing = ", ".join(known[:_MAX_LISTED]) if known else "none"
    if len(known) > _MAX_LISTED:
        listing += f" and {len(known) - _MAX_LISTED} more"
    raise NotFound(
        f"{name}: no such dataset in the kamu workspace {workspace} (it has: {listing}); "
        "give one of those names or a dataset directory"
    )


def kamu_alias_of(dataset_dir: Path) -> str | None:
    """kamu's alias for the dataset directory ``dataset_dir``, if it is in a workspace.

    Reads ``info/alias`` (current and old multi-tenant layouts) or takes the directory name
    (old single-tenant layout, ``.kamu/datasets/<name>/``); None for a directory that is
    not a dataset of a kamu workspace.
    """
    path = Path(dataset_dir).absolute()
    parent = path.parent
    if parent.name == "datasets" and parent.parent.name == KAMU_DIR:
        if _dataset_id_named(path.name) is not None:
            return _read_alias(path)
        return path.name if _HOST.fullmatch(path.name) else None
    grand = parent.parent
    if grand.name == "datasets" and grand.parent.name == KAMU_DIR:
        if _dataset_id_named(path.name) is None:
            return None
        alias = _read_alias(path)
        if alias is not None and "/" not in alias:
            alias = f"{parent.name}/{alias}"
        return alias
    return None


def _subdirs(folder: Path) -> list[Path]:
    """The real (not hidden, not symlinked) subdirectories of ``folder``, by name."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        raise NotFound(f"{folder}: cannot be read ({exc.strerror})") from None
    return [
        Path(e.path)
        for e in entries
        if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)
    ]


def _dataset_id_named(dirname: str) -> str | None:
    """The ``did:odf:`` ID a directory name spells (kamu names them so), else None."""
    try:
        return str(DatasetId.parse(DID_PREFIX + dirname))
    except FormatError:
        return None


def _canonical_id(text: str) -> str | None:
    try:
        return str(DatasetId.parse(text))
    except FormatError:
        return None


def _has_head(dataset_dir: Path) -> bool:
    with contextlib.suppress(OSError):
        return stat.S_ISREG(os.stat(dataset_dir / "refs" / "head").st_mode)
    return False


def _read_alias(dataset_dir: Path) -> str | None:
    """``info/alias``, trimmed; None when absent or not an alias."""
    try:
        with open(dataset_dir / "info" / "alias", "rb") as f:
            raw = f.read(_MAX_ALIAS_FILE + 1)
    except OSError:
        return None
    if len(raw) > _MAX_ALIAS_FILE:
        return None
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None
    return text if is_dataset_alias(text) else None
