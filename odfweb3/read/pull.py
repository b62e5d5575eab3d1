"""Pulling a dataset from an untrusted replica (ODF Simple Transfer Protocol, RFC-007).

1. read the replica's head (its reader verifies the name record where there is one);
2. walk blocks from the head back to the Seed, or to the destination's head when the
   destination already holds an ancestor (incremental), verifying every block hash and
   checking every chain rule; a first pull holds no decoded block (the rules are checked
   walking back, the blocks read again to be staged), an incremental one its new blocks;
3. fetch data files and checkpoints in parallel, each checked for size (never more
   bytes than the block records) and hash before it is kept; then the linked objects
   their ``ObjectLink`` columns name (ODF RFC-017: read from the verified data files),
   each checked against its hash;
4. stage objects (at their names in ``DEST/.odfweb3/incoming``, one pull at a time),
   flush them together, move them into place once all are verified, then blocks, then
   ``refs/head`` last (compare-and-set); a layout folder DEST holds empty (a first pull)
   gets the staged folder in one rename.

A non-empty destination that is not a dataset (anything beside the ODF layout and the
work directory, and no ``refs/head``) is refused: a pull never mixes files into it. A
destination whose head is not in the replica's chain has diverged, and one holding another
dataset (another ``did:odf`` in its Seed) is named as such: both refused unless ``force``,
which then removes the files of the layout (``blocks/``, ``data/``, ``checkpoints/``,
``refs/``) the new chain does not reference, once the new head is in place, and never
anything outside the layout. A replica caught lying leaves DEST exactly as it was; an
interrupted pull leaves complete, verified objects in the staging area and the old
head, and re-running fetches only what is still missing (and counts what it found staged
as already present). The blocks are read from the replica again: the chain is walked
(and checked) before anything else, which a name's record needs anyway.

The counts are the glossary's (docs/concepts.md, "Words"): objects are the blocks, data
files, checkpoints and linked objects the new blocks name, each once
(:func:`odfweb3.odf.chain.count_objects`); a first pull's is the dataset's, the number
``validate --deep``, ``publish`` and ``verify --deep`` say.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import os
import shutil
import threading
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from odfweb3.errors import ConflictError, FormatError, IntegrityError, NotFound, UsageError
from odfweb3.odf.chain import (
    ChainEntry,
    DatasetObject,
    ObjectCount,
    ObjectList,
    columns_at,
    iter_objects,
    walk_chain,
)
from odfweb3.odf.digest_map import DigestMap
from odfweb3.odf.identity import DatasetId
from odfweb3.odf.layout import (
    HEAD_REF,
    LAYOUT_DIRS,
    DatasetReader,
    ObjectKind,
    local_io_error,
    object_relpath,
)
from odfweb3.odf.linked import link_columns
from odfweb3.odf.model_gen import Seed, SetDataSchema
from odfweb3.odf.multihash import multihash_from_str, multihash_to_str
from odfweb3.odf.parquet_links import ParquetLinks
from odfweb3.odf.validate import ChainRulesBackwards, chain_state, check_chain_rules
from odfweb3.read.replica import LOCAL_READ_THREADS, FolderPrefetch, LocalReads, Replica
from odfweb3.store.local import WORK_DIR, LocalStore, sync_filesystem, sync_paths

__all__ = ["PullResult", "pull_dataset"]

ProgressFn = Callable[[int], None]


@dataclass(frozen=True)
class PullResult:
    """What a pull did: ``objects`` the objects the new blocks name (blocks included),
    ``objects_fetched`` + ``objects_present`` their total."""

    dest: Path
    head: bytes
    previous_head: bytes | None
    new_blocks: int
    objects_fetched: int
    bytes_fetched: int
    objects_present: int
    files_removed: int = 0
    objects: ObjectCount = field(default=ObjectCount())

    def to_json(self) -> dict[str, object]:
        """JSON form."""
        return {
            "dest": str(self.dest),
            "head": multihash_to_str(self.head),
            "previousHead": multihash_to_str(self.previous_head) if self.previous_head else None,
            "newBlocks": self.new_blocks,
            "objectsFetched": self.objects_fetched,
            "bytesFetched": self.bytes_fetched,
            "objectsAlreadyPresent": self.objects_present,
            "objects": self.objects.to_json(),
            "filesRemoved": self.files_removed,
        }


# What a dataset directory may hold: the ODF layout and odfweb3's work directory.
_LAYOUT = frozenset({*LAYOUT_DIRS.values(), "refs"})
_DATASET_ENTRIES = _LAYOUT | {WORK_DIR}


def _check_not_foreign(dest: Path) -> None:
    """Refuse a non-empty ``dest`` that holds more than a dataset's layout (no head:
    an interrupted first pull leaves only the layout and the work directory)."""
    try:
        names = [e.name for e in os.scandir(dest)]
    except (FileNotFoundError, NotADirectoryError):
        return  # absent; a file is refused by check_destination
    others = sorted(n for n in names if n not in _DATASET_ENTRIES)
    if others:
        shown = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
        raise UsageError(
            f"{dest}: not empty and not a dataset (it holds {shown}); pull into a new or "
            "empty directory"
        )


def _seed_id(entries: Iterator[ChainEntry] | list[ChainEntry]) -> str | None:
    """The ``did:odf`` in the Seed that ends ``entries`` (None: no Seed reached)."""
    last = None
    for entry in entries:
        last = entry
    event = last.block.event if last is not None else None
    if isinstance(event, Seed) and event.dataset_id:
        return str(DatasetId.from_bytes(event.dataset_id))
    return None


def _prune(dest: Path, keep: set[str]) -> int:
    """Remove the layout's files (``blocks/``, ``data/``, ``checkpoints/``, ``refs/``) whose
    path is not in ``keep``; nothing outside those folders, no folder followed through a
    link. Returns how many were removed."""
    removed = 0
    for folder in sorted(_LAYOUT):
        root = dest / folder
        if root.is_symlink() or not root.is_dir():
            continue
        for walk_root, dirs, files in os.walk(root):  # os.walk never follows links
            for name in files:
                path = Path(walk_root) / name
                if path.relative_to(dest).as_posix() not in keep:
                    path.unlink()
                    removed += 1
            dirs[:] = [d for d in dirs if not (Path(walk_root) / d).is_symlink()]
    return removed


def _bounded(
    replica: Replica,
    kind: ObjectKind,
    mh: bytes,
    size: int | None,
    progress: ProgressFn | None,
    most: int | None = None,
) -> Iterator[bytes]:
    """Stream an object, refusing more bytes than recorded (an endless stream stops here);
    ``most``: the bound of an object whose size no block records (a linked object). (Its
    path is formatted for a message only.)"""
    n = 0
    for chunk in replica.stream_object(kind, mh, size):
        n += len(chunk)
        if size is not None and n > size:
            raise IntegrityError(
                f"{replica.name}: {object_relpath(kind, mh)} is longer than the {size} bytes "
                "its block records"
            )
        if most is not None and n > most:
            raise IntegrityError(
                f"{replica.name}: {object_relpath(kind, mh)} is longer than the {most} bytes "
                "(sizeNaive) of the linkedObjects summary of the block that links it"
            )
        if progress is not None:
            progress(len(chunk))
        yield chunk
    if size is not None and n != size:
        raise IntegrityError(
            f"{replica.name}: {object_relpath(kind, mh)} has {n} bytes, its block records {size}"
        )


def pull_dataset(
    replica: Replica,
    dest: str | os.PathLike[str],
    *,
    parallel: int = 8,
    force: bool = False,
    progress: ProgressFn | None = None,
    on_total: Callable[[int], None] | None = None,
) -> PullResult:
    """Pull ``replica`` into the dataset directory ``dest`` (created if absent).

    ``on_total`` gets the bytes to fetch once the chain is read; ``progress`` each chunk.
    ``parallel`` fetch threads, at most :data:`~odfweb3.read.replica.LOCAL_READ_THREADS`
    from a replica that reads this machine's disk (:class:`~odfweb3.read.replica.LocalReads`).

    Raises:
        ConflictError: ``dest`` holds a head that is not in the replica's chain (unless
            ``force``), or another writer moved ``dest``'s head meanwhile.
        IntegrityError / HashMismatch / FormatError: the replica served bad data; nothing
            unverified was written and ``refs/head`` was not moved.
    """
    dest_path = Path(dest)
    # Nothing is created in DEST until the replica's chain has been read and checked.
    old_head = LocalStore.read_head(dest_path)
    if old_head is None:
        _check_not_foreign(dest_path)
    head = replica.head()
    if isinstance(replica, LocalReads) and replica.reads_local():
        parallel = min(parallel, LOCAL_READ_THREADS)
    with contextlib.ExitStack() as stack:
        prefetch = _prefetcher(replica, old_head, stack)
        return _pull(
            replica, dest_path, head, old_head, prefetch, force, parallel, progress, on_total
        )


PrefetchFn = Callable[[str, int], None]


def _prefetcher(
    replica: Replica, old_head: bytes | None, stack: contextlib.ExitStack
) -> PrefetchFn | None:
    """For a first pull from a replica that can fetch whole folders (a trustless gateway),
    the function that does; what it fetched is dropped at the end. An incremental pull
    needs a few objects of each folder: one by one."""
    if old_head is not None or not isinstance(replica, FolderPrefetch):
        return None
    stack.callback(replica.drop_prefetched)

    def prefetch(folder: str, most: int) -> None:
        replica.prefetch(folder, max_bytes=most)  # the reads that follow count the objects

    return prefetch


def _pull(
    replica: Replica,
    dest_path: Path,
    head: bytes,
    old_head: bytes | None,
    prefetch: PrefetchFn | None,
    force: bool,
    parallel: int,
    progress: ProgressFn | None,
    on_total: Callable[[int], None] | None,
) -> PullResult:
    """Steps 2 to 4 of the module docstring, ``head`` read."""
    if old_head is None:
        named, chain = _walk_first(replica, head)
        store = LocalStore(dest_path)
        with _one_pull_at_a_time(dest_path):
            return _fetch_and_place(
                replica,
                dest_path,
                store,
                head,
                None,
                named,
                chain,
                (),
                False,
                prefetch,
                parallel=parallel,
                progress=progress,
                on_total=on_total,
            )
    # Incremental (or --force): the few new blocks are held. Down to DEST's head, which is
    # not read again (walk_chain's stop_at): reached when the last new block names it, or
    # the replica's head is it.
    entries = list(walk_chain(replica.read_block, head, stop_at=old_head))
    reached_old = head == old_head or (
        bool(entries) and entries[-1].block.prev_block_hash == old_head
    )
    replaced = not reached_old
    if replaced and not force:
        theirs, ours = _seed_id(entries), _dest_id(dest_path, old_head)
        if theirs is not None and ours is not None and theirs != ours:
            raise ConflictError(
                f"{dest_path} holds another dataset {ours} (the replica {replica.name} is "
                f"{theirs}); pull into a new directory, or pass --force to replace it"
            )
        raise ConflictError(
            f"{dest_path}: its head {multihash_to_str(old_head)} is not in the chain of "
            f"{replica.name} (diverged); pull into a new directory, or pass --force"
        )
    if entries:
        # Every new block against every rule before anything is written: a whole chain
        # from its Seed (--force), or the new blocks from the state at DEST's head, read
        # back from DEST's own blocks only as far as that state needs.
        after = None
        if reached_old:
            try:
                after = chain_state(
                    walk_chain(DatasetReader(dest_path.resolve()), old_head), entries
                )
            except (IntegrityError, FormatError, NotFound) as exc:
                raise IntegrityError(
                    f"{dest_path}: its own chain cannot be read back ({exc}); run odfweb3 "
                    "validate on it, or pull into a new directory"
                ) from None
        violations = check_chain_rules(list(reversed(entries)), after=after)
        if violations:
            raise IntegrityError(f"{replica.name}: serves an invalid chain: {violations[0]}")
    below: tuple[str, ...] = ()
    if entries and reached_old:
        # the ObjectLink columns in force at DEST's head, for the new data files
        below = columns_at(walk_chain(DatasetReader(dest_path.resolve()), old_head))
    store = LocalStore(dest_path)
    with _one_pull_at_a_time(dest_path):
        return _fetch_and_place(
            replica,
            dest_path,
            store,
            head,
            old_head,
            ObjectList(iter_objects(entries)),
            lambda: entries,
            below,
            replaced,
            prefetch,
            parallel=parallel,
            progress=progress,
            on_total=on_total,
        )


ChainFn = Callable[[], Iterable[ChainEntry]]


def _walk_first(replica: Replica, head: bytes) -> tuple[ObjectList, ChainFn]:
    """A first pull's walk, holding no decoded block: every block checked as it is read
    (hash, sequence, Seed) and fed to the chain rules walking back
    (:class:`~odfweb3.odf.chain_rules.ChainRulesBackwards`, the verdict of
    :func:`check_chain_rules`); the objects the blocks name, blocks included, as
    :func:`iter_objects` yields them; and how to walk the chain again for the linked
    objects (the blocks read from the replica again), needed only when a schema declares
    ``ObjectLink`` columns.

    Raises:
        IntegrityError: the chain breaks a rule (the message names the first, found by
            a second walk); what the walk raises (HashMismatch, FormatError, ...).
    """
    rules = ChainRulesBackwards()
    links = [False]

    def fed() -> Iterator[ChainEntry]:
        for entry in walk_chain(replica.read_block, head):
            rules.feed(entry)
            event = entry.block.event
            if isinstance(event, SetDataSchema) and not links[0]:
                try:
                    links[0] = bool(link_columns(event))
                except FormatError:
                    links[0] = True  # the linked objects' walk reports it
            yield entry

    named = ObjectList(iter_objects(fed()))
    if not rules.finish():
        again = list(walk_chain(replica.read_block, head))
        violations = check_chain_rules(list(reversed(again)))
        first = violations[0] if violations else "it broke a rule, then served another chain"
        raise IntegrityError(f"{replica.name}: serves an invalid chain: {first}")

    def chain() -> Iterable[ChainEntry]:
        return walk_chain(replica.read_block, head) if links[0] else ()

    return named, chain


@contextlib.contextmanager
def _one_pull_at_a_time(dest: Path) -> Iterator[None]:
    """Hold ``DEST/.odfweb3/incoming.lock`` (``flock``, released when the process dies):
    two pulls into one directory would write and remove each other's staged files.

    Raises:
        ConflictError: another pull into ``dest`` holds it.
    """
    work = dest / WORK_DIR
    work.mkdir(exist_ok=True)
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(work / "incoming.lock", flags, 0o644)
    except OSError as exc:
        raise UsageError(f"{work / 'incoming.lock'}: cannot be opened ({exc.strerror})") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConflictError(
                f"{dest}: another pull into it is running; wait for it to end, then run "
                "this one again"
            ) from None
        yield
    finally:
        os.close(fd)


def _fetch_and_place(
    replica: Replica,
    dest_path: Path,
    store: LocalStore,
    head: bytes,
    old_head: bytes | None,
    named: ObjectList,
    chain: ChainFn,
    below: tuple[str, ...],
    replaced: bool,
    prefetch: PrefetchFn | None,
    *,
    parallel: int,
    progress: ProgressFn | None,
    on_total: Callable[[int], None] | None,
) -> PullResult:
    """Steps 3 and 4 of the module docstring, the replica's chain already checked:
    ``named`` its new blocks and the objects they name (:func:`iter_objects`, head
    first), ``chain`` walks those blocks again (for the linked objects)."""
    # What a pull keeps per object is an index into ``named`` (packed, an ObjectList, for a
    # first pull: 300,000 objects at 100,000 blocks), not a list of its objects again.
    count = named.object_count()
    # A first pull lists DEST's layout folders once (usually empty) instead of an lstat per
    # object; an incremental pull asks about its few new objects one by one.
    in_dest = _Listings(dest_path) if old_head is None else None

    def present(kind: ObjectKind, mh: bytes) -> bool:
        if in_dest is not None and not in_dest.may_hold(kind, mh):
            return False
        return store.has(kind, mh)  # a link or folder at the name is refused here

    # the objects to fetch, in the order named; then the new blocks, oldest first. One
    # pass over ``named`` (each access decodes a packed entry: 30,000 at 10,000 blocks)
    # also sums the bytes to fetch and counts what each layout folder will receive.
    # (Packed fields, not a DatasetObject an object: the items were a tenth of the work.)
    missing = array("I")
    new_blocks = array("I")
    to_fetch = blocks_bytes = 0
    per_folder: dict[str, int] = {}
    for i, (kind, mh, size) in enumerate(named.fields()):
        if kind == "block":
            blocks_bytes += size or 0
        if not present(kind, mh):
            if kind == "block":
                new_blocks.append(i)
            else:
                missing.append(i)
                to_fetch += size or 0
            folder = LAYOUT_DIRS[kind]
            per_folder[folder] = per_folder.get(folder, 0) + 1
    new_blocks.reverse()
    if on_total is not None:
        on_total(to_fetch)
    # Objects are staged in DEST/.odfweb3/incoming and moved into place only when all are
    # verified: a lying replica leaves DEST as it was; an interrupted pull resumes from the
    # staged objects. They are written at their staged names (no temp file: a staged file
    # counts only once hashed again or written whole here) without an fsync each, and made
    # durable together before the first rename (one syncfs): a name in the layout always
    # holds durable bytes, and refs/head moves last.
    staging_root = dest_path / WORK_DIR / "incoming"
    staging = LocalStore(staging_root, fsync=False, in_place=True)
    # the blocks were read from the replica to walk the chain: fetched too
    fetched_bytes = blocks_bytes
    # Verified and staged by an interrupted run: already present, not fetched now. Read
    # back and hashed again: a crash may have left a staged file short of its bytes. (The
    # staging area listed once: empty but after an interruption.)
    in_staging = _Listings(staging_root)

    def intact(kind: ObjectKind, mh: bytes) -> bool:
        return in_staging.may_hold(kind, mh) and staging.has_intact(kind, mh)

    staged = DigestMap()  # the hashes of the objects found staged
    # Nothing staged when this pull took the lock (a first run's): then what the staging
    # folders hold at the end is exactly what this pull staged, under its lock.
    fresh = not in_staging.holds_any()
    if not fresh:  # an interrupted run's
        for i in missing:
            mh = named.hash_at(i)
            if intact(named.kind_at(i), mh):
                staged.put(mh)
    staged_before = len(staged)
    if prefetch is not None and missing and not staged:
        # A first pull: each folder in one stream, bounded by what the blocks record it
        # holds (and a directory node's share per object); linked objects, of no recorded
        # size, beyond that bound are read one by one. A rerun after an interruption
        # fetches only the objects it did not stage, one by one.
        for folder in ("checkpoints", "data"):
            n = most = 0
            for kind, _, size in named.fields():
                if kind != "block" and LAYOUT_DIRS[kind] == folder:
                    n += 1
                    most += size or 0
            if n:
                prefetch(folder, most + 4096 * n + (1 << 20))

    # The first failed fetch stops the others (those queued return at once): an interrupted
    # pull stops fetching, and what it staged does not depend on thread timing.
    failed = threading.Event()

    def fetch(i: int) -> int:
        kind, mh = named.kind_at(i), named.hash_at(i)
        if kind == "block":
            # Read again (the walk kept none), checked against its hash by the store;
            # staged on the same threads as the objects (file creation is the kernel's).
            staging.put("block", mh, [replica.read_block(mh)])
            return 0  # counted as read by the walk
        if mh in staged:
            return 0
        size = named.size_at(i)
        staging.put(kind, mh, _bounded(replica, kind, mh, size, progress))
        return size or 0

    def fetch_linked(i: int) -> int:
        # No block records its size: bounded by its blocks' linkedObjects summaries
        # (sizeNaive), its hash checked by the staging store.
        kind, mh = new_linked.kind_at(i), new_linked.hash_at(i)
        if mh in staged:
            return 0  # verified and staged by an interrupted run
        bound = links.bound(mh)
        size = new_linked.size_at(i)
        staging.put(kind, mh, _bounded(replica, kind, mh, size, progress, bound))
        return staging.path_of(kind, mh).stat().st_size

    def open_data(obj: DatasetObject) -> BinaryIO:
        where = staging if staging.has(obj.kind, obj.hash) else store
        return open(where.path_of(obj.kind, obj.hash), "rb")

    # A linked object's size is known only once fetched (no block records it).
    links = ParquetLinks(open_data, lambda mh: None, replica.name)
    linked = ObjectList()
    new_linked = ObjectList()
    try:
        fetched_bytes += _fetch_all(fetch, [missing, new_blocks], parallel, failed)
        linked = ObjectList(o for o in iter_objects(chain(), links, below) if o.kind == "linked")
        new_linked = ObjectList(o for o in linked if not present(o.kind, o.hash))
        for obj in new_linked:
            if intact(obj.kind, obj.hash):
                staged_before += staged.put(obj.hash)
        if new_linked:
            per_folder["data"] = per_folder.get("data", 0) + len(new_linked)
        fetched_bytes += _fetch_all(fetch_linked, [range(len(new_linked))], parallel, failed)
    except (IntegrityError, FormatError):
        # The replica lied: drop what it served. (Transient failures keep the staged,
        # verified objects for the next run.)
        shutil.rmtree(staging_root, ignore_errors=True)
        raise

    def moves() -> Iterator[tuple[ObjectKind, bytes]]:
        """What goes into the layout (made again for each pass: 300,000 tuples were some
        30 MB): the objects, then the blocks."""
        for i in missing:
            yield named.kind_at(i), named.hash_at(i)
        for kind, mh, _ in new_linked.fields():
            yield kind, mh
        for i in new_blocks:
            yield "block", named.hash_at(i)

    sync_filesystem(staging_root, (staging.os_path(kind, mh) for kind, mh in moves()))
    _place(staging_root, dest_path, moves, per_folder, fresh=fresh)
    if count.blocks:
        store.set_ref("head", head, expected=old_head)
    shutil.rmtree(staging_root, ignore_errors=True)
    removed = 0
    if replaced:
        # --force: the new head is in place; what only the old chain referenced goes.
        keep = {HEAD_REF, *(o.path for o in named), *(o.path for o in linked)}
        removed = _prune(dest_path, keep)
    count += ObjectCount(linked=len(linked))
    # fetched now: the new blocks and the missing objects not found staged by an earlier run
    fetched = len(new_blocks) + len(missing) + len(new_linked) - staged_before
    return PullResult(
        dest=dest_path,
        head=head,
        previous_head=old_head,
        new_blocks=count.blocks,
        objects_fetched=fetched,
        bytes_fetched=fetched_bytes,
        objects_present=count.total - fetched,
        files_removed=removed,
        objects=count,
    )


class _Listings:
    """What a dataset directory's layout folders hold, each folder listed once when first
    asked (one ``scandir`` instead of an ``lstat`` per object): the multihashes its
    canonical names spell, in a :class:`DigestMap` (about 35 bytes a name, where a set of
    the name strings was some 110: a staging area left by an interrupted pull of 100,000
    blocks holds up to 300,000)."""

    def __init__(self, root: Path) -> None:
        self._root = str(root)
        self._names: dict[str, DigestMap] = {}

    def may_hold(self, kind: ObjectKind, mh: bytes) -> bool:
        """False when the folder holds nothing at the object's name (absent, or not listed
        as anything); True asks the store (which checks what the entry is)."""
        folder = LAYOUT_DIRS[kind]
        names = self._names.get(folder)
        if names is None:
            names = self._names[folder] = DigestMap()
            for name in _entries(f"{self._root}/{folder}"):
                try:
                    held = multihash_from_str(name)
                except FormatError:
                    continue  # not an object's name: never asked about
                if multihash_to_str(held) == name:
                    names.put(held)
        return mh in names

    def holds_any(self) -> bool:
        """Whether any layout folder holds an entry (each listed at most up to its first:
        an empty staging area, a first pull's, costs a few ``scandir`` calls)."""
        return any(next(_entries(f"{self._root}/{f}"), None) is not None for f in _LAYOUT)


def _entries(folder: str) -> Iterator[str]:
    try:
        with os.scandir(folder) as it:
            yield from (e.name for e in it)
    except (FileNotFoundError, NotADirectoryError):
        return


# The order a pull places its folders in: the objects, then the blocks that name them.
_PLACE_ORDER: tuple[str, ...] = ("data", "checkpoints", "blocks")


def _place(
    staging_root: Path,
    dest: Path,
    moves: Callable[[], Iterable[tuple[ObjectKind, bytes]]],
    counts: dict[str, int],
    *,
    fresh: bool = False,
) -> None:
    """Move the staged ``moves()`` (flushed) into ``dest``'s layout: objects first, then
    blocks, every rename made durable before the caller moves the head. ``counts``: how
    many of ``moves()`` go to each layout folder (counted by the caller as it listed
    them, instead of a pass over them here).

    A folder of the layout that ``dest`` holds empty (a first pull) gets the staged folder
    itself in one rename, when the staged folder holds as many regular files as it has
    moves (each of them staged and verified by this pull, so exactly them):
    30,000 renames of a 10,000-block pull were a sixth of its wall time on a loaded machine.
    Otherwise (an incremental pull, a rerun after an interruption between folders, anything
    else in a folder) each object is renamed on its own. ``fresh``: the staging area held
    nothing when this pull took its lock, so each staged folder holds exactly this pull's
    ``counts`` files and is not listed again to count them (ext4 lists a hashed directory
    by reading and sorting all of it: a tenth of a 10,000-block pull's wall time on a loaded
    machine).
    """
    synced: set[str] = set()
    for folder in _PLACE_ORDER:
        n = counts.get(folder)
        if not n:
            continue
        staged, target = f"{staging_root}/{folder}", f"{dest}/{folder}"
        if _swap_folder(staged, target, n, counted=fresh):
            synced.add(str(dest))
            continue
        for kind, mh in moves():
            if LAYOUT_DIRS[kind] == folder:
                name = multihash_to_str(mh)
                os.replace(f"{staged}/{name}", f"{target}/{name}")
        synced.add(target)
    sync_paths(sorted(synced))


def _swap_folder(staged: str, target: str, n: int, *, counted: bool = False) -> bool:
    """Rename ``staged`` over ``target`` when ``target`` is an empty directory and ``staged``
    holds ``n`` entries, all regular files; False (nothing done) otherwise.

    The count stands for the names: the caller staged (or found staged and hashed again)
    each of its ``n`` distinct objects in ``staged`` in this pull, under the pull's lock,
    so ``n`` regular files there are exactly those; anything else in it (a leftover of
    another pull) makes more. ``counted``: the caller knows ``staged`` holds exactly them
    (it was empty when the pull took its lock), and it is not listed.
    """
    if next(_entries(target), None) is not None:
        return False
    if not counted and _regular_files(staged) != n:
        return False
    try:
        os.replace(staged, target)  # rename(2) over an empty directory: atomic
    except OSError as exc:
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
            return False  # something was written into it meanwhile: one by one
        raise local_io_error(exc, Path(target)) from None
    return True


def _regular_files(folder: str) -> int:
    """How many entries ``folder`` holds, all regular files; -1 if any is not one (or it
    cannot be listed)."""
    held = 0
    try:
        with os.scandir(folder) as it:
            for e in it:
                if not e.is_file(follow_symlinks=False):
                    return -1
                held += 1
    except OSError:
        return -1
    return held


def _fetch_all(
    fetch: Callable[[int], int],
    queues: list[Sequence[int]],
    parallel: int,
    failed: threading.Event,
) -> int:
    """``fetch`` each index of ``queues``, one after the other, on ``parallel`` threads; the
    sum of what it returns.

    The first failure sets ``failed`` (the other threads take no new object), the threads
    finish the object in hand and the failure is raised. Ctrl-C (KeyboardInterrupt in the
    calling thread) sets ``failed`` and is raised at once, without waiting for a fetch in
    hand (a stalled request would hold it until its read timeout): the threads are daemons,
    so a CLI that then exits is not held by them either, and what they were writing is a
    temp file of the staging area, as after a kill (the store renames an object into place
    only once its hash matches).
    """
    total_n = sum(len(q) for q in queues)
    if not total_n:
        return 0
    queue = itertools.chain.from_iterable(queues)
    lock = threading.Lock()
    errors: list[BaseException] = []
    total = [0]

    def work() -> None:
        while not failed.is_set():
            with lock:
                i = next(queue, None)
            if i is None:
                return
            try:
                n = fetch(i)
            except BaseException as exc:
                with lock:
                    errors.append(exc)
                failed.set()
                return
            with lock:
                total[0] += n

    threads = [
        threading.Thread(target=work, name=f"pull-{i}", daemon=True)
        for i in range(max(1, min(parallel, total_n)))
    ]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    except BaseException:
        failed.set()
        raise
    if errors:
        raise errors[0]
    return total[0]


def _dest_id(dest: Path, head: bytes) -> str | None:
    """The ``did:odf`` of the dataset in ``dest`` (None: its chain cannot be read)."""
    try:
        return _seed_id(walk_chain(DatasetReader(dest.resolve()), head))
    except (IntegrityError, FormatError, NotFound):
        return None
