"""adapters/ installs as odfweb3.adapters, and the package list matches the tree."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_is_listed():
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(conf["packages"])
    mapping = conf["package-dir"]
    found = set()
    for name, folder in mapping.items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base)
            if "node_modules" in rel.parts:
                continue
            found.add(".".join([name, *rel.parts]) if rel.parts else name)
    assert found <= listed, f"add to pyproject packages: {sorted(found - listed)}"
    assert "adapters" not in listed


def test_adapters_import_under_odfweb3():
    import odfweb3.adapters as a

    assert a.__name__ == "odfweb3.adapters"
    assert Path(a.__file__).parent == ROOT / "adapters"
