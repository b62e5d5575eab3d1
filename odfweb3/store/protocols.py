"""The two storage protocols every dataset replica is seen through."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol, runtime_checkable

from odfweb3.odf.layout import ObjectKind

__all__ = ["ObjectStore", "RefStore"]


@runtime_checkable
class ObjectStore(Protocol):
    """Content-addressed objects of one dataset: blocks, data files, checkpoints.

    ``put`` verifies the bytes against the hash before anything becomes visible;
    ``get`` verifies on read. Keys are raw multihash bytes.
    """

    def has(self, kind: ObjectKind, mh: bytes) -> bool:
        """Whether the object is stored."""
        ...

    def get(self, kind: ObjectKind, mh: bytes) -> bytes:
        """The object's bytes, verified (raises NotFound / HashMismatch)."""
        ...

    def put(self, kind: ObjectKind, mh: bytes, chunks: Iterable[bytes]) -> None:
        """Store the object if its bytes hash to ``mh`` (raises HashMismatch, storing nothing)."""
        ...

    def list(self, kind: ObjectKind) -> Iterator[bytes]:
        """Hashes of stored objects of ``kind``."""
        ...


@runtime_checkable
class RefStore(Protocol):
    """Named refs (``head``) pointing at block hashes."""

    def get_ref(self, name: str) -> bytes | None:
        """The hash the ref points at, or None when unset."""
        ...

    def set_ref(self, name: str, mh: bytes, *, expected: bytes | None) -> None:
        """Point the ref at ``mh`` if it still points at ``expected`` (raises ConflictError)."""
        ...
