"""The guides' commands run, network lines too: every ``odfweb3`` line of the pages' shell
blocks is run in the page's order, in a fresh directory, against the suite's own Kubo and
arlocal (``ODFWEB3_IPFS_API``, ``ODFWEB3_IPFS_GATEWAY`` and ``ODFWEB3_ARWEAVE_GATEWAY`` set
to them, the pages' ``127.0.0.1`` URLs replaced by theirs, wallets minted on arlocal).
Each command runs with ``--json``; the placeholders of later lines (``k51…``,
``<record-id>``, ``did:odf:…``, ``bafy...``, ``<ADDRESS>``) are filled from what the earlier
commands of the page printed. A line must exit 0 unless it says otherwise with a trailing
``# exit N``; a failure names the page, the line and the command's stderr. The offline
lines alone also run without nodes in ``tests/hygiene/test_docs_console.py``."""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.docs_console import ARLOCAL_CALL, ENV_PREFIX, EXIT, code_of, commands

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("README.md", "docs/quickstart.md", "docs/operations.md", "docs/discovery.md")
RICH = 10**15  # winston: far more than any of these publishes costs on arlocal
PASSPHRASE = "docs console passphrase"

# What a page takes as already there ("your dataset", a wallet, a password file): made
# before its first line, the way a reader would have them.
SETUP: dict[str, tuple[tuple[str, ...], ...]] = {
    "README.md": (
        ("example", "./a", "--blocks", "2"),
        ("example", "./b", "--blocks", "2"),
        ("example", "./deriv", "--derivative-of", "./a", "./b", "--blocks", "2"),
        ("wallet", "new", "w.json"),
    ),
}
PASSWORD_FILES = {"README.md": ("pw.txt",)}

# Lines that cannot run here, each with why (none is skipped silently).
ALLOWED_NOT_RUN: dict[tuple[str, str], str] = {}

_K51 = re.compile(r"\bk51[a-z0-9]{40,}\b")
_DID = re.compile(r"\bdid:odf:[A-Za-z0-9]+\b")
_CID = re.compile(r"\bbafy[a-z2-7]{50,}\b")
_AR = re.compile(r"^ar://([A-Za-z0-9_-]{43})$")


def _strings(doc: Any) -> list[tuple[str, str]]:
    """Every ``(key, string value)`` in a JSON document, depth first."""
    out: list[tuple[str, str]] = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            if isinstance(v, str):
                out.append((k, v))
            else:
                out += _strings(v)
    elif isinstance(doc, list):
        for v in doc:
            out += [("", v)] if isinstance(v, str) else _strings(v)
    return out


def harvest(doc: Any, values: dict[str, str]) -> None:
    """The values later lines' placeholders stand for, from one command's ``--json``."""
    for key, s in _strings(doc):
        if key == "address" and re.fullmatch(r"[A-Za-z0-9_-]{43}", s):
            values["address"] = s
        if key == "ref" and (m := _AR.match(s)):
            values["record"] = m.group(1)
        if m := _K51.search(s):
            values["ipns"] = m.group(0)
        if m := _DID.search(s):
            values["did"] = m.group(0)
        if key in ("root", "rootCid", "locator") and (m := _CID.search(s)):
            values["root"] = m.group(0)


def fill(code: str, values: dict[str, str], urls: dict[str, str]) -> str:
    """The page's command with its placeholders and local URLs replaced."""
    for page_url, ours in urls.items():
        code = code.replace(page_url, ours)
    subs = (
        (r"ar://(<record-id>|RECORD-ID|<RECORD>)", "record", "ar://{}"),
        (r"k51(…|qzi5uqu5d\.\.\.)", "ipns", "{}"),
        (r"did:odf:…", "did", "{}"),
        (r"bafy(bei)?(\.\.\.|…)", "root", "{}"),
        (r"<ADDRESS>", "address", "{}"),
    )
    for pattern, name, shape in subs:
        if re.search(pattern, code):
            assert name in values, f"`{code}`: no earlier command of the page printed its {name}"
            code = re.sub(pattern, shape.format(values[name]), code)
    return code


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "odfweb3.cli.main", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=900,  # generous: the suite may run at load 6-8
        check=False,
    )


@pytest.mark.parametrize("page", PAGES)
def test_every_command_of_the_page_runs_against_the_nodes(page, tmp_path, ipfs_node, arlocal):
    cmds = commands(ROOT / page)
    assert cmds, f"{page}: no odfweb3 commands found"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ODFWEB3_", "XDG_"))}
    env.update(
        HOME=str(tmp_path / "home"),
        XDG_CONFIG_HOME=str(tmp_path / "cfg"),
        DS="./ds",
        ODFWEB3_IPFS_API=ipfs_node.api_url,
        ODFWEB3_IPFS_GATEWAY=ipfs_node.gateway_url,
        ODFWEB3_ARWEAVE_GATEWAY=arlocal.url,
        ODFWEB3_PASSPHRASE=PASSPHRASE,
    )
    urls = {
        "http://127.0.0.1:5001": ipfs_node.api_url,
        "http://127.0.0.1:8080": ipfs_node.gateway_url,
        "http://127.0.0.1:1984": arlocal.url,
    }
    work = tmp_path / "work"
    work.mkdir()
    values: dict[str, str] = {}
    seed = secrets.randbelow(2**31)

    def run_json(args: list[str], where: str, expected: int, extra: dict[str, str]) -> None:
        # --help prints help, not a document: the one line run as it is.
        r = _run([*args] if "--help" in args else [*args, "--json"], work, {**env, **extra})
        with (tmp_path / "console.log").open("a", encoding="utf-8") as log:  # for a failure
            log.write(f"$ odfweb3 {shlex.join(args)}\n{r.stdout}{r.stderr}exit {r.returncode}\n")
        assert r.returncode == expected, (
            f"{where}: exited {r.returncode}, the page expects {expected}\n{r.stderr[-3000:]}"
        )
        if r.stdout.strip() and "--help" not in args:
            harvest(json.loads(r.stdout), values)
        if args[:2] == ["wallet", "new"]:
            arlocal.mint(values["address"], RICH)

    for args in SETUP.get(page, ()):
        run_json(list(args), f"{page}: set-up `odfweb3 {' '.join(args)}`", 0, {})
    for name in PASSWORD_FILES.get(page, ()):
        (work / name).write_text("a drive password for the docs test\n", "utf-8")
        (work / name).chmod(0o600)
    makes_ds = re.compile(r"^odfweb3 example (\$DS|\./ds) ")
    if not any(makes_ds.match(line) and "--append" not in line for _, line in cmds):
        run_json(["example", "ds", "--blocks", "3"], f"{page}: set-up example ./ds", 0, {})

    ran = 0
    for n, line in cmds:
        where = f"{page}:{n}: `{line}`"
        if (page, code_of(line)) in ALLOWED_NOT_RUN:
            continue
        code = fill(code_of(line), values, urls)
        if m := ARLOCAL_CALL.match(code):
            call = m.group(1)
            if call == "mine":
                arlocal.mine()
            else:
                arlocal.mint(values["address"], int(call.rsplit("/", 1)[1]))
            continue
        extra: dict[str, str] = {}
        if m := ENV_PREFIX.match(code):
            for word in shlex.split(m.group(0)):
                k, v = word.split("=", 1)
                extra[k] = v
            code = code[m.end() :]
        # A page's `--seed N` gets a fresh seed: the session's Kubo and arlocal are shared,
        # and a dataset ID another test published there under its own key would be refused.
        code = re.sub(r"--seed \d+", f"--seed {seed}", code.replace("$DS", "./ds"))
        words = shlex.split(code)
        for stop in (">", "|", "&&"):
            if stop in words:
                words = words[: words.index(stop)]
        expected = int(m.group(1)) if (m := EXIT.search(line)) else 0
        run_json(words[1:], where, expected, extra)
        ran += 1
    assert ran >= 3, f"{page}: only {ran} commands ran"
