"""Example datasets for tests, benchmarks, docs and the demo.

:func:`create_root_dataset` writes a root dataset: Seed, SetInfo, SetLicense, SetDataSchema and
N AddData blocks, each with a data part file and a checkpoint of chosen sizes;
:func:`append_blocks` adds AddData blocks to an existing dataset. Both are
deterministic for a given seed (same bytes, same hashes), write every object
atomically, and move ``refs/head`` last.

What the data files are: **Parquet** (:mod:`odfweb3.odf.parquet`), with the
columns the SetDataSchema declares (:mod:`odfweb3.odf.example_schema`): the ODF
system columns, ``offset`` matching the block's ``offsetInterval``, ``system_time``
the block's, event times up to the block's ``newWatermark``, and a ``payload``
column of pseudo-random bytes sized so that the file is the size asked for. Each
data file of ``size`` bytes holds ``max(1, size // 100)`` records.
``DataSlice.logicalHash`` is not the ODF logical hash (kamu computes it over the
Arrow records with arrow-digest): the builder fills it with the SHA3-256 multihash
of the file bytes, the same value as ``physicalHash``; odfweb3 never claims to
verify logical hashes. Checkpoints stay opaque bytes (their format is the engine's).
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import tempfile
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

from odfweb3.atomic_file import fsync_dir
from odfweb3.errors import UsageError
from odfweb3.odf.chain import walk_chain
from odfweb3.odf.codec import encode_block
from odfweb3.odf.example_schema import (
    CONTENT_HASH_COLUMN,
    PAYLOAD_SCHEMA,
    VERSIONED_FILE_SCHEMA,
    set_data_schema,
)
from odfweb3.odf.identity import DatasetKeyPair, generate_keypair
from odfweb3.odf.layout import DatasetReader, DatasetWriter, ObjectKind, local_io_error
from odfweb3.odf.linked import LinkedSummary, encode_summary, link_columns
from odfweb3.odf.model_gen import (
    AddData,
    Checkpoint,
    DatasetKind,
    DataSlice,
    ExecuteTransform,
    MetadataBlock,
    MetadataEvent,
    OffsetInterval,
    Seed,
    SetDataSchema,
    SetInfo,
    SetLicense,
)
from odfweb3.odf.multihash import hash_bytes, multihash_to_str
from odfweb3.odf.parquet import payload_file, versioned_file
from odfweb3.odf.timestamp import Timestamp

__all__ = [
    "EPOCH",
    "BuiltDataset",
    "append_blocks",
    "create_root_dataset",
    "example_keypair",
]

EPOCH: Final = datetime(2050, 1, 1, 12, 0, 0, tzinfo=UTC)
_RECORD_BYTES: Final = 100
_CHECKPOINT_BYTES: Final = 1024
_WRITE_CHUNK: Final = 4 << 20
_TICK: Final = timedelta(seconds=1)  # between blocks
_SMALL: Final = 4 << 20  # objects up to this size are built in memory and stored by the pool
_WRITE_THREADS: Final = 4
_MAX_PENDING: Final = 64
LINKED_CONTENT_TYPE: Final = "application/octet-stream"

ProgressFn = Callable[[int], None]


@dataclass(frozen=True)
class BuiltDataset:
    """What the builder wrote."""

    path: Path
    head: bytes
    blocks: int
    data_bytes: int
    keypair: DatasetKeyPair | None


def example_keypair(seed: int) -> DatasetKeyPair:
    """The deterministic identity key of the example dataset with this seed."""
    material = hashlib.sha256(b"odfweb3 example dataset key\x00" + str(seed).encode()).digest()
    return generate_keypair(material)


class _ChainAppender:
    """Encodes blocks in order and writes them, tracking the chain's state."""

    def __init__(self, root: Path, fsync: bool, rng: random.Random) -> None:
        # Objects are written without an fsync each and flushed together by finish():
        # one sync for the whole build instead of two per object (10,000 blocks wrote
        # 60,000 fsyncs), with the same guarantee: every object is on disk before
        # refs/head names them.
        self.root = root
        self.fsync = fsync
        self.writer = DatasetWriter(root, fsync=False)
        # Small objects are hashed here and stored by a few threads (open, write and
        # rename wait on the file system, not the interpreter); at most _MAX_PENDING
        # wait in memory, and finish() waits for all of them before refs/head.
        self._pool = ThreadPoolExecutor(_WRITE_THREADS, thread_name_prefix="odfweb3-example")
        self._pending: deque[Future[Path]] = deque()
        self.rng = rng
        self.head: bytes | None = None
        self.seq = -1
        self.last_offset: int | None = None
        self.last_checkpoint: bytes | None = None
        self.time = EPOCH
        self.data_bytes = 0

    def __enter__(self) -> _ChainAppender:
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:
        # On an error (a full disk, Ctrl-C) no write still queued runs after we return:
        # the caller may remove the directory.
        self._pool.shutdown(wait=True, cancel_futures=exc_type is not None)

    def store(self, kind: ObjectKind, data: bytes) -> bytes:
        """Queue ``data`` to be stored under its SHA3-256 multihash; return the hash."""
        mh = hash_bytes(data)
        self._pending.append(self._pool.submit(self.writer.write_object, kind, mh, data))
        while len(self._pending) > _MAX_PENDING:
            self._pending.popleft().result()
        return mh

    def finish(self) -> None:
        """Flush every object written, then point ``refs/head`` at the last block."""
        assert self.head is not None
        while self._pending:
            self._pending.popleft().result()  # the first failed write raises here
        if self.fsync:
            os.sync()  # waits for the writes on Linux (sync(2)); all objects, one call
        DatasetWriter(self.root, fsync=self.fsync).set_head(self.head)

    def append(self, event: MetadataEvent) -> bytes:
        self.seq += 1
        self.time += _TICK
        block = MetadataBlock(
            system_time=Timestamp.from_datetime(self.time),
            prev_block_hash=self.head,
            sequence_number=self.seq,
            event=event,
        )
        h = self.store("block", encode_block(block))
        self.head = h
        return h

    def _random_file(
        self, kind_: ObjectKind, size: int, progress: ProgressFn | None
    ) -> tuple[bytes, int]:
        """``size`` pseudo-random bytes in a new object (streamed when large)."""
        if size <= _SMALL:
            mh = self.store(kind_, self.rng.randbytes(size))
            if progress is not None:
                progress(size)
            return mh, size

        def chunks() -> Iterator[bytes]:
            left = size
            while left:
                n = min(left, _WRITE_CHUNK)
                yield self.rng.randbytes(n)
                left -= n
                if progress is not None:
                    progress(n)

        mh = self.writer.write_new_object(kind_, chunks())
        return mh, size

    def data_file(
        self, records: int, size: int, watermark: datetime, progress: ProgressFn | None
    ) -> tuple[bytes, int]:
        """A Parquet data file of the next block: ``records`` records from the next offset.

        ``system_time`` is the next block's; event times run up to ``watermark`` over
        the second before it.
        """
        start = 0 if self.last_offset is None else self.last_offset + 1
        wm = _millis(watermark)
        written = 0

        def chunks() -> Iterator[bytes]:
            nonlocal written
            for part in payload_file(
                start_offset=start,
                records=records,
                system_time_ms=_millis(self.time + _TICK),
                event_time_range_ms=(wm - 999, wm),
                size=size,
                randbytes=self.rng.randbytes,
            ):
                written += len(part)
                if progress is not None:
                    progress(len(part))
                yield part

        parts = list(chunks()) if size <= _SMALL else None
        if parts is not None and len(parts) == 1:
            return self.store("data", parts[0]), written
        mh = self.writer.write_new_object("data", iter(parts) if parts else chunks())
        return mh, written

    def _linked_data_file(
        self, count: int, total: int, progress: ProgressFn | None
    ) -> tuple[bytes, int, int, LinkedSummary]:
        """``count`` linked objects (ODF RFC-017, ``data/<multihash>``) of ``total`` bytes,
        then the versioned-file data file naming them, one record (version) each.

        Objects first, the data file that links them after, the block last: a crash
        leaves no link to a missing object.
        """
        start = 0 if self.last_offset is None else self.last_offset + 1
        hashes: list[str] = []
        lengths: list[int] = []
        for size in _sizes(total, count):
            mh, n = self._random_file("linked", size, progress)
            hashes.append(multihash_to_str(mh))
            lengths.append(n)
            self.data_bytes += n
        data = versioned_file(
            start_offset=start,
            system_time_ms=_millis(self.time + _TICK),
            event_time_ms=_millis(self.time),
            # kamu's versioned file numbers entries from 1: version = offset + 1 here.
            first_version=start + 1,
            hashes=hashes,
            lengths=lengths,
            content_type=LINKED_CONTENT_TYPE,
        )
        mh = self.store("data", data)
        # kamu's LinkedObjectsSummary: every non-null link counted, duplicates included.
        return mh, len(data), count, LinkedSummary(count, sum(lengths))

    def add_data(
        self, data_bytes: int, progress: ProgressFn | None, linked_objects: int = 0
    ) -> bytes:
        """One AddData: a payload data file of ``data_bytes``, or with ``linked_objects``
        that many objects sharing ``data_bytes``, linked from a versioned-file data file."""
        extra = None
        if linked_objects:
            phys, size, records, summary = self._linked_data_file(
                linked_objects, data_bytes, progress
            )
            extra = encode_summary(summary)
        else:
            records = max(1, data_bytes // _RECORD_BYTES)
            phys, size = self.data_file(records, data_bytes, self.time, progress)
        start = 0 if self.last_offset is None else self.last_offset + 1
        cp_hash, cp_size = self._random_file("checkpoint", _CHECKPOINT_BYTES, None)
        event = AddData(
            prev_checkpoint=self.last_checkpoint,
            prev_offset=self.last_offset,
            new_data=DataSlice(
                logical_hash=phys,
                physical_hash=phys,
                offset_interval=OffsetInterval(start=start, end=start + records - 1),
                size=size,
            ),
            new_checkpoint=Checkpoint(physical_hash=cp_hash, size=cp_size),
            new_watermark=Timestamp.from_datetime(self.time),
            extra=extra,
        )
        self.last_offset = start + records - 1
        self.last_checkpoint = cp_hash
        self.data_bytes += size
        return self.append(event)


def _millis(t: datetime) -> int:
    return int(t.timestamp()) * 1000 + t.microsecond // 1000


def _sizes(total: int, blocks: int) -> list[int]:
    """Split ``total`` bytes over ``blocks`` files as evenly as possible."""
    if blocks <= 0:
        return []
    base, extra = divmod(total, blocks)
    return [base + (1 if i < extra else 0) for i in range(blocks)]


def create_root_dataset(
    path: str | os.PathLike[str],
    *,
    blocks: int = 5,
    data_bytes: int = 64 * 1024,
    seed: int = 0,
    description: str = "Example dataset written by odfweb3",
    progress: ProgressFn | None = None,
    fsync: bool = True,
    keypair: DatasetKeyPair | None = None,
    linked_objects: int = 0,
    block_progress: ProgressFn | None = None,
    with_license: bool = True,
) -> BuiltDataset:
    """Write a new root dataset at ``path`` (which must be absent or empty).

    Args:
        path: the dataset directory to create.
        blocks: number of AddData blocks (each with one data file and a checkpoint).
        data_bytes: total bytes of data, split evenly over the data files.
        seed: makes the dataset deterministic (same seed, same head hash).
        description: the SetInfo description.
        progress: called with bytes written, for progress bars.
        block_progress: called with 1 after each data block: a bar's count (the bytes
            written are not known beforehand: a Parquet file outweighs a small payload).
        fsync: fsync each object (off for large benchmark datasets).
        keypair: the dataset's identity key (default: :func:`example_keypair` of ``seed``;
            the CLI passes a fresh one unless ``--seed`` is given).
        linked_objects: with N > 0, kamu's "versioned file" archetype: each AddData links
            N objects (``data/<multihash>``, ODF RFC-017) from its ``content_hash`` column
            and sums them in ``opendatafabric.org/linkedObjects``; ``data_bytes`` is then
            the objects' total.
        with_license: write the SetLicense (off: a dataset that says no license, as a
            catalogue would meet it).
    """
    if linked_objects < 0:
        raise UsageError("example: --linked-objects must be 0 or more")
    root = Path(path)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise UsageError(f"{root}: exists and is not an empty directory; choose a new directory")
    # Built in a temporary sibling and renamed into place at the end: a failure (a full
    # disk, Ctrl-C) leaves no half-written dataset to block the next run.
    try:
        root.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{root.name}.tmp-", dir=root.parent))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(work, 0o777 & ~umask)  # mkdtemp's 0700 would outlive the rename
    except OSError as exc:
        raise local_io_error(exc, root.parent) from None
    try:
        built = _build_root(
            work,
            blocks,
            data_bytes,
            seed,
            description,
            progress,
            fsync,
            keypair,
            linked_objects,
            block_progress,
            with_license,
        )
        os.replace(work, root)  # onto an absent or empty directory
        if fsync:
            fsync_dir(root.parent)
    except BaseException as exc:
        shutil.rmtree(work, ignore_errors=True)
        if isinstance(exc, OSError):
            raise local_io_error(exc, root) from None
        raise
    return replace(built, path=root)


def _build_root(
    root: Path,
    blocks: int,
    data_bytes: int,
    seed: int,
    description: str,
    progress: ProgressFn | None,
    fsync: bool,
    keypair: DatasetKeyPair | None,
    linked_objects: int,
    block_progress: ProgressFn | None = None,
    with_license: bool = True,
) -> BuiltDataset:
    keypair = keypair or example_keypair(seed)
    with _ChainAppender(root, fsync, random.Random(seed)) as app:
        app.append(Seed(dataset_id=keypair.dataset_id.to_bytes(), dataset_kind=DatasetKind.ROOT))
        app.append(SetInfo(description=description, keywords=("example", "odfweb3")))
        if with_license:
            app.append(
                SetLicense(
                    short_name="CC0-1.0",
                    name="Creative Commons Zero v1.0 Universal",
                    spdx_id="CC0-1.0",
                    website_url="https://creativecommons.org/publicdomain/zero/1.0/",
                )
            )
        # kamu refuses data before a schema ("SetDataSchema event must be present before
        # adding data", ValidateAddDataVisitor); its ingest commits the schema just before.
        app.append(set_data_schema(VERSIONED_FILE_SCHEMA if linked_objects else PAYLOAD_SCHEMA))
        for size in _sizes(data_bytes, blocks):
            app.add_data(size, progress, linked_objects)
            if block_progress is not None:
                block_progress(1)
        assert app.head is not None
        app.finish()
        return BuiltDataset(root, app.head, app.seq + 1, app.data_bytes, keypair)


def append_blocks(
    path: str | os.PathLike[str],
    count: int,
    *,
    data_bytes: int = 16 * 1024,
    seed: int | None = None,
    progress: ProgressFn | None = None,
    fsync: bool = True,
    linked_objects: int | None = None,
    block_progress: ProgressFn | None = None,
) -> BuiltDataset:
    """Append ``count`` AddData blocks (``data_bytes`` in total) to the dataset at ``path``.

    The new data is deterministic for a given ``seed`` and current head. A dataset
    whose schema has ``ObjectLink`` columns (written with ``linked_objects``) gets
    ``linked_objects`` objects a block (default 1); giving it for any other is an error.
    """
    reader = DatasetReader.open(path)
    head = reader.head()
    entries = list(walk_chain(reader, head))
    tip = entries[0].block
    rng_seed = seed if seed is not None else int.from_bytes(head[2:10], "big")
    with _ChainAppender(reader.root, fsync, random.Random(rng_seed)) as app:
        app.head, app.seq = head, tip.sequence_number
        app.time = max(tip.system_time.to_datetime(), EPOCH)
        schema: SetDataSchema | None = None
        seen_data_block = False
        for entry in entries:  # head first: the first slice found is the last one
            ev = entry.block.event
            if isinstance(ev, SetDataSchema) and schema is None:
                schema = ev
            if isinstance(ev, AddData | ExecuteTransform):
                iv = ev.new_data.offset_interval if ev.new_data is not None else None
                if app.last_offset is None and iv is not None:
                    app.last_offset = iv.end
                # kamu: prevCheckpoint is the previous data block's newCheckpoint, absent when
                # that block wrote none (ValidateAddDataVisitor).
                if not seen_data_block and ev.new_checkpoint is not None:
                    app.last_checkpoint = ev.new_checkpoint.physical_hash
                seen_data_block = True
        links = link_columns(schema, f"{reader.root}: SetDataSchema") if schema else ()
        if links and links != (CONTENT_HASH_COLUMN,):
            raise UsageError(
                f"{reader.root}: its ObjectLink columns {', '.join(links)} are not the example's "
                f"({CONTENT_HASH_COLUMN}); append to it with the tool that wrote it"
            )
        if linked_objects is not None and not links:
            raise UsageError(
                f"{reader.root}: has no ObjectLink column, so no linked objects can be added; "
                "drop --linked-objects, or write a new example with it"
            )
        per_block = (1 if linked_objects is None else linked_objects) if links else 0
        if links and per_block < 1:
            raise UsageError("example: --linked-objects must be at least 1 for this dataset")
        if schema is None:  # a chain written before the example declared one
            app.append(set_data_schema(PAYLOAD_SCHEMA))
        for size in _sizes(data_bytes, count):
            app.add_data(max(size, 1), progress, per_block)
            if block_progress is not None:
                block_progress(1)
        assert app.head is not None
        app.finish()
        return BuiltDataset(reader.root, app.head, app.seq + 1, app.data_bytes, None)
