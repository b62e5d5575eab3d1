"""``odfweb3 describe``: print a dataset's discovery descriptor (JSON-LD or Turtle) or its
Croissant 1.1 metadata."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from odfweb3.cli.main import Context
    from odfweb3.odf.chain import ChainEntry
    from odfweb3.odf.layout import DatasetReader

__all__ = ["register"]


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``describe`` to the CLI."""
    p = sub.add_parser(
        "describe",
        parents=[common],
        help="print the dataset's discovery descriptor (Dublin Core + FOAF, JSON-LD or Turtle)",
        description="Build the JSON-LD descriptor published beside the dataset: title, "
        "description and keywords from SetInfo, license from SetLicense, creator from "
        "publisher in odfweb3.yaml (without publisher.name: the IPNS name that signs the "
        "dataset's record, as a foaf:Agent), dates from the Seed and the head, the head hash "
        "and the given locators; check it like a SHACL shape. Exit status 1 when a required "
        "field is missing (each problem says how to set it).",
    )
    p.add_argument("dataset", help="dataset directory")
    p.add_argument(
        "--format",
        choices=("jsonld", "ttl", "croissant", "dcat", "datacite"),
        default="jsonld",
        help="the Dublin Core descriptor as JSON-LD (default) or Turtle, or Croissant 1.1 "
        "(ML catalogues: data files with their URLs and SHA-256, record sets from "
        "SetDataSchema, lineage as prov:wasDerivedFrom), or DCAT 3 as JSON-LD (a "
        "dcat:DatasetSeries per dataset ID, a dcat:Dataset for the head, a dcat:Distribution "
        "per data file with its SHA-256 as spdx:checksum), or DataCite 4.5 JSON for a DOI "
        "(the head's version; --concept: the dataset across versions)",
    )
    p.add_argument("--title", default=None, help="title (default: SetInfo's first sentence)")
    p.add_argument("--ipfs", metavar="CID", default=None, help="root CID, listed as ipfs://CID")
    p.add_argument("--ipns", metavar="NAME", default=None, help="IPNS name, listed as ipns://NAME")
    p.add_argument("--ar", metavar="ID", default=None, help="Arweave manifest id, as ar://ID")
    p.add_argument(
        "--gateway",
        metavar="URL",
        default=None,
        help="with --ipfs: Croissant data file URLs through this IPFS gateway "
        "(URL/ipfs/CID/data/<hash>) instead of ipfs://CID/data/<hash>",
    )
    p.add_argument(
        "--concept",
        action="store_true",
        help="with --format datacite: the concept record (the dataset across its versions, "
        "HasVersion the head) instead of the head's (IsVersionOf the concept)",
    )
    p.set_defaults(handler=_describe)


def _identity(args: argparse.Namespace, ctx: Context, entries: list[ChainEntry]) -> str:
    """Who publishes, when publisher.name is not set: the IPNS name the record is signed by.

    ``--ipns NAME`` if given; else the name of this keystore's key for the dataset (the
    one ``publish --to car:DIR`` / ``ipfs`` signs with); else the dataset ID's own key.
    """
    from odfweb3.odf.identity import DatasetId
    from odfweb3.odf.model_gen import Seed

    if args.ipns:
        name = str(args.ipns)
        return name if name.startswith("ipns://") else f"ipns://{name}"
    from odfweb3.backends import SigningIdentity, all_backends

    seed = entries[-1].block.event
    did = DatasetId.from_bytes(seed.dataset_id or b"") if isinstance(seed, Seed) else None
    if did is None:
        return ""
    signer = next(b for b in all_backends() if isinstance(b, SigningIdentity))
    return signer.signing_identity(str(did), ctx.config)


def _describe(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.descriptor import build_descriptor, to_turtle, validate_descriptor
    from odfweb3.odf.chain import walk_chain
    from odfweb3.odf.layout import DatasetReader

    reader = DatasetReader.open(args.dataset)
    entries = list(walk_chain(reader))
    locators = {k: v for k in ("ipfs", "ipns", "ar") if (v := getattr(args, k))}
    publisher = ctx.config.get("publisher")
    if args.format in ("croissant", "dcat", "datacite"):
        return _other_format(args, ctx, reader, entries, publisher)
    doc = build_descriptor(
        entries, publisher, locators, title=args.title, identity=_identity(args, ctx, entries)
    )
    problems = validate_descriptor(doc)
    errors = [p for p in problems if p.severity == "error"]
    turtle = to_turtle(doc) if args.format == "ttl" else None
    for p in problems:
        ctx.out.warn(f"descriptor {p.message}")
    data: dict[str, Any] = {
        "format": args.format,
        "valid": not errors,
        "problems": [p.to_json() for p in problems],
        "descriptor": doc,
    }
    if turtle is not None:
        data["turtle"] = turtle

    def human() -> str:
        if turtle is not None:
            return turtle
        # The content first; the (long, always the same) @context after it.
        content = {k: v for k, v in doc.items() if k != "@context"}
        return json.dumps(content | {"@context": doc["@context"]}, indent=2, ensure_ascii=False)

    ctx.out.result(data, human, product=True)
    return 1 if errors else 0


def _landing(args: argparse.Namespace) -> str | None:
    if args.ipns:
        name = str(args.ipns)
        return name if name.startswith("ipns://") else f"ipns://{name}"
    if args.ipfs and args.gateway:
        return f"{str(args.gateway).rstrip('/')}/ipfs/{str(args.ipfs).removeprefix('ipfs://')}"
    for scheme in ("ipfs", "ar"):
        value = getattr(args, scheme)
        if value:
            value = str(value)
            return value if value.startswith(f"{scheme}://") else f"{scheme}://{value}"
    return None


def _other_format(
    args: argparse.Namespace,
    ctx: Context,
    reader: DatasetReader,
    entries: list[ChainEntry],
    publisher: Any,
) -> int:
    from odfweb3.descriptor.croissant import build_croissant, data_file_urls, local_sha256
    from odfweb3.descriptor.croissant_check import croissant_problems
    from odfweb3.descriptor.datacite import build_datacite, datacite_problems
    from odfweb3.descriptor.dcat import build_dcat, dcat_problems

    if args.format == "datacite":
        doc = build_datacite(
            entries,
            publisher,
            which="concept" if args.concept else "version",
            landing=_landing(args),
            title=args.title,
            identity=_identity(args, ctx, entries),
        )
        return _result(args, ctx, doc, datacite_problems(doc))
    url_of = data_file_urls(ipfs=args.ipfs, ar=args.ar, gateway=args.gateway)
    if args.format == "dcat" and not (args.ipfs or args.ar):
        # DCAT's accessURL is an IRI: the local file's, not a path relative to nowhere.
        url_of = lambda rel: (reader.root / rel).as_uri()  # noqa: E731
    build = build_croissant if args.format == "croissant" else build_dcat
    doc = build(
        entries,
        publisher,
        url_of=url_of,
        sha256_of=local_sha256(reader),
        landing=_landing(args),
        title=args.title,
        identity=_identity(args, ctx, entries),
    )
    problems = croissant_problems(doc) if args.format == "croissant" else dcat_problems(doc)
    return _result(args, ctx, doc, problems)


def _result(
    args: argparse.Namespace, ctx: Context, doc: dict[str, Any], problems: list[str]
) -> int:
    for line in problems:
        ctx.out.warn(f"{args.format}: {line}")
    data: dict[str, Any] = {"format": args.format, "missing": problems, args.format: doc}
    ctx.out.result(data, lambda: json.dumps(doc, indent=2, ensure_ascii=False), product=True)
    return 0
