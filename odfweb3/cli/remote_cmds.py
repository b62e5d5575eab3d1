"""Commands that read replicas: ``resolve``, ``verify``, ``pull``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from odfweb3.cli.output import format_bytes, format_duration
from odfweb3.cli.text import plural, shown_path
from odfweb3.errors import OdfWeb3Error, ReplicaMismatch, UsageError

if TYPE_CHECKING:
    from odfweb3.cli.main import Context
    from odfweb3.read.compare import ReplicaReport
    from odfweb3.read.replica import RecordSigner, Replica

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
    p.add_argument("--parallel", type=int, default=8, help="concurrent downloads (default 8)")
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


def _key_envelope(args: argparse.Namespace, ctx: Context, *refs: str) -> bytes | None:
    """The ``--key-envelope`` bytes, if given; refused for references that name their own."""
    from odfweb3.read.resolve import read_key_envelope

    src = getattr(args, "key_envelope", None)
    if not src:
        return None
    if refs and not any(r.startswith(("ipfs://", "ipns://")) for r in refs):
        raise UsageError(
            f"--key-envelope is for ipfs:// and ipns:// references; {refs[0]} names its own "
            "key envelope: drop the option"
        )
    data: bytes = read_key_envelope(src, ctx.config)
    return data


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


def _drive_access(args: argparse.Namespace, ctx: Context) -> dict[str, Any]:
    """``open_replica`` keywords for an ArFS private drive: wallet and password, if given.

    The password comes from ``--drive-password-file`` (first line) or the environment,
    never from the command line; it is only used if the ref turns out to be private.
    """
    from odfweb3.cli.publish_cmds import DRIVE_PASSWORD_ENV

    password: str | None = None
    if args.drive_password_prompt:
        from odfweb3.cli.keys_cmds import prompt_secret

        if args.drive_password_file is not None:
            raise UsageError("give the drive password one way: -P or --drive-password-file")
        if not sys.stdin.isatty() or ctx.out.json_mode:
            raise UsageError("-P asks the drive password on a terminal: use --drive-password-file")
        what = vars(args).get("ref") or vars(args).get("dataset") or "the drive"
        password = prompt_secret(ctx, f"drive password of {what}", confirm=False) or None
    elif args.drive_password_file is not None:
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
    else:
        password = str(ctx.env.get(DRIVE_PASSWORD_ENV, "")) or None
    return {"wallet": args.wallet, "drive_password": password}


def _resolve(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.cli.keys_cmds import decrypting_replica
    from odfweb3.read.resolve import resolve_ref

    found = resolve_ref(
        args.ref,
        ctx.config,
        owner=args.owner,
        trustless=args.trustless,
        unseal=lambda replica: decrypting_replica(
            ctx, replica, passphrase_file=args.passphrase_file
        ),
        key_envelope=_key_envelope(args, ctx, args.ref),
        key_envelope_source=f"--key-envelope {args.key_envelope}",
        **_drive_access(args, ctx),
    )
    results = [r for _, r in found]
    for r in results:
        if not r.content_checked:
            # Exit status stays 0: the signed record was verified (docs/resolve.md).
            ctx.out.warn(f"{r.ref}: encrypted and no key here; content not checked")
    ctx.out.result(
        {"ref": args.ref, "results": [r.to_json() for r in results]},
        lambda: "\n".join(r.describe() for r in results),
    )
    return 0


def _local_dataset_id(path: str) -> str:
    """The dataset ID in a local dataset's Seed."""
    from odfweb3.odf.chain import walk_chain
    from odfweb3.odf.identity import DatasetId
    from odfweb3.odf.layout import DatasetReader

    entries = list(walk_chain(DatasetReader.open(path)))
    seed = entries[-1].block.event
    return str(DatasetId.from_bytes(getattr(seed, "dataset_id", None) or b""))


def _verify(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.cli.keys_cmds import decrypting_replica
    from odfweb3.cli.local_dataset import local_dataset
    from odfweb3.odf.chain import walk_chain
    from odfweb3.odf.layout import DatasetReader
    from odfweb3.odf.multihash import multihash_to_str
    from odfweb3.read.compare import compare_replica, exit_status, failed
    from odfweb3.read.replica import LocalReplica
    from odfweb3.read.resolve import open_replica

    if args.lineage:
        return _verify_lineage(args, ctx)
    if not args.against:
        raise UsageError("verify: give --against REF (or --lineage to check a dataset's inputs)")
    from odfweb3.cli.remotes_cmds import replica_ref

    if args.dataset is not None:
        args.dataset = local_dataset(args.dataset, ctx)
    local_id = _local_dataset_id(args.dataset) if args.dataset is not None else None
    args.against = [replica_ref(ctx, ref, local_id) for ref in args.against]
    refs: list[str] = list(args.against)
    envelope = _key_envelope(args, ctx, *args.against)
    reference: Replica
    if args.dataset is not None:
        reference = LocalReplica(DatasetReader.open(args.dataset))
    else:
        if len(refs) < 2:
            raise UsageError("verify: give a local DATASET or at least two --against replicas")
        reference = decrypting_replica(
            ctx,
            open_replica(
                refs.pop(0), ctx.config, key_envelope=envelope, **_drive_access(args, ctx)
            ),
            passphrase_file=args.passphrase_file,
        )
    entries = list(walk_chain(reference.read_block, reference.head()))
    reports: list[ReplicaReport] = []
    for ref in refs:
        try:
            replica: Replica = decrypting_replica(
                ctx,
                open_replica(ref, ctx.config, key_envelope=envelope, **_drive_access(args, ctx)),
                passphrase_file=args.passphrase_file,
            )
        except UsageError:
            raise
        except OdfWeb3Error as exc:
            reports.append(failed(ref, exc))
            continue
        started = time.monotonic()
        with ctx.out.progress(f"verifying {ref}", None) as bar:
            report = compare_replica(
                entries,
                replica,
                deep=args.deep,
                sample=args.sample,
                progress=bar.advance,
                on_total=bar.set_total,
            )
        reports.append(report)
        _verify_detail(ctx, ref, report, time.monotonic() - started)
    code = exit_status(reports)
    data = {
        "reference": reference.name,
        "head": multihash_to_str(entries[0].hash),
        "replicas": [r.to_json() for r in reports],
        "ok": code == 0,
    }
    ctx.out.result(data, lambda: "\n".join(r.describe() for r in reports))
    return code


def _verify_detail(ctx: Context, ref: str, report: ReplicaReport, seconds: float) -> None:
    """``-v``: what was compared and checked for one replica."""
    from odfweb3.odf.multihash import multihash_to_str

    head = multihash_to_str(report.head) if report.head else "-"
    ctx.out.debug(f"{ref}: head {head} ({report.status})")
    if report.objects_checked or report.bytes_checked:
        ctx.out.debug(
            f"  re-hashed {plural(report.objects_checked, 'object')}, "
            f"{format_bytes(report.bytes_checked)}, and every block against the chain rules"
        )
    ctx.out.debug(f"  in {format_duration(seconds)}")


def _verify_lineage(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.cli.keys_cmds import decrypting_replica
    from odfweb3.odf.identity import DatasetId
    from odfweb3.read.lineage_check import (
        chain_resolvers,
        resolver_from_records,
        resolver_from_replicas,
        verify_lineage,
    )
    from odfweb3.read.resolve import open_replica

    if args.dataset is None or args.against:
        raise UsageError("verify --lineage: give one REF and no --against (inputs: --inputs-from)")

    def open_(ref: str, **access: Any) -> Replica:
        # An encrypted publish is decrypted with this keystore's keys first.
        replica = open_replica(ref, ctx.config, **access)
        return decrypting_replica(ctx, replica, passphrase_file=args.passphrase_file)

    explicit: dict[str, Replica] = {}
    for item in args.input:
        did, sep, ref = item.partition("=")
        if not sep or not ref:
            raise UsageError(f"--input {item!r}: expected did:odf:…=REF")
        explicit[str(DatasetId.parse(did))] = open_(ref)
    given = [open_(ref) for ref in args.inputs_from]
    replica = open_(args.dataset, **_drive_access(args, ctx))
    resolve = chain_resolvers(
        lambda did: explicit.get(str(DatasetId.parse(did))),
        resolver_from_replicas(given),
        # The records' inputs maps (_odf.inputs / the upload record's inputs).
        resolver_from_records(replica, open_),
    )
    report = verify_lineage(replica, resolve, deep=args.deep)
    ctx.out.result(report.to_json(), report.describe)
    if report.ok:
        return 0
    if any(i.status == "corrupt" for i in report.inputs):
        return 65  # as verify --against and pull exit on corrupt data
    return 2 if any(i.status == "unreachable" for i in report.inputs) else 1


def _pull(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.backends import target_traits
    from odfweb3.cli.keys_cmds import decrypting_replica
    from odfweb3.odf.multihash import multihash_to_str
    from odfweb3.publish.remotes import Remotes
    from odfweb3.read.pull import pull_dataset
    from odfweb3.read.resolve import open_replica

    remote = Remotes(ctx.config.state_dir).resolve(args.ref)
    via_remote = remote != args.ref and target_traits(remote).offline
    if via_remote:
        args.ref = remote
    replica: Replica = decrypting_replica(
        ctx,
        open_replica(
            args.ref,
            ctx.config,
            key_envelope=_key_envelope(args, ctx, args.ref),
            **_drive_access(args, ctx),
        ),
        passphrase_file=args.passphrase_file,
    )
    signer = _check_signer(ctx, args.ref, replica, args.expect_name, ours=via_remote)
    started = time.monotonic()
    with ctx.out.progress("pulling", None) as bar:
        result = pull_dataset(
            replica,
            args.dest,
            parallel=args.parallel,
            force=args.force,
            progress=bar.advance,
            on_total=bar.set_total,
        )
    up_to_date = result.new_blocks == 0 and result.objects_fetched == 0
    previous = multihash_to_str(result.previous_head) if result.previous_head else "nothing"
    ctx.out.debug(f"{args.ref} -> {shown_path(result.dest)}: was {previous}")
    ctx.out.debug(f"  in {format_duration(time.monotonic() - started)}")

    def human() -> str:
        dest = shown_path(result.dest)
        head = multihash_to_str(result.head)
        if up_to_date:
            return f"{dest}: already up to date (head {head})"
        return (
            f"{dest}: head {head}\n"
            f"  {plural(result.new_blocks, 'new block')}, "
            f"{plural(result.objects_fetched, 'object')} fetched "
            f"({format_bytes(result.bytes_fetched)}), {result.objects_present} already present"
            + (
                f"\n  --force: {plural(result.files_removed, 'file')} of the replaced chain removed"
                if result.files_removed
                else ""
            )
        )

    signed = {"signedBy": _signer_json(signer)} if signer is not None else {}
    ctx.out.result(result.to_json() | {"upToDate": up_to_date} | signed, human)
    return 0


def _signer_of(replica: Replica) -> RecordSigner | None:
    from odfweb3.read.replica import SignedRecordSource
    from odfweb3.read.sealed_replica import DecryptingReplica

    if isinstance(replica, SignedRecordSource):
        return replica.signed_by()
    if isinstance(replica, DecryptingReplica):
        return replica.signer()
    return None


def _signer_json(signer: RecordSigner) -> dict[str, Any]:
    return {"name": signer.name, "datasetKey": signer.dataset_key, "localKey": signer.local_key}


def _check_signer(
    ctx: Context, ref: str, replica: Replica, expected: str | None, *, ours: bool = False
) -> RecordSigner | None:
    """Say who signed the record ``ref`` was read through; refuse another than ``expected``,
    or, for a remote of this machine's (``ours``) without ``expected``, one that is neither
    the dataset's key nor a key this machine holds.

    A directory anyone may write can hold the dataset's chain under a record signed by any
    key: the chain checks out (content addressed), the name vouching for it is the signer's.

    Raises:
        UsageError: ``--expect-name`` for a replica that names no signer.
        ReplicaMismatch: the record is signed by another name than expected.
    """
    signer = _signer_of(replica)
    if signer is None:
        if expected is not None:
            raise UsageError(f"--expect-name: {ref} is not read through an IPNS record (car:DIR)")
        return None
    if expected is not None and signer.name != expected.strip().removeprefix("/ipns/"):
        raise ReplicaMismatch(
            f"{ref}: the record is signed by {signer.name}, not --expect-name {expected}; "
            "nothing pulled: get the directory from that name's publisher"
        )
    if ours and expected is None and not signer.dataset_key and signer.local_key is None:
        raise ReplicaMismatch(
            f"{ref}: the record is signed by {signer.name}, neither the dataset's key nor one "
            "of this machine's, in a directory this machine publishes to (a remote); nothing "
            f"pulled: pass --expect-name {signer.name} if that is its publisher"
        )
    if signer.dataset_key:
        ctx.out.debug(f"{ref}: record signed by {signer.name}, the dataset's own key")
    elif signer.local_key is not None:
        ctx.out.debug(
            f"{ref}: record signed by {signer.name}, this machine's key {signer.local_key} "
            "(not the dataset's own key)"
        )
    else:
        ctx.out.warn(
            f"{ref}: record signed by {signer.name}: not the dataset's own key, and not a key "
            "this machine knows; pass --expect-name NAME to accept only its publisher's"
        )
    return signer
