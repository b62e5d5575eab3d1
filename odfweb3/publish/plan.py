"""Planning a publish: a pure function from (local chain, what the target has) to a plan.

The planner decides; it does no I/O. The executor (:mod:`.execute`) acts. A plan
is frozen and printable (``str(plan)``), so ``--dry-run`` shows exactly what
would be sent.

Relations between the local head and the target's head (docs/design.md, "Commit order", step 2):

- ``new``: the target has nothing for this dataset: send everything.
- ``same``: the target already has this head: send nothing (a record may still be
  refreshed).
- ``ahead``: the target's head is an ancestor of ours: send the delta.
- ``behind``: ours is an ancestor of the target's: refuse (never roll a name back)
  unless forced.
- ``diverged``: neither descends from the other: refuse unless forced.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Literal, TypeVar, overload

from odfweb3.descriptor.discovery_facts import DiscoveryFacts
from odfweb3.errors import ConflictError
from odfweb3.odf.chain import ChainEntry, DatasetObject, ObjectList, columns_at, iter_objects
from odfweb3.odf.facts import ChainFacts
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.chain_cache import VerifiedChain

__all__ = [
    "LazySequence",
    "PublishPlan",
    "Relation",
    "RemoteRecord",
    "held_entries",
    "plan_publish",
    "plan_record",
]

Relation = Literal["new", "same", "ahead", "behind", "diverged"]

T = TypeVar("T")


class LazySequence(Sequence[T], Generic[T]):
    """A sequence whose length is known up front and whose items are loaded when first
    asked (a one-block update need not walk the whole chain to say how many
    objects the dataset has). Equal to any sequence with the same items."""

    def __init__(
        self,
        length: int,
        load: Callable[[], Sequence[T]],
        held: Callable[[], bool] = lambda: False,
    ) -> None:
        self._length = length
        self._load = load
        self._held = held
        self._items: Sequence[T] | None = None

    def _all(self) -> Sequence[T]:
        if self._items is None:
            self._items = self._load()
        return self._items

    def items(self) -> Sequence[T]:
        """The items themselves, loaded if they were not (a chain's packed
        :class:`~odfweb3.odf.chain.ObjectList`: what a build that reads it again wants)."""
        return self._all()

    @property
    def loaded(self) -> bool:
        """The items were loaded (something iterated them)."""
        return self._items is not None

    @property
    def in_memory(self) -> bool:
        """Iterating costs no read: loaded already, or ``held`` says its source holds them."""
        return self._items is not None or self._held()

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, i: int) -> T: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[T]: ...
    def __getitem__(self, i: int | slice) -> T | Sequence[T]:
        return self._all()[i]

    def __iter__(self) -> Iterator[T]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(other) == self._length and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LazySequence(len={self._length})"


def held_entries(chain: Sequence[ChainEntry]) -> Sequence[ChainEntry] | None:
    """A plan's ``chain`` when its entries are in memory (a list, or a lazy chain already
    walked whole), else None: the caller walks the chain again holding no block rather than
    load the whole decoded chain for the rest of the publish."""
    if isinstance(chain, LazySequence) and not chain.in_memory:
        return None
    return chain


@dataclass(frozen=True)
class RemoteRecord:
    """The name record a target serves now, as its ``inspect`` read it: facts, no decision.

    Attributes:
        renewal_due: it expires within half the target's record lifetime by the target's
            clock (or its validity is unreadable).
        inputs: the inputs map it carries; None: none.
    """

    renewal_due: bool
    inputs: Mapping[str, str] | None = None


@dataclass(frozen=True)
class PublishPlan:
    """What one publish will send.

    Attributes:
        dataset_id: ``did:odf:…`` of the dataset.
        target: the target's printable name.
        head: the local head being published.
        remote_head: what the target has now, if anything.
        relation: see the module docstring.
        forced: the user overrode a ``behind``/``diverged`` refusal.
        new_blocks: how many blocks the target does not have.
        send: objects to upload (not at the target yet), in chain order head first (a first
            publish's: every object, kept packed, :class:`~odfweb3.odf.chain.ObjectList`).
        objects: every object of the dataset (the full layout the target will hold); when
            planned from a :class:`VerifiedChain`, a :class:`LazySequence` whose length is
            known and whose items are walked only when iterated.
        chain: the verified local chain, head first, for targets that need the blocks
            themselves without walking the chain again (lazy like ``objects``).
        facts: the chain's facts at the head (the discovery descriptor's), when
            planned from a :class:`VerifiedChain`.
        discovery: the whole chain's discovery facts at the head, when the chain's load
            gathered them (a first publish of a long chain: no second walk for them).
        total: the sum of the recorded sizes of ``objects``.
        record_extra: extra facts for the name record (``inputs``, dataset ID ->
            locator of each input); every target copies ``inputs`` into its record.
        keep_record: nothing is sent and the target's record already says what this
            publish would (same head and inputs, not due for renewal): the target writes
            nothing, the record stays at its sequence (:func:`plan_record`).
    """

    dataset_id: str
    target: str
    head: bytes
    remote_head: bytes | None
    relation: Relation
    forced: bool
    new_blocks: int
    send: Sequence[DatasetObject]
    objects: Sequence[DatasetObject]
    chain: Sequence[ChainEntry] = field(default=(), repr=False, compare=False)
    record_extra: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    facts: ChainFacts | None = field(default=None, repr=False, compare=False)
    discovery: DiscoveryFacts | None = field(default=None, repr=False, compare=False)
    total: int | None = field(default=None, repr=False, compare=False)
    keep_record: bool = field(default=False, compare=False)

    @property
    def send_bytes(self) -> int:
        """Bytes of object content to send (sizes recorded in the blocks)."""
        return sum(o.size or 0 for o in self.send)

    @property
    def total_bytes(self) -> int:
        """Bytes of the whole dataset."""
        if self.total is not None:
            return self.total
        return sum(o.size or 0 for o in self.objects)

    @property
    def is_noop(self) -> bool:
        """Nothing to upload and the head is already there."""
        return self.relation == "same" and not self.send

    def to_json(self) -> dict[str, object]:
        """JSON form (``--dry-run --json``)."""
        return {
            "datasetId": self.dataset_id,
            "target": self.target,
            "head": multihash_to_str(self.head),
            "remoteHead": multihash_to_str(self.remote_head) if self.remote_head else None,
            "relation": self.relation,
            "forced": self.forced,
            "newBlocks": self.new_blocks,
            "sendObjects": len(self.send),
            "sendBytes": self.send_bytes,
            "totalObjects": len(self.objects),
            "totalBytes": self.total_bytes,
            "send": [o.path for o in self.send],
        }

    @property
    def target_status(self) -> str:
        """The target as a replica of the local dataset, in the words every message uses
        (docs/concepts.md, "Words"): the replica is the subject, so ``behind by 2 blocks``
        means the local dataset has 2 blocks the target lacks, as in ``verify``.
        (:attr:`relation`, kept in ``--json``, is the local dataset's side: ``ahead``.)"""
        n = self.new_blocks
        return {
            "new": "empty: first publish",
            "same": "identical",
            "ahead": f"behind by {n} block{'' if n == 1 else 's'}",
            "behind": "ahead: it has blocks the local dataset lacks",
            "diverged": "diverged",
        }[self.relation]

    def __str__(self) -> str:
        remote = multihash_to_str(self.remote_head) if self.remote_head else "nothing"
        lines = [
            f"publish {self.dataset_id} -> {self.target}",
            f"  local head   {multihash_to_str(self.head)}",
            f"  target has   {remote} ({self.target_status}{', FORCED' if self.forced else ''})",
            f"  send         {len(self.send)} of {len(self.objects)} objects, "
            f"{self.send_bytes} of {self.total_bytes} bytes ({self.new_blocks} new blocks)",
        ]
        return "\n".join(lines)


def plan_record(
    plan: PublishPlan,
    record: RemoteRecord | None,
    record_extra: Mapping[str, Any] | None = None,
) -> PublishPlan:
    """The plan with the record decided: ``record_extra`` carried, and
    :attr:`~PublishPlan.keep_record` when nothing is sent and the target's ``record``
    (None: none it could keep) is not due for renewal and carries the inputs asked."""
    asked = (record_extra or {}).get("inputs")
    keep = (
        plan.is_noop
        and record is not None
        and not record.renewal_due
        and (not asked or {str(k): str(v) for k, v in asked.items()} == record.inputs)
    )
    extra = dict(record_extra) if record_extra else plan.record_extra
    return replace(plan, record_extra=extra, keep_record=keep)


def plan_publish(
    entries: Sequence[ChainEntry] | VerifiedChain,
    *,
    dataset_id: str,
    target: str,
    remote_head: bytes | None,
    remote_has: Collection[str] = (),
    remote_ahead: bool = False,
    force: bool = False,
    remote_holds_head: bool = True,
) -> PublishPlan:
    """Decide what to send.

    Args:
        entries: the local chain, verified, head first (``list(walk_chain(...))``), or a
            :class:`VerifiedChain` (:func:`~odfweb3.publish.chain_cache.load_chain`): then
            only the blocks above the target's head are read when it is an ancestor.
        dataset_id: the dataset's ID (for messages and the plan).
        target: printable target name.
        remote_head: the head the target holds now (checked against the network by
            the caller), or None.
        remote_has: object paths (``blocks/f…``) the target is known to hold (from state
            checked against the network, or left by an interrupted publish).
        remote_ahead: the caller found our head inside the target's chain (the target
            is ahead of us); only meaningful when ``remote_head`` is not in ``entries``.
        force: publish even when the target's head is not an ancestor of ours.
        remote_holds_head: the target holds every object of ``remote_head`` (False: only
            ``remote_has``; the objects its head covers are sent again).

    Raises:
        ConflictError: the target's head is ahead of ours or diverged, and not forced.
    """
    if isinstance(entries, VerifiedChain):
        return _plan_verified(
            entries,
            dataset_id=dataset_id,
            target=target,
            remote_head=remote_head,
            remote_has=remote_has,
            remote_ahead=remote_ahead,
            force=force,
            remote_holds_head=remote_holds_head,
        )
    head = entries[0].hash
    objects = tuple(iter_objects(entries))
    if remote_head is None:
        send = tuple(o for o in objects if o.path not in remote_has)
        new_blocks = sum(1 for o in send if o.kind == "block")
        return PublishPlan(
            dataset_id, target, head, None, "new", False, new_blocks, send, objects, tuple(entries)
        )
    position = next((i for i, e in enumerate(entries) if e.hash == remote_head), None)
    relation = _relation(target, remote_head, position, remote_ahead, force)
    forced = relation in ("behind", "diverged")
    # content-addressed: what is there stays valid even if forced
    known = _lookup(remote_has)
    covered: set[tuple[str, bytes]] = set()
    if relation == "ahead" and position is not None and remote_holds_head:
        # Everything the remote head already covers is there: its blocks and objects
        # (keyed by kind and hash: no path text formatted per old object).
        covered = {(o.kind, o.hash) for o in iter_objects(entries[position:])}
    send = tuple(o for o in objects if (o.kind, o.hash) not in covered and o.path not in known)
    new_blocks = sum(1 for o in send if o.kind == "block")
    return PublishPlan(
        dataset_id,
        target,
        head,
        remote_head,
        relation,
        forced,
        new_blocks,
        send,
        objects,
        tuple(entries),
    )


def _lookup(has: Collection[str]) -> Collection[str]:
    """``has`` for membership tests: sets and mappings (a target's lazy object index, issue
    19) as they are, other collections as a set."""
    return has if isinstance(has, AbstractSet | Mapping) else set(has)


def _relation(
    target: str, remote_head: bytes, position: int | None, remote_ahead: bool, force: bool
) -> Relation:
    """The relation of our head to the target's (``position``: of its head in our chain).

    Raises:
        ConflictError: behind or diverged, and not forced.
    """
    relation: Relation
    if position == 0:
        relation = "same"
    elif position is not None:
        relation = "ahead"
    else:
        relation = "behind" if remote_ahead else "diverged"
    if relation in ("behind", "diverged") and not force:
        what = (
            "a newer head than ours (publishing would roll the name back)"
            if relation == "behind"
            else "a head that is not in the local chain (the histories diverged)"
        )
        raise ConflictError(
            f"{target}: holds {multihash_to_str(remote_head)}, {what}; pull and reconcile "
            "first, or pass --force to point the name at our head (old content stays)"
        )
    return relation


def _plan_verified(
    chain: VerifiedChain,
    *,
    dataset_id: str,
    target: str,
    remote_head: bytes | None,
    remote_has: Collection[str],
    remote_ahead: bool,
    force: bool,
    remote_holds_head: bool,
) -> PublishPlan:
    """:func:`plan_publish` from a :class:`VerifiedChain`: when the target's head is an
    ancestor it holds, only the blocks above it are read; otherwise the whole
    chain is, as for a list of entries."""
    facts = chain.facts
    objects: LazySequence[DatasetObject] = LazySequence(facts.objects, chain.objects)
    whole: LazySequence[ChainEntry] = LazySequence(
        facts.sequence + 1, chain.whole, lambda: chain.complete
    )
    known = _lookup(remote_has)

    def plan(relation: Relation, send: Sequence[DatasetObject]) -> PublishPlan:
        return PublishPlan(
            dataset_id,
            target,
            chain.head,
            remote_head,
            relation,
            relation in ("behind", "diverged"),
            sum(1 for o in send if o.kind == "block"),
            send,
            objects,
            whole,
            facts=facts,
            discovery=chain.discovery,
            total=facts.object_bytes,
        )

    if remote_head is None:
        return plan("new", _unsent(objects, known))
    position = chain.find(remote_head)
    relation = _relation(target, remote_head, position, remote_ahead, force)
    if relation == "same" and remote_holds_head and len(known) == facts.objects:
        # Nothing new, and the target's checked view lists as many objects as our head has
        # (the index of what it published for this head): nothing to send, and no block
        # below our head is read (docs/design.md, "Publish": nothing new costs least). A
        # view that lost objects lists fewer: they are found below and sent again.
        return plan(relation, ())
    if relation != "ahead" or position is None or not remote_holds_head:
        # As for a list of entries: only ``remote_has`` is known to be there.
        return plan(relation, _unsent(objects, known))
    links, below = chain.links, chain.columns_below
    at_target = columns_at(chain.walked[position:], below)
    new = list(iter_objects(chain.walked[:position], links, at_target))
    # An object a new block names may have been named by an older block too (held by
    # the target then): exact for the walked blocks at and below the target's head; for
    # the rest, a filter of cached facts rules repeats out, and the whole chain is walked
    # only when it cannot. (Linked objects too: only new ones are sent.)
    older = {(o.kind, o.hash) for o in iter_objects(chain.walked[position:], links, below)}
    if not chain.complete:
        cover = _cover(chain, position)
        if cover is None or any(
            o.kind != "block"
            and (o.kind, o.hash) not in older
            and cover.seen.may_hold(o.kind, o.hash)
            for o in new
        ):
            older = {(o.kind, o.hash) for o in iter_objects(chain.whole()[position:], links)}
    send = tuple(o for o in new if (o.kind, o.hash) not in older and o.path not in known)
    return plan(relation, send)


def _unsent(
    objects: LazySequence[DatasetObject], known: Collection[str]
) -> Sequence[DatasetObject]:
    """The objects whose paths are not in ``known``, packed: every object when nothing is
    known (the chain's own list, not a second one)."""
    if not known:
        return objects._all()
    return ObjectList(o for o in objects if o.path not in known)


def _cover(chain: VerifiedChain, position: int) -> ChainFacts | None:
    """Cached facts whose filter covers every object below the walked blocks and none
    above the target's head (``chain.walked[position]``), or None.

    The base's (the oldest walked block's) when the target's head is at or above it: the
    usual update. Else the target's head's own, when it was verified here before: a head
    published to one target, then to another holding an older one, where the
    base is our head itself and its filter holds every new object."""
    base = chain.base
    if base is not None:
        at = next((i for i, e in enumerate(chain.walked) if e.hash == base.head), None)
        if at is not None and position <= at:
            return base
    return chain.facts_at(chain.walked[position].hash)
