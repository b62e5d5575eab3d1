"""Local dataset commands: ``example``, ``inspect``, ``validate``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from odfweb3.cli.output import format_bytes
from odfweb3.cli.text import key_values, objects_text, plural, shown_path
from odfweb3.errors import UsageError

if TYPE_CHECKING:
    from odfweb3.cli.main import Context
    from odfweb3.odf.identity import DatasetKeyPair

__all__ = ["parse_size", "register"]

_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1000, "KIB": 1 << 10, "M": 1 << 20, "MB": 10**6}
_UNITS |= {"MIB": 1 << 20, "G": 1 << 30, "GB": 10**9, "GIB": 1 << 30}


def parse_size(text: str) -> int:
    """Parse ``64K``, ``1.5MiB``, ``1GB``, ``1000``… into bytes."""
    t = text.strip().upper()
    num = t.rstrip("KMGIB")
    unit = t[len(num) :]
    try:
        value = float(num)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (try 64K, 10MiB, 1GB)") from None
    if unit not in _UNITS or value < 0:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (try 64K, 10MiB, 1GB)")
    return int(value * _UNITS[unit])


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the dataset commands to the CLI."""
    p = sub.add_parser(
        "example",
        parents=[common],
        help="write an example root dataset (or append blocks to one)",
        description="Write an example root dataset: Seed, SetInfo, SetLicense, SetDataSchema "
        "(the ODF schema, before any data, as kamu requires) and N AddData blocks, each with a "
        "Parquet data file (the ODF system columns and a pseudo-random payload column) and a "
        "checkpoint. Each example gets a fresh identity key (its own dataset ID) unless --seed "
        "makes it deterministic.",
    )
    p.add_argument("dir", help="dataset directory to create (or extend with --append)")
    p.add_argument("--blocks", type=int, default=5, help="AddData blocks (default 5)")
    p.add_argument(
        "--data-bytes",
        type=parse_size,
        default=None,
        help="total new data (default 64K; with --append 16K per block)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="makes the dataset deterministic: same seed, same dataset ID, same bytes "
        "(default: a fresh identity key and random data, so each example is its own dataset)",
    )
    p.add_argument("--append", type=int, metavar="K", help="append K AddData blocks instead")
    p.add_argument(
        "--linked-objects",
        type=int,
        metavar="N",
        help="N linked objects per AddData block (ODF RFC-017: stored in data/<multihash>, "
        "named from a content_hash ObjectLink column, kamu's versioned-file archetype); "
        "--data-bytes is then the objects' total (with --append on such a dataset: default 1)",
    )
    p.add_argument(
        "--derivative-of",
        nargs="+",
        metavar="INPUT_DIR",
        help="write a derivative dataset consuming these inputs instead (--blocks: "
        "ExecuteTransform blocks; with --append K: K more consuming what the inputs gained)",
    )
    p.set_defaults(handler=_example)

    p = sub.add_parser(
        "inspect",
        parents=[common],
        help="show a dataset's identity, head and contents",
    )
    p.add_argument("path", help="dataset directory, or its kamu name inside a kamu workspace")
    p.set_defaults(handler=_inspect)

    p = sub.add_parser(
        "validate",
        parents=[common],
        help="check every hash and chain rule (and with --deep every data file)",
        description="Recompute every block hash and check the Metadata Chain rules; with --deep "
        "also check that every data file and checkpoint exists with the recorded size and hash, "
        "and every linked object the data files' ObjectLink columns name (ODF RFC-017) exists, "
        "hashes to its name and adds up to its block's linkedObjects summary; files in data/ "
        "that nothing names are listed in one note line. Exit status 1 when any rule is broken.",
    )
    p.add_argument("path", help="dataset directory, or its kamu name inside a kamu workspace")
    p.add_argument(
        "--deep",
        action="store_true",
        help="also hash every data file, checkpoint and linked object",
    )
    p.add_argument(
        "--inputs",
        nargs="+",
        metavar="DIR",
        help="a derivative's input datasets: check every consumed block and offset against them",
    )
    p.set_defaults(handler=_validate)


def license_label(spdx_id: str | None, name: str | None) -> str | None:
    """One license form everywhere (docs/concepts.md, "Words")."""
    from odfweb3.read.claims import license_label as label

    return label(spdx_id, name)


def _example(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.odf.builder import append_blocks, create_root_dataset
    from odfweb3.odf.derivative import append_transform, create_derivative_dataset
    from odfweb3.odf.identity import generate_keypair
    from odfweb3.odf.multihash import multihash_to_str

    out = ctx.out
    # Without --seed: a fresh key (its own dataset ID) and random data.
    keypair = generate_keypair() if args.seed is None else None
    import secrets  # random, hmac, hashlib: not for every command's start

    seed = secrets.randbits(63) if args.seed is None else args.seed
    if args.blocks < 0 or (args.append is not None and args.append < 1):
        raise UsageError("example: block counts must be positive")
    linked = args.linked_objects
    if linked is not None and linked < 1:
        raise UsageError("example: --linked-objects must be at least 1")
    if args.derivative_of:
        if linked is not None:
            raise UsageError(
                "example: --linked-objects is for root datasets (kamu links objects from "
                "AddData only); give it to the input example instead"
            )
        if args.append is not None:
            built = append_transform(args.dir, args.derivative_of, transactions=args.append)
        else:
            if args.blocks < 1:
                raise UsageError("example: a derivative needs --blocks of at least 1")
            built = create_derivative_dataset(
                args.dir, args.derivative_of, transactions=args.blocks, seed=seed, keypair=keypair
            )
    elif args.append is not None:
        total = args.data_bytes if args.data_bytes is not None else 16 * 1024 * args.append
        with out.progress("appending", args.append, unit="blocks") as bar:
            built = append_blocks(
                args.dir,
                args.append,
                data_bytes=total,
                block_progress=bar.advance,
                linked_objects=linked,
            )
    else:
        total = args.data_bytes if args.data_bytes is not None else 64 * 1024
        # Counted in data blocks: the bytes a block writes are not known beforehand.
        with out.progress("writing", args.blocks, unit="blocks") as bar:
            built = create_root_dataset(
                args.dir,
                blocks=args.blocks,
                data_bytes=total,
                seed=seed,
                block_progress=bar.advance,
                keypair=keypair,
                linked_objects=linked or 0,
            )
    if built.keypair is not None:
        _keep_identity_key(ctx, built.keypair)
    data: dict[str, Any] = {
        "path": str(built.path),
        "head": multihash_to_str(built.head),
        "blocks": built.blocks,
        "dataBytesWritten": built.data_bytes,
    }
    if built.keypair is not None:
        data["datasetId"] = str(built.keypair.dataset_id)
    out.result(
        data,
        lambda: (
            f"wrote {shown_path(built.path)}: {plural(built.blocks, 'block')}, "
            f"{format_bytes(built.data_bytes)} new data\nhead {multihash_to_str(built.head)}"
        ),
    )
    return 0


def _keep_identity_key(ctx: Context, keypair: DatasetKeyPair) -> None:
    """Store the example's identity key, so its IPNS name follows from its dataset ID."""
    from odfweb3.crypto.keystore import Keystore

    keystore = Keystore(ctx.config.keystore_dir)
    label = str(keypair.dataset_id)
    if not keystore.has(label):
        keystore.store(label, keypair.signing_key())
        ctx.out.debug(f"stored the dataset's identity key in {keystore.root}")


def _inspect(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.api.local import inspect
    from odfweb3.cli.local_dataset import local_dataset
    from odfweb3.odf.layout import DatasetReader
    from odfweb3.odf.multihash import multihash_to_str

    reader = DatasetReader.open(local_dataset(args.path, ctx))
    s = inspect(reader.root)
    js = s.to_json() | {"path": str(reader.root)}

    def human() -> str:
        items: list[tuple[str, object]] = [
            ("path", shown_path(reader.root)),
            ("dataset", s.dataset_id),
            ("kind", js["kind"]),
            ("head", multihash_to_str(s.head)),
            ("blocks", s.blocks),
            (
                "data",
                f"{plural(s.data_files, 'file')}, {format_bytes(s.data_bytes)} "
                f"({s.data_bytes} bytes), {plural(s.records, 'record')}",
            ),
            (
                "checkpoints",
                f"{plural(s.checkpoints, 'file')}, {format_bytes(s.checkpoint_bytes)} "
                f"({s.checkpoint_bytes} bytes)",
            ),
            ("watermark", s.watermark.isoformat() if s.watermark else "-"),
            ("created", s.created.isoformat()),
            ("modified", s.modified.isoformat()),
        ]
        if s.linked:
            linked = (
                f"{plural(s.linked, 'object')}, {format_bytes(s.linked_bytes)} "
                f"({s.linked_bytes} bytes)"
            )
            items.insert(
                next(i for i, kv in enumerate(items) if kv[0] == "watermark"), ("linked", linked)
            )
        if s.info is not None:
            items.append(("info", s.info.description))
            items.append(("keywords", ", ".join(s.info.keywords or ())))
        if s.license is not None:
            items.append(
                (
                    "license",
                    license_label(s.license.spdx_id or s.license.short_name, s.license.name),
                )
            )
        return "\n".join(key_values(items, indent=""))

    ctx.out.result(js, human)
    return 0


def _validate(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.api.local import validate
    from odfweb3.cli.hooks import cli_hooks
    from odfweb3.cli.local_dataset import local_dataset
    from odfweb3.odf.chain import walk_chain
    from odfweb3.odf.layout import DatasetReader
    from odfweb3.odf.multihash import multihash_to_str

    out = ctx.out
    args.path = local_dataset(args.path, ctx)
    if args.inputs:
        args.inputs = [local_dataset(i, ctx) for i in args.inputs]
    if out.verbosity >= 1:
        for entry in walk_chain(DatasetReader.open(args.path)):  # head first
            kind = type(entry.block.event).__name__
            out.debug(
                f"block {entry.block.sequence_number:>4} {multihash_to_str(entry.hash)} {kind}"
            )
    report = validate(args.path, deep=args.deep, inputs=args.inputs or (), hooks=cli_hooks(ctx))

    def human() -> str:
        head = multihash_to_str(report.head) if report.head else "-"
        lines = [f"{shown_path(report.path)}: head {head}, {plural(report.blocks, 'block')}"]
        if report.deep:
            lines.append(
                f"checked {objects_text(report.objects)}, "
                f"{format_bytes(report.bytes_hashed)} ({report.bytes_hashed} bytes) hashed"
            )
        if report.ok:
            lines.append("valid")
        else:
            lines.append(f"INVALID: {plural(len(report.violations), 'problem')}")
            lines.extend(f"  {v}" for v in report.violations)
        if report.orphans:
            shown = ", ".join(report.orphans[:3]) + (", ..." if len(report.orphans) > 3 else "")
            lines.append(
                f"note: {plural(len(report.orphans), 'file')} in data/ that no block and no "
                f"ObjectLink names, never published: {shown}"
            )
        return "\n".join(lines)

    out.result(report.to_json(), human)
    return 0 if report.ok else 1
