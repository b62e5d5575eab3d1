"""The guides' commands run, network lines too: every ``odfweb3`` line of the pages' shell
blocks is run in the page's order, in a fresh directory, against the suite's own Kubo and
arlocal (``ODFWEB3_IPFS_API``, ``ODFWEB3_IPFS_GATEWAY`` and ``ODFWEB3_ARWEAVE_GATEWAY`` set
to them, the pages' ``127.0.0.1`` URLs replaced by theirs, wallets minted on arlocal).
Each command runs with ``--json``; the placeholders of later lines (``k51…``,
``<record-id>``, ``did:odf:…``, ``bafy...``, ``<ADDRESS>``) are filled from what the earlier
commands of the page printed. A line must exit 0 unless it says otherwise with a trailing
``# exit N``; a failure names the page, the line and the command's stderr. The offline
lines alone also run without nodes in ``tests/hygiene/test_docs_console.py``, which also
checks that every page with a command in a shell block is run somewhere.

The Arweave pages run against the real Turbo bundler's arlocal (their gateway publish, the
offline bundle, and a Turbo upload with the page's public bundler URL replaced by the
suite's), waiting where a reader waits: for a block to be mined before ``pull ar://``, for
the bundler to seed and finalize before ``resolve did:odf``."""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.docs_console import Console, code_of, commands
from tests.support.nodes import ArlocalNode, IpfsNode
from tests.support.turbo import TurboNode

ROOT = Path(__file__).resolve().parents[2]
PAGES = (
    "README.md",
    "docs/quickstart.md",
    "docs/operations.md",
    "docs/discovery.md",
    "docs/resolve.md",
    # docs/kubo-docker.md includes it: its odfweb3 lines against the suite's Kubo standing in
    # for the container (the `docker compose` lines themselves need Docker, not run here).
    "kubo-docker/README.md",
)
# The Arweave pages: a wallet, a gateway publish, a bundle, a Turbo upload and reads.
ARWEAVE_PAGES = ("docs/arweave.md", "docs/arweave-format.md")
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
    # "A dataset published to IPFS" (the page's first command resolves its name), and one to
    # publish encrypted.
    "docs/resolve.md": (
        ("example", "./ds", "--blocks", "2"),
        ("publish", "./ds", "--to", "ipfs"),
        ("example", "./sec", "--blocks", "2"),
    ),
}
PASSWORD_FILES = {"README.md": ("pw.txt",)}
# Files a page's reader saved from the node (name, the value naming its CID): fetched from the
# suite's gateway just before the first line that names the file.
FILES_FROM_NODE: dict[str, tuple[tuple[str, str], ...]] = {
    "docs/resolve.md": (("dataset.envelope", "envelope"),),
}
# A page's stand-ins for "your dataset".
WORDS: dict[str, dict[str, str]] = {"kubo-docker/README.md": {"path/to/dataset": "./ds"}}

# Lines that cannot run here, each with why (none is skipped silently).
ALLOWED_NOT_RUN: dict[tuple[str, str], str] = {}


def _run_page(
    page: str,
    tmp_path: Path,
    ipfs_node: IpfsNode,
    arlocal: ArlocalNode,
    *,
    urls: dict[str, str] | None = None,
    before: Callable[[str, Console], None] | None = None,
) -> Console:
    """Every line of ``page`` in order, in a fresh directory, against these nodes; ``before``
    is called with each line before it runs (what the reader waits for)."""
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
    work = tmp_path / "work"
    work.mkdir()
    console = Console(
        work,
        env,
        tmp_path / "console.log",
        secrets.randbelow(2**31),
        urls={
            "http://127.0.0.1:5001": ipfs_node.api_url,
            "http://127.0.0.1:8080": ipfs_node.gateway_url,
            "http://127.0.0.1:1984": arlocal.url,
            **WORDS.get(page, {}),
            **(urls or {}),
        },
        mint=arlocal.mint,
        mine=arlocal.mine,
    )
    for args in SETUP.get(page, ()):
        console.run(list(args), f"{page}: set-up `odfweb3 {' '.join(args)}`")
    for name in PASSWORD_FILES.get(page, ()):
        (work / name).write_text("a drive password for the docs test\n", "utf-8")
        (work / name).chmod(0o600)
    makes_ds = re.compile(r"^odfweb3 example (\$DS|\./ds) ")
    makes = any(makes_ds.match(line) and "--append" not in line for _, line in cmds)
    if not makes and not (work / "ds").exists():
        console.run(["example", "ds", "--blocks", "3"], f"{page}: set-up example ./ds")

    ran = 0
    for n, line in cmds:
        if (page, code_of(line)) in ALLOWED_NOT_RUN:
            continue
        for name, key in FILES_FROM_NODE.get(page, ()):
            if name in line and not (work / name).exists():
                got = ipfs_node.gateway_get(f"/ipfs/{console.values[key]}")
                assert got.status_code == 200, f"{page}: {name}: gateway {got.status_code}"
                (work / name).write_bytes(got.content)
        if before is not None:
            before(code_of(line), console)
        ran += console.line(line, f"{page}:{n}: `{line}`")
    assert ran >= min(3, len(cmds)), f"{page}: only {ran} commands ran"
    return console


@pytest.mark.parametrize("page", PAGES)
def test_every_command_of_the_page_runs_against_the_nodes(page, tmp_path, ipfs_node, arlocal):
    _run_page(page, tmp_path, ipfs_node, arlocal)


@pytest.mark.parametrize("page", ARWEAVE_PAGES)
def test_the_arweave_pages_run_against_the_turbo_bundler_and_its_arlocal(
    page: str, tmp_path: Path, ipfs_node: IpfsNode, turbo: TurboNode
) -> None:
    # Readers read where the bundler bundles into (its arlocal), as from any gateway; the
    # page's public bundler is the suite's.
    def wait(code: str, console: Console) -> None:
        if code.startswith("odfweb3 publish ./ds --to turbo"):
            # Section 10 is a later day: the dataset grew since section 1 sent it.
            console.run(["example", "./ds", "--append", "1"], f"{page}: a new block")
        if code.startswith("odfweb3 pull ar://"):
            turbo.arlocal.mine()  # the reader waits for the upload to be mined
        if code.startswith("odfweb3 resolve did:odf"):
            last = json.loads(next(r for a, r in reversed(console.ran) if a[0] == "publish").stdout)
            if not last.get("nothingNew"):  # the bundler seeds, arlocal mines its bundle
                turbo.wait_seeded(last["recordId"])
                turbo.arlocal.mine(20)
                turbo.wait_status(last["recordId"], "FINALIZED")

    _run_page(
        page,
        tmp_path,
        ipfs_node,
        turbo.arlocal,
        urls={"https://upload.ardrive.io": turbo.url},
        before=wait,
    )
