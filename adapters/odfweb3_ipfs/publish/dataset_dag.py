"""An ODF dataset as a UnixFS directory, built incrementally (docs/design.md, "IPFS mapping").

The dataset maps 1:1 onto UnixFS with exactly the ODF names::

    <root>/
      blocks/<f1620…>        one file per metadata block
      checkpoints/<f1620…>
      data/<f1620…>
      refs/head              the head hash as text (no newline, as odfweb3 writes it)

so ``GET /ipfs/<root>/refs/head`` works with no ODF knowledge, and the root CID
equals ``ipfs add -r --cid-version=1`` of a directory holding exactly that layout
(or ``ipfs add -r`` under the Kubo profile given, see :mod:`.cid_profile`).
All four directories are always present (empty when the dataset has no data).

Incremental: the per-object ``(cid, tsize)`` of a previous publish are reused
without reading the files again; only new files are imported, and only the
directory nodes are rebuilt (cheap: no file I/O, HAMT shards included). Blocks
the previous publish already sent (``previous_dir_blocks``) are not emitted again.
"""

from __future__ import annotations

import hashlib
import threading
from array import array
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Protocol, cast, overload

from odfweb3.atomic_file import write_file_atomic
from odfweb3.crypto.sealer import Sealer
from odfweb3.errors import FormatError
from odfweb3.odf.chain import DatasetObject, ObjectList
from odfweb3.odf.digest_map import DigestMap
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.source import open_for_publish
from odfweb3.publish.state import E, PublishState, R
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.formats.hamt import (
    DEFAULT_FANOUT,
    ShardTable,
    build_hamt_partial,
    build_hamt_tracked,
)
from odfweb3_ipfs.publish.cid_profile import CidProfile, profile_for
from odfweb3_ipfs.publish.object_index import ObjectIndex, partition_of
from odfweb3_ipfs.publish.state import IpfsTyped, X
from odfweb3_ipfs.publish.unixfs_import import (
    BlockSink,
    DirNode,
    Entry,
    FileNode,
    ImportSource,
)

__all__ = [
    "DatasetDag",
    "IndexLinks",
    "KnownSha256",
    "ObjectLink",
    "ObjectObserver",
    "build_dataset_dag",
    "build_dataset_dag_indexed",
    "reusable_links",
    "reusable_shards",
    "shards_json",
    "write_dag_index",
]

_TOP_DIRS: Final = ("blocks", "checkpoints", "data")
_FOLDER_CODE: Final = {name: i for i, name in enumerate(_TOP_DIRS)}


@dataclass(frozen=True, slots=True)
class ObjectLink:
    """Where one object is in the DAG: its file root CID, DAG size and file size."""

    cid: Cid
    tsize: int
    size: int

    def to_json(self) -> dict[str, Any]:
        """State form."""
        return {"cid": self.cid.encode(), "tsize": self.tsize, "size": self.size}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ObjectLink:
        """Parse the state form."""
        return cls(Cid.decode(str(data["cid"])), int(data["tsize"]), int(data["size"]))


class ObjectObserver(Protocol):
    """Told about each imported object, so a target can send in batches (the node target:
    what was sent and checked survives an interruption)."""

    def imported(self, path: str, link: ObjectLink) -> None:
        """Every block of the object at ``path`` reached the sink (its check may still run)."""
        ...

    def verified(self, path: str) -> None:
        """The object's size and hash check passed (called on any thread)."""
        ...

    def failed(self, path: str) -> None:
        """The object's check failed (called on any thread; the build raises the error)."""
        ...


class _Observed:
    """An import source that tells ``observer`` when its check passed."""

    __slots__ = ("_observer", "_path", "_source")

    def __init__(self, source: ImportSource, path: str, observer: ObjectObserver) -> None:
        self._source = source
        self._path = path
        self._observer = observer

    def read(self, n: int, /) -> bytes:
        return self._source.read(n)

    def absorb(self, chunk: bytes, /) -> None:
        self._source.absorb(chunk)

    def end(self) -> None:
        self._source.end()

    def check(self) -> None:
        try:
            self._source.check()
        except BaseException:
            self._observer.failed(self._path)
            raise
        self._observer.verified(self._path)

    def close(self) -> None:
        self._source.close()


class _Sha256Tap:
    """An import source that also SHA-256es a data file's bytes as its own check hashes
    them (the same chunks, in order, on the worker), for the discovery documents'
    checksums (Croissant ``sha256``, DCAT ``spdx:checksum``): no second read of the file.
    The digest is recorded only once the file's check passed."""

    __slots__ = ("_key", "_out", "_sha", "_source")

    def __init__(self, source: ImportSource, key: bytes, out: DataSha256) -> None:
        self._source = source
        self._key = key
        self._out = out
        self._sha = hashlib.sha256()

    def read(self, n: int, /) -> bytes:
        return self._source.read(n)

    def absorb(self, chunk: bytes, /) -> None:
        self._source.absorb(chunk)
        self._sha.update(chunk)

    def end(self) -> None:
        self._source.end()

    def check(self) -> None:
        self._source.check()
        self._out.put(self._key, self._sha.digest())

    def close(self) -> None:
        self._source.close()


# A CIDv1 raw leaf's prefix (version 1, codec raw, sha2-256 of 32 bytes): its digest is
# the SHA-256 of the file it is the whole of.
_RAW_SHA256: Final = b"\x01\x55\x12\x20"


class DataSha256:
    """Plain data files' SHA-256 (hex when read) by physical hash (multihash).

    A one-chunk raw-leaf file is its own leaf: its SHA-256 is its CID's digest, which the
    build's new links hold already (``leaves``), so it is not kept a second time (100,000
    digests at 100,000 blocks of 2 KB data files, some 7 MB). Any other plain data file's is
    kept as its 32 bytes in a :class:`DigestMap` (about 70 bytes a file, where a ``dict`` of
    hex strings was some 230), put from the hashing workers as each file's check passes,
    hence the lock; read once the import is done. ``leaves``: None when the files are
    sealed (their leaves hold ciphertext)."""

    def __init__(self, leaves: _PackedLinks | _PositionLinks | None = None) -> None:
        self._map = DigestMap(32)
        self._lock = threading.Lock()
        self._leaves = leaves

    def put(self, mh: bytes, digest: bytes) -> None:
        """Record ``digest`` (32 bytes) of the data file ``mh``."""
        with self._lock:
            self._map.put(mh, digest)

    def get(self, mh: bytes) -> str | None:
        """The hex SHA-256 of the data file ``mh``, or None when this build did not hash
        it (not imported, or sealed). The file at ``data/<mh>`` is the same bytes whatever
        kind of object names it (a linked object of the same hash is the same file)."""
        value = self._map.get(mh)
        if value is not None:
            return value.hex()
        if self._leaves is None:
            return None
        cid = self._leaves.pair(f"data/{multihash_to_str(mh)}")
        if cid is None or cid[0][:-32] != _RAW_SHA256:
            return None
        return cid[0][-32:].hex()


class KnownSha256(Protocol):
    """Data files' hex SHA-256 by physical hash, as far as known (a ``dict`` is one)."""

    def get(self, mh: bytes, /) -> str | None:
        """The hex SHA-256 of the data file ``mh``, or None when unknown."""
        ...


def _opener(
    reader: DatasetReader,
    sealer: Sealer | None,
    observer: ObjectObserver | None,
    tap: Callable[[DatasetObject], bool] = lambda obj: False,
    sha256: DataSha256 | None = None,
) -> Callable[[DatasetObject], ImportSource]:
    def open_new(obj: DatasetObject) -> ImportSource:
        source: ImportSource = open_for_publish(reader, obj, sealer, defer_hashing=True)
        if sha256 is not None and tap(obj):
            source = _Sha256Tap(source, obj.hash, sha256)
        return source if observer is None else _Observed(source, obj.path, observer)

    return open_new


@dataclass(frozen=True)
class DatasetDag:
    """The result: root, per-object links, and what the build sent."""

    root: DirNode
    objects: Mapping[str, ObjectLink]
    new_blocks: int = 0
    new_bytes: int = 0
    dirs: dict[str, DirNode] = field(default_factory=dict)
    reused: frozenset[str] = frozenset()
    shards: dict[str, ShardTable] = field(default_factory=dict)
    added: Mapping[str, ObjectLink] = field(default_factory=dict)
    indexed: bool = False
    # Hex SHA-256 of the plain data files this build imported, by physical hash (multihash).
    data_sha256: KnownSha256 = field(default_factory=lambda: dict[bytes, str]())


class _LazyLinks(Mapping[str, ObjectLink]):
    """The previous publish's links, each CID parsed only when asked (an update
    that rebuilds one HAMT shard path needs a few hundred of 100,000)."""

    def __init__(self, objects: Mapping[str, Mapping[str, Any]], has: Collection[str]) -> None:
        self._objects = objects
        self._has = has
        self._parsed: dict[str, ObjectLink] = {}
        self._keys = [k for k in objects if k in has]
        self.per_folder: dict[str, int] = {}
        for k in self._keys:
            folder = k.split("/", 1)[0]
            self.per_folder[folder] = self.per_folder.get(folder, 0) + 1

    def __contains__(self, key: object) -> bool:
        return key in self._has and key in self._objects

    def __getitem__(self, key: str) -> ObjectLink:
        link = self._parsed.get(key)
        if link is None:
            if key not in self:
                raise KeyError(key)
            link = self._parsed[key] = ObjectLink.from_json(self._objects[key])
        return link

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


class IndexLinks(Mapping[str, ObjectLink]):
    """The links of ``car:DIR``'s object index (:mod:`.object_index`), each part read and
    each CID parsed only when asked."""

    def __init__(self, index: ObjectIndex) -> None:
        self.index = index
        self._parsed: dict[str, ObjectLink] = {}

    def __contains__(self, key: object) -> bool:
        return key in self.index

    def __getitem__(self, key: str) -> ObjectLink:
        link = self._parsed.get(key)
        if link is None:
            link = self._parsed[key] = ObjectLink.from_json(self.index[key])
        return link

    def __iter__(self) -> Iterator[str]:
        return iter(self.index)

    def __len__(self) -> int:
        return len(self.index)


def _link_key(path: str) -> bytes | None:
    """A layout path's key in :class:`_PackedLinks`: its folder's number, then its name's
    multihash bytes; None when the name is not the canonical text of a multihash of more
    than 32 bytes (``f`` and lower-case hex: what the layout writes), so two paths never
    share a key."""
    folder, _, name = path.partition("/")
    code = _FOLDER_CODE.get(folder)
    if code is None or len(name) < 67 or name[0] != "f" or not name.islower():
        return None
    try:
        mh = bytes.fromhex(name[1:])
    except ValueError:
        return None
    if len(mh) * 2 + 1 != len(name):  # bytes.fromhex skips spaces: not the canonical text
        return None
    return bytes((code,)) + mh


class _LinkLookup(Mapping[str, ObjectLink]):
    """Links looked up by path in a packed form: ``_packed(path)`` gives ``(CID bytes,
    tsize, size)`` or None, and an :class:`ObjectLink` is made only when one is asked."""

    def _packed(self, path: str) -> tuple[bytes, int, int] | None:
        raise NotImplementedError

    def pair(self, path: str) -> tuple[bytes, int] | None:
        """``(CID bytes, tsize)`` of ``path``; None when it is not here."""
        got = self._packed(path)
        return None if got is None else (got[0], got[1])

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._packed(key) is not None

    def __getitem__(self, key: str) -> ObjectLink:
        got = self._packed(key)
        if got is None:
            raise KeyError(key)
        return ObjectLink(Cid(got[0]), got[1], got[2])


class _PackedLinks(_LinkLookup):
    """New objects' links by path, kept without the path string: in a :class:`DigestMap`
    keyed by the path's folder and multihash (:func:`_link_key`), the value the CID's
    prefix (its number in a small table), its digest, tsize and size (81 bytes a slot,
    where a ``dict`` of the path string to packed ``bytes`` was some 135 and the path
    string some 120: 300,000 links at 100,000 blocks). A path or a CID of another shape
    (none a layout or a sha2-256 profile makes) goes to a plain ``dict``. Iterated in the
    order added only when ``ordered`` (an update's few new links); an :class:`ObjectLink`
    is made when one is asked."""

    _WIDTH: ClassVar[int] = 1 + 32 + 8 + 8

    def __init__(self, *, ordered: bool = False) -> None:
        self._map = DigestMap(self._WIDTH)
        self._prefixes: list[bytes] = []
        self._other: dict[str, bytes] = {}  # CID bytes, then tsize and size, 8 bytes each
        self._order: list[str] | None = [] if ordered else None

    def add(self, path: str, cid: Cid, tsize: int, size: int) -> None:
        raw, tail = cid.raw, tsize.to_bytes(8, "big") + size.to_bytes(8, "big")
        key = _link_key(path)
        prefix = raw[:-32]
        if key is not None and len(cid.digest) == 32 and prefix in self._prefixes[:255]:
            new = self._map.put(key, bytes((self._prefixes.index(prefix),)) + raw[-32:] + tail)
        elif key is not None and len(cid.digest) == 32 and len(self._prefixes) < 255:
            self._prefixes.append(prefix)
            new = self._map.put(key, bytes((len(self._prefixes) - 1,)) + raw[-32:] + tail)
        else:
            if key is not None:
                self._map.discard(key)
            new = path not in self._other
            self._other[path] = raw + tail
        if new and self._order is not None:
            self._order.append(path)

    def discard(self, path: str) -> None:
        """Forget ``path``'s link, if any (an unordered map only)."""
        key = _link_key(path)
        if key is not None:
            self._map.discard(key)
        self._other.pop(path, None)

    def _packed(self, path: str) -> tuple[bytes, int, int] | None:
        """``(CID bytes, tsize, size)`` of ``path``; None when it is not here."""
        if self._other:
            b = self._other.get(path)
            if b is not None:
                return b[:-16], int.from_bytes(b[-16:-8], "big"), int.from_bytes(b[-8:], "big")
        key = _link_key(path)
        v = None if key is None else self._map.get(key)
        if v is None:
            return None
        raw = self._prefixes[v[0]] + v[1:33]
        return raw, int.from_bytes(v[33:41], "big"), int.from_bytes(v[41:49], "big")

    def __iter__(self) -> Iterator[str]:
        if self._order is None:
            raise TypeError("these links are looked up by path, not listed")
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._map) + len(self._other)


class _PositionLinks(_LinkLookup):
    """New objects' links kept by the object's position in the build's :class:`ObjectList`
    (which holds the folder and multihash a :class:`_PackedLinks` key repeats): the CID's
    prefix (its number in a small table; 255: no link), its digest, tsize and size in flat
    arrays made once, 49 bytes an object plus the list's index of positions
    (:meth:`ObjectList.position`, about 7), where a :class:`_PackedLinks` slot with its
    key is some 90: 300,000 links at 100,000 blocks, at the build's peak. A path the list
    does not hold, or a CID of another shape, goes to a :class:`_PackedLinks`. Looked up
    by path, never listed."""

    _NONE: ClassVar[int] = 255

    def __init__(self, objects: ObjectList) -> None:
        n = len(objects)
        self._objects = objects
        self._codes = bytearray(b"\xff") * n
        self._digests = bytearray(32 * n)
        self._tsizes = array("Q", bytes(8 * n))
        self._sizes = array("Q", bytes(8 * n))
        self._prefixes: list[bytes] = []
        self._count = 0
        self._other = _PackedLinks()

    def add(self, path: str, cid: Cid, tsize: int, size: int) -> None:
        raw = cid.raw
        prefix = raw[:-32]
        at = self._objects.position(path)
        code = self._prefixes.index(prefix) if prefix in self._prefixes else len(self._prefixes)
        if (
            at < 0
            or len(cid.digest) != 32
            or code >= self._NONE
            or not (0 <= tsize < 1 << 64 and 0 <= size < 1 << 64)
        ):
            if at >= 0 and self._codes[at] != self._NONE:
                self._codes[at] = self._NONE
                self._count -= 1
            self._other.add(path, cid, tsize, size)
            return
        if code == len(self._prefixes):
            self._prefixes.append(prefix)
        if len(self._other):
            self._other.discard(path)
        self._count += self._codes[at] == self._NONE
        self._codes[at] = code
        self._digests[32 * at : 32 * at + 32] = raw[-32:]
        self._tsizes[at] = tsize
        self._sizes[at] = size

    def _packed(self, path: str) -> tuple[bytes, int, int] | None:
        """``(CID bytes, tsize, size)`` of ``path``; None when it is not here."""
        at = self._objects.position(path)
        if at >= 0:
            code = self._codes[at]
            if code != self._NONE:
                raw = self._prefixes[code] + self._digests[32 * at : 32 * at + 32]
                return raw, self._tsizes[at], self._sizes[at]
        if not len(self._other):
            return None
        return self._other._packed(path)

    def __iter__(self) -> Iterator[str]:
        raise TypeError("these links are looked up by path, not listed")

    def __len__(self) -> int:
        return self._count + len(self._other)


class _AllLinks(Mapping[str, ObjectLink]):
    """Every object's link, in dataset order (``paths()`` lists them again each time):
    new ones, and reused ones parsed when asked."""

    def __init__(
        self,
        paths: Callable[[], Iterable[str]],
        count: int,
        new: Mapping[str, ObjectLink],
        previous: Mapping[str, ObjectLink],
    ) -> None:
        self._paths = paths
        self._count = count
        self._new = new
        self._previous = previous

    def __contains__(self, key: object) -> bool:
        return key in self._new or key in self._previous

    def __getitem__(self, key: str) -> ObjectLink:
        link = self._new.get(key)
        return link if link is not None else self._previous[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths())

    def __len__(self) -> int:
        return self._count


def reusable_links(
    state: IpfsTyped[X] | None,
    has: Collection[str],
    *,
    cid_version: int,
    encrypted: bool,
    profile: CidProfile | None = None,
) -> tuple[Mapping[str, ObjectLink], frozenset[bytes]]:
    """What an incremental build may reuse from the previous publish's state.

    Returns the links of objects the target still holds and the directory blocks sent
    before; nothing when the CID version, the CID profile (state ``cidProfile``, absent
    for the parameters ``cidVersion`` alone names) or the encryption changed (plaintext
    and ciphertext files never mix in one root).
    """
    if state is None:
        return {}, frozenset()
    facts = state.extra.dag
    previous: Mapping[str, ObjectLink] = (
        IndexLinks(state.objects)
        if isinstance(state.objects, ObjectIndex)
        else _LazyLinks(state.objects, has)
    )
    if facts.version != cid_version:
        previous = {}
    tag = (profile or profile_for(None, cid_version)).state_tag
    if facts.cid_profile != tag:
        previous = {}
    if bool(facts.encrypted) != encrypted:
        previous = {}
    dirs = frozenset(bytes.fromhex(h) for h in facts.dir_blocks or ())
    return previous, dirs


def _count_in(links: Mapping[str, ObjectLink], folder: str) -> int:
    """How many of ``links`` are under ``folder/``."""
    if isinstance(links, _LazyLinks):
        return links.per_folder.get(folder, 0)
    if isinstance(links, IndexLinks):
        return links.index.count(folder)
    return sum(1 for p in links if p.startswith(folder + "/"))


def reusable_shards(
    state: IpfsTyped[X] | None, previous: Mapping[str, ObjectLink]
) -> dict[str, ShardTable]:
    """The previous publish's HAMT shard tables (state ``hamtShards``), per top directory.

    Empty unless ``previous`` (from :func:`reusable_links`) is: a changed CID version,
    profile or encryption rebuilds every directory.
    """
    if state is None or not previous:
        return {}
    raw = state.extra.hamt_shards
    if raw is None:
        return {}
    out: dict[str, ShardTable] = {}
    try:
        for folder, table in raw.items():
            if folder in _TOP_DIRS and isinstance(table, dict) and "" in table:
                out[folder] = {str(p): (bytes.fromhex(v[0]), int(v[1])) for p, v in table.items()}
    except (TypeError, ValueError, IndexError):
        return {}  # a damaged table costs a full rebuild, never a wrong directory
    return out


def shards_json(shards: Mapping[str, ShardTable]) -> dict[str, dict[str, list[Any]]]:
    """State form of :attr:`DatasetDag.shards`."""
    return {
        folder: {p: [raw.hex(), tsize] for p, (raw, tsize) in table.items()}
        for folder, table in shards.items()
    }


class _Sinks:
    """Where a build's new blocks go, counted; directory blocks sent before are skipped."""

    def __init__(self, sink: BlockSink | None, previous_dir_blocks: frozenset[bytes]) -> None:
        self.sink = sink
        self.previous = previous_dir_blocks
        self.blocks = 0
        self.bytes = 0

    def file(self, cid: Cid, block: bytes) -> None:
        self.blocks += 1
        self.bytes += len(block)
        if self.sink is not None:
            self.sink(cid, block)

    def dir(self, cid: Cid, block: bytes) -> None:
        if cid.raw in self.previous:
            return
        self.file(cid, block)

    def held(self, cid: Cid, block: bytes) -> None:
        """A directory block the previous publish sent (an unchanged directory): not sent
        again. (No set of every directory block's CID is kept: no target reads one; the
        next build knows from the layout which are new, build_dataset_dag_indexed.)"""


class _Links:
    """Every object's link while a build runs: the new ones (packed) over ``previous``."""

    def __init__(
        self,
        previous: Mapping[str, ObjectLink],
        *,
        ordered: bool = False,
        objects: ObjectList | None = None,
    ) -> None:
        # By position in ``objects`` when every object of it is new (a first publish: no
        # previous links, and so none to list in order).
        self.new: _PackedLinks | _PositionLinks = (
            _PositionLinks(objects)
            if objects is not None and not previous and not ordered
            else _PackedLinks(ordered=ordered)
        )
        self.previous = previous

    def pair_at(self, path: str) -> tuple[bytes, int]:
        pair = self.new.pair(path)
        if pair is None:
            link = self.previous[path]
            return link.cid.raw, link.tsize
        return pair

    def link_of(self, folder: str) -> Callable[[bytes], tuple[bytes, int]]:
        """An entry name of ``folder`` -> its ``(CID bytes, tsize)``, as the HAMT builder asks."""

        def link_of(entry: bytes) -> tuple[bytes, int]:
            return self.pair_at(f"{folder}/{entry.decode('ascii')}")

        return link_of


class _Layout:
    """How a build finds a top directory's names: every path listed (:class:`_Listed`) or
    the previous publish's object index plus the new names (:class:`_Indexed`)."""

    def __init__(
        self, added: dict[str, list[str]], previous_shards: Mapping[str, ShardTable] | None
    ) -> None:
        self.added = added
        self.shards = previous_shards or {}

    def folder(
        self, name: str, prof: CidProfile, links: _Links, sinks: _Sinks
    ) -> tuple[DirNode, ShardTable | None]:
        """The top directory ``name`` and, when sharded, its trie's table."""
        raise NotImplementedError


def _grown_hamt(
    prof: CidProfile,
    names: Iterable[str],
    added: Iterable[str],
    folder: str,
    table: ShardTable,
    links: _Links,
    sinks: _Sinks,
) -> tuple[DirNode, ShardTable]:
    """A top directory sharded before that only gained entries: still sharded, only the
    shards the new names fall under rebuilt (:func:`build_hamt_tracked`)."""
    cid, tsize, new_table = build_hamt_tracked(
        [n.encode("ascii") for n in names],
        links.link_of(folder),
        cid_version=prof.cid_version,
        sink=sinks.dir,
        fanout=prof.hamt_fanout,
        previous=table,
        added=[n.encode("ascii") for n in added],
    )
    return DirNode(cid=cid, tsize=tsize, sharded=True), new_table


class _Listed(_Layout):
    """Every path of the layout, listed again by ``paths()`` each time a folder is built
    (no list of path strings held), and which of them ``previous`` links (``linked``: a
    byte per path, in the same order)."""

    def __init__(
        self,
        paths: Callable[[], Iterable[str]],
        linked: bytearray,
        counts: dict[str, tuple[int, int]],
        previous_shards: Mapping[str, ShardTable] | None,
        objects: ObjectList | None = None,
    ) -> None:
        super().__init__({}, previous_shards)
        self.objects = objects
        self.paths = paths
        self.linked = linked
        self.counts = counts  # folder -> (paths, new paths)

    def _names(self, folder: str, *, new_only: bool = False) -> Iterator[str]:
        """The entry names of ``folder`` (all, or those ``previous`` lacks), in order."""
        prefix = folder + "/"
        cut = len(prefix)
        for path, held in zip(self.paths(), self.linked, strict=True):
            if path.startswith(prefix) and not (new_only and held):
                yield path[cut:]

    def folder(
        self, name: str, prof: CidProfile, links: _Links, sinks: _Sinks
    ) -> tuple[DirNode, ShardTable | None]:
        total, new = self.counts[name]
        table = self.shards.get(name)
        if table is not None and total - new == _count_in(links.previous, name):
            # Sharded before, and every earlier entry is still there: the directory only
            # grew, so it is still sharded.
            names, added = self._names(name), self._names(name, new_only=True)
            return _grown_hamt(prof, names, added, name, table, links, sinks)
        encoded: Sequence[bytes]
        if self.objects is not None:
            # Each name made from the packed hash when the build asks it (hashing it, then
            # linking it), not a list of 100,000 names held while the trie is built.
            encoded = _FolderNames(self.objects, self.objects.in_folder(name))
        else:
            encoded = [n.encode("ascii") for n in self._names(name)]
        return _build_folder(prof, encoded, links.link_of(name), sinks.dir)


class _FolderNames(Sequence[bytes]):
    """The names of one folder's objects of an :class:`ObjectList` (at ``positions``),
    each made when asked."""

    def __init__(self, objects: ObjectList, positions: Sequence[int]) -> None:
        self._objects = objects
        self._positions = positions

    def __len__(self) -> int:
        return len(self._positions)

    @overload
    def __getitem__(self, i: int) -> bytes: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[bytes]: ...
    def __getitem__(self, i: int | slice) -> bytes | Sequence[bytes]:
        if isinstance(i, slice):
            return [self._objects.name_at(p) for p in self._positions[i]]
        return self._objects.name_at(self._positions[i])

    def __iter__(self) -> Iterator[bytes]:
        name_at = self._objects.name_at
        return (name_at(p) for p in self._positions)


class _Indexed(_Layout):
    """The previous publish's object index (``car:DIR``, the node target) plus the new
    names (``added``, per folder): a directory's names are read from the index only when
    it must be built whole."""

    def __init__(
        self,
        index: ObjectIndex,
        added: dict[str, list[str]],
        previous_shards: Mapping[str, ShardTable] | None,
    ) -> None:
        super().__init__(added, previous_shards)
        self.index = index

    def folder(
        self, name: str, prof: CidProfile, links: _Links, sinks: _Sinks
    ) -> tuple[DirNode, ShardTable | None]:
        index, added = self.index, self.added[name]
        table = self.shards.get(name)
        if table is not None and prof.hamt_fanout == DEFAULT_FANOUT and index.count(name):
            return self._partial(name, prof, table, links, sinks)
        names = index.names(name) + added
        if table is not None:
            # Sharded before, another fanout: every name, the previous trie's shards reused
            # and not sent again (only those on the new names' paths are new).
            return _grown_hamt(prof, names, added, name, table, links, sinks)
        # No new name: the previous publish's directory, block for block.
        sink = sinks.dir if added else sinks.held
        # Every link of an unsharded directory, straight from its parts (no HAMT hash of
        # each name to find its part, as a lookup by path would do).
        kept = {
            n.encode("ascii"): (Cid.decode(str(e["cid"])).raw, int(e["tsize"]))
            for i in sorted(index.refs[name])
            for n, e in index.part(name, i).items()
        }
        new_link = links.link_of(name)

        def link_of(entry: bytes) -> tuple[bytes, int]:
            pair = kept.get(entry)
            return pair if pair is not None else new_link(entry)

        return _build_folder(prof, [n.encode("ascii") for n in names], link_of, sink)

    def _partial(
        self, folder: str, prof: CidProfile, table: ShardTable, links: _Links, sinks: _Sinks
    ) -> tuple[DirNode, ShardTable]:
        """A sharded directory at fanout 256: the root children the new names fall under
        rebuilt from their index parts, the others linked from the table."""
        index, added = self.index, self.added[folder]
        buckets: dict[int, list[bytes] | None] = dict.fromkeys(index.refs[folder])
        for name in added:
            i = partition_of(name)
            group = buckets.get(i)
            if group is None:
                group = buckets[i] = [n.encode("ascii") for n in index.part(folder, i)]
            group.append(name.encode("ascii"))

        def single(i: int) -> bytes:
            part = index.part(folder, i)
            if len(part) != 1:
                raise FormatError(
                    f"{index.out_dir}: the object index and hamtShards disagree on "
                    f"{folder}/{i:02X}; {index.remedy}"
                )
            return next(iter(part)).encode("ascii")

        cid, tsize, new_table = build_hamt_partial(
            buckets,
            links.link_of(folder),
            cid_version=prof.cid_version,
            sink=sinks.dir,
            previous=table,
            single=single,
            added=[n.encode("ascii") for n in added],
        )
        return DirNode(cid=cid, tsize=tsize, sharded=True), new_table


@dataclass(frozen=True)
class _Built:
    root: DirNode
    dirs: dict[str, DirNode]
    shards: dict[str, ShardTable]
    data_sha256: DataSha256


def _build(
    reader: DatasetReader,
    head: bytes,
    new: Iterable[DatasetObject],
    layout: _Layout,
    links: _Links,
    sinks: _Sinks,
    *,
    prof: CidProfile,
    progress: Callable[[int], None] | None,
    sealer: Sealer | None,
    observer: ObjectObserver | None,
) -> _Built:
    """The one DAG build: import ``new``, write ``refs/head``, build the top directories
    as ``layout`` says, then the root."""
    # A plain data file's SHA-256 for the discovery documents: a one-chunk raw-leaf file is
    # its own leaf (the CID's digest is the file's SHA-256); any other is hashed as it is
    # checked.
    sha256 = DataSha256(links.new if sealer is None else None)

    def tap(obj: DatasetObject) -> bool:
        one_leaf = prof.raw_leaves and obj.size is not None and obj.size <= prof.chunk_size
        return obj.kind == "data" and not one_leaf

    open_new = _opener(reader, sealer, observer, tap, sha256 if sealer is None else None)
    # Read in order, hashed (SHA-256 for CIDs, each file's own SHA3-256 check) on workers;
    # every check has passed once the loop ends, before any directory is built.
    node: FileNode
    for obj, node in prof.import_files(new, open_new, sinks.file, _size_of(sealer)):
        if progress is not None:
            progress(node.size)
        links.new.add(obj.path, node.cid, node.tsize, node.size)
        if observer is not None:
            observer.imported(obj.path, ObjectLink(node.cid, node.tsize, node.size))

    # refs/head before the directories: the CAR keeps its block order.
    head_text = multihash_to_str(head).encode("ascii")
    if sealer is not None:
        head_text = sealer.seal_bytes(head_text, "refs/head")
    head_file = prof.import_bytes(head_text, sinks.file)

    shards: dict[str, ShardTable] = {}
    dirs: dict[str, DirNode] = {}
    for name in _TOP_DIRS:
        dirs[name], table = layout.folder(name, prof, links, sinks)
        if table is not None:
            shards[name] = table
    dirs["refs"] = prof.build_directory({"head": Entry(head_file.cid, head_file.tsize)}, sinks.dir)
    root = prof.build_directory(
        {name: Entry(d.cid, d.tsize) for name, d in dirs.items()}, sinks.dir
    )
    return _Built(root, dirs, shards, sha256)


def build_dataset_dag(
    reader: DatasetReader,
    head: bytes,
    objects: Iterable[DatasetObject | str],
    previous: Mapping[str, ObjectLink],
    *,
    cid_version: int = 1,
    sink: BlockSink | None = None,
    previous_dir_blocks: frozenset[bytes] = frozenset(),
    progress: Callable[[int], None] | None = None,
    sealer: Sealer | None = None,
    profile: CidProfile | None = None,
    previous_shards: Mapping[str, ShardTable] | None = None,
    observer: ObjectObserver | None = None,
) -> DatasetDag:
    """Build the dataset's UnixFS DAG, importing only objects not in ``previous``.

    Args:
        reader: the local dataset (new objects are read through verified streams).
        head: the head being published (written as ``refs/head``).
        objects: every object of the dataset at ``head``; an object ``previous`` links may
            be given by its path alone.
        previous: object path -> link from an earlier publish (their files are not read).
        cid_version: 1 (raw leaves, default) or 0.
        sink: receives every *new* block (file blocks of new objects, directory blocks
            not in ``previous_dir_blocks``).
        previous_dir_blocks: raw CIDs of directory blocks sent before.
        progress: called with bytes of file content read.
        sealer: encrypt every new object and ``refs/head`` (docs/design.md, "Encryption"); paths
            stay the same, file CIDs are those of the ciphertext. ``previous`` must then
            come from an encrypted publish too.
        profile: the UnixFS import parameters (default: ``cid_version``'s, see
            :func:`.cid_profile.profile_for`); ``previous`` must come from the same profile.
        previous_shards: the previous publish's HAMT shard tables (:func:`reusable_shards`):
            a sharded top directory that only gained entries rebuilds only the shards on the
            new entries' paths; the result is the same node as a full build.
        observer: told when each imported object's blocks reached ``sink`` and when its
            check passed.

    Raises:
        IntegrityError / HashMismatch: a new object's size or hash is wrong.
    """
    reused: set[str] = set()
    # A sequence (the plan's packed objects) is read again: its paths now (an ObjectList
    # makes them from its packed hashes, no DatasetObject), again for each top directory
    # and the object index, and the objects to import as they are imported. No path string
    # is kept an object (300,000 at 100,000 blocks), only a byte saying whether
    # ``previous`` links it. Any other iterable is listed once, its paths kept.
    again = isinstance(objects, Sequence)
    packed = isinstance(objects, ObjectList)
    order: list[str] = []
    new: list[DatasetObject] = []
    linked = bytearray()
    counts = {name: [0, 0] for name in _TOP_DIRS}
    for obj in cast(ObjectList, objects).paths() if packed else objects:
        path = obj if isinstance(obj, str) else obj.path
        folder, sep, _ = path.partition("/")
        count = counts.get(folder)
        if count is None or not sep:
            raise FormatError(f"{path}: not in the dataset layout")
        count[0] += 1
        if not again:
            order.append(path)
        if path in previous:
            reused.add(path)
            linked.append(1)
            continue
        if isinstance(obj, str) and not packed:
            raise FormatError(f"{path}: not an object to import nor a link of the state")
        if not again:
            new.append(cast(DatasetObject, obj))
        count[1] += 1
        linked.append(0)
    paths = _paths_again(objects, order)
    links = _Links(previous, objects=objects if isinstance(objects, ObjectList) else None)
    sinks = _Sinks(sink, previous_dir_blocks)
    built = _build(
        reader,
        head,
        _not_linked(cast(Sequence[DatasetObject | str], objects), linked) if again else new,
        _Listed(
            paths,
            linked,
            {k: (a, b) for k, (a, b) in counts.items()},
            previous_shards,
            objects if isinstance(objects, ObjectList) else None,
        ),
        links,
        sinks,
        prof=profile or profile_for(None, cid_version),
        progress=progress,
        sealer=sealer,
        observer=observer,
    )
    return DatasetDag(
        built.root,
        _AllLinks(paths, len(linked), links.new, previous),
        sinks.blocks,
        sinks.bytes,
        built.dirs,
        frozenset(reused),
        built.shards,
        data_sha256=built.data_sha256,
    )


def _paths_again(
    objects: Iterable[DatasetObject | str], order: list[str]
) -> Callable[[], Iterable[str]]:
    """What lists the layout's paths again: an :class:`ObjectList`'s from its packed
    hashes, another sequence's from its items, else ``order`` (the paths read once)."""
    if isinstance(objects, ObjectList):
        return objects.paths
    if isinstance(objects, Sequence):
        seq = objects
        return lambda: (o if isinstance(o, str) else o.path for o in seq)
    return lambda: order


def _not_linked(
    objects: Sequence[DatasetObject | str], linked: bytearray
) -> Iterator[DatasetObject]:
    """The objects to import, read again: those ``linked`` says ``previous`` lacks (a
    path string among ``objects`` is a linked one: refused on the first read otherwise)."""
    for obj, held in zip(objects, linked, strict=True):
        if not held:
            yield cast(DatasetObject, obj)


class _IndexedLayout(Mapping[str, ObjectLink]):
    """Every object's link: the new ones, then the index's (read when iterated)."""

    def __init__(self, new: Mapping[str, ObjectLink], previous: IndexLinks) -> None:
        self._new = new
        self._previous = previous

    def __contains__(self, key: object) -> bool:
        return key in self._new or key in self._previous

    def __getitem__(self, key: str) -> ObjectLink:
        return self._new[key] if key in self._new else self._previous[key]

    def __iter__(self) -> Iterator[str]:
        yield from self._new
        yield from self._previous

    def __len__(self) -> int:
        return len(self._new) + len(self._previous)


def build_dataset_dag_indexed(
    reader: DatasetReader,
    head: bytes,
    send: Iterable[DatasetObject],
    previous: IndexLinks,
    *,
    profile: CidProfile,
    sink: BlockSink | None = None,
    previous_dir_blocks: frozenset[bytes] = frozenset(),
    progress: Callable[[int], None] | None = None,
    sealer: Sealer | None = None,
    previous_shards: Mapping[str, ShardTable] | None = None,
    observer: ObjectObserver | None = None,
) -> DatasetDag:
    """:func:`build_dataset_dag` of the index's layout plus ``send``.

    The same DAG and blocks as a build over every object, reading only what changes: a
    top directory sharded before (its table in ``previous_shards``, fanout 256) rebuilds
    the root children its new names fall under from their index parts and links the
    others from the table; any other directory is built from all its names (it is small:
    below the sharding threshold, or sharding for the first time).

    Which directory blocks are new is known from the layout, not from a list of every
    block sent before: the index is exactly the previous publish's layout and
    this one only adds ``send`` to it, so a directory that gains no name is the previous
    one (not sent again), and in a sharded one only the shards on the new names' paths
    change (:func:`~odfweb3_ipfs.formats.hamt.build_hamt_partial`). ``previous_dir_blocks``
    (states written before) still filters what is sent.

    Raises:
        FormatError: a sent object is in the index already, or the index is damaged.
        IntegrityError / HashMismatch: a new object's size or hash is wrong.
    """
    added: dict[str, list[str]] = {name: [] for name in _TOP_DIRS}
    new: list[DatasetObject] = []
    for obj in send:
        path = obj.path
        folder, name = path.split("/", 1)
        if folder not in added or path in previous:
            raise FormatError(f"{path}: sent, but the object index links it already")
        new.append(obj)
        added[folder].append(name)

    links = _Links(previous, ordered=True)
    sinks = _Sinks(sink, previous_dir_blocks)
    built = _build(
        reader,
        head,
        new,
        _Indexed(previous.index, added, previous_shards),
        links,
        sinks,
        prof=profile,
        progress=progress,
        sealer=sealer,
        observer=observer,
    )
    return DatasetDag(
        built.root,
        _IndexedLayout(links.new, previous),
        sinks.blocks,
        sinks.bytes,
        built.dirs,
        frozenset(),
        built.shards,
        added=links.new,
        indexed=True,
        data_sha256=built.data_sha256,
    )


def _build_folder(
    prof: CidProfile,
    names: Sequence[bytes],
    link_of: Callable[[bytes], tuple[bytes, int]],
    sink: BlockSink,
) -> tuple[DirNode, ShardTable | None]:
    """A top directory of the entries ``names`` (ASCII, in the layout's order, each linked
    by ``link_of(name)``: its CID bytes and tsize) and, when it is sharded, its trie's table
    for the next publish.

    A sharded one is built once, by the HAMT builder that records the table, emitting the
    blocks :meth:`CidProfile.build_directory` would (the trie is canonical: same nodes, same
    order): no entry dict, link list or second pass over 100,000 entries.
    """
    if not names:
        return prof.build_directory({}, sink), None
    if prof.directory_shards((n, *link_of(n)) for n in names):
        cid, tsize, table = build_hamt_tracked(
            names, link_of, cid_version=prof.cid_version, sink=sink, fanout=prof.hamt_fanout
        )
        return DirNode(cid=cid, tsize=tsize, sharded=True), table
    entries = {}
    for n in names:
        raw, tsize = link_of(n)
        entries[n.decode("ascii")] = Entry(Cid(raw), tsize)
    return prof.build_directory(entries, sink), None


def _size_of(sealer: Sealer | None) -> Callable[[DatasetObject], int | None] | None:
    """The size the importer will read of an object: the size its block records (a
    one-chunk file is then read on a worker, ``unixfs_import.import_files``); unknown
    when encrypted (the ciphertext is longer)."""
    if sealer is not None:
        return None
    return _recorded_size


def _recorded_size(obj: DatasetObject) -> int | None:
    return obj.size


def write_dag_index(
    dag: DatasetDag,
    prev: PublishState[R, E] | None,
    write_fresh: Callable[[Mapping[str, ObjectLink], Callable[[str], list[Any]]], ObjectIndex],
    *,
    public: bool,
) -> ObjectIndex:
    """The object index of ``dag``'s layout, its new pack written (temp file, fsync, rename)
    before any state names it: content-named, so a crash leaves only an unreferenced pack.

    An update over an index (``dag.indexed``) writes only the parts its new objects fall
    in; a first publish, or one from a state listing every object (written by older
    versions: migrated here), streams the whole pack part by part from the links
    (``write_fresh(links, value)``), reused entries as the previous state wrote them.
    ``public``: the pack's mode per the umask (``car:DIR``) instead of 0600 (private state).
    """
    if dag.indexed and prev is not None and isinstance(prev.objects, ObjectIndex):
        index, pack = prev.objects.updated({p: link.to_json() for p, link in dag.added.items()})
        if pack:
            write_file_atomic(index.out_dir / ObjectIndex.pack_name(pack), pack, public=public)
        return index
    previous = prev.objects if prev else {}
    links, reused = dag.objects, dag.reused

    def value(path: str) -> list[Any]:
        if path in reused and path in previous:
            e = previous[path]
            return [e["cid"], e["tsize"], e["size"]]
        link = links[path]
        return [link.cid.encode(), link.tsize, link.size]

    return write_fresh(links, value)
