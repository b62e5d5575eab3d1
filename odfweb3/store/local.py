"""A dataset directory on local disk as an ObjectStore and RefStore."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from odfweb3.errors import ConflictError, FormatError, HashMismatch, NotFound
from odfweb3.odf.layout import DatasetReader, DatasetWriter, ObjectKind, object_relpath
from odfweb3.odf.multihash import (
    multihash_from_str,
    multihash_to_str,
    new_hasher,
    split_multihash,
    verify_bytes,
)

__all__ = ["WORK_DIR", "LocalStore"]

# odfweb3's scratch space inside a dataset directory (lock file, staged downloads); never
# part of the ODF layout, never published.
WORK_DIR = ".odfweb3"


class LocalStore:
    """The ODF directory layout as a store: objects written atomically, refs last.

    ``put`` streams into a temp file while hashing and renames it into place only
    when the hash matches, so a reader never sees a partial or wrong object.
    """

    def __init__(self, root: str | os.PathLike[str], *, fsync: bool = True) -> None:
        self.root = Path(root)
        self._writer = DatasetWriter(self.root, fsync=fsync)
        self._reader = DatasetReader(self.root.resolve())

    def has(self, kind: ObjectKind, mh: bytes) -> bool:
        return self._reader.has(kind, mh)

    def get(self, kind: ObjectKind, mh: bytes) -> bytes:
        data = self._reader.path_of(kind, mh).read_bytes()
        verify_bytes(data, mh, str(self.root / object_relpath(kind, mh)))
        return data

    def put(self, kind: ObjectKind, mh: bytes, chunks: Iterable[bytes]) -> None:
        code, _ = split_multihash(mh)
        hasher = new_hasher(code)

        def hashing() -> Iterator[bytes]:
            for chunk in chunks:
                hasher.update(chunk)
                yield chunk

        rel = object_relpath(kind, mh)
        tmp_name = f".incoming-{os.getpid()}-{mh[2:10].hex()}"
        tmp = self.root / os.path.dirname(rel) / tmp_name
        try:
            with open(tmp, "wb") as f:
                for chunk in hashing():
                    f.write(chunk)
                f.flush()
                os.fsync(f.fileno())
            actual = bytes((mh[0], len(hasher.digest()))) + hasher.digest()
            if actual != mh:
                raise HashMismatch(multihash_to_str(mh), multihash_to_str(actual), rel)
            os.replace(tmp, self.root / rel)
        finally:
            if tmp.exists():
                tmp.unlink()

    def list(self, kind: ObjectKind) -> Iterator[bytes]:
        return self._reader.iter_stored(kind)

    def path_of(self, kind: ObjectKind, mh: bytes) -> Path:
        """Where an object lives (whether or not it exists)."""
        return self.root / object_relpath(kind, mh)

    @staticmethod
    def _read_ref(path: Path) -> bytes | None:
        if not path.is_file():
            return None
        try:
            return multihash_from_str(path.read_text("ascii"))
        except (UnicodeDecodeError, FormatError) as exc:
            raise FormatError(f"{path}: not a multibase hash") from exc

    @classmethod
    def read_head(cls, root: Path) -> bytes | None:
        """``refs/head`` of the dataset at ``root``, without creating anything there."""
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
