"""On the suite's Kubo node, an allowed summary of an encrypted dataset is pinned beside its
ciphertext root, named by the signed IPNS record, and holds only the allowed facts (the
``car:``/``bundle:`` byte scans are in ``tests/unit/test_encrypted_discovery.py``)."""

from __future__ import annotations

import json
import secrets

import pytest

from odfweb3.cli.main import main
from odfweb3.descriptor.summary import SUMMARY_KEYS, validate_summary
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from odfweb3_ipfs.formats.cid import Cid
from tests.support.encrypted import DATA_MARKER, INFO_MARKER, make_encrypted_world

pytestmark = pytest.mark.integration


def test_kubo_pins_the_summary_beside_the_ciphertext(ipfs_node, tmp_path, monkeypatch, capsys):
    # a seed no other test uses: the node is the session's
    world = make_encrypted_world(
        tmp_path, monkeypatch, data_bytes=60_000, seed=secrets.randbelow(1 << 31)
    )
    cfg = tmp_path / "odfweb3.yaml"
    cfg.write_text(
        json.dumps(
            {
                "state_dir": str(tmp_path / "state"),
                "keystore": str(world.keys_dir),
                "ipfs": {"api": ipfs_node.api_url, "gateway": ipfs_node.gateway_url},
                "publisher": {"name": "Kubo Summary Office"},
                "datasets": {world.did: {"encryptedDiscovery": "summary"}},
            }
        )
    )
    args = ["--json", "publish", str(world.ds), "--to", "ipfs", "--encrypt", "--config", str(cfg)]
    assert main(args) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    cid = Cid.decode(summary["descriptor"]).encode()
    raw = ipfs_node.rpc("cat", f"/ipfs/{cid}").content
    doc = json.loads(raw)
    assert set(doc) == set(SUMMARY_KEYS) and validate_summary(doc) == []
    assert doc["title"] == INFO_MARKER and doc["creator"]["name"] == "Kubo Summary Office"
    assert doc["head"] == multihash_to_str(DatasetReader.open(world.ds).head())
    assert DATA_MARKER not in raw and b"ipfs://" not in raw and b"ipns://" not in raw
    pins = ipfs_node.rpc_json("pin/ls", type="recursive")["Keys"]
    assert cid in {Cid.decode(k).encode() for k in pins}
    # the root it sits beside is ciphertext: its refs/head is not the plaintext head
    root = summary["locator"]
    head_file = ipfs_node.rpc("cat", f"/ipfs/{root}/refs/head").content
    world.assert_no_leak(head_file, "refs/head")
    assert (world.ds / "refs" / "head").read_bytes() != head_file
