"""Is a derivative dataset's lineage all there? Checking input replicas, recursively.

Every ``ExecuteTransform`` names the input blocks it consumed
(``queryInputs[].newBlockHash``, ODF spec "ExecuteTransformInput"). A replica of a
derivative is verifiable only if, for each input, some replica holds a chain
containing those blocks, and so on down to the root datasets. For each input of
each derivative in the lineage, :func:`verify_lineage` resolves a replica by the
input's dataset ID and reports one status:

- ``present``: the input replica's chain holds every block consumed;
- ``missing``: it lacks some (named: the first consumed block it lacks), e.g. it
  was published at an older head than the one consumed;
- ``unresolvable``: no replica is known for that dataset ID;
- ``unreachable``: a replica is known but could not be read (the error says why);
- ``corrupt``: a replica is known but served bad data (bytes that do not parse or
  match their hash, a broken chain: :func:`odfweb3.errors.is_corruption`), exit 65;
- ``diverged``: the replica holds another history: another dataset's Seed, or a
  later consumed block without an earlier one.

A replica that lacks the last consumed block but runs past the ones it holds
may be behind or diverged; without the missing block nobody can tell, so it is
reported ``missing``. Derivative inputs are followed recursively, from the last
consumed block their replica holds (that part of their chain is what the
consumer depends on); each (dataset, block) is followed once.

``deep`` also checks the chain rules and derivative rules of every chain reached,
the consumed offsets against each input chain, and re-hashes every data file and
checkpoint up to the consumed blocks.

Resolution is pluggable: ``resolve_input(dataset_id)`` returns a replica or None.
:func:`resolver_from_replicas` maps given replicas by their Seeds; a resolver
reading name records (IPNS ``_odf.inputs``, an Arweave upload record) can learn
more of the map as it opens each replica, and :func:`chain_resolvers` tries
several in turn.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, Literal

from odfweb3.errors import FormatError, OdfWeb3Error, ResolutionError, is_corruption
from odfweb3.odf.chain import ChainEntry, iter_objects, walk_chain
from odfweb3.odf.identity import DatasetId
from odfweb3.odf.lineage import (
    InputChain,
    check_input_chains,
    declared_inputs,
)
from odfweb3.odf.model_gen import DatasetKind, ExecuteTransform, SetTransform
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.odf.validate import check_chain_rules
from odfweb3.read.replica import (
    LineageInputsSource,
    LocalInputsSource,
    Replica,
    read_object_verified,
)

__all__ = [
    "NETWORK_LOCATORS",
    "InputReport",
    "InputResolver",
    "InputStatus",
    "LineageReport",
    "chain_resolvers",
    "is_network_locator",
    "replica_dataset_id",
    "resolver_from_records",
    "resolver_from_replicas",
    "verify_lineage",
]

InputStatus = Literal["present", "missing", "unresolvable", "unreachable", "corrupt", "diverged"]
InputResolver = Callable[[str], "Replica | None"]


@dataclass(frozen=True)
class _Failed:
    """An input replica that could not be read: why, and whether it served bad data."""

    text: str
    corrupt: bool


@dataclass(frozen=True)
class InputReport:
    """One input of one derivative in the lineage.

    Attributes:
        consumer: dataset ID of the derivative that consumed this input.
        dataset_id: the input's dataset ID.
        alias: the alias the consumer's SetTransform gives it, when declared.
        status: see the module docstring.
        depth: 1 for the inputs of the dataset verified, 2 for theirs, ...
        replica: name of the replica resolved for the input.
        head: that replica's head.
        consumed: the last block of the input the consumer consumed.
        missing_block: the first consumed block the replica lacks.
        blocks_consumed: how many distinct input blocks the consumer names.
        error: why it is unreachable or diverged.
        problems: what a deep check found.
    """

    consumer: str
    dataset_id: str
    alias: str | None
    status: InputStatus
    depth: int
    replica: str | None = None
    head: bytes | None = None
    consumed: bytes | None = None
    missing_block: bytes | None = None
    blocks_consumed: int = 0
    error: str | None = None
    problems: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """Present and nothing wrong found."""
        return self.status == "present" and not self.problems

    def to_json(self) -> dict[str, object]:
        """Stable JSON form."""
        return {
            "consumer": self.consumer,
            "datasetId": self.dataset_id,
            "alias": self.alias,
            "status": self.status,
            "depth": self.depth,
            "replica": self.replica,
            "head": _mh(self.head),
            "consumed": _mh(self.consumed),
            "missingBlock": _mh(self.missing_block),
            "blocksConsumed": self.blocks_consumed,
            "error": self.error,
            "problems": list(self.problems),
        }

    def describe(self) -> str:
        """One human line (indented by depth), plus problem lines."""
        name = f"{self.alias} ({self.dataset_id})" if self.alias else self.dataset_id
        text = {
            "present": f"present in {self.replica}",
            "missing": f"MISSING from {self.replica}: block {_mh(self.missing_block)} "
            f"is not in its chain (replica head {_mh(self.head)})",
            "unresolvable": "UNRESOLVABLE: no replica known for this dataset ID; give one "
            f"with --inputs-from REF or --input {self.dataset_id}=REF",
            "unreachable": f"UNREACHABLE: {self.error}",
            "corrupt": f"CORRUPT: {self.error}",
            "diverged": f"DIVERGED in {self.replica}: {self.error}",
        }[self.status]
        pad = "  " * self.depth
        lines = [f"{pad}input {name}: {text}"]
        lines.extend(f"{pad}  problem: {p}" for p in self.problems)
        return "\n".join(lines)


@dataclass(frozen=True)
class LineageReport:
    """The lineage of one replica: every input, depth first."""

    name: str
    dataset_id: str
    head: bytes
    kind: DatasetKind
    inputs: tuple[InputReport, ...]
    problems: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """The whole lineage is present (and, deep, nothing wrong found)."""
        return not self.problems and all(i.ok for i in self.inputs)

    @property
    def exit_code(self) -> int:
        """The CLI's exit status: 0 complete; 65 an input served corrupt data (as ``verify
        --against`` and ``pull`` exit on it), else 2 one unreachable, else 1."""
        if self.ok:
            return 0
        if any(i.status == "corrupt" for i in self.inputs):
            return 65
        return 2 if any(i.status == "unreachable" for i in self.inputs) else 1

    def to_json(self) -> dict[str, object]:
        """Stable JSON form."""
        return {
            "replica": self.name,
            "datasetId": self.dataset_id,
            "head": _mh(self.head),
            "kind": self.kind.name.capitalize(),
            "complete": self.ok,
            "problems": list(self.problems),
            "inputs": [i.to_json() for i in self.inputs],
        }

    def describe(self) -> str:
        """Human lines."""
        state = "lineage complete" if self.ok else "lineage INCOMPLETE"
        if self.kind == DatasetKind.ROOT:
            state += " (a root dataset has no inputs)"
        lines = [f"{self.name}: {self.dataset_id}, head {_mh(self.head)}: {state}"]
        lines.extend(f"  problem: {p}" for p in self.problems)
        lines.extend(i.describe() for i in self.inputs)
        return "\n".join(lines)


def _mh(value: bytes | None) -> str | None:
    return multihash_to_str(value) if value is not None else None


def _read_chain(replica: Replica) -> list[ChainEntry]:
    """The replica's verified chain, Seed first."""
    entries = list(walk_chain(replica.read_block, replica.head()))
    entries.reverse()
    return entries


def replica_dataset_id(replica: Replica) -> str:
    """The dataset ID a replica serves, read from its (verified) Seed."""
    return InputChain.from_entries(_read_chain(replica)).did


def resolver_from_replicas(replicas: Iterable[Replica]) -> InputResolver:
    """A resolver over given replicas, each mapped by the dataset ID in its Seed.

    Replicas that cannot be read are left out (the input then shows as unresolvable).
    """
    by_id: dict[str, Replica] = {}
    for r in replicas:
        try:
            by_id.setdefault(replica_dataset_id(r), r)
        except OdfWeb3Error:
            continue
    return lambda did: by_id.get(_canonical(did))


#: The locators a record read from the network may name: a local one
#: (``car:/abs/path``, a directory) would let a publisher make the verifier open its files.
NETWORK_LOCATORS: Final = ("ipns://", "ipfs://", "ar://", "did:odf:")


def is_network_locator(locator: str) -> bool:
    """Whether ``locator`` is a network reference (``ipns://``, ``ipfs://``, ``ar://``,
    ``did:odf:``), the only kind a record may name."""
    return locator.startswith(NETWORK_LOCATORS)


def resolver_from_records(replica: Replica, open_ref: Callable[[str], Replica]) -> InputResolver:
    """A resolver following the inputs maps of resolution records.

    A replica exposing ``lineage_inputs()`` (dataset ID -> locator, from its signed IPNS
    record's ``_odf.inputs`` or its Arweave upload record's ``inputs``) names where each
    input lives; each input opened through ``open_ref`` adds its own map, so the inputs
    of inputs resolve from the derivative's name alone.

    The record's author chose those locators: only network references are followed
    (:data:`NETWORK_LOCATORS`); any other is refused with one line naming it, and the
    input is reported unreachable. A replica the user opened from a
    directory may say where a network locator's dataset sits in that directory
    (``local_inputs()``: locator -> ``car:PATH``, e.g. ``OUT_DIR/inputs/*``).
    """
    known: dict[str, str] = {}
    local: dict[str, str] = {}

    def learn(r: Replica) -> None:
        if not isinstance(r, LineageInputsSource):
            return
        try:
            inputs = r.lineage_inputs()
            if isinstance(r, LocalInputsSource):
                for k, v in r.local_inputs().items():
                    local.setdefault(str(k), str(v))
        except OdfWeb3Error:
            return
        for did, locator in inputs.items():
            known.setdefault(_canonical(str(did)), str(locator))

    learn(replica)

    def resolve(did: str) -> Replica | None:
        locator = known.get(_canonical(did))
        if locator is None:
            return None
        if not is_network_locator(locator):
            raise ResolutionError(
                f"the record names {locator[:120]!r} for input {did}: a record may only name "
                "ipns://, ipfs://, ar:// or did:odf: locators; give the input's replica "
                "yourself with --input DID=REF or --inputs-from"
            )
        found = open_ref(local.get(locator, locator))
        learn(found)
        return found

    return resolve


def chain_resolvers(*resolvers: InputResolver) -> InputResolver:
    """A resolver trying each given one in turn."""

    def resolve(did: str) -> Replica | None:
        for r in resolvers:
            found = r(did)
            if found is not None:
                return found
        return None

    return resolve


def _canonical(did: str) -> str:
    """``did:odf:`` in our base16 form, whatever multibase it came in."""
    try:
        return str(DatasetId.parse(did))
    except FormatError:
        return did


@dataclass(frozen=True)
class _Consumption:
    """What a derivative consumed of one input, in its chain's order."""

    dataset_id: bytes
    alias: str | None
    blocks: tuple[bytes, ...]  # distinct prevBlockHash / newBlockHash values, in order


def _consumed(entries: Sequence[ChainEntry]) -> list[_Consumption]:
    aliases: dict[bytes, str | None] = {}
    order: dict[bytes, list[bytes]] = {}
    for e in entries:
        ev = e.block.event
        if isinstance(ev, SetTransform):
            for did, alias in declared_inputs(ev):
                if did is not None:
                    aliases.setdefault(did, alias)
                    order.setdefault(did, [])
        elif isinstance(ev, ExecuteTransform):
            for qi in ev.query_inputs or ():
                if qi.dataset_id is None:
                    continue
                seen = order.setdefault(qi.dataset_id, [])
                for h in (qi.prev_block_hash, qi.new_block_hash):
                    if h is not None and h not in seen:
                        seen.append(h)
    return [_Consumption(d, aliases.get(d), tuple(bs)) for d, bs in order.items()]


class _Walker:
    def __init__(self, resolve: InputResolver, deep: bool) -> None:
        self.resolve = resolve
        self.deep = deep
        self.opened: dict[bytes, tuple[Replica, InputChain] | _Failed | None] = {}
        self.followed: set[tuple[bytes, bytes]] = set()
        self.reports: list[InputReport] = []

    def open(self, did: bytes) -> tuple[Replica, InputChain] | _Failed | None:
        """The input's replica and chain, an error text, or None when unresolvable."""
        if did not in self.opened:
            result: tuple[Replica, InputChain] | _Failed | None
            try:
                replica = self.resolve(str(DatasetId.from_bytes(did)))
                if replica is None:
                    result = None
                else:
                    try:
                        result = (replica, InputChain.from_entries(_read_chain(replica)))
                    except OdfWeb3Error as exc:
                        result = _Failed(f"{replica.name}: {exc}", is_corruption(exc))
            except OdfWeb3Error as exc:
                result = _Failed(str(exc), is_corruption(exc))
            self.opened[did] = result
        return self.opened[did]

    def deep_problems(self, replica: Replica, entries: Sequence[ChainEntry]) -> list[str]:
        """Chain and derivative rules, and every object re-hashed."""
        problems = [str(v) for v in check_chain_rules(entries)]
        for obj in iter_objects(entries):
            if obj.kind == "block":
                continue
            try:
                read_object_verified(replica, obj)
            except OdfWeb3Error as exc:
                problems.append(str(exc))
        return problems

    def visit(self, consumer: InputChain, entries: Sequence[ChainEntry], depth: int) -> None:
        """Report every input of the derivative whose chain (Seed first) is ``entries``."""
        for c in _consumed(entries):
            if not c.blocks:
                continue  # declared, never consumed: nothing to hold
            name = _did(c.dataset_id)
            base = InputReport(
                consumer.did,
                name,
                c.alias,
                "present",
                depth,
                consumed=c.blocks[-1] if c.blocks else None,
                blocks_consumed=len(c.blocks),
            )
            opened = self.open(c.dataset_id)
            if opened is None:
                self.reports.append(replace(base, status="unresolvable"))
                continue
            if isinstance(opened, _Failed):
                status: InputStatus = "corrupt" if opened.corrupt else "unreachable"
                self.reports.append(replace(base, status=status, error=opened.text))
                continue
            replica, chain = opened
            base = replace(base, replica=replica.name, head=chain.hashes[-1])
            if chain.dataset_id != c.dataset_id:
                self.reports.append(
                    replace(base, status="diverged", error=f"it serves dataset {chain.did}")
                )
                continue
            positions = [chain.position(h) for h in c.blocks]
            held = [p for p in positions if p is not None]
            first_gap = next((i for i, p in enumerate(positions) if p is None), None)
            if held != sorted(held) or (
                first_gap is not None and any(p is not None for p in positions[first_gap:])
            ):
                gap = c.blocks[first_gap] if first_gap is not None else None
                self.reports.append(
                    replace(
                        base,
                        status="diverged",
                        missing_block=gap,
                        error="its chain holds the consumed blocks out of order or with a "
                        "gap: another history",
                    )
                )
                continue
            upto = held[-1] if held else None
            problems: list[str] = []
            if self.deep and upto is not None:
                part = chain.entries[: upto + 1]
                problems = self.deep_problems(replica, part)
                problems.extend(
                    str(v)
                    for v in check_input_chains(entries, {c.dataset_id: chain})
                    if v.rule != "transform-input-block"  # reported as missing instead
                )
            if first_gap is not None:
                report = replace(
                    base,
                    status="missing",
                    missing_block=c.blocks[first_gap],
                    problems=tuple(problems),
                )
            else:
                report = replace(base, problems=tuple(problems))
            self.reports.append(report)
            # Follow the part of a derivative input this consumer depends on, once.
            if upto is not None and chain.kind == DatasetKind.DERIVATIVE:
                key = (c.dataset_id, chain.hashes[upto])
                if key not in self.followed:
                    self.followed.add(key)
                    self.visit(chain, chain.entries[: upto + 1], depth + 1)


def _did(raw: bytes) -> str:
    try:
        return str(DatasetId.from_bytes(raw))
    except FormatError:
        return f"<bad dataset ID {raw.hex()[:16]}>"


def verify_lineage(
    replica: Replica,
    resolve_input: InputResolver | Mapping[str, Replica],
    *,
    deep: bool = False,
) -> LineageReport:
    """Check that every input block the replica's dataset consumed is available.

    Args:
        replica: the dataset to verify (any replica: directory, CAR, IPNS, Arweave).
        resolve_input: ``dataset_id -> Replica | None`` (``did:odf:…`` in base16),
            or a mapping from dataset ID to replica.
        deep: also check chain and derivative rules, offsets against each input,
            and re-hash every object reached.

    Returns:
        The report; ``report.ok`` only when the whole lineage is present.

    Raises:
        OdfWeb3Error: the replica itself cannot be read (its inputs' failures are
            reported, not raised).
    """
    resolver: InputResolver
    if isinstance(resolve_input, Mapping):
        table = {_canonical(k): v for k, v in resolve_input.items()}

        def resolver(did: str) -> Replica | None:
            return table.get(_canonical(did))

    else:
        resolver = resolve_input
    entries = _read_chain(replica)
    top = InputChain.from_entries(entries)
    walker = _Walker(resolver, deep)
    walker.followed.add((top.dataset_id, top.hashes[-1]))
    problems = walker.deep_problems(replica, entries) if deep else []
    if top.kind == DatasetKind.DERIVATIVE:
        walker.visit(top, entries, 1)
    return LineageReport(
        replica.name, top.did, top.hashes[-1], top.kind, tuple(walker.reports), tuple(problems)
    )
