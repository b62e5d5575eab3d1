"""An offline target's state home: ``OUT_DIR/publish.json``, written by one publisher at a
time.

``car:DIR`` and ``bundle:DIR`` keep their publish state in the directory they write, beside
what they publish; what both need of it is here, once (docs/design.md, "State files"): the
bounded read of ``publish.json`` (the target opens what it names: its packs, its typed
fields), the lock (``OUT_DIR/.publish.lock``, held by the executor's session; a dead
holder's is taken over) and the removal of what an interrupted writer left half written,
compare-and-set (the ``publish.json`` that ``inspect`` read must still be there when the
upload starts and when the record is committed), and the write of ``publish.json`` last:
atomically, then the seal, then the packs it no longer names dropped. The state is the
target's typed one in between: its :class:`~odfweb3.publish.state.StateCodec` parses it once
where ``publish.json`` is read and serializes it once where it is written. The target adds
only what its network writes (CARs and the IPNS record, or bundles) and its summary's fields.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar

from odfweb3.atomic_file import remove_partials, write_file_atomic
from odfweb3.errors import ConflictError
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.outdir_seal import OutDirSeal
from odfweb3.publish.pack_index import PackIndex, drop_packs
from odfweb3.publish.pid_lock import PidLock
from odfweb3.publish.state import (
    PublishState,
    RawState,
    StateCodec,
    load_summary_file,
    state_json_text,
)

__all__ = ["LOCK_NAME", "SUMMARY_NAME", "OutDirHome"]

LOCK_NAME = ".publish.lock"
SUMMARY_NAME = "publish.json"

_Stat = tuple[int, int, int, int]
R = TypeVar("R")
E = TypeVar("E")
_S = TypeVar("_S")


def _identity(state: _S) -> _S:
    return state


class OutDirHome(Generic[R, E]):
    """``OUT_DIR/publish.json`` of one offline target: read, locked, compared, written.

    Args:
        out_dir: the output directory.
        codec: the target's typed ``record`` and ``extra`` (FormatError naming the file
            when a field has the wrong type).
        opened: what the target makes of its typed state read from ``publish.json`` (its
            packs attached, its names checked; FormatError naming the file).
    """

    def __init__(
        self,
        out_dir: Path,
        codec: StateCodec[R, E],
        opened: Callable[[PublishState[R, E]], PublishState[R, E]] = _identity,
    ) -> None:
        self.out_dir = out_dir
        self.codec = codec
        self._opened = opened
        self._pid_lock = PidLock(out_dir / LOCK_NAME, str(out_dir))
        self._seen_head: bytes | None = None
        self._seen_stat: _Stat | None = None

    @property
    def summary_path(self) -> Path:
        """The ``publish.json`` of this directory."""
        return self.out_dir / SUMMARY_NAME

    @property
    def lock_path(self) -> Path:
        """``OUT_DIR/.publish.lock``: holds the pid of the publisher writing the directory."""
        return self.out_dir / LOCK_NAME

    def load(self) -> tuple[PublishState[R, E] | None, dict[str, Any]]:
        """The state ``publish.json`` holds, typed and as the target opens it, and the whole
        document (``(None, {})``: none).

        Raises:
            FormatError: unreadable, not a publish state, or a field of the target's of the
                wrong type.
        """
        state, doc = load_summary_file(self.summary_path)
        if state is None:
            return None, doc
        return self._opened(self.codec.parse(state, str(self.summary_path))), doc

    def inspect(self) -> tuple[PublishState[R, E] | None, dict[str, Any]]:
        """:meth:`load`, remembered as what the publish builds on (compare-and-set)."""
        self._seen_stat = self._stat()  # before reading: a later change shows
        state, raw = self.load()
        self._seen_head = state.head if state is not None else None
        return state, raw

    def _stat(self) -> _Stat | None:
        """Identity of ``publish.json`` as it is now (every write renames a new file in)."""
        try:
            st = os.stat(self.summary_path, follow_symlinks=False)
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def check_unchanged(self) -> None:
        """Compare-and-set: ``publish.json`` must still hold the head :meth:`inspect` read.

        The same file (inode, size, times) as ``inspect`` read is the same head, with no
        second parse of a state that grows with the dataset; any other file is read and
        its head compared.

        Raises:
            ConflictError: another publish moved the directory meanwhile (exit 75).
        """
        if self._seen_stat is not None and self._stat() == self._seen_stat:
            return
        current, _raw = self.load()
        now = current.head if current is not None else None
        if now != self._seen_head:
            raise ConflictError(
                f"{self.out_dir}: another publish moved it to "
                f"{multihash_to_str(now) if now else 'nothing'} meanwhile; nothing of ours "
                "was made visible: run publish again"
            )

    @contextlib.contextmanager
    def session(self, ended: Callable[[], None] = lambda: None) -> Iterator[None]:
        """Hold ``OUT_DIR/.publish.lock`` (the target's session, which the executor opens for
        ``upload``, ``commit`` and ``save``; it goes however the publish ends, and a killed
        process's is taken over by the next publisher), after removing what an
        interrupted publisher left half written (none of it is named yet). ``ended`` is
        called once it is dropped (the target forgets what this publish decided).

        Raises:
            ConflictError: another live process is publishing into this directory.
        """
        created = not self.out_dir.exists()
        self.out_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._lock()
            remove_partials(self.out_dir)
            yield
        finally:
            self._unlock()
            if created:  # a publish refused before writing leaves no empty directory
                with contextlib.suppress(OSError):
                    self.out_dir.rmdir()
            ended()

    def _lock(self) -> None:
        self._pid_lock.acquire()

    def _unlock(self) -> None:
        self._pid_lock.release()

    def write(
        self,
        state: PublishState[R, E],
        summary: Mapping[str, Any],
        *,
        large: bool,
        seal: OutDirSeal | None,
        files: Iterable[str],
        written: Iterable[str],
    ) -> RawState:
        """Write ``publish.json`` (the state, serialized here once, plus the target's
        ``summary`` fields) last, atomically; then record it in ``seal`` with the content
        ``files`` it names (those ``written`` by this publish hashed now); then drop the
        packs it no longer names. Returns the file's form of ``state`` (its ``objects`` as
        given).

        ``large``: a state whose objects are in packs is written compact (the indenting
        encoder is pure Python); a state listing its objects decides for itself
        (:func:`~odfweb3.publish.state.state_json_text`).
        """
        raw = self.codec.serialize(state)
        doc = raw.to_json()
        packed = state.objects if isinstance(state.objects, PackIndex) else None
        if packed is not None:
            del doc["objects"]  # in OUT_DIR's packs (extra.objectIndex says where)
        doc.update(summary)
        if packed is not None:
            text = json.dumps(doc, indent=None if large else 1, sort_keys=True)
        else:
            text = state_json_text(doc)
        write_file_atomic(self.summary_path, (text + "\n").encode(), public=True)
        if seal is not None:  # after publish.json: a crash before leaves a mismatch
            seal.save(self.out_dir, json.loads(text), files, written)
        if packed is not None:
            drop_packs(self.out_dir, packed.packs)
        return raw
