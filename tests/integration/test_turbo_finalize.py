"""A bundler that does not finalize: `publish --to turbo` and `status` wait at most
`arweave.finalize_timeout_s`, then say so in one line and exit 75 (try again later).

The real bundler cannot finalize what arlocal has not mined (its verify job counts the
bundle's confirmations), and the suite's tests run one at a time: while this test does not
mine, the record stays CONFIRMED. The state records the upload as sent (pending, its
receipts kept: they prove it) and never as finalized; once arlocal mines, the same
commands exit 0 and the state says finalized.
"""

from __future__ import annotations

import json
from pathlib import Path

from odfweb3.cli.main import main
from odfweb3.odf.builder import create_root_dataset
from odfweb3.publish.state import StateStore
from odfweb3_arweave.wallet import generate_wallet, save_wallet
from tests.support.turbo import TurboNode


def _config(tmp_path: Path, turbo: TurboNode, timeout: float) -> Path:
    cfg = tmp_path / f"odfweb3-{timeout:g}.yaml"
    cfg.write_text(
        json.dumps(
            {
                "state_dir": str(tmp_path / "state"),
                "keystore": str(tmp_path / "keys"),
                "arweave": {
                    "gateway": turbo.arlocal.url,
                    "turbo": turbo.url,
                    "finalize_timeout_s": timeout,
                },
            }
        )
    )
    return cfg


def _one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    assert "Traceback" not in err
    return lines[0]


def test_not_finalized_by_the_deadline_is_75_and_never_recorded_final(
    turbo: TurboNode, tmp_path, capsys
) -> None:
    wallet_path = tmp_path / "wallet.json"
    save_wallet(generate_wallet(), wallet_path)
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=5_000, seed=2871).path
    short = ["--wallet", str(wallet_path), "--config", str(_config(tmp_path, turbo, 3)), "--yes"]
    states = StateStore(tmp_path / "state")

    code = main(["publish", str(ds), "--to", "turbo", *short, "-q"])
    line = _one_error_line(capsys.readouterr().err)
    assert code == 75, line
    (state,) = states.scan().states
    record_id = state.record["recordId"]
    assert f"did not finalize upload record {record_id} within 3 s" in line, line
    assert "arweave.finalize_timeout_s" in line and "odfweb3 status" in line, line
    # Sent, its receipts kept (the proof), pending: never finalized.
    assert state.record["status"] == "pending"
    assert record_id in state.extra["receipts"]
    assert not list((tmp_path / "state").rglob("*.upload.json"))

    code = main(["status", str(ds), "--config", str(_config(tmp_path, turbo, 3)), "--json"])
    out = capsys.readouterr()
    line = _one_error_line(out.err)
    assert code == 75 and f"upload record {record_id}" in line, line
    (row,) = json.loads(out.out)["targets"]
    (upload,) = row["uploads"]
    assert upload["state"] in ("CONFIRMED", "NOT_FOUND") and upload["saved"] == "pending"
    assert states.scan().states[0].record["status"] == "pending"

    # Without a deadline status looks once and is fine with a record on its way.
    assert main(["status", str(ds), "--config", str(_config(tmp_path, turbo, 0))]) == 0
    capsys.readouterr()

    # Mined: the bundler verifies the bundle, and the same commands exit 0.
    turbo.wait_seeded(record_id)
    turbo.arlocal.mine(20)
    turbo.wait_status(record_id, "FINALIZED")
    long = _config(tmp_path, turbo, 600)
    assert main(["status", str(ds), "--config", str(long), "-q"]) == 0, capsys.readouterr()
    assert states.scan().states[0].record["status"] == "finalized"
    # A rerun of the publish: nothing new, nothing waited for (finalized already).
    again = ["publish", str(ds), "--to", "turbo", "--wallet", str(wallet_path), "--yes", "-q"]
    code = main([*again, "--config", str(long)])
    assert code == 0, capsys.readouterr().err
