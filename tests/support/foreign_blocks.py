"""Block files encoded unlike odfweb3's encoder, as other writers (kamu before 0.265) made them.

FlatBuffers leaves the byte layout to the writer: the order fields are written in (and so
the table and vtable layout), whether fields equal to their default are written, and what
else the buffer holds. ODF hashes the block file's bytes, so two writers can encode the same
block into different files with different hashes, and a reader must keep the bytes it was
given: re-encoding would change the hash every later block names (``prevBlockHash``).

:func:`foreign_block_bytes` encodes a block another way, on all three counts: each table's
fields written in the reverse of our order (the same generated encoders, through a builder
that replays a table's slots backwards), defaults written out (``ForceDefaults``), an
unreferenced byte vector before each root (padding our encoder never writes), and the
``Manifest`` wrapper's slots reversed too. The bytes decode to the same block.
:func:`rewrite_foreign` turns a dataset into one whose every block is so encoded.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import flatbuffers

from odfweb3.odf import _codec_gen as gen
from odfweb3.odf import model_gen as m
from odfweb3.odf.chain import walk_chain
from odfweb3.odf.codec import (
    METADATA_BLOCK_KIND,
    METADATA_BLOCK_VERSION,
    block_hash,
    decode_block,
    encode_block,
)
from odfweb3.odf.layout import DatasetReader, DatasetWriter

__all__ = ["foreign_block_bytes", "rewrite_foreign"]

_PADDING = b"written by another ODF implementation"


class _ReversedSlotsBuilder(flatbuffers.Builder):  # type: ignore[misc]
    """Writes each table's scalar and offset slots in the reverse of the order given."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self._pending: list[tuple[str, tuple[Any, ...]]] | None = None
        self.ForceDefaults(True)

    def StartObject(self, numfields: int) -> None:
        super().StartObject(numfields)
        self._pending = []

    def PrependSlot(self, *args: Any) -> None:
        if self._pending is None:
            super().PrependSlot(*args)
        else:
            self._pending.append(("PrependSlot", args))

    def PrependUOffsetTRelativeSlot(self, slot: int, off: int, default: int) -> None:
        if off == default:
            return  # an absent table, vector or string: ForceDefaults must not write offset 0
        if self._pending is None:
            super().PrependUOffsetTRelativeSlot(slot, off, default)
        else:
            self._pending.append(("PrependUOffsetTRelativeSlot", (slot, off, default)))

    def EndObject(self) -> int:
        pending, self._pending = self._pending or [], None
        for name, args in reversed(pending):
            getattr(flatbuffers.Builder, name)(self, *args)
        return int(super().EndObject())


def foreign_block_bytes(block: m.MetadataBlock) -> bytes:
    """The block file of ``block`` as another writer might encode it (never our bytes)."""
    b = _ReversedSlotsBuilder(1024)
    b.CreateByteVector(_PADDING)  # referenced by nothing: padding in the buffer
    root = gen.ENCODERS[m.MetadataBlock](b, block)
    b.Finish(root)
    content = bytes(b.Output())
    outer = flatbuffers.Builder(len(content) + 128)
    outer.CreateByteVector(_PADDING)
    off = outer.CreateByteVector(content)
    outer.StartObject(3)
    outer.PrependUOffsetTRelativeSlot(2, off, 0)  # content first: the reverse of ours
    outer.PrependInt32Slot(1, METADATA_BLOCK_VERSION, 0)
    outer.PrependInt64Slot(0, METADATA_BLOCK_KIND, 0)
    outer.Finish(outer.EndObject())
    data = bytes(outer.Output())
    if decode_block(data) != block or data == encode_block(block):
        raise AssertionError("foreign encoding must decode to the block and differ from ours")
    return data


def rewrite_foreign(source: Path, dest: Path) -> list[bytes]:
    """Copy dataset ``source`` to ``dest`` with every block foreign-encoded, relinked.

    Each block's ``prevBlockHash`` names the rewritten parent, so the chain is whole and
    every block hashes as named. Returns the new block hashes, oldest first.
    """
    entries = list(walk_chain(DatasetReader.open(source)))[::-1]  # oldest first
    dest.mkdir(parents=True)
    for folder in ("data", "checkpoints"):
        if (source / folder).is_dir():
            shutil.copytree(source / folder, dest / folder)
    writer = DatasetWriter(dest, fsync=False)
    prev: bytes | None = None
    hashes = []
    for entry in entries:
        block = entry.block
        relinked = m.MetadataBlock(block.system_time, prev, block.sequence_number, block.event)
        data = foreign_block_bytes(relinked)
        prev = block_hash(data)
        writer.write_object("block", prev, data)
        hashes.append(prev)
    assert prev is not None
    writer.set_head(prev)
    return hashes
