"""What this machine published, and what the nodes say of it (``odfweb3 status``).

One odd entry never hides the others: an interrupted upload (its checkpoint beside the
states, whole or half written) is shown as "upload in progress", a damaged state file is
one warning, and every other dataset and target is still reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from odfweb3.api.hooks import QUIET, Hooks
from odfweb3.backends import StateFacts
from odfweb3.config import Config
from odfweb3.errors import FormatError, OdfWeb3Error

if TYPE_CHECKING:
    from odfweb3.backends import Backend
    from odfweb3.publish.offline import OfflineEntry
    from odfweb3.publish.state import PublishState, UnfinishedUpload

__all__ = [
    "EXPIRY_WARNING",
    "IN_PROGRESS",
    "PublishStatus",
    "StatusReport",
    "TargetRow",
    "expiry_text",
    "remote_names",
    "saved_states",
    "status",
    "status_report",
]


@dataclass(frozen=True)
class PublishStatus:
    """One saved publish: which dataset, where, which head, and what its backend says the
    state holds (name, sequence, validity, what to share).

    Attributes:
        dataset_id: ``did:odf:…``.
        target: the target name as saved (``car:/abs/dir``, ``ipfs:http://…``).
        head: the head published there (multihash bytes).
        locator: where a reader finds it (``ipns://NAME``, ``ar://RECORD``), if anywhere.
        facts: the backend's reading of the state (:class:`odfweb3.backends.StateFacts`).
    """

    dataset_id: str
    target: str
    head: bytes | None
    locator: str | None
    facts: StateFacts


def status(*, config: Config, dataset: str | Path | None = None) -> tuple[PublishStatus, ...]:
    """Every publish saved here (node targets, then offline ones), or only those of the
    local dataset ``dataset``. Read from the state files alone: no node is asked."""
    from odfweb3.backends import backend_for_target, state_facts
    from odfweb3.publish.dataset_id import chain_cache, dataset_id_of
    from odfweb3.publish.offline import OfflineIndex, known_states
    from odfweb3.publish.state import StateStore

    if dataset is not None:
        did, _ = dataset_id_of(dataset, chain_cache(config.state_dir))
        states = known_states(config.state_dir, did)
    else:
        states = list(StateStore(config.state_dir).all())
        states += [s for _, s, _ in OfflineIndex(config.state_dir).states() if s is not None]
    out = []
    for s in states:
        backend = backend_for_target(s.target)
        locator = backend.record_locator(s) if backend is not None else None
        out.append(PublishStatus(s.dataset_id, s.target, s.head, locator, state_facts(s)))
    return tuple(out)


#: What ``status`` says of an interrupted upload.
IN_PROGRESS: Final = "upload in progress — run `publish` to resume"
#: A name record expiring sooner than this is warned about.
EXPIRY_WARNING: Final = timedelta(hours=24)


@dataclass(frozen=True)
class TargetRow:
    """One dataset on one target, as ``status`` shows it: the saved state, the local head,
    and what the node or service says when it was asked.

    Attributes:
        dataset_id: ``did:odf:…``.
        target: the target name as saved.
        remotes: the remotes (``odfweb3 remote add``) naming the target.
        local_head: the local dataset's head (multihash text), when it is known here.
        published_head: the head published there (multihash text).
        up_to_date: the local head is the published one.
        root: the publish's root (CID or manifest), as saved.
        name: the IPNS name; record_id: the upload record (Arweave).
        sequence: the name record's sequence; validity: its expiry (ISO 8601; the node's
            when it reported a newer one).
        mode: how the node took the record.
        pending: an unfinished publish is checkpointed.
        key_envelope: the key envelope's locator (encrypted publishes).
        local_path: the local dataset's directory; kamu_name: its kamu name, in a workspace.
        objects: the published head's object count, linked_objects the linked among them,
            when this machine verified that head.
        node: the node's view (``{"error": …}`` when it did not answer), when asked.
        upload_in_progress: the checkpoint of an interrupted upload.
        uploads: the uploads with their confirmation state (Arweave), when asked.
        pin: the pinning service's pin (``pinning:NAME``).
        expires_soon: the record expires within :data:`EXPIRY_WARNING` (or has expired).
        checkpoint_only: nothing published yet, only an interrupted first upload.
    """

    dataset_id: str
    target: str
    remotes: tuple[str, ...] = ()
    local_head: str | None = None
    published_head: str | None = None
    up_to_date: bool = False
    root: str | None = None
    name: str | None = None
    record_id: str | None = None
    sequence: int | None = None
    validity: str | None = None
    mode: str | None = None
    pending: bool = False
    key_envelope: str | None = None
    local_path: str | None = None
    kamu_name: str | None = None
    objects: int | None = None
    linked_objects: int | None = None
    node: Mapping[str, Any] | None = None
    upload_in_progress: str | None = None
    uploads: tuple[Mapping[str, Any], ...] | None = None
    pin: Mapping[str, Any] | None = None
    expires_soon: bool = False
    checkpoint_only: bool = False

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` form of one ``status`` row (docs/cli.md)."""
        row: dict[str, Any] = {
            "datasetId": self.dataset_id,
            "target": self.target,
            "remotes": list(self.remotes),
            "localHead": self.local_head,
            "publishedHead": self.published_head,
            "upToDate": self.up_to_date,
            "root": self.root,
            "name": self.name,
            "recordId": self.record_id,
            "sequence": self.sequence,
            "validity": self.validity,
            "mode": self.mode,
            "pending": self.pending,
            "keyEnvelope": self.key_envelope,
            "localPath": self.local_path,
            "kamuName": self.kamu_name,
        }
        if not self.checkpoint_only:
            row |= {"objects": self.objects, "linkedObjects": self.linked_objects}
        row["node"] = None if self.node is None else dict(self.node)
        if self.upload_in_progress is not None:
            row["uploadInProgress"] = self.upload_in_progress
        if self.uploads is not None:
            row["uploads"] = [dict(u) for u in self.uploads]
        if self.pin is not None:
            row["pin"] = dict(self.pin)
        row["expiresSoon"] = self.expires_soon
        return row


@dataclass(frozen=True)
class StatusReport:
    """:func:`status_report`'s answer.

    Attributes:
        targets: one row per dataset and target.
        damaged: the state files (or ``publish.json``) that could not be read, with why.
        warnings: how many things were warned about (damaged entries, records expiring).
        now: the time expiries were judged at.
    """

    targets: tuple[TargetRow, ...]
    damaged: tuple[tuple[str, OdfWeb3Error], ...]
    warnings: int
    now: datetime

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` form of ``status``."""
        return {
            "targets": [r.to_json() for r in self.targets],
            "warnings": self.warnings,
            "damaged": [{"path": path, "error": str(exc)} for path, exc in self.damaged],
        }

    @property
    def exit_code(self) -> int:
        """``status --strict``'s exit status: the first damaged entry's, else 0."""
        return self.damaged[0][1].exit_code if self.damaged else 0

    @property
    def unconfirmed(self) -> tuple[str, ...]:
        """One line per upload waited for past its deadline and still not confirmed (a
        bundler that has not finalized it: ``arweave.finalize_timeout_s``); the command
        then exits :attr:`odfweb3.errors.NotYetConfirmed.exit_code` (75, try again later)."""
        return tuple(
            str(u["unconfirmed"])
            for r in self.targets
            for u in r.uploads or ()
            if u.get("unconfirmed")
        )


def expiry_text(validity: str | None, now: datetime) -> tuple[str, bool]:
    """A record's expiry as shown (``… (in 3.0 h)``, ``… (EXPIRED)``), and whether it is soon."""
    if not validity:
        return "-", False
    expires = datetime.fromisoformat(validity)
    left = expires - now
    soon = left < EXPIRY_WARNING
    if left.total_seconds() <= 0:
        return f"{validity} (EXPIRED)", True
    hours = left.total_seconds() / 3600
    return f"{validity} (in {hours:.1f} h)", soon


def remote_names(config: Config, target_name: str) -> list[str]:
    """The remotes naming the target called ``target_name`` (e.g. ``car:/abs/out``)."""
    from odfweb3.backends import opened_name
    from odfweb3.publish.remotes import Remotes

    remotes = Remotes(config.state_dir).load()
    return [n for n, t in remotes.items() if opened_name(t, config) == target_name]


@dataclass
class _Odd:
    """What a scan read past: damaged state files (path, error) and unfinished uploads."""

    damaged: list[tuple[str, OdfWeb3Error]] = field(default_factory=list)
    unfinished: list[UnfinishedUpload] = field(default_factory=list)


@dataclass
class _Saved:
    """The states :func:`_saved` found, with what ``status`` shows beside them."""

    states: list[PublishState]
    local: dict[str, bytes]  # dataset ID -> the local dataset's head
    lost: list[tuple[OfflineEntry, str]]  # offline entries no longer readable, and why
    sources: dict[tuple[str, str], str]  # (dataset ID, target) -> local dataset directory


def saved_states(config: Config, dataset: str | Path | None = None) -> list[PublishState]:
    """The publish states saved here (node targets, then offline ones), or only those of the
    local dataset ``dataset``.

    Raises:
        FormatError: a damaged state file.
    """
    return _saved(config, dataset).states


def _saved(config: Config, dataset: str | Path | None, odd: _Odd | None = None) -> _Saved:
    """Saved states (node targets) and offline ones (car:/bundle: publish.json files).

    With ``odd`` (``status``), a damaged state file is added to it and skipped, and the
    unfinished uploads are listed there; without, a damaged one is raised. The offline
    index remembers where an offline publish came from; its state does not say.
    """
    from odfweb3.publish.dataset_id import chain_cache, dataset_id_of
    from odfweb3.publish.offline import OfflineIndex
    from odfweb3.publish.state import StateStore

    store = StateStore(config.state_dir)
    local: dict[str, bytes] = {}
    if odd is None:
        states = store.all()
    else:
        scan = store.scan()
        states = scan.states
        odd.damaged += [(str(p), e) for p, e in scan.damaged]
        odd.unfinished += scan.unfinished
    lost: list[tuple[OfflineEntry, str]] = []
    sources: dict[tuple[str, str], str] = {}
    for entry, state, reason in OfflineIndex(config.state_dir).states():
        if state is None:
            lost.append((entry, reason or ""))
            continue
        if entry.source:
            sources[(state.dataset_id, state.target)] = entry.source
        states.append(state)
    if dataset is not None:
        dataset_id, head = dataset_id_of(dataset, chain_cache(config.state_dir))
        local[dataset_id] = head
        states = [s for s in states if s.dataset_id == dataset_id]
        lost = [(e, r) for e, r in lost if e.dataset_id == dataset_id]
        if odd is not None:
            # A checkpoint too damaged to name its dataset is shown with every dataset.
            odd.unfinished = [u for u in odd.unfinished if u.dataset_id in (None, dataset_id)]
    return _Saved(states, local, lost, sources)


def _local_head(state: PublishState, local: dict[str, bytes], source: str | None) -> bytes | None:
    from odfweb3.odf.layout import DatasetReader

    if state.dataset_id in local:
        return local[state.dataset_id]
    if source and Path(source, "refs", "head").is_file():
        try:
            return DatasetReader.open(str(source)).head()
        except OdfWeb3Error:
            return None
    return None


def _query_each(backend: Backend, states: list[PublishState], config: Config) -> list[Any]:
    """``backend.query_status`` of ``states``; when the batch fails, state by state, so
    one state the backend cannot read costs only its own row (``node: {error}``)."""
    from odfweb3.backends import TargetStatus

    try:
        return list(backend.query_status(states, config))
    except OdfWeb3Error:
        pass
    out: list[Any] = []
    for state in states:
        try:
            out += backend.query_status([state], config)
        except OdfWeb3Error as exc:
            out.append(TargetStatus(node={"error": str(exc)}))
    return out


def _key(dataset_id: str, target: str) -> tuple[str, str]:
    return (dataset_id, target)


def _node_views(
    config: Config, states: list[PublishState], rows: dict[tuple[str, str], TargetRow]
) -> None:
    """Ask each state's backend what its node or gateway holds (records, uploads)."""
    from odfweb3.backends import all_backends

    for backend in all_backends():
        mine = [s for s in states if s.target.partition(":")[0] in backend.target_schemes]
        for state, seen in zip(mine, _query_each(backend, mine, config), strict=True):
            if seen is None:
                continue
            key = _key(state.dataset_id, state.target)
            row = rows[key]
            if seen.node is not None:
                row = replace(row, node=seen.node)
            if seen.validity is not None:
                row = replace(row, validity=seen.validity)
            if seen.uploads is not None:
                row = replace(row, uploads=tuple(seen.uploads))
            rows[key] = row


def _pins(
    config: Config,
    env: Mapping[str, str],
    states: list[PublishState],
    rows: dict[tuple[str, str], TargetRow],
    online: bool,
) -> None:
    """Per pinning service (target ``pinning:NAME``): the pin's status, asked of the service
    (``GET /pins/{requestid}``) unless offline; the saved status otherwise."""
    from odfweb3.backends import PinReporter, all_backends

    for backend in all_backends():
        if not isinstance(backend, PinReporter):
            continue
        try:
            pins = backend.pin_status(states, config, env, online=online)
        except OdfWeb3Error:
            pins = []
            for state in states:  # state by state: one unreadable state is its row only
                try:
                    pins += backend.pin_status([state], config, env, online=online)
                except OdfWeb3Error as exc:
                    pins.append({"status": None, "error": str(exc)})
        for state, pin in zip(states, pins, strict=True):
            if pin is not None:
                key = _key(state.dataset_id, state.target)
                rows[key] = replace(rows[key], pin=pin)


def _unfinished_rows(
    config: Config,
    unfinished: list[UnfinishedUpload],
    rows: dict[tuple[str, str], TargetRow],
    hooks: Hooks,
) -> None:
    """An interrupted upload is shown, never an error: on its target's row when there is
    one, else on a row of its own (a first publish); a checkpoint too damaged to say whose
    it is, as one warning line (the next publish of that dataset starts it again)."""
    for up in unfinished:
        if up.dataset_id is None or up.target is None:
            why = f" (its checkpoint {up.path} is half written)" if up.error else ""
            hooks.warn(f"{IN_PROGRESS}{why}")
            continue
        key = _key(up.dataset_id, up.target)
        row = rows.get(key) or TargetRow(
            up.dataset_id,
            up.target,
            tuple(remote_names(config, up.target)),
            checkpoint_only=True,
        )
        rows[key] = replace(row, pending=True, upload_in_progress=str(up.path))


def status_report(
    *,
    config: Config,
    dataset: str | Path | None = None,
    online: bool = True,
    forget_gone: bool = False,
    env: Mapping[str, str] | None = None,
    hooks: Hooks = QUIET,
    now: datetime | None = None,
) -> StatusReport:
    """What is published where (``odfweb3 status``): per dataset and target the saved state
    against the local head, and, ``online``, what each node or service says (records,
    uploads, pins). One odd entry never hides the others: a damaged state file, an offline
    directory gone or unreadable, an interrupted upload are each one ``hooks.warn`` line
    (and counted in the report), every other entry still shown. ``forget_gone`` first
    forgets the offline targets whose directory is gone or holds another dataset.
    ``env`` is where a pinning service's token is read (``ODFWEB3_PINNING_<NAME>_TOKEN``).
    """
    from odfweb3.backends import state_facts
    from odfweb3.odf.kamu_workspace import kamu_alias_of
    from odfweb3.odf.multihash import multihash_to_str
    from odfweb3.publish.dataset_id import chain_cache
    from odfweb3.publish.offline import OfflineIndex

    if forget_gone:
        for entry, reason in OfflineIndex(config.state_dir).forget_stale():
            hooks.warn(f"{entry.dataset_id} on {entry.target}: forgotten ({reason})")
    odd = _Odd()
    saved = _saved(config, dataset, odd)
    now = now or datetime.now(UTC)
    for _path, exc in odd.damaged:  # state files: one line each, the others still shown
        hooks.warn(f"{exc} (skipped)")
    for entry, reason in saved.lost:
        stale = "is gone" in reason or "now holds" in reason
        hint = "; status --forget-gone stops listing it" if stale else ""
        hooks.warn(f"{entry.dataset_id} on {entry.target}: {reason}{hint}")
        if not stale:  # there, but unreadable: damaged
            odd.damaged.append((str(entry.directory / "publish.json"), FormatError(reason)))
    readable: list[PublishState] = []
    rows: dict[tuple[str, str], TargetRow] = {}
    cache = chain_cache(config.state_dir)
    for state in saved.states:
        try:
            facts = state_facts(state)
        except OdfWeb3Error as exc:  # a field of the wrong type: this entry only
            odd.damaged.append((state.target, exc))
            hooks.warn(f"{state.dataset_id} on {state.target}: {exc} (skipped)")
            continue
        readable.append(state)
        source = facts.source or saved.sources.get((state.dataset_id, state.target))
        local_head = _local_head(state, saved.local, source)
        path = dataset if state.dataset_id in saved.local else source
        # what the published head holds, when this machine verified it (the cache's facts)
        held = cache.get(state.head) if state.head else None
        key = _key(state.dataset_id, state.target)
        if key in rows:
            # Two states of one dataset and target (a node state and an offline one):
            # both shown, as before; later lookups find the first.
            key = (state.dataset_id, f"{state.target}\0{len(rows)}")
        rows[key] = TargetRow(
            dataset_id=state.dataset_id,
            target=state.target,
            remotes=tuple(remote_names(config, state.target)),
            local_head=multihash_to_str(local_head) if local_head else None,
            published_head=multihash_to_str(state.head) if state.head else None,
            up_to_date=local_head is not None and local_head == state.head,
            root=state.locator,
            name=facts.name,
            record_id=facts.record_id,
            sequence=facts.sequence,
            validity=facts.validity,
            mode=facts.mode,
            pending=facts.pending,
            key_envelope=facts.key_envelope,
            local_path=str(Path(path).absolute()) if path else None,
            kamu_name=kamu_alias_of(Path(path)) if path else None,
            objects=None if held is None else held.objects,
            linked_objects=None if held is None else held.linked,
        )
    _unfinished_rows(config, odd.unfinished, rows, hooks)
    if online:
        _node_views(config, readable, rows)
    _pins(config, env or {}, readable, rows, online=online)
    warnings = len(odd.damaged)
    out: list[TargetRow] = []
    for row in rows.values():
        text, soon = expiry_text(row.validity, now)
        if soon:
            warnings += 1
            hooks.warn(
                f"{row.dataset_id} on {row.target}: record expires {text}; run odfweb3 republish"
            )
        node = row.node
        if node is not None and "sequence" in node and node["sequence"] != row.sequence:
            hooks.warn(
                f"{row.dataset_id} on {row.target}: the node's record has sequence "
                f"{node['sequence']}, the saved state {row.sequence}"
            )
        out.append(replace(row, expires_soon=soon))
    return StatusReport(tuple(out), tuple(odd.damaged), warnings, now)
