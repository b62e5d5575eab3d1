"""`--to turbo`: publish / status / resolve / pull / verify through the real Turbo bundler.

The bundler (tests/support/turbo.py) bundles our items into its own arlocal; readers read
there as from any gateway (GraphQL by owner and tags, every item's signature checked). The
CLI is driven as a user would: `odfweb3 publish --to turbo`, then, once the bundler seeded its
bundle and arlocal mined it, `resolve did:odf --owner`, `pull`, `verify`; a second publish
sends only the delta; state keeps the receipts.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3.errors import SignatureError
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.state import StateStore
from odfweb3_arweave.formats.receipt import decode_receipt, verify_receipt
from odfweb3_arweave.wallet import generate_wallet, save_wallet
from tests.support.turbo import TurboNode


def _layout(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and p.relative_to(root).parts[0] in ("blocks", "refs", "data", "checkpoints")
    }


def _config(tmp_path: Path, turbo: TurboNode, **arweave: object) -> Path:
    cfg = tmp_path / "odfweb3.yaml"
    data = {
        "state_dir": str(tmp_path / "state"),
        "keystore": str(tmp_path / "keys"),
        "arweave": {"gateway": turbo.arlocal.url, "turbo": turbo.url, **arweave},
    }
    cfg.write_text(json.dumps(data))
    return cfg


def _settle(turbo: TurboNode, record_id: str) -> None:
    """The bundler posted and seeded the bundle holding the record; arlocal mines it."""
    turbo.wait_seeded(record_id)
    turbo.arlocal.mine(20)
    turbo.wait_status(record_id, "FINALIZED")


def test_publish_resolve_pull_verify_through_turbo(turbo: TurboNode, tmp_path, capsys) -> None:
    wallet = generate_wallet()
    wallet_path = tmp_path / "wallet.json"
    save_wallet(wallet, wallet_path)
    cfg = _config(tmp_path, turbo)
    ds = create_root_dataset(tmp_path / "ds", blocks=3, data_bytes=20_000, seed=281).path

    argv = ["publish", str(ds), "--to", "turbo", "--wallet", str(wallet_path), "--json"]
    assert main([*argv, "--config", str(cfg)]) == 0
    published = json.loads(capsys.readouterr().out)
    assert published["bundler"] == turbo.url
    share = {s["what"]: s["ref"] for s in published["share"]}
    assert share["latest version"].endswith(f"--owner {wallet.address}")
    assert share["this version only"] == f"ar://{published['recordId']}"

    states = StateStore(tmp_path / "state")
    (state,) = [s for s in states.scan().states if s.target == f"turbo:{turbo.url}"]
    did = state.dataset_id
    record_id = state.record["recordId"]
    receipts = state.extra["receipts"]
    assert state.extra["bundler"] == turbo.address
    assert record_id in receipts and len(receipts) >= 4
    for item_id, doc in receipts.items():  # every kept receipt is the bundler's, for its item
        verify_receipt(decode_receipt(doc), item_id=item_id, signer=turbo.address)
        assert set(doc) == {"id", "version", "deadlineHeight", "timestamp", "public", "signature"}

    # The bundler's own word on the record: its service records a new item in the background
    # (NOT_FOUND for a moment after the receipt), then bundles and posts it; asked again until
    # it knows the item (bounded: 60 tries), any of its states will do.
    states_said = ("NEW", "PENDING", "CONFIRMED", "FINALIZED")
    for _ in range(60):
        assert main(["status", str(ds), "--json", "--config", str(cfg)]) == 0
        status = capsys.readouterr().out
        if any(f'"{s}"' in status for s in states_said):
            break
        time.sleep(1)
    assert record_id in status and any(f'"{s}"' in status for s in states_said), status

    _settle(turbo, record_id)
    head = multihash_to_str(DatasetReader.open(ds).head())

    # A reader on another machine: the did and the owner, through the gateway only.
    reader_cfg = tmp_path / "reader.yaml"
    reader_cfg.write_text(
        json.dumps(
            {"state_dir": str(tmp_path / "reader-state"), "arweave": {"gateway": turbo.arlocal.url}}
        )
    )
    rargs = ["--owner", wallet.address, "--config", str(reader_cfg)]
    assert main(["resolve", did, "--json", *rargs]) == 0
    resolved = json.loads(capsys.readouterr().out)["results"]
    assert [r["ref"] for r in resolved] == [f"ar://{record_id}"]
    assert resolved[0]["head"] == head and resolved[0]["datasetId"] == did

    dest = tmp_path / "pulled"
    assert main(["pull", f"ar://{record_id}", str(dest), "--config", str(reader_cfg)]) == 0
    capsys.readouterr()
    assert _layout(dest) == _layout(ds)
    vargs = ["verify", str(ds), "--against", f"ar://{record_id}", "--deep", "--json"]
    assert main([*vargs, "--config", str(reader_cfg)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["status"] for r in report["replicas"]] == ["identical"]

    # An update sends only the delta; the new record names the old one.
    append_blocks(ds, 1, data_bytes=5_000, seed=282)
    assert main([*argv, "--config", str(cfg)]) == 0
    capsys.readouterr()
    (state2,) = [s for s in states.scan().states if s.target == f"turbo:{turbo.url}"]
    record2 = state2.record["recordId"]
    assert record2 != record_id and state2.record["prevUpload"] == record_id
    assert len(state2.extra["receipts"]) < len(receipts) + 4
    _settle(turbo, record2)
    assert main(["resolve", did, "--json", *rargs]) == 0
    (latest,) = json.loads(capsys.readouterr().out)["results"]
    assert latest["ref"] == f"ar://{record2}"
    assert latest["head"] == multihash_to_str(DatasetReader.open(ds).head())
    assert main(["pull", f"ar://{record2}", str(dest), "--config", str(reader_cfg)]) == 0
    capsys.readouterr()
    assert _layout(dest) == _layout(ds)


def test_a_bundler_with_another_key_sends_nothing(turbo: TurboNode, tmp_path, capsys) -> None:
    wallet_path = tmp_path / "wallet.json"
    save_wallet(generate_wallet(), wallet_path)
    pinned = generate_wallet().address
    cfg = _config(tmp_path, turbo, turbo_address=pinned)
    ds = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=2_000, seed=283).path
    argv = ["publish", str(ds), "--to", "turbo", "--wallet", str(wallet_path)]
    assert main([*argv, "--config", str(cfg)]) == SignatureError.exit_code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and pinned in err[0] and turbo.address in err[0]
    assert StateStore(tmp_path / "state").scan().states == []


@pytest.mark.parametrize("url", ["ftp://x", ""])
def test_turbo_needs_an_http_url(tmp_path, capsys, url) -> None:
    wallet_path = tmp_path / "wallet.json"
    save_wallet(generate_wallet(), wallet_path)
    ds = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=500, seed=284).path
    cfg = tmp_path / "odfweb3.yaml"
    cfg.write_text(json.dumps({"state_dir": str(tmp_path / "state")}))
    spec = f"turbo:{url}" if url else "turbo"
    argv = ["publish", str(ds), "--to", spec, "--wallet", str(wallet_path), "--config", str(cfg)]
    assert main(argv) == 64
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "turbo" in err[0]


def test_ctrl_c_mid_upload_then_rerun_sends_only_the_rest(
    turbo: TurboNode, tmp_path, monkeypatch
) -> None:
    """Ctrl-C after two items had their receipts: nothing is recorded as uploaded; the rerun
    sends only the items without a receipt, the record last, and the upload reads back."""
    from odfweb3.publish.execute import publish_dataset
    from odfweb3_arweave.client.gateway import ArweaveGateway
    from odfweb3_arweave.client.turbo import TurboClient
    from odfweb3_arweave.publish.turbo_target import TurboTarget
    from odfweb3_arweave.read.replica import open_ar_replica

    wallet = generate_wallet()
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=6_000, seed=285).path
    states = StateStore(tmp_path / "state")

    def target() -> TurboTarget:
        return TurboTarget(
            ArweaveGateway(turbo.arlocal.url), TurboClient(turbo.url), wallet, states
        )

    sent: list[str] = []
    real_post = TurboClient.post_item

    def post(self, item_id, body, on_sent=None):
        if len(sent) == 2:
            raise KeyboardInterrupt
        receipt = real_post(self, item_id, body, on_sent)
        sent.append(item_id)
        return receipt

    monkeypatch.setattr(TurboClient, "post_item", post)
    with pytest.raises(KeyboardInterrupt):
        publish_dataset(ds, target())
    assert states.scan().states == []  # nothing recorded as uploaded
    first_two = list(sent)

    monkeypatch.setattr(TurboClient, "post_item", real_post)
    again: list[str] = []

    def count(self, item_id, body, on_sent=None):
        again.append(item_id)
        return real_post(self, item_id, body, on_sent)

    monkeypatch.setattr(TurboClient, "post_item", count)
    out = publish_dataset(ds, target())
    record_id = out.state.record["recordId"]
    receipts = out.state.extra["receipts"]
    assert not set(again) & set(first_two)  # the two with receipts were not sent again
    assert set(receipts) == set(first_two) | set(again)
    assert again[-1] == record_id  # the record last
    assert "resumed" in out.upload.summary

    _settle(turbo, record_id)
    replica = open_ar_replica(ArweaveGateway(turbo.arlocal.url), f"ar://{record_id}")
    assert replica.head() == DatasetReader.open(ds).head()


def test_max_cost_is_refused_not_ignored(tmp_path, capsys) -> None:
    wallet_path = tmp_path / "wallet.json"
    save_wallet(generate_wallet(), wallet_path)
    ds = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=500, seed=286).path
    cfg = tmp_path / "odfweb3.yaml"
    cfg.write_text(json.dumps({"state_dir": str(tmp_path / "state")}))
    argv = ["publish", str(ds), "--to", "turbo:http://127.0.0.1:9", "--wallet", str(wallet_path)]
    assert main([*argv, "--max-cost", "1000", "--config", str(cfg)]) == 64
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--max-cost" in err[0] and "arweave.turbo_payment" in err[0]
