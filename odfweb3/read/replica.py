"""A replica of a dataset, seen read-only: a head and objects by hash.

Every implementation is untrusted: :func:`read_block` and :func:`read_object`
check what they return against the hash asked for, so a lying node or gateway
can make a read fail but never slip in other bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from odfweb3.errors import HashMismatch, IntegrityError
from odfweb3.odf.chain import DatasetObject
from odfweb3.odf.layout import DatasetReader, ObjectKind
from odfweb3.odf.multihash import multihash_to_str, new_hasher

__all__ = [
    "FolderPrefetch",
    "LineageInputsSource",
    "LocalInputsSource",
    "LocalReads",
    "LocalReplica",
    "MaybeUnverified",
    "Replica",
    "read_object_verified",
]


class Replica(Protocol):
    """Read access to one copy of a dataset."""

    name: str

    def head(self) -> bytes:
        """The head hash this replica serves (from its verified name record or refs/head)."""
        ...

    def read_block(self, mh: bytes) -> bytes:
        """Raw bytes of a block (the chain walk verifies them)."""
        ...

    def stream_object(self, kind: ObjectKind, mh: bytes, size: int | None) -> Iterator[bytes]:
        """Stream a data file or checkpoint, never more than ``size + 1`` bytes when given
        (one byte over is how a reader learns the object is larger than recorded)."""
        ...


def read_object_verified(
    replica: Replica, obj: DatasetObject, progress: Callable[[int], None] | None = None
) -> int:
    """Stream an object from a replica, checking size and hash; return its size.

    ``progress`` is called with the length of each chunk read (progress bars).
    """
    hasher = new_hasher(obj.hash[0])
    n = 0
    for chunk in replica.stream_object(obj.kind, obj.hash, obj.size):
        hasher.update(chunk)
        n += len(chunk)
        if progress is not None:
            progress(len(chunk))
        if obj.size is not None and n > obj.size:
            raise IntegrityError(
                f"{replica.name}: {obj.path} is larger than the {obj.size} bytes recorded"
            )
    if obj.size is not None and n != obj.size:
        raise IntegrityError(
            f"{replica.name}: {obj.path} has {n} bytes, the block records {obj.size}"
        )
    actual = bytes((obj.hash[0], hasher.digest_size)) + hasher.digest()
    if actual != obj.hash:
        raise HashMismatch(
            multihash_to_str(obj.hash), multihash_to_str(actual), f"{replica.name}: {obj.path}"
        )
    return n


@runtime_checkable
class FolderPrefetch(Protocol):
    """A replica that can fetch a whole folder of its layout in one stream (a trustless
    gateway's CAR of the folder's DAG) for the reads that follow, instead of one request
    per object. The reads verify every block as before; what the stream lacked (cut at a
    bound, dropped, or refused) is read one by one."""

    def prefetch(self, folder: str, *, max_bytes: int) -> int:
        """Fetch ``folder`` (``data``, ``checkpoints``), at most ``max_bytes``, to a local
        spool; how many blocks were kept."""
        ...

    def drop_prefetched(self) -> None:
        """Forget what was fetched and remove the spool."""
        ...


@runtime_checkable
class LocalReads(Protocol):
    """A replica read from this machine's disk (``car:DIR``), not over a network: a pull
    fetches from it on :data:`LOCAL_READ_THREADS` threads whatever ``--parallel`` says."""

    def reads_local(self) -> bool:
        """True: every read is a local file read (no round trip to wait out)."""
        ...


#: Fetch threads for a :class:`LocalReads` replica. Its reads wait for no network; what
#: waits is the kernel creating each staged file, which a second thread overlaps. More
#: threads only hand the GIL to one another at every system call: 726,000 futex calls for a
#: pull of 10,000 blocks on 8 threads, 15,000 on 2 (``strace -c``).
LOCAL_READ_THREADS = 2


@runtime_checkable
class LineageInputsSource(Protocol):
    """A replica whose signed record says where each input lives."""

    def lineage_inputs(self) -> Mapping[str, str]:
        """Dataset ID -> network locator (``ipns://NAME``, ``ar://RECORD``); empty if none."""
        ...


@runtime_checkable
class LocalInputsSource(Protocol):
    """A replica that also knows local stand-ins for its inputs' locators (``car:DIR``)."""

    def local_inputs(self) -> Mapping[str, str]:
        """Dataset ID -> local reference (``car:DIR/inputs/NAME``)."""
        ...


@dataclass(frozen=True)
class RecordSigner:
    """Who signed the record a replica was read through.

    Attributes:
        name: the signer as the network names it (an IPNS name).
        dataset_key: the signer is the dataset's own key (its ``did:odf`` is that key).
        local_key: the label of this machine's keystore entry holding the signing key, if
            one does.
    """

    name: str
    dataset_key: bool
    local_key: str | None = None


@runtime_checkable
class SignedRecordSource(Protocol):
    """A replica read through a name record whose signer it can say (``car:DIR``)."""

    def signed_by(self) -> RecordSigner:
        """Who signed the record."""
        ...


@runtime_checkable
class MaybeUnverified(Protocol):
    """A replica that may have been read with nothing tying its bytes to its name (an
    opt-in such as ``ipfs.insecure_unverified_paths``): never reported identical."""

    @property
    def unverified(self) -> bool:
        """True when its ``refs/head`` was read unverified."""
        ...


class LocalReplica:
    """A dataset directory on disk as a replica."""

    def __init__(self, reader: DatasetReader) -> None:
        self.reader = reader
        self.name = str(reader.root)

    def head(self) -> bytes:
        return self.reader.head()

    def read_block(self, mh: bytes) -> bytes:
        return self.reader.read_block_bytes(mh)

    def stream_object(self, kind: ObjectKind, mh: bytes, size: int | None) -> Iterator[bytes]:
        # As every replica: at most one byte more than recorded, enough for the reader to
        # refuse a file that grew (Replica.stream_object), never the rest of it.
        left = None if size is None else size + 1
        with self.reader.open_object(kind, mh) as f:
            while left is None or left > 0:
                chunk = f.read(1 << 20 if left is None else min(1 << 20, left))
                if not chunk:
                    return
                if left is not None:
                    left -= len(chunk)
                yield chunk
