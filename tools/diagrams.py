"""Draw the documentation's diagrams as SVG, from Python alone (no external binary).

``make diagrams`` runs this and writes ``docs/img/*.svg``; the SVGs are checked in. The
output is deterministic (fixed coordinates, no timestamps or ids from the clock), so a
re-run with no change in this file leaves git clean, and ``tests/hygiene/test_docs.py``
checks the checked-in files equal what this script draws.

Diagrams:

- ``layout.svg``: an ODF dataset directory, the UnixFS directory it becomes on IPFS, and the
  ArFS drive it becomes on Arweave (docs/design.md, "IPFS mapping" and "Arweave mapping");
- ``commit-order.svg``: the publish steps 1..6 of ``odfweb3/publish/execute.py``, where the
  update becomes visible, and what each target does at each step;
- ``deltas.svg``: two publishes of a growing dataset, what each sends, and the
  back-references (IPNS ``_odf.prevHead``; Arweave ``ODF-Prev-Upload``);
- ``layers.svg``: the packages and the one direction their imports go (docs/design.md,
  "Layers"), with the backend registry between the core and the network adapters.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

__all__ = ["DIAGRAMS", "Svg", "commit_order", "deltas", "layers", "layout", "main"]

OUT_DIR = Path(__file__).resolve().parent.parent / "docs" / "img"

SANS = "DejaVu Sans, Helvetica, Arial, sans-serif"
MONO = "DejaVu Sans Mono, Menlo, Consolas, monospace"

INK = "#1f2933"
MUTED = "#52606d"
ODF = ("#e8eefc", "#3f51b5")  # fill, stroke: the local dataset
IPFS = ("#e3f6f5", "#00897b")
ARWEAVE = ("#fdf0e3", "#d4711c")
NEUTRAL = ("#f5f7fa", "#7b8794")
VISIBLE = ("#e6f4ea", "#2e7d32")


def _n(value: float) -> str:
    """A coordinate in fixed notation (deterministic, no float noise)."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


@dataclass
class Svg:
    """A small SVG canvas: shapes are appended as text, in drawing order."""

    width: int
    height: int
    title: str
    parts: list[str] = field(default_factory=list)

    def rect(
        self,
        x: float,
        y: float,
        w: float,
        h: float,
        colors: tuple[str, str] = NEUTRAL,
        *,
        rx: float = 6,
        dash: bool = False,
        stroke_width: float = 1.5,
    ) -> None:
        """A rounded box."""
        extra = ' stroke-dasharray="6 4"' if dash else ""
        self.parts.append(
            f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(w)}" height="{_n(h)}" rx="{_n(rx)}" '
            f'fill="{colors[0]}" stroke="{colors[1]}" stroke-width="{_n(stroke_width)}"{extra}/>'
        )

    def text(
        self,
        x: float,
        y: float,
        value: str,
        *,
        size: float = 13,
        weight: str = "normal",
        anchor: str = "start",
        mono: bool = False,
        color: str = INK,
        italic: bool = False,
    ) -> None:
        """One line of text; ``y`` is the baseline."""
        style = ' font-style="italic"' if italic else ""
        self.parts.append(
            f'<text x="{_n(x)}" y="{_n(y)}" font-family="{MONO if mono else SANS}" '
            f'font-size="{_n(size)}" font-weight="{weight}" text-anchor="{anchor}" '
            f'fill="{color}"{style}>{escape(value)}</text>'
        )

    def line(
        self,
        x1: float,
        y1: float,
        x2: float,
        y2: float,
        *,
        color: str = MUTED,
        arrow: bool = True,
        dash: bool = False,
        width: float = 1.5,
    ) -> None:
        """A straight line, with an arrow head at its end unless ``arrow`` is False."""
        extra = ' stroke-dasharray="5 4"' if dash else ""
        head = ' marker-end="url(#arrow)"' if arrow else ""
        self.parts.append(
            f'<line x1="{_n(x1)}" y1="{_n(y1)}" x2="{_n(x2)}" y2="{_n(y2)}" stroke="{color}" '
            f'stroke-width="{_n(width)}"{extra}{head}/>'
        )

    def path(self, d: str, *, color: str = MUTED, dash: bool = False) -> None:
        """A free path (curved back-references), arrow at its end."""
        extra = ' stroke-dasharray="5 4"' if dash else ""
        self.parts.append(
            f'<path d="{d}" fill="none" stroke="{color}" stroke-width="1.5"{extra} '
            'marker-end="url(#arrow)"/>'
        )

    def render(self) -> str:
        """The SVG document."""
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" '
            f'height="{self.height}" viewBox="0 0 {self.width} {self.height}" role="img" '
            f'aria-label="{escape(self.title)}">\n'
            f"<title>{escape(self.title)}</title>\n"
            "<defs>"
            '<marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
            'markerHeight="7" orient="auto-start-reverse">'
            f'<path d="M0,0 L10,5 L0,10 z" fill="{MUTED}"/></marker>'
            "</defs>\n"
            f'<rect x="0" y="0" width="{self.width}" height="{self.height}" fill="#ffffff"/>\n'
        )
        return head + "\n".join(self.parts) + "\n</svg>\n"


def _column(
    svg: Svg,
    x: float,
    y: float,
    w: float,
    h: float,
    colors: tuple[str, str],
    title: str,
    subtitle: str,
) -> None:
    svg.rect(x, y, w, h, colors, rx=10, stroke_width=2)
    svg.text(x + w / 2, y + 26, title, size=16, weight="bold", anchor="middle", color=colors[1])
    svg.text(x + w / 2, y + 45, subtitle, size=12, anchor="middle", color=MUTED)


def layout() -> Svg:
    """ODF directory -> UnixFS directory -> ArFS drive, row by row."""
    svg = Svg(1040, 560, "How one ODF dataset maps onto IPFS UnixFS and an Arweave ArFS drive")
    cols = (20, 360, 700)
    w = 320
    top = 20
    _column(svg, cols[0], top, w, 520, ODF, "ODF dataset", "a local directory (kamu or odfweb3)")
    _column(svg, cols[1], top, w, 520, IPFS, "IPFS: UnixFS directory", "CIDs equal ipfs add -r")
    _column(
        svg, cols[2], top, w, 520, ARWEAVE, "Arweave: ArFS drive", "one ANS-104 bundle per publish"
    )

    # Root row.
    root_y = 90
    roots = (
        ("{dataset}/", "head hash = Merkle root of it all"),
        ("bafy…  (root CID)", "dag-pb directory, exact ODF names"),
        ("drive + root folder", "Drive-Id, Folder-Id (ArFS 0.15)"),
    )
    for x, (name, note) in zip(cols, roots, strict=True):
        svg.rect(x + 14, root_y, w - 28, 46, NEUTRAL)
        svg.text(x + 26, root_y + 20, name, size=14, weight="bold", mono=True)
        svg.text(x + 26, root_y + 38, note, size=11.5, color=MUTED)

    rows = (
        (
            "blocks/f1620…",
            "metadata chain, 1 file per block",
            "blocks/  → file per block",
            "HAMT above 256 KiB of links",
            "folder blocks/ → file entity",
            "metadata item + data item",
        ),
        (
            "data/f1620…",
            "data part files (opaque)",
            "data/  → UnixFS file",
            "256 KiB chunks, raw leaves",
            "folder data/ → file entity",
            "one per object, never changes",
        ),
        (
            "checkpoints/f1620…",
            "checkpoint files (opaque)",
            "checkpoints/  → UnixFS file",
            "same CID for same bytes",
            "folder checkpoints/ → file",
            "one per object",
        ),
        (
            "refs/head",
            "text: the head hash (mutable)",
            "refs/head  → small file",
            "new root CID on every publish",
            "folder refs/ → file head",
            "a new revision per publish",
        ),
    )
    y = 160
    for name, note, ipfs, ipfs_note, ar, ar_note in rows:
        cells = ((name, note), (ipfs, ipfs_note), (ar, ar_note))
        for x, (label, sub) in zip(cols, cells, strict=True):
            svg.rect(x + 30, y, w - 44, 44, ("#ffffff", "#9aa5b1"))
            svg.text(x + 42, y + 19, label, size=13, mono=True)
            svg.text(x + 42, y + 36, sub, size=11.5, color=MUTED)
        svg.line(cols[0] + w - 14, y + 22, cols[1] + 28, y + 22)
        svg.line(cols[1] + w - 14, y + 22, cols[2] + 28, y + 22)
        y += 58

    # Tree connectors from the roots to the rows.
    for x in cols:
        svg.line(x + 22, root_y + 46, x + 22, 160 + 3 * 58 + 22, arrow=False, color="#9aa5b1")
        for i in range(4):
            svg.line(x + 22, 182 + i * 58, x + 30, 182 + i * 58, arrow=False, color="#9aa5b1")

    # What sits beside each layout, not inside it.
    y = 410
    svg.rect(cols[0] + 14, y, w - 28, 114, NEUTRAL, dash=True)
    svg.text(cols[0] + 26, y + 22, "never published:", size=12.5, weight="bold")
    svg.text(cols[0] + 26, y + 42, "info/, config (kamu workspace files)", size=12, mono=True)
    svg.text(cols[0] + 26, y + 66, "identity: did:odf:… from the Seed", size=12)
    svg.text(cols[0] + 26, y + 86, "IPNS key: one Ed25519 key per", size=12, color=MUTED)
    svg.text(cols[0] + 26, y + 102, "dataset in the odfweb3 keystore", size=12, color=MUTED)

    svg.rect(cols[1] + 14, y, w - 28, 110, VISIBLE)
    svg.text(cols[1] + 26, y + 22, "name: IPNS record (signed, V2)", size=12.5, weight="bold")
    svg.text(cols[1] + 26, y + 42, "Value /ipfs/<root CID>", size=12, mono=True)
    svg.text(cols[1] + 26, y + 62, "_odf: datasetId, head, prevHead", size=12, mono=True)
    svg.text(cols[1] + 26, y + 82, "descriptor: its own file, outside", size=12)
    svg.text(cols[1] + 26, y + 99, "the root (CID listed in _odf)", size=12)

    svg.rect(cols[2] + 14, y, w - 28, 110, VISIBLE)
    svg.text(cols[2] + 26, y + 22, "name: the upload record item", size=12.5, weight="bold")
    svg.text(cols[2] + 26, y + 42, "ODF-Dataset-Id, ODF-Head,", size=12, mono=True)
    svg.text(cols[2] + 26, y + 62, "ODF-Prev-Upload, ODF-Manifest", size=12, mono=True)
    svg.text(cols[2] + 26, y + 82, "path manifest: every path → item", size=12)
    svg.text(cols[2] + 26, y + 99, "GET /<manifest>/refs/head", size=12, mono=True)
    return svg


_STEPS = (
    ("1", "validate", "every hash and chain rule; an invalid dataset is refused"),
    ("2", "inspect the target", "what it holds now, checked against the network"),
    ("3", "plan", "the delta; the new head must descend from the target's"),
    ("4", "upload", "objects (verified as read) → directory / manifest → pin"),
    ("5", "publish the name", "IPNS record / Arweave upload record"),
    ("6", "save state", "state file: temp file + fsync + rename"),
)

Cell = tuple[str, ...]

_VISIBLE_GAP = 22  # extra room around the visibility line

_TARGETS: tuple[tuple[str, tuple[str, str], tuple[Cell, ...]], ...] = (
    (
        "ipfs (Kubo, js-ipfs)",
        IPFS,
        (
            (),
            ("block/stat, pin/ls", "routing/get (verified)"),
            (),
            ("one delta CAR → dag/import", "pin/update or pin/add"),
            ("routing/put (Kubo)", "dht/put or name/publish"),
            ("state file",),
        ),
    ),
    (
        "car:DIR (offline)",
        IPFS,
        (
            (),
            ("read publish.json",),
            (),
            ("<root>.car", "temp file + rename"),
            ("<name>.ipns-record",),
            ("publish.json (last)",),
        ),
    ),
    (
        "bundle:DIR (offline)",
        ARWEAVE,
        (
            (),
            ("read publish.json",),
            (),
            ("sign every item;", "stream <id>.bundle"),
            ("upload record:", "last item of the bundle"),
            ("publish.json (last)",),
        ),
    ),
)


def commit_order() -> Svg:
    """The six publish steps, the visibility line, and each target's calls."""
    svg = Svg(1040, 640, "The publish commit order: objects first, the name last")
    svg.text(20, 32, "publish: objects first, name last", size=18, weight="bold")
    svg.text(
        20,
        54,
        "odfweb3/publish/execute.py runs these steps for every target; a target never "
        "chooses the order.",
        size=12.5,
        color=MUTED,
    )
    x0, y0, step_w, step_h, gap = 20, 80, 420, 64, 14
    cell_w = 184
    tx = (464, 658, 852)
    for i, (title, colors, _) in enumerate(_TARGETS):
        svg.rect(tx[i], y0 - 8, cell_w, 26, colors, rx=4)
        svg.text(tx[i] + cell_w / 2, y0 + 9, title, size=12, weight="bold", anchor="middle")
    for i, (num, title, note) in enumerate(_STEPS):
        y = y0 + 30 + i * (step_h + gap) + (_VISIBLE_GAP if i >= 4 else 0)
        if i == 4:  # the line between hidden and visible
            ly = y - (gap + _VISIBLE_GAP) / 2 + 4
            svg.line(10, ly, 1030, ly, color="#c62828", arrow=False, dash=True, width=2)
            svg.text(
                1030,
                ly - 5,
                "above: nothing visible yet · below: the update is visible",
                size=12,
                anchor="end",
                weight="bold",
                color="#c62828",
            )
        colors = VISIBLE if i == 4 else (ODF if i < 3 else NEUTRAL)
        svg.rect(x0, y, step_w, step_h, colors)
        svg.parts.append(
            f'<circle cx="{_n(x0 + 30)}" cy="{_n(y + step_h / 2)}" r="17" fill="{colors[1]}"/>'
        )
        svg.text(
            x0 + 30, y + step_h / 2 + 6, num, size=17, weight="bold", anchor="middle", color="#fff"
        )
        svg.text(x0 + 60, y + 26, title, size=15, weight="bold")
        svg.text(x0 + 60, y + 46, note, size=12, color=MUTED)
        if i < len(_STEPS) - 1:
            down = gap + (_VISIBLE_GAP if i == 3 else 0)
            svg.line(x0 + 30, y + step_h, x0 + 30, y + step_h + down, arrow=True)
        for j, (_, tcolors, calls) in enumerate(_TARGETS):
            cell = calls[i]
            if not cell:
                continue
            svg.rect(tx[j], y + 8, cell_w, 48, ("#ffffff", tcolors[1]), rx=4)
            first = y + 32 - 8 * (len(cell) - 1)
            for k, text in enumerate(cell):
                svg.text(
                    tx[j] + cell_w / 2,
                    first + 16 * k + 4,
                    text,
                    size=11,
                    anchor="middle",
                    mono=True,
                )
    y = y0 + 30 + 6 * (step_h + gap) + _VISIBLE_GAP + 8
    svg.text(
        20,
        y,
        "Interrupted before 5: the name still points at the old head, and a re-run sends only "
        "what is missing",
        size=12.5,
        italic=True,
    )
    svg.text(
        20,
        y + 18,
        "(objects are content-addressed, so a repeated upload is harmless).",
        size=12.5,
        italic=True,
    )
    return svg


def deltas() -> Svg:
    """Two publishes: what each sends, and how the second points back at the first."""
    svg = Svg(1040, 470, "Incremental publishes and back-references")
    svg.text(20, 32, "two publishes of a growing dataset", size=18, weight="bold")

    # The chain: Seed … B5 (publish 1), B6 B7 (publish 2). prevBlockHash points back.
    bx, by, bw, bh, gap = 20, 60, 92, 40, 18
    labels = ("Seed", "SetInfo", "License", "B3", "B4", "B5", "B6", "B7")
    for i, label in enumerate(labels):
        x = bx + i * (bw + gap)
        colors = ODF if i < 6 else VISIBLE
        svg.rect(x, by, bw, bh, colors)
        svg.text(x + bw / 2, by + 25, label, size=13, anchor="middle", mono=True)
        if i:
            svg.line(x, by + bh / 2, x - gap + 2, by + bh / 2)
    svg.text(
        bx,
        by + bh + 20,
        "each block names its parent (prevBlockHash); refs/head names the last one",
        size=12,
        color=MUTED,
    )
    brace_y = by + bh + 34
    svg.rect(bx, brace_y, 6 * (bw + gap) - gap, 26, NEUTRAL, rx=4)
    svg.text(
        bx + (6 * (bw + gap) - gap) / 2,
        brace_y + 18,
        "publish 1: everything (head = B5)",
        size=12.5,
        anchor="middle",
        weight="bold",
    )
    x2 = bx + 6 * (bw + gap)
    svg.rect(x2, brace_y, 2 * bw + gap, 26, VISIBLE, rx=4)
    svg.text(
        x2 + (2 * bw + gap) / 2,
        brace_y + 18,
        "publish 2: the delta",
        size=12.5,
        anchor="middle",
        weight="bold",
    )

    # IPFS lane.
    ly = 200
    svg.rect(20, ly, 1000, 110, ("#f7fdfc", IPFS[1]), rx=10)
    svg.text(34, ly + 22, "IPFS", size=15, weight="bold", color=IPFS[1])
    svg.rect(100, ly + 34, 380, 62, ("#ffffff", IPFS[1]))
    svg.text(112, ly + 54, "record seq 1: /ipfs/<root 1>", size=12.5, mono=True)
    svg.text(112, ly + 74, "_odf.head = B5", size=12.5, mono=True)
    svg.text(112, ly + 90, "CAR 1: every block of root 1", size=11.5, color=MUTED)
    svg.rect(620, ly + 34, 380, 62, ("#ffffff", VISIBLE[1]))
    svg.text(632, ly + 54, "record seq 2: /ipfs/<root 2>", size=12.5, mono=True)
    svg.text(632, ly + 74, "_odf.head = B7, _odf.prevHead = B5", size=12.5, mono=True)
    svg.text(632, ly + 90, "CAR 2: new files + changed directory nodes", size=11.5, color=MUTED)
    svg.path(f"M620,{ly + 65} C560,{ly + 65} 540,{ly + 65} 482,{ly + 65}", dash=True)
    svg.text(551, ly + 58, "prevHead", size=11.5, anchor="middle", color=MUTED)
    svg.text(551, ly + 84, "same name,", size=11, anchor="middle", color=MUTED)
    svg.text(551, ly + 98, "seq + 1", size=11, anchor="middle", color=MUTED)

    # Arweave lane.
    ly = 330
    svg.rect(20, ly, 1000, 120, ("#fffaf4", ARWEAVE[1]), rx=10)
    svg.text(34, ly + 22, "Arweave", size=15, weight="bold", color=ARWEAVE[1])
    svg.rect(100, ly + 34, 380, 74, ("#ffffff", ARWEAVE[1]))
    svg.text(112, ly + 54, "bundle 1: drive, folders, every object,", size=12.5)
    svg.text(112, ly + 72, "refs/head rev 1, manifest 1, record 1", size=12.5)
    svg.text(112, ly + 94, "ODF-Head = B5", size=12.5, mono=True)
    svg.rect(620, ly + 34, 380, 74, ("#ffffff", VISIBLE[1]))
    svg.text(632, ly + 54, "bundle 2: new objects only, refs/head rev 2,", size=12.5)
    svg.text(632, ly + 72, "manifest 2 (old paths → old ids), record 2", size=12.5)
    svg.text(632, ly + 94, "ODF-Prev-Upload = record 1", size=12.5, mono=True)
    svg.path(f"M620,{ly + 90} C560,{ly + 90} 540,{ly + 90} 482,{ly + 90}", dash=True)
    svg.text(551, ly + 82, "back-reference", size=11.5, anchor="middle", color=MUTED)
    return svg


def _box(
    svg: Svg, x: float, y: float, w: float, h: float, colors: tuple[str, str], name: str, note: str
) -> None:
    svg.rect(x, y, w, h, colors)
    svg.text(x + w / 2, y + 21, name, size=13.5, weight="bold", anchor="middle", mono=True)
    svg.text(x + w / 2, y + 39, note, size=11.5, anchor="middle", color=MUTED)


def layers() -> Svg:
    """The packages, bottom (depends on nothing) to top (chooses implementations)."""
    svg = Svg(
        1040, 600, "odfweb3's layers: every import points down; adapters only via the registry"
    )
    # Row 1: the CLI (composition root).
    _box(svg, 300, 20, 440, 50, NEUTRAL, "odfweb3.cli", "commands; output; exit codes")
    # Row 2: publish, read, the registry.
    _box(svg, 40, 120, 300, 56, ODF, "odfweb3.publish", "plan (pure) and execute (commit order)")
    _box(svg, 370, 120, 300, 56, ODF, "odfweb3.read", "resolve, claims, pull, compare, lineage")
    _box(svg, 700, 120, 300, 56, VISIBLE, "odfweb3.backends", "registry: schemes -> Backend")
    # Row 3: core services.
    _box(svg, 40, 240, 220, 56, ODF, "odfweb3.crypto", "AEAD segments, envelopes, keys")
    _box(svg, 280, 240, 220, 56, ODF, "odfweb3.store", "object / ref stores")
    _box(svg, 520, 240, 220, 56, ODF, "odfweb3.descriptor", "JSON-LD about a dataset")
    _box(svg, 760, 240, 240, 56, ODF, "odfweb3.transport", "the one HTTP layer (httpx)")
    # Row 4: pure formats and errors.
    _box(svg, 160, 360, 420, 56, ODF, "odfweb3.odf", "ODF formats: codec, chain, layout (pure)")
    _box(svg, 620, 360, 260, 56, NEUTRAL, "odfweb3.errors", "the one exception tree")
    # The adapters, at the side: named by the registry's declarations, importing the core.
    _box(svg, 40, 480, 460, 80, IPFS, "adapters/odfweb3_ipfs", "formats | client | publish | read")
    _box(
        svg,
        540,
        480,
        460,
        80,
        ARWEAVE,
        "adapters/odfweb3_arweave",
        "formats | client | publish | read",
    )
    svg.text(
        520,
        590,
        "declarations odfweb3_ipfs.declaration, odfweb3_arweave.declaration (adapters "
        "never import each other; formats/ never import client/)",
        size=11.5,
        anchor="middle",
        color=MUTED,
    )
    # Arrows: "imports".
    for x in (190, 520, 850):
        svg.line(520, 70, x, 118)
    for x1, x2 in ((190, 150), (190, 390), (520, 150), (520, 390), (520, 630)):
        svg.line(x1, 176, x2, 238)
    for x in (150, 390, 630):
        svg.line(x, 296, 370, 358)
    svg.line(880, 296, 750, 358)
    svg.line(580, 388, 618, 388)
    # Registry -> adapters: imported by name on first use, never imported by the core.
    svg.path("M1000,148 H1025 V458 H270 V478", color=VISIBLE[1], dash=True)
    svg.line(770, 458, 770, 478, color=VISIBLE[1], dash=True)
    svg.text(
        1018,
        330,
        "loads (by name, on first use)",
        size=11.5,
        anchor="end",
        color=VISIBLE[1],
        italic=True,
    )
    # Adapters -> core (they import odf, publish, read, transport, errors).
    svg.line(300, 480, 340, 418, color=IPFS[1])
    svg.line(960, 480, 960, 298, color=ARWEAVE[1])
    return svg


DIAGRAMS: dict[str, Callable[[], Svg]] = {
    "layers.svg": layers,
    "layout.svg": layout,
    "commit-order.svg": commit_order,
    "deltas.svg": deltas,
}


def main(argv: list[str] | None = None) -> int:
    """Write every diagram (``--check``: exit 1 if a checked-in SVG differs)."""
    check = "--check" in (argv if argv is not None else sys.argv[1:])
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    stale = []
    for name, draw in DIAGRAMS.items():
        path = OUT_DIR / name
        text = draw().render()
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        if check:
            stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        sys.stderr.write(f"docs/img: {', '.join(stale)} out of date; run make diagrams\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
