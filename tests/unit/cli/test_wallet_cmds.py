"""CLI: ``wallet new`` and ``publish --to bundle:DIR --wallet W.json``."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from odfweb3.cli.main import main
from odfweb3.odf.builder import create_root_dataset
from odfweb3_arweave.formats.ans104 import iter_bundle
from odfweb3_arweave.wallet import load_wallet


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv), env={})
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_wallet_new_then_publish_bundle(capsys, tmp_path: Path) -> None:
    wallet = tmp_path / "wallet.json"
    code, out, err = run(capsys, "wallet", "new", str(wallet), "--json")
    assert code == 0, err
    address = json.loads(out)["address"]
    assert stat.S_IMODE(wallet.stat().st_mode) == 0o600
    assert load_wallet(wallet).address == address
    assert json.loads(wallet.read_text())["d"] not in out + err  # the key is never printed
    before = wallet.read_bytes()
    code, out, err = run(capsys, "wallet", "new", str(wallet))
    assert code == 78 and "refusing to overwrite" in err and err.count("\n") == 1
    assert wallet.read_bytes() == before

    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=5000, seed=4).path
    dest = tmp_path / "out"
    code, out, err = run(
        capsys, "publish", str(ds), "--to", f"bundle:{dest}", "--wallet", str(wallet), "--json"
    )
    assert code == 0, err
    result = json.loads(out)
    bundle = dest / result["bundle"]
    with open(bundle, "rb") as f:
        items = list(iter_bundle(f))
    assert items[-1].id_b64 == result["recordId"] == result["record"]["recordId"]
    assert {i.header.owner for i in items} == {load_wallet(wallet).owner}
    assert stat.S_IMODE(wallet.stat().st_mode) == 0o600


def test_publish_bundle_without_wallet_is_a_usage_error(capsys, tmp_path: Path) -> None:
    ds = create_root_dataset(tmp_path / "ds", seed=4).path
    code, _out, err = run(capsys, "publish", str(ds), "--to", f"bundle:{tmp_path / 'out'}")
    assert code == 64 and "--wallet" in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_wallet_new_in_missing_directory(capsys, tmp_path: Path) -> None:
    code, _out, err = run(capsys, "wallet", "new", str(tmp_path / "nope" / "w.json"))
    assert code == 78 and "does not exist" in err


def test_wallet_address_prints_the_address_only(capsys, tmp_path: Path) -> None:
    wallet = tmp_path / "w.json"
    assert run(capsys, "wallet", "new", str(wallet), "-q")[0] == 0
    code, out, err = run(capsys, "wallet", "address", str(wallet))
    assert code == 0 and err == ""
    assert out == load_wallet(wallet).address + "\n"
    code, out, _ = run(capsys, "wallet", "address", str(wallet), "--json")
    assert json.loads(out) == {"path": str(wallet), "address": load_wallet(wallet).address}
    code, _, err = run(capsys, "wallet", "address", str(tmp_path / "missing.json"))
    assert code == 78 and "cannot read it" in err and err.count("\n") == 1


def test_wallet_balance_of_an_unreachable_gateway_is_one_line(capsys, tmp_path: Path) -> None:
    code, _, err = run(capsys, "wallet", "balance", "A" * 43, "--gateway", "http://127.0.0.1:9")
    assert code == 69 and err.count("\n") == 1 and "127.0.0.1:9" in err


def test_publish_says_what_to_share(capsys, tmp_path: Path) -> None:
    """After an Arweave publish: the reference that follows later publishes (the dataset ID
    with its owner), the one fixed version (ar://RECORD) and the ArFS drive ids."""
    wallet = tmp_path / "wallet.json"
    assert run(capsys, "wallet", "new", str(wallet), "-q")[0] == 0
    address = load_wallet(wallet).address
    ds = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=500, seed=5).path
    argv = ["publish", str(ds), "--to", f"bundle:{tmp_path / 'out'}", "--wallet", str(wallet)]
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    doc = json.loads(out)
    share = {s["what"]: s["ref"] for s in doc["share"]}
    state = json.loads((tmp_path / "out" / "publish.json").read_text())
    drive = state["extra"]["drive"]
    did = state["datasetId"]
    assert share == {
        "latest version": f"{did} --owner {address}",
        "this version only": f"ar://{doc['recordId']}",
        "ArFS drive": f"{drive['driveId']} (root folder {drive['rootFolderId']}; "
        f"ardrive list-drive -d {drive['driveId']})",
    }
    create_root_dataset(tmp_path / "ds2", blocks=1, data_bytes=500, seed=6)
    argv[1], argv[3] = str(tmp_path / "ds2"), f"bundle:{tmp_path / 'out2'}"
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    lines = out.splitlines()
    at = lines.index("share:")
    assert lines[at + 1].split()[:2] == ["latest", "version"] and address in lines[at + 1]
    assert lines[at + 2].split()[3].startswith("ar://")
