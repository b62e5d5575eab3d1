"""The Metadata Chain rules exactly as kamu checks them when it appends a block.

kamu-cli (the ODF reference implementation) runs one validator per rule over the chain
before every append, pulls from remote repositories included
(``src/odf/dataset-impl/src/entities/metadata_chain_validators.rs``, run by ``append`` in
``metadata_chain_impl.rs``); a failure is one of its ``AppendValidationError`` variants.
:data:`RULES` lists each rule here beside that variant; ``docs/validation.md`` is the same
table with the test proving each rule and where kamu and the spec differ.

Every rule relates a block to the chain before it only through a :class:`RuleState` (what
the latest data events, schema and sources left), so the rules are checked three ways with
one verdict: :func:`check_chain_rules` oldest first (a whole chain, or the blocks above a
known state), :class:`ChainRulesBackwards` walking back from the head in constant memory,
and from a cached :class:`RuleState` (``odfweb3.publish.chain_cache``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from typing import Final

from odfweb3.errors import FormatError, NotFound
from odfweb3.odf.chain import ChainEntry
from odfweb3.odf.codec import encode_event
from odfweb3.odf.identity import DatasetId
from odfweb3.odf.model_gen import (
    AddData,
    AddPushSource,
    DisablePollingSource,
    DisablePushSource,
    ExecuteTransform,
    FetchStepEthereumLogs,
    Seed,
    SetDataSchema,
    SetPollingSource,
    SetTransform,
    SourceState,
    TransformSql,
)
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.odf.schema_diff import schema_change
from odfweb3.odf.timestamp import Timestamp
from odfweb3.odf.violation import Violation

__all__ = [
    "RULES",
    "ChainRulesBackwards",
    "ChainState",
    "Rule",
    "RuleState",
    "RuleStateBuilder",
    "RuleStateWalk",
    "chain_state",
    "check_chain_rules",
    "source_digest",
]


@dataclass(frozen=True)
class Rule:
    """One rule: its number and name here, kamu's error variant, kamu's words."""

    number: int
    name: str
    kamu: str
    says: str


def _rules(*rows: tuple[str, str, str]) -> dict[str, Rule]:
    return {name: Rule(i, name, kamu, says) for i, (name, kamu, says) in enumerate(rows, 1)}


# The order is kamu's: its validators in the order append builds them.
RULES: Final = _rules(
    ("seed-first", "FirstBlockMustBeSeed", "the block without a parent is a Seed"),
    ("seed-once", "AppendingSeedBlockToNonEmptyChain", "no Seed after the first block"),
    ("sequence-number", "SequenceIntegrity", "0 for the Seed, then +1 per block"),
    ("system-time-monotonic", "SystemTimeIsNotMonotonic", "systemTime never goes back"),
    ("watermark-monotonic", "WatermarkIsNotMonotonic",
     "once a data block has a newWatermark, the next one has one, not earlier"),
    ("event-empty", "NoOpEvent", "AddData / ExecuteTransform has some new* field"),
    ("offsets-sequential", "OffsetsAreNotSequential", "newData starts at prevOffset + 1"),
    ("offset-interval", "InvalidEvent", "newData's offsetInterval has end >= start"),
    ("prev-offset", "InvalidEvent", "prevOffset = the previous data block's last offset"),
    ("unimplemented-event", "unimplemented!",
     "DisablePollingSource / DisablePushSource: kamu cannot append them"),
    ("source-preprocess", "InvalidEvent",
     "a source's preprocess SQL is normalized (as a SetTransform's)"),
    ("source-read-schema", "InvalidEvent", "a read step has not both ddlSchema and schema"),
    ("source-ethereum", "InvalidEvent", "an EthereumLogs fetch has chainId or nodeUrl"),
    ("push-after-polling", "InvalidEvent", "no AddPushSource once a SetPollingSource exists"),
    ("push-source-identical", "NoOpEvent",
     "an AddPushSource differs from the last one of its name"),
    ("polling-after-push", "InvalidEvent", "no SetPollingSource once an AddPushSource exists"),
    ("transform-inputs", "InvalidEvent",
     "a SetTransform has inputs, each once, each a dataset ID with an alias"),
    ("transform-sql", "InvalidEvent",
     "a SetTransform's SQL is normalized: queries, the last one alone without alias"),
    ("prev-checkpoint", "InvalidEvent",
     "prevCheckpoint = the previous AddData's (ExecuteTransform's) newCheckpoint"),
    ("no-op", "NoOpEvent",
     "no newData and neither checkpoint, watermark, source state (inputs) advance"),
    ("schema-before-data", "InvalidEvent", "a SetDataSchema before any newData"),
    ("schema-identical", "NoOpEvent", "a SetDataSchema differs from the current schema"),
    ("schema-incompatible", "InvalidEvent",
     "a new schema only reorders, changes attributes, adds optional fields"),
    # kamu's ExecuteTransform validator checks these between its schema and checkpoint
    # checks; numbered after the others so the numbers above stay what users have seen.
    ("transform-before-execute", "InvalidEvent",
     "an ExecuteTransform follows a SetTransform (or an ExecuteTransform)"),
    ("transform-input-order", "InvalidEvent",
     "queryInputs list the SetTransform's inputs, in its order"),
    ("input-block-interval", "InvalidEvent",
     "after an ExecuteTransform, an input's newBlockHash is absent or not its prevBlockHash"),
    ("input-offset-interval", "InvalidEvent",
     "after an ExecuteTransform, an input's newOffset is absent or not its prevOffset"),
    ("input-prev-block", "InvalidEvent",
     "an input's prevBlockHash = the last block the previous ExecuteTransform's input at "
     "that position included"),
    ("input-prev-offset", "InvalidEvent",
     "an input's prevOffset = the last offset the previous ExecuteTransform's input at "
     "that position included"),
    ("input-offsets-without-blocks", "InvalidEvent",
     "after an ExecuteTransform, an input with a newOffset has a newBlockHash"),
)  # fmt: skip


def source_digest(ev: AddPushSource) -> bytes:
    """What two AddPushSource events are compared by: kamu compares the decoded events,
    so two that encode alike (in our canonical encoding) are the same source."""
    return hashlib.sha256(encode_event(ev)).digest()[:16]


InputEnd = tuple[bytes | None, int | None]  # an input's (lastBlockHash, lastOffset)


def _declared_ids(ev: SetTransform) -> tuple[bytes | None, ...]:
    """A SetTransform's input dataset IDs in order (None for one that is not an ID)."""
    return tuple(_input_id(ti.dataset_ref) for ti in ev.inputs or ())


def _listed_ids(ev: ExecuteTransform) -> tuple[bytes | None, ...]:
    return tuple(qi.dataset_id for qi in ev.query_inputs or ())


def _input_ends(ev: ExecuteTransform) -> tuple[InputEnd, ...]:
    """kamu's ``last_block_hash()`` / ``last_offset()`` of each query input."""
    return tuple(
        (
            qi.new_block_hash if qi.new_block_hash is not None else qi.prev_block_hash,
            qi.new_offset if qi.new_offset is not None else qi.prev_offset,
        )
        for qi in ev.query_inputs or ()
    )


@dataclass(frozen=True)
class RuleState:
    """What the rules need of the blocks before the next one (apart from the tip itself).

    kamu compares a new data block with the latest data block of any kind (offsets,
    watermark) and with the latest event of its own kind (checkpoint, the no-op rule); a
    missing one counts as one with every field absent. ``data_seen`` says whether there was
    any data block: kamu checks the carried ``prevOffset`` and the watermark only then.

    Attributes:
        data_seen: a data block (AddData or ExecuteTransform) exists.
        last_offset: the latest data block's last offset (its slice's end, else its
            prevOffset).
        data_watermark: the latest data block's newWatermark.
        add_checkpoint / add_watermark / add_source_state: the latest AddData's
            newCheckpoint hash, newWatermark and newSourceState.
        exec_checkpoint / exec_watermark: the latest ExecuteTransform's.
        schema: a SetDataSchema exists (or newData does, which kamu accepts only after
            one: a walk back can stop at the latest data block).
        polling: a SetPollingSource exists.
        push: per push source name, :func:`source_digest` of its latest AddPushSource.
        schema_event: the latest SetDataSchema (a new one is compared with it).
        transform_inputs: the dataset IDs the next ExecuteTransform lists, in order: the
            latest SetTransform's inputs, or the latest ExecuteTransform's when it is newer
            (kamu compares with one or the other; in a chain valid so far they are equal,
            so a walk back stops at whichever comes first); None before either.
        exec_inputs: the latest ExecuteTransform's inputs, per position, as
            ``(lastBlockHash, lastOffset)`` (``new*``, else ``prev*``); None before any.
    """

    data_seen: bool = False
    last_offset: int | None = None
    data_watermark: Timestamp | None = None
    add_checkpoint: bytes | None = None
    add_watermark: Timestamp | None = None
    add_source_state: SourceState | None = None
    exec_checkpoint: bytes | None = None
    exec_watermark: Timestamp | None = None
    schema: bool = False
    polling: bool = False
    push: tuple[tuple[str | None, bytes], ...] = ()
    schema_event: SetDataSchema | None = None
    transform_inputs: tuple[bytes | None, ...] | None = None
    exec_inputs: tuple[InputEnd, ...] | None = None

    def push_digest(self, name: str | None) -> bytes | None:
        """The digest of the latest AddPushSource named ``name``, or None."""
        for n, d in self.push:
            if n == name:
                return d
        return None


class RuleStateBuilder:
    """A :class:`RuleState` advanced in place, block by block (a whole chain's walk makes
    no frozen copy per block: a fifth of the forward check's time); its attributes are
    the state's."""

    __slots__ = tuple(f.name for f in fields(RuleState))

    def __init__(self, start: RuleState | None = None) -> None:
        s = start or RuleState()
        for name in self.__slots__:
            setattr(self, name, getattr(s, name))

    def push_digest(self, name: str | None) -> bytes | None:
        """As :meth:`RuleState.push_digest`."""
        return RuleState.push_digest(self, name)  # type: ignore[arg-type]

    def state(self) -> RuleState:
        """The state so far."""
        return RuleState(**{name: getattr(self, name) for name in self.__slots__})

    def advance(self, ev: object) -> None:
        """Take in the next block's event."""
        if isinstance(ev, AddData | ExecuteTransform):
            self.data_seen = True
            self.last_offset = _last_offset(ev)
            self.data_watermark = ev.new_watermark
            if ev.new_data is not None:
                self.schema = True
            if isinstance(ev, AddData):
                self.add_checkpoint = _cp(ev)
                self.add_watermark = ev.new_watermark
                self.add_source_state = ev.new_source_state
            else:
                self.exec_checkpoint = _cp(ev)
                self.exec_watermark = ev.new_watermark
                self.transform_inputs = _listed_ids(ev)
                self.exec_inputs = _input_ends(ev)
        elif isinstance(ev, SetTransform):
            self.transform_inputs = _declared_ids(ev)
        elif isinstance(ev, SetDataSchema):
            self.schema = True
            self.schema_event = ev
        elif isinstance(ev, SetPollingSource):
            self.polling = True
        elif isinstance(ev, AddPushSource):
            d = source_digest(ev)
            rest = tuple(p for p in self.push if p[0] != ev.source_name)
            self.push = _sorted_push((*rest, (ev.source_name, d)))

    # the attributes, for the type checker (set from the slots above)
    data_seen: bool
    last_offset: int | None
    data_watermark: Timestamp | None
    add_checkpoint: bytes | None
    add_watermark: Timestamp | None
    add_source_state: SourceState | None
    exec_checkpoint: bytes | None
    exec_watermark: Timestamp | None
    schema: bool
    polling: bool
    push: tuple[tuple[str | None, bytes], ...]
    schema_event: SetDataSchema | None
    transform_inputs: tuple[bytes | None, ...] | None
    exec_inputs: tuple[InputEnd, ...] | None


def _sorted_push(
    items: Iterable[tuple[str | None, bytes]],
) -> tuple[tuple[str | None, bytes], ...]:
    return tuple(sorted(items, key=lambda p: ("" if p[0] is None else "\0" + p[0], p[1])))


@dataclass(frozen=True)
class ChainState:
    """The state of a chain at its last block ``tip``: what the block after it is checked
    against (the tip gives the next sequence number, parent and earliest system time)."""

    tip: ChainEntry
    rules: RuleState = field(default_factory=RuleState)


def _last_offset(ev: AddData | ExecuteTransform) -> int | None:
    """kamu's ``last_offset()``: the slice's end, else the carried prevOffset."""
    iv = ev.new_data.offset_interval if ev.new_data is not None else None
    return iv.end if iv is not None else ev.prev_offset


def _cp(ev: AddData | ExecuteTransform) -> bytes | None:
    return ev.new_checkpoint.physical_hash if ev.new_checkpoint is not None else None


def _h(mh: bytes | None) -> str:
    return multihash_to_str(mh) if mh is not None else "absent"


def _ts(t: Timestamp | None) -> str:
    return t.isoformat() if t is not None else "absent"


def _is_empty(ev: AddData | ExecuteTransform) -> bool:
    """kamu's ``is_empty()``: nothing new at all."""
    empty = ev.new_data is None and ev.new_checkpoint is None and ev.new_watermark is None
    return empty and (not isinstance(ev, AddData) or ev.new_source_state is None)


def _sql_problem(transform: object, what: str) -> str | None:
    """kamu's ``validate_transform``: what is wrong with a transform, or None."""
    if not isinstance(transform, TransformSql):
        return f"{what} has no SQL transform"
    if transform.query is not None:
        return f"{what}'s SQL is not normalized: 'query' is set instead of 'queries'"
    queries = transform.queries or ()
    if not queries:
        return f"{what}'s SQL has no queries"
    if queries[-1].alias is not None:
        return f"{what}: the last SQL query has an alias; the output query must have none"
    if any(q.alias is None for q in queries[:-1]):
        return f"{what}: every SQL query but the last needs an alias"
    return None


def _input_id(ref: str | None) -> bytes | None:
    try:
        return DatasetId.parse(ref or "").to_bytes()
    except FormatError:
        return None


Problem = tuple[str, str]  # (rule name, message)


def local_problems(ev: object) -> list[Problem]:
    """The rules a block breaks by itself, whatever the chain before it."""
    out: list[Problem] = []
    if isinstance(ev, AddData | ExecuteTransform):
        if _is_empty(ev):
            out.append(("event-empty", f"{type(ev).__name__} is empty: no new* field"))
        if ev.new_data is not None:
            iv = ev.new_data.offset_interval
            if iv is None:
                # kamu cannot even decode it: offsetInterval is required
                out.append(("offset-interval", "newData has no offsetInterval"))
            else:
                want = 0 if ev.prev_offset is None else ev.prev_offset + 1
                if iv.start != want:
                    out.append(
                        (
                            "offsets-sequential",
                            f"newData starts at offset {iv.start}, expected {want} "
                            f"(prevOffset {ev.prev_offset} + 1)",
                        )
                    )
                if iv.end < iv.start:
                    out.append(("offset-interval", f"offset interval [{iv.start}, {iv.end}]"))
    elif isinstance(ev, DisablePollingSource | DisablePushSource):
        out.append(
            (
                "unimplemented-event",
                f"{type(ev).__name__}: kamu cannot append it (disabling sources is not "
                "implemented)",
            )
        )
    elif isinstance(ev, AddPushSource | SetPollingSource):
        what = type(ev).__name__
        if ev.preprocess is not None:
            problem = _sql_problem(ev.preprocess, f"{what}'s preprocess")
            if problem is not None:
                out.append(("source-preprocess", problem))
        read = ev.read
        if read is not None and read.schema is not None and read.ddl_schema is not None:
            out.append(("source-read-schema", f"{what}: read step has both ddlSchema and schema"))
        if (
            isinstance(ev, SetPollingSource)
            and isinstance(ev.fetch, FetchStepEthereumLogs)
            and ev.fetch.chain_id is None
            and ev.fetch.node_url is None
        ):
            out.append(("source-ethereum", "an EthereumLogs source needs chainId or nodeUrl"))
    elif isinstance(ev, SetTransform):
        out.extend(_set_transform_problems(ev))
    return out


def _set_transform_problems(ev: SetTransform) -> list[Problem]:
    out: list[Problem] = []
    inputs = ev.inputs or ()
    if not inputs:
        out.append(("transform-inputs", "SetTransform declares no inputs"))
    seen: set[bytes] = set()
    for i, ti in enumerate(inputs):
        did = _input_id(ti.dataset_ref)
        if did is None:
            out.append(
                (
                    "transform-inputs",
                    f"input #{i} is {ti.dataset_ref!r}, not a dataset ID (did:odf:…)",
                )
            )
        elif did in seen:
            out.append(("transform-inputs", f"input {ti.dataset_ref} is declared twice"))
        else:
            seen.add(did)
        if ti.alias is None:
            out.append(("transform-inputs", f"input #{i} ({ti.dataset_ref}) has no alias"))
    problem = _sql_problem(ev.transform, "SetTransform")
    if problem is not None:
        out.append(("transform-sql", problem))
    return out


def state_problems(ev: object, s: RuleState | RuleStateBuilder) -> list[Problem]:
    """The rules a block breaks against the state the chain before it left."""
    out: list[Problem] = []
    if isinstance(ev, AddData | ExecuteTransform):
        if s.data_seen:
            if ev.prev_offset != s.last_offset:
                out.append(
                    (
                        "prev-offset",
                        f"prevOffset is {ev.prev_offset}, expected {s.last_offset} "
                        "(the previous data block's last offset)",
                    )
                )
            if s.data_watermark is not None:
                if ev.new_watermark is None:
                    out.append(
                        (
                            "watermark-monotonic",
                            "newWatermark is absent, but the previous data block set "
                            f"{s.data_watermark.isoformat()}",
                        )
                    )
                elif ev.new_watermark < s.data_watermark:
                    out.append(
                        (
                            "watermark-monotonic",
                            f"watermark {ev.new_watermark.isoformat()} is before "
                            f"{s.data_watermark.isoformat()}",
                        )
                    )
        if ev.new_data is not None and not s.schema:
            out.append(("schema-before-data", "newData before any SetDataSchema"))
        if isinstance(ev, ExecuteTransform):
            order = _order_problem(ev, s.transform_inputs)
            if order is not None:
                out.append(order)
            out.extend(_interval_problems(ev, s.exec_inputs))
        add = isinstance(ev, AddData)
        want_cp = s.add_checkpoint if add else s.exec_checkpoint
        if ev.prev_checkpoint != want_cp:
            out.append(
                (
                    "prev-checkpoint",
                    f"prevCheckpoint {_h(ev.prev_checkpoint)}, expected {_h(want_cp)} (the "
                    f"previous {type(ev).__name__}'s newCheckpoint)",
                )
            )
        if not _is_empty(ev) and _no_op(ev, s):
            what = "source state" if add else "inputs"
            out.append(
                (
                    "no-op",
                    f"no newData, and neither checkpoint, watermark nor {what} advance",
                )
            )
    elif isinstance(ev, AddPushSource):
        if s.polling:
            out.append(("push-after-polling", "AddPushSource while a polling source is active"))
        if s.push_digest(ev.source_name) == source_digest(ev):
            out.append(
                (
                    "push-source-identical",
                    f"AddPushSource {ev.source_name!r} is identical to the current one",
                )
            )
    elif isinstance(ev, SetPollingSource) and s.push:
        out.append(("polling-after-push", "SetPollingSource while push sources are active"))
    elif isinstance(ev, SetDataSchema) and s.schema_event is not None:
        problem = _schema_problem(s.schema_event, ev)
        if problem is not None:
            out.append(problem)
    return out


def _schema_problem(prev: SetDataSchema, new: SetDataSchema) -> Problem | None:
    """kamu's SetDataSchema validator: the new schema against the current one. A schema in
    the legacy Arrow form is not compared (kamu converts the old one with Arrow, and does
    not check a new one in that form)."""
    if prev.schema is None or new.schema is None:
        return None
    change = schema_change(prev.schema, new.schema)
    if change == "identical":
        return ("schema-identical", "the new schema is identical to the current one")
    if change == "incompatible":
        return (
            "schema-incompatible",
            "the new schema is not compatible with the current one (only reordering, "
            "attribute changes and new optional fields are)",
        )
    return None


def _did(raw: bytes | None) -> str:
    try:
        return str(DatasetId.from_bytes(raw or b""))
    except FormatError:
        return "a malformed dataset ID" if raw else "no dataset ID"


def _order_problem(ev: ExecuteTransform, want: tuple[bytes | None, ...] | None) -> Problem | None:
    """kamu's ExecuteTransform validator: the inputs, by dataset ID and position, are those
    of the latest SetTransform (or of the previous ExecuteTransform, which listed them)."""
    if want is None:
        return (
            "transform-before-execute",
            "ExecuteTransform is not preceded by a SetTransform",
        )
    got = _listed_ids(ev)
    if got == want:
        return None
    for i, (g, w) in enumerate(zip(got, want, strict=False)):
        if g != w:
            detail = f"input #{i} is {_did(g)}, the SetTransform declares {_did(w)} there"
            break
    else:
        detail = f"{len(got)} listed, the SetTransform declares {len(want)}"
    return ("transform-input-order", f"queryInputs not as the SetTransform declares: {detail}")


def _interval_problems(ev: ExecuteTransform, prev: tuple[InputEnd, ...] | None) -> list[Problem]:
    """kamu's input interval checks: only after an ExecuteTransform, each query input
    against the previous ExecuteTransform's input at the same position (kamu zips the
    two lists: an input past the shorter list is not compared)."""
    out: list[Problem] = []
    if prev is None:
        return out
    for i, (qi, (last_block, last_offset)) in enumerate(
        zip(ev.query_inputs or (), prev, strict=False)
    ):
        what = f"input #{i} ({_did(qi.dataset_id)})"
        if qi.new_block_hash is not None and qi.new_block_hash == qi.prev_block_hash:
            out.append(
                (
                    "input-block-interval",
                    f"{what}: newBlockHash equals prevBlockHash (an empty block interval "
                    "leaves newBlockHash absent)",
                )
            )
        if qi.new_offset is not None and qi.new_offset == qi.prev_offset:
            out.append(
                (
                    "input-offset-interval",
                    f"{what}: newOffset equals prevOffset {qi.prev_offset} (an empty offset "
                    "interval leaves newOffset absent)",
                )
            )
        if qi.prev_block_hash != last_block:
            out.append(
                (
                    "input-prev-block",
                    f"{what}: prevBlockHash {_h(qi.prev_block_hash)}, expected "
                    f"{_h(last_block)} (the last block the previous ExecuteTransform included)",
                )
            )
        if qi.prev_offset != last_offset:
            out.append(
                (
                    "input-prev-offset",
                    f"{what}: prevOffset {qi.prev_offset}, expected {last_offset} (the last "
                    "offset the previous ExecuteTransform included)",
                )
            )
        if qi.new_offset is not None and qi.new_block_hash is None:
            out.append(
                (
                    "input-offsets-without-blocks",
                    f"{what}: newOffset {qi.new_offset} but no newBlockHash (new offsets "
                    "need new blocks)",
                )
            )
    return out


def _no_op(ev: AddData | ExecuteTransform, s: RuleState | RuleStateBuilder) -> bool:
    """kamu's "event neither has data nor it advances …" (the checkpoint compared with the
    event's own prevCheckpoint, the rest with the previous event of its kind)."""
    if ev.new_data is not None or _cp(ev) != ev.prev_checkpoint:
        return False
    if isinstance(ev, AddData):
        return ev.new_watermark == s.add_watermark and ev.new_source_state == s.add_source_state
    return ev.new_watermark == s.exec_watermark and all(
        qi.new_block_hash is None for qi in ev.query_inputs or ()
    )


def check_chain_rules(
    entries: Sequence[ChainEntry], *, after: ChainState | None = None
) -> list[Violation]:
    """Check the chain rules over blocks given oldest first (already hash-verified).

    Without ``after`` the blocks are a whole chain, Seed first. With ``after`` they
    continue a chain whose state at its tip is ``after`` (see :func:`chain_state`):
    every rule is checked on every given block as if the whole chain were walked.
    """
    out: list[Violation] = []
    if not entries:
        return out

    def bad(e: ChainEntry, rule: str, msg: str) -> None:
        r = RULES.get(rule)
        out.append(
            Violation(
                rule,
                msg,
                e.block.sequence_number,
                e.hash,
                kamu=r.kamu if r else None,
                number=r.number if r else None,
            )
        )

    first = entries[0]
    prev: ChainEntry | None = None
    state = RuleStateBuilder()
    if after is not None:
        prev, state = after.tip, RuleStateBuilder(after.rules)
        if first.block.prev_block_hash != after.tip.hash:
            bad(first, "block-hash", "prevBlockHash does not name the chain's tip")
    elif not isinstance(first.block.event, Seed):
        bad(first, "seed-first", "the first block of the chain must be a Seed event")
    elif first.block.sequence_number != 0:
        bad(first, "sequence-number", f"the Seed is #{first.block.sequence_number}, not #0")

    for e in entries:
        b, ev = e.block, e.block.event
        if prev is not None:
            if isinstance(ev, Seed):
                bad(e, "seed-once", "a Seed event may only be the first block")
            if b.sequence_number != prev.block.sequence_number + 1:
                bad(
                    e,
                    "sequence-number",
                    f"follows #{prev.block.sequence_number}, expected "
                    f"#{prev.block.sequence_number + 1}",
                )
            if b.system_time < prev.block.system_time:
                bad(
                    e,
                    "system-time-monotonic",
                    f"system time {b.system_time.isoformat()} is before the previous block's "
                    f"{prev.block.system_time.isoformat()}",
                )
        for rule, msg in local_problems(ev):
            bad(e, rule, msg)
        for rule, msg in state_problems(ev, state):
            bad(e, rule, msg)
        state.advance(ev)
        prev = e
    return out


@dataclass
class _Pending:
    """What the nearest newer data event (of a kind) requires of the older one."""

    prev_offset: int | None
    watermark: Timestamp | None
    prev_checkpoint: bytes | None
    maybe_no_op: bool  # no newData, newCheckpoint = its own prevCheckpoint (and no inputs)
    source_state: SourceState | None = None


class ChainRulesBackwards:
    """:func:`check_chain_rules`'s verdict over a walk from the head back, one block at a
    time, in constant memory (an initial publish of 100,000 blocks holds no decoded chain).

    Every rule relates a block to the one before it or to the :class:`RuleState` the older
    blocks left, so it can be checked walking back by carrying what the newer blocks
    require of the older ones: the nearest newer data block's prevOffset and watermark, the
    nearest newer AddData's and ExecuteTransform's prevCheckpoint and no-op candidacy, a
    pending need for a SetDataSchema, the newer push sources and polling source.
    :meth:`finish` is True exactly when :func:`check_chain_rules` of the same blocks, oldest
    first (with the same ``after``), finds nothing; it says whether, not what: for the
    violations, check the blocks again with :func:`check_chain_rules`.
    """

    def __init__(self) -> None:
        self.ok = True
        self._newer: ChainEntry | None = None
        self._data: _Pending | None = None  # nearest newer data block of any kind
        self._add: _Pending | None = None
        self._exec: _Pending | None = None
        self._need_schema = False  # newData in a newer block, no SetDataSchema since
        self._newer_schema: SetDataSchema | None = None  # the nearest newer SetDataSchema
        self._push: dict[str | None, bytes] = {}  # nearest newer AddPushSource per name
        self._newer_polling = False
        # the nearest newer ExecuteTransform, while no SetTransform / ExecuteTransform older
        # than it was met: it lists the inputs of the one met next, and continues the
        # intervals of the next ExecuteTransform
        self._need_ids: ExecuteTransform | None = None
        self._need_ends: ExecuteTransform | None = None

    def feed(self, e: ChainEntry) -> None:
        """The next block walking back (head first)."""
        b, ev = e.block, e.block.event
        newer = self._newer
        if newer is not None:
            nb = newer.block
            if (
                nb.sequence_number != b.sequence_number + 1
                or nb.system_time < b.system_time
                or isinstance(nb.event, Seed)
            ):
                self.ok = False
        self._newer = e
        if local_problems(ev):
            self.ok = False
        if isinstance(ev, ExecuteTransform):
            self._feed_inputs(ev)
        elif isinstance(ev, SetTransform):
            need = self._need_ids
            if need is not None and _order_problem(need, _declared_ids(ev)) is not None:
                self.ok = False
            self._need_ids = None
        if isinstance(ev, AddData | ExecuteTransform):
            self._feed_data(ev)
        elif isinstance(ev, SetDataSchema):
            self._need_schema = False
            if self._newer_schema is not None and _schema_problem(ev, self._newer_schema):
                self.ok = False
            self._newer_schema = ev
        elif isinstance(ev, AddPushSource):
            d = source_digest(ev)
            if self._newer_polling or self._push.get(ev.source_name) == d:
                self.ok = False
            self._push[ev.source_name] = d
        elif isinstance(ev, SetPollingSource):
            if self._push:
                self.ok = False
            self._newer_polling = True

    def _feed_inputs(self, ev: ExecuteTransform) -> None:
        need, ends = self._need_ids, self._need_ends
        if need is not None and _order_problem(need, _listed_ids(ev)) is not None:
            self.ok = False
        if ends is not None and _interval_problems(ends, _input_ends(ev)):
            self.ok = False
        self._need_ids = self._need_ends = ev

    def _feed_data(self, ev: AddData | ExecuteTransform) -> None:
        add = isinstance(ev, AddData)
        data, own = self._data, self._add if add else self._exec
        if data is not None:
            if data.prev_offset != _last_offset(ev):
                self.ok = False
            if ev.new_watermark is not None and (
                data.watermark is None or data.watermark < ev.new_watermark
            ):
                self.ok = False
        if own is not None and self._breaks_own_event(own, ev):
            self.ok = False
        if ev.new_data is not None:
            self._need_schema = True
        empty = _is_empty(ev)
        maybe = not empty and ev.new_data is None and _cp(ev) == ev.prev_checkpoint
        if maybe and isinstance(ev, ExecuteTransform):
            maybe = all(qi.new_block_hash is None for qi in ev.query_inputs or ())
        p = _Pending(
            ev.prev_offset,
            ev.new_watermark,
            ev.prev_checkpoint,
            maybe,
            ev.new_source_state if isinstance(ev, AddData) else None,
        )
        self._data = p
        if add:
            self._add = p
        else:
            self._exec = p

    @staticmethod
    def _breaks_own(
        p: _Pending,
        older_cp: bytes | None,
        older_wm: Timestamp | None,
        older_ss: SourceState | None,
        add: bool,
    ) -> bool:
        if p.prev_checkpoint != older_cp:
            return True
        if not p.maybe_no_op or p.watermark != older_wm:
            return False
        return not add or p.source_state == older_ss

    def _breaks_own_event(self, p: _Pending, ev: AddData | ExecuteTransform) -> bool:
        ss = ev.new_source_state if isinstance(ev, AddData) else None
        return self._breaks_own(p, _cp(ev), ev.new_watermark, ss, isinstance(ev, AddData))

    def finish(self, *, after: ChainState | None = None) -> bool:
        """No rule broken by the blocks fed, the last one fed being the oldest: a Seed (or,
        with ``after``, the block following ``after.tip``)."""
        first = self._newer
        if first is None:
            return True
        ok = self.ok
        if after is not None:
            tip = after.tip.block
            if (
                first.block.prev_block_hash != after.tip.hash
                or first.block.sequence_number != tip.sequence_number + 1
                or first.block.system_time < tip.system_time
                or isinstance(first.block.event, Seed)
            ):
                ok = False
            s = after.rules
        elif not isinstance(first.block.event, Seed) or first.block.sequence_number != 0:
            return False  # seed-first, sequence-number
        else:
            s = RuleState()
        data = self._data
        if data is not None and s.data_seen:
            if data.prev_offset != s.last_offset:
                ok = False
            if s.data_watermark is not None and (
                data.watermark is None or data.watermark < s.data_watermark
            ):
                ok = False
        if self._add is not None and self._breaks_own(
            self._add, s.add_checkpoint, s.add_watermark, s.add_source_state, True
        ):
            ok = False
        if self._exec is not None and self._breaks_own(
            self._exec, s.exec_checkpoint, s.exec_watermark, None, False
        ):
            ok = False
        if self._need_schema and not s.schema:
            ok = False
        newer, current = self._newer_schema, s.schema_event
        if newer is not None and current is not None and _schema_problem(current, newer):
            ok = False
        if self._push and s.polling:
            ok = False
        if any(s.push_digest(name) == d for name, d in self._push.items()):
            ok = False
        if self._newer_polling and s.push:
            ok = False
        need, ends = self._need_ids, self._need_ends
        if need is not None and _order_problem(need, s.transform_inputs) is not None:
            ok = False
        if ends is not None and _interval_problems(ends, s.exec_inputs):
            ok = False
        return ok


class RuleStateWalk:
    """The :class:`RuleState` at a head, from a walk back from it (head first).

    Each field is the first value met walking back (the latest). Fed down to the Seed, the
    state is exactly what :func:`check_chain_rules` builds oldest first; :meth:`known`
    tells when the walk can stop early for the blocks that will follow (the older blocks
    are assumed valid: a data block with newData implies a SetDataSchema before it).
    """

    def __init__(self) -> None:
        self.tip: ChainEntry | None = None
        self.seed = False
        self._data: AddData | ExecuteTransform | None = None
        self._add: AddData | None = None
        self._exec: ExecuteTransform | None = None
        self._schema = False
        self._schema_event: SetDataSchema | None = None
        self._polling = False
        self._push: dict[str | None, bytes] = {}
        self._inputs: tuple[bytes | None, ...] | None = None  # the newest SetTransform's
        # or ExecuteTransform's

    def feed(self, e: ChainEntry) -> None:
        """The next block walking back (head first)."""
        ev = e.block.event
        if self.tip is None:
            self.tip = e
        if self._inputs is None:
            if isinstance(ev, SetTransform):
                self._inputs = _declared_ids(ev)
            elif isinstance(ev, ExecuteTransform):
                self._inputs = _listed_ids(ev)
        if isinstance(ev, AddData | ExecuteTransform):
            if self._data is None:
                self._data = ev
            if isinstance(ev, AddData):
                if self._add is None:
                    self._add = ev
            elif self._exec is None:
                self._exec = ev
            if ev.new_data is not None:
                self._schema = True
        elif isinstance(ev, SetDataSchema):
            self._schema = True
            if self._schema_event is None:
                self._schema_event = ev
        elif isinstance(ev, SetPollingSource):
            self._polling = True
        elif isinstance(ev, AddPushSource):
            self._push.setdefault(ev.source_name, source_digest(ev))
        elif isinstance(ev, Seed):
            self.seed = True

    def known(self, upcoming: Sequence[ChainEntry]) -> bool:
        """Whether the state read so far is all that ``upcoming`` blocks will consult."""
        if self.seed:
            return True
        for e in upcoming:
            ev = e.block.event
            if isinstance(ev, AddData | ExecuteTransform):
                if self._data is None:
                    return False
                if (self._add if isinstance(ev, AddData) else self._exec) is None:
                    return False
                if ev.new_data is not None and not self._schema:
                    return False
            elif isinstance(ev, AddPushSource | SetPollingSource):
                return False  # every source of the chain counts
            elif isinstance(ev, SetDataSchema) and self._schema_event is None:
                return False
        return True

    def state(self) -> RuleState:
        """The state read so far."""
        d, a, x = self._data, self._add, self._exec
        return RuleState(
            data_seen=d is not None,
            last_offset=_last_offset(d) if d is not None else None,
            data_watermark=d.new_watermark if d is not None else None,
            add_checkpoint=_cp(a) if a is not None else None,
            add_watermark=a.new_watermark if a is not None else None,
            add_source_state=a.new_source_state if a is not None else None,
            exec_checkpoint=_cp(x) if x is not None else None,
            exec_watermark=x.new_watermark if x is not None else None,
            schema=self._schema,
            polling=self._polling,
            push=_sorted_push(self._push.items()),
            schema_event=self._schema_event,
            transform_inputs=self._inputs,
            exec_inputs=_input_ends(x) if x is not None else None,
        )


def chain_state(
    entries_head_first: Iterable[ChainEntry], upcoming: Sequence[ChainEntry] | None = None
) -> ChainState:
    """The :class:`ChainState` at the first entry of a (lazy) walk from a head back, e.g.
    ``walk_chain(reader, head)``.

    With ``upcoming`` (the blocks that will be checked after it), the walk is consumed only
    until the state those blocks consult is known, so a long chain with recent data is not
    re-walked to its Seed; the fields they do not consult are left at their defaults.
    Without it, the walk goes to the Seed.

    Raises:
        NotFound: the walk yields nothing.
    """
    walk = RuleStateWalk()
    for e in entries_head_first:
        walk.feed(e)
        if upcoming is not None and walk.known(upcoming):
            break
    if walk.tip is None:
        raise NotFound("no block to read the chain state from")
    return ChainState(walk.tip, walk.state())
