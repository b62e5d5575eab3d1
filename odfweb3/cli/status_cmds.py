"""``odfweb3 status`` and ``odfweb3 republish``: what is published where, and keeping names alive.

IPNS records expire (their validity, 48 h by default). ``republish`` re-signs each
record with the same value and extension, sequence + 1 and a fresh validity, and
prints the next expiry — run it from cron well inside the lifetime::

    0 */12 * * *  odfweb3 republish --all --json >> ~/odfweb3-republish.log

``status`` shows, per dataset and target, the local head against the published
head, the root, the IPNS name, the record's sequence and expiry (from the node when
it answers, else from the saved state), and warns when a record expires within 24 h.
One odd entry never hides the others: an interrupted upload (its checkpoint beside the
states, whole or half written) is shown as "upload in progress", a damaged state file is
one warning line, and every other dataset and target is still reported (exit 0; with
``--strict``, the damaged entry's exit code once everything is shown).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from odfweb3.cli.text import key_values, shown_path, shown_target
from odfweb3.errors import FormatError, NotFound, OdfWeb3Error, UsageError

if TYPE_CHECKING:
    from odfweb3.cli.main import Context
    from odfweb3.publish.offline import OfflineEntry
    from odfweb3.publish.state import PublishState, UnfinishedUpload

__all__ = ["EXPIRY_WARNING", "register"]

EXPIRY_WARNING: Final = timedelta(hours=24)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``status`` and ``republish``."""
    s = sub.add_parser(
        "status",
        parents=[common],
        help="what is published where: heads, roots, names, record expiry",
        description="Per target: local head vs published head, root CID, IPNS name, record "
        "sequence and expiry (asks the node when it answers). Offline targets (car:DIR, "
        "bundle:DIR) are read from each directory's publish.json. Warns when a record "
        "expires within 24 hours, and when an offline directory is gone (--forget-gone "
        "then stops listing it).",
    )
    s.add_argument(
        "dataset",
        nargs="?",
        help="dataset directory, or its kamu name in a kamu workspace (default: every dataset)",
    )
    s.add_argument("--offline", action="store_true", help="do not ask the nodes")
    s.add_argument(
        "--strict",
        action="store_true",
        help="exit non-zero (65) when a publish state or publish.json could not be read; "
        "every readable entry is still shown",
    )
    s.add_argument(
        "--forget-gone",
        action="store_true",
        help="forget offline targets (car:DIR, bundle:DIR) whose publish.json is gone or now "
        "holds another dataset; nothing published is touched",
    )
    s.set_defaults(handler=_status)

    r = sub.add_parser(
        "republish",
        parents=[common],
        help="re-sign IPNS records before they expire (cron-friendly)",
        description="Re-sign and re-put each IPNS record with the same value, sequence + 1 "
        "and a new validity; prints the next expiry. Exit 0 only if every record was "
        "republished.",
    )
    r.add_argument("dataset", nargs="?", help="dataset directory (or use --all)")
    r.add_argument("--all", action="store_true", help="every dataset published to a node")
    r.add_argument(
        "--to", default=None, metavar="TARGET", help="only this target (ipfs or ipfs:URL)"
    )
    r.set_defaults(handler=_republish)


Sources = dict[tuple[str, str], str]  # (dataset ID, target) -> local dataset directory


@dataclass
class _Odd:
    """What ``status`` read past: damaged state files (path, error) and unfinished uploads."""

    damaged: list[tuple[str, OdfWeb3Error]] = field(default_factory=list)
    unfinished: list[UnfinishedUpload] = field(default_factory=list)


def _states(
    ctx: Context, dataset: str | None, odd: _Odd | None = None
) -> tuple[list[PublishState], dict[str, bytes], list[OfflineEntry], list[str], Sources]:
    """Saved states (node targets) and offline ones (car:/bundle: publish.json files).

    Returns the states, the local head of ``dataset``, the offline entries whose
    directory no longer holds their state, with the reason, and where the offline ones
    were published from (the offline index remembers it; their states do not say).
    With ``odd`` (``status``), a damaged state file is added to it and skipped, and the
    unfinished uploads are listed there; without, a damaged one is raised.
    """
    from odfweb3.publish.dataset_id import chain_cache as _chain_cache
    from odfweb3.publish.dataset_id import dataset_id_of
    from odfweb3.publish.offline import OfflineIndex
    from odfweb3.publish.state import StateStore

    store = StateStore(ctx.config.state_dir)
    local: dict[str, bytes] = {}
    if odd is None:
        states = store.all()
    else:
        scan = store.scan()
        states = scan.states
        odd.damaged += [(str(p), e) for p, e in scan.damaged]
        odd.unfinished += scan.unfinished
    lost: list[OfflineEntry] = []
    reasons: list[str] = []
    sources: Sources = {}
    for entry, state, reason in OfflineIndex(ctx.config.state_dir).states():
        if state is None:
            lost.append(entry)
            reasons.append(reason or "")
            continue
        if entry.source:
            sources[(state.dataset_id, state.target)] = entry.source
        states.append(state)
    if dataset is not None:
        dataset_id, head = dataset_id_of(dataset, _chain_cache(ctx.config.state_dir))
        local[dataset_id] = head
        states = [s for s in states if s.dataset_id == dataset_id]
        kept = [(e, r) for e, r in zip(lost, reasons, strict=True) if e.dataset_id == dataset_id]
        lost, reasons = [e for e, _ in kept], [r for _, r in kept]
        if odd is not None:
            # A checkpoint too damaged to name its dataset is shown with every dataset.
            odd.unfinished = [u for u in odd.unfinished if u.dataset_id in (None, dataset_id)]
    return states, local, lost, reasons, sources


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


def _node_views(ctx: Context, states: list[PublishState], rows: list[dict[str, Any]]) -> None:
    """Ask each state's backend what its node or gateway holds (records, uploads)."""
    from odfweb3.backends import all_backends

    for backend in all_backends():
        mine = [s for s in states if s.target.partition(":")[0] in backend.target_schemes]
        for state, seen in zip(mine, _query_each(backend, mine, ctx.config), strict=True):
            if seen is None:
                continue
            row = next(
                r
                for r in rows
                if r["target"] == state.target and r["datasetId"] == state.dataset_id
            )
            if seen.node is not None:
                row["node"] = seen.node
            if seen.validity is not None:
                row["validity"] = seen.validity
            if seen.uploads is not None:
                row["uploads"] = seen.uploads


def _query_each(backend: Any, states: list[PublishState], config: Any) -> list[Any]:
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


def _republishers(ctx: Context, states: list[PublishState]) -> Iterator[tuple[PublishState, Any]]:
    """Each state whose names can be re-signed, with its backend's republisher (one per target)."""
    from odfweb3.backends import RepublishingBackend, backend_for_target

    opened: dict[str, Any] = {}
    for state in states:
        backend = backend_for_target(state.target)
        if not isinstance(backend, RepublishingBackend):
            continue
        if state.target not in opened:
            opened[state.target] = backend.republisher(state.target, ctx.config)
        if opened[state.target] is not None:
            yield state, opened[state.target]


def _pinning_pins(
    ctx: Context, states: list[PublishState], rows: list[dict[str, Any]], online: bool
) -> None:
    """Per pinning service (target ``pinning:NAME``): the pin's status, asked of the service
    (``GET /pins/{requestid}``) unless offline; the saved status otherwise."""
    from odfweb3.backends import PinReporter, all_backends

    for backend in all_backends():
        if not isinstance(backend, PinReporter):
            continue
        try:
            pins = backend.pin_status(states, ctx.config, ctx.env, online=online)
        except OdfWeb3Error:
            pins = []
            for state in states:  # state by state: one unreadable state is its row only
                try:
                    pins += backend.pin_status([state], ctx.config, ctx.env, online=online)
                except OdfWeb3Error as exc:
                    pins.append({"status": None, "error": str(exc)})
        for state, pin in zip(states, pins, strict=True):
            if pin is None:
                continue
            row = next(
                r
                for r in rows
                if r["target"] == state.target and r["datasetId"] == state.dataset_id
            )
            row["pin"] = pin


def _expiry_text(validity: str | None, now: datetime) -> tuple[str, bool]:
    if not validity:
        return "-", False
    expires = datetime.fromisoformat(validity)
    left = expires - now
    soon = left < EXPIRY_WARNING
    if left.total_seconds() <= 0:
        return f"{validity} (EXPIRED)", True
    hours = left.total_seconds() / 3600
    return f"{validity} (in {hours:.1f} h)", soon


def _path_text(row: dict[str, Any]) -> str | None:
    """Where the dataset is on this machine, with its kamu name when it is in a workspace."""
    if row["localPath"] is None:
        return None
    name = f" (kamu: {row['kamuName']})" if row["kamuName"] else ""
    return shown_path(row["localPath"]) + name


def _objects_text(row: dict[str, Any]) -> str | None:
    """The published head's object count, its linked objects (ODF RFC-017) among them."""
    if row.get("objects") is None:
        return None
    linked = row.get("linkedObjects")
    return f"{row['objects']}" + (f" ({linked} linked)" if linked else "")


def _status(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.backends import state_facts
    from odfweb3.cli.local_dataset import local_dataset
    from odfweb3.cli.remotes_cmds import remote_names
    from odfweb3.odf.kamu_workspace import kamu_alias_of
    from odfweb3.odf.multihash import multihash_to_str
    from odfweb3.publish.dataset_id import chain_cache as _chain_cache
    from odfweb3.publish.offline import OfflineIndex

    if args.dataset is not None:
        args.dataset = local_dataset(args.dataset, ctx)
    if args.forget_gone:
        for entry, reason in OfflineIndex(ctx.config.state_dir).forget_stale():
            ctx.out.warn(f"{entry.dataset_id} on {entry.target}: forgotten ({reason})")
    odd = _Odd()
    states, local, lost, reasons, sources = _states(ctx, args.dataset, odd)
    now = datetime.now(UTC)
    rows: list[dict[str, Any]] = []
    for _path, exc in odd.damaged:  # state files: one line each, the others still shown
        ctx.out.warn(f"{exc} (skipped)")
    for entry, reason in zip(lost, reasons, strict=True):
        stale = "is gone" in reason or "now holds" in reason
        hint = "; status --forget-gone stops listing it" if stale else ""
        ctx.out.warn(f"{entry.dataset_id} on {entry.target}: {reason}{hint}")
        if not stale:  # there, but unreadable: damaged
            odd.damaged.append((str(entry.directory / "publish.json"), FormatError(reason)))
    readable: list[PublishState] = []
    cache = _chain_cache(ctx.config.state_dir)
    for state in states:
        try:
            facts = state_facts(state)
        except OdfWeb3Error as exc:  # a field of the wrong type: this entry only
            odd.damaged.append((state.target, exc))
            ctx.out.warn(f"{state.dataset_id} on {state.target}: {exc} (skipped)")
            continue
        readable.append(state)
        source = facts.source or sources.get((state.dataset_id, state.target))
        local_head = _local_head(state, local, source)
        path = args.dataset if state.dataset_id in local else source
        # what the published head holds, when this machine verified it (the cache's facts)
        held = cache.get(state.head) if state.head else None
        row: dict[str, Any] = {
            "datasetId": state.dataset_id,
            "target": state.target,
            "remotes": remote_names(ctx, state.target),
            "localHead": multihash_to_str(local_head) if local_head else None,
            "publishedHead": multihash_to_str(state.head) if state.head else None,
            "upToDate": local_head is not None and local_head == state.head,
            "root": state.locator,
            "name": facts.name,
            "recordId": facts.record_id,
            "sequence": facts.sequence,
            "validity": facts.validity,
            "mode": facts.mode,
            "pending": facts.pending,
            "keyEnvelope": facts.key_envelope,  # encrypted publish
            "localPath": str(Path(path).absolute()) if path else None,
            "kamuName": kamu_alias_of(Path(path)) if path else None,
            "objects": None if held is None else held.objects,
            "linkedObjects": None if held is None else held.linked,
            "node": None,
        }
        rows.append(row)
    states = readable
    _unfinished_rows(ctx, odd.unfinished, rows)
    if not args.offline:
        _node_views(ctx, states, rows)
    _pinning_pins(ctx, states, rows, online=not args.offline)
    warnings = len(odd.damaged)
    for row in rows:
        text, soon = _expiry_text(row["validity"], now)
        row["expiresSoon"] = soon
        if soon:
            warnings += 1
            ctx.out.warn(
                f"{row['datasetId']} on {row['target']}: record expires {text}; "
                "run odfweb3 republish"
            )
        node = row["node"]
        if isinstance(node, dict) and "sequence" in node and node["sequence"] != row["sequence"]:
            ctx.out.warn(
                f"{row['datasetId']} on {row['target']}: the node's record has sequence "
                f"{node['sequence']}, the saved state {row['sequence']}"
            )

    def human() -> str:
        if not rows:
            return "nothing published yet (no publish state)"
        lines = []
        for row in rows:
            text, _ = _expiry_text(row["validity"], now)
            state_word = (
                "up to date"
                if row["upToDate"]
                else ("local head unknown" if row["localHead"] is None else "local is newer")
            )
            sequence = row["sequence"]
            lines.append(f"{row['datasetId']}")
            lines += key_values(
                [
                    ("target", shown_target(row["target"])),
                    ("remote", ", ".join(row["remotes"])),
                    ("path", _path_text(row)),
                    ("local", f"{row['localHead'] or '-'} ({state_word})"),
                    ("published", row["publishedHead"] or "-"),
                    ("root", row["root"] or "-"),
                    ("name", row["name"]),
                    ("record", row.get("recordId")),
                    (
                        "sequence",
                        None
                        if sequence is None
                        else f"{sequence}" + (f" ({row['mode']})" if row["mode"] else ""),
                    ),
                    ("expires", text if row["validity"] else None),
                    ("objects", _objects_text(row)),
                ],
                indent="  ",
            )
            node = row["node"]
            if isinstance(node, dict) and "error" in node:
                lines.append(f"  node       unreachable: {node['error']}")
            elif isinstance(node, dict) and node.get("record", True) is None:
                lines.append("  node       has no record for the name")
            if row["keyEnvelope"]:
                lines.append(f"  envelope   {row['keyEnvelope']} (encrypted: --key-envelope)")
            if row.get("uploadInProgress"):
                lines.append(f"  pending    {IN_PROGRESS}")
            elif row["pending"]:
                lines.append("  pending    an interrupted publish: run publish again")
            pin = row.get("pin")
            if pin:
                if "error" in pin:
                    lines.append(f"  pin        {pin['status'] or '-'} (saved; {pin['error']})")
                else:
                    how = "asked the service" if pin["live"] else "saved"
                    why = f": {pin['reason']}" if pin.get("reason") else ""
                    lines.append(
                        f"  pin        {pin['status']}{why} ({how}; request {pin['requestid']})"
                    )
            for u in row.get("uploads") or []:
                # "confirmed" is mined into a block; confirmations are the blocks mined on
                # top of it, as the gateway counts them (0 right after: docs/concepts.md).
                n = u["confirmations"]
                where = f"mined in block {u['height']}, {n} block{'' if n == 1 else 's'} on top"
                lines.append(
                    f"  upload     {u.get('recordId')}  {u['state']}"
                    + (f" ({where})" if u["state"] == "confirmed" else "")
                )
        return "\n".join(lines)

    damaged = [{"path": path, "error": str(exc)} for path, exc in odd.damaged]
    ctx.out.result({"targets": rows, "warnings": warnings, "damaged": damaged}, human)
    if args.strict and odd.damaged:
        return odd.damaged[0][1].exit_code
    return 0


IN_PROGRESS: Final = "upload in progress — run `publish` to resume"


def _unfinished_rows(
    ctx: Context, unfinished: list[UnfinishedUpload], rows: list[dict[str, Any]]
) -> None:
    """An interrupted upload is shown, never an error: on its target's row when there is
    one, else on a row of its own (a first publish); a checkpoint too damaged to say whose
    it is, as one warning line (the next publish of that dataset starts it again)."""
    from odfweb3.cli.remotes_cmds import remote_names

    for up in unfinished:
        if up.dataset_id is None or up.target is None:
            why = f" (its checkpoint {up.path} is half written)" if up.error else ""
            ctx.out.warn(f"{IN_PROGRESS}{why}")
            continue
        row = next(
            (r for r in rows if r["target"] == up.target and r["datasetId"] == up.dataset_id),
            None,
        )
        if row is None:
            row = {
                "datasetId": up.dataset_id,
                "target": up.target,
                "remotes": remote_names(ctx, up.target),
                "localHead": None,
                "publishedHead": None,
                "upToDate": False,
                "root": None,
                "name": None,
                "recordId": None,
                "sequence": None,
                "validity": None,
                "mode": None,
                "pending": True,
                "keyEnvelope": None,
                "localPath": None,
                "kamuName": None,
                "node": None,
            }
            rows.append(row)
        row["pending"] = True
        row["uploadInProgress"] = str(up.path)


def _republish(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.cli.local_dataset import local_dataset

    if not args.all and not args.dataset:
        raise UsageError("republish: give a DATASET directory or --all")
    if args.dataset is not None and not args.all:
        args.dataset = local_dataset(args.dataset, ctx)
    states, _local, _lost, _reasons, _sources = _states(ctx, None if args.all else args.dataset)
    if args.to:
        from odfweb3.backends import opened_name

        want = opened_name(args.to, ctx.config)
        states = [s for s in states if s.target == want]
    results: list[dict[str, Any]] = []
    code = 0
    for state, target in _republishers(ctx, states):
        try:
            done = target.republish(state.dataset_id)
        except OdfWeb3Error as exc:
            code = code or exc.exit_code
            results.append(
                {"datasetId": state.dataset_id, "target": state.target, "error": str(exc)}
            )
            ctx.out.warn(f"{state.dataset_id} on {state.target}: {exc}")
            continue
        results.append(
            {
                "datasetId": done.dataset_id,
                "target": state.target,
                "name": done.name,
                "value": done.value,
                "sequence": done.sequence,
                "expires": done.expires.isoformat(),
                "mode": done.mode,
            }
        )
    if not results:
        raise NotFound("republish: no IPFS publish state found; publish with --to ipfs first")
    ok = [r for r in results if "error" not in r]
    next_expiry = min((r["expires"] for r in ok), default=None)

    def human() -> str:
        lines = []
        for r in results:
            if "error" in r:
                lines.append(f"{r['datasetId']}  FAILED  {r['error']}")
            else:
                lines.append(
                    f"{r['datasetId']}  {r['name']}  sequence {r['sequence']}  "
                    f"expires {r['expires']}  ({r['mode']})"
                )
        if next_expiry:
            lines.append(f"next expiry: {next_expiry}")
        return "\n".join(lines)

    ctx.out.result({"republished": results, "nextExpiry": next_expiry}, human)
    return code
