"""An offline target's per-object index in content-named packs, partitioned so an update
reads and writes only the partitions its new objects fall in.

An offline target's ``publish.json`` used to list every object (path -> its locator facts:
6 MB at 10,000 blocks for ``car:DIR``, 40 MB at 100,000 for ``bundle:DIR``), read and written
whole by every publish. A :class:`PackIndex` keeps those entries in *packs*,
``OUT_DIR/index-<sha-256 prefix>.pack``, each a concatenation of *parts*: one JSON object
``{name: entry}`` per top directory (``blocks``, ``data``…) and partition (0-255). What a
folder, a partition and an entry's compact JSON are is the adapter's
(:class:`IndexLayout`, passed in: ``car:DIR`` partitions by HAMT root bucket, ``bundle:DIR``
by a hash of the name); this module knows no network. ``publish.json`` keeps where each
part is: ``{folder: {"XX": [pack, offset, length, sha-256 prefix, entries]}}`` (at most
256 refs per folder, whatever the dataset's size).

An update appends one small pack holding the parts it changed; the previous packs stay and
their other parts are still used. A pack is named by its content and written (temp file,
fsync, rename: :func:`write_pack`) before the ``publish.json`` naming it, so a crash leaves
an unreferenced pack, never a reference to a missing one; packs no ``publish.json`` names
are removed after it is written (:func:`drop_packs`). When more than :data:`MAX_PACKS`
packs would be referenced, the new pack also takes the parts of every pack but the one whose
parts hold the most bytes (usually the first, full one), which stays: two packs remain, and
the update rewrites what the recent updates wrote, not the whole index (at 100,000 blocks a
full pack is 63 MB, the recent updates' parts a few MB). A pack no part names any more goes.

Reading is bounded and verified: a pack name must be ``index-<32 hex>.pack``, a part at
most :data:`MAX_PART` bytes, its bytes must hash to the recorded prefix, its JSON is read by
the bounded loader, every entry is checked by the layout's decoder and must belong to the
part's partition.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Final, Self

from odfweb3.atomic_file import write_chunks_atomic, write_file_atomic
from odfweb3.errors import FormatError
from odfweb3.foreign_json import load_foreign_json

__all__ = [
    "MAX_PACKS",
    "MAX_PART",
    "IndexLayout",
    "PackIndex",
    "PartRef",
    "drop_packs",
    "is_pack_name",
    "write_pack",
]

MAX_PACKS: Final = 32
MAX_PART: Final = 16 << 20
# Entries of a fresh pack grouped in memory at a time (PackIndex.write_fresh): a path string
# each (~130 bytes), held at the end of a first publish over every per-object array; each
# slice is one more read of the paths, which hashes no name (their parts numbered once).
_SLICE: Final = 1 << 14
_PACK_NAME = re.compile(r"^index-[0-9a-f]{32}\.pack$")
_PART_KEY = re.compile(r"^[0-9A-F]{2}$")

Entry = dict[str, Any]


@dataclass(frozen=True)
class IndexLayout:
    """What an adapter's index holds.

    Attributes:
        folders: the top directories an entry path may start with (``folder/name``).
        partition_of: the partition (0-255) of an entry name.
        encode: an entry -> its compact JSON value in a part.
        decode: a part's JSON value -> the entry (``FormatError`` naming the place given).
    """

    folders: tuple[str, ...]
    partition_of: Callable[[str], int]
    encode: Callable[[Mapping[str, Any]], Any]
    decode: Callable[[Any, str], Entry]


def is_pack_name(name: str) -> bool:
    """``name`` is a pack's file name (``index-<32 hex>.pack``)."""
    return _PACK_NAME.match(name) is not None


@dataclass(frozen=True)
class PartRef:
    """Where one part is: pack file, byte range, SHA-256 prefix (hex) and entry count."""

    pack: str
    offset: int
    length: int
    digest: str
    count: int

    def to_json(self) -> list[Any]:
        """State form."""
        return [self.pack, self.offset, self.length, self.digest, self.count]

    @classmethod
    def from_json(cls, raw: Any, where: str) -> PartRef:
        """Parse the state form (FormatError naming ``where``)."""
        if not (isinstance(raw, list) and len(raw) == 5):
            raise FormatError(f"{where}: malformed object index part")
        pack, offset, length, digest, count = raw
        ints = (offset, length, count)
        if (
            not isinstance(pack, str)
            or not _PACK_NAME.match(pack)
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in ints)
            or not isinstance(digest, str)
            or not re.fullmatch(r"[0-9a-f]{32}", digest)
            or length > MAX_PART
        ):
            raise FormatError(f"{where}: malformed object index part")
        return cls(pack, offset, length, digest, count)


class PackIndex(Mapping[str, Mapping[str, Any]]):
    """Entry path -> entry, read part by part when asked; a subclass sets :attr:`layout`.

    ``len()`` and :meth:`count` come from the refs; ``in`` and ``[]`` read one part;
    iterating reads them all (only full rebuilds and tests do).
    """

    layout: ClassVar[IndexLayout]
    # How a missing or damaged pack's one-line error ends (what to do); a target that keeps
    # its packs elsewhere says its own.
    remedy: ClassVar[str] = "move publish.json away to publish afresh"

    def __init__(
        self,
        out_dir: Path,
        refs: Mapping[str, Mapping[int, PartRef]],
        loaded: Mapping[tuple[str, int], dict[str, Entry]] | None = None,
    ) -> None:
        self.out_dir = out_dir
        self.refs = {f: dict(refs.get(f, {})) for f in self.layout.folders}
        self._parts: dict[tuple[str, int], dict[str, Entry]] = dict(loaded or {})
        self._len = sum(r.count for parts in self.refs.values() for r in parts.values())

    # -- state form ---------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """Where the parts are (the state keeps this)."""
        return {
            f: {f"{i:02X}": ref.to_json() for i, ref in sorted(parts.items())}
            for f, parts in self.refs.items()
            if parts
        }

    @classmethod
    def from_json(cls, out_dir: Path, raw: Any, where: str) -> Self:
        """Parse :meth:`to_json`'s form (FormatError naming ``where``)."""
        if not isinstance(raw, dict) or not set(raw) <= set(cls.layout.folders):
            raise FormatError(f"{where}: malformed object index")
        refs: dict[str, dict[int, PartRef]] = {}
        for folder, parts in raw.items():
            if not isinstance(parts, dict) or not all(_PART_KEY.match(str(k)) for k in parts):
                raise FormatError(f"{where}: malformed object index")
            refs[folder] = {int(k, 16): PartRef.from_json(v, where) for k, v in parts.items()}
        return cls(out_dir, refs)

    @property
    def packs(self) -> set[str]:
        """The pack files the index names."""
        return {r.pack for parts in self.refs.values() for r in parts.values()}

    # -- reading ------------------------------------------------------------------------

    def part(self, folder: str, index: int) -> dict[str, Entry]:
        """The entries of one part (name -> entry); empty when there is none."""
        key = (folder, index)
        got = self._parts.get(key)
        if got is not None:
            return got
        ref = self.refs.get(folder, {}).get(index)
        if ref is None:
            return {}
        where = f"{self.out_dir}/{ref.pack}"
        try:
            fd = os.open(self.out_dir / ref.pack, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            raise FormatError(f"{where}: missing; {self.remedy}") from None
        except OSError as exc:
            raise FormatError(f"{where}: {exc.strerror}; {self.remedy}") from None
        try:
            data = os.pread(fd, ref.length, ref.offset)
        finally:
            os.close(fd)
        if len(data) != ref.length or hashlib.sha256(data).hexdigest()[:32] != ref.digest:
            raise FormatError(f"{where}: damaged (part {folder}/{index:02X}); {self.remedy}")
        raw = load_foreign_json(data, what=where, max_bytes=MAX_PART, expect=dict)
        decode, partition_of = self.layout.decode, self.layout.partition_of
        entries = {str(n): decode(v, where) for n, v in raw.items()}
        if len(entries) != ref.count or any(
            not n.isascii() or partition_of(n) != index for n in entries
        ):
            raise FormatError(f"{where}: damaged (part {folder}/{index:02X}); {self.remedy}")
        self._parts[key] = entries
        return entries

    def count(self, folder: str) -> int:
        """Entries under ``folder``."""
        return sum(r.count for r in self.refs.get(folder, {}).values())

    def names(self, folder: str) -> list[str]:
        """Every entry name under ``folder`` (reads its parts)."""
        return [n for i in sorted(self.refs.get(folder, {})) for n in self.part(folder, i)]

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str) or "/" not in key:
            return False
        folder, name = key.split("/", 1)
        if folder not in self.refs or not name.isascii():
            return False
        return name in self.part(folder, self.layout.partition_of(name))

    def __getitem__(self, key: str) -> Mapping[str, Any]:
        folder, _, name = key.partition("/")
        if folder not in self.refs or not name or not name.isascii():
            raise KeyError(key)
        return self.part(folder, self.layout.partition_of(name))[name]

    def __iter__(self) -> Iterator[str]:
        for folder in self.layout.folders:
            for name in self.names(folder):
                yield f"{folder}/{name}"

    def __len__(self) -> int:
        return self._len

    # -- writing ------------------------------------------------------------------------

    @classmethod
    def _normal(cls, path: str, entry: Mapping[str, Any]) -> tuple[tuple[str, int], str, Entry]:
        """The part key, name and entry (as a read gives it back) of a new entry."""
        folder, _, name = path.partition("/")
        if folder not in cls.layout.folders or not name or not name.isascii():
            raise FormatError(f"{path}: not an object of the dataset layout")
        entry = cls.layout.decode(cls.layout.encode(entry), path)
        return (folder, cls.layout.partition_of(name)), name, entry

    def updated(self, new: Mapping[str, Mapping[str, Any]]) -> tuple[Self, bytes]:
        """The index with ``new`` entries added or replaced, and the pack holding the
        changed parts (empty when nothing changed). Past :data:`MAX_PACKS` packs, it also
        takes the parts of every pack but the largest (by the bytes of its parts)."""
        touched: dict[tuple[str, int], dict[str, Entry]] = {}
        for path, entry in new.items():
            key, name, value = self._normal(path, entry)
            if key not in touched:
                touched[key] = dict(self.part(*key))
            touched[key][name] = value
        if len(self.packs | {"new"}) > MAX_PACKS:
            held: dict[str, int] = {}
            for parts in self.refs.values():
                for ref in parts.values():
                    held[ref.pack] = held.get(ref.pack, 0) + ref.length
            largest = max(held, key=lambda name: (held[name], name))
            moved = {
                (f, i): dict(self.part(f, i))
                for f, parts in self.refs.items()
                for i, ref in parts.items()
                if ref.pack != largest
            }
            moved.update(touched)
            return self._with_parts(moved)
        return self._with_parts(touched)

    @classmethod
    def build(
        cls, out_dir: Path, parts: Mapping[tuple[str, int], Mapping[str, Entry]]
    ) -> tuple[Self, bytes]:
        """A fresh index of ``parts`` in one pack."""
        return cls(out_dir, {})._with_parts(parts)

    @classmethod
    def write_fresh(cls, out_dir: Path, paths: Iterable[str], value: Callable[[str], Any]) -> Self:
        """A fresh index of every path in ``paths`` in one pack, written (temp file, fsync,
        rename, as :func:`write_pack`) part by part as it is encoded: ``value(path)`` is the
        entry's compact JSON value (what :attr:`IndexLayout.encode` gives), asked once per
        entry, one part at a time (no dict per entry, no whole pack in memory; the
        same pack bytes as :meth:`of_objects` and :func:`write_pack`). The index holds no
        entry: its parts are read from the pack when asked.

        Raises:
            FormatError: a path is not ``folder/name`` of the layout.
        """
        folders, partition_of = cls.layout.folders, cls.layout.partition_of
        if iter(paths) is paths:  # read once only: kept (re-iterable ones are read again)
            paths = list(paths)

        def keyed() -> Iterator[tuple[tuple[str, int], str]]:
            for path in paths:
                folder, _, name = path.partition("/")
                if folder not in folders or not name or not name.isascii():
                    raise FormatError(f"{path}: not an object of the dataset layout")
                yield (folder, partition_of(name)), path

        # Parts are written in key order, a slice of them at a time: the first read counts
        # each part's entries (keeping the paths while they are few), each slice of parts
        # holding at most SLICE entries is then read again, so no list of every path is
        # held (300,000 at 100,000 blocks; the links list them again at no cost). The first
        # read numbers each path's part (2 bytes a path: a layout has at most 256 parts a
        # folder), so the later reads hash no name again.
        counts: dict[tuple[str, int], int] = {}
        numbers: dict[tuple[str, int], int] = {}
        codes = array("H")
        held: dict[tuple[str, int], list[str]] | None = {}
        for n, (key, path) in enumerate(keyed()):
            counts[key] = counts.get(key, 0) + 1
            codes.append(numbers.setdefault(key, len(numbers)))
            if held is not None:
                if n < _SLICE:
                    held.setdefault(key, []).append(path)
                else:
                    held = None
        if not counts:
            return cls(out_dir, {})
        slices: list[list[tuple[str, int]]] = [[]]
        size = 0
        for key in sorted(counts):
            if slices[-1] and size + counts[key] > _SLICE:
                slices.append([])
                size = 0
            slices[-1].append(key)
            size += counts[key]
        refs: dict[str, dict[int, tuple[int, int, str, int]]] = {}
        whole = hashlib.sha256()

        def grouped(keys: list[tuple[str, int]]) -> dict[tuple[str, int], list[str]]:
            if held is not None:
                return held
            wanted: dict[tuple[str, int], list[str]] = {key: [] for key in keys}
            by_number = {numbers[key]: wanted[key] for key in keys}
            for code, path in zip(codes, paths, strict=True):
                group = by_number.get(code)
                if group is not None:
                    group.append(path)
            return wanted

        def chunks() -> Iterator[bytes]:
            offset = 0
            for keys in slices:
                parts = grouped(keys)
                for folder, i in keys:
                    members = sorted(parts.pop((folder, i)))
                    cut = len(folder) + 1
                    blob = _encode_part({p[cut:]: value(p) for p in members})
                    whole.update(blob)
                    digest = hashlib.sha256(blob).hexdigest()[:32]
                    refs.setdefault(folder, {})[i] = (offset, len(blob), digest, len(members))
                    offset += len(blob)
                    yield blob

        def pack_name() -> str:
            return "index-" + whole.hexdigest()[:32] + ".pack"

        name = write_chunks_atomic(out_dir, chunks(), pack_name, public=True).name
        return cls(
            out_dir,
            {f: {i: PartRef(name, *ref) for i, ref in parts.items()} for f, parts in refs.items()},
        )

    @classmethod
    def of_objects(
        cls, out_dir: Path, objects: Mapping[str, Mapping[str, Any]]
    ) -> tuple[Self, bytes]:
        """A fresh index of path -> entry ``objects`` in one pack."""
        parts: dict[tuple[str, int], dict[str, Entry]] = {}
        for path, e in objects.items():
            key, name, entry = cls._normal(path, e)
            parts.setdefault(key, {})[name] = entry
        return cls.build(out_dir, parts)

    def _with_parts(
        self, parts: Mapping[tuple[str, int], Mapping[str, Entry]]
    ) -> tuple[Self, bytes]:
        if not parts:
            return self, b""
        encode = self.layout.encode
        blobs = [
            (key, _encode_part({n: encode(e) for n, e in entries.items()}))
            for key, entries in sorted(parts.items())
        ]
        pack = b"".join(b for _, b in blobs)
        name = PackIndex.pack_name(pack)
        refs = {f: dict(p) for f, p in self.refs.items()}
        offset = 0
        for (folder, i), blob in blobs:
            digest = hashlib.sha256(blob).hexdigest()[:32]
            refs[folder][i] = PartRef(name, offset, len(blob), digest, len(parts[(folder, i)]))
            offset += len(blob)
        loaded = dict(self._parts)
        loaded.update({k: dict(v) for k, v in parts.items()})
        return type(self)(self.out_dir, refs, loaded), pack

    @staticmethod
    def pack_name(pack: bytes) -> str:
        """The file name of a pack (its content's SHA-256 prefix)."""
        return "index-" + hashlib.sha256(pack).hexdigest()[:32] + ".pack"


def _encode_part(body: Mapping[str, Any]) -> bytes:
    return json.dumps(dict(sorted(body.items())), separators=(",", ":")).encode("ascii")


def write_pack(out_dir: Path, pack: bytes) -> str:
    """Write a pack (temp file, fsync, rename; public: it names public ids only) before the
    state naming it; its file name."""
    name = PackIndex.pack_name(pack)
    if pack:
        write_file_atomic(out_dir / name, pack, public=True)
    return name


def drop_packs(out_dir: Path, keep: set[str], *, older_than: float | None = None) -> None:
    """Remove the packs in ``out_dir`` the state no longer names (left by earlier publishes
    or an interrupted one); best effort, after the state is written.

    ``older_than`` (a ``time.time()`` taken when the publish began): only packs modified
    before it go, so a pack another publisher wrote since, not saved yet, stays (a state
    directory shared by concurrent publishers: the node and gateway targets).
    """
    with contextlib.suppress(OSError):
        for entry in os.scandir(out_dir):
            if not is_pack_name(entry.name) or entry.name in keep:
                continue
            with contextlib.suppress(OSError):
                if older_than is None or entry.stat(follow_symlinks=False).st_mtime < older_than:
                    os.unlink(entry.path)
