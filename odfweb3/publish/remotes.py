"""Named publish targets, like ``git remote`` and kamu's repository aliases.

``odfweb3 remote add NAME TARGET`` stores ``NAME -> TARGET`` in ``<state dir>/remotes.json``;
``publish --to NAME``, ``verify --against NAME`` and ``status`` then use the name. A
name is a short word that cannot be mistaken for a target or a reference: lower-case
letters, digits, ``-`` and ``_``, starting with a letter, never a target kind
(``car``, ``ipfs``, ``arweave``...). Local directories in targets are stored absolute,
so the name means the same place from any working directory.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Final

from odfweb3.atomic_file import write_file_atomic
from odfweb3.backends import declarations, target_traits
from odfweb3.errors import FormatError, NotFound, UsageError
from odfweb3.foreign_json import load_foreign_json

__all__ = ["REMOTES_FILE", "Remotes", "normalize_target", "reserved_words"]

REMOTES_FILE: Final = "remotes.json"
#: Words that mean a reference whatever the backends: a did:odf, a gateway URL.
_OTHER_SCHEMES: Final = frozenset({"did", "http", "https"})
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
_MAX_BYTES: Final = 1 << 20


def normalize_target(spec: str, cwd: Path | None = None) -> str:
    """``spec`` with a local directory made absolute (``car:./out`` -> ``car:/abs/out``)."""
    kind, sep, arg = spec.partition(":")
    if sep and arg and target_traits(spec).offline:
        return f"{kind}:{((cwd or Path.cwd()) / Path(arg).expanduser()).absolute()}"
    return spec


def reserved_words() -> frozenset[str]:
    """Words that already mean a target kind or a reference scheme: every backend's target
    schemes and reference schemes (``car``, ``turbo``, ``ipns``, ``ar``...), as declared."""
    words = set(_OTHER_SCHEMES)
    for declared in declarations():
        words.update(declared.target_schemes)
        words.update(prefix.partition(":")[0] for prefix in declared.ref_prefixes)
    return frozenset(words)


def _check_name(name: str) -> None:
    reserved = reserved_words()
    if not _NAME.match(name) or name in reserved:
        raise UsageError(
            f"remote name {name!r}: use a short lower-case word (a-z, 0-9, -, _) that is "
            f"not a target kind ({', '.join(sorted(reserved))})"
        )


class Remotes:
    """The ``remotes.json`` of a state directory."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / REMOTES_FILE

    def load(self) -> dict[str, str]:
        """Every remote, ``name -> target``, in the order added.

        Raises:
            FormatError: the file is not what :meth:`add` writes.
        """
        try:
            with open(self.path, "rb") as f:
                raw = f.read(_MAX_BYTES + 1)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise FormatError(f"{self.path}: unreadable ({exc.strerror})") from None
        try:
            if len(raw) > _MAX_BYTES:
                raise ValueError("too large")
            data = load_foreign_json(raw, what=str(self.path), max_bytes=_MAX_BYTES)
            remotes = data["remotes"]
            if not isinstance(remotes, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in remotes.items()
            ):
                raise ValueError("not a map of names to targets")
        except (ValueError, KeyError, TypeError):
            raise FormatError(
                f"{self.path}: not a remotes file; fix it or move it away and add the remotes "
                "again (odfweb3 remote add NAME TARGET)"
            ) from None
        return dict(remotes)

    def _save(self, remotes: dict[str, str]) -> None:
        text = json.dumps({"remotes": remotes}, indent=1) + "\n"
        write_file_atomic(self.path, text.encode())

    def add(self, name: str, target: str, cwd: Path | None = None) -> str:
        """Add ``name`` for ``target``; returns the target as stored.

        Raises:
            UsageError: a bad or reserved name, a name already taken, an empty target.
        """
        _check_name(name)
        kind, _, arg = target.partition(":")
        if not kind or (not arg and target_traits(target).offline):
            raise UsageError(f"remote {name}: {target!r} is not a target (e.g. car:DIR, ipfs)")
        remotes = self.load()
        if name in remotes:
            raise UsageError(
                f"remote {name} already exists ({remotes[name]}); remove it first: "
                f"odfweb3 remote remove {name}"
            )
        if target in remotes:
            raise UsageError(f"remote name {name!r} would hide another remote's name")
        stored = normalize_target(target, cwd)
        remotes[name] = stored
        self._save(remotes)
        return stored

    def remove(self, name: str) -> str:
        """Remove ``name``; returns the target it named.

        Raises:
            NotFound: no such remote.
        """
        remotes = self.load()
        if name not in remotes:
            raise NotFound(f"no remote named {name!r} (odfweb3 remote list shows them)")
        target = remotes.pop(name)
        self._save(remotes)
        return target

    def rename(self, old: str, new: str) -> str:
        """Rename remote ``old`` to ``new`` in place (its order kept); returns its target.

        Raises:
            NotFound: no remote ``old``.
            UsageError: a bad or reserved ``new``, or one already taken.
        """
        _check_name(new)
        remotes = self.load()
        if old not in remotes:
            raise NotFound(f"no remote named {old!r} (odfweb3 remote list shows them)")
        if new in remotes and new != old:
            raise UsageError(
                f"remote {new} already exists ({remotes[new]}); remove it first: "
                f"odfweb3 remote remove {new}"
            )
        renamed = {new if n == old else n: t for n, t in remotes.items()}
        self._save(renamed)
        return remotes[old]

    def resolve(self, spec: str) -> str:
        """The target a ``--to`` / ``--against`` value names: a remote's, or ``spec`` itself."""
        if ":" in spec or "/" in spec:
            return spec
        return self.load().get(spec, spec)
