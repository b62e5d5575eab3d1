"""`status` follows the bundler's `GET /v1/tx/{record}/status` to FINALIZED and records it.

The real bundler (tests/support/turbo.py) takes the items, bundles, posts and seeds them
into arlocal; arlocal is mined; the bundler verifies and says FINALIZED. `status` then
saves `record.status: finalized` in the publish state (atomic write), which a later
`status --offline` shows without asking; before that it says what the bundler says.
"""

from __future__ import annotations

import json
from pathlib import Path

from odfweb3.cli.main import main
from odfweb3.odf.builder import create_root_dataset
from odfweb3.publish.state import StateStore
from odfweb3_arweave.wallet import generate_wallet, save_wallet
from tests.support.turbo import TurboNode


def _status(ds: Path, cfg: Path, capsys, *extra: str) -> dict:
    assert main(["status", str(ds), "--json", "--config", str(cfg), *extra]) == 0
    (row,) = json.loads(capsys.readouterr().out)["targets"]
    return row


def test_status_records_finalized(turbo: TurboNode, tmp_path, capsys) -> None:
    wallet_path = tmp_path / "wallet.json"
    save_wallet(generate_wallet(), wallet_path)
    cfg = tmp_path / "odfweb3.yaml"
    cfg.write_text(
        json.dumps(
            {
                "state_dir": str(tmp_path / "state"),
                "keystore": str(tmp_path / "keys"),
                "arweave": {"gateway": turbo.arlocal.url, "turbo": turbo.url},
            }
        )
    )
    ds = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=4_000, seed=2811).path
    argv = ["publish", str(ds), "--to", "turbo", "--wallet", str(wallet_path), "--json"]
    assert main([*argv, "--config", str(cfg)]) == 0
    record_id = json.loads(capsys.readouterr().out)["recordId"]
    states = StateStore(tmp_path / "state")
    (state,) = states.scan().states
    assert state.record["status"] == "pending"

    # Not finalized yet: status says what the bundler says, the state stays pending.
    (upload,) = _status(ds, cfg, capsys)["uploads"]
    assert upload["recordId"] == record_id and upload["state"] != "FINALIZED"
    assert upload["saved"] == "pending"
    assert states.scan().states[0].record["status"] == "pending"

    turbo.wait_seeded(record_id)
    turbo.arlocal.mine(20)
    turbo.wait_status(record_id, "FINALIZED")

    (upload,) = _status(ds, cfg, capsys)["uploads"]
    assert upload["state"] == "FINALIZED" and upload["saved"] == "finalized"
    (after,) = states.scan().states
    assert after.record["status"] == "finalized"
    # everything else of the state as it was (receipts, head, the file index)
    assert after.record == {**state.record, "status": "finalized"}
    assert (after.head, after.locator, after.extra) == (state.head, state.locator, state.extra)

    row = _status(ds, cfg, capsys, "--offline")
    assert json.dumps(row).count("finalized") >= 1
