"""``publish --to arweave --with-inputs`` on the session's arlocal (issue 11), then
``verify ar://RECORD --lineage`` with nothing but the derivative's upload record."""

from __future__ import annotations

import json
from pathlib import Path

from odfweb3.adapters.arweave.gateway import ArweaveGateway
from odfweb3.adapters.arweave.replica import open_ar_replica
from odfweb3.adapters.arweave.wallet import generate_wallet, save_wallet
from odfweb3.cli.main import main
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.derivative import create_derivative_dataset


def test_publish_with_inputs_and_verify_the_lineage_from_the_record(
    arlocal, tmp_path: Path, capsys
) -> None:
    wallet = generate_wallet()
    arlocal.mint(wallet.address, 10**15)
    wallet_path = tmp_path / "wallet.json"
    save_wallet(wallet, wallet_path)
    a = create_root_dataset(tmp_path / "a", blocks=2, data_bytes=4_000, seed=41).path
    b = create_root_dataset(tmp_path / "b", blocks=2, data_bytes=3_000, seed=42).path
    x = create_derivative_dataset(tmp_path / "x", [a, b], transactions=2, seed=4).path
    env = {
        "HOME": str(tmp_path),
        "ODFWEB3_STATE_DIR": str(tmp_path / "state"),
        "ODFWEB3_KEYSTORE": str(tmp_path / "keys"),
        "ODFWEB3_ARWEAVE_GATEWAY": arlocal.url,
        "ODFWEB3_ARWEAVE_WALLET": str(wallet_path),
    }
    code = main(
        ["publish", str(x), "--to", "arweave", "--with-inputs", str(a), str(b), "--json"], env
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    doc = json.loads(out.out)
    a_pub, b_pub, x_pub = doc["publishes"]
    assert doc["inputs"] == {
        a_pub["plan"]["datasetId"]: f"ar://{a_pub['record']['recordId']}",
        b_pub["plan"]["datasetId"]: f"ar://{b_pub['record']['recordId']}",
    }
    arlocal.mine(1)

    ref = f"ar://{x_pub['record']['recordId']}"
    replica = open_ar_replica(ArweaveGateway(arlocal.url), ref)
    assert dict(replica.lineage_inputs()) == doc["inputs"]

    code = main(["verify", ref, "--lineage", "--json"], env)
    out = capsys.readouterr()
    report = json.loads(out.out)
    assert code == 0, out.out + out.err
    assert report["complete"] is True
    assert sorted((i["datasetId"], i["status"]) for i in report["inputs"]) == sorted(
        (did, "present") for did in doc["inputs"]
    )
