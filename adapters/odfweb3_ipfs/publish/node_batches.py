"""The node target's upload in batches, so an interrupted publish resumes instead of
restarting (docs/ipfs.md, "Interrupted publishes").

Kubo's ``dag/import`` of one CAR is all or nothing for us: the blocks of a CAR cut short are
not pinned, not known to be whole, and nothing says which objects arrived. So the delta is
sent as several CARs of about :data:`BATCH_BYTES`, cut between objects. After each one is
imported, and once every object in it has passed its size and hash check, its objects are
named in a local **batch record** (``<state file>.index/sent-<batch CID>.json``) and then a
small **batch node** is pinned on the node: a dag-pb node (no data) linking the batch's
objects' roots, so the pin is the node's own proof that each of them is whole, and keeps them
from garbage collection until the publish ends. The last CAR carries the rest (the
remaining objects, ``refs/head``, the directories, the side files) under the dataset root.

A rerun of a publish that found nothing on the node to link (a first publish, or a node that
lost the root) reads the records (bounded, each checked: its batch node re-encoded from its
links must have the CID it is named by), keeps those made with this publish's CID profile
and encryption whose batch node the node still has pinned, and links their objects instead
of sending them (:meth:`BatchLog.resume`). Once the dataset root is pinned and the checkpoint
saved, the batch nodes are unpinned and the records removed (:meth:`BatchLog.clear`).

Order: record first, then pin (a record whose node is not pinned is ignored and dropped), and
at the end unpin, then remove the record: a killed publisher leaves no pin that no record
names. Measured (tests/integration/test_ipfs_resume.py): interrupted at 75 % of a first
publish, the rerun sends well under 30 % of the dataset (bench/RESULTS.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Final

from odfweb3.atomic_file import open_partial, remove_partials, write_file_atomic
from odfweb3.errors import BackendError, BackendRejected, FormatError, NotFound
from odfweb3.foreign_json import read_foreign_json_file
from odfweb3.publish.state_home import UploadCheckpoint
from odfweb3_ipfs.client.kubo import KuboClient
from odfweb3_ipfs.formats.car import CarWriter, CidSet
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.formats.dagpb import PBLink, encode_pbnode
from odfweb3_ipfs.publish.dataset_dag import ObjectLink

__all__ = [
    "BATCH_BYTES",
    "BATCH_OBJECTS",
    "BatchLog",
    "BatchRecord",
    "BatchSender",
    "batch_node",
    "decode_batch_record",
    "encode_batch_record",
]

# A batch is cut after the object that takes it past this many bytes of blocks: an
# interruption loses at most about one batch in flight (and one waiting for its checks).
BATCH_BYTES: Final = 8 << 20
# ...or past this many objects: the batch node stays small (about 50 bytes a link).
BATCH_OBJECTS: Final = 1024
_CODEC_DAG_PB: Final = 0x70
_RECORD_PREFIX: Final = "sent-"
_RECORD_VERSION: Final = 1
_MAX_RECORD: Final = 4 << 20  # 1,024 objects of ~150 bytes each, with room
_MAX_RECORDS: Final = 10_000
_FOLDERS: Final = ("blocks", "checkpoints", "data")
# Pinning a batch the node holds whole walks a few MiB of local blocks: seconds at most.
_PIN_TIMEOUT: Final = 120.0
# How long a cut waits for its objects' checks (they run on the hashing workers and are
# nearly done when the last block is written); past it, the batch is recorded after import.
_CHECK_WAIT: Final = 30.0


@dataclass(frozen=True)
class BatchRecord:
    """One sent batch: its batch node's CID, how its objects were made, and their links.

    Attributes:
        root: the batch node's CID (pinned on the node while the publish is unfinished).
        cid_version / cid_profile / encrypted / key_epoch: the DAG facts the objects were
            made with (:class:`.state.DagFacts`' ``cidVersion``, ``cidProfile``,
            ``encrypted``, ``keyEpoch``: ciphertext is linked only under the same key).
        objects: object path -> its link, in batch order.
    """

    root: Cid
    cid_version: int
    cid_profile: str | None
    encrypted: bool
    key_epoch: int | None
    objects: Mapping[str, ObjectLink]


def batch_node(links: Iterable[ObjectLink], cid_version: int) -> tuple[Cid, bytes]:
    """The batch node linking ``links`` (dag-pb, unnamed links in order, no data) and its
    CID (sha2-256, dag-pb, ``cid_version``)."""
    block = encode_pbnode([PBLink(link.cid, b"", link.tsize) for link in links], None)
    digest = hashlib.sha256(block).digest()
    return Cid.sha256(digest, version=cid_version, codec=_CODEC_DAG_PB), block


def encode_batch_record(record: BatchRecord) -> dict[str, Any]:
    """The record as its file's JSON document."""
    return {
        "version": _RECORD_VERSION,
        "root": record.root.encode(),
        "cidVersion": record.cid_version,
        "cidProfile": record.cid_profile,
        "encrypted": record.encrypted,
        "keyEpoch": record.key_epoch,
        "objects": [
            [path, link.cid.encode(), link.tsize, link.size]
            for path, link in record.objects.items()
        ],
    }


def _is_object_path(path: object) -> bool:
    if not isinstance(path, str):
        return False
    folder, sep, name = path.partition("/")
    return folder in _FOLDERS and bool(sep) and bool(name) and name.isalnum()


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 63


def decode_batch_record(doc: Any, where: str) -> BatchRecord:
    """Parse and check a record's document: every field of its type, every path an object
    path, and the batch node re-encoded from its links has the CID the record names.

    Raises:
        FormatError: anything else (naming ``where``).
    """
    bad = FormatError(f"{where}: not a batch record of this version; it is ignored")
    if not isinstance(doc, dict) or doc.get("version") != _RECORD_VERSION:
        raise bad
    version, profile, encrypted = doc.get("cidVersion"), doc.get("cidProfile"), doc.get("encrypted")
    if version not in (0, 1) or not isinstance(encrypted, bool):
        raise bad
    if (profile is not None and not isinstance(profile, str)) or not isinstance(
        doc.get("objects"), list
    ):
        raise bad
    epoch = doc.get("keyEpoch")
    if epoch is not None and not _count(epoch):
        raise bad
    objects: dict[str, ObjectLink] = {}
    for entry in doc["objects"]:
        if not (isinstance(entry, list) and len(entry) == 4 and _is_object_path(entry[0])):
            raise bad
        path, cid, tsize, size = entry
        if not (isinstance(cid, str) and _count(tsize) and _count(size)) or path in objects:
            raise bad
        objects[path] = ObjectLink(Cid.decode(cid, where=where), tsize, size)
    root = Cid.decode(str(doc.get("root")), where=where)
    if not objects or batch_node(objects.values(), root.version)[0].raw != root.raw:
        raise FormatError(f"{where}: its batch node is not the one its links make; ignored")
    return BatchRecord(root, version, profile, encrypted, epoch, objects)


class BatchLog:
    """The batch records of one (dataset, node target): ``<state>.index/sent-<cid>.json``.

    Args:
        directory: where the records are.
        client: the node (pins).
        marker: the target's upload checkpoint
            (:meth:`~odfweb3.publish.state_home.StateHome.checkpoint`), written with the
            first record (naming this directory) and cleared with the last, so ``status``
            shows the upload as in progress.
    """

    def __init__(
        self,
        directory: Path,
        client: KuboClient,
        marker: UploadCheckpoint | None = None,
    ) -> None:
        self.directory = directory
        self.client = client
        self.marker = marker

    def _paths(self) -> list[Path]:
        try:
            names = sorted(os.listdir(self.directory))
        except OSError:
            return []
        return [
            self.directory / n
            for n in names[:_MAX_RECORDS]
            if n.startswith(_RECORD_PREFIX) and n.endswith(".json")
        ]

    def write(self, record: BatchRecord) -> None:
        """Save ``record`` (temp file, fsync, rename), before its batch node is pinned."""
        name = f"{_RECORD_PREFIX}{record.root.encode()}.json"
        data = json.dumps(encode_batch_record(record), separators=(",", ":")).encode()
        if self.marker is not None and not self.marker.exists():
            self.marker.write({"batches": str(self.directory)})
        write_file_atomic(self.directory / name, data)

    def resume(
        self, *, cid_version: int, cid_profile: str | None, key_epoch: int | None
    ) -> tuple[dict[str, dict[str, Any]], int]:
        """The links of the objects earlier batches left whole on the node (made the way
        this publish makes them, their batch node still pinned), in state form, and how
        many batches that is (``key_epoch``: the sealer's, None for a plain publish).
        Records that do not qualify are dropped."""
        objects: dict[str, dict[str, Any]] = {}
        batches = 0
        for path in self._paths():
            try:
                raw = read_foreign_json_file(path, max_bytes=_MAX_RECORD)
                record = decode_batch_record(raw, str(path))
            except (FormatError, NotFound):
                self._drop(path, None)
                continue
            made = (record.cid_version, record.cid_profile, record.encrypted, record.key_epoch)
            same = made == (cid_version, cid_profile, key_epoch is not None, key_epoch)
            if path.name != f"{_RECORD_PREFIX}{record.root.encode()}.json" or not same:
                self._drop(path, record.root)
                continue
            if not self._whole(record.root):
                self._drop(path, None)  # cut short before the node had it all
                continue
            batches += 1
            for p, link in record.objects.items():
                objects[p] = link.to_json()
        if not batches and self.marker is not None:
            self.marker.clear()  # nothing left to resume
        return objects, batches

    def _whole(self, root: Cid) -> bool:
        """The node holds the batch whole: its batch node is pinned, or pins now without
        looking on the network (a publisher killed after sending it, before pinning)."""
        if self.client.has_pin(root):
            return True
        try:
            self.client.pin_add(root, timeout=_PIN_TIMEOUT, offline=True)
        except BackendError:
            return False
        return True

    def clear(self) -> None:
        """Unpin every batch node a record names, then remove the record (the dataset root
        is pinned now: it holds every object)."""
        for path in self._paths():
            root = None
            with contextlib.suppress(OSError, FormatError, NotFound):
                raw = read_foreign_json_file(path, max_bytes=_MAX_RECORD, expect=dict)
                root = Cid.decode(str(raw.get("root")))
            self._drop(path, root)
        if self.marker is not None:
            self.marker.clear()

    def _drop(self, path: Path, root: Cid | None) -> None:
        if root is not None:
            with contextlib.suppress(BackendRejected):
                self.client.pin_rm(root)  # "not pinned" is as good
        with contextlib.suppress(OSError):
            path.unlink()


class BatchSender:
    """The block sink of a node publish: CARs of about :data:`BATCH_BYTES`, each sent with
    ``dag/import`` as soon as it is cut, and an :class:`.dataset_dag.ObjectObserver` whose
    objects, once imported and checked, are recorded and pinned batch by batch
    (see the module docstring).

    Args:
        client: the node.
        log: where the batch records go.
        tmp_dir: where the CARs are written before they are sent (None: the system's).
        cid_version / cid_profile / key_epoch: how this publish makes its objects
            (``key_epoch``: the sealer's, None for a plain publish).
        batch_bytes / batch_objects: where a batch is cut (tests use small ones).
    """

    def __init__(
        self,
        client: KuboClient,
        log: BatchLog,
        tmp_dir: Path | None,
        *,
        cid_version: int,
        cid_profile: str | None,
        key_epoch: int | None,
        batch_bytes: int = BATCH_BYTES,
        batch_objects: int = BATCH_OBJECTS,
    ) -> None:
        self.client = client
        self.log = log
        self.tmp_dir = Path(tmp_dir) if tmp_dir is not None else None
        self.facts = (cid_version, cid_profile, key_epoch)
        self.batch_bytes = batch_bytes
        self.batch_objects = batch_objects
        self.blocks = 0  # blocks sent, all CARs
        self.bytes = 0  # CAR bytes sent
        self.batches = 0  # CARs cut before the last
        self._sent = CidSet()
        self._verified: set[str] = set()
        self._failed = False
        self._checked = threading.Condition()
        self._objects: dict[str, ObjectLink] = {}
        self._waiting: deque[tuple[Cid, dict[str, ObjectLink]]] = deque()
        self._file: BinaryIO | None = None
        self._path = ""
        self._writer: CarWriter | None = None
        self._cleaned = False

    # -- the sink ------------------------------------------------------------------------

    def _open(self) -> CarWriter:
        if self._writer is None:
            directory = self.tmp_dir or Path(tempfile.gettempdir())
            if not self._cleaned:  # what a killed publisher left (its lock is gone)
                directory.mkdir(parents=True, exist_ok=True)
                remove_partials(directory)
                self._cleaned = True
            fd, self._path = open_partial(directory, ".car")
            self._file = os.fdopen(fd, "w+b")
            self._writer = CarWriter.with_root_later(self._file, cid_version=self.facts[0])
        return self._writer

    def __call__(self, cid: Cid, block: bytes) -> None:
        """Take one new block (:data:`.unixfs_import.BlockSink`); one in an earlier CAR of
        this publish (imported already) is not written again."""
        if self._sent.add(cid):
            self._open().write_block(cid, block)

    # -- the observer --------------------------------------------------------------------

    def imported(self, path: str, link: ObjectLink) -> None:
        """Every block of ``path`` is in a CAR: cut the batch when it is full."""
        self._objects[path] = link
        writer = self._writer
        full = writer is not None and writer.bytes_written >= self.batch_bytes
        if full or len(self._objects) >= self.batch_objects:
            self._cut()
        self._record_checked()

    def verified(self, path: str) -> None:
        """``path`` passed its check (on a hashing worker)."""
        with self._checked:
            self._verified.add(path)
            self._checked.notify_all()

    def failed(self, path: str) -> None:
        """``path`` failed its check: nothing more is recorded (the build raises)."""
        with self._checked:
            self._failed = True
            self._checked.notify_all()

    def _all_checked(self, objects: Mapping[str, ObjectLink], wait: float) -> bool:
        with self._checked:
            return (
                self._checked.wait_for(
                    lambda: self._failed or all(p in self._verified for p in objects), wait
                )
                and not self._failed
            )

    # -- batches -------------------------------------------------------------------------

    def _send(self, root: Cid) -> None:
        writer, f = self._writer, self._file
        assert writer is not None and f is not None
        writer.set_root(root)
        f.flush()
        self.bytes += writer.bytes_written
        self.blocks += writer.blocks_written
        f.close()
        self._writer = self._file = None
        try:
            self.client.dag_import(Path(self._path))
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._path)

    def _cut(self) -> None:
        """Close the CAR with its batch node and send it: recorded first when its objects'
        checks are done (a kill during the import then loses nothing the node took),
        pinned once the node has it."""
        objects, self._objects = self._objects, {}
        if not objects:
            return
        root, block = batch_node(objects.values(), self.facts[0])
        self(root, block)
        recorded = self._all_checked(objects, _CHECK_WAIT)
        if recorded:
            self._record(root, objects)
        self._send(root)
        self.batches += 1
        if recorded:
            self.client.pin_add(root)
        else:
            self._waiting.append((root, objects))
        self._record_checked()

    def _record(self, root: Cid, objects: Mapping[str, ObjectLink]) -> None:
        version, profile, epoch = self.facts
        self.log.write(BatchRecord(root, version, profile, epoch is not None, epoch, objects))
        # Each object is in one batch: once it is recorded its paths are never asked again
        # (kept, the set held every object's path: 300,000 at 100,000 blocks).
        with self._checked:
            self._verified.difference_update(objects)

    def _record_checked(self) -> None:
        """Record, then pin, each sent batch whose objects have all passed their checks."""
        while self._waiting:
            root, objects = self._waiting[0]
            if not self._all_checked(objects, 0):
                return
            self._record(root, objects)
            self.client.pin_add(root)
            self._waiting.popleft()

    def finish(self, root: Cid, extra: Iterable[tuple[Cid, bytes]] = ()) -> None:
        """Send the last CAR under the dataset ``root``: the blocks since the last cut and
        ``extra`` (the side files' blocks). Every check has passed by now: the batches
        still waiting are recorded first, so a failure of the last CAR keeps them."""
        self._record_checked()
        self._objects = {}
        for cid, block in extra:
            self(cid, block)
        if self._writer is not None:  # else nothing is new (a re-publish)
            self._send(root)

    def close(self) -> None:
        """Remove an unsent CAR (an error or an interruption)."""
        if self._file is not None:
            self._file.close()
            self._file = self._writer = None
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._path)
