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
from typing import TYPE_CHECKING, Any

from odfweb3.cli.text import key_values, shown_path, shown_target
from odfweb3.errors import NotFound, NotYetConfirmed, OdfWeb3Error, UsageError

if TYPE_CHECKING:
    from odfweb3.api.states import StatusReport, TargetRow
    from odfweb3.cli.main import Context
    from odfweb3.publish.state import PublishState

__all__ = ["register"]


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


def _path_text(row: TargetRow) -> str | None:
    """Where the dataset is on this machine, with its kamu name when it is in a workspace."""
    if row.local_path is None:
        return None
    name = f" (kamu: {row.kamu_name})" if row.kamu_name else ""
    return shown_path(row.local_path) + name


def _objects_text(row: TargetRow) -> str | None:
    """The published head's object count, its linked objects (ODF RFC-017) among them."""
    if row.objects is None:
        return None
    linked = row.linked_objects
    return f"{row.objects}" + (f" ({linked} linked)" if linked else "")


def _status(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.api.states import status_report
    from odfweb3.cli.hooks import cli_hooks
    from odfweb3.cli.local_dataset import local_dataset

    dataset = local_dataset(args.dataset, ctx) if args.dataset is not None else None
    report = status_report(
        config=ctx.config,
        dataset=dataset,
        online=not args.offline,
        forget_gone=args.forget_gone,
        env=ctx.env,
        hooks=cli_hooks(ctx),
    )
    ctx.out.result(report.to_json(), lambda: _status_text(report))
    # An upload waited for past its deadline: one error line each (as an error is shown;
    # --json rows carry it as "unconfirmed"), exit 75 (try again later) once all is shown.
    late = report.unconfirmed
    if late:
        from odfweb3.cli.output import terminal_text

        for line in late:
            ctx.out.err.write(f"odfweb3: error: {terminal_text(line, one_line=True)}\n")
        return NotYetConfirmed.exit_code
    return report.exit_code if args.strict else 0


def _status_text(report: StatusReport) -> str:
    from odfweb3.api.states import IN_PROGRESS, expiry_text

    if not report.targets:
        return "nothing published yet (no publish state)"
    lines = []
    for row in report.targets:
        text, _ = expiry_text(row.validity, report.now)
        state_word = (
            "up to date"
            if row.up_to_date
            else ("local head unknown" if row.local_head is None else "local is newer")
        )
        sequence = row.sequence
        lines.append(f"{row.dataset_id}")
        lines += key_values(
            [
                ("target", shown_target(row.target)),
                ("remote", ", ".join(row.remotes)),
                ("path", _path_text(row)),
                ("local", f"{row.local_head or '-'} ({state_word})"),
                ("published", row.published_head or "-"),
                ("root", row.root or "-"),
                ("name", row.name),
                ("record", row.record_id),
                (
                    "sequence",
                    None
                    if sequence is None
                    else f"{sequence}" + (f" ({row.mode})" if row.mode else ""),
                ),
                ("expires", text if row.validity else None),
                ("objects", _objects_text(row)),
            ],
            indent="  ",
        )
        node = row.node
        if node is not None and "error" in node:
            lines.append(f"  node       unreachable: {node['error']}")
        elif node is not None and node.get("record", True) is None:
            lines.append("  node       has no record for the name")
        if row.key_envelope:
            lines.append(f"  envelope   {row.key_envelope} (encrypted: --key-envelope)")
        if row.upload_in_progress:
            lines.append(f"  pending    {IN_PROGRESS}")
        elif row.pending:
            lines.append("  pending    an interrupted publish: run publish again")
        pin = row.pin
        if pin:
            if "error" in pin:
                lines.append(f"  pin        {pin['status'] or '-'} (saved; {pin['error']})")
            else:
                how = "asked the service" if pin["live"] else "saved"
                why = f": {pin['reason']}" if pin.get("reason") else ""
                lines.append(
                    f"  pin        {pin['status']}{why} ({how}; request {pin['requestid']})"
                )
        for u in row.uploads or ():
            # "confirmed" is mined into a block; confirmations are the blocks mined on
            # top of it, as the gateway counts them (0 right after: docs/concepts.md).
            # A bundler's row (CONFIRMED, FINALIZED...) has no block of its own.
            where = ""
            if u["state"] == "confirmed":
                n = u["confirmations"]
                where = f" (mined in block {u['height']}, {n} block{'' if n == 1 else 's'} on top)"
            elif u.get("saved"):
                where = f" (saved: {u['saved']})"
            lines.append(f"  upload     {u.get('recordId')}  {u['state']}{where}")
    return "\n".join(lines)


def _republish(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.cli.local_dataset import local_dataset

    if not args.all and not args.dataset:
        raise UsageError("republish: give a DATASET directory or --all")
    if args.dataset is not None and not args.all:
        args.dataset = local_dataset(args.dataset, ctx)
    from odfweb3.api.states import saved_states

    states = saved_states(ctx.config, None if args.all else args.dataset)
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
