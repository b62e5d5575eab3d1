"""Derivative datasets checked against their input chains.

A derivative dataset records, in every ``ExecuteTransform`` event, which slice of
each input it consumed (``queryInputs``): the half-open block interval
``(prevBlockHash, newBlockHash]`` and offset interval ``(prevOffset, newOffset]``
of the input's chain (ODF spec, "ExecuteTransformInput"; RFC-014 made the start
points always carried, even across empty intervals).

What kamu checks when it appends an ExecuteTransform (the inputs listed as the
SetTransform declares them, each interval continuing the previous ExecuteTransform's)
needs only the derivative's own chain: those are chain rules
(:mod:`odfweb3.odf.chain_rules`, ``transform-before-execute`` to
``input-offsets-without-blocks``), run on every path that checks a chain. This module
adds what needs the input chains too, each reported as a
:class:`~odfweb3.odf.violation.Violation` under its name:

===========================  =========================================================
``transform-input-block``    every ``prevBlockHash`` / ``newBlockHash`` is a block of
                             that input's chain
``transform-input-interval`` the block interval moves forward along the input's chain
``transform-input-offset``   the last consumed offset is the end offset of the input's
                             last data slice at or before the last consumed block
===========================  =========================================================

These are what kamu computes when it plans a transform (``get_transform_query_input``:
``newBlockHash`` = the input's head, ``newOffset`` = the last offset of the last data
block at or before it), not append rules. Intervals are followed per input dataset ID,
so an input added by a later SetTransform starts with absent ``prev*`` values.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from odfweb3.errors import FormatError, UsageError
from odfweb3.odf.chain import ChainEntry, walk_chain
from odfweb3.odf.identity import DatasetId
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.model_gen import (
    AddData,
    DatasetKind,
    ExecuteTransform,
    ExecuteTransformInput,
    Seed,
    SetTransform,
)
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.odf.timestamp import Timestamp
from odfweb3.odf.violation import Violation

__all__ = [
    "InputChain",
    "InputState",
    "check_input_chains",
    "declared_inputs",
    "input_states",
    "load_input_chain",
    "load_input_chains",
]


@dataclass(frozen=True)
class InputChain:
    """An input dataset's chain, indexed for the lineage checks.

    Attributes:
        dataset_id: the binary dataset ID from the chain's Seed.
        kind: root or derivative.
        hashes: block hashes, Seed first.
        last_offsets: per position, the end offset of the last data slice at or
            before that block (None while the chain has no data yet).
        watermarks: per position, the last watermark at or before that block.
        entries: the verified blocks, Seed first.
    """

    dataset_id: bytes
    kind: DatasetKind
    hashes: tuple[bytes, ...]
    last_offsets: tuple[int | None, ...]
    watermarks: tuple[Timestamp | None, ...]
    entries: tuple[ChainEntry, ...]
    _index: dict[bytes, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", {h: i for i, h in enumerate(self.hashes)})

    @classmethod
    def from_entries(cls, entries: Sequence[ChainEntry]) -> InputChain:
        """Index verified blocks given Seed first.

        Raises:
            FormatError: the first block is not a Seed with a dataset ID.
        """
        if not entries or not isinstance(entries[0].block.event, Seed):
            raise FormatError("input chain: the first block is not a Seed event")
        seed = entries[0].block.event
        DatasetId.from_bytes(seed.dataset_id or b"")  # raises FormatError when malformed
        offsets: list[int | None] = []
        marks: list[Timestamp | None] = []
        offset: int | None = None
        mark: Timestamp | None = None
        for e in entries:
            ev = e.block.event
            if isinstance(ev, AddData | ExecuteTransform):
                if ev.new_data is not None and ev.new_data.offset_interval is not None:
                    offset = ev.new_data.offset_interval.end
                if ev.new_watermark is not None:
                    mark = ev.new_watermark
            offsets.append(offset)
            marks.append(mark)
        return cls(
            seed.dataset_id or b"",
            seed.dataset_kind,
            tuple(e.hash for e in entries),
            tuple(offsets),
            tuple(marks),
            tuple(entries),
        )

    @property
    def did(self) -> str:
        """The dataset ID as ``did:odf:…``."""
        return str(DatasetId.from_bytes(self.dataset_id))

    def position(self, block_hash: bytes) -> int | None:
        """Index of a block in the chain (0 = Seed), or None when it is not in it."""
        return self._index.get(block_hash)


def load_input_chain(path: str | os.PathLike[str]) -> InputChain:
    """Read and verify the chain of the local dataset at ``path``."""
    reader = DatasetReader.open(path)
    entries = list(walk_chain(reader))
    entries.reverse()
    return InputChain.from_entries(entries)


def load_input_chains(
    inputs: Mapping[DatasetId | str | bytes, str | os.PathLike[str]]
    | Sequence[str | os.PathLike[str]],
) -> dict[bytes, InputChain]:
    """Load input datasets, keyed by binary dataset ID.

    Args:
        inputs: dataset directories (their Seeds say which dataset each is), or a
            mapping from dataset ID (``DatasetId``, ``did:odf:…`` or binary) to directory.

    Raises:
        UsageError: a mapping key that is not the dataset's own ID, or two
            directories holding the same dataset.
    """
    out: dict[bytes, InputChain] = {}
    if isinstance(inputs, Mapping):
        for key, path in inputs.items():
            chain = load_input_chain(path)
            want = _id_bytes(key)
            if chain.dataset_id != want:
                raise UsageError(
                    f"{os.fspath(path)}: holds dataset {chain.did}, not "
                    f"{DatasetId.from_bytes(want)}; pass the input under its own ID"
                )
            out[want] = chain
        return out
    for path in inputs:
        chain = load_input_chain(path)
        if chain.dataset_id in out:
            raise UsageError(f"{os.fspath(path)}: dataset {chain.did} given twice as an input")
        out[chain.dataset_id] = chain
    return out


def _id_bytes(key: DatasetId | str | bytes) -> bytes:
    if isinstance(key, DatasetId):
        return key.to_bytes()
    if isinstance(key, str):
        return DatasetId.parse(key).to_bytes()
    return DatasetId.from_bytes(key).to_bytes()


@dataclass(frozen=True)
class InputState:
    """Where a derivative stands on one input: the last non-empty block and offset."""

    last_block: bytes | None = None
    last_offset: int | None = None

    def after(self, qi: ExecuteTransformInput) -> InputState:
        """The state once ``qi`` is consumed (``new*`` when present, else ``prev*``)."""
        return InputState(
            qi.new_block_hash if qi.new_block_hash is not None else qi.prev_block_hash,
            qi.new_offset if qi.new_offset is not None else qi.prev_offset,
        )


def declared_inputs(st: SetTransform) -> list[tuple[bytes | None, str | None]]:
    """``(binary dataset ID or None when not a valid ID, alias)`` per SetTransform input."""
    out: list[tuple[bytes | None, str | None]] = []
    for ti in st.inputs or ():
        try:
            did = DatasetId.parse(ti.dataset_ref or "").to_bytes()
        except FormatError:
            did = None
        out.append((did, ti.alias))
    return out


def input_states(entries: Iterable[ChainEntry]) -> dict[bytes, InputState]:
    """Per input dataset ID, the state after the given blocks' ExecuteTransforms."""
    states: dict[bytes, InputState] = {}
    for e in entries:
        ev = e.block.event
        if isinstance(ev, ExecuteTransform):
            for qi in ev.query_inputs or ():
                if qi.dataset_id is not None:
                    states[qi.dataset_id] = states.get(qi.dataset_id, InputState()).after(qi)
    return states


def _h(mh: bytes | None) -> str:
    return multihash_to_str(mh) if mh is not None else "absent"


def _did(raw: bytes | None) -> str:
    try:
        return str(DatasetId.from_bytes(raw or b""))
    except FormatError:
        return f"<bad dataset ID {(raw or b'').hex()[:16]}>"


def check_input_chains(
    entries: Sequence[ChainEntry], inputs: Mapping[bytes, InputChain]
) -> list[Violation]:
    """Check every consumed interval against the input chains that are given.

    Rules: ``transform-input-block``, ``transform-input-interval`` (moving forward
    along the input chain) and ``transform-input-offset``. Inputs not in
    ``inputs`` are skipped.
    """
    out: list[Violation] = []
    states: dict[bytes, InputState] = {}
    for e in entries:
        ev = e.block.event
        if not isinstance(ev, ExecuteTransform):
            continue

        def bad(rule: str, msg: str, e: ChainEntry = e) -> None:
            out.append(Violation(rule, msg, e.block.sequence_number, e.hash))

        for qi in ev.query_inputs or ():
            if qi.dataset_id is None:
                continue
            st = states.get(qi.dataset_id, InputState())
            new = st.after(qi)
            states[qi.dataset_id] = new
            chain = inputs.get(qi.dataset_id)
            if chain is None:
                continue
            name = _did(qi.dataset_id)
            prev_pos = -1
            if qi.prev_block_hash is not None:
                p = chain.position(qi.prev_block_hash)
                if p is None:
                    bad(
                        "transform-input-block",
                        f"input {name}: prevBlockHash {_h(qi.prev_block_hash)} is not a block "
                        "of the input's chain",
                    )
                    continue
                prev_pos = p
            if qi.new_block_hash is None:
                continue
            pos = chain.position(qi.new_block_hash)
            if pos is None:
                bad(
                    "transform-input-block",
                    f"input {name}: newBlockHash {_h(qi.new_block_hash)} is not a block of the "
                    f"input's chain (its head is {_h(chain.hashes[-1])})",
                )
                continue
            if pos <= prev_pos:
                bad(
                    "transform-input-interval",
                    f"input {name}: interval goes back along the input's chain (block "
                    f"#{prev_pos} to #{pos})",
                )
                continue
            want = chain.last_offsets[pos]
            if want is None:
                want = st.last_offset
            if new.last_offset != want:
                bad(
                    "transform-input-offset",
                    f"input {name}: consumed up to offset {new.last_offset} at block #{pos}, "
                    f"but the input's data there ends at offset {want}",
                )
    return out
