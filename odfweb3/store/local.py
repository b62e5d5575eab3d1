"""A dataset directory on local disk as a store: objects verified before they are visible,
``refs/head`` set by compare-and-set (``pull`` writes here).

The directory is a *destination* (``pull DEST``): odfweb3 follows no symbolic link
inside it and writes only regular files under real directories. A
link, or a directory where a file belongs (``refs/head``, an object), is refused with
one line (:class:`~odfweb3.errors.UsageError`) before anything is read or written;
DEST itself may be a link the user chose, but not a regular file.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import cast

from odfweb3.atomic_file import write_chunks_atomic
from odfweb3.errors import ConflictError, FormatError, HashMismatch, NotFound, UsageError
from odfweb3.odf.layout import (
    LAYOUT_DIRS,
    DatasetReader,
    DatasetWriter,
    ObjectKind,
    local_io_error,
    object_relpath,
)
from odfweb3.odf.multihash import (
    multihash_from_str,
    multihash_to_str,
    new_hasher,
    split_multihash,
    verify_bytes,
)

__all__ = ["WORK_DIR", "LocalStore", "check_destination", "sync_filesystem", "sync_paths"]

# odfweb3's scratch space inside a dataset directory (lock file, staged downloads); never
# part of the ODF layout, never published.
WORK_DIR = ".odfweb3"
_MAX_REF_SIZE = 4096

# What odfweb3 may write inside a destination, and what each must be when present.
_DIRS = (*dict.fromkeys(LAYOUT_DIRS.values()), "refs", WORK_DIR, f"{WORK_DIR}/incoming")
_FILES = ("refs/head", f"{WORK_DIR}/lock", f"{WORK_DIR}/incoming.lock")


def _unusable(root: Path, rel: str, what: str) -> UsageError:
    return UsageError(
        f"{root}: {rel} is {what}; odfweb3 writes only real files and directories inside "
        "a destination: remove it, or choose another directory"
    )


def _kind(st: os.stat_result) -> str:
    if stat.S_ISLNK(st.st_mode):
        return "a symbolic link"
    if stat.S_ISDIR(st.st_mode):
        return "a directory"
    if stat.S_ISREG(st.st_mode):
        return "a regular file"
    return "a special file"


def _lstat(path: str | Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None  # a parent is a file: reported for the parent


def check_destination(root: str | os.PathLike[str]) -> None:
    """Refuse a destination odfweb3 cannot write safely, touching nothing.

    DEST (absent is fine) must be a directory; inside it, the layout folders, the
    work directory and its staging area must be real directories and ``refs/head`` and
    the lock file regular files, when present. Objects are checked one by one as they
    are looked up (:meth:`LocalStore.has`).

    Raises:
        UsageError: DEST is not a directory, or something inside it is a link or the
            wrong kind of file.
    """
    dest = Path(root)
    try:
        st = os.stat(dest)  # DEST itself may be a link the user chose
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UsageError(f"{dest}: cannot be used as a destination ({exc.strerror})") from None
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{dest}: is {_kind(st)}, not a directory; give a dataset directory")
    for rel in _DIRS:
        sub = _lstat(dest / rel)
        if sub is not None and not stat.S_ISDIR(sub.st_mode):
            raise _unusable(dest, rel, _kind(sub))
    for rel in _FILES:
        sub = _lstat(dest / rel)
        if sub is not None and not stat.S_ISREG(sub.st_mode):
            raise _unusable(dest, rel, _kind(sub))


def sync_paths(paths: Iterable[str | Path], *, workers: int = 16) -> None:
    """Make files (and directories) durable, many at once: written without an fsync each,
    they are fsynced here together, ``workers`` at a time.

    git's ``core.fsyncMethod=batch`` idea: one fsync per file written costs a journal
    commit each (30,000 objects: 40 s of a 10,000-block pull), while concurrent fsyncs on
    a journalling file system share their commits (measured on ext4: 5,000 files, 22.8 s
    one by one, 1.5 s 16 at a time after writing). The caller renames into place only
    after this returns, so a name in the layout always holds durable bytes.

    Raises:
        LocalIOError: a flush failed (the disk is full, or the device failed).
    """

    def one(path: str | Path) -> None:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    todo = list(paths)
    try:
        if len(todo) <= 1 or workers <= 1:
            for path in todo:
                one(path)
            return
        with ThreadPoolExecutor(max_workers=min(workers, len(todo))) as pool:
            for _ in pool.map(one, todo):
                pass
    except OSError as exc:
        raise local_io_error(exc, Path(exc.filename or ".")) from None


SyncFs = Callable[[int], int]


@functools.cache
def _syncfs() -> SyncFs | None:
    """Linux's ``syncfs(2)`` from the C library (Python's ``os`` has none), or None."""
    import ctypes  # here: loaded by the commands that flush many files only

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.syncfs
    except (OSError, AttributeError, TypeError):
        return None
    fn.argtypes = [ctypes.c_int]
    fn.restype = ctypes.c_int
    return cast(SyncFs, fn)


def sync_filesystem(
    folder: str | Path, paths: Iterable[str | Path], *, syncfs: SyncFs | None = None
) -> None:
    """Make ``paths`` (files written under ``folder`` without an fsync each) durable.

    Where Linux's ``syncfs(2)`` exists this is one call: it writes back every dirty file of
    ``folder``'s file system and commits its journal once, and since Linux 5.8 reports a
    write-back error of any of them. One fsync per file costs a journal commit each
    (30,000 objects at 10,000 blocks: 9 s of fsyncs, 16 at a time, against validate
    --deep's 1.5 s), so a pull flushes its staged objects this way (git's
    ``core.fsyncMethod=batch`` has the same aim; syncfs needs no file-system-specific
    ordering argument). The price is shared: the call also waits for other processes'
    dirty data on that file system. Elsewhere (no syncfs), :func:`sync_paths`.

    Raises:
        LocalIOError: the flush failed (the disk is full, or the device failed).
    """
    fn = syncfs if syncfs is not None else _syncfs()
    if fn is None:
        sync_paths(paths)
        return
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise local_io_error(exc, Path(folder)) from None
    try:
        if fn(fd) != 0:
            import ctypes

            err = ctypes.get_errno()
            raise local_io_error(OSError(err, os.strerror(err)), Path(folder))
    finally:
        os.close(fd)


class LocalStore:
    """The ODF directory layout as a store: objects written atomically, refs last.

    ``put`` streams into a temp file while hashing and renames it into place only
    when the hash matches, so a reader never sees a partial or wrong object.

    ``in_place``: a staging area's store (``pull``'s), whose files count only once hashed
    again (:meth:`has_intact`) or once written whole by this process: ``put`` writes each
    object at its own name, without a temp file and a rename (a pull renames 30,000
    objects once into the layout, not twice), and removes it if its hash does not match.
    A file cut short by a crash is then found out by :meth:`has_intact`.
    """

    def __init__(
        self, root: str | os.PathLike[str], *, fsync: bool = True, in_place: bool = False
    ) -> None:
        self.root = Path(root)
        self._root_s = str(self.root)
        self._fsync = fsync
        self._in_place = in_place
        check_destination(self.root)
        self._writer = DatasetWriter(self.root, fsync=fsync)
        self._reader = DatasetReader(self.root.resolve())
        check_destination(self.root)  # the folders just made, in case of a race

    def has(self, kind: ObjectKind, mh: bytes) -> bool:
        """Whether the object is stored: a regular file (a link or a folder is refused).

        Raises:
            UsageError: the object's path is a link, a directory or a special file.
        """
        rel = object_relpath(kind, mh)
        st = _lstat(f"{self._root_s}/{rel}")
        if st is None:
            return False
        if not stat.S_ISREG(st.st_mode):
            raise _unusable(self.root, rel, _kind(st))
        return True

    def has_intact(self, kind: ObjectKind, mh: bytes) -> bool:
        """Whether the object is stored and its bytes hash to ``mh``; a file that does not
        (left by a crash before its bytes reached the disk) is removed.

        Raises:
            UsageError: the object's path is a link, a directory or a special file.
        """
        if not self.has(kind, mh):
            return False
        code, _ = split_multihash(mh)
        hasher = new_hasher(code)
        with open(self.root / object_relpath(kind, mh), "rb") as f:
            while chunk := f.read(1 << 20):
                hasher.update(chunk)
        if bytes((mh[0], len(hasher.digest()))) + hasher.digest() == mh:
            return True
        (self.root / object_relpath(kind, mh)).unlink()
        return False

    def get(self, kind: ObjectKind, mh: bytes) -> bytes:
        data = self._reader.path_of(kind, mh).read_bytes()
        verify_bytes(data, mh, str(self.root / object_relpath(kind, mh)))
        return data

    def put(self, kind: ObjectKind, mh: bytes, chunks: Iterable[bytes]) -> None:
        """Store an object, streamed, hashed and renamed into place when the hash matches;
        fsynced first unless the store was made with ``fsync=False`` (then the caller makes
        it durable with :func:`sync_paths` before anything depends on it).

        Raises:
            HashMismatch: the bytes do not hash to ``mh`` (nothing is kept).
            LocalIOError: the disk is full or read-only.
        """
        code, _ = split_multihash(mh)
        hasher = new_hasher(code)
        rel = object_relpath(kind, mh)
        if not self._in_place:
            self._put_atomic(rel, mh, hasher, chunks)
            return

        # Paths as text: a pull stores 30,000 objects at 10,000 blocks, and pathlib's joins
        # were an eighth of its time.
        final = f"{self._root_s}/{rel}"
        placed = False
        try:
            # O_EXCL | O_NOFOLLOW: a name planted meanwhile is never written through.
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                fd = os.open(final, flags, 0o644)
            except FileExistsError:
                # A leftover of an interrupted run (unlinked, never followed if a link):
                # asked only then, not with an lstat before every one of 30,000 writes.
                os.unlink(final)
                fd = os.open(final, flags, 0o644)
            try:
                # os.write, not a buffered file object: most objects are one chunk of a
                # few KiB, and a pull writes 30,000 of them
                for chunk in chunks:
                    hasher.update(chunk)
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(fd, view) :]
                if self._fsync:
                    os.fsync(fd)
            finally:
                os.close(fd)
            digest = hasher.digest()  # once: each call finishes a copy of the hash state
            if digest != mh[2:]:  # split_multihash checked mh's code and 32-byte length
                actual = bytes((mh[0], len(digest))) + digest
                raise HashMismatch(multihash_to_str(mh), multihash_to_str(actual), rel)
            placed = True
        except OSError as exc:
            raise local_io_error(exc, Path(final).parent) from None
        finally:
            if not placed:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(final)

    def _put_atomic(
        self, rel: str, mh: bytes, hasher: hashlib._Hash, chunks: Iterable[bytes]
    ) -> None:
        """``put`` into the layout itself: through a temp file (atomic_file) renamed into
        place only once the bytes hash to ``mh``."""

        def checked() -> Iterator[bytes]:
            for chunk in chunks:
                hasher.update(chunk)
                yield chunk
            actual = bytes((mh[0], len(hasher.digest()))) + hasher.digest()
            if actual != mh:
                raise HashMismatch(multihash_to_str(mh), multihash_to_str(actual), rel)

        dest = self.root / rel
        # public: mode per the umask, as the staged objects a pull moves into the layout
        write_chunks_atomic(
            dest.parent, checked(), lambda: dest.name, public=True, durable=self._fsync
        )

    def list(self, kind: ObjectKind) -> Iterator[bytes]:
        return self._reader.iter_stored(kind)

    def path_of(self, kind: ObjectKind, mh: bytes) -> Path:
        """Where an object lives (whether or not it exists)."""
        return self.root / object_relpath(kind, mh)

    def os_path(self, kind: ObjectKind, mh: bytes) -> str:
        """:meth:`path_of` as text, for the system calls of many objects."""
        return f"{self._root_s}/{object_relpath(kind, mh)}"

    @staticmethod
    def _read_ref(path: Path) -> bytes | None:
        st = _lstat(path)
        if st is None:
            return None
        if not stat.S_ISREG(st.st_mode):
            raise _unusable(path.parent.parent, f"refs/{path.name}", _kind(st))
        # A ref is a short hash: read a bounded prefix, whatever the file's size.
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise UsageError(f"{path}: cannot be read ({exc.strerror})") from None
        try:
            raw = os.read(fd, _MAX_REF_SIZE + 1)
        finally:
            os.close(fd)
        if len(raw) > _MAX_REF_SIZE:
            raise FormatError(f"{path}: larger than {_MAX_REF_SIZE} bytes, not a hash")
        try:
            text = raw.decode("ascii")
        except UnicodeDecodeError:
            raise FormatError(f"{path}: not a multibase hash") from None
        if text != text.strip():
            # kamu reads a ref as is (no trimming): whitespace makes it unreadable there
            raise FormatError(
                f"{path}: holds whitespace around the hash (e.g. a trailing newline), which "
                f"kamu cannot read; write the hash alone: printf %s HASH > {path}"
            )
        try:
            return multihash_from_str(text)
        except FormatError:
            raise FormatError(f"{path}: not a multibase hash") from None

    @classmethod
    def read_head(cls, root: Path) -> bytes | None:
        """``refs/head`` of the dataset at ``root``, without creating anything there.

        Raises:
            UsageError: ``root`` is not usable as a destination (see
                :func:`check_destination`).
            FormatError: ``refs/head`` does not hold a hash.
        """
        check_destination(root)
        return cls._read_ref(root / "refs" / "head")

    def get_ref(self, name: str) -> bytes | None:
        return self._read_ref(self.root / "refs" / name)

    def set_ref(self, name: str, mh: bytes, *, expected: bytes | None) -> None:
        if name != "head":
            raise NotFound(f"ref {name!r}: only refs/head is supported")
        work = self.root / WORK_DIR
        work.mkdir(exist_ok=True)
        with open(work / "lock", "a") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            current = self.get_ref(name)
            if current != expected:
                have = multihash_to_str(current) if current else "nothing"
                raise ConflictError(
                    f"{self.root}: refs/head now points at {have}; another writer changed it"
                )
            self._writer.set_head(mh)
