"""The dependency rule of DESIGN.md section 3, checked on the source (see docs/dependencies.md)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STDLIB = __import__("sys").stdlib_module_names


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            # Relative imports keep their dots, so "..arweave" is seen from adapters/ipfs.
            out.add("." * node.level + (node.module or ""))
    return out


def third_party(mods: set[str]) -> set[str]:
    absolute = {m for m in mods if not m.startswith(".")}
    return {m.split(".")[0] for m in absolute if m.split(".")[0] not in STDLIB} - {"odfweb3"}


def files(folder: str):
    return [p for p in (ROOT / folder).rglob("*.py") if "_generated" not in p.parts]


def test_odf_core_imports_only_formats_and_hashing():
    allowed = {"flatbuffers", "multiformats", "cryptography", "yaml"}
    for p in files("odfweb3/odf"):
        mods = imports_of(p)
        assert third_party(mods) <= allowed, (p, third_party(mods) - allowed)
        assert not {
            m
            for m in mods
            if m.startswith("odfweb3.") and not m.startswith(("odfweb3.odf", "odfweb3.errors"))
        }, p


def test_core_never_imports_adapters_or_httpx():
    for folder in ("odfweb3/odf", "odfweb3/store", "odfweb3/crypto", "odfweb3/publish"):
        for p in files(folder):
            mods = imports_of(p)
            assert "httpx" not in third_party(mods), p
            assert not any(m.startswith("odfweb3.adapters") for m in mods), p
    for name in ("resolve.py", "pull.py", "verify.py", "replica.py", "config.py", "errors.py"):
        p = ROOT / "odfweb3" / name
        if p.exists():
            mods = imports_of(p)
            assert "httpx" not in third_party(mods), p
            assert not any(m.startswith("odfweb3.adapters") for m in mods), p


def test_httpx_is_imported_by_the_transport_and_the_adapters_only():
    # One HTTP layer (issue 15 item 6): odfweb3/transport/http.py is the only core module
    # that imports httpx; it depends on nothing in the core but errors and its settings.
    core = [p for p in files("odfweb3")]
    users = {p.relative_to(ROOT).as_posix() for p in core if "httpx" in third_party(imports_of(p))}
    assert users == {"odfweb3/transport/http.py"}, users
    for p in files("odfweb3/transport"):
        inner = {m for m in imports_of(p) if m.startswith("odfweb3.") or m.startswith(".")}
        allowed = ("odfweb3.errors", "odfweb3.transport", ".settings", ".http")
        assert all(m.startswith(allowed) for m in inner), (p, inner)
    assert "httpx" not in third_party(imports_of(ROOT / "odfweb3/transport/settings.py"))


def test_adapters_do_not_import_each_other():
    for p in files("adapters/ipfs"):
        assert not any("arweave" in m for m in imports_of(p)), p
    for p in files("adapters/arweave"):
        assert not any(".ipfs" in m or m.endswith("ipfs") for m in imports_of(p)), p


def test_pure_formats_have_no_network_code():
    pure = [
        "unixfs",
        "unixfs_data",
        "dagpb",
        "car",
        "cid",
        "hamt",
        "ipns",
        "dagcbor",
        "libp2p_keys",
        "pbwire",
        "dataset_dag",
    ]
    for name in pure:
        p = ROOT / "adapters/ipfs" / f"{name}.py"
        if p.exists():
            assert "httpx" not in third_party(imports_of(p)), p
    for p in files("adapters/arweave"):
        if p.stem in {
            "tx",
            "ans104",
            "deephash",
            "merkle",
            "wallet",
            "b64",
            "tags",
            "arfs",
            "manifest",
            "record",
            "bundle_plan",
        }:
            assert "httpx" not in third_party(imports_of(p)), p
