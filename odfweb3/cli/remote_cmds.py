"""Commands that read replicas: ``resolve``, ``verify``, ``pull``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from odfweb3.cli.output import format_bytes, format_duration
from odfweb3.cli.text import objects_text, plural, shown_path
from odfweb3.errors import UsageError

if TYPE_CHECKING:
    from odfweb3.api.reading import ReadOptions
    from odfweb3.cli.main import Context
    from odfweb3.read.compare import ReplicaReport

__all__ = ["register"]


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the replica commands to the CLI."""
    p = sub.add_parser(
        "verify",
        parents=[common],
        help="compare replicas with the local dataset by head hash, or check a lineage",
        description="Resolve each replica's head and compare it with the local dataset's (or the "
        "first replica's): identical, behind/ahead by N blocks, diverged, corrupt (it served "
        "bad data), unreachable. --deep re-hashes every block and object of each replica. Exit "
        "status, the worst replica's: 0 all identical, 1 any difference, 2 any unreachable, "
        "65 any corrupt (as pull exits on the same data). With --lineage REF: check that "
        "every input block REF's ExecuteTransforms consumed is held by an input replica, "
        "down to the root datasets; inputs are found through --input, --inputs-from, then "
        "the inputs map of each record (publish --with-inputs); exit status 0 only when the "
        "whole lineage is present.",
    )
    p.add_argument(
        "dataset",
        nargs="?",
        help="local dataset directory or its kamu name (default: the first REF); with "
        "--lineage, the replica to check (car:DIR, ipns://, ar:// or a directory)",
    )
    p.add_argument("--against", action="append", metavar="REF", help="replica (repeatable)")
    p.add_argument(
        "--lineage", action="store_true", help="check that the dataset's inputs are all there"
    )
    p.add_argument(
        "--inputs-from",
        action="extend",
        nargs="+",
        default=[],
        metavar="REF",
        help="with --lineage: input replicas, matched to inputs by the dataset ID in their Seed",
    )
    p.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="DID=REF",
        help="with --lineage: the replica of one input dataset (repeatable)",
    )
    p.add_argument("--deep", action="store_true", help="re-hash every object of each replica")
    _add_drive_options(p)
    p.add_argument("--sample", type=int, metavar="K", help="with --deep: only K random objects")
    _key_envelope_arg(p)
    p.set_defaults(handler=_verify)

    p = sub.add_parser(
        "pull",
        parents=[common],
        help="pull a dataset from a replica, verifying every byte",
        description="Read the replica's head, walk its blocks, fetch data files and checkpoints "
        "in parallel, then the linked objects their ObjectLink columns name, verify every hash "
        "and size, write objects first and refs/head last. "
        "Incremental when DEST holds an ancestor; a diverged DEST, or one holding another "
        "dataset, is refused unless --force; a non-empty DEST that is not a dataset is refused.",
    )
    p.add_argument(
        "ref",
        help="replica: ipns://NAME, ipns://DOMAIN, ipfs://CID, ar://ID, did:odf:…, car:DIR, "
        "bundle:DIR, a directory, or a remote of a car:/bundle: directory (odfweb3 remote add; "
        "its record must then be signed by the dataset's key or one of this machine's)",
    )
    p.add_argument("dest", help="destination dataset directory")
    p.add_argument(
        "--parallel",
        type=int,
        default=8,
        help="concurrent downloads (default 8; a replica on this machine's disk, car:DIR, is "
        "read on at most 2: more threads only wait on each other)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace a diverged destination, or another dataset, removing the layout's files "
        "the new chain does not reference",
    )
    p.add_argument(
        "--expect-name",
        metavar="NAME",
        help="car:DIR: refuse a record signed by any other IPNS name than NAME (the pull "
        "always says who signed, and warns when it is neither the dataset's own key nor a "
        "key of this machine)",
    )
    _key_envelope_arg(p)
    _add_drive_options(p)
    p.set_defaults(handler=_pull)

    p = sub.add_parser(
        "resolve",
        parents=[common],
        help="resolve a name to a dataset: ID, head, locator, IPNS sequence and expiry",
        description="Resolve REF and check it: IPNS records are fetched raw and verified locally "
        "(signature, name binding, expiry, no replay of an older sequence), the record's "
        "_odf.head must equal the refs/head served and _odf.datasetId the Seed's ID; the chain "
        "is walked to the Seed, every block re-hashed. REF: ipns://NAME, ipns://DOMAIN "
        "(DNSLink), ipfs://CID, ar://RECORD-OR-MANIFEST, or did:odf:… (looked up as the IPNS "
        "name of the dataset key, and on Arweave by the owner from publish state or --owner). "
        "IPFS is read through ipfs.gateway / ODFWEB3_IPFS_GATEWAY and ipfs.api / "
        "ODFWEB3_IPFS_API.",
    )
    p.add_argument("ref", help="ipns://NAME, ipns://DOMAIN, ipfs://CID, ar://ID or did:odf:…")
    p.add_argument(
        "--owner",
        metavar="ADDRESS",
        help="with did:odf: the Arweave wallet address that publishes the dataset",
    )
    p.add_argument(
        "--trustless",
        action="store_true",
        help="IPFS: read every block and object as CID-verified raw blocks, not by path",
    )
    _key_envelope_arg(p)
    _add_drive_options(p)
    p.set_defaults(handler=_resolve)


def _key_envelope_arg(p: argparse.ArgumentParser) -> None:
    from odfweb3.crypto.names import PASSPHRASE_ENV

    p.add_argument(
        "--key-envelope",
        metavar="SRC",
        help="encrypted IPFS publish: its key envelope (a file, ipfs://CID or ar://ID; the "
        "keyEnvelope publish and status print), needed for ipfs://CID, which has no record",
    )
    p.add_argument(
        "--passphrase-file",
        type=Path,
        default=None,
        metavar="FILE",
        help="encrypted publish with a passphrase recipient: file holding the passphrase "
        f"(else {PASSPHRASE_ENV}, or a prompt on a terminal)",
    )


def _add_drive_options(p: argparse.ArgumentParser) -> None:
    """``--wallet`` / ``--drive-password-file``: read an ar:// ArFS private drive."""
    from odfweb3.cli.publish_cmds import DRIVE_PASSWORD_ENV

    p.add_argument(
        "--wallet",
        type=Path,
        default=None,
        help="ar:// ArFS private drive: the publisher's JWK wallet (default arweave.wallet)",
    )
    p.add_argument(
        "--drive-password-file",
        type=Path,
        default=None,
        metavar="FILE",
        help=f"ar:// ArFS private drive: file holding the drive password (first line; "
        f"else {DRIVE_PASSWORD_ENV})",
    )
    p.add_argument(
        "-P",
        "--drive-password-prompt",
        action="store_true",
        help="ar:// ArFS private drive: type the drive password on the terminal (ArDrive's -P)",
    )


def _read_options(args: argparse.Namespace, ctx: Context) -> ReadOptions:
    """The library's read options from the command line: the key envelope's source, the
    passphrase (``--passphrase-file``, ``$ODFWEB3_PASSPHRASE`` or a prompt on a terminal,
    asked again after a wrong one), an ArFS private drive's wallet and password."""
    from odfweb3.api.reading import ReadOptions
    from odfweb3.cli.keys_cmds import TRIES, prompts, read_passphrase
    from odfweb3.crypto.names import PASSPHRASE_ENV

    file = args.passphrase_file
    can_ask = file is not None or bool(ctx.env.get(PASSPHRASE_ENV)) or sys.stdin.isatty()
    return ReadOptions(
        owner=getattr(args, "owner", None),
        trustless=getattr(args, "trustless", False),
        key_envelope_from=args.key_envelope or None,
        wallet=args.wallet,
        drive_password=_drive_password(args, ctx),
        passphrase=(
            (lambda did: read_passphrase(ctx, file, confirm=False, dataset=did))
            if can_ask
            else None
        ),
        passphrase_tries=TRIES if prompts(ctx, file) else 1,
    )


def _drive_password(args: argparse.Namespace, ctx: Context) -> str | None:
    """An ArFS private drive's password, if given: from ``--drive-password-file`` (first
    line), the terminal (``-P``) or the environment, never from the command line; it is
    only used if the ref turns out to be private."""
    from odfweb3.cli.publish_cmds import DRIVE_PASSWORD_ENV

    if args.drive_password_prompt:
        from odfweb3.cli.keys_cmds import prompt_secret

        if args.drive_password_file is not None:
            raise UsageError("give the drive password one way: -P or --drive-password-file")
        if not sys.stdin.isatty() or ctx.out.json_mode:
            raise UsageError("-P asks the drive password on a terminal: use --drive-password-file")
        what = vars(args).get("ref") or vars(args).get("dataset") or "the drive"
        return prompt_secret(ctx, f"drive password of {what}", confirm=False) or None
    if args.drive_password_file is not None:
        try:
            lines = args.drive_password_file.read_text("utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(
                f"--drive-password-file {args.drive_password_file}: unreadable "
                f"({type(exc).__name__}); give a UTF-8 text file"
            ) from None
        password = lines[0] if lines else ""
        if not password:
            raise UsageError(f"--drive-password-file {args.drive_password_file}: empty first line")
        return password
    return str(ctx.env.get(DRIVE_PASSWORD_ENV, "")) or None


def _resolve(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3 import api
    from odfweb3.cli.hooks import cli_hooks

    results = api.resolve(
        args.ref, config=ctx.config, options=_read_options(args, ctx), hooks=cli_hooks(ctx)
    )
    ctx.out.result(
        {"ref": args.ref, "results": [r.to_json() for r in results]},
        lambda: "\n".join(r.describe() for r in results),
    )
    return 0


def _verify(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3 import api
    from odfweb3.cli.hooks import cli_hooks
    from odfweb3.cli.local_dataset import local_dataset

    if args.lineage:
        return _verify_lineage(args, ctx)
    dataset = local_dataset(args.dataset, ctx) if args.dataset is not None else None
    report = api.verify(
        dataset,
        args.against or [],
        config=ctx.config,
        options=_read_options(args, ctx),
        hooks=cli_hooks(ctx),
        deep=args.deep,
        sample=args.sample,
    )
    for ref, replica, seconds in zip(report.refs, report.replicas, report.seconds, strict=True):
        if seconds is not None:
            _verify_detail(ctx, ref, replica, seconds)
    ctx.out.result(report.to_json(), lambda: "\n".join(r.describe() for r in report.replicas))
    return report.exit_code


def _verify_detail(ctx: Context, ref: str, report: ReplicaReport, seconds: float) -> None:
    """``-v``: what was compared and checked for one replica."""
    from odfweb3.odf.multihash import multihash_to_str

    head = multihash_to_str(report.head) if report.head else "-"
    ctx.out.debug(f"{ref}: head {head} ({report.status})")
    if report.objects_checked or report.bytes_checked:
        ctx.out.debug(
            f"  re-hashed {objects_text(report.objects)}, "
            f"{format_bytes(report.bytes_checked)}, and every block against the chain rules"
        )
    ctx.out.debug(f"  in {format_duration(seconds)}")


def _verify_lineage(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3 import api
    from odfweb3.cli.hooks import cli_hooks

    if args.dataset is None or args.against:
        raise UsageError("verify --lineage: give one REF and no --against (inputs: --inputs-from)")
    inputs: dict[str, str] = {}
    for item in args.input:
        did, sep, ref = item.partition("=")
        if not sep or not ref:
            raise UsageError(f"--input {item!r}: expected did:odf:…=REF")
        inputs[did] = ref
    report = api.verify_lineage(
        args.dataset,
        config=ctx.config,
        options=_read_options(args, ctx),
        hooks=cli_hooks(ctx),
        inputs=inputs,
        inputs_from=args.inputs_from,
        deep=args.deep,
    )
    ctx.out.result(report.to_json(), report.describe)
    return report.exit_code


def _pull(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3 import api
    from odfweb3.cli.hooks import cli_hooks
    from odfweb3.odf.multihash import multihash_to_str

    report = api.pull(
        args.ref,
        args.dest,
        config=ctx.config,
        options=_read_options(args, ctx),
        hooks=cli_hooks(ctx),
        parallel=args.parallel,
        force=args.force,
        expect_name=args.expect_name,
    )
    result = report.result
    previous = multihash_to_str(result.previous_head) if result.previous_head else "nothing"
    ctx.out.debug(f"{report.ref} -> {shown_path(result.dest)}: was {previous}")
    ctx.out.debug(f"  in {format_duration(report.seconds)}")

    def human() -> str:
        dest = shown_path(result.dest)
        head = multihash_to_str(result.head)
        if report.up_to_date:
            return f"{dest}: already up to date (head {head})"
        return (
            f"{dest}: head {head}\n"
            f"  {plural(result.new_blocks, 'new block')}, {objects_text(result.objects)}\n"
            f"  {result.objects_fetched} fetched ({format_bytes(result.bytes_fetched)}), "
            f"{result.objects_present} already present"
            + (
                f"\n  --force: {plural(result.files_removed, 'file')} of the replaced chain removed"
                if result.files_removed
                else ""
            )
        )

    ctx.out.result(report.to_json(), human)
    return 0
