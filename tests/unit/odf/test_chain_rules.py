"""kamu's chain rules, one by one (docs/validation.md lists each beside the test proving it).

For every rule: the smallest chain breaking it (valid without its last block) is refused
under that rule and kamu's name for it, on all three paths (the whole chain oldest first,
the walk back, and the last block from the state the others leave, as a cached head or an
incremental pull gives it). For every edge case kamu accepts: the chain is valid, through
the codec (each block encoded, hashed and decoded again) and on a dataset on disk.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from odfweb3.cli.main import main
from odfweb3.odf.builder import example_keypair
from odfweb3.odf.chain import ChainEntry
from odfweb3.odf.codec import block_hash, decode_block, encode_block
from odfweb3.odf.layout import DatasetWriter
from odfweb3.odf.model_gen import (
    AddData,
    AddPushSource,
    Checkpoint,
    DataField,
    DataSchema,
    DatasetKind,
    DataSlice,
    DataTypeInt64,
    DataTypeOption,
    DataTypeString,
    DisablePollingSource,
    DisablePushSource,
    ExecuteTransform,
    ExecuteTransformInput,
    ExtraAttributes,
    FetchStepEthereumLogs,
    FetchStepUrl,
    MetadataBlock,
    OffsetInterval,
    ReadStepCsv,
    Seed,
    SetDataSchema,
    SetInfo,
    SetPollingSource,
    SetTransform,
    SourceState,
    SqlQueryStep,
    TransformInput,
    TransformSql,
)
from odfweb3.odf.multihash import SHA3_256, hash_bytes, multihash_to_str
from odfweb3.odf.timestamp import Timestamp
from odfweb3.odf.validate import (
    RULES,
    ChainRulesBackwards,
    chain_state,
    check_chain_rules,
    validate_dataset,
)

ROOT_ID = example_keypair(1).dataset_id.to_bytes()
INPUT = str(example_keypair(2).dataset_id)
INPUT_ID = example_keypair(2).dataset_id.to_bytes()
SQL = TransformSql(engine="datafusion", queries=(SqlQueryStep(query="SELECT * FROM a"),))
SCHEMA = SetDataSchema(schema=DataSchema(fields=(DataField(name="v", type=DataTypeString()),)))
CP = [hash_bytes(bytes([i]), SHA3_256) for i in range(4)]
BLOCK = [hash_bytes(b"input block %d" % i, SHA3_256) for i in range(4)]


def seed(kind: DatasetKind = DatasetKind.ROOT) -> Seed:
    return Seed(dataset_id=ROOT_ID, dataset_kind=kind)


def wm(minute: int) -> Timestamp:
    return Timestamp(2049, 1, 60 * minute, 0)


def sl(start: int, end: int, size: int = 10) -> DataSlice:
    mh = hash_bytes(b"%d-%d" % (start, end), SHA3_256)
    return DataSlice(logical_hash=mh, physical_hash=mh, offset_interval=OffsetInterval(start, end),
                     size=size)  # fmt: skip


def cp(i: int) -> Checkpoint:
    return Checkpoint(physical_hash=CP[i], size=1)


@dataclass(frozen=True)
class At:
    """An event whose block has another sequence number or system time than the next."""

    event: object
    seq: int | None = None
    time: Timestamp | None = None


def chain(*events: object) -> list[ChainEntry]:
    """Blocks of ``events``, oldest first, each encoded, hashed and decoded again."""
    out: list[ChainEntry] = []
    prev: bytes | None = None
    for i, ev in enumerate(events):
        at = ev if isinstance(ev, At) else At(ev)
        block = MetadataBlock(
            system_time=at.time or Timestamp(2050, 1, 10 * (i + 1), 0),
            prev_block_hash=prev,
            sequence_number=i if at.seq is None else at.seq,
            event=at.event,  # type: ignore[arg-type]
        )
        data = encode_block(block)
        h = block_hash(data)
        out.append(ChainEntry(h, decode_block(data, h), len(data)))
        prev = h
    return out


def backwards_ok(entries: list[ChainEntry]) -> bool:
    rules = ChainRulesBackwards()
    for e in reversed(entries):
        rules.feed(e)
    return rules.finish()


ROOT = (seed(), SCHEMA)
DERIVATIVE = (
    seed(DatasetKind.DERIVATIVE),
    SCHEMA,
    SetTransform(inputs=(TransformInput(dataset_ref=INPUT, alias="a"),), transform=SQL),
)


def qi(
    prev: int | None,
    new: int | None,
    offsets: tuple[int | None, int | None] = (None, None),
    did: bytes = INPUT_ID,
):
    return ExecuteTransformInput(
        dataset_id=did,
        prev_block_hash=None if prev is None else BLOCK[prev],
        new_block_hash=None if new is None else BLOCK[new],
        prev_offset=offsets[0],
        new_offset=offsets[1],
    )


INPUT2 = str(example_keypair(3).dataset_id)
INPUT2_ID = example_keypair(3).dataset_id.to_bytes()
A_IN = TransformInput(dataset_ref=INPUT, alias="a")
B_IN = TransformInput(dataset_ref=INPUT2, alias="b")
TWO = SetTransform(inputs=(A_IN, B_IN), transform=SQL)
B_FIRST = SetTransform(inputs=(B_IN, A_IN), transform=SQL)


def qb(prev: int | None, new: int | None, offsets: tuple[int | None, int | None] = (None, None)):
    """A query input of the second input dataset (b)."""
    return qi(prev, new, offsets, did=INPUT2_ID)


def ex(*inputs: ExecuteTransformInput, prev: int | None = None, new: int | None = None, **kw):
    """An ExecuteTransform writing checkpoint ``new`` after ``prev`` (so never a no-op)."""
    return ExecuteTransform(
        query_inputs=inputs,
        prev_checkpoint=None if prev is None else CP[prev],
        new_checkpoint=None if new is None else cp(new),
        **kw,
    )


PUSH = AddPushSource(source_name="default", read=ReadStepCsv(header=True))
POLL = SetPollingSource(fetch=FetchStepUrl(url="https://example.org/data.csv"), read=ReadStepCsv())

# rule -> (why, events): the events without the last are a valid chain.
BREAKS: dict[str, list[tuple[str, tuple[object, ...]]]] = {
    "seed-first": [("no Seed", (SetInfo(description="x"),))],
    "seed-once": [("a second Seed", (seed(), seed()))],
    "sequence-number": [
        ("the Seed is not #0", (At(seed(), seq=1),)),
        ("a gap", (seed(), At(SetInfo(description="x"), seq=2))),
    ],
    "system-time-monotonic": [
        ("back in time", (At(seed(), time=wm(10)), At(SetInfo(), time=wm(9)))),
    ],
    "watermark-monotonic": [
        ("back", (*ROOT, AddData(new_data=sl(0, 0), new_watermark=wm(5)),
                  AddData(prev_offset=0, new_data=sl(1, 1), new_watermark=wm(4)))),
        ("dropped by AddData", (*ROOT, AddData(new_data=sl(0, 0), new_watermark=wm(5)),
                                AddData(prev_offset=0, new_data=sl(1, 1)))),
        ("dropped by ExecuteTransform",
         (*DERIVATIVE, ExecuteTransform(query_inputs=(qi(None, 0),), new_data=sl(0, 0),
                                        new_watermark=wm(5)),
          ExecuteTransform(query_inputs=(qi(0, 1),), prev_offset=0, new_data=sl(1, 1)))),
    ],
    "event-empty": [
        ("AddData", (*ROOT, AddData())),
        ("ExecuteTransform whose inputs advance, but nothing new",
         (*DERIVATIVE, ExecuteTransform(query_inputs=(qi(None, 0),)))),
    ],
    "offsets-sequential": [("a gap", (*ROOT, AddData(new_data=sl(1, 3))))],
    "offset-interval": [("end < start", (*ROOT, AddData(prev_offset=4, new_data=sl(5, 3))))],
    "prev-offset": [
        ("not carried", (*ROOT, AddData(new_data=sl(0, 9)),
                         AddData(prev_offset=3, new_data=sl(4, 5)))),
        ("absent after data", (*ROOT, AddData(new_data=sl(0, 9)), AddData(new_watermark=wm(1)))),
    ],
    "unimplemented-event": [
        ("DisablePollingSource", (seed(), POLL, DisablePollingSource())),
        ("DisablePushSource", (seed(), PUSH, DisablePushSource(source_name="default"))),
    ],
    "source-preprocess": [
        ("not normalized", (seed(), AddPushSource(source_name="s", read=ReadStepCsv(),
                                                  preprocess=TransformSql(query="SELECT 1")))),
    ],
    "source-read-schema": [
        ("both schemas", (seed(), AddPushSource(source_name="s", read=ReadStepCsv(
            ddl_schema=("v STRING",), schema=SCHEMA.schema)))),
    ],
    "source-ethereum": [
        ("no chain", (seed(), SetPollingSource(fetch=FetchStepEthereumLogs(), read=ReadStepCsv()))),
    ],
    "push-after-polling": [("AddPushSource after SetPollingSource", (seed(), POLL, PUSH))],
    "push-source-identical": [("the same again", (seed(), PUSH, PUSH))],
    "polling-after-push": [("SetPollingSource after AddPushSource", (seed(), PUSH, POLL))],
    "transform-inputs": [
        ("no inputs", (seed(DatasetKind.DERIVATIVE), SetTransform(inputs=(), transform=SQL))),
        ("no alias", (seed(DatasetKind.DERIVATIVE),
                      SetTransform(inputs=(TransformInput(dataset_ref=INPUT),), transform=SQL))),
        ("by name", (seed(DatasetKind.DERIVATIVE),
                     SetTransform(inputs=(TransformInput(dataset_ref="a", alias="a"),),
                                  transform=SQL))),
        ("twice", (seed(DatasetKind.DERIVATIVE),
                   SetTransform(inputs=(TransformInput(dataset_ref=INPUT, alias="a"),) * 2,
                                transform=SQL))),
    ],
    "transform-sql": [
        ("query", (seed(DatasetKind.DERIVATIVE),
                   SetTransform(inputs=DERIVATIVE[2].inputs,  # type: ignore[attr-defined]
                                transform=TransformSql(engine="datafusion", query="SELECT 1")))),
        ("aliased output", (seed(DatasetKind.DERIVATIVE),
                            SetTransform(inputs=DERIVATIVE[2].inputs,  # type: ignore[attr-defined]
                                         transform=TransformSql(queries=(SqlQueryStep(
                                             alias="out", query="SELECT 1"),))))),
    ],
    "prev-checkpoint": [
        ("dropped", (*ROOT, AddData(new_data=sl(0, 0), new_checkpoint=cp(0)),
                     AddData(prev_offset=0, new_data=sl(1, 1)))),
        # the carry odfweb3 accepted before: kamu compares with the previous AddData only
        ("carried past a block without one",
         (*ROOT, AddData(new_data=sl(0, 0), new_checkpoint=cp(0)),
          AddData(prev_checkpoint=CP[0], prev_offset=0, new_data=sl(1, 1)),
          AddData(prev_checkpoint=CP[0], prev_offset=1, new_data=sl(2, 2)))),
        ("ExecuteTransform", (*DERIVATIVE,
                              ExecuteTransform(query_inputs=(qi(None, 0),), new_checkpoint=cp(1)),
                              ExecuteTransform(query_inputs=(qi(0, 1),), new_checkpoint=cp(2)))),
    ],
    "no-op": [
        ("AddData", (*ROOT, AddData(new_data=sl(0, 0), new_checkpoint=cp(0), new_watermark=wm(1)),
                     AddData(prev_checkpoint=CP[0], prev_offset=0, new_checkpoint=cp(0),
                             new_watermark=wm(1)))),
        ("AddData, the same source state",
         (*ROOT, AddData(new_data=sl(0, 0), new_source_state=SourceState("s", "k", "v")),
          AddData(prev_offset=0, new_source_state=SourceState("s", "k", "v")))),
        ("ExecuteTransform, inputs do not advance",
         (*DERIVATIVE, ExecuteTransform(query_inputs=(qi(None, 0),), new_checkpoint=cp(0)),
          ExecuteTransform(query_inputs=(qi(0, None),), prev_checkpoint=CP[0],
                           new_checkpoint=cp(0)))),
    ],
    "schema-before-data": [
        ("AddData", (seed(), AddData(new_data=sl(0, 0)))),
        ("ExecuteTransform", (seed(DatasetKind.DERIVATIVE), DERIVATIVE[2],
                              ExecuteTransform(query_inputs=(qi(None, 0),), new_data=sl(0, 0)))),
    ],
    "schema-identical": [("the same again", (seed(), SCHEMA, SCHEMA))],
    "transform-before-execute": [
        ("no SetTransform", (seed(DatasetKind.DERIVATIVE), SCHEMA, ex(qi(None, 0), new=0))),
    ],
    "transform-input-order": [
        ("another dataset", (*DERIVATIVE, ex(qb(None, 0), new=0))),
        ("reversed", (seed(DatasetKind.DERIVATIVE), SCHEMA, TWO,
                      ex(qb(None, 0), qi(None, 0), new=0))),
        ("one missing", (seed(DatasetKind.DERIVATIVE), SCHEMA, TWO, ex(qi(None, 0), new=0))),
        ("one more", (*DERIVATIVE, ex(qi(None, 0), qb(None, 0), new=0))),
        ("the latest SetTransform's inputs, not the first's",
         (*DERIVATIVE, ex(qi(None, 0), new=0), TWO, ex(qi(0, 1), prev=0, new=1))),
        ("the previous ExecuteTransform's, the SetTransform being older than it and the schema",
         (seed(DatasetKind.DERIVATIVE), DERIVATIVE[2], ex(qi(None, 0), new=0), SCHEMA,
          ex(qb(0, 1), prev=0, new=1))),
    ],
    "input-block-interval": [
        ("newBlockHash = prevBlockHash",
         (*DERIVATIVE, ex(qi(None, 0), new=0), ex(qi(0, 0), prev=0, new=1))),
    ],
    "input-offset-interval": [
        ("newOffset = prevOffset",
         (*DERIVATIVE, ex(qi(None, 0, (None, 4)), new=0), ex(qi(0, 1, (4, 4)), prev=0, new=1))),
    ],
    "input-prev-block": [
        ("not where the previous interval ended",
         (*DERIVATIVE, ex(qi(None, 1), new=0), ex(qi(0, 2), prev=0, new=1))),
        ("absent after an interval",
         (*DERIVATIVE, ex(qi(None, 1), new=0), ex(qi(None, 2), prev=0, new=1))),
        ("by position: reordered inputs continuing their own intervals",
         (seed(DatasetKind.DERIVATIVE), SCHEMA, TWO, ex(qi(None, 0), qb(None, 1), new=0),
          B_FIRST, ex(qb(1, 2), qi(0, 3), prev=0, new=1))),
    ],
    "input-prev-offset": [
        ("not where the previous interval ended",
         (*DERIVATIVE, ex(qi(None, 0, (None, 4)), new=0), ex(qi(0, 1, (3, 9)), prev=0, new=1))),
        ("absent after an interval",
         (*DERIVATIVE, ex(qi(None, 0, (None, 4)), new=0),
          ex(qi(0, 1, (None, 9)), prev=0, new=1))),
    ],
    "input-offsets-without-blocks": [
        ("newOffset, no newBlockHash",
         (*DERIVATIVE, ex(qi(None, 0, (None, 4)), new=0),
          ex(qi(0, None, (4, 9)), prev=0, new=1))),
    ],
    "schema-incompatible": [
        ("a type changed", (seed(), SCHEMA, SetDataSchema(schema=DataSchema(
            fields=(DataField(name="v", type=DataTypeInt64()),))))),
        ("a field removed", (seed(), SCHEMA, SetDataSchema(schema=DataSchema(fields=())))),
        ("a required field added", (seed(), SCHEMA, SetDataSchema(schema=DataSchema(
            fields=(*SCHEMA.schema.fields, DataField(name="w", type=DataTypeString())))))),
    ],
}  # fmt: skip


CASES = [(rule, why, events) for rule, cases in BREAKS.items() for why, events in cases]


def test_every_rule_has_a_breaking_chain() -> None:
    assert set(BREAKS) == set(RULES)


@pytest.mark.parametrize(("rule", "why", "events"), CASES, ids=[f"{r}:{w}" for r, w, _ in CASES])
def test_the_smallest_chain_breaking_a_rule(rule: str, why: str, events: tuple[object, ...]):
    entries = chain(*events)
    assert check_chain_rules(entries[:-1]) == [], "the chain before the last block is valid"
    got = check_chain_rules(entries)
    last = entries[-1]
    assert {v.rule for v in got} == {rule}, got
    for v in got:
        assert (v.sequence_number, v.block_hash) == (last.block.sequence_number, last.hash)
        assert v.kamu == RULES[rule].kamu and v.number == RULES[rule].number
        text = str(v)
        assert f"block #{last.block.sequence_number} ({multihash_to_str(last.hash)})" in text
        assert f"[rule {v.number} {rule}, kamu {v.kamu}]" in text
    assert not backwards_ok(entries)
    if len(entries) > 1:  # from the state the older blocks leave (a cache, a pull)
        state = chain_state(reversed(entries[:-1]))
        assert {v.rule for v in check_chain_rules(entries[-1:], after=state)} == {rule}
        part = chain_state(reversed(entries[:-1]), entries[-1:])
        assert {v.rule for v in check_chain_rules(entries[-1:], after=part)} == {rule}


def _str(name: str) -> DataField:
    return DataField(name=name, type=DataTypeString())


def _nine(ns: int = 999_999_999) -> Timestamp:
    return Timestamp(9999, 365, 86_399, ns)


EMPTY = hash_bytes(b"", SHA3_256)
TOP = 2**64 - 1

# kamu accepts each (why -> events).
ACCEPTS: dict[str, tuple[object, ...]] = {
    "a dropped checkpoint, then prevCheckpoint absent":
        (*ROOT, AddData(new_data=sl(0, 0), new_checkpoint=cp(0)),
         AddData(prev_checkpoint=CP[0], prev_offset=0, new_data=sl(1, 1)),
         AddData(prev_offset=1, new_data=sl(2, 2))),
    "the previous checkpoint written again": (
        *ROOT, AddData(new_data=sl(0, 0), new_checkpoint=cp(0)),
        AddData(prev_checkpoint=CP[0], prev_offset=0, new_data=sl(1, 1), new_checkpoint=cp(0))),
    "a watermark-only block": (
        *ROOT, AddData(new_data=sl(0, 0), new_watermark=wm(1)),
        AddData(prev_offset=0, new_watermark=wm(2))),
    "the same watermark with data": (
        *ROOT, AddData(new_data=sl(0, 0), new_watermark=wm(1)),
        AddData(prev_offset=0, new_data=sl(1, 1), new_watermark=wm(1))),
    "a source-state-only block": (
        *ROOT, AddData(new_data=sl(0, 0), new_source_state=SourceState("s", "odf/etag", "1")),
        AddData(prev_offset=0, new_source_state=SourceState("s", "odf/etag", "2"))),
    "no data, no schema needed": (seed(), AddData(new_watermark=wm(1))),
    "a new schema with an optional field more": (
        *ROOT, SetDataSchema(schema=DataSchema(fields=(
            *SCHEMA.schema.fields,  # type: ignore[union-attr]
            DataField(name="w", type=DataTypeOption(inner=DataTypeString())))))),
    "a new schema with the fields reordered and other attributes": (
        seed(), SetDataSchema(schema=DataSchema(fields=(_str("a"), _str("b")))),
        SetDataSchema(schema=DataSchema(fields=(_str("b"), _str("a")), extra=ExtraAttributes(
            entries='{"kamu.dev/archetype": "Collection"}')))),
    "two legacy Arrow schemas alike (kamu compares none)": (
        seed(), SetDataSchema(raw_arrow_schema=b"arrow"), SetDataSchema(raw_arrow_schema=b"arrow")),
    "a checkpoint-only block": (
        *ROOT, AddData(new_data=sl(0, 0)), AddData(prev_offset=0, new_checkpoint=cp(1))),
    "a 0-byte data file": (
        *ROOT, AddData(new_data=DataSlice(logical_hash=EMPTY, physical_hash=EMPTY,
                                          offset_interval=OffsetInterval(0, 0), size=0))),
    "empty extra attributes": (
        *ROOT, AddData(new_data=sl(0, 0), extra=ExtraAttributes(entries="{}"))),
    "timestamps in years 1 and 9999, with nanoseconds": (
        At(seed(), time=Timestamp(1, 1, 0, 1)),
        At(SCHEMA, time=Timestamp(1, 1, 0, 1)),
        At(AddData(new_data=sl(0, 0), new_watermark=Timestamp(1, 1, 0, 1)),
           time=_nine(999_999_998)),
        At(AddData(prev_offset=0, new_data=sl(1, 1), new_watermark=_nine()), time=_nine())),
    "offsets near 2^64": (
        *ROOT, AddData(prev_offset=TOP - 11, new_data=sl(TOP - 10, TOP - 1)),
        AddData(prev_offset=TOP - 1, new_data=sl(TOP, TOP))),
    "AddData in a derivative (kamu checks no dataset kind)": (
        seed(DatasetKind.DERIVATIVE), SCHEMA, AddData(new_data=sl(0, 0))),
    "an ExecuteTransform with a checkpoint only, its inputs advancing": (
        *DERIVATIVE, ExecuteTransform(query_inputs=(qi(None, 0),), new_checkpoint=cp(0))),
    "two push sources, one changed": (
        seed(), PUSH, AddPushSource(source_name="other", read=ReadStepCsv()),
        AddPushSource(source_name="default", read=ReadStepCsv(header=False))),
    "a polling source changed": (
        seed(), POLL, SetPollingSource(fetch=FetchStepUrl(url="https://x"), read=ReadStepCsv())),
    "an EthereumLogs source with a chain": (
        seed(), SetPollingSource(fetch=FetchStepEthereumLogs(chain_id=1), read=ReadStepCsv())),
    "the first data block carries an offset (kamu compares with an earlier data block only)": (
        *ROOT, AddData(prev_offset=4, new_data=sl(5, 9))),
    "the first ExecuteTransform's inputs start anywhere, empty intervals written out "
    "(kamu checks intervals against a previous ExecuteTransform only)": (
        *DERIVATIVE, ex(qi(1, 1, (4, 4)), new=0)),
    "the first ExecuteTransform: new offsets without new blocks": (
        *DERIVATIVE, ex(qi(None, None, (None, 4)), new=0)),
    "an input's offset interval going backwards (kamu's append does not compare them)": (
        *DERIVATIVE, ex(qi(None, 1, (None, 9)), new=0), ex(qi(1, 2, (9, 5)), prev=0, new=1)),
    "an input that does not advance, the checkpoint does": (
        *DERIVATIVE, ex(qi(None, 0, (None, 4)), new=0), ex(qi(0, None, (4, None)), prev=0, new=1)),
    "the intervals continued over three ExecuteTransforms, with data": (
        *DERIVATIVE,
        ExecuteTransform(query_inputs=(qi(None, 0, (None, 4)),), new_data=sl(0, 4)),
        ExecuteTransform(query_inputs=(qi(0, None, (4, None)),), prev_offset=4,
                         new_watermark=wm(1)),
        ExecuteTransform(query_inputs=(qi(0, 2, (4, 9)),), prev_offset=4, new_data=sl(5, 9),
                         new_watermark=wm(2))),
    "an input added by a new SetTransform starts anywhere (kamu zips the inputs by position)": (
        *DERIVATIVE, ex(qi(None, 0), new=0), TWO, ex(qi(0, 1), qb(2, 3), prev=0, new=1)),
    "reordered inputs: each continues the interval at its position (kamu zips them)": (
        seed(DatasetKind.DERIVATIVE), SCHEMA, TWO, ex(qi(None, 0), qb(None, 1), new=0),
        B_FIRST, ex(qb(0, 2), qi(1, 3), prev=0, new=1)),
    "the SetTransform older than the schema and the previous ExecuteTransform": (
        seed(DatasetKind.DERIVATIVE), DERIVATIVE[2], ex(qi(None, 0), new=0), SCHEMA,
        ex(qi(0, 1), prev=0, new=1)),
}  # fmt: skip


def _write(path, entries: list[ChainEntry], files: dict[bytes, bytes] | None = None) -> None:
    w = DatasetWriter(path)
    for mh, data in (files or {}).items():
        w.write_object("data", mh, data)
    for e in entries:
        w.write_object("block", e.hash, encode_block(e.block))
    w.set_head(entries[-1].hash)


@pytest.mark.parametrize("why", sorted(ACCEPTS))
def test_kamu_accepts(why: str, tmp_path) -> None:
    entries = chain(*ACCEPTS[why])
    assert check_chain_rules(entries) == []
    assert backwards_ok(entries)
    for i in range(1, len(entries)):
        state = chain_state(reversed(entries[:i]))
        assert check_chain_rules(entries[i:], after=state) == []
    # On disk, objects included (deep): the slices' files are the bytes they name.
    files: dict[bytes, bytes] = {}
    for e in entries:
        ev = e.block.event
        if isinstance(ev, AddData) and ev.new_data is not None:
            mh, size = ev.new_data.physical_hash, ev.new_data.size
            body = b"" if size == 0 else next(
                b"%d-%d" % (s, t) for s, t in [(ev.new_data.offset_interval.start,
                                                 ev.new_data.offset_interval.end)]
            )  # fmt: skip
            assert mh is not None
            files[mh] = body
    _write(tmp_path / "ds", entries, files)
    report = validate_dataset(tmp_path / "ds")
    assert report.ok, report.violations


def test_a_zero_byte_data_file_validates_deep(tmp_path) -> None:
    entries = chain(*ACCEPTS["a 0-byte data file"])
    _write(tmp_path / "ds", entries, {EMPTY: b""})
    report = validate_dataset(tmp_path / "ds", deep=True)
    assert report.ok and report.objects.data_files == 1 and report.bytes_hashed == 0


def test_extremes_survive_the_codec() -> None:
    entries = chain(*ACCEPTS["timestamps in years 1 and 9999, with nanoseconds"])
    assert entries[0].block.system_time == Timestamp(1, 1, 0, 1)
    assert entries[-1].block.event.new_watermark == _nine()  # type: ignore[union-attr]
    top = chain(*ACCEPTS["offsets near 2^64"])[-1].block.event
    assert top.new_data.offset_interval == OffsetInterval(TOP, TOP)  # type: ignore[union-attr]


BROKEN = (*ROOT, AddData(new_data=sl(0, 0), new_checkpoint=cp(0)),
          AddData(prev_checkpoint=CP[0], prev_offset=0, new_data=sl(1, 1)),
          AddData(prev_checkpoint=CP[0], prev_offset=1, new_data=sl(2, 2)))  # fmt: skip


def test_validate_names_the_block_the_rule_and_kamus_name(tmp_path, capsys) -> None:
    entries = chain(*BROKEN)
    _write(tmp_path / "ds", entries)
    code = main(["validate", str(tmp_path / "ds")], env={"HOME": str(tmp_path)})
    out, err = capsys.readouterr()
    assert code == 1, (out, err)
    bad = entries[-1]
    lines = [ln for ln in (out + err).splitlines() if "prev-checkpoint" in ln]
    assert len(lines) == 1, out + err
    assert f"block #4 ({multihash_to_str(bad.hash)})" in lines[0]
    assert "[rule 19 prev-checkpoint, kamu InvalidEvent]" in lines[0]


def test_publish_refuses_a_broken_chain_in_one_line(tmp_path, capsys) -> None:
    entries = chain(*BROKEN)
    _write(tmp_path / "ds", entries)
    env = {"HOME": str(tmp_path), "ODFWEB3_STATE_DIR": str(tmp_path / "state")}
    code = main(["publish", str(tmp_path / "ds"), "--to", f"car:{tmp_path / 'out'}"], env=env)
    out, err = capsys.readouterr()
    assert code == 65, (out, err)
    (line,) = err.strip().splitlines()
    assert "block #4 (" in line and "prev-checkpoint, kamu InvalidEvent" in line, line
    assert "nothing was published" in line
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_docs_list_every_rule_with_kamus_name() -> None:
    """docs/validation.md's table is RULES: number, name and kamu's error, in order."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[3] / "docs/validation.md").read_text()
    rows = []
    for line in doc.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[0].isdigit():
            rows.append((int(cells[0]), cells[1].strip("`"), cells[2]))
    assert [(n, name) for n, name, _ in rows] == [(r.number, r.name) for r in RULES.values()]
    for (_, name, kamu), rule in zip(rows, RULES.values(), strict=True):
        assert kamu.startswith(f"`{rule.kamu}`") or rule.kamu in kamu, (name, kamu)
    for rule, cases in BREAKS.items():  # every case the table names is a test case
        for why, _events in cases:
            assert why in doc or f"{rule}:{why}" in doc, (rule, why)
