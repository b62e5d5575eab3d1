"""``pay and send? [y/N]`` before a paid upload (``--to arweave``, the session's arlocal), on
a real pseudo-terminal, answered as every confirmation is (odfweb3.cli.confirm): the question
says the price the gateway asks for these bytes; an unclear answer is asked again, three
times in all; n, end of input and three unclear answers are no: exit 64, one line naming
``--yes``, nothing posted (the wallet's balance unchanged, no publish state, no spool left);
yes after an unclear answer pays and publishes.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import httpx
import pytest

from odfweb3.odf.builder import create_root_dataset
from odfweb3.publish.state import StateStore
from odfweb3_arweave.wallet import generate_wallet, save_wallet
from tests.support.nodes import ArlocalNode
from tests.support.pty_answers import EOF, answer_in_pty

QUESTION = b"pay and send? [y/N] "
AGAIN = "please answer y or n"
RICH = 10**15


def _setup(
    tmp_path: Path, arlocal: ArlocalNode, seed: int
) -> tuple[list[str], dict[str, str], str]:
    wallet = generate_wallet()
    save_wallet(wallet, tmp_path / "wallet.json")
    arlocal.mint(wallet.address, RICH)
    (tmp_path / "odfweb3.yaml").write_text(
        json.dumps(
            {
                "state_dir": str(tmp_path / "state"),
                "keystore": str(tmp_path / "keys"),
                "arweave": {"gateway": arlocal.url},
            }
        )
    )
    create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=6_000, seed=seed, fsync=False)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ODFWEB3_", "XDG_"))}
    env.update(HOME=str(tmp_path / "home"), TERM="xterm")
    argv = ["publish", "ds", "--to", "arweave", "--wallet", "wallet.json"]
    return [*argv, "--config", "odfweb3.yaml"], env, wallet.address


def _balance(arlocal: ArlocalNode, address: str) -> int:
    return int(httpx.get(f"{arlocal.url}/wallet/{address}/balance", timeout=30).text)


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize(
    ("answers", "asked"),
    [([b"n"], 1), ([EOF], 1), ([b"later", b"maybe", b"hm"], 3)],
    ids=["n", "eof", "three-unclear"],
)
def test_no_posts_nothing(arlocal: ArlocalNode, tmp_path: Path, answers, asked) -> None:
    argv, env, address = _setup(tmp_path, arlocal, seed=3311 + asked)
    run = answer_in_pty(argv, tmp_path, env, QUESTION, answers)
    assert run.asked == asked and run.code == 64, run.text
    questions = [
        re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", ln)
        for ln in run.text.splitlines()
        if "pay and send?" in ln
    ]
    # the price the gateway asks, in winston and AR, for the bytes and items about to be
    # sent (the terminal echoes the answer after it)
    price = r"price: \d+ winston \(\d\.\d+ AR\) for [\d.]+ KiB, \d+ items: pay and send\? \[y/N\]"
    assert len(questions) == asked and all(re.match(price, q) for q in questions), questions
    assert run.text.count(AGAIN) == (asked if len(answers) == 3 else 0), run.text
    assert "was not accepted; nothing was posted (--yes pays without asking)" in _one_line(run.text)
    assert "Traceback" not in run.text
    assert _balance(arlocal, address) == RICH
    assert StateStore(tmp_path / "state").scan().states == []
    assert not list((tmp_path / "state").rglob("*.bundle"))


def test_yes_after_an_unclear_answer_pays(arlocal: ArlocalNode, tmp_path: Path) -> None:
    argv, env, address = _setup(tmp_path, arlocal, seed=3319)
    run = answer_in_pty(argv, tmp_path, env, QUESTION, [b"how much?", b"y"])
    assert (run.asked, run.text.count(AGAIN), run.code) == (2, 1, 0), run.text
    assert len(StateStore(tmp_path / "state").scan().states) == 1
    assert _balance(arlocal, address) < RICH
