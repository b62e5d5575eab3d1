"""``car:DIR``'s first publish resumes its CAR instead of writing it again (docs/ipfs.md,
"Interrupted publishes").

A first publish into ``OUT_DIR`` writes its CAR to ``OUT_DIR/.resume-<key>.car.partial`` (no
``*.car`` glob matches it) and, about every :data:`CHECKPOINT_BYTES`, flushes it and appends
one line to ``OUT_DIR/.resume-<key>.log.partial`` (mode 0600): the CAR's length then and the
objects whose blocks all lie before it and whose size and hash checks have passed. Neither
is fsynced then (a killed process loses nothing the kernel has; after a power cut, whatever
did not reach the disk fails the checks below and the publish starts afresh), so a
checkpoint costs two small writes. An interrupted run leaves both; the next one reads the
CAR back up to the last length logged (:meth:`CarResume.load`, then truncates the rest)
(every block re-hashed against its CID), keeps the objects whose whole DAG is in it with the
DAG size logged, and goes on writing after them: those objects are linked, not read or
written again, and no block already in the CAR is written twice. A CAR or log that does not
check out (another CID profile or key, a block that does not hash to its CID, a log not
ours) is removed and the publish starts afresh. The whole CAR is renamed to ``<root>.car``
at the end and the log removed.

Only a first publish resumes (a directory with no ``publish.json``): an update's delta is
small, and is written again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Final, cast

from odfweb3.errors import FormatError, IntegrityError
from odfweb3_ipfs.formats.car import CarWriter, CidSet, iter_car
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.formats.dagpb import decode_pbnode
from odfweb3_ipfs.publish.dataset_dag import ObjectLink

__all__ = ["CHECKPOINT_BYTES", "CarResume", "Resumed", "ResumingWriter"]

CHECKPOINT_BYTES: Final = 1 << 20
_PREFIX: Final = ".resume-"
_VERSION: Final = 1
_MAX_LOG: Final = 256 << 20
_MAX_LINE: Final = 16 << 20
_CODEC_DAG_PB: Final = 0x70
_FOLDERS: Final = ("blocks", "checkpoints", "data")


@dataclass(frozen=True)
class Resumed:
    """What an interrupted first publish left whole: the CAR's length kept, its blocks,
    and the objects (path -> link state form) whose DAG is all in it."""

    offset: int
    seen: CidSet
    blocks: int
    objects: dict[str, dict[str, Any]]


def _is_object_path(path: object) -> bool:
    if not isinstance(path, str):
        return False
    folder, sep, name = path.partition("/")
    return folder in _FOLDERS and bool(sep) and bool(name) and name.isalnum()


class CarResume:
    """The partial CAR and progress log of one dataset's first publish into ``out_dir``."""

    def __init__(self, out_dir: Path, dataset_id: str, facts: tuple[int, str | None, int | None]):
        key = hashlib.sha256(dataset_id.encode()).hexdigest()[:24]
        self.out_dir = out_dir
        self.cid_version = facts[0]
        self.car = out_dir / f"{_PREFIX}{key}.car.partial"
        self.log = out_dir / f"{_PREFIX}{key}.log.partial"
        self.header = {
            "version": _VERSION,
            "datasetId": dataset_id,
            "cidVersion": facts[0],
            "cidProfile": facts[1],
            "keyEpoch": facts[2],
        }

    def discard(self) -> None:
        """Remove every resume file in the directory (ours, or a stale one)."""
        with contextlib.suppress(OSError):
            for entry in os.scandir(self.out_dir):
                if entry.name.startswith(_PREFIX) and entry.name.endswith(".partial"):
                    with contextlib.suppress(OSError):
                        os.unlink(entry.path)

    def _log_lines(self) -> Iterator[Any]:
        """The log's lines, read bounded; a torn last line (a kill mid-write) is dropped."""
        fd = os.open(self.log, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
                raise FormatError(f"{self.log}: not this user's private progress log")
            data = f.read(_MAX_LOG + 1)
        if len(data) > _MAX_LOG:
            raise FormatError(f"{self.log}: too large")
        for line in data.split(b"\n"):
            if not line or len(line) > _MAX_LINE:
                continue
            try:
                yield json.loads(line)
            except ValueError:
                return

    def load(self) -> Resumed | None:
        """What the interrupted run left whole (None: nothing, or nothing usable). Reads
        only: the caller truncates the CAR (:meth:`identity` unchanged) under its lock."""
        if not self.log.exists() and not self.car.exists():
            return None
        try:
            return self._load()
        except (OSError, FormatError, IntegrityError, ValueError, KeyError, TypeError):
            return None

    def identity(self) -> tuple[int, int, int, int] | None:
        """The partial CAR's inode, size and times (the same file as :meth:`load` read)."""
        try:
            st = os.lstat(self.car)
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def _load(self) -> Resumed | None:
        lines = iter(self._log_lines())
        if next(lines, None) != self.header:
            return None
        offset = 0
        claimed: dict[str, ObjectLink] = {}
        for line in lines:
            if not isinstance(line, dict) or not isinstance(line.get("objects"), list):
                return None
            at = line.get("offset")
            if not isinstance(at, int) or isinstance(at, bool) or at < offset:
                return None
            for entry in line["objects"]:
                path, cid, tsize, size = entry
                if not _is_object_path(path) or not isinstance(cid, str):
                    return None
                claimed[path] = ObjectLink(Cid.decode(cid), int(tsize), int(size))
            offset = at
        if not claimed:
            return None
        st = os.lstat(self.car)
        if not stat.S_ISREG(st.st_mode) or st.st_size < offset:
            return None
        seen = CidSet()
        sizes: dict[bytes, int] = {}
        links: dict[bytes, tuple[bytes, ...]] = {}
        blocks = 0
        fd = os.open(self.car, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            _roots, found = iter_car(cast(BinaryIO, _Prefix(f, offset)))
            for cid, data in found:  # each block re-hashed against its CID
                seen.add(cid)
                sizes[cid.raw] = len(data)
                if cid.codec == _CODEC_DAG_PB:
                    links[cid.raw] = tuple(link.cid.raw for link in decode_pbnode(data).links)
                blocks += 1
        whole: dict[str, dict[str, Any]] = {}
        for path, link in claimed.items():
            if _dag_size(link.cid.raw, sizes, links) == link.tsize:
                whole[path] = link.to_json()
        return Resumed(offset, seen, blocks, whole) if whole else None


class _Prefix:
    """The first ``limit`` bytes of a stream (the part of the CAR the log vouches for)."""

    def __init__(self, stream: BinaryIO, limit: int) -> None:
        self._stream = stream
        self._left = limit

    def read(self, n: int = -1) -> bytes:
        if n < 0 or n > self._left:
            n = self._left
        data = self._stream.read(n)
        self._left -= len(data)
        return data


def _dag_size(
    root: bytes, sizes: Mapping[bytes, int], links: Mapping[bytes, tuple[bytes, ...]]
) -> int | None:
    """The DAG size (Kubo's tsize: every block under ``root`` once per link) when the
    whole DAG is in the CAR, else None."""
    total = 0
    stack = [root]
    while stack:
        raw = stack.pop()
        if raw not in sizes:
            return None
        total += sizes[raw]
        stack.extend(links.get(raw, ()))
    return total


class ResumingWriter:
    """The block sink and :class:`.dataset_dag.ObjectObserver` of a resumable first
    ``car:`` publish: blocks to the partial CAR (after the part a :class:`Resumed` kept),
    and a progress line about every :data:`CHECKPOINT_BYTES`."""

    def __init__(
        self, resume: CarResume, resumed: Resumed | None, checkpoint_bytes: int = CHECKPOINT_BYTES
    ) -> None:
        self.resume = resume
        self.checkpoint_bytes = checkpoint_bytes
        cid_version = resume.cid_version
        if resumed is None:
            resume.discard()
            self._file: BinaryIO = open(resume.car, "w+b")  # noqa: SIM115 - closed by close()
            self.writer = CarWriter.with_root_later(self._file, cid_version=cid_version)
            fd = os.open(resume.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            self._log = os.fdopen(fd, "w", encoding="utf-8")
            self._log.write(json.dumps(resume.header) + "\n")
            self._log.flush()
            os.fsync(self._log.fileno())
        else:
            os.truncate(resume.car, resumed.offset)  # what the log does not vouch for
            self._file = open(resume.car, "r+b")  # noqa: SIM115 - closed by close()
            self._file.seek(resumed.offset)
            self.writer = CarWriter.resumed(
                self._file, resumed.seen, cid_version=cid_version, blocks=resumed.blocks
            )
            fd = os.open(resume.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            self._log = os.fdopen(fd, "w", encoding="utf-8")
        self._since = 0
        self._pending: list[tuple[str, ObjectLink]] = []
        self._verified: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, cid: Cid, block: bytes) -> bool:
        """Take one block (a block sink); one the CAR holds already is not written again."""
        written = self.writer.write_block(cid, block)
        if written:
            self._since += len(block)
        return written

    def imported(self, path: str, link: ObjectLink) -> None:
        self._pending.append((path, link))
        if self._since >= self.checkpoint_bytes:
            self._checkpoint()

    def verified(self, path: str) -> None:
        with self._lock:
            self._verified.add(path)

    def failed(self, path: str) -> None:
        return None  # never verified: never logged

    def _checkpoint(self) -> None:
        """Flush the CAR, then log its length and the checked objects before it."""
        with self._lock:
            done = [(p, link) for p, link in self._pending if p in self._verified]
            kept = [(p, link) for p, link in self._pending if p not in self._verified]
        if not done:
            return
        self._file.flush()
        line = {
            "offset": self._file.tell(),
            "objects": [[p, link.cid.encode(), link.tsize, link.size] for p, link in done],
        }
        # One write of the whole line on the log kept open (opening it per checkpoint was
        # 900 opens at 10,000 blocks): a kill leaves at most a torn last line, dropped on load.
        self._log.write(json.dumps(line, separators=(",", ":")) + "\n")
        self._log.flush()
        self._pending = kept
        self._since = 0
        with self._lock:
            # Logged, never pending again: a first publish of 100,000 blocks kept the paths
            # of all 300,000 objects here.
            self._verified.difference_update(p for p, _ in done)

    @property
    def file(self) -> BinaryIO:
        """The partial CAR (for set_root and the final fsync)."""
        return self._file

    def close(self) -> None:
        self._log.close()
        self._file.close()
