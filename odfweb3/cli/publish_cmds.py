"""Publishing commands: ``publish`` (``status`` and ``republish`` live in :mod:`.status_cmds`)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from odfweb3.cli.output import format_bytes, format_duration, terminal_text
from odfweb3.cli.text import format_winston, key_values, plural, shown_path, shown_target
from odfweb3.errors import OdfWeb3Error, UsageError

if TYPE_CHECKING:
    from odfweb3.api.publishing import PublishOptions
    from odfweb3.backends import StateFacts
    from odfweb3.cli.main import Context
    from odfweb3.publish.execute import PublishOutcome
    from odfweb3.publish.plan import PublishPlan
    from odfweb3.publish.state import PublishState
    from odfweb3.publish.target import Price


__all__ = ["DRIVE_PASSWORD_ENV", "register"]

DRIVE_PASSWORD_ENV = "ODFWEB3_DRIVE_PASSWORD"  # --arfs-private: the drive password


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the publishing commands to the CLI."""
    from odfweb3.backends import target_forms

    p = sub.add_parser(
        "publish",
        parents=[common],
        help="publish a dataset (only what the target does not have yet)",
        description="Validate the dataset, compare with what the target holds, upload only the "
        "delta, then publish the name record. Targets: car:DIR (offline CAR + IPNS record), "
        "ipfs (the Kubo node of ipfs.api) or ipfs:URL (that node's RPC API), bundle:DIR "
        "(offline ANS-104 bundle), arweave (the gateway of arweave.gateway) or arweave:URL, "
        "turbo (the Turbo bundler of arweave.turbo) or turbo:URL.",
    )
    p.add_argument(
        "dataset",
        nargs="?",
        help="dataset directory, or its kamu name inside a kamu workspace (optional with "
        "--flush: every queued one)",
    )
    # The command's own options with their place in --help; each backend's (its declaration,
    # odfweb3.backends.CliOption) go between them by their order.
    options: list[tuple[int, tuple[str, ...], dict[str, Any]]] = []

    def option(order: int, *flags: str, **kwargs: Any) -> None:
        options.append((order, flags, kwargs))

    option(
        10,
        "--to",
        action="append",
        default=None,
        metavar="TARGET",
        help=f"{' | '.join(target_forms())}; "
        "or a remote's name (odfweb3 remote add); repeat --to pinning:NAME for several pinning "
        "services (each reported separately); without --to: every target DATASET was published "
        "to from here",
    )
    option(20, "--force", action="store_true", help="publish even if the target is not an ancestor")
    option(
        30,
        "--dry-run",
        action="store_true",
        help="print the plan and, for arweave/turbo, the price of what would be sent; send nothing",
    )
    option(
        60,
        "--dnslink",
        default=None,
        metavar="DOMAIN",
        help="ipfs/car: print the DNS TXT record that makes ipns://DOMAIN resolve to the "
        "dataset's IPNS name (_dnslink.DOMAIN TXT \"dnslink=/ipns/NAME\"); the domain's owner "
        "sets it",
    )
    option(
        70,
        "--routing",
        default=None,
        metavar="URL",
        help="car: then push the signed IPNS record to this delegated routing endpoint "
        "(PUT /routing/v1/ipns/NAME, as odfweb3 name push does)",
    )
    option(
        100,
        "--encrypt",
        action="store_true",
        help="encrypt every object (required for datasets marked sensitive: true); after "
        "the first encrypted publish every publish of the dataset is encrypted",
    )
    option(
        110,
        "--no-encrypt",
        action="store_true",
        help="publish plaintext although the dataset was published encrypted before (or the "
        "target holds its ciphertext): asks for a confirmation on a terminal; --yes in scripts",
    )
    option(
        120,
        "--yes",
        action="store_true",
        help="confirm without asking: --no-encrypt (plaintext can never be taken back) and "
        "the price of an arweave/turbo upload (asked on a terminal before paying)",
    )
    option(
        130,
        "--arfs-private",
        action="store_true",
        help="bundle/arweave: an ArFS private drive that ArDrive opens with the same wallet "
        f"and drive password (from --drive-password-file or {DRIVE_PASSWORD_ENV})",
    )
    option(
        140,
        "--drive-password-file",
        type=Path,
        default=None,
        metavar="FILE",
        help="--arfs-private: file holding the drive password (first line)",
    )
    option(
        150,
        "-P",
        "--drive-password-prompt",
        action="store_true",
        help="--arfs-private: type the drive password (twice) on the terminal, as ArDrive's "
        "-P; asked anyway on a terminal when neither the file nor the variable gives it",
    )
    option(
        170,
        "--batch",
        action="store_true",
        help="validate and plan now, send nothing: queue the update to post with later ones",
    )
    option(
        180,
        "--flush",
        action="store_true",
        help="publish every queued update of the target (all deltas in one upload each)",
    )
    option(
        190,
        "--with-inputs",
        nargs="+",
        default=None,
        metavar="DIR",
        help="publish these input datasets first (same target, same rules; an input that "
        "consumes another listed one goes after it), then DATASET with "
        "a record naming where each input lives (_odf.inputs / the Arweave record's inputs); "
        "car:OUT and bundle:OUT put each input in OUT/inputs/<input directory name>",
    )
    from odfweb3.backends import declarations

    for d in declarations():
        options += [(o.order, o.flags, dict(o.kwargs)) for o in d.publish_options]
    for _, flags, kwargs in sorted(options, key=lambda o: o[0]):
        p.add_argument(*flags, **kwargs)
    p.set_defaults(handler=_publish)

    from odfweb3.cli import status_cmds

    status_cmds.register(sub, common)


def _drive_password(args: argparse.Namespace, ctx: Context) -> str | None:
    """The ArFS private drive password (``--arfs-private``), or None for a public drive.

    Read from ``--drive-password-file`` (its first line), the environment, or typed twice
    on the terminal (``-P``, or when neither gives it on a terminal); never taken from the
    command line, never logged.

    Raises:
        UsageError: ``--arfs-private`` with ``--encrypt``, on a target other than
            bundle/arweave, or without a password; a password file without the flag.
    """
    if not args.arfs_private:
        if args.drive_password_file is not None or args.drive_password_prompt:
            raise UsageError("the drive password is only used with --arfs-private")
        return None
    if args.encrypt:
        raise UsageError("--arfs-private already encrypts everything (ArFS scheme): drop --encrypt")
    from odfweb3.cli.keys_cmds import prompt_secret

    on_terminal = sys.stdin.isatty() and not ctx.out.json_mode
    if args.drive_password_prompt and not on_terminal:
        raise UsageError("-P asks the drive password on a terminal: use --drive-password-file")
    if args.drive_password_prompt and args.drive_password_file is not None:
        raise UsageError("give the drive password one way: -P or --drive-password-file")
    if args.drive_password_prompt or (
        args.drive_password_file is None and not ctx.env.get(DRIVE_PASSWORD_ENV) and on_terminal
    ):
        password = prompt_secret(ctx, f"drive password of {args.dataset}", confirm=True)
    elif args.drive_password_file is not None:
        try:
            text = args.drive_password_file.read_text("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(
                f"--drive-password-file {args.drive_password_file}: unreadable "
                f"({type(exc).__name__}); give a UTF-8 text file"
            ) from None
        lines = text.splitlines()
        password = lines[0] if lines else ""
    else:
        password = str(ctx.env.get(DRIVE_PASSWORD_ENV, ""))
    if not password:
        raise UsageError(
            f"--arfs-private needs the drive password: --drive-password-file FILE, "
            f"{DRIVE_PASSWORD_ENV} or -P (typed on the terminal)"
        )
    return password


def _combine_to(targets: Sequence[str]) -> str:
    """One target from the ``--to`` values: several are allowed for pinning services only
    (``--to pinning:a --to pinning:b`` = ``pinning:a,b``, one node upload, a pin per service)."""
    if len(targets) == 1:
        return targets[0]
    from odfweb3.backends import target_traits

    names: list[str] = []
    kind = targets[0].partition(":")[0]
    for t in targets:
        scheme, _, arg = t.partition(":")
        if scheme != kind or not arg or not target_traits(t).combines:
            raise UsageError(
                "--to given more than once: only for pinning services (--to pinning:A --to "
                "pinning:B); publish to other targets one at a time"
            )
        names.extend(n for n in arg.split(",") if n)
    return f"{kind}:" + ",".join(names)


def _part_failures(ctx: Context, outcome: PublishOutcome) -> int:
    """Report each part of the upload that failed (a pinning service; one line each); the
    exit code (0: none)."""
    from odfweb3.publish.target import parts_exit_code

    parts = outcome.upload.parts if outcome.upload is not None else ()
    for part in parts:
        if part.exit_code is not None:
            ctx.out.warn(f"{part.subject} failed: {part.text}")
    return parts_exit_code(parts)


def _publish(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.cli.local_dataset import local_dataset
    from odfweb3.odf.multihash import multihash_to_str
    from odfweb3.publish.batch import BatchQueue
    from odfweb3.publish.remotes import Remotes

    if args.dataset is not None:
        args.dataset = local_dataset(args.dataset, ctx)
    if args.with_inputs:
        args.with_inputs = [local_dataset(d, ctx) for d in args.with_inputs]
    if not args.to:
        if args.flush or args.dataset is None or args.batch or args.with_inputs:
            raise UsageError("publish: give --to TARGET (a target or a remote's name)")
        return _publish_everywhere(args, ctx)
    remotes = Remotes(ctx.config.state_dir)
    args.to = _combine_to([remotes.resolve(t) for t in args.to])
    if args.batch and args.flush:
        raise UsageError("--batch queues an update, --flush posts the queue: use one of them")
    if args.dnslink is not None:
        _check_dnslink(args)
    if args.routing is not None and (
        not _pushes_records(args.to) or args.batch or args.flush or args.with_inputs
    ):
        raise UsageError(
            "--routing pushes the record of a single offline publish: use it with --to car:DIR "
            "(a node puts its own records; for queued updates run odfweb3 name push later)"
        )
    if args.flush:
        return _flush(args, ctx)
    if args.dataset is None:
        raise UsageError("publish: give the DATASET directory (only --flush works without one)")
    if args.with_inputs:
        return _publish_with_inputs(args, ctx)
    outcome = _publish_one(args, ctx, args.dataset, dry_run=args.dry_run or args.batch)
    if args.batch:
        queue = BatchQueue(ctx.config.state_dir / "batch.json")
        entry = queue.add(
            str(Path(args.dataset).resolve()),
            outcome.plan.dataset_id,
            args.to,
            multihash_to_str(outcome.plan.head),
        )
        ctx.out.result(
            _to_json(outcome) | {"queued": entry.to_json()},
            lambda: (
                f"{_human(outcome)}\nqueued ({plural(len(entry.heads), 'update')} waiting); "
                f"post them as one upload with: odfweb3 publish --flush --to {args.to}"
            ),
        )
        return 0
    # The JSON form only for --json: it lists every object sent (a path string and a
    # DatasetObject each: 300,000 at 100,000 blocks, the peak of a first publish otherwise).
    data = _to_json(outcome) if ctx.out.json_mode else {}
    text = _human(outcome)
    link = _dnslink(args, outcome)
    if link is not None:
        data["dnslink"] = link.to_json()
        text += (
            f"\n  dnslink      {link.zone_line()}\n"
            f"               (set this TXT record at {link.host}; then ipns://{link.domain} "
            "resolves to this name)"
        )
    push_failed: OdfWeb3Error | None = None
    if args.routing is not None and outcome.state is not None:
        from odfweb3.cli.name_cmds import push_record_file

        name = _facts(outcome.state).name or ""
        out_dir = args.to.partition(":")[2]
        try:
            pushed = push_record_file(
                ctx, Path(out_dir).expanduser() / f"{name}.ipns-record", name, args.routing
            )
        except OdfWeb3Error as exc:  # the publish stands; say so, then fail with the push's code
            push_failed = exc
            ctx.out.warn(
                f"published to car:{out_dir}, but pushing the record failed: {exc}; retry with "
                f"odfweb3 name push car:{out_dir} --routing {args.routing}"
            )
        else:
            data["pushed"] = pushed
            text += f"\n  pushed to    {pushed['endpoint']} (served: {pushed['served']})"
    ctx.out.result(data, lambda: text)
    if push_failed is not None:
        return push_failed.exit_code
    return _part_failures(ctx, outcome)


def _pushes_records(to: str) -> bool:
    """Whether ``to`` writes a signed name record to a local directory, to be pushed."""
    from odfweb3.backends import NamePusher, backend_for_target, target_traits

    return target_traits(to).offline and isinstance(backend_for_target(to), NamePusher)


def _check_dnslink(args: argparse.Namespace) -> None:
    """``--dnslink DOMAIN``: a domain name, on a target that publishes an IPNS name."""
    from odfweb3.backends import DnsLinker, all_backends, backend_for_target

    linker = next(b for b in all_backends() if isinstance(b, DnsLinker))
    linker.check_dnslink_domain(args.dnslink)
    if not isinstance(backend_for_target(args.to), DnsLinker):
        raise UsageError(
            f"--dnslink needs an IPNS name: publish --to ipfs or car:DIR, not {args.to}"
        )
    if args.batch or args.flush or args.with_inputs:
        raise UsageError(
            "--dnslink works with a single publish (no --batch, --flush, --with-inputs)"
        )


def _dnslink(args: argparse.Namespace, outcome: PublishOutcome) -> Any:
    """The DNSLink TXT record for the name just published, if ``--dnslink`` asked for it."""
    if args.dnslink is None or outcome.state is None:
        return None
    from odfweb3.backends import DnsLinker, backend_for_target

    backend = backend_for_target(args.to)
    if not isinstance(backend, DnsLinker):
        return None
    return backend.dnslink_record(args.dnslink, outcome.state)


def _publish_everywhere(args: argparse.Namespace, ctx: Context) -> int:
    """``publish DATASET`` without ``--to``: to every target it was published to from here
    (:func:`odfweb3.api.publishing.publish_everywhere`), each reported on its own. Exit
    status: the first failure's, else 0."""
    from odfweb3.api.publishing import TargetResult, publish_everywhere
    from odfweb3.api.states import remote_names
    from odfweb3.cli.hooks import cli_hooks

    if args.dnslink is not None or args.routing is not None:
        raise UsageError("publish without --to: --dnslink and --routing need one --to TARGET")

    options = _options(args, ctx)

    def said(result: TargetResult) -> None:
        if result.error is not None:
            ctx.out.warn(f"{shown_target(result.target)}: {result.error}")
        elif result.outcome is not None:
            _published(ctx, args.dataset, result.outcome, options)

    found = publish_everywhere(
        args.dataset,
        config=ctx.config,
        options=options,
        hooks=cli_hooks(ctx),
        cwd=ctx.cwd,
        on_plan=_on_plan(ctx),
        on_result=said,
        approve=_approver(args, ctx),
    )
    results: list[dict[str, Any]] = []
    texts: list[str] = []
    code = 0
    for r in found:
        if r.error is not None:
            code = code or r.error.exit_code
            results.append({"to": r.target, "error": str(r.error), "exitCode": r.error.exit_code})
            texts.append(f"{shown_target(r.target)}: FAILED: {r.error}")
        elif r.outcome is not None:
            names = remote_names(ctx.config, r.target)
            results.append({"to": r.target, "remotes": names, **_to_json(r.outcome)})
            texts.append(_human(r.outcome))
    ctx.out.result({"publishes": results}, lambda: "\n".join(texts))
    return code


def _options(args: argparse.Namespace, ctx: Context) -> PublishOptions:
    """The library's publish options from the command line."""
    from odfweb3.api.publishing import PublishOptions
    from odfweb3.backends import parse_options

    return PublishOptions(
        force=args.force,
        dry_run=args.dry_run,
        queue=args.batch,
        encrypt=bool(args.encrypt),
        no_encrypt=bool(args.no_encrypt),
        confirm_plaintext=bool(args.yes),
        drive_password=_drive_password(args, ctx),
        env=ctx.env,
        # Each backend's options from the ones it declared (odfweb3.backends.CliOption).
        backends=parse_options(vars(args)),
    )


def _on_plan(ctx: Context) -> Callable[[PublishPlan], None]:
    def planned(plan: PublishPlan) -> None:
        # Listed only when -v shows them: a first publish's plan sends every object
        # (300,000 lines, some 40 MB at 100,000 blocks, the command's peak memory).
        if ctx.out.verbosity < 1:
            return
        for line in _plan_detail(plan):
            ctx.out.debug(line)

    return planned


def price_text(price: Price | None) -> str:
    """``"123 winc (0.000000000123 credits) for 4.0 KiB, 5 items"``, or why it is unknown."""
    if price is None:
        return "not known (set arweave.turbo_payment to the Turbo payment service to see it)"
    amount = format_winston(price.amount, price.unit)
    items = f", {plural(price.items, 'item')}" if price.items else ""
    bound = "at most " if price.bound else ""
    return f"{bound}{amount} for {format_bytes(price.size)}{items}"


def _approver(args: argparse.Namespace, ctx: Context) -> Callable[[Price | None], bool]:
    """What a paid upload does once its price is known, before anything is paid: on a
    terminal (stdin and stderr, not ``--json``) it asks, unless ``--yes``; otherwise it
    says the price (stderr) and goes on (``--max-cost`` is the cap for scripts)."""

    from odfweb3.cli.confirm import ask_yes_no, interactive

    def approve(price: Price | None) -> bool:
        line = f"price: {price_text(price)}"
        if args.yes or not interactive(ctx):
            ctx.out.info(f"{line}; sending")
            return True
        return ask_yes_no(ctx, f"{terminal_text(line, one_line=True)}: pay and send? [y/N] ")

    return approve


def _publish_one(
    args: argparse.Namespace,
    ctx: Context,
    dataset: str,
    *,
    dry_run: bool,
    to: str | None = None,
    record_extra: Mapping[str, Any] | None = None,
) -> PublishOutcome:
    """Publish one dataset through the library (warnings on stderr); the caller reports."""
    from odfweb3.api.publishing import publish
    from odfweb3.cli.hooks import cli_hooks

    target = to or args.to
    options = replace(_options(args, ctx), dry_run=args.dry_run if args.batch else dry_run)
    started = time.monotonic()
    outcome = publish(
        dataset,
        target,
        config=ctx.config,
        options=options,
        hooks=cli_hooks(ctx),
        cwd=ctx.cwd,
        on_plan=_on_plan(ctx),
        record_extra=record_extra,
        approve=_approver(args, ctx),
    )
    ctx.out.debug(f"{outcome.plan.target}: done in {format_duration(time.monotonic() - started)}")
    _published(ctx, dataset, outcome, options)
    return outcome


def _published(
    ctx: Context, dataset: str, outcome: PublishOutcome, options: PublishOptions
) -> None:
    """What is said once a publish to one target is done: the publisher hint, and what the
    discovery metadata lacks (once per command; not for encrypted publishes, a key envelope
    or an ArFS private drive, which publish nothing readable)."""
    if outcome.state is None:
        return
    _suggest_publisher_name(ctx)
    encrypted = options.drive_password is not None or bool(_facts(outcome.state).key_envelope)
    if not encrypted:
        _warn_catalogue_gaps(ctx, dataset, outcome.plan)


PUBLISHER_HINT: Final = "hints/publisher-name"


def _warn_catalogue_gaps(ctx: Context, dataset: str, plan: PublishPlan) -> None:
    """One line (once per command, whatever the targets) when the published discovery
    documents lack a title, description or license: still valid, shown bare by catalogues.

    From the plan's verified facts (no chain walk), else the chain it holds.
    """
    from odfweb3.descriptor.discovery_facts import catalogue_gaps
    from odfweb3.odf.facts import facts_of_chain

    facts = plan.facts
    if facts is None and plan.chain:
        facts = facts_of_chain(list(plan.chain))
    if facts is None:
        return
    gaps = catalogue_gaps(facts.info, facts.license)
    if gaps:
        ctx.out.warn_once(
            f"{dataset}: the discovery metadata has " + "; ".join(gaps) + ": catalogues show "
            "the dataset without them ('odfweb3 describe DATASET --format croissant' lists "
            "every field a format lacks)"
        )


def _suggest_publisher_name(ctx: Context) -> None:
    """Say once (per state directory) how to name the descriptor's creator.

    Without ``publisher.name`` the descriptor names the publisher by its key (IPNS name
    or Arweave address); a person or organisation is friendlier.
    """
    publisher = ctx.config.get("publisher") or {}
    if isinstance(publisher, dict) and publisher.get("name"):
        return
    marker = Path(ctx.config.state_dir) / PUBLISHER_HINT
    if marker.exists() or ctx.out.verbosity < 0 or ctx.out.json_mode:
        return
    ctx.out.info(
        "hint: the descriptor names its creator by your key (IPNS name or Arweave address); "
        "set publisher.name (and publisher.type: Person or Organization) in odfweb3.yaml to "
        "name a person or organisation. (Said once.)"
    )
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()


def _publish_with_inputs(args: argparse.Namespace, ctx: Context) -> int:
    """``--with-inputs``: each input first, then DATASET with the inputs map."""
    from odfweb3.publish.with_inputs import plan_inputs, publish_with_inputs

    if args.batch or args.flush or args.dry_run:
        raise UsageError("--with-inputs publishes now: drop --batch, --flush and --dry-run")
    plan = plan_inputs(args.dataset, args.with_inputs, args.to)

    def publish_one(
        dataset: str, to: str, record_extra: Mapping[str, Any] | None
    ) -> PublishOutcome:
        return _publish_one(args, ctx, dataset, dry_run=False, to=to, record_extra=record_extra)

    inputs, done = publish_with_inputs(args.dataset, args.to, plan, publish_one)
    published = [{"dataset": d, "to": to, **_to_json(o)} for d, to, o in done]
    outcomes = [o for _, _, o in done]
    ctx.out.result(
        {"publishes": published, "inputs": inputs},
        lambda: (
            "\n".join(_human(o) for o in outcomes)
            + "".join(f"\n  input {did} -> {loc}" for did, loc in inputs.items())
        ),
    )
    return 0


def _flush(args: argparse.Namespace, ctx: Context) -> int:
    """Publish every queued dataset of ``--to`` (or just DATASET) once."""
    from odfweb3.errors import ConflictError
    from odfweb3.odf.chain import walk_chain
    from odfweb3.odf.layout import DatasetReader
    from odfweb3.odf.multihash import multihash_from_str
    from odfweb3.publish.batch import BatchQueue

    queue = BatchQueue(ctx.config.state_dir / "batch.json")
    only = None
    if args.dataset is not None:
        reader = DatasetReader.open(args.dataset)
        only = next(
            (e.dataset_id for e in queue.for_target(args.to) if Path(e.dataset) == reader.root),
            None,
        )
        if only is None:
            raise UsageError(f"--flush: nothing queued for {args.dataset} to {args.to}")
    entries = queue.for_target(args.to, only)
    if not entries:
        ctx.out.result({"flushed": []}, f"--flush: nothing queued for {args.to}")
        return 0
    flushed = []
    for entry in entries:
        reader = DatasetReader.open(entry.dataset)
        chain = {e.hash for e in walk_chain(reader)}
        if multihash_from_str(entry.heads[-1]) not in chain:
            raise ConflictError(
                f"{entry.dataset}: its head no longer descends from the queued "
                f"{entry.heads[-1]}; publish it directly (or with --force)"
            )
        outcome = _publish_one(args, ctx, entry.dataset, dry_run=False)
        queue.remove(entry)
        flushed.append((entry, outcome))
    ctx.out.result(
        {"flushed": [e.to_json() | {"publish": _to_json(o)} for e, o in flushed]},
        lambda: "\n".join(
            f"{_human(o)}\n  (covers {plural(len(e.heads), 'queued update')})" for e, o in flushed
        ),
    )
    return 0


def _plan_detail(plan: PublishPlan) -> list[str]:
    """``-v``: every object the plan sends, and what it skips."""
    lines = [f"plan: target {plan.target_status}, {plural(plan.new_blocks, 'new block')}"]
    lines += [f"  send {o.kind:<10} {o.path}  {format_bytes(o.size or 0)}" for o in plan.send]
    skipped = len(plan.objects) - len(plan.send)
    if skipped:
        lines.append(f"  skip {plural(skipped, 'object')} the target already has")
    return lines


def _facts(state: PublishState) -> StateFacts:
    """What the target's backend says its state holds (name, sequence, mode...)."""
    from odfweb3.backends import state_facts

    return state_facts(state)


def _nothing_new(o: PublishOutcome) -> bool:
    return o.plan.is_noop


def _to_json(o: PublishOutcome) -> dict[str, Any]:
    data: dict[str, Any] = {
        "plan": o.plan.to_json(),
        "dryRun": o.state is None,
        "nothingNew": _nothing_new(o),
    }
    if o.price is not None:  # a dry run's price of what would be sent (integers)
        data["price"] = o.price.to_json()
    if o.upload is not None:
        data["locator"] = o.upload.locator
        data["bytesSent"] = o.upload.bytes_sent
        data.update(o.upload.summary)
    if o.state is not None:
        data["record"] = o.state.record
        facts = _facts(o.state)
        if facts.share:
            data["share"] = [{"what": what, "ref": ref} for what, ref in facts.share]
        if _updated(o) and facts.cache_ttl is not None:
            data["cacheTtl"] = facts.cache_ttl
    return data


def _updated(o: PublishOutcome) -> bool:
    """A new head over one the target already served: readers may hold the old one."""
    return o.state is not None and not _nothing_new(o) and o.plan.remote_head is not None


def _cache_lines(o: PublishOutcome) -> list[str]:
    """After an update, how long caches may still show the previous version."""
    assert o.state is not None
    ttl = _facts(o.state).cache_ttl
    if not _updated(o) or ttl is None:
        return []
    return [
        f"note: resolvers and gateways may show the previous version for up to "
        f"{_seconds(ttl)} (the record's TTL, ipfs.record_ttl; docs/concepts.md)"
    ]


def _seconds(n: int) -> str:
    """``5 min``, ``2 h``, ``90 s``."""
    if n >= 3600 and n % 3600 == 0:
        return f"{n // 3600} h"
    if n >= 60 and n % 60 == 0:
        return f"{n // 60} min"
    return f"{n} s"


def _plan_lines(plan: PublishPlan) -> list[tuple[str, object]]:
    from odfweb3.odf.multihash import multihash_to_str

    remote = multihash_to_str(plan.remote_head) if plan.remote_head else "nothing"
    forced = ", FORCED" if plan.forced else ""
    return [
        ("local head", multihash_to_str(plan.head)),
        ("target has", f"{remote} ({plan.target_status}{forced})"),
        (
            "send",
            f"{len(plan.send)} of {plural(len(plan.objects), 'object')}, "
            f"{format_bytes(plan.send_bytes)} of {format_bytes(plan.total_bytes)} "
            f"({plural(plan.new_blocks, 'new block')})",
        ),
    ]


def _human(o: PublishOutcome) -> str:
    """What a publish did, in aligned ``key value`` lines (no None, human sizes)."""
    from odfweb3.odf.multihash import multihash_to_str

    plan = o.plan
    target = shown_target(plan.target)
    header = f"publish {plan.dataset_id} -> {target}"
    if o.state is None:
        lines = _plan_lines(plan)
        if o.price is not None:
            lines.append(("price", price_text(o.price)))
        return "\n".join([header, *key_values(lines), "dry run: nothing sent"])
    assert o.upload is not None
    if _nothing_new(o):
        seq = _facts(o.state).sequence
        kept = "record unchanged" if o.upload.record_kept else "record renewed"
        where = f" (sequence {seq})" if seq is not None else ""
        nothing = f"nothing new: {target} already has head {multihash_to_str(plan.head)}"
        # What to give others is the same as after the first publish: said again.
        return "\n".join([header, f"{nothing}; {kept}{where}", *_share_lines(o.state)])
    items: list[tuple[str, object]] = [*_plan_lines(plan), ("root", o.upload.locator)]
    items.append(("bytesSent", o.upload.bytes_sent))
    shown = {k for k, _ in items}
    for k, v in (*o.upload.summary.items(), *o.state.record.items()):
        # Summary and record may repeat a fact (record id, manifest). A nested object is
        # detail for --json (a part's facts: each part has its own line below).
        if k in shown or (isinstance(v, dict) and any(isinstance(x, dict) for x in v.values())):
            continue
        shown.add(k)
        items.append((k, v))
    for part in o.upload.parts:
        items.append((part.label, part.text if part.exit_code is None else f"FAILED: {part.text}"))
    return "\n".join(
        [
            header,
            *key_values(items),
            *_share_lines(o.state),
            *_cache_lines(o),
            *_next_steps_lines(o.state),
        ]
    )


def _share_lines(state: PublishState) -> list[str]:
    """``share:`` and what to give a reader, as the target's backend says (StateFacts)."""
    share = _facts(state).share
    return ["share:", *key_values(share, indent="    ")] if share else []


def _next_steps_lines(state: PublishState) -> list[str]:
    """What to run next, as the target's backend says (car:DIR: import into a node)."""
    steps = _facts(state).next_steps
    if steps is None:
        return []
    return [
        steps.why,
        f"{steps.what} (in this order, in {shown_path(steps.directory)}):",
        *(f"  {c}" for c in steps.commands),
    ]
