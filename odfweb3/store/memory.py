"""In-memory stores, for tests and planning."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from odfweb3.errors import ConflictError, NotFound
from odfweb3.odf.layout import ObjectKind, object_relpath
from odfweb3.odf.multihash import multihash_to_str, verify_bytes

__all__ = ["MemoryStore"]


class MemoryStore:
    """An ObjectStore and RefStore held in dictionaries."""

    def __init__(self) -> None:
        self.objects: dict[tuple[ObjectKind, bytes], bytes] = {}
        self.refs: dict[str, bytes] = {}

    def has(self, kind: ObjectKind, mh: bytes) -> bool:
        return (kind, mh) in self.objects

    def get(self, kind: ObjectKind, mh: bytes) -> bytes:
        try:
            data = self.objects[(kind, mh)]
        except KeyError:
            raise NotFound(f"memory store: {object_relpath(kind, mh)} is missing") from None
        verify_bytes(data, mh, object_relpath(kind, mh))
        return data

    def put(self, kind: ObjectKind, mh: bytes, chunks: Iterable[bytes]) -> None:
        data = b"".join(chunks)
        verify_bytes(data, mh, object_relpath(kind, mh))
        self.objects[(kind, mh)] = data

    def list(self, kind: ObjectKind) -> Iterator[bytes]:
        return iter(sorted(h for k, h in self.objects if k == kind))

    def get_ref(self, name: str) -> bytes | None:
        return self.refs.get(name)

    def set_ref(self, name: str, mh: bytes, *, expected: bytes | None) -> None:
        current = self.refs.get(name)
        if current != expected:
            have = multihash_to_str(current) if current else "nothing"
            raise ConflictError(f"ref {name}: points at {have}, not the expected value")
        self.refs[name] = mh
