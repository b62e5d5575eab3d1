"""The docs' console blocks as commands: what ``tests/hygiene/test_docs_console.py`` (the lines
that need no network), ``tests/integration/test_docs_console_network.py`` (every line of the
guides, against the suite's own nodes), ``tests/integration/test_docs_cli_examples.py`` (every
example of the generated ``docs/cli.md``) and
``tests/integration/cluster/test_docs_console_online.py`` (the pinning page, against the
suite's IPFS Cluster) run.

:class:`Console` is one reader at one shell: a work directory, an environment, the values
earlier commands printed (which later lines' placeholders stand for) and a log of what ran."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FENCE = re.compile(r"^\s*```(sh|bash|console|shell)\s*$")
# A block without a language: a command there would be neither run nor clearly output.
UNTYPED_FENCE = re.compile(r"^\s*```\s*$")
EXIT = re.compile(r"#\s*exit\s+(\d+)\b")
# `VAR=value odfweb3 ...`: the variables a line sets for itself.
ENV_PREFIX = re.compile(r"^(?:[A-Z][A-Z0-9_]*=\S+\s+)+(?=odfweb3 )")
# The arlocal calls a page makes between its commands (fund the wallet, mine a block).
ARLOCAL_CALL = re.compile(r"^curl\b.*/(mint/\S+/\d+|mine)\b")
# What prints no JSON document: shell scripts, a man page, help.
NOT_JSON = ("completion", "man")


def commands(page: Path, fence: re.Pattern[str] = FENCE) -> list[tuple[int, str]]:
    """``(line number, command)`` of each ``odfweb3`` line (optionally after ``VAR=value``
    assignments) and each arlocal mint/mine ``curl`` of the page's blocks whose opening
    line ``fence`` matches (by default the shell blocks)."""
    found: list[tuple[int, str]] = []
    block: list[tuple[int, str]] = []
    kamu = inside = wanted = False
    for n, raw in enumerate(page.read_text("utf-8").splitlines(), 1):
        line = raw.strip()
        if line.startswith("```"):
            if not inside:
                inside, wanted, kamu, block = True, bool(fence.match(raw)), False, []
            else:
                inside = False
                if wanted and not kamu:  # a kamu workspace's block: the dataset is kamu's
                    found += block
            continue
        if inside and wanted:
            kamu = kamu or (line.startswith("DS=") and "/" not in line.split("#")[0])
            line = line.removeprefix("$ ").strip()
            if line.startswith("odfweb3 ") or ENV_PREFIX.match(line) or ARLOCAL_CALL.match(line):
                block.append((n, line))
    return found


def code_of(line: str) -> str:
    """The line without its trailing comment."""
    return line.split("#", 1)[0].strip()


_K51 = re.compile(r"\bk51[a-z0-9]{40,}\b")
_DID = re.compile(r"\bdid:odf:[A-Za-z0-9]+\b")
_CID = re.compile(r"\bbafy[a-z2-7]{50,}\b")
_RAW_CID = re.compile(r"\bbafk[a-z2-7]{50,}\b")
_AR = re.compile(r"^ar://([A-Za-z0-9_-]{43})$")
_RECIPIENT = re.compile(r"^x25519:[A-Za-z0-9_-]+$")


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
        if key == "keyEnvelope" and (m := _RAW_CID.search(s)):
            values["envelope"] = m.group(0)
        if key == "id" and _RECIPIENT.match(s):
            values["recipient"] = s


def fill(code: str, values: dict[str, str], urls: dict[str, str]) -> str:
    """The page's command with its placeholders and local URLs replaced."""
    for page_url, ours in urls.items():
        code = code.replace(page_url, ours)
    subs = (
        (r"ar://(<record-id>|RECORD-ID|<RECORD>)", "record", "ar://{}"),
        (r"k51(qzi5uqu5d)?(…|\.\.\.)", "ipns", "{}"),
        (r"did:odf:(…|\.\.\.)", "did", "{}"),
        (r"bafy(bei)?(\.\.\.|…)", "root", "{}"),
        (r"bafk(rei)?(\.\.\.|…)", "envelope", "{}"),
        (r"x25519:(…|\.\.\.)", "recipient", "{}"),
        (r"<ADDRESS>|\bADDRESS\b", "address", "{}"),
    )
    for pattern, name, shape in subs:
        if re.search(pattern, code):
            assert name in values, f"`{code}`: no earlier command printed its {name}"
            code = re.sub(pattern, shape.format(values[name]), code)
    return code


def run_cli(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``odfweb3 args`` as a subprocess, stdin closed (no terminal: nothing is asked)."""
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


@dataclass
class Console:
    """A reader's shell: ``work`` is the current directory, ``env`` the environment,
    ``urls`` the pages' local URLs and the suite's nodes that stand for them, ``seed`` the
    fresh ``--seed`` every page's seed becomes (the session's nodes are shared: a dataset
    ID another test published there under its own key would be refused), ``mint`` funds a
    new wallet's address and ``mine`` mines a block (arlocal's)."""

    work: Path
    env: dict[str, str]
    log: Path
    seed: int
    urls: dict[str, str] = field(default_factory=dict)
    mint: Callable[[str, int], None] | None = None
    mine: Callable[[], None] | None = None
    values: dict[str, str] = field(default_factory=dict)
    # Each command run, with what it printed: for checks after the page.
    ran: list[tuple[list[str], subprocess.CompletedProcess[str]]] = field(default_factory=list)

    def run(
        self, args: list[str], where: str, expected: int = 0, extra: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run one command with ``--json`` (unless it prints no document), check its exit
        status, keep what its output names."""
        plain = "--help" in args or (bool(args) and args[0] in NOT_JSON)
        started = time.monotonic()
        r = run_cli(args if plain else [*args, "--json"], self.work, {**self.env, **(extra or {})})
        took = time.monotonic() - started
        self.ran.append((args, r))
        with self.log.open("a", encoding="utf-8") as log:  # for a failure (and a slow page)
            log.write(
                f"$ odfweb3 {shlex.join(args)}\n{r.stdout}{r.stderr}"
                f"exit {r.returncode} ({took:.1f} s)\n"
            )
        assert r.returncode == expected, (
            f"{where}: exited {r.returncode}, the page expects {expected}\n{r.stderr[-3000:]}"
        )
        if r.stdout.strip() and not plain:
            harvest(json.loads(r.stdout), self.values)
        if args[:2] == ["wallet", "new"] and self.mint is not None:
            self.mint(self.values["address"], 10**15)  # winston: far more than any test costs
        return r

    def line(self, line: str, where: str) -> bool:
        """Run one line of a page as the reader would (placeholders filled, URLs ours, the
        page's ``# exit N`` expected); False for an arlocal call (done, not a command)."""
        code = fill(code_of(line), self.values, self.urls)
        if m := ARLOCAL_CALL.match(code):
            call = m.group(1)
            if call == "mine":
                assert self.mine is not None, f"{where}: no arlocal to mine"
                self.mine()
            else:
                assert self.mint is not None, f"{where}: no arlocal to mint"
                self.mint(self.values["address"], int(call.rsplit("/", 1)[1]))
            return False
        extra: dict[str, str] = {}
        if m := ENV_PREFIX.match(code):
            for word in shlex.split(m.group(0)):
                k, v = word.split("=", 1)
                extra[k] = v
            code = code[m.end() :]
        code = re.sub(r"--seed \d+", f"--seed {self.seed}", code.replace("$DS", "./ds"))
        words = shlex.split(code)
        for stop in (">", "|", "&&"):
            if stop in words:
                words = words[: words.index(stop)]
        expected = int(m.group(1)) if (m := EXIT.search(line)) else 0
        self.run(words[1:], where, expected, extra)
        return True
