"""Datasets with linked objects (ODF RFC-017), written as kamu writes them.

kamu's "versioned file" archetype (``kamu.dev/archetype: VersionedFile``): one row per
version, the file's bytes in ``data/<multihash>`` named by its ``content_hash``
column (``String``, extra ``opendatafabric.org/type: {kind: ObjectLink, linkType:
{kind: Multihash}}``), its length and media type beside it; each ``AddData`` carries
``opendatafabric.org/linkedObjects: {numObjectsNaive, sizeNaive}``. The data files are real
Parquet (pyarrow) with the ODF system columns.
"""

from __future__ import annotations

import hashlib
import io
import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from odfweb3.odf.chain import walk_chain
from odfweb3.odf.codec import block_hash, encode_block
from odfweb3.odf.identity import DatasetKeyPair, generate_keypair
from odfweb3.odf.layout import DatasetReader, DatasetWriter
from odfweb3.odf.linked import LinkedSummary, encode_summary, object_link_extra
from odfweb3.odf.model_gen import (
    AddData,
    DataField,
    DataSchema,
    DatasetKind,
    DataSlice,
    DataTypeInt32,
    DataTypeInt64,
    DataTypeOption,
    DataTypeString,
    DataTypeTimestamp,
    DataTypeUInt8,
    DataTypeUInt64,
    ExtraAttributes,
    MetadataBlock,
    MetadataEvent,
    OffsetInterval,
    Seed,
    SetDataSchema,
    TimeUnit,
)
from odfweb3.odf.multihash import hash_bytes, multihash_to_str
from odfweb3.odf.timestamp import Timestamp

EPOCH = datetime(2050, 1, 1, 12, 0, 0, tzinfo=UTC)


@dataclass
class LinkedDataset:
    path: Path
    keypair: DatasetKeyPair
    linked: list[bytes]  # every linked hash, in the order written
    data_files: list[bytes]

    @property
    def dataset_id(self) -> str:
        return str(self.keypair.dataset_id)

    @property
    def head(self) -> bytes:
        return DatasetReader.open(self.path).head()

    def linked_path(self, mh: bytes) -> Path:
        return self.path / "data" / multihash_to_str(mh)


def _ts(unit: TimeUnit = TimeUnit.MILLISECOND) -> DataTypeTimestamp:
    return DataTypeTimestamp(unit=unit, timezone="UTC")


def _described(text: str, extra: ExtraAttributes | None = None) -> ExtraAttributes:
    entries = json.loads(extra.entries or "{}") if extra is not None else {}
    entries["opendatafabric.org/description"] = text
    return ExtraAttributes(json.dumps(entries))


def versioned_file_schema() -> SetDataSchema:
    """The schema kamu gives a versioned-file dataset: the changelog system columns, then
    ``version`` (Int32), ``content_hash`` (String, ObjectLink to a Multihash),
    ``content_length`` (Int64), ``content_type`` (optional String), each described, and the
    archetype (kamu-cli's versioned-file dataset snapshot, read through the search tool)."""
    fields = (
        DataField(name="offset", type=DataTypeUInt64()),
        DataField(name="op", type=DataTypeUInt8()),
        DataField(name="system_time", type=_ts()),
        DataField(name="event_time", type=DataTypeOption(inner=_ts())),
        DataField(
            name="version",
            type=DataTypeInt32(),
            extra=_described("Sequential identifier assigned to each entry"),
        ),
        DataField(
            name="content_hash",
            type=DataTypeString(),
            extra=_described("Hash that references the linked object", object_link_extra()),
        ),
        DataField(
            name="content_length",
            type=DataTypeInt64(),
            extra=_described("Size of the linked object in bytes"),
        ),
        DataField(
            name="content_type",
            type=DataTypeOption(inner=DataTypeString()),
            extra=_described("Media type associated with the linked object"),
        ),
    )
    archetype = ExtraAttributes(json.dumps({"kamu.dev/archetype": "VersionedFile"}))
    return SetDataSchema(schema=DataSchema(fields=fields, extra=archetype))


def parquet_rows(rows: list[dict], *, row_group_size: int | None = None) -> bytes:
    schema = pa.schema(
        [
            ("offset", pa.uint64()),
            ("op", pa.uint8()),
            ("system_time", pa.timestamp("ms", tz="UTC")),
            ("event_time", pa.timestamp("ms", tz="UTC")),
            ("version", pa.int32()),
            ("content_hash", pa.string()),
            ("content_length", pa.int64()),
            ("content_type", pa.string()),
        ]
    )
    table = pa.Table.from_pylist(rows, schema=schema)
    buf = io.BytesIO()
    pq.write_table(table, buf, row_group_size=row_group_size)
    return buf.getvalue()


class _Chain:
    def __init__(self, root: Path, writer: DatasetWriter) -> None:
        self.root = root
        self.writer = writer
        self.head: bytes | None = None
        self.seq = -1
        self.time = EPOCH
        self.last_offset: int | None = None
        self.version = 0
        reader = DatasetReader.open(root)
        if (root / "refs" / "head").is_file():  # an empty dataset has no head yet
            self.head = reader.head()
            entries = list(walk_chain(reader))
            self.seq = entries[0].block.sequence_number
            self.time = entries[0].block.system_time.to_datetime()
            for e in entries:
                ev = e.block.event
                if isinstance(ev, AddData) and ev.new_data is not None:
                    iv = ev.new_data.offset_interval
                    if iv is not None and self.last_offset is None:
                        self.last_offset = iv.end
                    self.version += 0 if iv is None else iv.end - iv.start + 1

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

    def add_versions(
        self,
        contents: list[bytes | None],
        *,
        summary: LinkedSummary | bool | None = True,
        write_objects: bool = True,
        row_group_size: int | None = None,
        raw_data: bytes | None = None,
    ) -> tuple[bytes, list[bytes]]:
        """One AddData whose data file has one row per content (None: a null link);
        ``raw_data``: the data file's bytes instead (e.g. not Parquet)."""
        start = 0 if self.last_offset is None else self.last_offset + 1
        rows, linked = [], []
        for i, content in enumerate(contents):
            self.version += 1
            mh = None if content is None else hash_bytes(content)
            if mh is not None:
                linked.append(mh)
                if write_objects:
                    self.writer.write_object("linked", mh, content)
            rows.append(
                {
                    "offset": start + i,
                    "op": 0,
                    "system_time": self.time + timedelta(seconds=1),
                    "event_time": self.time,
                    "version": self.version,
                    "content_hash": None if mh is None else multihash_to_str(mh),
                    "content_length": 0 if content is None else len(content),
                    "content_type": "application/octet-stream",
                }
            )
        data = parquet_rows(rows, row_group_size=row_group_size) if raw_data is None else raw_data
        phys = hash_bytes(data)
        self.writer.write_object("data", phys, data)
        extra = None
        if summary is True:
            summary = LinkedSummary(
                sum(1 for c in contents if c is not None),
                sum(len(c) for c in contents if c is not None),
            )
        if isinstance(summary, LinkedSummary):
            extra = encode_summary(summary)
        end = start + len(contents) - 1
        self.append(
            AddData(
                prev_offset=self.last_offset,
                new_data=DataSlice(
                    logical_hash=phys,
                    physical_hash=phys,
                    offset_interval=OffsetInterval(start=start, end=end),
                    size=len(data),
                ),
                new_watermark=Timestamp.from_datetime(self.time),
                extra=extra,
            )
        )
        self.last_offset = end
        return phys, linked


def content(seed: int, i: int, size: int) -> bytes:
    return random.Random(f"{seed}/{i}").randbytes(size)


def create_linked_dataset(
    path: Path, *, versions: int = 3, size: int = 3000, seed: int = 0
) -> LinkedDataset:
    """A root dataset: Seed, SetDataSchema (versioned file), ``versions`` AddData blocks,
    each linking one new object of ``size`` bytes."""
    material = hashlib.sha256(b"odfweb3 linked test dataset\x00" + str(seed).encode()).digest()
    keypair = generate_keypair(material)
    writer = DatasetWriter(path, fsync=False)
    chain = _Chain(path, writer)
    chain.append(Seed(dataset_id=keypair.dataset_id.to_bytes(), dataset_kind=DatasetKind.ROOT))
    chain.append(versioned_file_schema())
    ds = LinkedDataset(path, keypair, [], [])
    for i in range(versions):
        phys, linked = chain.add_versions([content(seed, i, size + i)])
        ds.data_files.append(phys)
        ds.linked.extend(linked)
    assert chain.head is not None
    writer.set_head(chain.head)
    return ds


def append_linked(
    ds: LinkedDataset,
    contents: list[bytes | None],
    **kwargs,
) -> tuple[bytes, list[bytes]]:
    """One more AddData block linking ``contents``; ``refs/head`` moved last."""
    writer = DatasetWriter(ds.path, fsync=False)
    chain = _Chain(ds.path, writer)
    phys, linked = chain.add_versions(contents, **kwargs)
    assert chain.head is not None
    writer.set_head(chain.head)
    ds.data_files.append(phys)
    ds.linked.extend(linked)
    return phys, linked
