"""What the discovery formats say about a dataset, gathered from its chain once.

Croissant (:mod:`.croissant`), DCAT (:mod:`.dcat`) and DataCite (:mod:`.datacite`) each
render these facts in their own vocabulary; none of them reads the chain. The mapping from
chain events to facts is made here only:

- identity: the Seed's dataset ID; head: the head block's hash and sequence number;
  ``created`` / ``modified``: the Seed's and the head's system time;
- ``info`` / ``license``: the latest ``SetInfo`` and ``SetLicense``;
- ``inputs``: the dataset IDs of the latest ``SetTransform`` (lineage), each with the last
  input block its ``ExecuteTransform``s consumed;
- ``files``: one :class:`DataFile` per ``AddData`` / ``ExecuteTransform`` ``newData``, oldest
  first, with the ``SetDataSchema`` in force when it was written.

:meth:`DiscoveryFacts.extended` adds the blocks above the head without reading the older
ones again (a publish of one more block costs one block, not the chain).

Who publishes (``publisher`` of ``odfweb3.yaml``, the signing identity) and where the
dataset is read (URLs, SHA-256s) are not chain facts: the renderers take them as arguments
(:class:`Presentation`).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from odfweb3.descriptor.build import _license_fields, derive_title
from odfweb3.odf.chain import ChainEntry
from odfweb3.odf.identity import DatasetId
from odfweb3.odf.lineage import InputState, declared_inputs
from odfweb3.odf.model_gen import (
    AddData,
    DataSchema,
    ExecuteTransform,
    Seed,
    SetDataSchema,
    SetInfo,
    SetLicense,
    SetTransform,
)
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.odf.packed import PackedSequence, append_end
from odfweb3.odf.timestamp import Timestamp

__all__ = [
    "DataFile",
    "DataFiles",
    "DiscoveryFacts",
    "DiscoveryWalk",
    "Presentation",
    "catalogue_gaps",
    "discovery_facts",
    "discovery_facts_walked",
]


@dataclass(frozen=True, slots=True)
class DataFile:
    """A data file of the chain: the block that added it, its physical hash and size, and
    the schema in force for it (None before any ``SetDataSchema``)."""

    sequence: int
    physical_hash: bytes
    size: int
    schema: DataSchema | None

    @property
    def multihash(self) -> str:
        """The physical hash in multibase base16 (the name under ``data/``)."""
        return multihash_to_str(self.physical_hash)

    @property
    def path(self) -> str:
        """``data/<multihash>``: where the file lives in the dataset layout."""
        return f"data/{self.multihash}"


class DataFiles(PackedSequence[DataFile]):
    """Data files kept packed (sequence, size and schema number in flat arrays, the
    physical hashes one after the other in a ``bytearray``): about 60 bytes a file, where a
    :class:`DataFile` with its hash and its ints was some 200. A first publish holds one a
    data file of the chain (100,000 at 100,000 blocks) from the chain walk to the
    discovery documents. Items are made when asked; equal to any sequence with the same
    items (a ``tuple`` of them included, and hashed as that tuple)."""

    __slots__ = ("_ends", "_hashes", "_schema_of", "_schemas", "_sequences", "_sizes")

    def __init__(self, files: Iterable[DataFile] = ()) -> None:
        self._sequences = array("q")
        self._sizes = array("q")
        self._hashes = bytearray()
        # Where each hash ends: a range while they all have one length (sha3-256
        # multihashes: 34 bytes), an array from the first of another length.
        self._ends: range | array[int] = range(0)
        self._schema_of = array("I")  # a number in _schemas
        self._schemas: list[DataSchema | None] = [None]
        for f in files:
            self.append(f)

    def append(self, f: DataFile) -> None:
        """Add ``f`` at the end."""
        schemas = self._schemas
        # Schemas by identity: a run of files shares the one SetDataSchema in force.
        if schemas[-1] is f.schema:
            code = len(schemas) - 1
        else:
            code = next((i for i, s in enumerate(schemas) if s is f.schema), len(schemas))
            if code == len(schemas):
                schemas.append(f.schema)
        self._sequences.append(f.sequence)
        self._sizes.append(f.size)
        self._schema_of.append(code)
        self._hashes += f.physical_hash
        self._ends = append_end(self._ends, len(self._hashes), len(f.physical_hash))

    def _at(self, i: int) -> DataFile:
        ends = self._ends
        return DataFile(
            self._sequences[i],
            bytes(self._hashes[ends[i - 1] if i else 0 : ends[i]]),
            self._sizes[i],
            self._schemas[self._schema_of[i]],
        )

    def __len__(self) -> int:
        return len(self._sequences)

    def _slice(self, items: Iterable[DataFile]) -> DataFiles:
        return DataFiles(items)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"DataFiles(len={len(self)})"


@dataclass(frozen=True)
class DiscoveryFacts:
    """The chain facts the discovery formats render (see the module docstring)."""

    dataset_id: str
    head: bytes
    sequence: int
    created: Timestamp
    modified: Timestamp
    info: SetInfo | None = None
    license: SetLicense | None = None
    inputs: tuple[str, ...] = ()
    input_states: Mapping[str, InputState] = field(default_factory=dict)
    schema: DataSchema | None = None
    files: Sequence[DataFile] = ()

    @property
    def head_multihash(self) -> str:
        """The head block's hash in multibase base16."""
        return multihash_to_str(self.head)

    @property
    def version_id(self) -> str:
        """``did:odf:…#<head>``: this version of the dataset."""
        return f"{self.dataset_id}#{self.head_multihash}"

    @property
    def description(self) -> str | None:
        """The latest ``SetInfo`` description (None when there is none or it is empty)."""
        return (self.info.description or None) if self.info is not None else None

    @property
    def keywords(self) -> list[str]:
        """The latest ``SetInfo`` keywords, in order (empty when none)."""
        return list(self.info.keywords or ()) if self.info is not None else []

    @property
    def license_url(self) -> str | None:
        """The license's IRI: its SPDX page, else its website (None when not an IRI)."""
        if self.license is None:
            return None
        url = _license_fields(self.license).get("license")
        return str(url) if url else None

    @property
    def data_bytes(self) -> int:
        """The sum of the data files' sizes."""
        return sum(f.size for f in self.files)

    def title(self, override: str | None = None) -> str | None:
        """``override`` if given, else the description's first sentence (:func:`derive_title`)."""
        return override if override is not None else derive_title(self.description)

    def extended(self, entries: Iterable[ChainEntry]) -> DiscoveryFacts:
        """The facts at a newer head, from the blocks above this one, oldest first
        (each block's ``prev`` is checked by the chain walk that produced them)."""
        return _fold(self, entries)


@dataclass(frozen=True)
class Presentation:
    """What the renderers are told besides the chain: who publishes and where it is read.

    Attributes:
        publisher: ``publisher`` of ``odfweb3.yaml`` (``type``, ``name``, ``homepage``…).
        identity: the creator's name when ``publisher.name`` is not set (the key's
            ``ipns://NAME`` or the wallet's address).
        title: overrides the title derived from ``SetInfo``.
        landing: the dataset's own URL (``ipns://NAME``, a gateway URL, ``ar://ID``).
        url_of: ``data/<mh>`` to the URL a reader fetches.
        sha256_of: a data file's hex SHA-256 from its physical hash (None when unknown).
    """

    publisher: Mapping[str, Any] | None = None
    identity: str | None = None
    title: str | None = None
    landing: str | None = None
    url_of: Callable[[str], str] = lambda rel: rel
    sha256_of: Callable[[bytes], str | None] | None = None

    @property
    def creator_name(self) -> str | None:
        """``publisher.name``, else the signing identity (None when neither is known)."""
        name = (self.publisher or {}).get("name") or self.identity
        return str(name) if name else None

    def sha256(self, f: DataFile) -> str | None:
        """The data file's SHA-256 when the caller can hash it."""
        return self.sha256_of(f.physical_hash) if self.sha256_of is not None else None


def catalogue_gaps(info: SetInfo | None, license: SetLicense | None) -> list[str]:
    """What the chain lacks that every discovery format shows (title, description, license),
    each with its fix; empty when nothing is missing.

    The same for every format and every target: a publish says it once (the formats' own
    lists, e.g. :func:`~.croissant_check.croissant_problems`, add what only they need).
    """
    out: list[str] = []
    if info is None or not (info.description or "").strip():
        out.append("no title or description (add a SetInfo event with a description)")
    if license is None or not (license.spdx_id or license.website_url):
        out.append("no license (add a SetLicense event with an SPDX id)")
    return out


def discovery_facts(entries: Sequence[ChainEntry]) -> DiscoveryFacts:
    """The facts of a verified chain, head first (as ``walk_chain`` yields it).

    Raises:
        ValueError: the chain does not end at a Seed.
    """
    if not entries or not isinstance(entries[-1].block.event, Seed):
        raise ValueError("discovery metadata needs a whole chain ending at its Seed")
    seed_entry = entries[-1]
    seed = seed_entry.block.event
    assert isinstance(seed, Seed)
    start = DiscoveryFacts(
        dataset_id=str(DatasetId.from_bytes(seed.dataset_id or b"")),
        head=seed_entry.hash,
        sequence=seed_entry.block.sequence_number,
        created=seed_entry.block.system_time,
        modified=seed_entry.block.system_time,
    )
    return _fold(start, reversed(entries[:-1]))


def discovery_facts_walked(walk: Iterable[ChainEntry]) -> DiscoveryFacts:
    """:func:`discovery_facts` of a chain read head first as the walk yields it, holding no
    block: only each data file's sequence, hash and size until the ``SetDataSchema`` in
    force for it is met further down (an initial publish of a long chain would otherwise
    hold every decoded block to render its documents). Equal to ``discovery_facts`` of the
    same entries.

    Raises:
        ValueError: the chain does not end at a Seed.
    """
    fold = DiscoveryWalk()
    for e in walk:
        if fold.feed(e):
            break
    return fold.facts()


class DiscoveryWalk:
    """:func:`discovery_facts_walked` fed one entry at a time, head first: a walk that
    checks the chain for another reason (a first publish's verified load) gathers the
    discovery facts as it goes, and no second walk decodes the chain again."""

    def __init__(self) -> None:
        self.head: ChainEntry | None = None
        self.info: SetInfo | None = None
        self.lic: SetLicense | None = None
        self.schema: DataSchema | None = None
        self.inputs: tuple[str, ...] | None = None
        self.seen_schema = False
        self.states: dict[str, InputState] = {}  # newest first; re-ordered as the fold's
        self.order: list[str] = []  # dataset IDs by their newest consumption, walking down
        self.done = DataFiles()  # newest first
        self.pending = DataFiles()  # files waiting for their schema (None until met)
        self.seed: ChainEntry | None = None
        self.last: ChainEntry | None = None

    def feed(self, e: ChainEntry) -> bool:
        """Take the next entry down the chain; True once it was the Seed (the end)."""
        self.last = e
        if self.head is None:
            self.head = e
        ev = e.block.event
        if isinstance(ev, Seed):
            self.seed = e
            return True
        if isinstance(ev, SetInfo):
            self.info = ev if self.info is None else self.info
        elif isinstance(ev, SetLicense):
            self.lic = ev if self.lic is None else self.lic
        elif isinstance(ev, SetTransform):
            if self.inputs is None:
                self.inputs = tuple(
                    str(DatasetId.from_bytes(d)) for d, _ in declared_inputs(ev) if d
                )
        elif isinstance(ev, SetDataSchema) and ev.schema is not None:
            if not self.seen_schema:
                self.schema, self.seen_schema = ev.schema, True
            for f in self.pending:
                self.done.append(replace(f, schema=ev.schema))
            self.pending = DataFiles()
        elif isinstance(ev, AddData | ExecuteTransform):
            if isinstance(ev, ExecuteTransform):
                for qi in reversed(ev.query_inputs or ()):
                    if qi.dataset_id is not None:
                        key = str(DatasetId.from_bytes(qi.dataset_id))
                        if key not in self.states:
                            self.states[key] = InputState().after(qi)
                        self.order.append(key)
            ds = ev.new_data
            if ds is not None and ds.physical_hash is not None:
                self.pending.append(
                    DataFile(e.block.sequence_number, ds.physical_hash, ds.size, None)
                )
        return False

    def facts(self) -> DiscoveryFacts:
        """The facts of the entries fed.

        Raises:
            ValueError: they did not end at a Seed.
        """
        seed, head = self.seed, self.head
        if seed is None or head is None or self.last is not seed:
            raise ValueError("discovery metadata needs a whole chain ending at its Seed")
        # Oldest first: the files read walking down, newest first, taken backwards.
        done = DataFiles(f for part in (self.pending, self.done) for f in reversed(part))
        # The forward fold inserts each input at its oldest consumption.
        first_seen = list(dict.fromkeys(reversed(self.order)))
        seed_event = seed.block.event
        assert isinstance(seed_event, Seed)
        return DiscoveryFacts(
            dataset_id=str(DatasetId.from_bytes(seed_event.dataset_id or b"")),
            head=head.hash,
            sequence=head.block.sequence_number,
            created=seed.block.system_time,
            modified=head.block.system_time if head is not seed else seed.block.system_time,
            info=self.info,
            license=self.lic,
            inputs=self.inputs or (),
            input_states={k: self.states[k] for k in first_seen},
            schema=self.schema,
            files=done,
        )


def _fold(facts: DiscoveryFacts, entries: Iterable[ChainEntry]) -> DiscoveryFacts:
    info, lic, schema = facts.info, facts.license, facts.schema
    inputs = facts.inputs
    states = dict(facts.input_states)
    files = DataFiles(facts.files)
    last: ChainEntry | None = None
    for e in entries:
        last = e
        ev = e.block.event
        if isinstance(ev, SetInfo):
            info = ev
        elif isinstance(ev, SetLicense):
            lic = ev
        elif isinstance(ev, SetTransform):
            inputs = tuple(str(DatasetId.from_bytes(d)) for d, _ in declared_inputs(ev) if d)
        elif isinstance(ev, SetDataSchema) and ev.schema is not None:
            schema = ev.schema
        elif isinstance(ev, AddData | ExecuteTransform):
            if isinstance(ev, ExecuteTransform):
                for qi in ev.query_inputs or ():
                    if qi.dataset_id is not None:
                        key = str(DatasetId.from_bytes(qi.dataset_id))
                        states[key] = states.get(key, InputState()).after(qi)
            ds = ev.new_data
            if ds is not None and ds.physical_hash is not None:
                files.append(DataFile(e.block.sequence_number, ds.physical_hash, ds.size, schema))
    if last is None:
        return facts
    return replace(
        facts,
        head=last.hash,
        sequence=last.block.sequence_number,
        modified=last.block.system_time,
        info=info,
        license=lic,
        inputs=inputs,
        input_states=states,
        schema=schema,
        files=files,
    )
