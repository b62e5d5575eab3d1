"""The guides' commands run: every ``odfweb3`` line of the shell blocks of the README and
the quickstart that needs no network is run, in the page's order, in a fresh directory
(``$DS`` is ``./ds``, made by the page's own ``odfweb3 example``; a kamu workspace's block,
``DS=my-dataset``, is left out: it needs that workspace),
and must exit 0 unless the line itself says otherwise with a trailing ``# exit N`` comment
(the visible convention for a command shown failing). Lines that need a node, a gateway
or a value only a real run prints (``<record-id>``, ``k51…``) run, with every other line of
the same pages, in ``tests/integration/test_docs_console_network.py`` against the suite's
own Kubo and arlocal."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.docs_console import EXIT, UNTYPED_FENCE, commands

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("README.md", "docs/quickstart.md", "docs/operations.md", "docs/discovery.md")

_EXIT = EXIT
# Needs a node, a gateway or a placeholder a real run fills in.
_NETWORK = re.compile(
    r"<|…|\.\.\.|k51|ipns://|ipfs://|ar://|did:odf|--to (ipfs|arweave|turbo|pinning)\b"
    r"|ODFWEB3_(IPFS|ARWEAVE)_|--lineage|--with-inputs|^odfweb3 status\b|\$ODFWEB3"
    r"|keys (export|import)"
)


def _runnable(line: str) -> bool:
    code = line.split("#", 1)[0].strip()
    return code.startswith("odfweb3 ") and not _NETWORK.search(code)


@pytest.mark.parametrize("page", PAGES)
def test_every_offline_command_of_the_page_runs(page, tmp_path):
    path = ROOT / page
    cmds = commands(path)
    assert cmds, f"{page}: no odfweb3 commands found"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ODFWEB3_", "XDG_"))}
    env.update(HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "cfg"), DS="./ds")
    work = tmp_path / "work"
    work.mkdir()
    runnable = [(n, line) for n, line in cmds if _runnable(line)]
    makes_ds = re.compile(r"^odfweb3 example (\$DS|\./ds) ")
    if not any(makes_ds.match(line) and "--append" not in line for _, line in runnable):
        # A page that starts from "your dataset": an example one stands in for it.
        pre = [sys.executable, "-m", "odfweb3.cli.main", "example", "ds", "--blocks", "3", "-q"]
        assert subprocess.run(pre, cwd=work, env=env, timeout=300, check=False).returncode == 0
    ran = 0
    for n, line in cmds:
        if not _runnable(line):
            continue
        code_part = line.split("#", 1)[0].strip().replace("$DS", "./ds")
        words = shlex.split(code_part)
        for stop in (">", "|", "&&"):
            if stop in words:
                words = words[: words.index(stop)]
        expected = int(m.group(1)) if (m := _EXIT.search(line)) else 0
        r = subprocess.run(
            [sys.executable, "-m", "odfweb3.cli.main", *words[1:]],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert r.returncode == expected, (
            f"{page}:{n}: `{line}` exited {r.returncode}, the page expects {expected}\n"
            f"{r.stderr[-2000:]}"
        )
        ran += 1
    assert ran >= 3, f"{page}: only {ran} commands ran"


def test_the_scanner_finds_commands_and_the_exit_convention():
    page = ROOT / "docs" / "quickstart.md"
    lines = [line for _, line in commands(page)]
    assert "odfweb3 pull car:./out ./copy" in lines
    assert not any(line.startswith("odfweb3 inspect $DS  ") for line in lines[:1])
    assert _EXIT.search("odfweb3 verify x --against ar://m   # exit 2").group(1) == "2"


# Where each page's shell blocks run. A page with an odfweb3 line in a shell block must be
# here; pages without one (each checked below): api.md (Python, run as doctests by
# tests/unit/api/test_api_docs.py), concepts.md and validation.md (output only, `text`),
# security.md (a diagram), arweave-format.md's other blocks (JSON), kubo-docker.md (the
# compose file and init script, included verbatim; the README it includes runs here).
def _run_by() -> dict[str, str]:
    from tests.integration import test_docs_cli_examples as cli
    from tests.integration import test_docs_console_network as network
    from tests.integration.cluster import test_docs_console_online as online

    where = {page: network.__name__ for page in (*network.PAGES, *network.ARWEAVE_PAGES)}
    where[str(cli.PAGE.relative_to(ROOT))] = cli.__name__
    where[str(online.PAGE.relative_to(ROOT))] = online.__name__
    return where


def _pages() -> list[Path]:
    docs = sorted((ROOT / "docs").glob("*.md"))
    return [*docs, ROOT / "README.md", ROOT / "kubo-docker" / "README.md"]


def test_every_page_with_commands_in_a_shell_block_is_run():
    run_by = _run_by()
    with_commands = {str(p.relative_to(ROOT)) for p in _pages() if commands(p)}
    assert with_commands <= set(run_by), with_commands - set(run_by)
    assert set(run_by) <= with_commands, "a page in the run list has no commands any more"


def test_no_command_sits_in_a_block_without_a_language():
    # An untyped block is neither run (only sh/bash/console/shell are) nor marked as output
    # (`text`): a command there would drift from the tool unseen.
    hidden = {
        str(p.relative_to(ROOT)): found for p in _pages() if (found := commands(p, UNTYPED_FENCE))
    }
    assert not hidden, f"odfweb3 lines in blocks without a language (make them sh): {hidden}"
