"""`status` follows the bundler's `GET /v1/tx/{record}/status` to FINALIZED and records it.

The real bundler (tests/support/turbo.py) takes the items, bundles, posts and seeds them
into arlocal; arlocal is mined; the bundler verifies and says FINALIZED. `status` then
saves `record.status: finalized` in the publish state (atomic write), which a later
`status --offline` shows without asking; before that it says what the bundler says.

That write goes through the target's state home as a publish's does: while a live publisher
holds the target's lock, `status` leaves the state alone (the publish's own write wins);
a status recorded between a publish's read of the state and its session is no conflict
for that publish, and the publish does not write it away.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from odfweb3.cli.main import main
from odfweb3.odf.builder import create_root_dataset
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import StateStore
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.client.turbo import TurboClient
from odfweb3_arweave.publish.turbo_target import TurboTarget, turbo_statuses
from odfweb3_arweave.wallet import generate_wallet, load_wallet, save_wallet
from tests.support.turbo import TurboNode


def _status(ds: Path, cfg: Path, capsys, *extra: str) -> dict:
    assert main(["status", str(ds), "--json", "--config", str(cfg), *extra]) == 0
    (row,) = json.loads(capsys.readouterr().out)["targets"]
    return row


def _published(turbo: TurboNode, tmp_path: Path, capsys, seed: int):
    """A one-block dataset published to the bundler: (wallet, config, dataset, record id,
    the state store, the state saved)."""
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
    ds = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=4_000, seed=seed).path
    argv = ["publish", str(ds), "--to", "turbo", "--wallet", str(wallet_path), "--json"]
    assert main([*argv, "--config", str(cfg)]) == 0
    record_id = json.loads(capsys.readouterr().out)["recordId"]
    states = StateStore(tmp_path / "state")
    (state,) = states.scan().states
    return wallet_path, cfg, ds, record_id, states, state


def test_status_records_finalized(turbo: TurboNode, tmp_path, capsys) -> None:
    _, cfg, ds, record_id, states, state = _published(turbo, tmp_path, capsys, 2811)
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


def test_status_against_a_publisher_holding_or_reading_the_state(
    turbo: TurboNode, tmp_path, capsys
) -> None:
    wallet_path, cfg, ds, record_id, states, state = _published(turbo, tmp_path, capsys, 2812)
    path = states.path_for(state.dataset_id, state.target)
    turbo.wait_seeded(record_id)
    turbo.arlocal.mine(20)
    turbo.wait_status(record_id, "FINALIZED")

    # A live publisher (another process) holds the target's lock: status says what the
    # bundler says and writes nothing; the state file is the publish's alone.
    before = path.read_bytes()
    lock = path.with_suffix(".lock")
    lock.write_text(str(os.getppid()))
    (upload,) = _status(ds, cfg, capsys)["uploads"]
    assert upload["state"] == "FINALIZED" and upload["saved"] == "pending"
    assert path.read_bytes() == before and lock.read_text() == str(os.getppid())
    lock.unlink()

    # A publish (nothing new) reads the state; a status records FINALIZED before the
    # publish takes the lock: the publish goes on, no conflict, and keeps it.
    target = TurboTarget(
        ArweaveGateway(turbo.arlocal.url),
        TurboClient(turbo.url),
        load_wallet(wallet_path),
        states,
    )
    real_session = target.session
    rows: list[dict] = []

    def status_then_session():
        with TurboClient(turbo.url) as client:
            rows.extend(turbo_statuses(client, state, states))
        return real_session()

    target.session = status_then_session  # type: ignore[method-assign]
    done = publish_dataset(ds, target)
    assert done.plan.is_noop and rows[0]["saved"] == "finalized"
    (after,) = states.scan().states
    assert after.record == {**state.record, "status": "finalized"}
    assert (after.head, after.locator, after.extra) == (state.head, state.locator, state.extra)
