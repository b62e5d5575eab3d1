"""What a verified chain says at its head, kept so the next publish reads only new blocks.

A :class:`ChainFacts` holds, for one head, everything a publish needs without walking
the chain again (issue 19): the chain-rule state the next block is checked against
(:class:`~odfweb3.odf.validate.ChainState`'s fields: kind, last offset, checkpoint and
watermark, the tip's sequence number and system time), the dataset's identity and the
discovery descriptor's facts (latest ``SetInfo`` / ``SetLicense`` / ``SetAttachments``,
created and modified times, the counts and total size of its distinct objects).

:func:`extend_facts` computes the facts at a new head from the facts at an ancestor and
the blocks above it. The object counts count each object once (as
:func:`~odfweb3.odf.chain.iter_objects` does), so a new block naming an object an older
block named must not be counted again: the facts carry an :class:`ObjectFilter` (a Bloom
filter of every data file and checkpoint the chain names), and when it cannot rule out
such a repeat :func:`extend_facts` returns None and the caller walks the whole chain.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from odfweb3.odf.chain import ChainEntry, DatasetObject, iter_objects
from odfweb3.odf.model_gen import (
    AddData,
    DatasetKind,
    ExecuteTransform,
    Seed,
    SetAttachments,
    SetInfo,
    SetLicense,
)
from odfweb3.odf.timestamp import Timestamp

__all__ = ["ChainFacts", "ObjectFilter", "extend_facts", "facts_of_chain"]

_BITS_PER_OBJECT = 16  # with 4 probes: ~0.24 % false positives at capacity
_PROBES = 4
_MIN_BITS = 1 << 13


@dataclass(frozen=True)
class ObjectFilter:
    """A Bloom filter over ``(kind, hash)`` of data files and checkpoints.

    ``bits`` is a power of two; ``count`` how many objects were added. A filter past
    its capacity (``count * 8 > bits``) is not extended (the caller rebuilds it).
    """

    bits: int
    count: int
    data: bytes

    @classmethod
    def sized_for(cls, n: int) -> ObjectFilter:
        """An empty filter with room for about ``2 * n`` objects."""
        bits = _MIN_BITS
        while bits < 2 * n * _BITS_PER_OBJECT:
            bits <<= 1
        return cls(bits, 0, bytes(bits // 8))

    @staticmethod
    def _probes(kind: str, mh: bytes, bits: int) -> list[int]:
        d = hashlib.blake2b(kind.encode() + b"\0" + mh, digest_size=4 * _PROBES).digest()
        return [int.from_bytes(d[4 * i : 4 * i + 4], "little") & (bits - 1) for i in range(_PROBES)]

    def may_hold(self, kind: str, mh: bytes) -> bool:
        """False when ``(kind, mh)`` was certainly never added."""
        data = self.data
        return all(data[p >> 3] >> (p & 7) & 1 for p in self._probes(kind, mh, self.bits))

    def full(self) -> bool:
        """Past capacity: too many false positives to be worth extending."""
        return self.count * 8 > self.bits

    def with_objects(self, objs: Iterable[tuple[str, bytes]]) -> ObjectFilter:
        """A copy with ``objs`` added."""
        buf = bytearray(self.data)
        count = self.count
        for kind, mh in objs:
            for p in self._probes(kind, mh, self.bits):
                buf[p >> 3] |= 1 << (p & 7)
            count += 1
        return ObjectFilter(self.bits, count, bytes(buf))


@dataclass(frozen=True)
class ChainFacts:
    """Facts of a verified chain at ``head`` (see the module docstring).

    Attributes:
        dataset_id: the Seed's dataset ID (raw multicodec bytes, as in the Seed).
        head / sequence / modified: the head block's hash, sequence number, system time.
        kind: the dataset kind (from the Seed).
        created: the Seed's system time.
        last_offset / last_checkpoint / last_watermark: what the chain rules check the
            next data event against (:class:`~odfweb3.odf.validate.ChainState`).
        info / license / attachments: the latest ``SetInfo``, ``SetLicense`` and the
            paths of the latest ``SetAttachments`` (None when there is none).
        objects / object_bytes: distinct objects (blocks, data files, checkpoints) and
            the sum of their recorded sizes; data_* and checkpoint_* the same per kind.
        records: records in all data slices.
        seen: the filter of every data file and checkpoint named so far.
    """

    dataset_id: bytes
    head: bytes
    sequence: int
    modified: Timestamp
    kind: DatasetKind
    created: Timestamp
    last_offset: int | None
    last_checkpoint: bytes | None
    last_watermark: Timestamp | None
    info: SetInfo | None
    license: SetLicense | None
    attachments: tuple[str, ...] | None
    objects: int
    object_bytes: int
    data_files: int
    data_bytes: int
    checkpoints: int
    checkpoint_bytes: int
    records: int
    seen: ObjectFilter


def _attachment_paths(ev: SetAttachments) -> tuple[str, ...]:
    items = getattr(ev.attachments, "items", None) if ev.attachments is not None else None
    return tuple(i.path for i in items or () if i.path)


def _apply(
    facts: ChainFacts, entries_oldest_first: Sequence[ChainEntry], new_objs: list[DatasetObject]
) -> ChainFacts:
    """``facts`` advanced over the entries, their distinct new objects given."""
    info, lic, att = facts.info, facts.license, facts.attachments
    offset, checkpoint, watermark = facts.last_offset, facts.last_checkpoint, facts.last_watermark
    records = facts.records
    for e in entries_oldest_first:
        ev = e.block.event
        if isinstance(ev, SetInfo):
            info = ev
        elif isinstance(ev, SetLicense):
            lic = ev
        elif isinstance(ev, SetAttachments):
            att = _attachment_paths(ev)
        elif isinstance(ev, AddData | ExecuteTransform):
            iv = ev.new_data.offset_interval if ev.new_data is not None else None
            if iv is not None:
                offset = iv.end
                records += iv.end - iv.start + 1
            if ev.new_checkpoint is not None:
                checkpoint = ev.new_checkpoint.physical_hash
            if ev.new_watermark is not None:
                watermark = ev.new_watermark
    data = [o for o in new_objs if o.kind == "data"]
    cps = [o for o in new_objs if o.kind == "checkpoint"]
    tip = entries_oldest_first[-1]
    return replace(
        facts,
        head=tip.hash,
        sequence=tip.block.sequence_number,
        modified=tip.block.system_time,
        last_offset=offset,
        last_checkpoint=checkpoint,
        last_watermark=watermark,
        info=info,
        license=lic,
        attachments=att,
        objects=facts.objects + len(new_objs),
        object_bytes=facts.object_bytes + sum(o.size or 0 for o in new_objs),
        data_files=facts.data_files + len(data),
        data_bytes=facts.data_bytes + sum(o.size or 0 for o in data),
        checkpoints=facts.checkpoints + len(cps),
        checkpoint_bytes=facts.checkpoint_bytes + sum(o.size or 0 for o in cps),
        records=records,
        seen=facts.seen.with_objects((o.kind, o.hash) for o in new_objs if o.kind != "block"),
    )


def facts_of_chain(entries: Sequence[ChainEntry]) -> ChainFacts:
    """The facts of a whole verified chain given head first (as ``walk_chain`` yields it).

    Raises:
        ValueError: the chain does not end at a Seed.
    """
    if not entries or not isinstance(entries[-1].block.event, Seed):
        raise ValueError("chain facts need a whole chain ending at its Seed")
    seed_entry = entries[-1]
    seed = seed_entry.block.event
    assert isinstance(seed, Seed)
    objs = list(iter_objects(entries))
    empty = ChainFacts(
        dataset_id=seed.dataset_id or b"",
        head=seed_entry.hash,
        sequence=0,
        modified=seed_entry.block.system_time,
        kind=seed.dataset_kind,
        created=seed_entry.block.system_time,
        last_offset=None,
        last_checkpoint=None,
        last_watermark=None,
        info=None,
        license=None,
        attachments=None,
        objects=0,
        object_bytes=0,
        data_files=0,
        data_bytes=0,
        checkpoints=0,
        checkpoint_bytes=0,
        records=0,
        # sized for what it holds: data files and checkpoints (blocks are never added)
        seen=ObjectFilter.sized_for(sum(1 for o in objs if o.kind != "block")),
    )
    return _apply(empty, list(reversed(entries)), objs)


def extend_facts(facts: ChainFacts, new_head_first: Sequence[ChainEntry]) -> ChainFacts | None:
    """The facts at ``new_head_first[0]``, the blocks above ``facts.head`` given head first.

    None when a new block may name an object an older block named (the filter cannot rule
    it out) or the filter is full: the caller computes the facts from the whole chain.
    """
    if not new_head_first:
        return facts
    if facts.seen.full():
        return None
    new = [o for o in iter_objects(new_head_first)]
    for o in new:
        if o.kind != "block" and facts.seen.may_hold(o.kind, o.hash):
            return None
    return _apply(facts, list(reversed(new_head_first)), new)
