"""What this machine last wrote into an offline output directory, kept in its private state.

``car:DIR`` and ``bundle:DIR`` keep their state in ``OUT_DIR/publish.json`` (the directory
travels with its CARs or bundles), but ``OUT_DIR`` may be a shared disk or bucket that others
write. A publish reuses what the directory holds (the object index, the CARs or bundles it
links to), and signs a record over the result: reused content edited or emptied there would
be signed as present (a record over missing content). The seal,
``<state dir>/outdir-seals/<sha-256 of the target>.seal``, records at each save:

- ``summary``: the SHA-256 of ``publish.json``'s document in canonical JSON (sorted keys, no
  spaces), as parsed: the same document read back gives the same digest whatever its
  indentation, and any field changed (a pack ref, a CAR name, a HAMT shard) another;
- ``files``: per content file the directory's state names (CARs, bundles), its size and
  SHA-256 as written, and its inode, mtime and ctime.

:meth:`OutDirSeal.vouches` is cheap and proportional to what changed: one digest of the
parsed ``publish.json`` and one ``stat`` per content file; a file whose inode, size and
times are those recorded is the file written (the ctime cannot be set back by a writer
without the machine's clock), any other is hashed again and compared. The object index
packs need no entry: ``publish.json`` records each part's SHA-256, checked on every read. When
the seal does not vouch (no seal: another machine's publish, or one from before seals; or a
mismatch), the target re-reads the directory or refuses; it never signs over it unchecked.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from odfweb3.atomic_file import write_file_atomic
from odfweb3.errors import FormatError, NotFound
from odfweb3.foreign_json import read_foreign_json_file

__all__ = ["SEALS_DIR", "FileSeal", "OutDirSeal", "summary_digest"]

SEALS_DIR: Final = "outdir-seals"
_MAX_SEAL_BYTES: Final = 64 << 20  # one entry (~150 bytes) per CAR or bundle written
_CHUNK: Final = 1 << 20


def summary_digest(doc: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of a ``publish.json`` document in canonical JSON."""
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _stat(path: Path) -> os.stat_result | None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return st


@dataclass(frozen=True)
class FileSeal:
    """A content file as written: size, SHA-256 (hex), inode, mtime and ctime (ns)."""

    size: int
    sha256: str
    ino: int
    mtime_ns: int
    ctime_ns: int

    def to_json(self) -> list[Any]:
        """Seal file form."""
        return [self.size, self.sha256, self.ino, self.mtime_ns, self.ctime_ns]

    @classmethod
    def of(cls, path: Path, sha256: str | None = None) -> FileSeal:
        """The seal of ``path`` as it is now (hashed unless ``sha256`` is known)."""
        st = os.stat(path, follow_symlinks=False)
        digest = sha256 if sha256 is not None else _file_sha256(path)
        return cls(st.st_size, digest, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)

    def same_file(self, st: os.stat_result) -> bool:
        """``st`` is the file this seal recorded, untouched since."""
        return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns) == (
            self.ino,
            self.size,
            self.mtime_ns,
            self.ctime_ns,
        )


class OutDirSeal:
    """The seal of one offline target (``car:/abs/dir``), in the private state directory."""

    def __init__(self, state_dir: Path, target: str) -> None:
        key = hashlib.sha256(target.encode("utf-8")).hexdigest()[:32]
        self.path = state_dir / SEALS_DIR / f"{key}.seal"  # not *.json: StateStore lists */*.json
        self.target = target
        self._summary: str | None = None
        self._files: dict[str, FileSeal] = {}
        self._loaded = False

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        try:
            doc = read_foreign_json_file(self.path, max_bytes=_MAX_SEAL_BYTES, expect=dict)
        except NotFound:
            return
        try:
            if doc.get("target") != self.target:
                return  # another target's (a hash collision would be this): no seal
            summary = doc["summary"]
            files = {
                str(name): FileSeal(*(int(v[0]), str(v[1]), int(v[2]), int(v[3]), int(v[4])))
                for name, v in dict(doc["files"]).items()
            }
        except (KeyError, TypeError, ValueError, IndexError):
            raise FormatError(
                f"{self.path}: not an output directory seal; delete it (the next publish "
                "then re-reads the directory)"
            ) from None
        self._summary, self._files = str(summary), files

    @property
    def present(self) -> bool:
        """A seal was saved for this target."""
        self._load()
        return self._summary is not None

    def vouches(self, out_dir: Path, doc: Mapping[str, Any], files: Iterable[str]) -> str | None:
        """None when ``doc`` (``publish.json`` as parsed) and every content file in ``files``
        are what this machine wrote; else why not, in a few words naming the file."""
        return self.vouches_summary(doc) or next(iter(self.changed_files(out_dir, files)), None)

    def vouches_summary(self, doc: Mapping[str, Any]) -> str | None:
        """None when ``doc`` is the ``publish.json`` this machine wrote last, else why not."""
        self._load()
        if self._summary is None:
            return "publish.json was not written from this machine's state"
        if summary_digest(doc) != self._summary:
            return "publish.json changed since this machine wrote it"
        return None

    def changed_files(self, out_dir: Path, files: Iterable[str]) -> list[str]:
        """Why each content file in ``files`` that is not as this machine wrote it is not
        (one ``stat`` each; a touched file is hashed again)."""
        self._load()
        changed: list[str] = []
        for name in files:
            seal = self._files.get(name)
            st = _stat(out_dir / name)
            if seal is None or st is None or st.st_size != seal.size:
                changed.append(f"{name} is not the file this machine wrote")
            elif seal.same_file(st):
                continue
            elif _file_sha256(out_dir / name) != seal.sha256:  # touched: its bytes decide
                changed.append(f"{name} changed since this machine wrote it")
            else:
                self._files[name] = FileSeal.of(out_dir / name, seal.sha256)
        return changed

    def forget_files(self) -> None:
        """Drop the file entries (the directory was re-read and checked as it is now: the
        next save hashes what it names)."""
        self._load()
        self._files = {}

    def save(
        self, out_dir: Path, doc: Mapping[str, Any], files: Iterable[str], fresh: Iterable[str]
    ) -> None:
        """Record ``doc`` (as written) and the content files it names: those this publish
        wrote (``fresh``) and those without an entry are hashed now (the new CAR or bundle:
        work proportional to the change), the others keep theirs."""
        self._load()
        written = set(fresh)
        kept: dict[str, FileSeal] = {}
        for name in files:
            old = self._files.get(name)
            kept[name] = (
                old if old is not None and name not in written else FileSeal.of(out_dir / name)
            )
        digest = summary_digest(doc)
        body = {
            "target": self.target,
            "summary": digest,
            "files": {n: s.to_json() for n, s in kept.items()},
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_file_atomic(self.path, json.dumps(body, separators=(",", ":")).encode("ascii"))
        self._summary, self._files = digest, kept
