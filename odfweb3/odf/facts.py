"""What a verified chain says at its head, kept so the next publish reads only new blocks.

A :class:`ChainFacts` holds, for one head, everything a publish needs without walking
the chain again: the chain-rule state the next block is checked against
(the :class:`~odfweb3.odf.chain_rules.RuleState` and the tip's sequence number and
system time), the dataset's identity and the
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

from odfweb3.odf.chain import ChainEntry, DatasetObject, LinkSource, count_objects, iter_objects
from odfweb3.odf.chain_rules import RuleState, RuleStateBuilder, RuleStateWalk
from odfweb3.odf.linked import link_columns
from odfweb3.odf.model_gen import (
    AddData,
    AttachmentsEmbedded,
    DatasetKind,
    ExecuteTransform,
    Seed,
    SetAttachments,
    SetDataSchema,
    SetInfo,
    SetLicense,
)
from odfweb3.odf.timestamp import Timestamp

__all__ = ["ChainFacts", "FactsWalk", "ObjectFilter", "extend_facts", "facts_of_chain"]

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

    def offsets(self, kind: str, mh: bytes) -> list[int]:
        """The byte offsets in :attr:`data` that adding ``(kind, mh)`` sets bits in (a
        store of the filter can record what changed without comparing it whole)."""
        return [p >> 3 for p in self._probes(kind, mh, self.bits)]

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
        rules: what the chain rules check the next block against
            (:class:`~odfweb3.odf.chain_rules.RuleState`).
        info / license / attachments: the latest ``SetInfo``, ``SetLicense`` and the
            paths of the latest ``SetAttachments`` (None when there is none).
        objects / object_bytes: distinct objects (blocks, data files, checkpoints, linked
            objects) and the sum of their sizes (recorded in the blocks; a linked object's
            its file's); data_*, checkpoint_* and linked_* the same per kind.
        records: records in all data slices.
        seen: the filter of every data file, checkpoint and linked object named so far.
        link_columns: the ``ObjectLink`` columns of the newest ``SetDataSchema`` (RFC-017),
            in force for the next data file.
    """

    dataset_id: bytes
    head: bytes
    sequence: int
    modified: Timestamp
    kind: DatasetKind
    created: Timestamp
    rules: RuleState
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
    linked: int = 0
    linked_bytes: int = 0
    link_columns: tuple[str, ...] = ()


def _attachment_paths(ev: SetAttachments) -> tuple[str, ...]:
    if not isinstance(ev.attachments, AttachmentsEmbedded):  # none (the only kind ODF has)
        return ()
    return tuple(i.path for i in ev.attachments.items or () if i.path)


@dataclass
class _Latest:
    """What the blocks walked say of the chain's state (the latest of each, the records)."""

    info: SetInfo | None
    license: SetLicense | None
    attachments: tuple[str, ...] | None
    records: int
    columns: tuple[str, ...] = ()


def _apply(
    facts: ChainFacts, entries_oldest_first: Sequence[ChainEntry], new_objs: list[DatasetObject]
) -> ChainFacts:
    """``facts`` advanced over the entries, their distinct new objects given."""
    f = facts
    latest = _Latest(f.info, f.license, f.attachments, f.records, f.link_columns)
    rules = RuleStateBuilder(f.rules)
    for e in entries_oldest_first:
        ev = e.block.event
        rules.advance(ev)
        if isinstance(ev, SetInfo):
            latest.info = ev
        elif isinstance(ev, SetLicense):
            latest.license = ev
        elif isinstance(ev, SetAttachments):
            latest.attachments = _attachment_paths(ev)
        elif isinstance(ev, AddData | ExecuteTransform):
            iv = ev.new_data.offset_interval if ev.new_data is not None else None
            if iv is not None:
                latest.records += iv.end - iv.start + 1
        elif isinstance(ev, SetDataSchema):
            latest.columns = link_columns(ev)
    return _advanced(facts, entries_oldest_first[-1], latest, rules.state(), new_objs)


def _advanced(
    facts: ChainFacts,
    tip: ChainEntry,
    latest: _Latest,
    rules: RuleState,
    new_objs: Sequence[DatasetObject],
) -> ChainFacts:
    # One pass, no list per kind: a first publish gives every object of the dataset here.
    count = count_objects(new_objs)  # the glossary's one count (odf.chain)
    sizes = {"block": 0, "data": 0, "checkpoint": 0, "linked": 0}
    for o in new_objs:
        sizes[o.kind] += o.size or 0
    return replace(
        facts,
        head=tip.hash,
        sequence=tip.block.sequence_number,
        modified=tip.block.system_time,
        rules=rules,
        info=latest.info,
        license=latest.license,
        attachments=latest.attachments,
        objects=facts.objects + count.total,
        object_bytes=facts.object_bytes + sum(sizes.values()),
        data_files=facts.data_files + count.data_files,
        data_bytes=facts.data_bytes + sizes["data"],
        checkpoints=facts.checkpoints + count.checkpoints,
        checkpoint_bytes=facts.checkpoint_bytes + sizes["checkpoint"],
        linked=facts.linked + count.linked,
        linked_bytes=facts.linked_bytes + sizes["linked"],
        link_columns=latest.columns,
        records=latest.records,
        seen=facts.seen.with_objects((o.kind, o.hash) for o in new_objs if o.kind != "block"),
    )


def _empty(seed_entry: ChainEntry, objs: Sequence[DatasetObject]) -> ChainFacts:
    """The facts of the Seed alone, the filter sized for the chain's ``objs``."""
    seed = seed_entry.block.event
    assert isinstance(seed, Seed)
    return ChainFacts(
        dataset_id=seed.dataset_id or b"",
        head=seed_entry.hash,
        sequence=0,
        modified=seed_entry.block.system_time,
        kind=seed.dataset_kind,
        created=seed_entry.block.system_time,
        rules=RuleState(),
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


class FactsWalk:
    """:func:`facts_of_chain` over a walk from the head to the Seed, fed one block at a time
    and keeping none of them (an initial publish of 100,000 blocks): the latest
    of each fact is the first met walking back; the distinct objects are given at the end
    (as :func:`~odfweb3.odf.chain.iter_objects` yields them)."""

    def __init__(self) -> None:
        self._tip: ChainEntry | None = None
        self._seed: ChainEntry | None = None
        self._latest = _Latest(None, None, None, 0)
        self._found: set[str] = set()
        self._rules = RuleStateWalk()

    def feed(self, e: ChainEntry) -> None:
        """The next block walking back (head first)."""
        if self._tip is None:
            self._tip = e
        self._rules.feed(e)
        ev, latest, found = e.block.event, self._latest, self._found
        if isinstance(ev, SetInfo):
            if "info" not in found:
                found.add("info")
                latest.info = ev
        elif isinstance(ev, SetLicense):
            if "license" not in found:
                found.add("license")
                latest.license = ev
        elif isinstance(ev, SetAttachments):
            if "attachments" not in found:
                found.add("attachments")
                latest.attachments = _attachment_paths(ev)
        elif isinstance(ev, AddData | ExecuteTransform):
            iv = ev.new_data.offset_interval if ev.new_data is not None else None
            if iv is not None:
                latest.records += iv.end - iv.start + 1
        elif isinstance(ev, SetDataSchema):
            if "schema" not in found:
                found.add("schema")
                latest.columns = link_columns(ev)
        elif isinstance(ev, Seed):
            self._seed = e

    def facts(self, objs: Sequence[DatasetObject]) -> ChainFacts:
        """The facts at the head, ``objs`` being every distinct object of the chain.

        Raises:
            ValueError: the walk did not end at a Seed.
        """
        seed = self._seed
        if self._tip is None or seed is None or seed.block.prev_block_hash is not None:
            raise ValueError("chain facts need a whole chain ending at its Seed")
        return _advanced(_empty(seed, objs), self._tip, self._latest, self._rules.state(), objs)


def facts_of_chain(entries: Sequence[ChainEntry], links: LinkSource | None = None) -> ChainFacts:
    """The facts of a whole verified chain given head first (as ``walk_chain`` yields it);
    with ``links``, its linked objects counted too.

    Raises:
        ValueError: the chain does not end at a Seed.
    """
    if not entries or not isinstance(entries[-1].block.event, Seed):
        raise ValueError("chain facts need a whole chain ending at its Seed")
    objs = list(iter_objects(entries, links))
    return _apply(_empty(entries[-1], objs), list(reversed(entries)), objs)


def extend_facts(
    facts: ChainFacts,
    new_head_first: Sequence[ChainEntry],
    links: LinkSource | None = None,
    *,
    objects: Sequence[DatasetObject] | None = None,
) -> ChainFacts | None:
    """The facts at ``new_head_first[0]``, the blocks above ``facts.head`` given head first
    (with ``links``, the linked objects of their data files too; ``objects``: the objects
    they name, ``iter_objects`` of them, when the caller has them already).

    None when a new block may name an object an older block named (the filter cannot rule
    it out) or the filter is full: the caller computes the facts from the whole chain.
    """
    if not new_head_first:
        return facts
    if facts.seen.full():
        return None
    new = (
        list(objects)
        if objects is not None
        else list(iter_objects(new_head_first, links, facts.link_columns))
    )
    for o in new:
        if o.kind != "block" and facts.seen.may_hold(o.kind, o.hash):
            return None
    return _apply(facts, list(reversed(new_head_first)), new)
