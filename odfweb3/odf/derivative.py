"""Example derivative datasets, consuming real input chains.

:func:`create_derivative_dataset` writes Seed (kind Derivative), SetInfo,
SetTransform (each input named by dataset ID and an alias, a DataFusion SQL
``UNION ALL`` of the inputs, stored normalized as ``queries``) and N
ExecuteTransform blocks; :func:`append_transform` adds ExecuteTransform blocks
that consume what the inputs gained since. Both are deterministic for a given
seed and inputs, write every object atomically, and move ``refs/head`` last.

The ``queryInputs`` intervals follow the inputs' chains as kamu plans them
(``get_transform_query_input``): ``prevBlockHash`` / ``prevOffset`` carry the last
non-empty ``newBlockHash`` / ``newOffset`` of that input; ``newBlockHash`` is the
input block consumed up to (absent when the input did not move), ``newOffset``
the end offset of the input's last data slice at or before it (absent when no new
records). The first N-1 transactions consume the input chains in even steps, the
last one up to each input's head.

Like the root builder's, the output data files are **Parquet** with the ODF system
columns and a pseudo-random ``payload`` column (:data:`odfweb3.odf.example_schema.
PAYLOAD_SCHEMA`, declared by a SetDataSchema after the SetTransform, before any
output data, as kamu requires), but no engine runs the SQL: the records are not
the inputs' rows. Each transaction's output has as many records as the inputs
gained (the query is a ``UNION ALL``), at 100 bytes a record, with ``logicalHash``
= ``physicalHash`` (see :mod:`odfweb3.odf.builder`); checkpoints are opaque bytes.
The output watermark is the least of the inputs' watermarks at the consumed blocks.
Linked objects are not written (kamu links objects from AddData only).
"""

from __future__ import annotations

import hashlib
import os
import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from odfweb3.errors import UsageError
from odfweb3.odf.builder import EPOCH, BuiltDataset, _ChainAppender
from odfweb3.odf.chain import walk_chain
from odfweb3.odf.example_schema import PAYLOAD_SCHEMA, set_data_schema
from odfweb3.odf.identity import DatasetId, DatasetKeyPair, generate_keypair
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.lineage import (
    InputChain,
    InputState,
    declared_inputs,
    input_states,
    load_input_chain,
)
from odfweb3.odf.model_gen import (
    Checkpoint,
    DatasetKind,
    DataSlice,
    ExecuteTransform,
    ExecuteTransformInput,
    OffsetInterval,
    Seed,
    SetDataSchema,
    SetInfo,
    SetTransform,
    SqlQueryStep,
    TransformInput,
    TransformSql,
)
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.odf.timestamp import Timestamp

__all__ = ["append_transform", "create_derivative_dataset", "derivative_keypair"]

_RECORD_BYTES: Final = 100
_CHECKPOINT_BYTES: Final = 512


def derivative_keypair(seed: int) -> DatasetKeyPair:
    """The deterministic identity key of the example derivative with this seed.

    Distinct from :func:`odfweb3.odf.builder.example_keypair` for the same seed, so
    a root and a derivative built with seed 0 have different dataset IDs.
    """
    material = hashlib.sha256(b"odfweb3 example derivative key\x00" + str(seed).encode())
    return generate_keypair(material.digest())


def _alias(path: Path, taken: set[str]) -> str:
    """A SQL identifier from the input directory's name, unique among ``taken``."""
    base = re.sub(r"\W+", "_", path.name).strip("_").lower() or "input"
    if base[0].isdigit():
        base = "in_" + base
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    taken.add(name)
    return name


def _steps(n_blocks: int, t: int, transactions: int) -> int:
    """Position (0 = Seed) consumed up to in transaction ``t`` of ``transactions`` (1-based)."""
    return -(-(n_blocks - 1) * t // transactions)  # ceil: the last one reaches the head


class _Transformer:
    """Appends ExecuteTransform blocks consuming the given input chains."""

    def __init__(
        self,
        app: _ChainAppender,
        chains: Sequence[InputChain],
        states: dict[bytes, InputState],
    ) -> None:
        self.app = app
        self.chains = chains
        self.states = states

    def execute(self, targets: Sequence[int]) -> bytes:
        """One transaction: consume each input up to the block at ``targets[i]``."""
        app = self.app
        query_inputs: list[ExecuteTransformInput] = []
        records = 0
        marks: list[Timestamp | None] = []
        for chain, pos in zip(self.chains, targets, strict=True):
            st = self.states.get(chain.dataset_id, InputState())
            block = chain.hashes[pos]
            offset = chain.last_offsets[pos]
            if offset is None:
                offset = st.last_offset
            qi = ExecuteTransformInput(
                dataset_id=chain.dataset_id,
                prev_block_hash=st.last_block,
                new_block_hash=block if block != st.last_block else None,
                prev_offset=st.last_offset,
                new_offset=offset if offset != st.last_offset else None,
            )
            if qi.new_offset is not None:
                records += qi.new_offset - (-1 if st.last_offset is None else st.last_offset)
            query_inputs.append(qi)
            self.states[chain.dataset_id] = st.after(qi)
            marks.append(chain.watermarks[pos])
        known = [m for m in marks if m is not None]
        # Event time advances as the slowest input's: the least watermark.
        watermark = min(known) if known and len(known) == len(marks) else None
        new_data = None
        if records:
            upto = watermark.to_datetime() if watermark is not None else app.time
            phys, size = app.data_file(records, records * _RECORD_BYTES, upto, None)
            start = 0 if app.last_offset is None else app.last_offset + 1
            new_data = DataSlice(
                logical_hash=phys,
                physical_hash=phys,
                offset_interval=OffsetInterval(start=start, end=start + records - 1),
                size=size,
            )
            app.data_bytes += size
        cp_hash, cp_size = app._random_file("checkpoint", _CHECKPOINT_BYTES, None)
        event = ExecuteTransform(
            query_inputs=tuple(query_inputs),
            prev_checkpoint=app.last_checkpoint,
            prev_offset=app.last_offset,
            new_data=new_data,
            new_checkpoint=Checkpoint(physical_hash=cp_hash, size=cp_size),
            new_watermark=watermark,
        )
        if new_data is not None and new_data.offset_interval is not None:
            app.last_offset = new_data.offset_interval.end
        app.last_checkpoint = cp_hash
        return app.append(event)


def _load_inputs(inputs: Sequence[str | os.PathLike[str]]) -> list[InputChain]:
    chains = [load_input_chain(p) for p in inputs]
    ids = [c.dataset_id for c in chains]
    if len(set(ids)) != len(ids):
        raise UsageError("derivative: the same input dataset is given twice; give each once")
    return chains


def create_derivative_dataset(
    path: str | os.PathLike[str],
    inputs: Sequence[str | os.PathLike[str]],
    *,
    transactions: int = 3,
    seed: int = 0,
    description: str = "Example derivative dataset written by odfweb3",
    fsync: bool = True,
    keypair: DatasetKeyPair | None = None,
) -> BuiltDataset:
    """Write a new derivative dataset at ``path`` consuming the datasets at ``inputs``.

    Args:
        path: the dataset directory to create (absent or empty).
        inputs: input dataset directories (root or derivative), in declaration order.
        transactions: number of ExecuteTransform blocks; the last one consumes each
            input up to its head.
        seed: makes the dataset deterministic (with the same inputs, same head hash).
        description: the SetInfo description.
        fsync: fsync each object.
        keypair: the dataset's identity key (default: :func:`derivative_keypair` of ``seed``).

    Raises:
        UsageError: ``path`` is not empty, no inputs, an input given twice, or
            ``transactions`` < 1.
    """
    root = Path(path)
    if root.exists() and any(root.iterdir()):
        raise UsageError(f"{root}: directory is not empty; choose a new directory")
    if not inputs:
        raise UsageError("derivative: give at least one input dataset")
    if transactions < 1:
        raise UsageError("derivative: transactions must be at least 1")
    chains = _load_inputs(inputs)
    taken: set[str] = set()
    aliases = [_alias(Path(p).absolute(), taken) for p in inputs]
    keypair = keypair or derivative_keypair(seed)
    with _ChainAppender(root, fsync, random.Random(seed)) as app:
        did = keypair.dataset_id.to_bytes()
        app.append(Seed(dataset_id=did, dataset_kind=DatasetKind.DERIVATIVE))
        app.append(SetInfo(description=description, keywords=("example", "odfweb3", "derivative")))
        sql = " UNION ALL ".join(f'SELECT * FROM "{a}"' for a in aliases)
        app.append(
            SetTransform(
                inputs=tuple(
                    TransformInput(dataset_ref=str(DatasetId.from_bytes(c.dataset_id)), alias=a)
                    for c, a in zip(chains, aliases, strict=True)
                ),
                # Stored normalized, as kamu requires: one output query, no alias.
                transform=TransformSql(engine="datafusion", queries=(SqlQueryStep(query=sql),)),
            )
        )
        # The output schema before any output data, as kamu's transform commits it
        # (ValidateExecuteTransformVisitor refuses data before SetDataSchema); the rows
        # are synthetic (nothing runs the SQL), so it is the payload schema whatever the
        # inputs declare.
        app.append(set_data_schema(PAYLOAD_SCHEMA))
        tx = _Transformer(app, chains, {})
        for t in range(1, transactions + 1):
            tx.execute([_steps(len(c.hashes), t, transactions) for c in chains])
        assert app.head is not None
        app.finish()
        return BuiltDataset(root, app.head, app.seq + 1, app.data_bytes, keypair)


def append_transform(
    path: str | os.PathLike[str],
    inputs: Sequence[str | os.PathLike[str]],
    *,
    transactions: int = 1,
    seed: int | None = None,
    fsync: bool = True,
) -> BuiltDataset:
    """Append ExecuteTransform blocks consuming what the inputs gained since the last one.

    Args:
        path: an existing derivative dataset.
        inputs: directories of every input its latest SetTransform declares (any order).
        transactions: number of ExecuteTransform blocks to spread the new input over.
        seed: for the output bytes (default: derived from the current head).
        fsync: fsync each object.

    Raises:
        UsageError: not a derivative, a declared input not given, an input whose
            chain no longer holds the block last consumed, or no input has moved.
    """
    if transactions < 1:
        raise UsageError("derivative: transactions must be at least 1")
    reader = DatasetReader.open(path)
    head = reader.head()
    entries = list(walk_chain(reader, head))
    entries.reverse()
    seed_ev = entries[0].block.event
    if not isinstance(seed_ev, Seed) or seed_ev.dataset_kind != DatasetKind.DERIVATIVE:
        raise UsageError(f"{reader.root}: not a derivative dataset; use odfweb3 example --append")
    transforms = [e.block.event for e in entries if isinstance(e.block.event, SetTransform)]
    if not transforms:
        raise UsageError(f"{reader.root}: has no SetTransform; cannot run a transform")
    given = {c.dataset_id: c for c in _load_inputs(inputs)}
    chains: list[InputChain] = []
    for did, alias in declared_inputs(transforms[-1]):
        if did is None or did not in given:
            name = str(DatasetId.from_bytes(did)) if did is not None else "?"
            raise UsageError(f"derivative: declared input {alias or name} ({name}) not given")
        chains.append(given[did])
    states = input_states(entries)
    starts: list[int] = []
    for c in chains:
        last = states.get(c.dataset_id, InputState()).last_block
        if last is None:
            starts.append(-1)
            continue
        pos = c.position(last)
        if pos is None:
            raise UsageError(
                f"derivative: input {c.did} does not hold block {multihash_to_str(last)} "
                "consumed before; give the input the derivative was built from"
            )
        starts.append(pos)
    if all(s == len(c.hashes) - 1 for s, c in zip(starts, chains, strict=True)):
        raise UsageError("derivative: no input has new blocks since the last transform")

    tip = entries[-1]
    rng_seed = seed if seed is not None else int.from_bytes(head[2:10], "big")
    with _ChainAppender(reader.root, fsync, random.Random(rng_seed)) as app:
        app.head, app.seq = head, tip.block.sequence_number
        app.time = max(tip.block.system_time.to_datetime(), EPOCH)
        has_schema = False
        for e in entries:
            ev = e.block.event
            if isinstance(ev, SetDataSchema):
                has_schema = True
            if isinstance(ev, ExecuteTransform):
                if ev.new_data is not None and ev.new_data.offset_interval is not None:
                    app.last_offset = ev.new_data.offset_interval.end
                # kamu: prevCheckpoint is the previous ExecuteTransform's newCheckpoint.
                app.last_checkpoint = (
                    ev.new_checkpoint.physical_hash if ev.new_checkpoint is not None else None
                )
        if not has_schema:  # a chain written before the example declared one
            app.append(set_data_schema(PAYLOAD_SCHEMA))
        tx = _Transformer(app, chains, states)
        for t in range(1, transactions + 1):
            targets = []
            for s, c in zip(starts, chains, strict=True):
                base = max(s, 0)
                span = len(c.hashes) - 1 - base
                targets.append(base + -(-span * t // transactions))
            tx.execute(targets)
        assert app.head is not None
        app.finish()
        return BuiltDataset(reader.root, app.head, app.seq + 1, app.data_bytes, None)
