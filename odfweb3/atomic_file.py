"""Replacing one small local file atomically: the one way odfweb3 writes state and records.

``publish.json``, publish state, IPNS record files, the offline index, the batch
queue, the IPNS replay memory: each is written to a temp file in the same directory,
fsynced and renamed over the old one, then the directory is fsynced (the rename survives a
crash), so a reader sees the old file or the new one, never half of either.
Before writing, the destination must be absent or a regular file: a directory, a
link or a FIFO in its place is one :class:`~odfweb3.errors.UsageError` line (a rename
onto a directory used to escape as ``IsADirectoryError``), and a full or read-only
disk is one :class:`~odfweb3.errors.LocalIOError` line (issue 16 item 11).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from odfweb3.errors import LocalIOError, UsageError

__all__ = ["write_file_atomic"]


def write_file_atomic(path: Path, data: bytes, *, public: bool = False) -> None:
    """Write ``data`` to ``path`` through a temp file, fsync and rename.

    Args:
        path: the file to create or replace (its directory is created).
        data: the whole new content.
        public: mode per the umask (a published artifact) instead of mkstemp's 0600.

    Raises:
        UsageError: ``path`` exists and is not a regular file.
        LocalIOError: the disk is full, read-only, or denies the write.
    """
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
    tmp = ""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        if public:
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = ""
        _fsync_dir(path.parent)
    except OSError as exc:
        if tmp:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        raise LocalIOError(
            f"{path}: cannot write ({exc.strerror or exc}); free space or fix permissions "
            "and run again: the previous file is unchanged"
        ) from None
    except BaseException:
        if tmp:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        raise


def _fsync_dir(directory: Path) -> None:
    """Make the rename itself durable (POSIX: fsync the directory holding the entry)."""
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
