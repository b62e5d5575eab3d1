"""The dependency rule (docs/design.md, "Layers"), checked on the source.

- ``odfweb3/odf`` depends on nothing of ours but ``odfweb3.errors``, and on few libraries;
- the core (``odfweb3``) never imports an adapter package: it finds them through the
  backend registry (:mod:`odfweb3.backends`, entry points); httpx only in the one HTTP
  layer, ``odfweb3/transport/http.py``;
- adapters never import each other;
- each adapter's ``formats/`` is pure: no HTTP client, no other part of its adapter.
"""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ADAPTERS = ("odfweb3_ipfs", "odfweb3_arweave")


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            out.add("." * node.level + (node.module or ""))
    return out


def third_party(mods: set[str]) -> set[str]:
    top = {m.split(".")[0] for m in mods if not m.startswith(".")}
    return top - set(sys.stdlib_module_names) - {"odfweb3", *ADAPTERS}


def files(folder: str) -> list[Path]:
    found = list((ROOT / folder).rglob("*.py"))
    assert found, folder
    return found


def test_no_relative_imports():
    # Absolute imports only: a module's dependencies read the same wherever it is.
    for folder in ("odfweb3", *(f"adapters/{a}" for a in ADAPTERS)):
        for p in files(folder):
            assert not {m for m in imports_of(p) if m.startswith(".")}, p


def top_level_imports_of(path: Path) -> set[str]:
    """Imports at module level (not inside a function: those load when called)."""
    tree = ast.parse(path.read_text(), str(path))
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            out.add("." * node.level + (node.module or ""))
    return out


def test_odf_core_imports_only_formats_and_hashing():
    # pyarrow: ODF data files are Parquet; it is imported inside the functions that read or
    # write them, never at module level, so the metadata-only paths do not load it.
    allowed = {"flatbuffers", "multiformats", "cryptography", "yaml"}
    lazy = {"pyarrow"}
    for p in files("odfweb3/odf"):
        mods = imports_of(p)
        assert third_party(mods) <= allowed | lazy, (p, third_party(mods) - allowed - lazy)
        eager = third_party(top_level_imports_of(p))
        assert eager <= allowed, (p, "imported at module level", eager - allowed)
        ours = {m for m in mods if m.split(".")[0] in ("odfweb3", *ADAPTERS)}
        # atomic_file: the one atomic writer (DatasetWriter writes objects through it); it
        # imports nothing of ours but errors, so the ODF core still stands on its own.
        ok = ("odfweb3.odf", "odfweb3.errors", "odfweb3.atomic_file")
        assert all(m.startswith(ok) for m in ours), (p, ours)
    base = {m for m in imports_of(ROOT / "odfweb3/atomic_file.py") if m.startswith("odfweb3")}
    assert base <= {"odfweb3.errors"}, base


def test_core_never_imports_adapters():
    for p in files("odfweb3"):
        assert not {m for m in imports_of(p) if m.split(".")[0] in ADAPTERS}, p


def test_httpx_is_imported_by_the_transport_and_the_adapters_only():
    # One HTTP layer: odfweb3/transport/http.py is the only core module
    # that imports httpx; it depends on nothing in the core but errors and its settings.
    core = files("odfweb3")
    users = {p.relative_to(ROOT).as_posix() for p in core if "httpx" in third_party(imports_of(p))}
    assert users == {"odfweb3/transport/http.py"}, users
    for p in files("odfweb3/transport"):
        inner = {m for m in imports_of(p) if m.startswith("odfweb3.")}
        allowed = ("odfweb3.errors", "odfweb3.transport")
        assert all(m.startswith(allowed) for m in inner), (p, inner)
    assert "httpx" not in third_party(imports_of(ROOT / "odfweb3/transport/settings.py"))


def test_adapters_do_not_import_each_other():
    for name in ADAPTERS:
        others = set(ADAPTERS) - {name}
        for p in files(f"adapters/{name}"):
            assert not {m for m in imports_of(p) if m.split(".")[0] in others}, p


def test_pure_formats_have_no_network_code():
    for name in ADAPTERS:
        for p in files(f"adapters/{name}/formats"):
            mods = imports_of(p)
            assert "httpx" not in third_party(mods), p
            parts = {m.split(".")[1] for m in mods if m.startswith(f"{name}.") and "." in m}
            assert parts <= {"formats", "wallet"}, (p, parts)


def test_odf_has_no_import_cycle():
    # odf/validate.py and odf/lineage.py once imported each other.
    graph = {}
    for p in files("odfweb3/odf"):
        mod = "odfweb3.odf." + p.stem
        graph[mod] = {m for m in imports_of(p) if m.startswith("odfweb3.odf.")}
    for a, deps in graph.items():
        for b in deps:
            assert a not in graph.get(b, set()), (a, b)


def test_adapter_parts_point_one_way():
    # client/ speaks HTTP about formats; read/ and publish/ use both; read/ never needs the
    # publishing side (and so a reader can be installed and audited without it).
    allowed = {
        "formats": {"formats", "wallet"},
        "client": {"formats", "wallet"},
        "read": {"formats", "client", "read", "wallet"},
    }
    for name in ADAPTERS:
        for part, ok in allowed.items():
            for p in files(f"adapters/{name}/{part}"):
                used = {
                    m.split(".")[1] for m in imports_of(p) if m.startswith(f"{name}.") and "." in m
                }
                assert used <= ok | {part}, (p, used - ok)


def test_the_cli_and_the_builder_start_without_pyarrow():
    # pyarrow costs ~0.2 s to import: only writing or reading a data file loads it.
    code = "import sys, odfweb3.cli.main, odfweb3.odf.builder; print('pyarrow' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "False"


# The core's own layers, lowest first (docs/design.md, "Layers"): a part imports only parts
# below it, so the formats and the crypto can be read, tested and audited without the
# publishing and reading machinery, the library without the CLI.
_BASE = {"errors", "atomic_file", "foreign_json", "streams", "writeback", "odfweb3"}
_CORE_MAY_IMPORT = {
    "odf": _BASE,
    "transport": _BASE,
    "config": _BASE | {"transport"},
    "crypto": _BASE | {"odf"},
    "descriptor": _BASE | {"odf"},
    "store": _BASE | {"odf"},
    "history": _BASE | {"odf"},
    # publish and read never import each other: a reader installs and audits without the
    # publishing side, a publish never reads through a replica.
    "publish": _BASE | {"odf", "crypto", "descriptor", "store", "transport", "config", "backends"},
    "read": _BASE | {"odf", "crypto", "descriptor", "store", "transport", "config", "backends"},
    "api": _BASE
    | {"odf", "crypto", "descriptor", "store", "transport", "config", "backends", "publish"}
    | {"read", "history"},
}


def _core_part(module: str) -> str | None:
    bits = module.split(".")
    return (bits[1] if len(bits) > 1 else "odfweb3") if bits[0] == "odfweb3" else None


def test_the_core_layers_point_down():
    for part, allowed in _CORE_MAY_IMPORT.items():
        folder = ROOT / "odfweb3" / part
        paths = list(folder.rglob("*.py")) if folder.is_dir() else [folder.with_suffix(".py")]
        assert paths and all(p.is_file() for p in paths), part
        for p in paths:
            used = {_core_part(m) for m in imports_of(p)} - {None, part}
            assert used <= allowed, (p, sorted(used - allowed))


def test_nothing_but_the_cli_imports_the_cli():
    for p in files("odfweb3"):
        if "cli" in p.relative_to(ROOT / "odfweb3").parts[:1]:
            continue
        assert not {m for m in imports_of(p) if m.startswith("odfweb3.cli")}, p
    for name in ADAPTERS:
        for p in files(f"adapters/{name}"):
            assert not {m for m in imports_of(p) if m.startswith("odfweb3.cli")}, p
