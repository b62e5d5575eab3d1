"""The docs say what the tool does: each past disagreement, kept fixed.

Each test runs the tool (or reads its code) and checks the page that describes it: the
quickstart's replica list and import commands, the publish targets the help lists, the
environment defaults of the operations page, the publish.json keys of the Arweave page,
and the hint of an unresolvable lineage input.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from odfweb3.cli.main import build_parser, main
from odfweb3.config import ENV_KEYS, load_config
from odfweb3_arweave.publish.bundle_target import objects_of

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv), env=env)
        out, err = capsys.readouterr()
        return code, out, err

    return run


def _option_help(command: str, dest: str) -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    return next(a for a in sub._actions if a.dest == dest).help or ""


def test_quickstart_lists_every_replica_kind_pull_accepts():
    text = (DOCS / "quickstart.md").read_text()
    assert "not accepted yet" not in text
    accepted = text.split("Replicas accepted:", 1)[1].split("\n\n", 1)[0]
    for form in re.findall(
        r"(ipns://\w+|ipfs://\w+|ar://\w+|car:\w+|bundle:\w+)", _option_help("pull", "ref")
    ):
        assert form in accepted, f"pull accepts {form}; the quickstart does not say so"


def test_quickstart_import_commands_are_the_ones_publish_prints(cli):
    text = (DOCS / "quickstart.md").read_text()
    assert "dag import ./out/*.car" not in text
    cli("example", "ds", "--blocks", "1", "-q")
    code, out, _ = cli("publish", "ds", "--to", "car:out")
    assert code == 0
    printed = out.split("import into a node (in this order, in out):\n", 1)[1].splitlines()
    doc = json.loads(Path("out/publish.json").read_text())
    assert [line.strip() for line in printed] == doc["import"]
    for command in doc["import"]:  # the quickstart shows the same commands, same flags
        words = command.split()
        fixed = [w for w in words if not re.search(r"\.car$|\.ipns-record$|^/ipns/", w)]
        start = " ".join(fixed)
        assert start in text, f"quickstart lacks `{start} ...`"
    assert "ipfs routing put --allow-offline /ipns/" in text


def test_every_publish_target_form_the_help_lists_is_accepted(cli, tmp_path):
    forms = [f.strip() for f in _option_help("publish", "to").split(";")[0].split("|")]
    assert {"car:DIR", "ipfs", "ipfs:URL", "bundle:DIR", "arweave", "arweave:URL"} <= set(forms)
    assert {"turbo", "turbo:URL"} <= set(forms)
    cli("example", "ds", "--blocks", "1", "-q")
    cli("wallet", "new", "w.json", "-q")
    dead = "http://127.0.0.1:9"  # nothing listens: a backend error (69), not a usage error
    env_urls = {"ipfs": dead, "arweave": dead}
    for form in forms:
        spec = form.replace("DIR", f"out-{form.split(':')[0]}").replace("URL", dead)
        code, _, err = cli(
            "--config",
            _config(tmp_path, env_urls),
            "publish",
            "ds",
            "--to",
            spec,
            "--wallet",
            "w.json",
            "--dry-run",
        )
        assert "unknown target" not in err, (form, err)
        if not form.startswith("pinning:"):  # a pinning service must be configured first
            assert code in (0, 69), (form, code, err)


def _config(tmp_path: Path, urls: dict[str, str]) -> str:
    path = tmp_path / "odfweb3.yaml"
    path.write_text(
        f"ipfs:\n  api: {urls['ipfs']}\n  gateway: {urls['ipfs']}\n"
        f"arweave:\n  gateway: {urls['arweave']}\n  turbo: {urls['arweave']}\n"
    )
    return str(path)


def test_operations_env_table_matches_the_config_defaults(tmp_path):
    text = (DOCS / "operations.md").read_text()
    rows = dict(re.findall(r"^\| `(ODFWEB3_\w+)` \| .*? \|\s*(.*?)\s*\|$", text, flags=re.M))
    assert set(ENV_KEYS) <= set(rows), "an environment variable is missing from the table"
    config = load_config(env={"HOME": str(tmp_path)}, cwd=tmp_path)
    actual = {
        "ODFWEB3_IPFS_API": config.ipfs_api,
        "ODFWEB3_IPFS_GATEWAY": config.ipfs_gateway,
        "ODFWEB3_ARWEAVE_GATEWAY": config.arweave_gateway,
    }
    for var, value in actual.items():
        assert rows[var] == f"`{value}`", f"operations.md: {var} default"


def test_arweave_page_names_the_keys_publish_json_has(cli):
    text = (DOCS / "arweave-format.md").read_text()
    section = text.split("- `publish.json`: the publish state", 1)[1].split("\n\n", 1)[0]
    keys = re.findall(r"`([A-Za-z][\w.]*)`", section)
    assert "extra.owner" in keys and "owner" not in keys
    cli("example", "ds", "--blocks", "1", "-q")
    cli("wallet", "new", "w.json", "-q")
    assert cli("publish", "ds", "--to", "bundle:ar", "--wallet", "w.json")[0] == 0
    doc = json.loads(Path("ar/publish.json").read_text())
    per_object = next(iter(objects_of(Path("ar")).values()))  # the file index
    for key in keys:
        node = doc
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) and part in node else None
        assert node is not None or key in per_object, f"publish.json has no {key}"


def test_lineage_of_a_directory_points_at_inputs_from(cli):
    cli("example", "a", "--blocks", "1", "-q")
    cli("example", "d", "--derivative-of", "a", "--blocks", "1", "-q")
    code, out, _ = cli("verify", "--lineage", "d")
    assert code == 1
    assert "UNRESOLVABLE" in out and "--inputs-from REF" in out and "--input did:odf:" in out
    code, out, _ = cli("verify", "--lineage", "d", "--inputs-from", "a")
    assert code == 0, out
