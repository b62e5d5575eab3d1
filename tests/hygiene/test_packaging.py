"""The package list matches the tree; adapters install as top-level packages the registry lists."""

import importlib
import tomllib
from pathlib import Path

import odfweb3_arweave
import odfweb3_ipfs
from odfweb3.backends import DECLARATIONS, all_backends, declarations

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_package_is_listed():
    conf = PYPROJECT["tool"]["setuptools"]
    listed = set(conf["packages"])
    found = set()
    for name, folder in conf["package-dir"].items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base)
            if "node_modules" in rel.parts:
                continue
            found.add(".".join([name, *rel.parts]) if rel.parts else name)
    assert found == listed, (sorted(found - listed), sorted(listed - found))
    assert not (ROOT / "adapters" / "__init__.py").exists()  # a folder of packages, not one


def test_adapters_are_top_level_packages_under_adapters():
    for pkg, folder in ((odfweb3_ipfs, "odfweb3_ipfs"), (odfweb3_arweave, "odfweb3_arweave")):
        assert Path(pkg.__file__).parent == ROOT / "adapters" / folder
        assert (ROOT / "adapters" / folder / "py.typed").is_file()  # typed for users too


def test_each_adapter_declares_its_backend():
    # One declaration module per adapter package, each naming its own package's backend.
    adapters = sorted(p.name for p in (ROOT / "adapters").iterdir() if (p / "__init__.py").exists())
    assert sorted(m.partition(".")[0] for m in DECLARATIONS) == adapters
    for module in DECLARATIONS:
        declared = importlib.import_module(module).DECLARATION
        assert declared.backend.partition(":")[0].partition(".")[0] == module.partition(".")[0]
    # Python entry points are not how backends are found (reading them costs every start).
    assert "entry-points" not in PYPROJECT["project"]
    assert [d.name for d in declarations()] == ["ipfs", "arweave"]  # rank order
    backends = all_backends()
    assert [b.name for b in backends] == ["ipfs", "arweave"]
    for d, b in zip(declarations(), backends, strict=True):  # the backend says what it declared
        assert (b.rank, tuple(b.target_schemes), tuple(b.ref_prefixes)) == (
            d.rank,
            d.target_schemes,
            d.ref_prefixes,
        )
    schemes = [s for b in backends for s in b.target_schemes]
    assert sorted(schemes) == ["arweave", "bundle", "car", "ipfs", "pinning", "turbo"]
    assert len(set(schemes)) == len(schemes)  # one backend per scheme


def test_mypy_checks_every_adapter():
    makefile = (ROOT / "Makefile").read_text()
    typecheck = next(line for line in makefile.splitlines() if "/mypy " in line)
    for folder in sorted(p.name for p in (ROOT / "adapters").iterdir() if p.is_dir()):
        if (ROOT / "adapters" / folder / "__init__.py").exists():
            assert f"adapters/{folder}" in typecheck, folder
    overrides = PYPROJECT["tool"]["mypy"].get("overrides", [])
    ignored = {m for o in overrides if o.get("ignore_missing_imports") for m in o["module"]}
    assert not {m for m in ignored if m.startswith("odfweb3")}, ignored
