"""A network target's state home: its private publish state of one dataset, written by one
publisher at a time.

The Kubo node, pinning, Arweave gateway and Turbo targets keep what they last published in
``<state dir>/<dataset key>/<target key>.json`` (:class:`~odfweb3.publish.state.StateStore`'s
layout); what all of them need of it is here, once, as :mod:`.out_dir` is for the offline
targets (docs/design.md, "State files"):

- the one read per publish (:meth:`StateHome.inspect`, bounded; the target opens what it
  names: its packs, its typed fields);
- the lock (``<target key>.lock`` beside the state, :class:`~odfweb3.publish.pid_lock.PidLock`:
  one publisher per dataset × target on this machine; a dead holder's is taken over), held
  by the executor's session around upload, commit and save;
- compare-and-set (:meth:`StateHome.check_unchanged`, at upload and at commit): the state
  file must still be the one ``inspect`` read, or the one this publish wrote since, else a
  :class:`~odfweb3.errors.ConflictError` (exit 75) before anything of ours is made visible;
- the unfinished upload's checkpoint (:class:`UploadCheckpoint`: ``<target key>.upload.json``,
  read bounded, written atomically with ``datasetId`` and ``target`` on top, cleared);
- the packs directory (``<target key>.index/``: packs written before the state naming them;
  those it no longer names dropped after, if older than this publish);
- the state written last, atomically (:meth:`StateHome.write`).

The state is typed between the two file edges: the target's :class:`~odfweb3.publish.state.
StateCodec` parses it once where :meth:`StateHome.inspect` reads the file and serializes it
once where :meth:`StateHome.write` writes it; compare-and-set compares typed states. The
target adds only its network pipeline and its typed fields.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Generic, TypeVar

from odfweb3.atomic_file import write_file_atomic
from odfweb3.errors import ConflictError, NotFound
from odfweb3.foreign_json import read_foreign_json_file
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.pack_index import PackIndex, drop_packs
from odfweb3.publish.pid_lock import PidLock
from odfweb3.publish.state import (
    MAX_CHECKPOINT_SIZE,
    PublishState,
    RawState,
    StateCodec,
    StateStore,
    load_state_file,
    save_state_file,
)

__all__ = ["StateHome", "UploadCheckpoint"]

_Stat = tuple[int, int, int, int]
R = TypeVar("R")
E = TypeVar("E")


def _stat(path: Path) -> _Stat | None:
    """Identity of a file as it is now (every write renames a new file in)."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _same(a: PublishState[R, E] | None, b: PublishState[R, E] | None) -> bool:
    """The same publish state, but for how ``objects`` is held (listed or in packs)."""
    if a is None or b is None:
        return a is b
    return (a.head, a.locator, a.record, a.extra) == (b.head, b.locator, b.record, b.extra)


class UploadCheckpoint:
    """The checkpoint of an unfinished upload of one (dataset, target): its document is the
    target's, with top-level ``datasetId`` and ``target`` (what ``status`` shows)."""

    def __init__(self, path: Path, dataset_id: str, target: str) -> None:
        self.path = path
        self.dataset_id = dataset_id
        self.target = target

    def exists(self) -> bool:
        """A checkpoint is there (read or not)."""
        return self.path.exists()

    def read(self) -> dict[str, Any] | None:
        """The checkpoint's document, read bounded (None: there is none).

        Raises:
            FormatError: it is not a JSON object of at most 64 MiB (half written by an
                older version, or damaged).
        """
        try:
            doc: dict[str, Any] = read_foreign_json_file(
                self.path, max_bytes=MAX_CHECKPOINT_SIZE, expect=dict
            )
        except NotFound:
            return None
        return doc

    def write(self, doc: dict[str, Any]) -> None:
        """Write ``doc`` (``datasetId`` and ``target`` set in it) atomically: fsynced before
        the rename, so a crash after a byte was sent finds the checkpoint that says so."""
        doc.update(datasetId=self.dataset_id, target=self.target)
        write_file_atomic(self.path, json.dumps(doc, sort_keys=True).encode("utf-8"))

    def clear(self) -> None:
        """Remove the checkpoint (the upload finished, or is given up)."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


class StateHome(Generic[R, E]):
    """The private publish state of one target (see the module docstring).

    One instance per target object; :meth:`inspect` binds it to the dataset being
    published (the executor then opens :meth:`session`).

    Args:
        states: the state directory.
        target: the target's name (the state's ``target``).
        codec: the target's typed ``record`` and ``extra`` (parsed at the read, serialized
            at the write).
        settled: the target's rule for a state that moved only by what a later look at the
            network settled about the same upload (``settled(seen, now)``: Turbo's
            ``status`` recording the bundler's FINALIZED): compare-and-set takes ``now`` as
            what the publish builds on instead of a conflict. None: any other state is one.
    """

    def __init__(
        self,
        states: StateStore,
        target: str,
        codec: StateCodec[R, E],
        settled: Callable[[PublishState[R, E], PublishState[R, E]], bool] | None = None,
    ) -> None:
        self.states = states
        self.target = target
        self.codec = codec
        self._settled = settled
        self._settled_now: PublishState[R, E] | None = None
        self._dataset: str | None = None
        self._seen: PublishState[R, E] | None = None
        self._seen_stat: _Stat | None = None
        self._started = 0.0
        self._lock: PidLock | None = None

    # -- where -----------------------------------------------------------------------

    def path(self, dataset_id: str) -> Path:
        """The state file of (dataset, this target)."""
        return self.states.path_for(dataset_id, self.target)

    def index_dir(self, dataset_id: str) -> Path:
        """The target's packs and side files of the dataset, beside its state:
        ``<state>.index/`` (never a path a remote value chose)."""
        path = self.path(dataset_id)
        return path.with_name(path.stem + ".index")

    def checkpoint(self, dataset_id: str) -> UploadCheckpoint:
        """The unfinished-upload checkpoint of (dataset, this target)."""
        path = self.states.checkpoint_path(dataset_id, self.target)
        return UploadCheckpoint(path, dataset_id, self.target)

    @property
    def dataset_id(self) -> str:
        """The dataset :meth:`inspect` read the state of."""
        if self._dataset is None:
            raise RuntimeError("StateHome: inspect() first")
        return self._dataset

    @property
    def started(self) -> float:
        """``time.time()`` when :meth:`inspect` began: packs older than that, which the saved
        state no longer names, are no other publisher's work in progress."""
        return self._started

    # -- read once ---------------------------------------------------------------------

    def inspect(self, dataset_id: str) -> PublishState[R, E] | None:
        """The saved state, typed (None: none; its ``objects`` as the file lists them: the
        target attaches its packs), read once per publish and remembered as what the
        publish builds on (compare-and-set).

        Raises:
            FormatError: the state file is unreadable, not a publish state, or a field of
                the target's has the wrong type.
        """
        self._dataset = dataset_id
        self._started = time.time()
        self._settled_now = None
        self._seen_stat = _stat(self.path(dataset_id))  # before reading: a later change shows
        self._seen = self._load(dataset_id)
        return self._seen

    def _load(self, dataset_id: str) -> PublishState[R, E] | None:
        path = self.path(dataset_id)
        raw = load_state_file(path)
        return self.codec.parse(raw, str(path)) if raw is not None else None

    @property
    def seen(self) -> PublishState[R, E] | None:
        """The state as :meth:`inspect` read it, or as this publish last wrote it."""
        return self._seen

    @property
    def settled_now(self) -> PublishState[R, E] | None:
        """The state the target's ``settled`` rule accepted since :meth:`inspect` (None:
        none): a publish that writes the state it read keeps what was settled in it."""
        return self._settled_now

    def check_unchanged(self) -> None:
        """Compare-and-set: the state file must still be what :meth:`inspect` read (or what
        this publish wrote since). The same file (inode, size, times) is that state with no
        second parse; another file is read and compared, but for its ``objects``; one the
        target's ``settled`` rule accepts is taken as the state built on from now on.

        Raises:
            ConflictError: another publish of this dataset to this target, on this machine,
                wrote its state meanwhile (exit 75).
        """
        path = self.path(self.dataset_id)
        now = _stat(path)
        if now == self._seen_stat:
            return
        current = self._load(self.dataset_id)
        if _same(current, self._seen):
            self._seen_stat = now
            return
        seen = self._seen
        settled = self._settled
        if (
            settled is not None
            and current is not None
            and seen is not None
            and settled(seen, current)
        ):
            self._seen, self._seen_stat = current, now
            self._settled_now = current
            return
        head = current.head if current is not None else None
        raise ConflictError(
            f"{path}: another publish of {self.dataset_id} to {self.target} saved "
            f"{multihash_to_str(head) if head else 'nothing'} meanwhile; nothing of ours "
            "was made visible: run publish again"
        )

    # -- one publisher ---------------------------------------------------------------

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        """Hold ``<target key>.lock`` beside the state (the target's session, opened by the
        executor around upload, commit and save; it goes however they end, and a killed
        process's is taken over by the next publisher).

        Raises:
            ConflictError: another live process is publishing this dataset to this target.
        """
        path = self.path(self.dataset_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = PidLock(path.with_suffix(".lock"), str(path))
        lock.acquire()
        self._lock = lock
        try:
            yield
        finally:
            lock.release()
            self._lock = None

    # -- write last ------------------------------------------------------------------

    def write(self, state: PublishState[R, E]) -> RawState:
        """Write ``state`` atomically, serialized here once (an object index stays in its
        packs: the state file's ``objects`` is then empty and ``extra`` names the packs),
        remembered as what the publish builds on; then drop the packs of the index
        directory it no longer names that are older than this publish. Returns the file's
        form of ``state`` (its ``objects`` as given)."""
        raw = self.codec.serialize(state)
        packed = state.objects if isinstance(state.objects, PackIndex) else None
        path = self.path(state.dataset_id)
        save_state_file(path, raw.evolve(objects={}) if packed is not None else raw)
        if state.dataset_id == self._dataset:
            self._seen = state.evolve(objects={}) if packed is not None else state
            self._seen_stat = _stat(path)
        if packed is not None:
            drop_packs(packed.out_dir, packed.packs, older_than=self._started)
        return raw
