"""The price first (`--to turbo` and `--to arweave`): `--dry-run` prints what the upload
would cost, `--max-cost` holds both to a cap, a terminal is asked before paying.

The Turbo price comes from the payment-service stand-in of tests/support/turbo.py (the
payment service is not in the snapshot; it answers arlocal's byte price plus the fee); the
L1 price is arlocal's own `/price/N`. The dry run signs the bundle it would send: its price
is for exactly the bytes the publish then sends.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx

from odfweb3.cli.main import main
from odfweb3.odf.builder import create_root_dataset
from odfweb3.publish.state import StateStore
from odfweb3_arweave.wallet import generate_wallet, save_wallet
from tests.support.pty_cli import answer_once, run_in_pty
from tests.support.turbo import TurboNode

QUESTION = b"pay and send? [y/N] "


def _setup(tmp_path: Path, turbo: TurboNode, seed: int, **arweave: object) -> tuple[Path, list]:
    wallet_path = tmp_path / "wallet.json"
    save_wallet(generate_wallet(), wallet_path)
    cfg = tmp_path / "odfweb3.yaml"
    cfg.write_text(
        json.dumps(
            {
                "state_dir": str(tmp_path / "state"),
                "keystore": str(tmp_path / "keys"),
                "arweave": {
                    "gateway": turbo.arlocal.url,
                    "turbo": turbo.url,
                    "turbo_payment": turbo.payment_url,
                    **arweave,
                },
            }
        )
    )
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=8_000, seed=seed).path
    return ds, ["--wallet", str(wallet_path), "--config", str(cfg)]


def test_dry_run_prices_turbo_then_max_cost_holds_it(turbo: TurboNode, tmp_path, capsys) -> None:
    ds, common = _setup(tmp_path, turbo, seed=2801)
    argv = ["publish", str(ds), "--to", "turbo", *common]
    assert main([*argv, "--dry-run", "--json"]) == 0
    dry = json.loads(capsys.readouterr().out)
    price = dry["price"]
    assert isinstance(price["winc"], int) and price["winc"] > 0
    assert price["items"] >= 4 and price["upperBound"] is False
    assert StateStore(tmp_path / "state").scan().states == []  # nothing sent, nothing kept

    # A cap below the price: one line, exit 64, nothing sent.
    assert main([*argv, "--max-cost", str(price["winc"] - 1)]) == 64
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--max-cost" in err[0] and "winc" in err[0], err
    assert StateStore(tmp_path / "state").scan().states == []

    # At the price it goes; the dry run priced exactly the items then sent.
    assert main([*argv, "--max-cost", str(price["winc"]), "--json"]) == 0
    sent = json.loads(capsys.readouterr().out)
    items_bytes = sent["bundleBytes"] - 32 - 64 * sent["bundleItems"]
    assert (price["bytes"], price["items"]) == (items_bytes, sent["bundleItems"])
    assert len(StateStore(tmp_path / "state").scan().states) == 1


def test_dry_run_text_says_the_price(turbo: TurboNode, tmp_path, capsys) -> None:
    ds, common = _setup(tmp_path, turbo, seed=2802)
    assert main(["publish", str(ds), "--to", "turbo", *common, "--dry-run"]) == 0
    out = capsys.readouterr().out
    (line,) = [ln for ln in out.splitlines() if ln.strip().startswith("price")]
    assert "winc" in line and "credits" in line and "items" in line, out


def test_dry_run_prices_l1_with_the_gateway(turbo: TurboNode, tmp_path, capsys) -> None:
    ds, common = _setup(tmp_path, turbo, seed=2803)
    argv = ["publish", str(ds), "--to", f"arweave:{turbo.arlocal.url}", *common]
    assert main([*argv, "--dry-run", "--json"]) == 0
    price = json.loads(capsys.readouterr().out)["price"]
    assert isinstance(price["winston"], int)
    size = price["bytes"]
    assert price["winston"] == int(httpx.get(f"{turbo.arlocal.url}/price/{size}").text)
    # Capped below the price: refused before the balance is even asked, nothing posted.
    assert main([*argv, "--max-cost", str(price["winston"] - 1)]) == 64
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--max-cost" in err[0] and "winston" in err[0], err
    assert StateStore(tmp_path / "state").scan().states == []


def _in_pty(argv: list[str], cwd: Path, answer: bytes | None) -> tuple[int, str, bool]:
    """The CLI on a fresh pseudo-terminal; ``answer`` typed once the question shows."""
    run = run_in_pty(argv, cwd, react=answer_once(QUESTION, answer))
    return run.code, run.text, bool(run.reacted)


def test_a_terminal_is_asked_before_paying(turbo: TurboNode, tmp_path) -> None:
    ds, common = _setup(tmp_path, turbo, seed=2805)
    argv = ["publish", str(ds), "--to", "turbo", *common]
    states = StateStore(tmp_path / "state")

    code, text, asked = _in_pty(argv, tmp_path, b"n")
    assert asked and code == 64, text
    question = next(ln for ln in text.splitlines() if "pay and send?" in ln)
    assert "winc" in question and "credits" in question, text
    assert "not accepted" in text and states.scan().states == []
    assert not list((tmp_path / "state").rglob("*.bundle"))  # the spool went too

    code, text, asked = _in_pty(argv, tmp_path, b"y")
    assert asked and code == 0, text
    assert len(states.scan().states) == 1


def test_yes_and_a_pipe_do_not_ask(turbo: TurboNode, tmp_path) -> None:
    ds, common = _setup(tmp_path, turbo, seed=2806)
    argv = ["publish", str(ds), "--to", "turbo", *common]
    code, text, asked = _in_pty([*argv, "--yes"], tmp_path, None)
    assert code == 0 and not asked, text
    assert "price:" in text and "sending" in text

    ds2 = create_root_dataset(tmp_path / "ds2", blocks=1, data_bytes=3_000, seed=2807).path
    piped = subprocess.run(
        [sys.executable, "-m", "odfweb3.cli.main", "publish", str(ds2), "--to", "turbo", *common],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert piped.returncode == 0, piped.stderr
    assert "pay and send?" not in piped.stderr
