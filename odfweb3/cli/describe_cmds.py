"""``odfweb3 describe``: print a dataset's discovery descriptor (JSON-LD or Turtle)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from odfweb3.descriptor import build_descriptor, to_turtle, validate_descriptor
from odfweb3.odf.chain import walk_chain
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
        "publisher in odfweb3.yaml, dates from the Seed and the head, the head hash and the "
        "given locators; check it like a SHACL shape. Exit status 1 when a required field is "
        "missing (each problem says how to set it).",
    )
    p.add_argument("dataset", help="dataset directory")
    p.add_argument(
        "--format",
        choices=("jsonld", "ttl"),
        default="jsonld",
        help="JSON-LD (default) or Turtle",
    )
    p.add_argument("--title", default=None, help="title (default: SetInfo's first sentence)")
    p.add_argument("--ipfs", metavar="CID", default=None, help="root CID, listed as ipfs://CID")
    p.add_argument("--ipns", metavar="NAME", default=None, help="IPNS name, listed as ipns://NAME")
    p.add_argument("--ar", metavar="ID", default=None, help="Arweave manifest id, as ar://ID")
    p.set_defaults(handler=_describe)


def _describe(args: argparse.Namespace, ctx: Any) -> int:
    reader = DatasetReader.open(args.dataset)
    entries = list(walk_chain(reader))
    locators = {k: v for k in ("ipfs", "ipns", "ar") if (v := getattr(args, k))}
    publisher = ctx.config.get("publisher")
    doc = build_descriptor(entries, publisher, locators, title=args.title)
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
        return json.dumps(doc, indent=2, ensure_ascii=False)

    ctx.out.result(data, human, product=True)
    return 1 if errors else 0
