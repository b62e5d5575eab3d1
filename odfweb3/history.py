"""A dataset's history and lineage as a person looks at them.

Pure functions over verified chains (head first, as :func:`odfweb3.odf.chain.walk_chain`
yields them); no I/O:

- :func:`block_log`: one :class:`LogEntry` per block, newest first: event, system time,
  records and bytes added (like ``kamu log``): an object counts once, in the block that
  first names it, so a block that carries the previous checkpoint on (its
  ``newCheckpoint`` is the one ``prevCheckpoint`` names, kamu's writers do this when a
  transaction writes no new one) adds no checkpoint bytes; the linked objects (ODF
  RFC-017) an AddData's data file names count the same way, read from the file when it is
  at hand, else as the block's ``opendatafabric.org/linkedObjects`` summary says;
- :func:`lineage_graph`: the derivative graph: each dataset, the inputs its
  ``SetTransform`` declares, the input head its latest ``ExecuteTransform`` consumed, and
  where each dataset is published; rendered by :func:`to_dot` (Graphviz),
  :func:`to_mermaid` and :func:`to_svg` (a standalone SVG, drawn here, no external tool).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from xml.sax.saxutils import escape

from odfweb3.odf.chain import ChainEntry, DatasetObject
from odfweb3.odf.identity import DatasetId
from odfweb3.odf.linked import decode_summary
from odfweb3.odf.model_gen import AddData, ExecuteTransform, Seed, SetInfo, SetTransform
from odfweb3.odf.multihash import multihash_to_str

__all__ = [
    "LineageGraph",
    "LineageNode",
    "LogEntry",
    "block_log",
    "lineage_graph",
    "to_dot",
    "to_mermaid",
    "to_svg",
]


@dataclass(frozen=True)
class LogEntry:
    """One block as ``odfweb3 log`` shows it."""

    sequence: int
    hash: bytes
    event: str
    system_time: str
    records_added: int
    bytes_added: int
    checkpoint_carried: bool = False
    linked_added: int = 0
    linked_bytes_added: int = 0
    # "files": counted from the data file's link columns (distinct, new objects only);
    # "summary": the block's linkedObjects summary (kamu's naive count: every link)
    linked_from: str | None = None

    def to_json(self) -> dict[str, object]:
        """Stable JSON form."""
        return {
            "sequence": self.sequence,
            "hash": multihash_to_str(self.hash),
            "event": self.event,
            "systemTime": self.system_time,
            "recordsAdded": self.records_added,
            "bytesAdded": self.bytes_added,
            "checkpointCarried": self.checkpoint_carried,
            "linkedObjectsAdded": self.linked_added,
            "linkedBytesAdded": self.linked_bytes_added,
            "linkedCountedFrom": self.linked_from,
        }


def block_log(
    entries: Sequence[ChainEntry],
    linked: Mapping[bytes, Sequence[DatasetObject]] | None = None,
) -> list[LogEntry]:
    """Every block, newest first, with the records and bytes (data + checkpoint) it added,
    and the linked objects it added.

    An object (data file, checkpoint or linked object, by physical hash) is counted in the
    oldest block that names it only: a carried checkpoint is the previous block's object,
    not a new one. ``linked``: per block hash, the linked objects its data file names (read
    from the files, e.g. ``iter_objects`` with a link source); without it, each AddData's
    ``opendatafabric.org/linkedObjects`` summary is shown as it stands (a replica's data
    files are not fetched for a log).

    Raises:
        FormatError: a block's linkedObjects summary is malformed (without ``linked``).
    """
    out = []
    seen: set[bytes] = set()
    for entry in reversed(entries):  # oldest first: the first block to name an object adds it
        event = entry.block.event
        records = 0
        nbytes = 0
        carried = False
        n_linked = linked_bytes = 0
        linked_from: str | None = None
        if isinstance(event, AddData | ExecuteTransform):
            if event.new_data is not None:
                if _first_time(event.new_data.physical_hash, seen):
                    nbytes += event.new_data.size
                interval = event.new_data.offset_interval
                if interval is not None:
                    records = interval.end - interval.start + 1
            checkpoint = event.new_checkpoint
            if checkpoint is not None:
                carried = (
                    checkpoint.physical_hash is not None
                    and checkpoint.physical_hash == event.prev_checkpoint
                )
                if _first_time(checkpoint.physical_hash, seen):
                    nbytes += checkpoint.size
        if linked is not None and entry.hash in linked:
            linked_from = "files"
            for obj in linked[entry.hash]:
                if _first_time(obj.hash, seen):
                    n_linked += 1
                    linked_bytes += obj.size or 0
        elif linked is None and isinstance(event, AddData):
            summary = decode_summary(event, f"block #{entry.block.sequence_number}")
            if summary is not None:
                linked_from = "summary"
                n_linked, linked_bytes = summary.num_objects_naive, summary.size_naive
        out.append(
            LogEntry(
                entry.block.sequence_number,
                entry.hash,
                type(event).__name__,
                entry.block.system_time.isoformat(),
                records,
                nbytes,
                carried,
                n_linked,
                linked_bytes,
                linked_from,
            )
        )
    out.reverse()
    return out


def _first_time(physical_hash: bytes | None, seen: set[bytes]) -> bool:
    """Whether an object is named for the first time (an unnamed one always counts)."""
    if physical_hash is None:
        return True
    if physical_hash in seen:
        return False
    seen.add(physical_hash)
    return True


@dataclass
class LineageNode:
    """A dataset of the graph: what is known of it here."""

    dataset_id: str
    name: str
    kind: str = "input"
    head: str | None = None
    published: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class LineageEdge:
    """``consumer`` reads ``input`` (as ``alias``), last up to block ``consumed``."""

    input: str
    consumer: str
    alias: str
    consumed: str | None


@dataclass
class LineageGraph:
    """Nodes (the dataset first) and edges, input to consumer."""

    nodes: dict[str, LineageNode]
    edges: list[LineageEdge]

    def to_json(self) -> dict[str, object]:
        """Stable JSON form."""
        return {
            "datasets": [
                {
                    "datasetId": n.dataset_id,
                    "name": n.name,
                    "kind": n.kind,
                    "head": n.head,
                    "published": n.published,
                }
                for n in self.nodes.values()
            ],
            "edges": [
                {"input": e.input, "consumer": e.consumer, "alias": e.alias, "consumed": e.consumed}
                for e in self.edges
            ],
        }


def _seed_id(entries: Sequence[ChainEntry]) -> str:
    seed = entries[-1].block.event
    if not isinstance(seed, Seed):
        raise ValueError("the chain does not end at a Seed")
    return str(DatasetId.from_bytes(seed.dataset_id or b""))


def _describe(entries: Sequence[ChainEntry], name: str, published: list[str]) -> LineageNode:
    seed = entries[-1].block.event
    kind = seed.dataset_kind.name.capitalize() if isinstance(seed, Seed) else "unknown"
    title = name
    for entry in entries:
        if isinstance(entry.block.event, SetInfo) and entry.block.event.description:
            title = f"{name}: {entry.block.event.description}"
            break
    return LineageNode(_seed_id(entries), title, kind, multihash_to_str(entries[0].hash), published)


def lineage_graph(
    entries: Sequence[ChainEntry],
    name: str,
    inputs: Mapping[str, tuple[str, Sequence[ChainEntry]]] | None = None,
    published: Mapping[str, list[str]] | None = None,
) -> LineageGraph:
    """The derivative graph of a dataset.

    Args:
        entries: the dataset's verified chain, head first.
        name: how to call it (its directory or reference).
        inputs: chains of input datasets known here, by dataset ID: ``(name, entries)``;
            their own inputs are followed too.
        published: locators by dataset ID (from publish state).
    """
    inputs = inputs or {}
    published = published or {}
    graph = LineageGraph({}, [])
    todo: list[tuple[str, Sequence[ChainEntry]]] = [(name, entries)]
    while todo:
        node_name, chain = todo.pop(0)
        did = _seed_id(chain)
        if did in graph.nodes and graph.nodes[did].head is not None:
            continue
        graph.nodes[did] = _describe(chain, node_name, list(published.get(did, [])))
        declared: list[tuple[str, str]] = []
        consumed: dict[str, str] = {}
        for entry in chain:  # head first: the latest transform and its latest inputs
            event = entry.block.event
            if isinstance(event, ExecuteTransform):
                for qi in event.query_inputs or ():
                    key = str(DatasetId.from_bytes(qi.dataset_id or b""))
                    if key not in consumed and qi.new_block_hash is not None:
                        consumed[key] = multihash_to_str(qi.new_block_hash)
            if isinstance(event, SetTransform) and not declared:
                declared = [
                    (str(DatasetId.parse(i.dataset_ref or "")), i.alias or "")
                    for i in event.inputs or ()
                ]
        for input_id, alias in declared:
            graph.edges.append(LineageEdge(input_id, did, alias, consumed.get(input_id)))
            if input_id in inputs:
                todo.append(inputs[input_id])
            elif input_id not in graph.nodes:
                graph.nodes[input_id] = LineageNode(
                    input_id, alias or input_id, published=list(published.get(input_id, []))
                )
    return graph


def _short(text: str | None, n: int = 16) -> str:
    if not text:
        return "-"
    return text if len(text) <= n else text[:n] + "…"


def _label_lines(node: LineageNode) -> list[str]:
    lines = [node.name, f"{node.kind} {_short(node.dataset_id, 24)}"]
    lines.append(f"head {_short(node.head)}" if node.head else "not available here")
    lines += [f"at {p}" for p in node.published]
    return lines


def _node_ids(graph: LineageGraph) -> dict[str, str]:
    return {did: f"d{i}" for i, did in enumerate(graph.nodes)}


def to_dot(graph: LineageGraph) -> str:
    """Graphviz ``dot`` source: inputs point at the datasets that consume them."""

    def q(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

    ids = _node_ids(graph)
    lines = ["digraph lineage {", "  rankdir=BT;", "  node [shape=box, fontname=Helvetica];"]
    for did, node in graph.nodes.items():
        label = "\\n".join(
            line.replace("\\", "\\\\").replace('"', '\\"') for line in _label_lines(node)
        )
        lines.append(f'  {ids[did]} [label="{label}"];')
    for e in graph.edges:
        label = f"{e.alias} @ {_short(e.consumed)}" if e.consumed else e.alias
        lines.append(f"  {ids[e.input]} -> {ids[e.consumer]} [label={q(label)}];")
    return "\n".join([*lines, "}"]) + "\n"


def to_mermaid(graph: LineageGraph) -> str:
    """Mermaid ``flowchart`` source (renders on GitHub and in many Markdown viewers)."""

    def text(s: str) -> str:
        return s.replace('"', "#quot;")

    ids = _node_ids(graph)
    lines = ["flowchart BT"]
    for did, node in graph.nodes.items():
        lines.append(f'  {ids[did]}["{"<br/>".join(text(x) for x in _label_lines(node))}"]')
    for e in graph.edges:
        label = f"{e.alias} @ {_short(e.consumed)}" if e.consumed else e.alias
        lines.append(f'  {ids[e.input]} -->|"{text(label)}"| {ids[e.consumer]}')
    return "\n".join(lines) + "\n"


def _depths(graph: LineageGraph) -> dict[str, int]:
    """Row of each node: the dataset on row 0, each input one row below its consumer."""
    first = next(iter(graph.nodes))
    depth = {first: 0}
    changed = True
    while changed:
        changed = False
        for e in graph.edges:
            below = depth.get(e.consumer, -1) + 1
            # A cycle (never in a valid lineage) stops once rows exceed the node count.
            if e.consumer in depth and depth.get(e.input, -1) < below <= len(graph.nodes):
                depth[e.input] = below
                changed = True
    for did in graph.nodes:
        depth.setdefault(did, 0)
    return depth


def to_svg(graph: LineageGraph) -> str:
    """A standalone SVG: one box per dataset, the consumer above its inputs, labelled arrows."""
    depth = _depths(graph)
    rows: dict[int, list[str]] = {}
    for did in graph.nodes:
        rows.setdefault(depth[did], []).append(did)
    box_w, line_h, pad, gap_x, gap_y = 300, 16, 10, 40, 70
    heights = {did: pad * 2 + line_h * len(_label_lines(n)) for did, n in graph.nodes.items()}
    row_h = {r: max(heights[d] for d in ds) for r, ds in rows.items()}
    width = max(len(ds) for ds in rows.values()) * (box_w + gap_x) + gap_x
    pos: dict[str, tuple[int, int]] = {}
    y = gap_x
    for r in sorted(rows):
        ds = rows[r]
        x0 = (width - len(ds) * (box_w + gap_x) + gap_x) // 2
        for i, did in enumerate(ds):
            pos[did] = (x0 + i * (box_w + gap_x), y)
        y += row_h[r] + gap_y
    height = y - gap_y + gap_x
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" '
        'font-size="12">',
        "<title>odfweb3 lineage</title>",
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" '
        'markerHeight="8" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" '
        'fill="#52606d"/></marker></defs>',
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
    ]
    for e in graph.edges:
        (x1, y1), (x2, y2) = pos[e.input], pos[e.consumer]
        sx, sy = x1 + box_w // 2, y1
        tx, ty = x2 + box_w // 2, y2 + heights[e.consumer]
        label = f"{e.alias} @ {_short(e.consumed)}" if e.consumed else e.alias
        out.append(
            f'<line x1="{sx}" y1="{sy}" x2="{tx}" y2="{ty}" stroke="#52606d" '
            'stroke-width="1.5" marker-end="url(#arrow)"/>'
        )
        out.append(
            f'<text x="{(sx + tx) // 2 + 6}" y="{(sy + ty) // 2}" fill="#52606d">'
            f"{escape(label)}</text>"
        )
    for did, node in graph.nodes.items():
        x, y = pos[did]
        fill, stroke = ("#e8eefc", "#3f51b5") if node.head else ("#f5f7fa", "#7b8794")
        out.append(
            f'<rect x="{x}" y="{y}" width="{box_w}" height="{heights[did]}" rx="6" '
            f'fill="{fill}" stroke="{stroke}"/>'
        )
        for i, line in enumerate(_label_lines(node)):
            weight = ' font-weight="bold"' if i == 0 else ""
            out.append(
                f'<text x="{x + pad}" y="{y + pad + line_h * (i + 1) - 4}"{weight}>'
                f"{escape(_short(line, 44))}</text>"
            )
    out.append("</svg>")
    return "\n".join(out) + "\n"
