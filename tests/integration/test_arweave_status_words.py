"""What ``odfweb3 status`` says about an Arweave upload, in the words of docs/concepts.md:
``pending`` until the record is mined, then ``confirmed (mined in block H, N blocks on
top)``, never "block 1, 0 confirmations" (which read as "confirmed but unconfirmed"). Run as
a user runs it: the CLI as a subprocess with its own HOME, against the session's arlocal."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support.nodes import ArlocalNode


def _cli(args: list[str], cwd: Path, gateway: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ODFWEB3_", "XDG_"))}
    env.update(
        HOME=str(cwd / "home"), XDG_CONFIG_HOME=str(cwd / "cfg"), ODFWEB3_ARWEAVE_GATEWAY=gateway
    )
    return subprocess.run(
        [sys.executable, "-m", "odfweb3.cli.main", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,  # generous: a loaded machine
        check=False,
    )


def _upload_line(status: subprocess.CompletedProcess[str]) -> str:
    assert status.returncode == 0, status.stderr
    lines = [line.strip() for line in status.stdout.splitlines() if "upload " in line]
    assert len(lines) == 1, status.stdout
    return lines[0]


def test_status_says_pending_then_mined_in_block_and_blocks_on_top(
    tmp_path: Path, arlocal: ArlocalNode
) -> None:
    made = _cli(["example", "ds", "--blocks", "2", "-q"], tmp_path, arlocal.url)
    assert made.returncode == 0, made.stderr
    wallet = _cli(["wallet", "new", "wallet.json", "--json"], tmp_path, arlocal.url)
    assert wallet.returncode == 0, wallet.stderr
    arlocal.mint(json.loads(wallet.stdout)["address"], 10**15)
    publish = ["publish", "ds", "--to", "arweave", "--wallet", "wallet.json"]
    pub = _cli(publish, tmp_path, arlocal.url)
    assert pub.returncode == 0, pub.stderr

    pending = _upload_line(_cli(["status", "ds"], tmp_path, arlocal.url))
    assert re.search(r"\bpending\b", pending) and "confirm" not in pending, pending

    arlocal.mine()
    mined = _upload_line(_cli(["status", "ds"], tmp_path, arlocal.url))
    m = re.search(r"\bconfirmed \(mined in block (\d+), (\d+) blocks? on top\)$", mined)
    assert m, mined
    height, on_top = int(m.group(1)), int(m.group(2))
    assert "confirmations" not in mined, mined

    arlocal.mine()
    later = _upload_line(_cli(["status", "ds"], tmp_path, arlocal.url))
    m = re.search(r"\bconfirmed \(mined in block (\d+), (\d+) blocks? on top\)$", later)
    assert m, later
    assert int(m.group(1)) == height and int(m.group(2)) == on_top + 1, (mined, later)
    one = "1 block on top" if on_top + 1 == 1 else f"{on_top + 1} blocks on top"
    assert one in later, later
