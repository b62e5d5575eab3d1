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

from tests.support.docs_console import EXIT, commands

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
