"""Replacing one small local file atomically: the one way odfweb3 writes state and records.

``publish.json``, publish state, IPNS record files, the offline index, the batch
queue, the IPNS replay memory: each is written to a temp file in the same directory,
fsynced and renamed over the old one, then the directory is fsynced (the rename survives a
crash), so a reader sees the old file or the new one, never half of either.
Before writing, the destination must be absent or a regular file: a directory, a
link or a FIFO in its place is one :class:`~odfweb3.errors.UsageError` line (a rename
onto a directory used to escape as ``IsADirectoryError``), and a full or read-only
disk is one :class:`~odfweb3.errors.LocalIOError` line.

Temp files never look like results: every one is ``.tmp-PID-XXXX[.car|.bundle].partial``
(:func:`open_partial`), so no ``*.car``, ``*.bundle``, ``*.json`` or ``*.pack`` glob of a
user (``ipfs dag import out/*.car``) reads half a file, and its writer holds an exclusive
``flock`` on it while writing: :func:`remove_partials` removes only the temp files no live
process holds (a killed writer's lock is gone with it), so the next run clears what an
interrupted one left without touching a concurrent writer's. An empty one may belong to a
writer between creating it and locking it: it stays while the process named by PID lives.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Final

from odfweb3.errors import ConflictError, LocalIOError, UsageError

__all__ = [
    "PARTIAL_SUFFIX",
    "TEMP_PREFIX",
    "PartialFile",
    "fsync_dir",
    "open_atomic",
    "open_partial",
    "remove_partials",
    "write_chunks_atomic",
    "write_file_atomic",
    "write_secret_atomic",
]

TEMP_PREFIX: Final = ".tmp-"
PARTIAL_SUFFIX: Final = ".partial"
# Temp names of versions before the .partial suffix (a killed one left them behind).
_LEGACY_SUFFIXES: Final = (".car", ".bundle")
# An empty temp file younger than this may be one whose writer has created it and not yet
# taken its lock (mkstemp, then flock): left alone while the process its name holds lives
# (a name without one, from an earlier version: left alone); empty, it matches no glob anyway.
_FRESH_EMPTY: Final = 60.0


def open_partial(directory: Path, suffix: str = "") -> tuple[int, str]:
    """Create ``directory/.tmp-PID-XXXX<suffix>.partial`` (mode 0600, as mkstemp; the
    directory too, when missing), holding an exclusive ``flock`` on it until the
    descriptor is closed: the mark of a live writer.
    PID (this process) tells :func:`remove_partials` whose an empty, unlocked one is.

    Returns:
        The open descriptor and the temp file's path.
    """
    prefix, suffix = f"{TEMP_PREFIX}{os.getpid()}-", suffix + PARTIAL_SUFFIX
    try:
        fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=directory)
    except FileNotFoundError:
        # made only when missing: a stat and a mkdir before each of 30,000 objects cost
        # more than the write (the common case: the folder is there)
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=directory)
    # A file system without flock: the file is still ours, only unmarked.
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd, tmp


def _is_temp_name(name: str) -> bool:
    if not name.startswith(TEMP_PREFIX):
        return False
    return name.endswith(PARTIAL_SUFFIX) or name.endswith(_LEGACY_SUFFIXES)


def remove_partials(directory: Path) -> list[str]:
    """Remove the temp files (:func:`open_partial`) in ``directory`` that no live process
    is writing: an interrupted publish's half CAR or bundle. Never follows a link; a file
    it cannot open or lock is left. Returns the names removed."""
    removed: list[str] = []
    try:
        names = [n for n in os.listdir(directory) if _is_temp_name(n)]
    except OSError:
        return removed
    for name in names:
        path = directory / name
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                continue
            if (
                st.st_size == 0
                and time.time() - st.st_mtime < _FRESH_EMPTY
                and _writer_may_live(name)
            ):
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # a live writer holds it
            now = os.lstat(path)
            if (now.st_ino, now.st_dev) == (st.st_ino, st.st_dev):
                os.unlink(path)
                removed.append(name)
        except OSError:
            continue
        finally:
            os.close(fd)
    return removed


def _writer_may_live(name: str) -> bool:
    """False when the temp file's name holds the pid of a process that is gone (a killed
    writer: the next run, seconds later, removes its empty file too)."""
    head = name[len(TEMP_PREFIX) :].split("-", 1)[0]
    if not head.isdigit() or not 0 < int(head) < 2**31:
        return True  # no pid (an earlier version's name): cannot tell
    try:
        os.kill(int(head), 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # alive, another user's
    return True


def write_file_atomic(
    path: Path, data: bytes, *, public: bool = False, durable: bool = True
) -> None:
    """Write ``data`` to ``path`` through a temp file, fsync and rename.

    Args:
        path: the file to create or replace (its directory is created).
        data: the whole new content.
        public: mode per the umask (a published artifact) instead of mkstemp's 0600.
        durable: fsync the file and its directory (off: the caller makes many files
            durable at once, e.g. one ``sync``, before anything names them).

    Raises:
        UsageError: ``path`` exists and is not a regular file.
        LocalIOError: the disk is full, read-only, or denies the write.
    """
    _check_regular(path)
    _write(path.parent, (data,), lambda: path.name, public, where=path, durable=durable)


def write_secret_atomic(path: Path, data: bytes, *, replace: bool) -> None:
    """Write a key, wallet or token file: mode 0600 from its creation, fsync, then a rename
    (``replace``) or a hard link that fails when ``path`` exists (never replaced), so the
    secret is never readable by others, even for a moment, and never half written.

    Raises:
        ConflictError: ``path`` exists and ``replace`` is false.
        UsageError / LocalIOError: as :func:`write_file_atomic`.
    """
    _check_regular(path)
    _write(path.parent, (data,), lambda: path.name, False, where=path, replace=replace)


def write_chunks_atomic(
    directory: Path,
    chunks: Iterable[bytes],
    name: Callable[[], str],
    *,
    public: bool = False,
    durable: bool = True,
) -> Path:
    """Stream ``chunks`` into a new file of ``directory`` (temp file, fsync, rename), named
    by ``name()``, asked once the last chunk is written (a name derived from the content,
    e.g. its hash, without holding the content in memory). ``durable``: as
    :func:`write_file_atomic`.

    Returns:
        The file written.

    Raises:
        UsageError / LocalIOError: as :func:`write_file_atomic`.
    """
    return _write(directory, chunks, name, public, durable=durable)


def _check_regular(path: Path | str) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise LocalIOError(f"{path}: cannot be checked ({exc.strerror})") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        what = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise UsageError(
            f"{path}: is {what}; odfweb3 only replaces regular files there: move it away"
        )


class PartialFile:
    """A new file being written in ``directory`` under a temp name (:func:`open_partial`),
    made visible by :meth:`commit`; the streaming form of the atomic writer (CARs and
    bundles are written by writers that want a file, not a list of chunks)."""

    def __init__(self, directory: Path, suffix: str, public: bool) -> None:
        fd, self.tmp = open_partial(directory, suffix)
        self.directory = directory
        self.committed = False
        try:
            if public:
                # mkstemp creates 0600; a published artifact honours the umask instead.
                umask = os.umask(0)
                os.umask(umask)
                os.fchmod(fd, 0o666 & ~umask)
            self.file = os.fdopen(fd, "w+b")
        except BaseException:
            os.close(fd)
            self.discard()
            raise

    def commit(
        self, name: str, *, replace: bool = True, keep_existing: bool = False, durable: bool = True
    ) -> bool:
        """Flush, fsync and rename the file to ``directory/name``, then fsync the directory.

        Args:
            name: the file's name.
            replace: False: a hard link that fails when ``name`` exists (never replaced).
            keep_existing: a file already there is kept and ours dropped (content-named
                files: the same name holds the same bytes).
            durable: False: neither fsync (the caller makes the files it wrote durable
                together, before anything depends on them).

        Returns:
            False when ``keep_existing`` kept the file already there.

        Raises:
            ConflictError: ``name`` exists and ``replace`` is false.
            UsageError: ``name`` is not a regular file.
        """
        self.file.flush()
        if durable:
            os.fsync(self.file.fileno())
        self.file.close()
        path = os.path.join(self.directory, name)  # text: no pathlib parse per object
        _check_regular(path)
        if keep_existing and os.path.exists(path):
            self.discard()
            return False
        if replace:
            os.replace(self.tmp, path)
        else:
            try:
                os.link(self.tmp, path)  # fails instead of replacing
            except FileExistsError:
                raise ConflictError(f"{path} already exists; it is never replaced") from None
            os.unlink(self.tmp)
        self.committed = True
        if durable:
            fsync_dir(self.directory)
        return True

    def discard(self) -> None:
        """Close and remove the temp file (nothing was made visible)."""
        with contextlib.suppress(AttributeError):
            self.file.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.tmp)


@contextlib.contextmanager
def open_atomic(
    directory: Path, *, suffix: str = "", public: bool = False
) -> Iterator[PartialFile]:
    """A :class:`PartialFile` in ``directory`` (created), removed on leaving unless
    committed: an error or an interruption leaves no half file under a result's name.

    ``suffix`` goes before ``.partial`` (``.car``, ``.bundle``: what it will be).
    """
    out = PartialFile(directory, suffix, public)
    try:
        yield out
    finally:
        if not out.committed:
            out.discard()


def _write(
    directory: Path,
    chunks: Iterable[bytes],
    name: Callable[[], str],
    public: bool,
    where: Path | None = None,
    replace: bool = True,
    durable: bool = True,
) -> Path:
    path = where or directory
    try:
        with open_atomic(directory, public=public) as out:
            for chunk in chunks:
                out.file.write(chunk)
            path = directory / name()
            out.commit(path.name, replace=replace, durable=durable)
    except OSError as exc:
        raise LocalIOError(
            f"{path}: cannot write ({exc.strerror or exc}); free space or fix permissions "
            "and run again: the previous file is unchanged"
        ) from None
    return path


def fsync_dir(directory: Path) -> None:
    """Make a rename itself durable (POSIX: fsync the directory holding the entry)."""
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
