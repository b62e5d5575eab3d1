"""Resolve by IPNS name across two Kubo nodes.

Node A (the publisher's) and node B (a reader's) run on loopback, connected to each other and to
nobody else, with `Routing.Type=dht` (docs/kubo-notes.md: each is the other's only DHT peer, so
a record put on A is pushed to B). `odfweb3 publish --to ipfs` runs against A; `resolve`, `pull`
and `verify --deep` of ipns://NAME run against B's API and gateway only. B never saw the files:
it has none of the blocks before, and gets them from A over bitswap. After an update on A, B
serves the new head.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from tests.support.kubo import KuboNode, connect, start_kubo


def env_for(node: KuboNode, home: Path) -> dict[str, str]:
    return {
        "ODFWEB3_STATE_DIR": str(home / "state"),
        "ODFWEB3_KEYSTORE": str(home / "keys"),
        "ODFWEB3_IPFS_API": node.api_url,
        "ODFWEB3_IPFS_GATEWAY": node.gateway_url,
        "HOME": str(home),
    }


def run_json(capsys: pytest.CaptureFixture[str], argv: list[str], env: dict[str, str]) -> dict:
    code = main([*argv, "--json"], env=env)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    doc: dict = json.loads(captured.out)
    return doc


def received_blocks(node: KuboNode) -> int:
    return int(node.rpc_json("bitswap/stat")["BlocksReceived"])


def test_publish_on_a_resolve_pull_verify_through_b(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ds = create_root_dataset(tmp_path / "ds", blocks=4, data_bytes=40_000, seed=171).path
    with start_kubo(tmp_path / "a") as a, start_kubo(tmp_path / "b") as b:
        connect(a, b)
        publisher = env_for(a, tmp_path / "publisher")
        reader = env_for(b, tmp_path / "reader")

        published = run_json(capsys, ["publish", str(ds), "--to", "ipfs"], publisher)
        root = published["locator"]
        name = published["record"]["name"]
        head = multihash_to_str(DatasetReader.open(ds).head())
        assert not b.has_block(root)  # B never saw the files
        assert received_blocks(b) == 0
        ref = f"ipns://{name}"

        (resolved,) = run_json(capsys, ["resolve", ref], reader)["results"]
        assert resolved["head"] == head
        assert resolved["locator"] == f"/ipfs/{root}"
        dest = tmp_path / "dest"
        pulled = run_json(capsys, ["pull", ref, str(dest)], reader)
        assert pulled["head"] == head
        assert multihash_to_str(DatasetReader.open(dest).head()) == head
        verified = run_json(capsys, ["verify", str(ds), "--against", ref, "--deep"], reader)
        assert [r["status"] for r in verified["replicas"]] == ["identical"]
        # The blocks came to B from A over bitswap.
        assert b.has_block(root)
        assert received_blocks(b) > 0

        # An update on A: B serves the new head.
        append_blocks(ds, 2, data_bytes=5_000, seed=172)
        new_head = multihash_to_str(DatasetReader.open(ds).head())
        again = run_json(capsys, ["publish", str(ds), "--to", "ipfs"], publisher)
        assert again["record"]["sequence"] == 1 and again["locator"] != root
        assert not b.has_block(again["locator"])
        before = received_blocks(b)
        (resolved,) = run_json(capsys, ["resolve", ref], reader)["results"]
        assert resolved["head"] == new_head and resolved["sequence"] == 1
        pulled = run_json(capsys, ["pull", ref, str(dest)], reader)
        assert pulled["head"] == new_head
        verified = run_json(capsys, ["verify", str(ds), "--against", ref, "--deep"], reader)
        assert [r["status"] for r in verified["replicas"]] == ["identical"]
        assert b.has_block(again["locator"]) and received_blocks(b) > before
