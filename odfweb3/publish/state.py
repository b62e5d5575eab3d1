"""Publish state: what odfweb3 last published, per dataset and target.

One JSON file per (dataset, target), written with temp file + fsync + rename so
a crash leaves the old state or the new one, never half of either. State is a
cache of what the network holds: adapters check it against the network before
trusting it, and rebuild it from the network when it is missing or stale.

Never stored here: keys, wallets, passphrases. The ``objects`` map holds only
public locators (CIDs, transaction ids) of public objects.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar

from odfweb3.atomic_file import write_file_atomic
from odfweb3.errors import FormatError, NotFound
from odfweb3.foreign_json import read_foreign_json_file
from odfweb3.odf.multihash import multihash_from_str, multihash_to_str

__all__ = [
    "CHECKPOINT_SUFFIX",
    "MAX_CHECKPOINT_SIZE",
    "RAW_CODEC",
    "STATE_VERSION",
    "E",
    "JSONMap",
    "PublishState",
    "R",
    "RawState",
    "StateCodec",
    "StateScan",
    "StateStore",
    "UnfinishedUpload",
    "load_state_file",
    "load_summary_file",
    "save_state_file",
    "state_json_text",
]

STATE_VERSION: Final = 1
# publish.json / a state file: a CAR list and a few hashes; bounded like any foreign JSON
# (a bundle:DIR or car:DIR may come from someone else).
MAX_STATE_SIZE: Final = 64 << 20
_INDENT_MAX: Final = 256 << 10  # a state file larger than this is written compact
# Beside a state file ``<key>.json``: the upload checkpoint of an unfinished publish to that
# target (``<key>.upload.json``: the Arweave gateway target's transaction being posted). Its
# body is the adapter's; the core reads only ``datasetId`` and ``target`` from it.
CHECKPOINT_SUFFIX: Final = ".upload.json"
_KEY_LEN: Final = 24
_STATE_NAME: Final = re.compile(rf"[0-9a-f]{{{_KEY_LEN}}}\.json")
_CHECKPOINT_NAME: Final = re.compile(rf"[0-9a-f]{{{_KEY_LEN}}}{re.escape(CHECKPOINT_SUFFIX)}")
# An upload checkpoint (a signed transaction, an objects map of older versions), read bounded.
MAX_CHECKPOINT_SIZE: Final = 64 << 20


# A JSON object as read from a state file: its values are whatever the file held, checked
# by whoever reads them (the adapters' ``parse_*``).
JSONMap = dict[str, Any]

if TYPE_CHECKING:
    from typing_extensions import TypeVar as _DefaultTypeVar

    # A state's typed ``record`` and ``extra``: the adapter's dataclasses; left out, the
    # JSON objects of the file (what the core and ``status`` read).
    R = _DefaultTypeVar("R", default=JSONMap)
    E = _DefaultTypeVar("E", default=JSONMap)
else:  # typing's TypeVar takes a default from Python 3.13 on; the checker reads the above
    R = TypeVar("R")
    E = TypeVar("E")


def _empty() -> Any:
    # The default of a state's record and extra: an empty JSON object (a typed state always
    # passes its own).
    return {}


@dataclass(frozen=True)
class PublishState(Generic[R, E]):
    """The last completed publish of one dataset to one target.

    Generic over the adapter's typed ``record`` and ``extra`` (``PublishState[R, E]``): a
    target holds its own dataclasses from ``inspect`` to ``save``, parsed once where its
    state home reads the file and serialized once where it writes it (a
    :class:`StateCodec`). ``PublishState`` alone is the file's form (:data:`RawState`),
    which is what the core, ``status`` and ``history`` read: they use only the fields the
    core owns (dataset ID, target, head, locator, objects) and ask the backend for the rest.

    Attributes:
        dataset_id: ``did:odf:…``.
        target: target name (``ipfs:http://…``, ``car:/path``, ``arweave:…``).
        head: the head hash that was published.
        locator: where the whole dataset is (root CID, manifest id).
        record: the name record's public facts (IPNS name, sequence, validity; Arweave
            upload id) — adapter-defined.
        objects: object path -> adapter-defined locator facts (e.g. ``{"cid", "tsize"}``).
        extra: adapter-defined public facts (directory node CIDs, pending uploads).
    """

    dataset_id: str
    target: str
    head: bytes | None = None
    locator: str | None = None
    record: R = field(default_factory=_empty)
    objects: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    extra: E = field(default_factory=_empty)

    def evolve(self, **changes: Any) -> PublishState[R, E]:
        """A copy with some fields changed."""
        return replace(self, **changes)

    def to_json(self: PublishState[JSONMap, JSONMap]) -> JSONMap:
        """The on-disk JSON form (of the file's form: a typed state is serialized by its
        :class:`StateCodec` first)."""
        return {
            "version": STATE_VERSION,
            "datasetId": self.dataset_id,
            "target": self.target,
            "head": multihash_to_str(self.head) if self.head else None,
            "locator": self.locator,
            "record": self.record,
            "objects": self.objects,
            "extra": self.extra,
        }

    @classmethod
    def from_json(cls, data: Any, where: str) -> PublishState[JSONMap, JSONMap]:
        """Parse the on-disk form (raises FormatError naming ``where``)."""
        if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
            raise FormatError(f"{where}: not an odfweb3 publish state (version {STATE_VERSION})")
        try:
            head = data.get("head")
            return PublishState(
                dataset_id=str(data["datasetId"]),
                target=str(data["target"]),
                head=multihash_from_str(head) if head else None,
                locator=data.get("locator"),
                record=dict(data.get("record") or {}),
                # JSON objects are dicts already: no copy of 100,000 entries.
                objects={
                    str(k): v if type(v) is dict else dict(v)
                    for k, v in (data.get("objects") or {}).items()
                },
                extra=dict(data.get("extra") or {}),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise FormatError(f"{where}: malformed publish state ({exc})") from None


RawState = PublishState[JSONMap, JSONMap]
"""A state as its file holds it: ``record`` and ``extra`` the JSON objects."""

_R = TypeVar("_R")
_E = TypeVar("_E")


@dataclass(frozen=True)
class StateCodec(Generic[_R, _E]):
    """An adapter's typed reading of its states' ``record`` and ``extra``: its pure
    ``parse_*`` (FormatError naming ``where``) and ``serialize_*`` pair, with
    ``serialize(parse(x)) == x`` for every state it writes (the files stay byte for byte
    what they were). A state home applies it once where it reads the file, once where it
    writes it.
    """

    parse_parts: Callable[[Mapping[str, Any], Mapping[str, Any], str], tuple[_R, _E]]
    serialize_parts: Callable[[_R, _E], tuple[JSONMap, JSONMap]]

    def parse(self, raw: RawState, where: str) -> PublishState[_R, _E]:
        """The typed state of a file's state (FormatError naming ``where``)."""
        record, extra = self.parse_parts(raw.record, raw.extra, where)
        return PublishState(
            raw.dataset_id, raw.target, raw.head, raw.locator, record, raw.objects, extra
        )

    def serialize(self, state: PublishState[_R, _E]) -> RawState:
        """The file's form of a typed state (``objects`` as they are)."""
        record, extra = self.serialize_parts(state.record, state.extra)
        return PublishState(
            state.dataset_id, state.target, state.head, state.locator, record, state.objects, extra
        )


def _raw_parts(
    record: Mapping[str, Any], extra: Mapping[str, Any], where: str
) -> tuple[JSONMap, JSONMap]:
    return dict(record), dict(extra)


def _raw_json(record: JSONMap, extra: JSONMap) -> tuple[JSONMap, JSONMap]:
    return record, extra


RAW_CODEC: Final = StateCodec(_raw_parts, _raw_json)
"""The file's form as it is: for a target that reads its JSON maps itself."""


def state_json_text(doc: dict[str, Any]) -> str:
    """JSON text of a state document: indented while small, compact when large.

    ``json`` only uses its C encoder without indentation; a state with tens of
    thousands of objects takes seconds to indent in pure Python. A state whose objects
    are elsewhere (an object index) can still be large (directory blocks, shard tables):
    above 256 KiB it is compact too.
    """
    objects = doc.get("objects")
    if isinstance(objects, dict) and len(objects) > 1000:
        return json.dumps(doc, sort_keys=True)
    compact = json.dumps(doc, sort_keys=True)
    return compact if len(compact) > _INDENT_MAX else json.dumps(doc, indent=1, sort_keys=True)


def save_state_file(path: Path, state: PublishState) -> None:
    """Write state atomically (temp file + fsync + rename; see :mod:`odfweb3.atomic_file`)."""
    text = state_json_text(state.to_json()) + "\n"
    write_file_atomic(path, text.encode("utf-8"))


def load_summary_file(path: Path) -> tuple[PublishState | None, dict[str, Any]]:
    """An offline target's ``publish.json``: its state and the whole document.

    Returns ``(None, {})`` when there is none.

    Raises:
        FormatError: the file is unreadable or not a publish state.
    """
    try:
        raw = read_foreign_json_file(path, max_bytes=MAX_STATE_SIZE, expect=dict)
    except NotFound:
        return None, {}
    except FormatError as exc:
        raise FormatError(f"{exc}; move it away to publish afresh") from None
    return PublishState.from_json(raw, str(path)), raw


def load_state_file(path: Path) -> PublishState | None:
    """Read state, or None when there is none."""
    try:
        data = read_foreign_json_file(path, max_bytes=MAX_STATE_SIZE, expect=dict)
    except NotFound:
        return None
    except FormatError as exc:
        raise FormatError(f"{exc}; delete it to rebuild from the network") from None
    return PublishState.from_json(data, str(path))


@dataclass(frozen=True)
class UnfinishedUpload:
    """An upload checkpoint found beside the states: a publish that was interrupted (or is
    running now) and that the next ``publish`` resumes.

    Attributes:
        path: the checkpoint file.
        dataset_id / target: what it uploads (None: a checkpoint written before they were
            recorded, or one too damaged to say).
        error: why it could not be read (a half-written file), else None.
    """

    path: Path
    dataset_id: str | None = None
    target: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class StateScan:
    """Everything under a state directory, each entry read on its own (``status``): the
    states that read, the files that did not (with the one-line error), the unfinished
    uploads."""

    states: list[PublishState]
    damaged: list[tuple[Path, FormatError]]
    unfinished: list[UnfinishedUpload]


def _read_unfinished(path: Path) -> UnfinishedUpload:
    try:
        doc = read_foreign_json_file(path, max_bytes=MAX_CHECKPOINT_SIZE, expect=dict)
    except (FormatError, NotFound) as exc:
        return UnfinishedUpload(path, error=str(exc))
    did, target = doc.get("datasetId"), doc.get("target")
    return UnfinishedUpload(
        path,
        dataset_id=did if isinstance(did, str) else None,
        target=target if isinstance(target, str) else None,
    )


class StateStore:
    """Publish states under one directory: ``<dir>/<dataset key>/<target key>.json``, and
    beside a state the target's upload checkpoint (``<target key>.upload.json``) and
    side directories (``<target key>.index/``); only ``<key>.json`` files are states."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()[:_KEY_LEN]

    def path_for(self, dataset_id: str, target: str) -> Path:
        """Where the state of (dataset, target) lives."""
        return self.root / self._key(dataset_id) / f"{self._key(target)}.json"

    def checkpoint_path(self, dataset_id: str, target: str) -> Path:
        """Where an unfinished upload of (dataset, target) keeps its checkpoint (the
        adapter's document, with top-level ``datasetId`` and ``target``)."""
        return self.path_for(dataset_id, target).with_suffix(CHECKPOINT_SUFFIX)

    def _files(self, pattern: re.Pattern[str]) -> list[Path]:
        if not self.root.is_dir():
            return []
        return [p for p in sorted(self.root.glob("*/*.json")) if pattern.fullmatch(p.name)]

    def load(self, dataset_id: str, target: str) -> PublishState | None:
        """The saved state, or None."""
        return load_state_file(self.path_for(dataset_id, target))

    def save(self, state: PublishState) -> None:
        """Save atomically."""
        save_state_file(self.path_for(state.dataset_id, state.target), state)

    def all(self) -> list[PublishState]:
        """Every saved state (``republish --all``, ``history``).

        Raises:
            FormatError: a state file is damaged (:meth:`scan` reads past it).
        """
        out = []
        for p in self._files(_STATE_NAME):
            s = load_state_file(p)
            if s is not None:
                out.append(s)
        return out

    def scan(self) -> StateScan:
        """Every state, each read on its own: a damaged one is listed with its error and
        the others are still read; and the unfinished uploads' checkpoints (``status``)."""
        states: list[PublishState] = []
        damaged: list[tuple[Path, FormatError]] = []
        for p in self._files(_STATE_NAME):
            try:
                s = load_state_file(p)
            except FormatError as exc:
                damaged.append((p, exc))
                continue
            if s is not None:
                states.append(s)
        unfinished = [_read_unfinished(p) for p in self._files(_CHECKPOINT_NAME)]
        return StateScan(states, damaged, unfinished)
