"""``odfweb3 log`` and ``odfweb3 lineage``: a dataset's history and its inputs, to look at."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from odfweb3.cli.output import format_bytes
from odfweb3.cli.text import plural, shown_target
from odfweb3.errors import OdfWeb3Error, UsageError

if TYPE_CHECKING:
    from odfweb3.cli.main import Context
    from odfweb3.odf.chain import ChainEntry, DatasetObject, LinkingBlock, LinkSource
    from odfweb3.publish.state import PublishState

__all__ = ["register"]

FORMATS = ("text", "dot", "mermaid", "svg")


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``log`` and ``lineage``."""
    p = sub.add_parser(
        "log",
        parents=[common],
        help="a dataset's blocks, newest first: event, time, records and bytes added",
        description="List the blocks of a dataset directory or a replica (car:DIR, ipns://, "
        "ipfs://, ar://, did:odf:), newest first: sequence number, hash, event, system time, "
        "and the records and bytes (data + checkpoint) each added, and the linked objects "
        "(ODF RFC-017) each added: counted from the data files of a local dataset (each "
        "object once, in the oldest block naming it), from each block's linkedObjects "
        "summary for a replica. Every block (and every data file read) is hash-checked on "
        "the way.",
    )
    p.add_argument(
        "dataset", help="dataset directory (or its kamu name in a workspace) or replica reference"
    )
    p.add_argument("-n", "--limit", type=int, default=None, metavar="N", help="newest N blocks")
    p.set_defaults(handler=_log)

    p = sub.add_parser(
        "lineage",
        parents=[common],
        help="the derivative graph: inputs, the heads consumed, where each is published",
        description="Draw a dataset's lineage: the inputs its SetTransform declares, the input "
        "block its latest ExecuteTransform consumed, and where each dataset is published (from "
        "this machine's publish state). Inputs given with --inputs are followed to their own "
        "inputs. Formats: text, dot (Graphviz), mermaid, svg (standalone, opens in a browser).",
    )
    p.add_argument("dataset", help="dataset directory or replica reference")
    p.add_argument(
        "--inputs",
        nargs="+",
        default=[],
        metavar="REF",
        help="input datasets (directories or replicas), matched by the ID in their Seed",
    )
    p.add_argument("--format", choices=FORMATS, default="text", help="output format")
    p.add_argument("-o", "--output", type=Path, default=None, metavar="FILE", help="write here")
    p.set_defaults(handler=_lineage)


def _is_local(ref: str) -> bool:
    """A local dataset directory: no reference a backend reads, no ``did:``."""
    from odfweb3.backends import backend_for_ref

    return "://" not in ref and not ref.startswith("did:") and backend_for_ref(ref) is None


def _chain(ref: str, ctx: Context) -> list[ChainEntry]:
    """The verified chain of a directory or a replica, head first."""
    from odfweb3.cli.local_dataset import local_dataset
    from odfweb3.odf.chain import walk_chain
    from odfweb3.odf.layout import DatasetReader

    if _is_local(ref):
        return list(walk_chain(DatasetReader.open(local_dataset(ref, ctx))))
    from odfweb3.read.resolve import open_replica

    replica = open_replica(ref, ctx.config)
    return list(walk_chain(replica.read_block, replica.head()))


class _LinksByBlock:
    """A link source recording, per block, the linked objects its data file names."""

    def __init__(self, links: LinkSource) -> None:
        self._links = links
        self.by_block: dict[bytes, list[DatasetObject]] = {}

    def __call__(
        self, block: LinkingBlock, data: DatasetObject, columns: tuple[str, ...]
    ) -> list[DatasetObject]:
        objs = list(self._links(block, data, columns))
        self.by_block.setdefault(block.hash, []).extend(objs)
        return objs


def _log(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.cli.local_dataset import local_dataset
    from odfweb3.history import block_log
    from odfweb3.odf.chain import iter_objects, walk_chain
    from odfweb3.odf.layout import DatasetReader
    from odfweb3.odf.multihash import multihash_to_str
    from odfweb3.odf.parquet_links import local_links

    if args.limit is not None and args.limit < 1:
        raise UsageError("log: --limit must be at least 1")
    linked: dict[bytes, list[DatasetObject]] | None = None
    if _is_local(args.dataset):
        reader = DatasetReader.open(local_dataset(args.dataset, ctx))
        chain = list(walk_chain(reader))
        # The data files' link columns, read (each file hash-checked) only when a schema
        # declares ObjectLink columns; a file that cannot be read fails the log (exit 65).
        recorder = _LinksByBlock(local_links(reader))
        for _ in iter_objects(chain, recorder):
            pass
        linked = recorder.by_block
    else:
        chain = _chain(args.dataset, ctx)
    entries = block_log(chain, linked)
    shown = entries[: args.limit] if args.limit else entries

    def human() -> str:
        lines = []
        for e in shown:
            added = ""
            if e.records_added or e.bytes_added:
                added = f"  +{plural(e.records_added, 'record')}, +{format_bytes(e.bytes_added)}"
            if e.checkpoint_carried:
                added += "  (checkpoint carried)"
            if e.linked_added:
                what = plural(e.linked_added, "linked object")
                added += f"  +{what} ({format_bytes(e.linked_bytes_added)})"
            lines.append(
                f"#{e.sequence:<4} {multihash_to_str(e.hash)[:20]}…  {e.event:<16} "
                f"{e.system_time}{added}"
            )
        if len(shown) < len(entries):
            lines.append(f"({plural(len(entries) - len(shown), 'older block')} not shown)")
        return "\n".join(lines)

    ctx.out.result({"dataset": args.dataset, "blocks": [e.to_json() for e in shown]}, human)
    return 0


def _where(state: PublishState) -> str:
    from odfweb3.backends import backend_for_target

    place = shown_target(state.target)
    backend = backend_for_target(state.target)
    locator = backend.record_locator(state) if backend is not None else None
    return f"{place} ({locator})" if locator else place


def _published(ctx: Context) -> dict[str, list[str]]:
    """Where each dataset is published, from this machine's state (node and offline)."""
    from odfweb3.publish.offline import OfflineIndex
    from odfweb3.publish.state import StateStore

    out: dict[str, list[str]] = {}
    states = StateStore(ctx.config.state_dir).all()
    try:
        states += [s for _, s, _ in OfflineIndex(ctx.config.state_dir).states() if s is not None]
    except OdfWeb3Error as exc:
        ctx.out.warn(f"offline publishes not shown: {exc}")
    for state in states:
        out.setdefault(state.dataset_id, []).append(_where(state))
    return out


def _lineage(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.history import lineage_graph, to_dot, to_mermaid, to_svg
    from odfweb3.odf.identity import DatasetId
    from odfweb3.odf.model_gen import Seed

    entries = _chain(args.dataset, ctx)
    inputs: dict[str, tuple[str, list[ChainEntry]]] = {}
    for ref in args.inputs:
        chain = _chain(ref, ctx)
        seed = chain[-1].block.event
        if isinstance(seed, Seed):
            inputs[str(DatasetId.from_bytes(seed.dataset_id or b""))] = (ref, chain)
    graph = lineage_graph(entries, args.dataset, inputs, _published(ctx))
    if args.format == "dot":
        text = to_dot(graph)
    elif args.format == "mermaid":
        text = to_mermaid(graph)
    elif args.format == "svg":
        text = to_svg(graph)
    else:
        text = _text(graph)
    if args.output is not None:
        args.output.write_text(text, encoding="utf-8")
        ctx.out.result(
            {"written": str(args.output), "format": args.format} | graph.to_json(),
            f"wrote {args.output} ({args.format})",
        )
        return 0
    ctx.out.result(graph.to_json() | {"format": args.format}, text, product=True)
    return 0


def _text(graph: Any) -> str:
    lines = []
    for did, node in graph.nodes.items():
        head = node.head or "not available here"
        lines.append(f"{node.name}\n  {node.kind} {did}\n  head {head}")
        lines += [f"  published at {p}" for p in node.published]
        for e in graph.edges:
            if e.consumer == did:
                at = f" up to {e.consumed}" if e.consumed else ""
                lines.append(f"  <- input {e.alias} ({e.input}){at}")
    return "\n".join(lines)
