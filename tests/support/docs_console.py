"""The docs' console blocks as commands: what ``tests/hygiene/test_docs_console.py`` (the lines
that need no network) and ``tests/integration/test_docs_console_network.py`` (every line,
against the suite's own nodes) run."""

from __future__ import annotations

import re
from pathlib import Path

FENCE = re.compile(r"^\s*```(sh|bash|console|shell)\s*$")
EXIT = re.compile(r"#\s*exit\s+(\d+)\b")
# `VAR=value odfweb3 ...`: the variables a line sets for itself.
ENV_PREFIX = re.compile(r"^(?:[A-Z][A-Z0-9_]*=\S+\s+)+(?=odfweb3 )")
# The arlocal calls a page makes between its commands (fund the wallet, mine a block).
ARLOCAL_CALL = re.compile(r"^curl\b.*/(mint/\S+/\d+|mine)\b")


def commands(page: Path) -> list[tuple[int, str]]:
    """``(line number, command)`` of each ``odfweb3`` line (optionally after ``VAR=value``
    assignments) and each arlocal mint/mine ``curl`` of the page's shell blocks."""
    found: list[tuple[int, str]] = []
    block: list[tuple[int, str]] = []
    kamu = inside = False
    for n, raw in enumerate(page.read_text("utf-8").splitlines(), 1):
        line = raw.strip()
        if FENCE.match(raw):
            inside, kamu, block = True, False, []
            continue
        if inside and line.startswith("```"):
            inside = False
            if not kamu:  # a kamu workspace's block: the dataset is kamu's, not made here
                found += block
            continue
        if inside:
            kamu = kamu or (line.startswith("DS=") and "/" not in line.split("#")[0])
            line = line.removeprefix("$ ").strip()
            if line.startswith("odfweb3 ") or ENV_PREFIX.match(line) or ARLOCAL_CALL.match(line):
                block.append((n, line))
    return found


def code_of(line: str) -> str:
    """The line without its trailing comment."""
    return line.split("#", 1)[0].strip()
