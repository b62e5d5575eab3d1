"""Progress that tells the truth for every Arweave phase, as a terminal shows it.

`--to arweave` (arlocal) and `--to turbo` (the real bundler) run on a pseudo-terminal:
the bar goes through signing (the objects' bytes), sending (the transaction's or the
items' bytes) and confirming (what is waited for, with the time waited); every message
clears the bar first, so no segment of a line holds a bar with text after it. A turbo
publish interrupted mid-send (SIGINT) resumes, and the rerun's sending bar starts at the
bytes whose items have a receipt, not at 0 %. On a pipe nothing is drawn; with `-v` the
phases are plain lines (no carriage return, no escape).
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

from odfweb3.cli.output import format_bytes
from odfweb3.odf.builder import create_root_dataset
from odfweb3.publish.state import StateStore
from odfweb3_arweave.publish.turbo_target import bundle_index
from odfweb3_arweave.wallet import generate_wallet, save_wallet
from tests.support.nodes import ArlocalNode
from tests.support.pty_cli import BAR, cli_env, run_in_pty, screen_lines
from tests.support.turbo import TurboNode

PHASES = ("publishing", "signing ", "sending ", "confirming: ")
WAIT = re.compile(r"^confirming: waiting for .+ \(\d+:\d\d\)$")
CLI = (sys.executable, "-m", "odfweb3.cli.main")
PCT = re.compile(r"\] +(\d+\.\d)% ")


def _setup(tmp_path: Path, gateway: str, seed: int, *, blocks: int, data: int, **arweave: object):
    wallet = generate_wallet()
    wallet_path = tmp_path / "wallet.json"
    save_wallet(wallet, wallet_path)
    cfg = tmp_path / "odfweb3.yaml"
    cfg.write_text(
        json.dumps(
            {
                "state_dir": str(tmp_path / "state"),
                "keystore": str(tmp_path / "keys"),
                "arweave": {"gateway": gateway, **arweave},
            }
        )
    )
    ds = create_root_dataset(tmp_path / "ds", blocks=blocks, data_bytes=data, seed=seed).path
    return wallet, ds, ["--wallet", str(wallet_path), "--config", str(cfg), "--yes"]


def _segments(text: str) -> list[str]:
    return [seg for line in screen_lines(text) for seg in line if seg]


def _assert_never_written_over(text: str) -> list[str]:
    """Every segment drawn by the bar is the bar alone (a message cleared it first); the
    bar segments, in order."""
    bars = []
    for seg in _segments(text):
        if not seg.startswith(PHASES):
            assert not any(f"{p.strip()} [" in seg for p in PHASES), repr(seg)
            continue
        bars.append(seg)
        if seg.startswith("confirming: "):
            assert WAIT.match(seg), repr(seg)
        elif "[" in seg:
            m = BAR.search(seg)
            assert m is not None and m.end() == len(seg.rstrip()), repr(seg)
    return bars


def _pct(seg: str) -> float:
    m = PCT.search(seg)
    assert m is not None, seg
    return float(m.group(1))


def test_l1_phases_on_a_terminal_none_on_a_pipe_lines_with_v(arlocal: ArlocalNode, tmp_path):
    wallet, ds, common = _setup(
        tmp_path, arlocal.url, 2861, blocks=3, data=1 << 20, confirm_timeout_s=2
    )
    arlocal.mint(wallet.address, 10**15)
    run = run_in_pty(["publish", str(ds), "--to", "arweave", *common], tmp_path)
    assert run.code == 0, run.text
    bars = _assert_never_written_over(run.text)
    signing = [b for b in bars if b.startswith("signing ")]
    sending = [b for b in bars if b.startswith("sending transaction ")]
    waiting = [b for b in bars if b.startswith("confirming: ")]
    assert signing and "objects [" in signing[-1] and "100.0%" in signing[-1], bars
    assert sending and "100.0%" in sending[-1], bars
    assert _pct(sending[0]) == 0.0  # a fresh upload starts at 0 %
    # The wait names what it waits for: the record, in a block, on that gateway.
    assert waiting and "to be in a block on " + arlocal.url in waiting[-1], bars
    # Phases in order, each on its own line once it moved.
    order = [next(i for i, b in enumerate(bars) if b.startswith(p)) for p in PHASES[1:]]
    assert order == sorted(order), bars

    env = cli_env()
    ds2 = create_root_dataset(tmp_path / "ds2", blocks=2, data_bytes=300_000, seed=2862).path
    quiet = subprocess.run(
        [*CLI, "publish", str(ds2), "--to", "arweave", *common],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert quiet.returncode == 0, quiet.stderr
    # No progress on a pipe (the price line is a message, not progress).
    assert not any(ln.startswith(PHASES) for ln in quiet.stderr.splitlines()), quiet.stderr
    assert "\r" not in quiet.stderr and "\x1b" not in quiet.stderr

    ds3 = create_root_dataset(tmp_path / "ds3", blocks=2, data_bytes=300_000, seed=2863).path
    verbose = subprocess.run(
        [*CLI, "publish", str(ds3), "--to", "arweave", *common, "-v"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert verbose.returncode == 0, verbose.stderr
    assert "\r" not in verbose.stderr and "\x1b" not in verbose.stderr
    lines = verbose.stderr.splitlines()
    assert any(ln.startswith("signing ") for ln in lines), lines
    assert any(ln.startswith("sending transaction ") and "100.0%" in ln for ln in lines), lines
    assert any(WAIT.match(ln) for ln in lines), lines


def test_turbo_phases_and_a_resumed_send_starts_where_it_stopped(turbo: TurboNode, tmp_path):
    # Enough items that a SIGINT lands mid-send (each POST /v1/tx is one round trip).
    _, ds, common = _setup(
        tmp_path, turbo.arlocal.url, 2864, blocks=40, data=200_000, turbo=turbo.url
    )
    argv = ["publish", str(ds), "--to", "turbo", *common]

    sent = [False]

    def interrupt(seen: bytes, master: int, proc: subprocess.Popen[bytes]) -> bool:
        if sent[0]:
            return False
        bars = [s for s in _segments(seen.decode("utf-8", "replace")) if s.startswith("sending ")]
        if bars and PCT.search(bars[-1]) and 0.0 < _pct(bars[-1]) < 50.0:
            proc.send_signal(signal.SIGINT)
            sent[0] = True
        return sent[0]

    first = run_in_pty(argv, tmp_path, react=interrupt)
    assert first.reacted == 1 and first.code == 130, first.text
    _assert_never_written_over(first.text)
    states = StateStore(tmp_path / "state")
    assert states.scan().states == []  # nothing recorded as published
    checkpoint = json.loads(next((tmp_path / "state").rglob("*.upload.json")).read_text())
    receipts = checkpoint["receipts"]
    with open(tmp_path / "state" / "arweave-spool" / checkpoint["spool"], "rb") as f:
        entries = bundle_index(f)
    total = sum(size for _, _, size in entries)
    before = sum(size for item, _, size in entries if item in receipts)
    assert 0 < before < total

    second = run_in_pty(argv, tmp_path)
    assert second.code == 0, second.text
    bars = _assert_never_written_over(second.text)
    assert not any(b.startswith("signing ") for b in bars), bars  # resumed: nothing re-signed
    sending = [b for b in bars if b.startswith(f"sending {len(entries)} items to {turbo.url}")]
    assert sending, bars
    # The first drawn bar is where the first run stopped: its bytes, its share.
    assert f" {format_bytes(before)}/{format_bytes(total)} " in sending[0], (sending[0], before)
    assert abs(_pct(sending[0]) - 100 * before / total) < 0.1, sending[0]
    assert "100.0%" in sending[-1], sending
    assert len(states.scan().states) == 1
