"""The chain rules checked walking back (ChainRulesBackwards, constant memory) give
check_chain_rules' verdict on every chain, and FactsWalk gives facts_of_chain's facts.

Random chains (fixed seeds) mix valid and broken blocks of every rule: offsets (prevOffset,
interval start and end, a slice without interval), checkpoints per event kind, watermarks
(decreasing, dropped), system times, sequence numbers, a second Seed, empty and no-op
events, schemas (identical, incompatible, legacy), push and polling sources (mixed,
identical, disabled, malformed), SetTransforms, ExecuteTransform inputs (listed in
another order, one missing or more, intervals not continued, empty, offsets without
blocks, going backwards); with and without a ChainState the blocks
continue (the state the older blocks leave, read whole or only as far as the newer blocks
need, or an arbitrary one)."""

from __future__ import annotations

import dataclasses
import random

import pytest

from odfweb3.odf.chain import ChainEntry, iter_objects
from odfweb3.odf.facts import FactsWalk, facts_of_chain
from odfweb3.odf.identity import DatasetId
from odfweb3.odf.model_gen import (
    AddData,
    AddPushSource,
    Checkpoint,
    DataField,
    DataSchema,
    DatasetKind,
    DataSlice,
    DataTypeOption,
    DataTypeString,
    DisablePollingSource,
    DisablePushSource,
    ExecuteTransform,
    ExecuteTransformInput,
    FetchStepEthereumLogs,
    FetchStepUrl,
    MetadataBlock,
    OffsetInterval,
    ReadStepCsv,
    Seed,
    SetDataSchema,
    SetInfo,
    SetLicense,
    SetPollingSource,
    SetTransform,
    SourceState,
    SqlQueryStep,
    TransformInput,
    TransformSql,
)
from odfweb3.odf.timestamp import Timestamp
from odfweb3.odf.validate import (
    RULES,
    ChainRulesBackwards,
    ChainState,
    RuleState,
    chain_state,
    check_chain_rules,
)

DID = "did:odf:fed01" + "ab" * 32
DID2 = "did:odf:fed01" + "cd" * 32
IDS = {DID: DatasetId.parse(DID).to_bytes(), DID2: DatasetId.parse(DID2).to_bytes()}
SQL = TransformSql(engine="datafusion", queries=(SqlQueryStep(query="SELECT 1"),))


def _h(rng: random.Random) -> bytes:
    return b"\x16\x20" + bytes(rng.getrandbits(8) for _ in range(32))


def _wm(seconds: int) -> Timestamp:
    return Timestamp(2049, 1, max(0, seconds), 0)


@dataclasses.dataclass
class _Gen:
    """The state a generator keeps to write valid blocks (what kamu would compare to)."""

    data_seen: bool = False
    offset: int | None = None
    wm: int | None = None
    own_cp: dict[type, bytes | None] = dataclasses.field(default_factory=dict)
    own_wm: dict[type, int | None] = dataclasses.field(default_factory=dict)
    add_ss: SourceState | None = None
    polling: bool = False
    push: dict[str, AddPushSource] = dataclasses.field(default_factory=dict)
    versions: int = 0
    schema: bool = False
    fields: tuple[DataField, ...] = ()
    inputs: tuple[bytes, ...] | None = None  # what the next ExecuteTransform lists
    ends: tuple[tuple[bytes | None, int | None], ...] | None = None  # the latest one's


def _source(rng: random.Random, g: _Gen, flip) -> object:
    """A source event: valid for the chain so far unless ``flip()`` says otherwise."""
    if flip():
        return rng.choice(
            [
                DisablePollingSource(),
                DisablePushSource(source_name="a"),
                SetPollingSource(
                    fetch=FetchStepEthereumLogs(chain_id=None, node_url=None),
                    read=ReadStepCsv(),
                ),
                AddPushSource(
                    source_name="a",
                    read=ReadStepCsv(ddl_schema=("a INT",), schema=DataSchema(fields=())),
                ),
                AddPushSource(source_name="a", read=ReadStepCsv(), preprocess=TransformSql()),
                # the other kind of source than the chain has (or identical to the last)
                AddPushSource(source_name="a", read=ReadStepCsv())
                if g.polling
                else SetPollingSource(fetch=FetchStepUrl(url="https://x"), read=ReadStepCsv()),
                g.push.get("a") or AddPushSource(source_name="a", read=ReadStepCsv()),
            ]
        )
    g.versions += 1
    if g.polling or (not g.push and rng.random() < 0.5):
        g.polling = True
        return SetPollingSource(
            fetch=FetchStepUrl(url=f"https://x/{g.versions}"), read=ReadStepCsv()
        )
    name = rng.choice(["a", "b"])
    ev = AddPushSource(source_name=name, read=ReadStepCsv(separator=str(g.versions)))
    g.push[name] = ev
    return ev


def _schema(rng: random.Random, g: _Gen, flip) -> SetDataSchema:
    """A SetDataSchema: each an optional field more (or a legacy Arrow one) unless
    ``flip()``: then the same fields again, one fewer, or a required one more."""
    if g.fields and flip():
        more = DataField(name=f"r{g.versions}", type=DataTypeString())
        fields = rng.choice([g.fields, g.fields[:-1], (*g.fields, more)])
        return SetDataSchema(schema=DataSchema(fields=fields))
    if rng.random() < 0.15:
        return SetDataSchema(raw_arrow_schema=b"legacy")
    g.versions += 1
    new = DataField(name=f"f{g.versions}", type=DataTypeOption(inner=DataTypeString()))
    g.fields = (*g.fields, new)
    return SetDataSchema(schema=DataSchema(fields=g.fields))


def _transform(rng: random.Random, g: _Gen, flip) -> SetTransform:
    inputs = (TransformInput(dataset_ref=DID, alias="in"),)
    if not flip():
        inputs = rng.choice(
            [
                inputs,
                (*inputs, TransformInput(dataset_ref=DID2, alias="in2")),
                (TransformInput(dataset_ref=DID2, alias="in2"), *inputs),
            ]
        )
        g.inputs = tuple(IDS[i.dataset_ref] for i in inputs)  # type: ignore[index]
    else:
        return rng.choice(
            [
                SetTransform(inputs=(), transform=SQL),
                SetTransform(inputs=(TransformInput(dataset_ref=DID),), transform=SQL),
                SetTransform(inputs=inputs * 2, transform=SQL),
                SetTransform(inputs=inputs, transform=TransformSql(query="SELECT 1")),
            ]
        )
    return SetTransform(inputs=inputs, transform=SQL)


def _query_inputs(rng: random.Random, g: _Gen, flip) -> tuple[ExecuteTransformInput, ...]:
    """An ExecuteTransform's inputs: those declared, each continuing the interval at its
    position, unless ``flip()``."""
    ids = list(g.inputs or (IDS[DID],))
    if flip():
        ids = rng.choice([ids[::-1], ids[:-1], [*ids, IDS[DID2]], [b"\x00"]])
    out = []
    for i, did in enumerate(ids):
        end = g.ends[i] if g.ends is not None and i < len(g.ends) else (None, None)
        if g.ends is None or i >= len(g.ends):
            end = rng.choice([(None, None), end, (_h(rng), 3)])  # kamu compares none
        prev_block, prev_offset = end
        if flip():
            prev_block = rng.choice([None, _h(rng)])
        if flip():
            prev_offset = rng.choice([None, (prev_offset or 0) + 1])
        new_block = rng.choice([None, _h(rng)])
        if flip():
            new_block = prev_block
        new_offset = None
        if new_block is not None and rng.random() < 0.7:
            new_offset = (prev_offset if prev_offset is not None else -1) + rng.choice([1, 5])
            if prev_offset is not None and prev_offset > 0 and rng.random() < 0.1:
                new_offset = prev_offset - 1  # backwards: kamu's append allows it
        if flip():
            new_offset = rng.choice([prev_offset, 7])
        out.append(
            ExecuteTransformInput(
                dataset_id=did,
                prev_block_hash=prev_block,
                new_block_hash=new_block,
                prev_offset=prev_offset,
                new_offset=new_offset,
            )
        )
    return tuple(out)


def _data(rng: random.Random, g: _Gen, flip, cps: list[bytes]) -> AddData | ExecuteTransform:
    cls = rng.choice([AddData, ExecuteTransform])
    if cls is ExecuteTransform and g.inputs is None and not flip():
        cls = AddData  # kamu wants a SetTransform before an ExecuteTransform
    if g.data_seen:
        prev_offset = g.offset if not flip() else (g.offset or 0) + 2
    else:
        prev_offset = rng.choice([None, None, 4])  # kamu checks no carry before any data
    data = None
    if rng.random() < 0.6:
        start = 0 if prev_offset is None else prev_offset + 1
        if flip():
            start += 1
        end = start + rng.choice([0, 3, 9]) - (5 if flip() else 0)
        iv = None if flip() else OffsetInterval(start=start, end=end)
        data = DataSlice(logical_hash=b"l", physical_hash=_h(rng), offset_interval=iv, size=7)
    own_cp = g.own_cp.get(cls)
    prev_cp = own_cp if not flip() else rng.choice(cps)
    new_cp = None
    if rng.random() < 0.6:
        new_cp = Checkpoint(physical_hash=rng.choice(cps), size=3)
    wm: int | None
    if g.wm is not None:
        wm = g.wm + rng.choice([0, 0, 2])
        if flip():
            wm = rng.choice([None, g.wm - 4])
    else:
        wm = rng.choice([None, 100 + rng.randint(0, 9)])
    ss = None
    if cls is AddData:
        ss = rng.choice([None, g.add_ss, SourceState(source_name="default", kind="k", value="1")])
    inputs = _query_inputs(rng, g, flip) if cls is ExecuteTransform else ()
    cp_same = (new_cp.physical_hash if new_cp else None) == prev_cp
    own_wm = g.own_wm.get(cls)
    if cls is AddData:
        still = wm == own_wm and ss == g.add_ss
    else:
        still = wm == own_wm and all(i.new_block_hash is None for i in inputs)
    empty = data is None and new_cp is None and wm is None and ss is None
    if ((data is None and cp_same and still) or empty) and not flip():
        # kamu refuses an event that changes nothing (or has no new* field, even with
        # inputs that advance): give it a fresh checkpoint
        new_cp = Checkpoint(physical_hash=_h(rng), size=3)
    wm_ts = None if wm is None else _wm(wm)
    ev: AddData | ExecuteTransform
    if cls is AddData:
        ev = AddData(prev_checkpoint=prev_cp, prev_offset=prev_offset, new_data=data,
                     new_checkpoint=new_cp, new_watermark=wm_ts, new_source_state=ss)  # fmt: skip
        g.add_ss = ss
    else:
        ev = ExecuteTransform(query_inputs=inputs, prev_checkpoint=prev_cp,
                              prev_offset=prev_offset, new_data=data, new_checkpoint=new_cp,
                              new_watermark=wm_ts)  # fmt: skip
        g.inputs = tuple(i.dataset_id or b"" for i in inputs)
        g.ends = tuple(
            (i.new_block_hash or i.prev_block_hash,
             i.new_offset if i.new_offset is not None else i.prev_offset)
            for i in inputs
        )  # fmt: skip
    g.data_seen = True
    iv = data.offset_interval if data is not None else None
    g.offset = iv.end if iv is not None else prev_offset
    g.wm = wm
    g.own_cp[cls] = new_cp.physical_hash if new_cp else None
    g.own_wm[cls] = wm
    return ev


def _chain(rng: random.Random, n: int, bad: float) -> list[ChainEntry]:
    """A chain of ``n`` blocks oldest first, each field wrong with probability ``bad``."""

    def flip() -> bool:
        return rng.random() < bad

    kind = rng.choice([DatasetKind.ROOT, DatasetKind.DERIVATIVE])
    out: list[ChainEntry] = []
    g = _Gen()
    cps = [_h(rng) for _ in range(3)]  # few checkpoints: repeats and carried ones
    seconds = 1000
    prev: bytes | None = None
    for seq in range(n):
        seconds += rng.choice([0, 1, 5]) if not flip() else -3
        time = Timestamp(2050, 1, max(0, seconds), 0)
        if seq == 0 and not flip():
            ev: object = Seed(dataset_id=b"\x00" * 34, dataset_kind=kind)
        else:
            pick = rng.random()
            if pick < 0.04 and bad:
                ev = Seed(dataset_id=b"\x00" * 34, dataset_kind=kind)
            elif pick < 0.10:
                ev = SetInfo(description=f"d{seq}", keywords=("k",))
            elif pick < 0.14:
                ev = SetLicense(short_name=f"L{seq}", name="n", spdx_id=None, website_url="w")
            elif pick < 0.22:
                ev = _source(rng, g, flip)
            elif pick < 0.26:
                ev = _transform(rng, g, flip)
            elif pick < 0.30 or (not g.schema and not flip()):
                # kamu wants a SetDataSchema before any data
                ev = _schema(rng, g, flip)
                g.schema = True
            else:
                ev = _data(rng, g, flip, cps)
        number = seq if not flip() else seq + 1
        block = MetadataBlock(system_time=time, prev_block_hash=prev, sequence_number=number,
                              event=ev)  # type: ignore[arg-type]  # fmt: skip
        h = _h(rng)
        out.append(ChainEntry(h, block, 100 + seq))
        prev = h
    return out


def _backwards(entries: list[ChainEntry], after: ChainState | None = None) -> bool:
    rules = ChainRulesBackwards()
    for e in reversed(entries):
        rules.feed(e)
    return rules.finish(after=after)


def _any_state(rng: random.Random, tip: ChainEntry) -> ChainState:
    """A state at ``tip`` the chain need not have left (both checkers must still agree)."""
    cp = rng.choice([None, b"\x16\x20" + bytes(32)])
    wm = rng.choice([None, _wm(100), _wm(200)])
    return ChainState(
        tip,
        RuleState(
            data_seen=rng.random() < 0.7,
            last_offset=rng.choice([None, 3, 9]),
            data_watermark=wm,
            add_checkpoint=cp,
            add_watermark=rng.choice([None, wm]),
            add_source_state=rng.choice([None, SourceState(source_name="default")]),
            exec_checkpoint=rng.choice([None, cp]),
            exec_watermark=rng.choice([None, wm]),
            schema=rng.random() < 0.5,
            polling=rng.random() < 0.3,
            push=rng.choice([(), (("a", b"\x00" * 16),)]),
            transform_inputs=rng.choice([None, (IDS[DID],), (IDS[DID], IDS[DID2])]),
            exec_inputs=rng.choice([None, (), ((None, None),), ((b"\x16\x20" + bytes(32), 3),)]),
        ),
    )


@pytest.mark.parametrize("bad", [0.0, 0.02, 0.1, 0.3])
def test_the_backward_verdict_is_check_chain_rules_verdict(bad):
    rng = random.Random(f"rules-{bad}")
    seen = {True: 0, False: 0}
    broken: set[str] = set()
    for _ in range(1500):
        chain = _chain(rng, rng.randint(1, 16), bad)
        problems = check_chain_rules(chain)
        broken |= {v.rule for v in problems}
        want = not problems
        assert _backwards(chain) == want, (problems, chain)
        seen[want] += 1
        # The same blocks continuing a chain whose state at its tip is known.
        if len(chain) > 2:
            cut = rng.randint(1, len(chain) - 1)
            older, newer = chain[:cut], chain[cut:]
            whole = chain_state(reversed(older))
            for state in (whole, _any_state(rng, older[-1])):
                got = _backwards(newer, state)
                assert got == (not check_chain_rules(newer, after=state)), (newer, state)
            if not check_chain_rules(older):
                # Read back only as far as the newer blocks need: the same verdict.
                part = chain_state(reversed(older), newer)
                got = not check_chain_rules(newer, after=part)
                assert got == (not check_chain_rules(newer, after=whole)), (newer, part, whole)
    if bad == 0.0:
        assert seen[False] == 0  # the generator's valid chains are valid
    else:
        assert seen[True] > 20 and seen[False] > 20  # both verdicts exercised
    if bad == 0.3:
        assert broken == set(RULES)  # every rule broken somewhere


def test_facts_walked_back_are_the_whole_chains_facts():
    rng = random.Random("facts")
    for _ in range(400):
        chain = _chain(rng, rng.randint(1, 16), 0.0)
        head_first = list(reversed(chain))
        walk = FactsWalk()
        for e in head_first:
            walk.feed(e)
        objs = list(iter_objects(head_first))
        got, want = walk.facts(objs), facts_of_chain(head_first)
        assert got == want
        assert got.rules == chain_state(head_first).rules
    walk = FactsWalk()
    walk.feed(dataclasses.replace(chain[-1]))
    with pytest.raises(ValueError, match="Seed"):
        walk.facts([])
