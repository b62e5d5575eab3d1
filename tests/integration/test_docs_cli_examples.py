"""Every example of ``docs/cli.md`` runs: the page is generated from the parser and its
examples (``odfweb3.cli.examples``) are alternatives to each other (several ``--to`` forms,
several ways to call one command), so each one runs on its own, in a fresh directory with a
fresh HOME, after the commands a reader would have run before it (:data:`BEFORE`: a publish
before a ``verify``, an identity before ``keys recipients add`` ...).

Every directory starts as a copy of one reader's desk (``./ds``, a funded ``wallet.json``,
``pass.txt``, ``team.yaml``; :func:`desk`), or empty for the commands that make those
(:data:`EMPTY`); an example that reaches the session's shared Kubo or arlocal gets a
dataset of its own first (:data:`OWN_DATASET`: another world's copy of ``./ds`` published
there under the same key would be another publisher's record of the same dataset). Each
command runs with ``--json``; placeholders (``k51qzi5uqu5d...``, ``ar://RECORD-ID``,
``bafy...``, ``x25519:…``) are filled from what the commands before it printed, the page's
``127.0.0.1`` URLs become the suite's nodes, and a line must exit 0 unless it says
``# exit N``."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
from pathlib import Path
from typing import Any

import pytest

from odfweb3.cli.examples import EXAMPLES
from tests.support.docs_console import Console, code_of, commands

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "cli.md"

_DERIV = "odfweb3 example ./deriv --derivative-of ./ds --blocks 1"
_CAR = "odfweb3 publish ./ds --to car:./out"
_IPFS = "odfweb3 publish ./ds --to ipfs"
_ALICE = "odfweb3 keys identity new alice"
_KEYS = "odfweb3 publish ./ds --to car:./enc --encrypt"  # the dataset's content keys

# What a reader has run before the example (the example's command without its comment).
BEFORE: dict[str, tuple[str, ...]] = {
    "odfweb3 example ./deriv --derivative-of ./ds": (),
    "odfweb3 validate ./deriv --inputs ./ds": (_DERIV,),
    "odfweb3 publish ./deriv --to ipfs --with-inputs ./ds": (_DERIV,),
    "odfweb3 publish ./ds --to origin": ("odfweb3 remote add origin car:./out",),
    "odfweb3 publish ./ds": (_CAR,),
    "odfweb3 publish ./sec --to ipfs --encrypt": ("odfweb3 example ./sec --blocks 2",),
    "odfweb3 publish ./sec --to car:./o --no-encrypt --yes": (
        "odfweb3 example ./sec --blocks 2",
        "odfweb3 publish ./sec --to car:./o --encrypt",
    ),
    "odfweb3 status": (_IPFS,),
    "odfweb3 status ./ds --offline": (_CAR,),
    "odfweb3 republish --all": (_IPFS,),
    "odfweb3 republish ./ds --to ipfs": (_IPFS,),
    "odfweb3 verify ./ds --against car:./out": (_CAR,),
    "odfweb3 verify ./ds --against origin": (
        "odfweb3 remote add origin car:./out",
        "odfweb3 publish ./ds --to origin",
    ),
    "odfweb3 verify ./ds --against ipns://k51qzi5uqu5d... --deep": (_IPFS,),
    "odfweb3 verify --lineage car:./out --inputs-from car:./out/inputs/ds": (
        _DERIV,
        "odfweb3 publish ./deriv --to car:./out --with-inputs ./ds",
    ),
    "odfweb3 pull car:./out ./copy": (_CAR,),
    "odfweb3 pull ipns://k51qzi5uqu5d... ./copy --parallel 16": (_IPFS,),
    "odfweb3 resolve ipns://k51qzi5uqu5d...": (_IPFS,),
    "odfweb3 resolve ar://RECORD-ID": ("odfweb3 publish ./ds --to arweave --wallet wallet.json",),
    "odfweb3 keys identity list": (_ALICE,),
    "odfweb3 keys identity export alice": (_ALICE,),
    "odfweb3 keys recipients add ./ds alice": (_KEYS, _ALICE),
    "odfweb3 keys recipients add ./ds --passphrase --passphrase-file pass.txt": (_KEYS,),
    "odfweb3 keys recipients remove ./ds x25519:…": (
        _KEYS,
        _ALICE,
        "odfweb3 keys recipients add ./ds alice",
    ),
    "odfweb3 keys recipients list ./ds": (_KEYS, _ALICE, "odfweb3 keys recipients add ./ds alice"),
    "odfweb3 keys rotate ./ds": (_KEYS,),
    "odfweb3 keys export ./ds --out keys.env --passphrase-file pass.txt": (_KEYS,),
    "odfweb3 keys import keys.env --passphrase-file pass.txt": (
        _KEYS,
        "odfweb3 keys export ./ds --out keys.env --passphrase-file pass.txt",
    ),
    "odfweb3 name push car:./out --routing http://127.0.0.1:8080": (_CAR,),
    "odfweb3 name push ./out/k51qzi5uqu5d....ipns-record": (_CAR,),
    "odfweb3 describe ./ds --format ttl --ipns k51qzi5uqu5d...": (_CAR,),
    "odfweb3 describe ./ds --format croissant --ipfs bafy... --gateway http://127.0.0.1:8080": (
        _IPFS,
    ),
    "odfweb3 log car:./out -n 5": (_CAR,),
    "odfweb3 lineage ./deriv --inputs ./ds": (_DERIV,),
    "odfweb3 lineage ./deriv --inputs ./ds --format svg -o lineage.svg": (_DERIV,),
    "odfweb3 lineage ./deriv --format mermaid": (_DERIV,),
    "odfweb3 remote rename origin backup": ("odfweb3 remote add origin car:./out",),
    "odfweb3 remote remove origin": ("odfweb3 remote add origin car:./out",),
    "odfweb3 remote list": ("odfweb3 remote add origin car:./out",),
}

# Examples run on a second machine: a HOME (keystore) that has never seen the dataset's keys,
# after what ran before them on the first.
SECOND_MACHINE = frozenset({"odfweb3 keys import keys.env --passphrase-file pass.txt"})

# Examples that make what the desk has: they start from an empty directory.
EMPTY = re.compile(
    r"^odfweb3 (example \./(ds|files) (?!--append)|(wallet new|keys identity new|version"
    r"|completion|man)\b)"
)
# Examples (or what runs before them) that write to or read from the session's shared Kubo
# or arlocal: the desk's ./ds is replaced by a dataset of their own first.
OWN_DATASET = re.compile(
    r"--to (ipfs|arweave)\b|ipns://|ar://|republish|name push|^odfweb3 status$"
)

EXAMPLE_LINES = [
    pytest.param(line, id=f"{'-'.join(path)}-{i}")
    for path, lines in EXAMPLES.items()
    for i, line in enumerate(lines)
]

TEAM_YAML = "ipfs:\n  timeout: 60\narweave:\n  manifest: delta\n"


def _env(home: Path, ipfs_node, arlocal) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ODFWEB3_", "XDG_"))}
    env.update(
        HOME=str(home / "home"),
        XDG_CONFIG_HOME=str(home / "cfg"),
        ODFWEB3_IPFS_API=ipfs_node.api_url,
        ODFWEB3_IPFS_GATEWAY=ipfs_node.gateway_url,
        ODFWEB3_IPFS_ROUTING=ipfs_node.gateway_url + "/routing/v1",
        ODFWEB3_ARWEAVE_GATEWAY=arlocal.url,
    )
    return env


def _urls(ipfs_node, arlocal) -> dict[str, str]:
    return {
        "http://127.0.0.1:5001": ipfs_node.api_url,
        "http://127.0.0.1:8080": ipfs_node.gateway_url,
        "http://127.0.0.1:1984": arlocal.url,
    }


@pytest.fixture(scope="module")
def desk(tmp_path_factory, ipfs_node, arlocal) -> Path:
    """One reader's desk, made once: ``work/`` with ``./ds`` (2 blocks), ``wallet.json``
    (funded on arlocal), ``pass.txt`` (0600) and ``team.yaml``; ``home/`` with the dataset's
    key. Each example gets a copy."""
    base = tmp_path_factory.mktemp("cli-desk")
    work = base / "work"
    work.mkdir()
    console = Console(
        work, _env(base, ipfs_node, arlocal), base / "console.log", 0, mint=arlocal.mint
    )
    console.run(["example", "./ds", "--blocks", "2"], "desk: example ./ds")
    console.run(["wallet", "new", "wallet.json"], "desk: wallet new")
    (work / "pass.txt").write_text("a passphrase for the cli examples\n", "utf-8")
    (work / "pass.txt").chmod(0o600)
    (work / "team.yaml").write_text(TEAM_YAML, "utf-8")
    return base


def test_the_page_shows_every_example_and_only_them():
    shown = [code_of(line) for _, line in commands(PAGE)]
    assert sorted(shown) == sorted(code_of(line) for lines in EXAMPLES.values() for line in lines)
    assert set(BEFORE) <= set(shown), set(BEFORE) - set(shown)


@pytest.mark.parametrize("line", EXAMPLE_LINES)
def test_each_example_runs_on_its_own(line, desk, tmp_path, ipfs_node, arlocal):
    code = code_of(line)
    work = tmp_path / "work"
    if EMPTY.match(code):
        work.mkdir()
    else:
        shutil.copytree(desk / "work", work, symlinks=True)
        shutil.copytree(desk / "home", tmp_path / "home", symlinks=True)
    console = Console(
        work,
        _env(tmp_path, ipfs_node, arlocal),
        tmp_path / "console.log",
        secrets.randbelow(2**31),
        urls=_urls(ipfs_node, arlocal),
        mint=arlocal.mint,
        mine=arlocal.mine,
    )
    before = BEFORE.get(code, ())
    if not EMPTY.match(code) and any(OWN_DATASET.search(c) for c in (code, *before)):
        shutil.rmtree(work / "ds")
        console.run(["example", "./ds", "--blocks", "2"], f"`{line}`: a dataset of its own")
    for earlier in before:
        console.line(earlier, f"before `{line}`: `{earlier}`")
    if code in SECOND_MACHINE:
        console.env.update(HOME=str(tmp_path / "home2"), XDG_CONFIG_HOME=str(tmp_path / "cfg2"))
    if code.startswith("odfweb3 resolve ar://"):
        arlocal.mine()  # the reader waits for the upload to be mined
    assert console.line(line, f"docs/cli.md: `{line}`")
    if code.startswith("odfweb3 publish "):
        # Every publish ends with what to give others: the share line (`share` in --json).
        doc = json.loads(console.ran[-1][1].stdout)
        assert all(_shares(doc)) and _shares(doc), f"`{line}`: no share in {doc}"


def _shares(doc: Any) -> list[Any]:
    """Every ``share`` list in a publish's document (one per target published)."""
    if isinstance(doc, list):
        return [s for item in doc for s in _shares(item)]
    if not isinstance(doc, dict):
        return []
    own = [doc["share"]] if "share" in doc else []
    return own + [s for k, v in doc.items() if k != "share" for s in _shares(v)]
