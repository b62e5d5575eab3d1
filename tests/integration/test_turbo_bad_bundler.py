"""`publish --to turbo` against a bundler that lies or refuses: one line, the documented exit
code, and nothing recorded as uploaded that a receipt does not prove.

The gateway is the real arlocal (the publish looks up the latest upload there); the bundler
is tests/support/hostile_server.py, for the faults the real service cannot be made to
produce here: a receipt for another item (the real service signs what it receives), 402 (it
runs with balance checks off), 400 for an item of ours. A receipt that does not verify or is
by another key is refused by the client before anything is kept
(tests/unit/adapters/arweave/test_turbo_client.py: the item's id, random per signing, is
needed to forge one).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3.odf.builder import create_root_dataset
from odfweb3.publish.state import StateStore
from odfweb3_arweave.formats.b64 import b64url_encode
from odfweb3_arweave.formats.receipt import Receipt, encode_receipt, receipt_message
from odfweb3_arweave.wallet import Wallet, generate_wallet, save_wallet
from tests.support.hostile_server import hostile_server


def _receipt(bundler: Wallet, item_id: str, **over: object) -> bytes:
    base = Receipt(item_id, "0.2.0", 500, 1764600000000, bundler.owner, b"")
    doc = encode_receipt(base)
    doc["signature"] = b64url_encode(bundler.sign(receipt_message(base), salt_length=0))
    return json.dumps(doc | over).encode()


@pytest.mark.parametrize(
    ("fault", "code", "words"),
    [
        ("other-item", 65, "is for item"),
        ("402", 69, "no Turbo credits"),
        ("400", 69, "refused the data item"),
    ],
)
def test_a_bad_bundler_answer_is_one_line_and_nothing_is_recorded(
    arlocal, tmp_path: Path, capsys, fault: str, code: int, words: str
) -> None:
    bundler = generate_wallet()
    wallet_path = tmp_path / "wallet.json"
    save_wallet(generate_wallet(), wallet_path)
    ds = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=2_000, seed=2821).path
    with hostile_server() as server:
        info = {"version": "0.2.0", "addresses": {"arweave": bundler.address}}
        server.serve("/v1/info", json.dumps(info).encode())
        if fault == "other-item":
            server.serve("/v1/tx", _receipt(bundler, "B" * 43))
        else:
            server.status("/v1/tx", int(fault))
        cfg = tmp_path / "odfweb3.yaml"
        cfg.write_text(
            json.dumps(
                {
                    "state_dir": str(tmp_path / "state"),
                    "keystore": str(tmp_path / "keys"),
                    "arweave": {"gateway": arlocal.url, "turbo": server.url},
                }
            )
        )
        argv = ["publish", str(ds), "--to", "turbo", "--wallet", str(wallet_path), "--yes"]
        assert main([*argv, "--config", str(cfg)]) == code
        posts = server.count("/v1/tx")
    err = [ln for ln in capsys.readouterr().err.strip().splitlines() if "price:" not in ln]
    assert len(err) == 1 and words in err[0], err
    assert posts == 1  # the first refusal stops the publish; nothing is retried
    assert StateStore(tmp_path / "state").scan().states == []  # nothing recorded as uploaded
    # the upload's checkpoint (for a rerun) holds no receipt: nothing counts as sent
    (checkpoint,) = (tmp_path / "state").rglob("*.upload.json")
    assert json.loads(checkpoint.read_text())["receipts"] == {}
