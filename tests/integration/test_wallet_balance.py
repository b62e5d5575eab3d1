"""``odfweb3 wallet balance`` against a real arlocal gateway."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3_arweave.wallet import load_wallet

pytestmark = pytest.mark.integration


def test_balance_of_a_wallet_file_and_of_an_address(capsys, tmp_path: Path, arlocal) -> None:
    wallet = tmp_path / "w.json"
    assert main(["wallet", "new", str(wallet), "-q"], env={}) == 0
    address = load_wallet(wallet).address
    arlocal.mint(address, 1_500_000_000_000)
    capsys.readouterr()
    code = main(["wallet", "balance", str(wallet), "--gateway", arlocal.url, "--json"], env={})
    got = json.loads(capsys.readouterr().out)
    assert code == 0
    assert got == {
        "address": address,
        "gateway": arlocal.url,
        "winston": 1_500_000_000_000,
        "ar": "1.500000000000",
    }
    code = main(["wallet", "balance", address], env={"ODFWEB3_ARWEAVE_GATEWAY": arlocal.url})
    out = capsys.readouterr().out
    assert code == 0
    assert out == f"{address}  1.500000000000 AR  (1500000000000 winston) on {arlocal.url}\n"
