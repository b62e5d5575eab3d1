"""Through the session's arlocal, an allowed summary of an encrypted dataset is a plain data
item of the upload, served by the gateway, with only the allowed facts; the owner still
pulls and verifies the ciphertext through the record (the byte scans are in
``tests/unit/test_encrypted_discovery.py``)."""

from __future__ import annotations

import json
import secrets

import httpx
import pytest

from odfweb3.cli.main import main
from odfweb3.crypto.sealer import Sealer
from odfweb3.descriptor.summary import SUMMARY_KEYS, validate_summary
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import StateStore
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.publish.gateway_target import GatewayTarget
from odfweb3_arweave.wallet import generate_wallet
from tests.support.encrypted import DATA_MARKER, INFO_MARKER, make_encrypted_world

pytestmark = pytest.mark.integration

RICH = 10**15


def test_arweave_summary_item_beside_the_ciphertext(arlocal, tmp_path, monkeypatch, capsys):
    world = make_encrypted_world(
        tmp_path, monkeypatch, data_bytes=60_000, seed=secrets.randbelow(1 << 31)
    )
    sealer = Sealer(world.ring.current_key(), world.sealer.envelope, discovery="summary")
    wallet = generate_wallet()
    arlocal.mint(wallet.address, RICH)
    target = GatewayTarget(
        ArweaveGateway(arlocal.url),
        wallet,
        StateStore(tmp_path / "state"),
        sealer=sealer,
        publisher={"name": "Arweave Summary Office"},
    )
    outcome = publish_dataset(world.ds, target, sealer=sealer)
    arlocal.mine(1)
    item = outcome.state.extra["descriptorId"]
    raw = httpx.get(f"{arlocal.url}/{item}", timeout=60).content
    doc = json.loads(raw)
    assert set(doc) == set(SUMMARY_KEYS) and validate_summary(doc) == []
    assert doc["title"] == INFO_MARKER and doc["creator"]["name"] == "Arweave Summary Office"
    assert doc["head"] == multihash_to_str(world.built.head)
    assert DATA_MARKER not in raw and b"ar://" not in raw
    # the owner reads the ciphertext back through the record, as without a summary
    env = {
        "ODFWEB3_ARWEAVE_GATEWAY": arlocal.url,
        "ODFWEB3_KEYSTORE": str(world.keys_dir),
        "ODFWEB3_STATE_DIR": str(tmp_path / "reader-state"),
        "HOME": str(tmp_path),
    }
    dest = tmp_path / "pulled"
    ref = f"ar://{outcome.state.record['recordId']}"
    code = main(["--json", "pull", ref, str(dest)], env=env)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["head"] == multihash_to_str(world.built.head)
    assert main(["validate", str(dest), "--deep"], env=env) == 0
