"""Comparing replicas by head hash: identical, behind, ahead, diverged, corrupt, unreachable.

The reference is the local dataset (or the first replica). For each other
replica, its head is resolved (verified by the replica's reader), then:

- ``identical``: same head;
- ``behind``: its head is in our chain, N blocks before ours;
- ``ahead``: our head is in its chain, N blocks after ours;
- ``diverged``: neither; reported with the common ancestor's sequence number;
- ``corrupt``: it served bad data — bytes that do not parse or do not match their
  hash, a chain that breaks the spec's rules, a record its content contradicts
  (:func:`odfweb3.errors.is_corruption`; the same data makes ``pull`` exit 65);
- ``unreachable``: it could not be read (missing, node down; the error says why);
- ``refused``: it was reached, but nothing verifiable binds what it serves, so it is not
  read (an ``ar://`` path manifest: :class:`odfweb3.errors.ReadRefused`);
- ``unverified``: same head, but the replica was read with nothing tying its bytes to its
  name (``ipfs://CID`` through a gateway serving no raw blocks or CARs, allowed only by the
  opt-in ``ipfs.insecure_unverified_paths``; ``ar://MANIFEST`` through a gateway that does not
  serve the manifest's signed bytes, opt-in ``arweave.insecure_unverified_manifests``): it
  may be anything, so never ``identical``.

``deep`` walks the replica's whole chain (every block re-hashed) and re-hashes
every data file, checkpoint and linked object (ODF RFC-017: named by the data files'
``ObjectLink`` columns, read from the replica's verified copies; or ``sample`` of them
all); a corrupt block or object
found there makes the replica ``corrupt``. Exit status of the CLI
(:data:`STATUS_EXIT`, the worst replica wins): 0 all identical, 1 any difference
(or unverified), 2 any unreachable, 65 any corrupt.
"""

from __future__ import annotations

import itertools
import random
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO, Literal

from odfweb3.errors import HashMismatch, IntegrityError, OdfWeb3Error, ReadRefused, is_corruption
from odfweb3.odf.chain import (
    ChainEntry,
    DatasetObject,
    ObjectCount,
    iter_objects,
    walk_chain,
)
from odfweb3.odf.multihash import multihash_to_str, new_hasher
from odfweb3.odf.parquet_links import ParquetLinks
from odfweb3.odf.validate import ChainRulesBackwards, check_chain_rules
from odfweb3.odf.violation import Violation
from odfweb3.read.replica import MaybeUnverified, Replica, read_object_verified

__all__ = ["STATUS_EXIT", "ReplicaReport", "Status", "compare_replica", "exit_status", "failed"]

Status = Literal[
    "identical", "behind", "ahead", "diverged", "corrupt", "unreachable", "refused", "unverified"
]

#: The exit status each replica status calls for; ``verify`` exits with the highest
#: (docs/security.md "Outcomes" lists the same; a test compares them).
STATUS_EXIT: dict[str, int] = {
    "identical": 0,
    "behind": 1,
    "ahead": 1,
    "diverged": 1,
    "unverified": 1,
    "unreachable": 2,
    "refused": 2,
    "corrupt": 65,
}


@dataclass(frozen=True)
class ReplicaReport:
    """How one replica compares with the reference."""

    name: str
    status: Status
    head: bytes | None = None
    blocks: int = 0
    common_ancestor: int | None = None
    objects_checked: int = 0
    bytes_checked: int = 0
    error: str | None = None
    problems: tuple[str, ...] = field(default=())
    # deep: the glossary's count (docs/concepts.md, "Words") of what was re-hashed, the
    # blocks walked included; ``objects_checked`` is its total
    objects: ObjectCount = field(default=ObjectCount())

    @property
    def ok(self) -> bool:
        """Identical, and nothing wrong found by a deep check."""
        return self.status == "identical" and not self.problems

    def to_json(self) -> dict[str, object]:
        """Stable JSON form (documented in docs/cli.md)."""
        return {
            "replica": self.name,
            "status": self.status,
            "head": multihash_to_str(self.head) if self.head else None,
            "blocks": self.blocks,
            "commonAncestor": self.common_ancestor,
            "objectsChecked": self.objects_checked,
            "objects": self.objects.to_json(),
            "bytesChecked": self.bytes_checked,
            "error": self.error,
            "problems": list(self.problems),
        }

    def describe(self) -> str:
        """One human line."""
        head = "head " + multihash_to_str(self.head)[:20] + "…" if self.head else "no head read"
        text = {
            "identical": "identical",
            "behind": f"behind by {self.blocks} block{'' if self.blocks == 1 else 's'}",
            "ahead": f"ahead by {self.blocks} block{'' if self.blocks == 1 else 's'}",
            "diverged": f"diverged (common ancestor: block #{self.common_ancestor})"
            if self.common_ancestor is not None
            else "diverged (no common ancestor)",
            "unreachable": f"unreachable: {self.error}",
            "refused": f"refused: {self.error}",
            "corrupt": f"CORRUPT: {self.error}",
            "unverified": "UNVERIFIED: same head, but read by path with nothing tying it to its "
            "name (ipfs.insecure_unverified_paths / arweave.insecure_unverified_manifests)",
        }[self.status]
        n = self.objects_checked
        deep = f", {n} object{'' if n == 1 else 's'} re-hashed" if n else ""
        problems = "".join(f"\n    problem: {p}" for p in self.problems)
        return f"{self.name}: {text} ({head}{deep}){problems}"


def failed(name: str, exc: OdfWeb3Error, head: bytes | None = None) -> ReplicaReport:
    """The report of a replica that could not be read: ``corrupt``, ``refused`` (reached,
    not read: nothing binds it) or ``unreachable``."""
    status: Status = (
        "corrupt"
        if is_corruption(exc)
        else "refused"
        if isinstance(exc, ReadRefused)
        else "unreachable"
    )
    return ReplicaReport(name, status, head=head, error=str(exc))


def exit_status(reports: Sequence[ReplicaReport]) -> int:
    """The CLI's exit status for these reports: the worst one (a deep problem counts 1)."""
    code = 0
    for r in reports:
        code = max(code, STATUS_EXIT[r.status], 0 if r.ok else 1)
    return code


def _verified_copy(replica: Replica) -> Callable[[DatasetObject], BinaryIO]:
    """Open a replica's data file as a temporary local copy, its size and hash checked
    (its ``ObjectLink`` columns are then read from bytes known to be the dataset's)."""

    def open_copy(obj: DatasetObject) -> BinaryIO:
        f = tempfile.TemporaryFile()  # noqa: SIM115 (returned open: the caller closes it)
        try:
            hasher = new_hasher(obj.hash[0])
            n = 0
            for chunk in replica.stream_object(obj.kind, obj.hash, obj.size):
                n += len(chunk)
                if obj.size is not None and n > obj.size:
                    raise IntegrityError(
                        f"{replica.name}: {obj.path} is larger than the {obj.size} bytes recorded"
                    )
                hasher.update(chunk)
                f.write(chunk)
            actual = bytes((obj.hash[0], hasher.digest_size)) + hasher.digest()
            if actual != obj.hash:
                raise HashMismatch(
                    multihash_to_str(obj.hash),
                    multihash_to_str(actual),
                    f"{replica.name}: {obj.path}",
                )
            f.seek(0)
        except BaseException:
            f.close()
            raise
        return f

    return open_copy


def compare_replica(
    reference: Sequence[ChainEntry] | Sequence[bytes],
    replica: Replica,
    *,
    deep: bool = False,
    sample: int | None = None,
    rng: random.Random | None = None,
    progress: Callable[[int], None] | None = None,
    on_total: Callable[[int], None] | None = None,
) -> ReplicaReport:
    """Compare ``replica`` with the reference chain (verified, head first: its entries, or
    only their hashes).

    With ``deep``, ``on_total`` gets the bytes about to be re-hashed and ``progress``
    each chunk read (progress bars).
    """
    try:
        head = replica.head()
    except OdfWeb3Error as exc:
        return failed(replica.name, exc)
    ref: Sequence[ChainEntry | bytes] = reference
    index = {(e if isinstance(e, bytes) else e.hash): i for i, e in enumerate(ref)}
    status: Status
    blocks = 0
    ancestor: int | None = None
    walked = 0  # blocks of the replica's chain walked (deep)
    rules = ChainRulesBackwards()
    objs: list[DatasetObject] = []  # with ``sample``: the objects to choose from
    listed_bytes = 0  # without: the size of the objects listed
    try:
        if head in index:
            i = index[head]
            status, blocks = ("identical", 0) if i == 0 else ("behind", i)
            if (
                status == "identical"
                and isinstance(replica, MaybeUnverified)
                and replica.unverified
            ):
                status = "unverified"
        else:
            status = "diverged"
            for depth, entry in enumerate(walk_chain(replica.read_block, head)):
                if entry.hash in index:
                    i = index[entry.hash]
                    if i == 0:
                        status, blocks = "ahead", depth
                    else:
                        ancestor = entry.block.sequence_number
                    break
        if deep:
            # The whole replica chain, every block re-hashed, holding no decoded block (a
            # chain of 100,000 blocks held was most of verify's memory): its rules checked
            # walking back (the verdict of check_chain_rules), its objects listed.
            def fed() -> Iterator[ChainEntry]:
                nonlocal walked
                for e in walk_chain(replica.read_block, head):
                    rules.feed(e)
                    walked += 1
                    yield e

            if sample is None:  # counted now, read as a later walk lists them (no list)
                for o in iter_objects(fed()):
                    if o.kind != "block":
                        listed_bytes += o.size or 0
            else:
                objs = [o for o in iter_objects(fed()) if o.kind != "block"]
    except OdfWeb3Error as exc:
        return failed(replica.name, exc, head)
    problems: list[str] = []
    corrupt: list[str] = []
    checked = {"block": 0, "data": 0, "checkpoint": 0, "linked": 0}
    nbytes = 0
    if deep and walked:
        if not rules.finish():  # say what is broken as a whole check does
            whole = list(walk_chain(replica.read_block, head))
            violations = [str(v) for v in check_chain_rules(list(reversed(whole)))]
            violations = violations or ["a chain rule is broken"]
            del whole
            problems.extend(violations)
            corrupt.extend(violations)
        link_problems: list[Violation] = []
        try:
            links = ParquetLinks(
                _verified_copy(replica), lambda mh: None, replica.name, link_problems
            )
            again = walk_chain(replica.read_block, head)
            linked = [o for o in iter_objects(again, links) if o.kind == "linked"]
        except OdfWeb3Error as exc:
            linked = []
            problems.append(str(exc))
            if is_corruption(exc):
                corrupt.append(str(exc))
        for v in link_problems:
            problems.append(str(v))
            corrupt.append(str(v))
        to_read: Iterable[DatasetObject]
        if sample is not None:
            objs.extend(linked)
            if sample < len(objs):
                objs = (rng or random.Random()).sample(objs, sample)
            to_read, total = objs, sum(o.size or 0 for o in objs)
        else:
            listed = iter_objects(walk_chain(replica.read_block, head))
            to_read = itertools.chain((o for o in listed if o.kind != "block"), linked)
            total = listed_bytes + sum(o.size or 0 for o in linked)
        if on_total is not None:
            on_total(total)
        try:
            for obj in to_read:
                try:
                    nbytes += read_object_verified(replica, obj, progress)
                    checked[obj.kind] += 1
                except OdfWeb3Error as exc:
                    problems.append(str(exc))
                    if is_corruption(exc):
                        corrupt.append(str(exc))
        except OdfWeb3Error as exc:  # the chain changed under the walk that lists them
            problems.append(str(exc))
            if is_corruption(exc):
                corrupt.append(str(exc))
    # every block walked was re-hashed (walk_chain), then the objects read back
    count = (
        ObjectCount(walked, checked["data"], checked["checkpoint"], checked["linked"])
        if deep
        else ObjectCount()
    )
    return ReplicaReport(
        replica.name,
        "corrupt" if corrupt else status,
        head,
        blocks,
        ancestor,
        count.total,
        nbytes,
        corrupt[0] if corrupt else None,
        tuple(problems),
        count,
    )
