"""The verified-chain cache: facts of heads verified before, so a publish walks only new blocks.

Like git's commit-graph, a local, derived file,
``<state dir>/cache/verified-chains/<head hex>.json``, holds the
:class:`~odfweb3.odf.facts.ChainFacts` of one head this machine walked to its Seed
and checked against every chain rule (or extended from such a head by checking every new
block against them). A publish walks back from the local head until it meets a cached head
(:func:`load_chain`), checks the blocks above it with
:func:`~odfweb3.odf.validate.check_chain_rules` continued from the cached state, and caches
the new head. ``odfweb3 validate`` never reads it (a full walk, always).

The cache only speeds things up: a missing, unreadable, damaged or foreign entry is
ignored (the whole chain is walked), entries are written atomically
(:mod:`odfweb3.atomic_file`) and read bounded (:mod:`odfweb3.foreign_json`), and the
newest :data:`KEEP` entries are kept.

The object filter grows with the dataset (1 MB at 100,000 blocks), so it is not written
into every entry: it lives in ``bloom-<sha-256 prefix>.bin``, named by its
content and checked against the name when read, and an entry extended from a cached head
names that file and lists the bytes its new objects changed (``patch``: at most
:data:`MAX_PATCH`, then a new file is written). A filter file is touched whenever an entry
naming it is written, and removed with the entries once older than every entry kept.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from odfweb3.atomic_file import write_file_atomic
from odfweb3.descriptor.discovery_facts import DiscoveryFacts, DiscoveryWalk
from odfweb3.errors import IntegrityError, OdfWeb3Error
from odfweb3.foreign_json import read_foreign_json_file
from odfweb3.odf.chain import (
    ChainEntry,
    DatasetObject,
    LinkSource,
    ObjectList,
    iter_objects,
    walk_chain,
)
from odfweb3.odf.codec import decode_event, encode_event
from odfweb3.odf.facts import ChainFacts, FactsWalk, ObjectFilter, extend_facts, facts_of_chain
from odfweb3.odf.identity import DatasetId
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.model_gen import DatasetKind, SetDataSchema, SetInfo, SetLicense, SourceState
from odfweb3.odf.parquet_links import local_links
from odfweb3.odf.timestamp import Timestamp
from odfweb3.odf.validate import (
    ChainRulesBackwards,
    ChainState,
    RuleState,
    check_chain_rules,
    data_names,
    data_orphans,
)

__all__ = [
    "HELD",
    "KEEP",
    "MAX_PATCH",
    "ChainCache",
    "VerifiedChain",
    "facts_from_json",
    "facts_to_json",
    "load_chain",
    "rules_from_json",
    "rules_to_json",
]

KEEP: Final = 64  # entries kept (newest by modification time)
MAX_PATCH: Final = 4096  # filter bytes an entry lists as changed from its filter file
# Blocks a walk holds decoded while it looks for a cached head; past them, it streams.
HELD: Final = 1024
# 2: linked objects (ODF RFC-017) counted, and the link columns in force; an entry of
# format 1 counted none, so it is ignored (one full walk).
# 3: the chain-rule state is kamu's (RuleState: per-kind checkpoints and watermarks, the
# schema and sources), and the heads were checked against kamu's rules; an entry of an
# older format is ignored, so its chain is walked and checked again.
# 4: heads checked against kamu's rule that a SetDataSchema precedes any data.
# 5: and against its schema evolution rules (the latest SetDataSchema kept).
# 6: and against its ExecuteTransform input rules (the inputs an ExecuteTransform lists
# and where the previous one's intervals ended kept).
_FORMAT: Final = 6
_MAX_ENTRY: Final = 64 << 20
_FILTER_NAME = re.compile(r"^bloom-[0-9a-f]{32}\.bin$")


def _ts(t: Timestamp | None) -> list[int] | None:
    return None if t is None else [t.year, t.ordinal, t.seconds_from_midnight, t.nanoseconds]


def _ts_from(v: Any) -> Timestamp | None:
    return None if v is None else Timestamp(*(int(x) for x in v))


def _hex(b: bytes | None) -> str | None:
    return None if b is None else b.hex()


def _hex_from(v: Any) -> bytes | None:
    return None if v is None else bytes.fromhex(v)


def rules_to_json(r: RuleState) -> dict[str, Any]:
    """A :class:`RuleState`'s JSON form (in a cache entry)."""
    ss = r.add_source_state
    return {
        "dataSeen": r.data_seen,
        "lastOffset": r.last_offset,
        "dataWatermark": _ts(r.data_watermark),
        "addCheckpoint": _hex(r.add_checkpoint),
        "addWatermark": _ts(r.add_watermark),
        "addSourceState": None if ss is None else [ss.source_name, ss.kind, ss.value],
        "execCheckpoint": _hex(r.exec_checkpoint),
        "execWatermark": _ts(r.exec_watermark),
        "schema": r.schema,
        "polling": r.polling,
        "push": [[name, d.hex()] for name, d in r.push],
        "schemaEvent": None
        if r.schema_event is None
        else base64.b64encode(encode_event(r.schema_event)).decode("ascii"),
        "transformInputs": None
        if r.transform_inputs is None
        else [_hex(i) for i in r.transform_inputs],
        "execInputs": None
        if r.exec_inputs is None
        else [[_hex(block), offset] for block, offset in r.exec_inputs],
    }


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise TypeError("not a boolean")
    return v


def rules_from_json(d: Any) -> RuleState:
    """Parse :func:`rules_to_json` (TypeError / ValueError / KeyError when malformed)."""
    if not isinstance(d, dict):
        raise TypeError("not a rule state")
    ss = d["addSourceState"]
    offset = d["lastOffset"]
    return RuleState(
        data_seen=_bool(d["dataSeen"]),
        last_offset=None if offset is None else int(offset),
        data_watermark=_ts_from(d["dataWatermark"]),
        add_checkpoint=_hex_from(d["addCheckpoint"]),
        add_watermark=_ts_from(d["addWatermark"]),
        add_source_state=None if ss is None else SourceState(*(_opt_str(x) for x in ss)),
        exec_checkpoint=_hex_from(d["execCheckpoint"]),
        exec_watermark=_ts_from(d["execWatermark"]),
        schema=_bool(d["schema"]),
        polling=_bool(d["polling"]),
        push=tuple((_opt_str(name), bytes.fromhex(h)) for name, h in d["push"]),
        schema_event=_schema_event(d["schemaEvent"]),
        transform_inputs=_inputs_from(d["transformInputs"]),
        exec_inputs=_ends_from(d["execInputs"]),
    )


def _inputs_from(v: Any) -> tuple[bytes | None, ...] | None:
    if v is None:
        return None
    if not isinstance(v, list):
        raise TypeError("not a list")
    return tuple(_hex_from(i) for i in v)


def _ends_from(v: Any) -> tuple[tuple[bytes | None, int | None], ...] | None:
    if v is None:
        return None
    if not isinstance(v, list):
        raise TypeError("not a list")
    return tuple((_hex_from(block), None if offset is None else int(offset)) for block, offset in v)


def _schema_event(v: Any) -> SetDataSchema | None:
    if v is None:
        return None
    if not isinstance(v, str):
        raise TypeError("not a string")
    return decode_event(SetDataSchema, base64.b64decode(v, validate=True))


def facts_to_json(f: ChainFacts) -> dict[str, Any]:
    """The cache entry's JSON form."""
    return {
        "format": _FORMAT,
        "datasetId": f.dataset_id.hex(),
        "head": f.head.hex(),
        "sequence": f.sequence,
        "modified": _ts(f.modified),
        "kind": int(f.kind),
        "created": _ts(f.created),
        "rules": rules_to_json(f.rules),
        "info": None
        if f.info is None
        else {"description": f.info.description, "keywords": f.info.keywords},
        "license": None
        if f.license is None
        else [f.license.short_name, f.license.name, f.license.spdx_id, f.license.website_url],
        "attachments": None if f.attachments is None else list(f.attachments),
        "counts": [
            f.objects,
            f.object_bytes,
            f.data_files,
            f.data_bytes,
            f.checkpoints,
            f.checkpoint_bytes,
            f.records,
            f.linked,
            f.linked_bytes,
        ],
        "linkColumns": list(f.link_columns),
        "seen": [f.seen.bits, f.seen.count, base64.b64encode(f.seen.data).decode("ascii")],
    }


def _opt_str(v: Any) -> str | None:
    if v is not None and not isinstance(v, str):
        raise TypeError("not a string")
    return v


def facts_from_json(d: Any, seen: ObjectFilter | None = None) -> ChainFacts:
    """Parse a cache entry (TypeError / ValueError / KeyError when malformed); ``seen``:
    its filter, read by the cache from the file the entry names, else inline."""
    if not isinstance(d, dict) or d.get("format") != _FORMAT:
        raise ValueError("not a verified-chain cache entry")
    info = d["info"]
    lic = d["license"]
    if seen is None:
        bits, count, data = d["seen"]
        seen = ObjectFilter(int(bits), int(count), base64.b64decode(data, validate=True))
    if seen.bits < 8 or seen.bits & (seen.bits - 1) or len(seen.data) * 8 != seen.bits:
        raise ValueError("bad object filter")
    counts = [int(x) for x in d["counts"]]
    if len(counts) != 9:
        raise ValueError("bad counts")
    columns = d["linkColumns"]
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        raise ValueError("bad link columns")
    kw = None if info is None else info["keywords"]
    return ChainFacts(
        dataset_id=bytes.fromhex(d["datasetId"]),
        head=bytes.fromhex(d["head"]),
        sequence=int(d["sequence"]),
        modified=_ts_from(d["modified"]),  # type: ignore[arg-type]
        kind=DatasetKind(int(d["kind"])),
        created=_ts_from(d["created"]),  # type: ignore[arg-type]
        rules=rules_from_json(d["rules"]),
        info=None
        if info is None
        else SetInfo(
            description=_opt_str(info["description"]),
            keywords=None if kw is None else tuple(str(k) for k in kw),
        ),
        license=None if lic is None else SetLicense(*(_opt_str(x) for x in lic)),
        attachments=None if d["attachments"] is None else tuple(str(p) for p in d["attachments"]),
        objects=counts[0],
        object_bytes=counts[1],
        data_files=counts[2],
        data_bytes=counts[3],
        checkpoints=counts[4],
        checkpoint_bytes=counts[5],
        records=counts[6],
        seen=seen,
        linked=counts[7],
        linked_bytes=counts[8],
        link_columns=tuple(columns),
    )


class ChainCache:
    """Verified heads' facts under one directory (``<state dir>/cache/verified-chains``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._names: set[str] | None = None
        # head -> (filter file, patch) of the entries read or written here: an entry
        # extended from one of them lists only what changed
        self._stored: dict[bytes, tuple[str, dict[int, int]]] = {}

    def _path(self, head: bytes) -> Path:
        return self.root / f"{head.hex()}.json"

    def _known(self) -> set[str]:
        if self._names is None:
            try:
                self._names = {n for n in os.listdir(self.root) if n.endswith(".json")}
            except OSError:
                self._names = set()
        return self._names

    def get(self, head: bytes) -> ChainFacts | None:
        """The facts cached for ``head``; None when absent or unusable (never raises)."""
        if f"{head.hex()}.json" not in self._known():
            return None
        try:
            raw = read_foreign_json_file(self._path(head), max_bytes=_MAX_ENTRY, expect=dict)
            stored = raw["seen"]
            if isinstance(stored, list) and len(stored) == 3 and isinstance(stored[2], dict):
                name, patch, seen = self._read_filter(stored)
                facts = facts_from_json(raw, seen)
                self._stored[head] = (name, patch)
            else:
                facts = facts_from_json(raw)
        except (OdfWeb3Error, OSError, TypeError, ValueError, KeyError, IndexError, OverflowError):
            return None
        return facts if facts.head == head else None

    def _read_filter(self, stored: list[Any]) -> tuple[str, dict[int, int], ObjectFilter]:
        """The filter an entry names: its file (size and hash checked), then its patch.

        Raises:
            OSError / ValueError / TypeError / KeyError: missing, damaged or malformed.
        """
        bits, count, ref = int(stored[0]), int(stored[1]), stored[2]
        name, patch_hex = ref["file"], ref["patch"]
        if not isinstance(name, str) or not _FILTER_NAME.match(name):
            raise ValueError("bad filter file name")
        if bits < 8 or bits & (bits - 1) or bits > 8 * _MAX_ENTRY or not isinstance(patch_hex, str):
            raise ValueError("bad object filter")
        fd = os.open(self.root / name, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            data = bytearray(os.pread(fd, bits // 8 + 1, 0))
        finally:
            os.close(fd)
        if len(data) != bits // 8 or _filter_name(data) != name:
            raise ValueError("damaged filter file")
        raw = bytes.fromhex(patch_hex)
        if len(raw) % 5 or len(raw) // 5 > MAX_PATCH:
            raise ValueError("bad filter patch")
        patch: dict[int, int] = {}
        for k in range(0, len(raw), 5):
            offset, value = int.from_bytes(raw[k : k + 4], "big"), raw[k + 4]
            data[offset] = value  # IndexError past the end
            patch[offset] = value
        return name, patch, ObjectFilter(bits, count, bytes(data))

    def put(
        self,
        facts: ChainFacts,
        base: ChainFacts | None = None,
        added: Sequence[DatasetObject] = (),
    ) -> None:
        """Cache ``facts`` (atomically); keep the newest :data:`KEEP` entries. Best effort.

        ``base`` and ``added``: ``facts`` is ``base`` (read from this cache) extended with
        the objects ``added``; the entry then names ``base``'s filter file and lists the
        bytes they changed, instead of a new file.
        """
        import json

        seen = facts.seen
        ref = self._patched(seen, base, added)
        try:
            if ref is None:
                name = _filter_name(seen.data)
                if not _intact(self.root / name, name):
                    write_file_atomic(self.root / name, seen.data)
                ref = (name, {})
            name, patch = ref
            doc = facts_to_json(facts)
            doc["seen"] = [
                seen.bits,
                seen.count,
                {
                    "file": name,
                    "patch": b"".join(
                        o.to_bytes(4, "big") + bytes((v,)) for o, v in sorted(patch.items())
                    ).hex(),
                },
            ]
            text = json.dumps(doc, separators=(",", ":")).encode()
            write_file_atomic(self._path(facts.head), text)
            os.utime(self.root / name)  # younger than the entry: kept while the entry is
        except (OdfWeb3Error, OSError):
            return  # a cache that cannot be written only costs the next full walk
        self._stored[facts.head] = ref
        self._names = None
        names = sorted(self._known())
        if len(names) > KEEP:
            dated = []
            for n in names:
                with contextlib.suppress(OSError):
                    dated.append((os.stat(self.root / n).st_mtime_ns, n))
            dated.sort()
            for _, n in dated[: len(dated) - KEEP]:
                with contextlib.suppress(OSError):
                    os.unlink(self.root / n)
            self._names = None
            if dated[len(dated) - KEEP :]:
                self._drop_filters(dated[len(dated) - KEEP][0])

    def _patched(
        self, seen: ObjectFilter, base: ChainFacts | None, added: Sequence[DatasetObject]
    ) -> tuple[str, dict[int, int]] | None:
        """``seen`` as ``base``'s filter file and a patch, or None (a new file is due)."""
        stored = self._stored.get(base.head) if base is not None else None
        if base is None or stored is None or base.seen.bits != seen.bits:
            return None
        name, patch = stored
        patch = dict(patch)
        for o in added:
            if o.kind != "block":
                for offset in seen.offsets(o.kind, o.hash):
                    patch[offset] = seen.data[offset]
        return (name, patch) if len(patch) <= MAX_PATCH else None

    def _drop_filters(self, oldest_kept: int) -> None:
        """Remove the filter files older than every entry kept (an entry's file is touched
        after the entry is written, so none of those is named by a kept entry)."""
        with contextlib.suppress(OSError):
            for e in os.scandir(self.root):
                if _FILTER_NAME.match(e.name):
                    with contextlib.suppress(OSError):
                        if e.stat(follow_symlinks=False).st_mtime_ns < oldest_kept:
                            os.unlink(e.path)


def _intact(path: Path, name: str) -> bool:
    """``path`` is a regular file whose content has the name ``name``."""
    try:
        return _filter_name(path.read_bytes()) == name
    except OSError:
        return False


def _filter_name(data: bytes | bytearray) -> str:
    """A filter file's name: its content's SHA-256 prefix."""
    return "bloom-" + hashlib.sha256(data).hexdigest()[:32] + ".bin"


@dataclass
class VerifiedChain:
    """A local chain, verified: its newest blocks walked, the rest known by its facts.

    Attributes:
        reader: the dataset.
        walked: the blocks walked in this run, head first; down to the Seed when
            ``complete``, else down to (and including) a cached, verified ancestor.
        complete: ``walked`` is the whole chain.
        facts: the facts at the head.
        dataset_id: the Seed's dataset ID.
        base: the cached facts of the oldest walked block (None when ``complete`` from
            the start): its filter covers every object below the walked blocks.
        cache: the cache the chain was loaded with (:meth:`facts_at` asks it).
        links: reads the linked objects of the dataset's data files (ODF RFC-017).
        discovery: the discovery facts of the whole chain, when the load walked all of it
            holding no block (a first publish: its documents list every data file).
    """

    reader: DatasetReader
    walked: list[ChainEntry]
    complete: bool
    facts: ChainFacts
    dataset_id: DatasetId
    base: ChainFacts | None = None
    cache: ChainCache | None = field(default=None, repr=False)
    _objects: Sequence[DatasetObject] | None = field(default=None, repr=False)
    links: LinkSource | None = field(default=None, repr=False)
    discovery: DiscoveryFacts | None = field(default=None, repr=False)

    @property
    def columns_below(self) -> tuple[str, ...]:
        """The ``ObjectLink`` columns in force under the oldest walked block (none when the
        walk reached the Seed)."""
        return self.base.link_columns if self.base is not None and not self.complete else ()

    @property
    def head(self) -> bytes:
        """The head hash."""
        return self.walked[0].hash

    def whole(self) -> list[ChainEntry]:
        """The whole chain, head first (walked on from the oldest walked block when needed;
        every block re-hashed, its chain rules were checked when it was cached)."""
        if not self.complete:
            last = self.walked[-1]
            if last.block.prev_block_hash is not None:
                self.walked.extend(walk_chain(self.reader, last.block.prev_block_hash))
            self.complete = True
        return self.walked

    def find(self, h: bytes) -> int | None:
        """Position of ``h`` in the chain (0 = head), walking further back only until it is
        found or the Seed is reached."""
        for i, e in enumerate(self.walked):
            if e.hash == h:
                return i
        if self.complete:
            return None
        last = self.walked[-1]
        if last.block.prev_block_hash is not None:
            for e in walk_chain(self.reader, last.block.prev_block_hash):
                self.walked.append(e)
                if e.hash == h:
                    return len(self.walked) - 1
        self.complete = True
        return None

    def facts_at(self, h: bytes) -> ChainFacts | None:
        """The cached facts of ``h``, a block of this chain (its head, its base, or a head
        verified before, such as the one a target holds); None when not cached."""
        for known in (self.facts, self.base):
            if known is not None and known.head == h:
                return known
        got = self.cache.get(h) if self.cache is not None else None
        return got if got is not None and got.dataset_id == self.facts.dataset_id else None

    def objects(self) -> Sequence[DatasetObject]:
        """Every object of the chain (``iter_objects`` of the whole chain; walked once), kept
        packed (:class:`~odfweb3.odf.chain.ObjectList`)."""
        if self._objects is None:
            self._objects = ObjectList(iter_objects(self._streamed(), self.links))
        return self._objects

    def _streamed(self) -> Iterator[ChainEntry]:
        """The whole chain, head first, the blocks below ``walked`` read (and re-hashed) as
        they are yielded and not kept: listing the objects of a chain whose head was cached
        (a publish to a second target) held every decoded block."""
        yield from self.walked
        last = self.walked[-1]
        if not self.complete and last.block.prev_block_hash is not None:
            yield from walk_chain(self.reader, last.block.prev_block_hash)

    def __iter__(self) -> Iterator[ChainEntry]:
        return iter(self.whole())

    def orphans(self) -> tuple[str, ...]:
        """Files in ``data/`` that no block and no ``ObjectLink`` names (never published).

        Counted first against the facts (distinct data files and linked objects): the
        objects are listed, the whole chain walked, only when ``data/`` holds more names.
        """
        names = data_names(self.reader)
        if len(names) <= self.facts.data_files + self.facts.linked:
            return ()
        named = {o.hash for o in self.objects() if o.kind in ("data", "linked")}
        return data_orphans(self.reader, named, names)


class _CachedBelow(Exception):
    """The streaming walk met a cached head (:func:`_load_streaming`)."""


def _load_streaming(
    reader: DatasetReader,
    newest: list[ChainEntry],
    rest: Iterator[ChainEntry],
    cache: ChainCache | None,
    links: LinkSource,
) -> VerifiedChain | None:
    """:func:`load_chain` of a whole chain, its ``newest`` blocks walked already and the
    others still to come from ``rest``, keeping none of those decoded (a first
    publish of 100,000 blocks held 117 MB of them): the rules are checked walking back
    (:class:`~odfweb3.odf.validate.ChainRulesBackwards`, the same verdict as
    :func:`~odfweb3.odf.validate.check_chain_rules`), the facts gathered the same way
    (:class:`~odfweb3.odf.facts.FactsWalk`) and the objects listed as the walk goes. The
    chain keeps ``newest`` (``whole()`` walks again when asked). None when a cached head
    turns up (the caller walks again, holding the blocks above it).

    Raises:
        IntegrityError / FormatError / NotFound: the dataset is invalid; nothing is sent.
    """
    rules = ChainRulesBackwards()
    walk = FactsWalk()
    # A first publish renders every data file in its discovery documents: their facts are
    # gathered by this walk too, not by a second walk decoding the chain again.
    discovery = DiscoveryWalk()

    def entries() -> Iterator[ChainEntry]:
        for e in newest:
            rules.feed(e)
            walk.feed(e)
            discovery.feed(e)
            yield e
        for e in rest:
            if cache is not None and cache.get(e.hash) is not None:
                raise _CachedBelow
            rules.feed(e)
            walk.feed(e)
            discovery.feed(e)
            yield e

    try:
        objects = ObjectList(iter_objects(entries(), links))
    except _CachedBelow:
        return None
    if not rules.finish():
        # Say what is wrong as a whole walk does (an invalid dataset: memory is no concern).
        whole = list(walk_chain(reader))
        violations = check_chain_rules(list(reversed(whole)))
        what = str(violations[0]) if violations else "a chain rule is broken"
        raise IntegrityError(
            f"{reader.root}: invalid dataset: {what}; "
            "run odfweb3 validate for every problem (nothing was published)"
        )
    facts = walk.facts(objects)
    chain = VerifiedChain(
        reader,
        newest,
        False,
        facts,
        DatasetId.from_bytes(facts.dataset_id),
        None,
        cache,
        _objects=objects,
        links=links,
        discovery=discovery.facts(),  # the rules passed: the walk ended at the Seed
    )
    if cache is not None:
        cache.put(facts)
    return chain


def load_chain(reader: DatasetReader, cache: ChainCache | None = None) -> VerifiedChain:
    """Walk the chain from its head down to a cached verified head (or the Seed) and check
    every block walked against every chain rule, continued from the cached state.

    The new head's facts are cached (when ``cache`` is given).

    Every new data file's ``ObjectLink`` columns are read (ODF RFC-017): a linked object
    missing, or a data file that cannot be read for them, refuses the dataset.

    Raises:
        IntegrityError / FormatError / NotFound: the dataset is invalid; nothing is sent.
    """
    links = local_links(reader)
    walked: list[ChainEntry] = []
    base: ChainFacts | None = None
    walk = walk_chain(reader)
    for entry in walk:
        walked.append(entry)
        if cache is not None:
            base = cache.get(entry.hash)
            if base is not None:
                break
        if len(walked) >= HELD:
            # No cached head among the newest blocks: most likely none at all (a first
            # publish), so the rest of the walk keeps no decoded block.
            streamed = _load_streaming(reader, walked, walk, cache, links)
            if streamed is not None:
                return streamed
            # A cached head further down after all: walk again, holding the blocks above it.
            walked, base = [], None
            for entry in walk_chain(reader):
                walked.append(entry)
                base = cache.get(entry.hash) if cache is not None else None
                if base is not None:
                    break
            break
    new: Sequence[ChainEntry] = walked[:-1] if base is not None else walked
    after = None
    if base is not None:
        tip = walked[-1]
        after = ChainState(tip, base.rules)
    violations = check_chain_rules(list(reversed(new)), after=after)
    if violations:
        raise IntegrityError(
            f"{reader.root}: invalid dataset: {violations[0]}; "
            "run odfweb3 validate for every problem (nothing was published)"
        )
    added: list[DatasetObject] = []
    if base is not None:
        added = list(iter_objects(new, links, base.link_columns))
    facts = extend_facts(base, new, objects=added) if base is not None else None
    complete = base is None
    if facts is None:
        if not complete:
            last = walked[-1]
            if last.block.prev_block_hash is not None:
                walked.extend(walk_chain(reader, last.block.prev_block_hash))
            complete = True
        facts = facts_of_chain(walked, links)
    chain = VerifiedChain(
        reader,
        walked,
        complete,
        facts,
        DatasetId.from_bytes(facts.dataset_id),
        base,
        cache,
        links=links,
    )
    if cache is not None and (base is None or base.head != facts.head):
        if base is not None and not complete:  # extended: the filter only gained ``new``'s
            cache.put(facts, base, added)
        else:
            cache.put(facts)
    return chain
