"""Write the examples of docs/discovery.md from a real example dataset.

An example dataset (``create_root_dataset``, a fixed seed) is published offline to
``car:DIR`` for its real root CID, then ``odfweb3 describe`` writes each format of it
(publisher from an ``odfweb3.yaml``, data file URLs through a local gateway address). Each
fenced block of the page that follows a ``<!-- example: NAME -->`` line is replaced by the
example NAME; the page is never edited there by hand. ``make docs`` regenerates it and
``tests/hygiene/test_docs.py`` fails when it differs from what the code writes.

Usage::

    python tools/gen_discovery_examples.py            # rewrite docs/discovery.md
    python tools/gen_discovery_examples.py --check    # exit 1 if it is out of date
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from odfweb3.cli.main import main as cli
from odfweb3.odf.builder import create_root_dataset

__all__ = ["OUTPUT", "examples", "render"]

OUTPUT = Path(__file__).resolve().parent.parent / "docs" / "discovery.md"
GATEWAY = "http://127.0.0.1:8080"
_SEED = 2050
_CONFIG = """\
publisher:
  type: Organization
  name: Example Data Office
  mbox: data@example.org
  homepage: https://example.org/
"""
_MARK = re.compile(r"(<!-- example: ([a-z-]+) -->\n)```[a-z]*\n(?:.*?\n)??```\n", re.DOTALL)


def _run(args: list[str], env: dict[str, str]) -> Any:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        code = cli([*args, "--json"], env=env)
    if code != 0:
        raise RuntimeError(f"odfweb3 {' '.join(args)} exited {code}: {buf.getvalue()[-500:]}")
    return json.loads(buf.getvalue())


def _json(doc: Any) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False)


def _croissant_excerpt(doc: dict[str, Any]) -> dict[str, Any]:
    """One file and its record set's first three fields (the rest repeat per block)."""
    out = {k: v for k, v in doc.items() if k not in ("distribution", "recordSet")}
    out["@context"] = "…"
    out["distribution"] = doc["distribution"][:1]
    first = dict(doc["recordSet"][0])
    first["field"] = first["field"][:3]
    out["recordSet"] = [first]
    return out


def examples(work: Path) -> dict[str, tuple[str, str]]:
    """Each example by name: (fence language, text)."""
    ds = create_root_dataset(work / "ds", blocks=2, data_bytes=4000, seed=_SEED, fsync=False)
    config = work / "odfweb3.yaml"
    config.write_text(_CONFIG, encoding="utf-8")
    env = {
        "HOME": str(work),
        "ODFWEB3_KEYSTORE": str(work / "keys"),
        "ODFWEB3_STATE_DIR": str(work / "state"),
    }
    common = ["--config", str(config)]
    root = _run(["publish", str(ds.path), "--to", f"car:{work / 'car'}", *common], env)
    cid = str(root["locator"]).removeprefix("ipfs://")
    where = ["--ipfs", cid, "--gateway", GATEWAY, *common]

    def describe(fmt: str, *extra: str) -> Any:
        return _run(["describe", str(ds.path), "--format", fmt, *where, *extra], env)

    descriptor = describe("jsonld")["descriptor"]
    content = {k: v for k, v in descriptor.items() if k != "@context"}
    dcat = describe("dcat")["dcat"]
    datacite = describe("datacite")["datacite"]
    from datacite import schema45  # dev extra: DataCite's own XML writer

    return {
        "jsonld": ("json", _json(content | {"@context": "…"})),
        "ttl": ("turtle", describe("ttl")["turtle"].rstrip("\n")),
        "croissant": ("json", _json(_croissant_excerpt(describe("croissant")["croissant"]))),
        "dcat": ("json", _json({**dcat, "@context": "…"})),
        "datacite": ("json", _json(datacite)),
        "datacite-xml": ("xml", schema45.tostring(datacite).rstrip("\n")),
    }


def render(page: str) -> str:
    """``page`` with every marked example rewritten."""
    with tempfile.TemporaryDirectory(prefix="odfweb3-examples-") as tmp:
        made = examples(Path(tmp))
    seen: set[str] = set()

    def fill(m: re.Match[str]) -> str:
        name = m.group(2)
        if name not in made:
            raise KeyError(f"docs/discovery.md marks an unknown example {name!r}")
        seen.add(name)
        lang, text = made[name]
        return f"{m.group(1)}```{lang}\n{text}\n```\n"

    out = _MARK.sub(fill, page)
    missing = set(made) - seen
    if missing:
        raise KeyError(f"docs/discovery.md lacks the examples {sorted(missing)}")
    return out


def _main() -> int:
    page = OUTPUT.read_text(encoding="utf-8")
    new = render(page)
    if "--check" in sys.argv[1:]:
        if new != page:
            print("docs/discovery.md is stale: run make docs", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(_main())
