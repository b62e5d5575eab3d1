"""The ODF dataset directory layout: reading it safely, writing it atomically.

::

    {dataset}/
      blocks/{block-hash}          one Manifest-wrapped MetadataBlock per file
      refs/head                    text: multibase hash of the last block
      data/{physical-hash}         data part files (Parquet), and linked objects
                                   (ODF RFC-017: named by a data file's ObjectLink column)
      checkpoints/{physical-hash}  checkpoint files (opaque bytes)

kamu workspace directories (``.kamu/datasets/<name>/``) also hold ``info/`` and
``config``: they are accepted and ignored, and never published.

:class:`DatasetReader` never modifies the directory. Every path it opens must
resolve inside the dataset (a symlink pointing outside is refused).
:class:`DatasetWriter` writes every object through a temp file + fsync + rename,
and ``refs/head`` last, so a reader never sees a head naming an absent object.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final, Literal

from odfweb3.atomic_file import write_chunks_atomic, write_file_atomic
from odfweb3.errors import FormatError, LocalIOError, NotFound
from odfweb3.odf.multihash import SHA3_256, multihash_from_str, multihash_to_str

__all__ = [
    "LAYOUT_DIRS",
    "MAX_BLOCK_SIZE",
    "DatasetReader",
    "DatasetWriter",
    "ObjectKind",
    "local_io_error",
    "object_relpath",
]

# "linked": a linked object (ODF RFC-017), named by a data file's ObjectLink column, not by
# a block; it lives in data/ beside the data files.
ObjectKind = Literal["block", "data", "checkpoint", "linked"]

LAYOUT_DIRS: Final[dict[ObjectKind, str]] = {
    "block": "blocks",
    "data": "data",
    "checkpoint": "checkpoints",
    "linked": "data",
}
HEAD_REF: Final = "refs/head"
# A metadata block is a few KiB; anything far larger is not a block. Bounds reads
# of hostile input.
MAX_BLOCK_SIZE: Final = 16 << 20
_MAX_REF_SIZE: Final = 4096


def object_relpath(kind: ObjectKind, mh: bytes) -> str:
    """Path of an object inside the dataset, e.g. ``blocks/f1620…``."""
    return f"{LAYOUT_DIRS[kind]}/{multihash_to_str(mh)}"


@dataclass(frozen=True)
class DatasetReader:
    """Read-only view of a dataset directory.

    Use :meth:`open`, which checks that the directory looks like a dataset.
    """

    root: Path

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> DatasetReader:
        """Open ``path`` as a dataset.

        Raises:
            NotFound: the path does not exist, or is not an ODF dataset directory.
        """
        root = Path(path)
        if not root.is_dir():
            raise NotFound(f"{root}: no such dataset directory")
        if not (root / "refs").is_dir() and not (root / "blocks").is_dir():
            raise NotFound(
                f"{root}: not an ODF dataset (no refs/ or blocks/); "
                "point at the dataset directory itself, e.g. .kamu/datasets/<name>"
            )
        return cls(root.resolve())

    def _safe(self, rel: str) -> Path:
        """Resolve ``rel`` inside the dataset, refusing links that lead outside."""
        rel_dir, _, name = rel.rpartition("/")
        if name not in ("", ".", "..") and self._is_real_dir(rel_dir):
            # Fast path: real directories and a regular file (not a link) are their own
            # real path, inside the (resolved) root.
            plain = f"{self._root_str}/{rel}"
            with contextlib.suppress(OSError):
                if stat.S_ISREG(os.lstat(plain).st_mode):
                    return Path(plain)
        path = self.root / rel
        try:
            real = path.resolve(strict=True)
        except FileNotFoundError:
            raise NotFound(f"{self.root}: {rel} is missing") from None
        except OSError as exc:
            raise NotFound(f"{self.root}: {rel} cannot be read ({exc.strerror})") from None
        if real != self.root and self.root not in real.parents:
            raise FormatError(
                f"{self.root}: {rel} is a symlink pointing outside the dataset; "
                "replace it with the file itself"
            )
        if not real.is_file():
            raise FormatError(f"{self.root}: {rel} is not a regular file")
        return real

    @functools.cached_property
    def _root_str(self) -> str:
        return str(self.root)

    @functools.cached_property
    def _real_dirs(self) -> set[str]:
        return set()

    def _is_real_dir(self, rel_dir: str) -> bool:
        """Whether the root and every component of ``rel_dir`` are directories, not links.

        Checked with ``lstat`` once per directory and reader (the chain walk opens
        every block, deep validation every data file: syscalls dominate).
        """
        if rel_dir in self._real_dirs:
            return True
        parts = rel_dir.split("/") if rel_dir else []
        if any(p in ("", ".", "..") for p in parts):
            return False
        path = self._root_str
        try:
            for part in ("", *parts):
                path = f"{path}/{part}" if part else path
                if not stat.S_ISDIR(os.lstat(path).st_mode):
                    return False
        except OSError:
            return False
        self._real_dirs.add(rel_dir)
        return True

    def open_fd(self, kind: ObjectKind, mh: bytes) -> tuple[int, os.stat_result]:
        """Open an object read-only: (OS file descriptor, its ``fstat``); the caller closes it.

        Same rules as :meth:`path_of` (inside the dataset, a regular file), in fewer
        system calls: the file is opened with ``O_NOFOLLOW`` under directories known
        to be real, and anything else (a symlink, a missing file) takes the full
        ``resolve`` check.

        Raises:
            NotFound: the object is absent.
            FormatError: it is a symlink leading outside, or not a regular file.
        """
        return self._open_rel(object_relpath(kind, mh))

    def _open_rel(self, rel: str) -> tuple[int, os.stat_result]:
        rel_dir, _, name = rel.rpartition("/")
        if name not in ("", ".", "..") and self._is_real_dir(rel_dir):
            # O_NONBLOCK: opening a FIFO planted in the layout must not hang.
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
            try:
                fd = os.open(f"{self._root_str}/{rel}", flags)
            except OSError:
                fd = -1
            if fd >= 0:
                try:
                    st = os.fstat(fd)
                except OSError:
                    st = None
                if st is not None and stat.S_ISREG(st.st_mode):
                    return fd, st
                os.close(fd)
        path = self._safe(rel)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise FormatError(f"{self.root}: {rel} is not a regular file")
        except BaseException:
            os.close(fd)
            raise
        return fd, st

    def head(self) -> bytes:
        """The head block hash from ``refs/head``.

        Raises:
            NotFound: no ``refs/head``.
            FormatError: ``refs/head`` does not hold a multibase multihash.
        """
        path = self._safe(HEAD_REF)
        with open(path, "rb") as f:
            raw = f.read(_MAX_REF_SIZE + 1)
        if len(raw) > _MAX_REF_SIZE:
            raise FormatError(f"{self.root}: refs/head is too large to be a hash")
        try:
            text = raw.decode("ascii")
        except UnicodeDecodeError:
            raise FormatError(f"{self.root}: refs/head is not a multibase hash") from None
        if text != text.strip():
            # kamu reads the ref as is (``Multihash::from_multibase`` of the file's text, no
            # trimming), so a trailing newline makes the dataset unreadable to it.
            raise FormatError(
                f"{self.root}: refs/head holds whitespace around the hash (e.g. a trailing "
                "newline), which kamu cannot read; write the hash alone: printf %s HASH > "
                "refs/head"
            )
        try:
            return multihash_from_str(text)
        except FormatError as exc:
            raise FormatError(f"{self.root}: refs/head: {exc}") from None

    def path_of(self, kind: ObjectKind, mh: bytes) -> Path:
        """Absolute, checked path of an object (raises NotFound when absent)."""
        return self._safe(object_relpath(kind, mh))

    def has(self, kind: ObjectKind, mh: bytes) -> bool:
        """Whether the object file exists (does not check its content)."""
        return (self.root / object_relpath(kind, mh)).is_file()

    def read_block_bytes(self, mh: bytes) -> bytes:
        """The raw bytes of block ``mh`` (unverified; see ``chain.read_block``)."""
        fd, st = self.open_fd("block", mh)
        try:
            # Read by the file's size rather than one MAX_BLOCK_SIZE + 1 request (which
            # allocates 16 MiB per block); a short read of a regular file is its end,
            # and a file grown meanwhile is still read only up to the bound.
            want = min(st.st_size, MAX_BLOCK_SIZE) + 1
            parts: list[bytes] = []
            total = 0
            while total <= MAX_BLOCK_SIZE:
                chunk = os.read(fd, want)
                parts.append(chunk)
                total += len(chunk)
                if len(chunk) < want:
                    break
                want = MAX_BLOCK_SIZE + 1 - total
        finally:
            os.close(fd)
        data = parts[0] if len(parts) == 1 else b"".join(parts)
        if len(data) > MAX_BLOCK_SIZE:
            raise FormatError(
                f"{self.root / object_relpath('block', mh)}: larger than any metadata block "
                f"({MAX_BLOCK_SIZE} bytes)"
            )
        return data

    def open_object(self, kind: ObjectKind, mh: bytes) -> BinaryIO:
        """Open an object file for streaming reads (the checks of :meth:`open_fd`)."""
        fd, _ = self.open_fd(kind, mh)
        return os.fdopen(fd, "rb")

    def size_of(self, kind: ObjectKind, mh: bytes) -> int:
        """Size in bytes of an object file."""
        return self.path_of(kind, mh).stat().st_size

    def iter_stored(self, kind: ObjectKind) -> Iterator[bytes]:
        """Hashes of the objects of ``kind`` present on disk, sorted; stray names skipped."""
        folder = self.root / LAYOUT_DIRS[kind]
        if not folder.is_dir():
            return
        for name in sorted(os.listdir(folder)):
            with contextlib.suppress(FormatError):
                yield multihash_from_str(name)


def local_io_error(exc: OSError, where: Path) -> LocalIOError:
    """One line for a failed local write: where, why (no space, read-only...), what to do."""
    return LocalIOError(
        f"{where}: cannot write ({exc.strerror or exc}); free space or fix permissions and "
        "run again: the file being written was removed, nothing else changed"
    )


class DatasetWriter:
    """Writes objects and the head ref of a dataset, each atomically (through
    :mod:`odfweb3.atomic_file`: a temp file, renamed into place, so a reader sees the whole
    object or none).

    Order is the caller's duty and the rule is git's: write every object first,
    :meth:`set_head` last. ``fsync=False``: no fsync per object; the caller makes them
    durable together (one ``sync``) before the head names them.

    Files get the umask's mode, as kamu's and git's do and as a pulled copy's objects do:
    a dataset is data to publish, not a secret (keys and wallets are written 0600 by
    :func:`odfweb3.atomic_file.write_secret_atomic`).
    """

    def __init__(self, root: str | os.PathLike[str], *, fsync: bool = True) -> None:
        self.root = Path(root)
        self._fsync = fsync
        self._folders = {kind: self.root / sub for kind, sub in LAYOUT_DIRS.items()}
        for sub in (*dict.fromkeys(LAYOUT_DIRS.values()), "refs"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)

    def write_object(self, kind: ObjectKind, mh: bytes, data: bytes | Iterator[bytes]) -> Path:
        """Write one object under its hash (the caller vouches for the hash)."""
        name = multihash_to_str(mh)
        chunks = (data,) if isinstance(data, bytes) else data
        return write_chunks_atomic(
            self._folders[kind], chunks, lambda: name, public=True, durable=self._fsync
        )

    def write_new_object(self, kind: ObjectKind, chunks: Iterator[bytes]) -> bytes:
        """Stream bytes into a new object, named by their SHA3-256 multihash; return it."""
        h = hashlib.sha3_256()

        def hashed() -> Iterator[bytes]:
            for chunk in chunks:
                h.update(chunk)
                yield chunk

        path = write_chunks_atomic(
            self._folders[kind],
            hashed(),
            lambda: multihash_to_str(bytes((SHA3_256, 32)) + h.digest()),
            public=True,
            durable=self._fsync,
        )
        return multihash_from_str(path.name)

    def set_head(self, mh: bytes) -> None:
        """Point ``refs/head`` at block ``mh``; call after every object is written."""
        write_file_atomic(
            self.root / HEAD_REF,
            multihash_to_str(mh).encode("ascii"),
            public=True,
            durable=self._fsync,
        )
