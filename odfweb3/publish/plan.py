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

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from odfweb3.errors import ConflictError
from odfweb3.odf.chain import ChainEntry, DatasetObject, iter_objects
from odfweb3.odf.multihash import multihash_to_str

__all__ = ["PublishPlan", "Relation", "plan_publish"]

Relation = Literal["new", "same", "ahead", "behind", "diverged"]


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
        send: objects to upload (not at the target yet), in chain order head first.
        objects: every object of the dataset (the full layout the target will hold).
        chain: the verified local chain, head first, for targets that need the blocks
            themselves (the discovery descriptor) without walking the chain again.
        record_extra: extra facts for the name record (issue 11: ``inputs``, dataset ID ->
            locator of each input); every target copies ``inputs`` into its record.
    """

    dataset_id: str
    target: str
    head: bytes
    remote_head: bytes | None
    relation: Relation
    forced: bool
    new_blocks: int
    send: tuple[DatasetObject, ...]
    objects: tuple[DatasetObject, ...]
    chain: tuple[ChainEntry, ...] = field(default=(), repr=False, compare=False)
    record_extra: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def send_bytes(self) -> int:
        """Bytes of object content to send (sizes recorded in the blocks)."""
        return sum(o.size or 0 for o in self.send)

    @property
    def total_bytes(self) -> int:
        """Bytes of the whole dataset."""
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

    def __str__(self) -> str:
        remote = multihash_to_str(self.remote_head) if self.remote_head else "nothing"
        lines = [
            f"publish {self.dataset_id} -> {self.target}",
            f"  local head   {multihash_to_str(self.head)}",
            f"  target has   {remote} ({self.relation}{', FORCED' if self.forced else ''})",
            f"  send         {len(self.send)} of {len(self.objects)} objects, "
            f"{self.send_bytes} of {self.total_bytes} bytes ({self.new_blocks} new blocks)",
        ]
        return "\n".join(lines)


def plan_publish(
    entries: Sequence[ChainEntry],
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
        entries: the local chain, verified, head first (``list(walk_chain(...))``).
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
    head = entries[0].hash
    objects = tuple(iter_objects(entries))
    if remote_head is None:
        send = tuple(o for o in objects if o.path not in remote_has)
        new_blocks = sum(1 for o in send if o.kind == "block")
        return PublishPlan(
            dataset_id, target, head, None, "new", False, new_blocks, send, objects, tuple(entries)
        )
    position = next((i for i, e in enumerate(entries) if e.hash == remote_head), None)
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
    forced = relation in ("behind", "diverged")
    # content-addressed: what is there stays valid even if forced
    known = remote_has if isinstance(remote_has, set | frozenset) else set(remote_has)
    covered: set[tuple[str, bytes]] = set()
    if relation == "ahead" and position is not None and remote_holds_head:
        # Everything the remote head already covers is there: its blocks and objects
        # (keyed by kind and hash: no path text formatted per old object, issue 19).
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
