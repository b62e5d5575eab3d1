"""The Kubo test support itself (tests/support/kubo.py): version, isolation, restart, two nodes.

Kubo is built from its Go module by `make gonodes` (tools/go_nodes.sh); these tests start their
own daemons so they check the start-up options, not a shared fixture.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import httpx
from multiformats import CID

from tests.support.kubo import KUBO_BIN, KUBO_VERSION, connect, start_kubo


def _raw_cid(data: bytes) -> str:
    return str(CID("base32", 1, "raw", ("sha2-256", hashlib.sha256(data).digest())))


def test_offline_node_is_kubo_on_loopback_with_no_peers_and_restarts_with_its_repo(
    tmp_path: Path,
) -> None:
    payload = b"kubo offline node\n"
    with start_kubo(tmp_path / "n", offline=True) as node:
        version = node.version()
        assert version["Version"] == KUBO_VERSION
        assert node.kind == "kubo"
        assert node.api_url.startswith("http://127.0.0.1:")
        assert node.gateway_url.startswith("http://127.0.0.1:")
        assert node.repo_path is not None
        cfg = json.loads((node.repo_path / "config").read_text())
        assert cfg["Bootstrap"] == []
        assert cfg["Discovery"]["MDNS"]["Enabled"] is False
        assert cfg["AutoConf"]["Enabled"] is False
        assert all(a.startswith("/ip4/127.0.0.1/") for a in cfg["Addresses"]["Swarm"])
        # --offline: no swarm at all, Kubo refuses network commands.
        r = httpx.post(f"{node.api_url}/api/v0/swarm/peers", timeout=10.0)
        assert r.status_code == 500
        assert "online mode" in r.json()["Message"]
        cid = node.block_put(payload, cid_codec="raw")
        assert cid == _raw_cid(payload)
        assert node.has_block(cid)
        assert node.gateway_get(f"/ipfs/{cid}").content == payload
        first_id = node.peer_id
        api = node.api_url
    # Stopped cleanly: the API is gone and the repo lock released.
    try:
        httpx.post(f"{api}/api/v0/id", timeout=2.0)
        raise AssertionError("the daemon still answers after the context exited")
    except httpx.HTTPError:
        pass
    with start_kubo(tmp_path / "n", offline=True) as again:
        assert again.peer_id == first_id
        assert again.has_block(cid)


def test_two_nodes_connect_and_fetch_blocks_over_bitswap(tmp_path: Path) -> None:
    payload = b"fetched over bitswap\n"
    with start_kubo(tmp_path / "a") as a, start_kubo(tmp_path / "b") as b:
        assert a.peer_id != b.peer_id
        assert a.swarm_addrs and b.swarm_addrs
        connect(a, b)
        assert a.peers() == {b.peer_id}
        cid = a.block_put(payload, cid_codec="raw")
        assert not b.has_block(cid)
        stat = b.rpc_json("block/stat", cid, timeout="30s")
        assert stat["Size"] == len(payload)
        assert b.has_block(cid)
        assert b.gateway_get(f"/ipfs/{cid}?format=raw").content == payload


def test_cli_talks_to_the_running_daemon(tmp_path: Path) -> None:
    with start_kubo(tmp_path / "n", offline=True) as node:
        out = node.cli("id", "-f", "<id>").stdout.strip()
        assert out == node.peer_id
        assert KUBO_BIN.name == "ipfs"
