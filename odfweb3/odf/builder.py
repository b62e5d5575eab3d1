"""Example datasets for tests, benchmarks, docs and the demo.

:func:`create_root_dataset` writes a root dataset: Seed, SetInfo, SetLicense, SetDataSchema and
N AddData blocks, each with a data part file and a checkpoint of chosen sizes;
:func:`append_blocks` adds AddData blocks to an existing dataset. Both are
deterministic for a given seed (same bytes, same hashes), write every object
atomically, and move ``refs/head`` last.

What the data files are: **opaque pseudo-random bytes**, not Parquet. odfweb3
treats data as opaque, so nothing here needs real records. Consequently
``DataSlice.logicalHash`` cannot be the ODF logical hash (which is computed over
the Arrow records by a data engine): the builder fills it with the SHA3-256
multihash of the file bytes, the same value as ``physicalHash``. odfweb3 never
claims to verify logical hashes. Each data file counts as ``max(1, size // 100)``
records for the offset intervals.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

from odfweb3.errors import UsageError
from odfweb3.odf.chain import walk_chain
from odfweb3.odf.codec import block_hash, encode_block
from odfweb3.odf.example_schema import PAYLOAD_SCHEMA, set_data_schema
from odfweb3.odf.identity import DatasetKeyPair, generate_keypair
from odfweb3.odf.layout import DatasetReader, DatasetWriter, local_io_error
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

    def __init__(self, writer: DatasetWriter, rng: random.Random) -> None:
        self.writer = writer
        self.rng = rng
        self.head: bytes | None = None
        self.seq = -1
        self.last_offset: int | None = None
        self.last_checkpoint: bytes | None = None
        self.time = EPOCH
        self.data_bytes = 0

    def append(self, event: MetadataEvent) -> bytes:
        self.seq += 1
        self.time += timedelta(seconds=1)
        block = MetadataBlock(
            system_time=Timestamp.from_datetime(self.time),
            prev_block_hash=self.head,
            sequence_number=self.seq,
            event=event,
        )
        data = encode_block(block)
        h = block_hash(data)
        self.writer.write_object("block", h, data)
        self.head = h
        return h

    def _random_file(self, kind: str, size: int, progress: ProgressFn | None) -> tuple[bytes, int]:
        """Stream ``size`` pseudo-random bytes into a new data or checkpoint object."""

        def chunks() -> Iterator[bytes]:
            left = size
            while left:
                n = min(left, _WRITE_CHUNK)
                yield self.rng.randbytes(n)
                left -= n
                if progress is not None:
                    progress(n)

        mh = self.writer.write_new_object("data" if kind == "data" else "checkpoint", chunks())
        return mh, size

    def add_data(self, data_bytes: int, progress: ProgressFn | None) -> bytes:
        phys, size = self._random_file("data", data_bytes, progress)
        records = max(1, size // _RECORD_BYTES)
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
        )
        self.last_offset = start + records - 1
        self.last_checkpoint = cp_hash
        self.data_bytes += size
        return self.append(event)


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
) -> BuiltDataset:
    """Write a new root dataset at ``path`` (which must be absent or empty).

    Args:
        path: the dataset directory to create.
        blocks: number of AddData blocks (each with one data file and a checkpoint).
        data_bytes: total bytes of data, split evenly over the data files.
        seed: makes the dataset deterministic (same seed, same head hash).
        description: the SetInfo description.
        progress: called with bytes written, for progress bars.
        fsync: fsync each object (off for large benchmark datasets).
        keypair: the dataset's identity key (default: :func:`example_keypair` of ``seed``;
            the CLI passes a fresh one unless ``--seed`` is given).
    """
    root = Path(path)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise UsageError(f"{root}: exists and is not an empty directory; choose a new directory")
    # Built in a temporary sibling and renamed into place at the end: a failure (a full
    # disk, Ctrl-C) leaves no half-written dataset to block the next run (issue 16 item 11).
    try:
        root.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{root.name}.tmp-", dir=root.parent))
    except OSError as exc:
        raise local_io_error(exc, root.parent) from None
    try:
        built = _build_root(work, blocks, data_bytes, seed, description, progress, fsync, keypair)
        os.replace(work, root)  # onto an absent or empty directory
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
) -> BuiltDataset:
    keypair = keypair or example_keypair(seed)
    app = _ChainAppender(DatasetWriter(root, fsync=fsync), random.Random(seed))
    app.append(Seed(dataset_id=keypair.dataset_id.to_bytes(), dataset_kind=DatasetKind.ROOT))
    app.append(SetInfo(description=description, keywords=("example", "odfweb3")))
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
    app.append(set_data_schema(PAYLOAD_SCHEMA))
    for size in _sizes(data_bytes, blocks):
        app.add_data(size, progress)
    assert app.head is not None
    app.writer.set_head(app.head)
    return BuiltDataset(root, app.head, app.seq + 1, app.data_bytes, keypair)


def append_blocks(
    path: str | os.PathLike[str],
    count: int,
    *,
    data_bytes: int = 16 * 1024,
    seed: int | None = None,
    progress: ProgressFn | None = None,
    fsync: bool = True,
) -> BuiltDataset:
    """Append ``count`` AddData blocks (``data_bytes`` in total) to the dataset at ``path``.

    The new data is deterministic for a given ``seed`` and current head.
    """
    reader = DatasetReader.open(path)
    head = reader.head()
    entries = list(walk_chain(reader, head))
    tip = entries[0].block
    rng_seed = seed if seed is not None else int.from_bytes(head[2:10], "big")
    app = _ChainAppender(DatasetWriter(reader.root, fsync=fsync), random.Random(rng_seed))
    app.head, app.seq = head, tip.sequence_number
    app.time = max(tip.system_time.to_datetime(), EPOCH)
    has_schema = False
    seen_data_block = False
    for entry in entries:  # head first: the first slice found is the last one
        ev = entry.block.event
        if isinstance(ev, SetDataSchema):
            has_schema = True
        if isinstance(ev, AddData | ExecuteTransform):
            if app.last_offset is None and ev.new_data is not None and ev.new_data.offset_interval:
                app.last_offset = ev.new_data.offset_interval.end
            # kamu: prevCheckpoint is the previous data block's newCheckpoint, absent when
            # that block wrote none (ValidateAddDataVisitor).
            if not seen_data_block and ev.new_checkpoint is not None:
                app.last_checkpoint = ev.new_checkpoint.physical_hash
            seen_data_block = True
    if not has_schema:  # a chain written before the example declared one
        app.append(set_data_schema(PAYLOAD_SCHEMA))
    for size in _sizes(data_bytes, count):
        app.add_data(max(size, 1), progress)
    assert app.head is not None
    app.writer.set_head(app.head)
    return BuiltDataset(reader.root, app.head, app.seq + 1, app.data_bytes, None)
