"""The documentation site stays true to the code: generated pages, diagrams and the nav.

`make docs` builds the site with `mkdocs build --strict` (broken links fail there); these
tests catch drift without a build: docs/cli.md against the parser, docs/img/*.svg against
tools/diagrams.py, and mkdocs.yml's nav against the pages in docs/.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

import yaml

from odfweb3 import errors
from odfweb3.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _load_tool(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"_docs_tool_{name}", ROOT / "tools" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


gen_cli_docs = _load_tool("gen_cli_docs")
diagrams = _load_tool("diagrams")
gen_discovery_examples = _load_tool("gen_discovery_examples")


def _command_paths(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*prefix, name)
                yield from _command_paths(sub, (*prefix, name))


def test_cli_page_is_up_to_date():
    current = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert current == gen_cli_docs.render(), "docs/cli.md is stale: run make docs"


def test_discovery_page_examples_are_what_the_code_writes():
    # Each format's example is regenerated from a real example dataset (published offline
    # to car: for its root CID) and must be the page's, byte for byte.
    current = (DOCS / "discovery.md").read_text(encoding="utf-8")
    assert current.count("<!-- example: ") == 6
    assert current == gen_discovery_examples.render(current), (
        "docs/discovery.md examples are stale: run make docs"
    )


def test_cli_page_does_not_depend_on_the_terminal(monkeypatch):
    first = gen_cli_docs.render()
    monkeypatch.setenv("COLUMNS", "40")
    assert gen_cli_docs.render() == first


def test_every_command_has_a_section_with_its_options():
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    paths = list(_command_paths(build_parser()))
    assert ("publish",) in paths and ("keys", "rotate") in paths
    for path in paths:
        heading = f"`odfweb3 {' '.join(path)}` {{#{'-'.join(path)}}}"
        assert heading in text, f"no section for odfweb3 {' '.join(path)}"
    # Every option of publish appears in its section.
    publish = text.split("{#publish}", 1)[1].split("\n## ", 1)[0]
    for flag in ("--to TARGET", "--force", "--dry-run", "--cid-version", "--wallet"):
        assert flag in publish


def test_exit_code_table_covers_every_error_class():
    codes = dict(gen_cli_docs.exit_codes())
    assert codes[0].startswith("success") and codes[64].startswith("usage error")
    for _, cls in inspect.getmembers(errors, inspect.isclass):
        if issubclass(cls, errors.OdfWeb3Error):
            assert cls.exit_code in codes, f"{cls.__name__}.exit_code {cls.exit_code} undocumented"
    table = (DOCS / "cli.md").read_text(encoding="utf-8").split("{#exit-codes}", 1)[1]
    for code in codes:
        assert re.search(rf"^\| {code} \|", table, flags=re.MULTILINE)


def test_diagrams_are_up_to_date_and_well_formed():
    for name, draw in diagrams.DIAGRAMS.items():
        text = draw().render()
        assert text == draw().render(), f"{name}: drawing is not deterministic"
        assert (DOCS / "img" / name).read_text(encoding="utf-8") == text, (
            f"docs/img/{name} is stale: run make diagrams"
        )
        root = ET.fromstring(text)
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        assert root.find("{http://www.w3.org/2000/svg}title") is not None


def test_layout_diagram_names_every_odf_directory():
    text = diagrams.layout().render()
    for name in ("blocks/", "data/", "checkpoints/", "refs/head", "_odf", "ODF-Prev-Upload"):
        assert name in text


def test_commit_order_diagram_matches_the_executor():
    from odfweb3.publish import execute

    steps = re.findall(r"^(\d)\. ", execute.__doc__ or "", flags=re.MULTILINE)
    assert steps == ["1", "2", "3", "4", "5", "6"]
    assert [s[0] for s in diagrams._STEPS] == steps


def _nav_pages(node: object):
    if isinstance(node, str):
        yield node
    elif isinstance(node, list):
        for item in node:
            yield from _nav_pages(item)
    elif isinstance(node, dict):
        for value in node.values():
            yield from _nav_pages(value)


def test_nav_lists_exactly_the_pages():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = list(_nav_pages(config["nav"]))
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert sorted(nav) == pages
    assert config["strict"] is True
    assert config["validation"]["links"]["not_found"] == "warn"
    assert config["validation"]["nav"]["omitted_files"] == "warn"


def test_pages_link_to_existing_images():
    for page in DOCS.rglob("*.md"):
        for target in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", page.read_text(encoding="utf-8")):
            assert (page.parent / target).is_file(), f"{page.name}: missing image {target}"


def test_cli_page_tables_have_no_stray_backticks():
    # `--to` showed a literal "(required)`" because a backtick was left open.
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    for line in text.splitlines():
        if line.startswith("| "):
            for cell in line.split(" | "):
                assert cell.count("`") % 2 == 0, line
    assert "| `--out OUT` (required) |" in text


def test_cli_page_shows_each_commands_examples():
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    publish = text.split("{#publish}", 1)[1].split("\n## ", 1)[0]
    assert "Examples:\n\n```sh\nodfweb3 publish ./ds --to car:./out" in publish
