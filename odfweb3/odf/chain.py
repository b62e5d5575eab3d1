"""Walking the metadata chain, and the object list it implies.

Having the head hash one can follow ``prevBlockHash`` to the Seed and discover
every object of the dataset (Simple Transfer Protocol, ODF RFC-007): blocks,
data slices (``DataSlice.physicalHash``) and checkpoints
(``Checkpoint.physicalHash``), and, reading the data files' ``ObjectLink`` columns, the
linked objects (RFC-017, :mod:`odfweb3.odf.linked`). The head hash is thus the Merkle
root of the whole dataset. Every block read here is checked against its hash before it
is used.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from odfweb3.errors import ChainBroken, FormatError, NotFound
from odfweb3.odf.codec import decode_block
from odfweb3.odf.digest_map import DigestMap
from odfweb3.odf.layout import LAYOUT_DIRS, DatasetReader, ObjectKind, object_relpath
from odfweb3.odf.linked import link_columns
from odfweb3.odf.model_gen import (
    AddData,
    ExecuteTransform,
    ExtraAttributes,
    MetadataBlock,
    Seed,
    SetDataSchema,
)
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.odf.packed import PackedSequence, append_end

__all__ = [
    "ChainEntry",
    "DatasetObject",
    "LinkSource",
    "LinkingBlock",
    "ObjectCount",
    "ObjectList",
    "columns_at",
    "count_objects",
    "iter_objects",
    "walk_chain",
]


@dataclass(frozen=True)
class ChainEntry:
    """One verified block of a chain: its hash, decoded block and encoded size."""

    hash: bytes
    block: MetadataBlock
    size: int


@dataclass(frozen=True, order=True, slots=True)
class DatasetObject:
    """An object of the dataset: what it is, its hash and its size when known.

    Blocks' sizes are their encoded length; data files and checkpoints carry the
    size recorded in the block that references them.
    """

    kind: ObjectKind
    hash: bytes
    size: int | None
    # Slots, not an instance dict: a publish holds one per object (300,000 at 100,000
    # blocks); the formatted path is kept here once asked.
    _path: str | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def path(self) -> str:
        """Path inside the dataset layout, e.g. ``data/f1620…`` (formatted once: a publish
        asks it of every object several times)."""
        path = self._path
        if path is None:
            path = object_relpath(self.kind, self.hash)
            object.__setattr__(self, "_path", path)
        return path

    def with_path(self, path: str) -> DatasetObject:
        """This object, its path given as ``path`` (the same text, a string the caller holds
        already: one string an object, not two)."""
        if path != self.path:
            raise ValueError(f"{path}: not the path of {self.path}")
        object.__setattr__(self, "_path", path)
        return self


class _PackedBytes:
    """Byte strings appended one after the other into one ``bytearray`` (about 42 bytes a
    multihash, not a ``bytes`` object of 67 and its list slot)."""

    __slots__ = ("_blob", "_ends")

    def __init__(self) -> None:
        self._blob = bytearray()
        self._ends = array("Q")

    def append(self, b: bytes) -> None:
        self._blob += b
        self._ends.append(len(self._blob))

    def __getitem__(self, i: int) -> bytes:
        return bytes(self._blob[self._ends[i - 1] if i else 0 : self._ends[i]])

    def __delitem__(self, _: slice) -> None:
        """``del packed[:]``: empty it (the columns are cleared together)."""
        self._blob = bytearray()
        self._ends = array("Q")


_KINDS: tuple[ObjectKind, ...] = ("block", "data", "checkpoint", "linked")
_KIND_CODE: dict[str, int] = {k: i for i, k in enumerate(_KINDS)}
_FOLDER_OF: dict[str, str] = {k: LAYOUT_DIRS[k] for k in _KINDS}
# A layout folder's kind codes (``data``: data files and linked objects).
_FOLDER_CODES: dict[str, frozenset[int]] = {
    folder: frozenset(i for i, k in enumerate(_KINDS) if LAYOUT_DIRS[k] == folder)
    for folder in set(LAYOUT_DIRS.values())
}


class ObjectList(PackedSequence[DatasetObject]):
    """Objects kept packed (kind, hash and size in three flat arrays: about 50 bytes an
    object instead of a :class:`DatasetObject`, its hash and its path, some 260): a publish
    holds every object of the dataset from the chain walk to the end (300,000 at 100,000
    blocks). Items are made when asked; equal to any sequence with the same items."""

    __slots__ = ("_ends", "_hashes", "_kinds", "_positions", "_sizes")

    def __init__(self, objects: Iterable[DatasetObject] = ()) -> None:
        self._kinds = bytearray()
        self._hashes = bytearray()
        # Where each hash ends in ``_hashes``: a ``range`` while every hash has one length
        # (a dataset's are all sha3-256 multihashes, 34 bytes: no 8 bytes an object), an
        # array of them from the first of another length.
        self._ends: range | array[int] = range(0)
        self._sizes = array("q")  # -1: unknown
        self._positions: array[int] | None = None  # position(): made when first asked
        for obj in objects:
            self.append(obj)

    def append(self, obj: DatasetObject) -> None:
        """Add ``obj`` at the end."""
        self._positions = None
        self._kinds.append(_KIND_CODE[obj.kind])
        self._hashes += obj.hash
        self._ends = append_end(self._ends, len(self._hashes), len(obj.hash))
        self._sizes.append(-1 if obj.size is None else obj.size)

    def _at(self, i: int) -> DatasetObject:
        start = self._ends[i - 1] if i else 0
        size = self._sizes[i]
        return DatasetObject(
            _KINDS[self._kinds[i]],
            bytes(self._hashes[start : self._ends[i]]),
            None if size < 0 else size,
        )

    def paths(self) -> Iterator[str]:
        """Every object's layout path, in order, made from the packed kind and hash (no
        :class:`DatasetObject`): a build that reads the layout again instead of keeping
        a path string an object (300,000 at 100,000 blocks)."""
        dirs = [LAYOUT_DIRS[kind] + "/f" for kind in _KINDS]
        kinds, hashes, ends = self._kinds, self._hashes, self._ends
        start = 0
        for i in range(len(kinds)):
            end = ends[i]
            yield dirs[kinds[i]] + hashes[start:end].hex()
            start = end

    def path_at(self, i: int) -> str:
        """The layout path of object ``i`` (``object_relpath``, no :class:`DatasetObject`
        made): what a bundle's path-ordered view of 300,000 revisions compares."""
        start = self._ends[i - 1] if i else 0
        folder = LAYOUT_DIRS[_KINDS[self._kinds[i]]]
        return folder + "/f" + self._hashes[start : self._ends[i]].hex()

    def in_folder(self, folder: str) -> array[int]:
        """The positions of the objects in the layout folder ``folder`` (``data``:
        data files and linked objects), in order."""
        codes = {i for i, kind in enumerate(_KINDS) if LAYOUT_DIRS[kind] == folder}
        return array("I", (i for i, code in enumerate(self._kinds) if code in codes))

    def position(self, path: str) -> int:
        """The position of the first object at the layout path ``path``, or -1 (a path
        not of the layout's canonical form is at none).

        Through an index made on the first call: an open-addressing table of positions by
        the hash's own hash (4 bytes a slot, at most 3/4 full: about 7 bytes an object,
        where a ``dict`` of path strings was some 200), the hash and folder at a candidate
        position compared whole. Python's ``hash`` of the bytes is seeded per process, so
        hashes a hostile chain chose cannot be made to share one probe sequence."""
        folder, _, name = path.partition("/")
        codes = _FOLDER_CODES.get(folder)
        if codes is None or len(name) < 3 or name[0] != "f" or not name.islower():
            return -1
        try:
            mh = bytes.fromhex(name[1:])
        except ValueError:
            return -1
        if len(mh) * 2 + 1 != len(name):  # bytes.fromhex skips spaces: not the canonical text
            return -1
        table = self._positions
        if table is None:
            table = self._positions = self._index()
        mask = len(table) - 1
        slot = hash(mh) & mask
        hashes, ends, kinds = self._hashes, self._ends, self._kinds
        while at := table[slot]:
            i = at - 1
            start = ends[i - 1] if i else 0
            if kinds[i] in codes and hashes[start : ends[i]] == mh:
                return i
            slot = (slot + 1) & mask
        return -1

    def _index(self) -> array[int]:
        """:meth:`position`'s table: each object's position plus one (0: empty) in the
        first free slot from its hash's own hash, a later object at an earlier one's
        folder and hash left out (it is never asked)."""
        n = len(self._kinds)
        size = 8
        while size * 3 < n * 4:
            size <<= 1
        table = array("I", bytes(4 * size))
        mask = size - 1
        hashes, ends, kinds = self._hashes, self._ends, self._kinds
        folder_of = [_FOLDER_OF[kind] for kind in _KINDS]
        start = 0
        for i in range(n):
            end = ends[i]
            mh = hashes[start:end]
            slot = hash(bytes(mh)) & mask
            while at := table[slot]:
                j = at - 1
                j_start = ends[j - 1] if j else 0
                if folder_of[kinds[j]] == folder_of[kinds[i]] and hashes[j_start : ends[j]] == mh:
                    break
                slot = (slot + 1) & mask
            else:
                table[slot] = i + 1
            start = end
        return table

    def name_at(self, i: int) -> bytes:
        """The layout name of object ``i`` (``f`` and its multihash in hex), ASCII."""
        start = self._ends[i - 1] if i else 0
        return b"f" + self._hashes[start : self._ends[i]].hex().encode("ascii")

    def kind_at(self, i: int) -> ObjectKind:
        """The kind of object ``i`` (no :class:`DatasetObject` made: a pull asks it of each
        of its 30,000 objects at 10,000 blocks in every pass)."""
        return _KINDS[self._kinds[i]]

    def hash_at(self, i: int) -> bytes:
        """The multihash of object ``i``."""
        return bytes(self._hashes[self._ends[i - 1] if i else 0 : self._ends[i]])

    def size_at(self, i: int) -> int | None:
        """The recorded size of object ``i`` (None: no block records it)."""
        size = self._sizes[i]
        return None if size < 0 else size

    def fields(self) -> Iterator[tuple[ObjectKind, bytes, int | None]]:
        """Every object's kind, hash and size, in order, as plain tuples (the passes of a
        pull over its objects, without a :class:`DatasetObject` each)."""
        kinds, hashes, ends, sizes = self._kinds, self._hashes, self._ends, self._sizes
        start = 0
        for i in range(len(kinds)):
            end = ends[i]
            size = sizes[i]
            yield _KINDS[kinds[i]], bytes(hashes[start:end]), None if size < 0 else size
            start = end

    def object_count(self) -> ObjectCount:
        """:func:`count_objects` of this list, counted in the packed kinds."""
        n = [self._kinds.count(code) for code in range(len(_KINDS))]
        return ObjectCount(n[0], n[1], n[2], n[3])

    def __len__(self) -> int:
        return len(self._kinds)

    def __repr__(self) -> str:
        return f"ObjectList(len={len(self)})"


BlockSource = Callable[[bytes], bytes]


@dataclass(frozen=True, slots=True)
class ObjectCount:
    """The dataset's objects as ``docs/concepts.md`` ("Words") counts them: its blocks,
    data files, checkpoints and linked objects, each distinct object once. ``validate``,
    ``publish``, ``pull``, ``verify`` and ``status`` all say this number (their JSON too),
    so one dataset has one object count whichever command is asked."""

    blocks: int = 0
    data_files: int = 0
    checkpoints: int = 0
    linked: int = 0

    @property
    def total(self) -> int:
        """Every object: what the messages call "N objects"."""
        return self.blocks + self.data_files + self.checkpoints + self.linked

    def __add__(self, other: ObjectCount) -> ObjectCount:
        return ObjectCount(
            self.blocks + other.blocks,
            self.data_files + other.data_files,
            self.checkpoints + other.checkpoints,
            self.linked + other.linked,
        )

    def to_json(self) -> dict[str, int]:
        """JSON form (``total`` is the number the text says)."""
        return {
            "total": self.total,
            "blocks": self.blocks,
            "dataFiles": self.data_files,
            "checkpoints": self.checkpoints,
            "linked": self.linked,
        }


def count_objects(objects: Iterable[DatasetObject]) -> ObjectCount:
    """The one count of ``objects`` (distinct objects, as :func:`iter_objects` yields them)."""
    n = {"block": 0, "data": 0, "checkpoint": 0, "linked": 0}
    for obj in objects:
        n[obj.kind] += 1
    return ObjectCount(n["block"], n["data"], n["checkpoint"], n["linked"])


def walk_chain(
    source: DatasetReader | BlockSource,
    head: bytes | None = None,
    *,
    stop_at: bytes | None = None,
) -> Iterator[ChainEntry]:
    """Yield the chain's blocks from ``head`` back to the Seed, each verified.

    Args:
        source: a dataset, or a function returning a block's raw bytes by hash
            (remote readers pass their own).
        head: where to start; the dataset's ``refs/head`` when omitted.
        stop_at: stop before yielding this block (an ancestor already known).

    Raises:
        NotFound: a block is missing.
        HashMismatch: a block's bytes do not hash to its name.
        FormatError: a block does not decode.
        ChainBroken: sequence numbers do not count down by one to a Seed at 0.
    """
    if isinstance(source, DatasetReader):
        reader = source
        read: BlockSource = reader.read_block_bytes
        if head is None:
            head = reader.head()
    else:
        read = source
    if head is None:
        raise NotFound("no head to walk from")
    current: bytes | None = head
    expected_seq: int | None = None
    while current is not None and current != stop_at:
        data = read(current)
        try:
            block = decode_block(data, expected=current)
        except FormatError as exc:
            raise FormatError(f"{_where(current)}: {exc}") from None
        seq = block.sequence_number
        if expected_seq is not None and seq != expected_seq:
            raise ChainBroken(
                f"{_where(current)}: sequence number {seq}, expected {expected_seq} "
                "(its successor's number minus one)"
            )
        if block.prev_block_hash is None:
            if seq != 0 or not isinstance(block.event, Seed):
                raise ChainBroken(
                    f"{_where(current)}: has no previous block but is not a Seed at "
                    "sequence number 0"
                )
        elif seq == 0:
            raise ChainBroken(f"{_where(current)}: sequence number 0 but has a previous block")
        yield ChainEntry(current, block, len(data))
        expected_seq = seq - 1
        current = block.prev_block_hash


def _where(mh: bytes) -> str:
    # Built only on error: formatting it for every block costs a tenth of the walk.
    return f"block {multihash_to_str(mh)}"


@dataclass(frozen=True, slots=True)
class LinkingBlock:
    """What a :class:`LinkSource` needs of the ``AddData`` block adding a data file: its
    hash and sequence number (for messages) and extra attributes (the linkedObjects
    summary). Kept instead of the decoded block while the walk looks for the schema in
    force further down: a first publish keeps no decoded block past the newest ones."""

    hash: bytes
    sequence_number: int
    extra: ExtraAttributes | None


class LinkSource(Protocol):
    """Reads the linked objects one data file names (ODF RFC-017): I/O passed in, so the
    walk stays pure (:class:`odfweb3.odf.parquet_links.ParquetLinks` reads Parquet)."""

    def __call__(
        self, block: LinkingBlock, data: DatasetObject, columns: tuple[str, ...]
    ) -> Iterable[DatasetObject]:
        """The ``linked`` objects of ``data`` (the data file ``block``, an ``AddData``,
        adds), read from its ``columns``; each hash once or more, in file order."""
        ...


def columns_at(entries: Iterable[ChainEntry], below: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The ``ObjectLink`` columns in force at the first of ``entries`` (head first): those
    of the newest ``SetDataSchema`` among them, else ``below`` (in force under the last)."""
    for entry in entries:
        event = entry.block.event
        if isinstance(event, SetDataSchema):
            return link_columns(event, _where(entry.hash))
    return below


def iter_objects(
    entries: Iterable[ChainEntry],
    links: LinkSource | None = None,
    below: tuple[str, ...] = (),
) -> Iterator[DatasetObject]:
    """Every object the given blocks name: the blocks, then their data and checkpoints;
    with ``links``, the linked objects of each ``AddData``'s data file too.

    Duplicates (a checkpoint carried over unchanged, an object linked twice) are yielded
    once. The schema in force for a data file is the newest ``SetDataSchema`` below it,
    met later in a walk head first: data files wait until it is met (``below``: the
    columns in force under the last of ``entries``, when they do not reach the Seed), so
    linked objects come after the blocks that name their data files.

    Raises:
        FormatError / IntegrityError / NotFound: from ``links`` (a data file that cannot
            be read for its link columns, a linked object missing) or a schema whose
            ``ObjectLink`` kamu refuses.
    """
    # The hashes yielded, per folder (a linked object and a data file share data/), in
    # DigestMaps: about 35 bytes a hash, where a set of (kind, hash) tuples was some 150.
    seen = {"data": DigestMap(), "checkpoint": DigestMap()}
    # The data files waiting for their schema, as flat columns (about 90 bytes each, not a
    # decoded block or a record object: a first publish of 100,000 blocks holds them all
    # until the walk meets the SetDataSchema near the Seed).
    p_data = _PackedBytes()
    p_size = array("q")
    p_block = _PackedBytes()
    p_seq = array("Q")
    p_extra: list[ExtraAttributes | None] = []

    def resolve(columns: tuple[str, ...]) -> Iterator[DatasetObject]:
        if links is not None and columns:
            for i in range(len(p_size)):
                block = LinkingBlock(p_block[i], p_seq[i], p_extra[i])
                data = DatasetObject("data", p_data[i], p_size[i])
                for obj in links(block, data, columns):
                    if seen["data"].put(obj.hash):
                        yield obj
        for column in (p_data, p_size, p_block, p_seq, p_extra):
            del column[:]

    for entry in entries:
        yield DatasetObject("block", entry.hash, entry.size)
        event = entry.block.event
        if isinstance(event, AddData | ExecuteTransform):
            new_data = event.new_data
            if (
                new_data is not None
                and new_data.physical_hash is not None
                and seen["data"].put(new_data.physical_hash)
            ):
                obj = DatasetObject("data", new_data.physical_hash, new_data.size)
                if links is not None and isinstance(event, AddData):
                    p_data.append(obj.hash)
                    p_size.append(new_data.size)
                    p_block.append(entry.hash)
                    p_seq.append(entry.block.sequence_number)
                    p_extra.append(event.extra)
                yield obj
            cp = event.new_checkpoint
            if (
                cp is not None
                and cp.physical_hash is not None
                and seen["checkpoint"].put(cp.physical_hash)
            ):
                yield DatasetObject("checkpoint", cp.physical_hash, cp.size)
        elif links is not None and isinstance(event, SetDataSchema):
            yield from resolve(link_columns(event, _where(entry.hash)))
    yield from resolve(below)
