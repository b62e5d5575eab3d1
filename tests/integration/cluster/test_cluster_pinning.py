"""``publish --to pinning:NAME`` against a live IPFS Cluster: replication proven.

The cluster (tests/support/cluster.py) runs 3 Kubo nodes and 3 cluster peers with
replication factor 2; its Pinning Service API is the service. The publisher's own Kubo node
is not connected to the cluster: the cluster fetches through the pin's `origins`. No skip, no
mock: the only stand-in is a loopback socket that accepts connections and never answers (a
service that hangs is a fault the cluster cannot be asked to produce).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from odfweb3.cli.main import main
from odfweb3.odf.builder import append_blocks, create_root_dataset
from tests.support.cluster import Cluster
from tests.support.kubo import KuboNode, start_kubo
from tests.support.lying_proxy import lying_proxy


def make_config(
    tmp_path: Path,
    node: KuboNode,
    services: dict[str, dict[str, Any]],
    *,
    gateway: KuboNode | None = None,
) -> Path:
    """odfweb3.yaml for one test: the node, keystore, state, and the pinning services."""
    cfg = {
        "ipfs": {"api": node.api_url, "gateway": (gateway or node).gateway_url, "timeout": 60},
        "keystore": str(tmp_path / "keys"),
        "state_dir": str(tmp_path / "state"),
        "pinning": {"services": services},
    }
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "odfweb3.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def token_file(tmp_path: Path, token: str, name: str = "cluster.token") -> str:
    path = tmp_path / name
    path.write_text(token + "\n")
    os.chmod(path, 0o600)
    return str(path)


def cluster_service(cluster: Cluster, tmp_path: Path, **extra: Any) -> dict[str, Any]:
    return {
        "endpoint": cluster.pinsvc_url,
        "token_file": token_file(tmp_path, cluster.token),
        "deadline_s": 120,
        **extra,
    }


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    """Run the CLI with --json; (exit code, parsed stdout or None, stderr)."""
    code = main([*argv, "--json"], env={"HOME": os.environ.get("HOME", "/tmp")})
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def pinned_count(cluster: Cluster, cid: str) -> int:
    return sum(1 for s in cluster.status(cid).values() if s == "pinned")


def kubo_pins(node: KuboNode) -> set[str]:
    keys = node.rpc_json("pin/ls", type="recursive").get("Keys") or {}
    return set(keys)


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    seed = int.from_bytes(os.urandom(4), "big")
    return create_root_dataset(
        tmp_path / "ds", blocks=3, data_bytes=300_000, seed=seed, fsync=False
    ).path


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A loopback HTTP endpoint that accepts connections, reads, and never answers."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    conns: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            conns.append(conn)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.getsockname()[1]}"
    stop.set()
    t.join(timeout=5)
    for c in conns:
        c.close()
    srv.close()


def test_publish_pins_on_two_peers_and_update_pins_new_root_before_old_goes(
    tmp_path: Path,
    dataset: Path,
    ipfs_cluster: Cluster,
    publisher: KuboNode,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with contextlib.ExitStack() as stack:
        _pins_then_updates(tmp_path, dataset, ipfs_cluster, publisher, capsys, stack)


def _pins_then_updates(
    tmp_path: Path,
    dataset: Path,
    ipfs_cluster: Cluster,
    publisher: KuboNode,
    capsys: pytest.CaptureFixture[str],
    stack: contextlib.ExitStack,
) -> None:
    # The service's answers pass through a recording proxy: the order of what odfweb3 asked
    # and was told proves "the new root pinned before the old goes" whatever the load (a
    # sampler of the pinset can miss a short window on a busy machine).
    proxy = stack.enter_context(lying_proxy(ipfs_cluster.pinsvc_url))
    exchanges: list[tuple[str, str, str, str]] = []

    def record(method: str, path: str, data: bytes) -> bytes:
        try:
            doc = json.loads(data)
        except ValueError:
            doc = None
        if isinstance(doc, dict) and isinstance(doc.get("pin"), dict):
            exchanges.append((method, path, str(doc["pin"].get("cid")), str(doc.get("status"))))
        else:
            exchanges.append((method, path, "", ""))
        return data

    proxy.edit = record
    service = cluster_service(ipfs_cluster, tmp_path, cluster_api=ipfs_cluster.rest_url)
    service["endpoint"] = proxy.url
    cfg = make_config(tmp_path, publisher, {"cluster": service})
    code, out, err = run(
        capsys, "publish", str(dataset), "--to", "pinning:cluster", "--config", str(cfg)
    )
    assert code == 0, err
    root = out["locator"]
    pin = out["pins"]["cluster"]
    assert pin["status"] == "pinned" and pin["cid"] == root and pin["update"] == "add"
    assert out["record"]["name"], "the IPNS record is published as for --to ipfs"
    assert pin["statuses"][-1] == "pinned", pin  # followed: queued / pinning -> pinned

    # Replication factor 2 of 3 peers: exactly two pinned, the third holds it as remote.
    statuses = sorted(ipfs_cluster.status(root).values())
    assert statuses == ["pinned", "pinned", "remote"], statuses
    allocated = ipfs_cluster.pin(root)
    assert len(allocated["allocations"]) == 2
    dataset_id = out["plan"]["datasetId"]
    assert allocated["name"] == f"odf:{dataset_id}"
    assert allocated["metadata"] == {"odf_dataset_id": dataset_id, "odf_head": out["plan"]["head"]}
    holders = [p for p in ipfs_cluster.peers if p.peer_id in allocated["allocations"]]
    for p in holders:
        assert p.kubo is not None and root in kubo_pins(p.kubo)

    # The token is never saved: not in any state file.
    for f in (tmp_path / "state").rglob("*"):
        assert not f.is_file() or ipfs_cluster.token.encode() not in f.read_bytes(), f

    # status: the service's pin, asked of the service.
    code, status, err = run(capsys, "status", str(dataset), "--config", str(cfg))
    assert code == 0, err
    row = next(r for r in status["targets"] if r["target"] == "pinning:cluster")
    assert row["pin"]["status"] == "pinned" and row["pin"]["live"] and row["root"] == root

    # Update: the new root must be pinned (2 peers) before the old one leaves the pinset.
    append_blocks(dataset, 1, data_bytes=50_000, fsync=False)
    samples: list[dict[str, int]] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            try:
                lines = ipfs_cluster.rest("GET", "/pins", params={"local": "false"}).text
            except Exception:
                continue
            snap = {}
            for line in lines.splitlines():
                if line.strip():
                    gpi = json.loads(line)
                    snap[gpi["cid"]] = sum(
                        1 for i in gpi["peer_map"].values() if i["status"] == "pinned"
                    )
            samples.append(snap)
            time.sleep(0.05)

    moved_before = sum(
        int(k.rpc_json("stats/bitswap")["DataReceived"]) for k in ipfs_cluster.kubos()
    )
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        code, out2, err = run(
            capsys, "publish", str(dataset), "--to", "pinning:cluster", "--config", str(cfg)
        )
    finally:
        time.sleep(0.3)
        stop.set()
        sampler.join(timeout=30)
    assert code == 0, err
    new_root = out2["locator"]
    assert new_root != root
    pin2 = out2["pins"]["cluster"]
    assert pin2["status"] == "pinned" and pin2["update"] == "add-then-remove"
    assert pin2["replaced"] == root
    # On the peers that hold the previous root (cluster_api: user-allocations), so only the
    # new block moves: 50 kB to each of 2 peers, not the 900 kB dataset again.
    assert pin2["keptPeers"] == 2
    assert sorted(ipfs_cluster.pin(new_root)["allocations"]) == sorted(allocated["allocations"])
    moved = sum(int(k.rpc_json("stats/bitswap")["DataReceived"]) for k in ipfs_cluster.kubos())
    assert moved - moved_before < 400_000, moved - moved_before
    assert samples, "the sampler saw the pinset"
    for snap in samples:
        assert root in snap or snap.get(new_root) == 2, snap  # old gone only after new pinned
    # What odfweb3 did, in order: it was told the new root is pinned before it removed the old.
    pinned_at = max(
        i for i, (m, _, cid, st) in enumerate(exchanges) if cid == new_root and st == "pinned"
    )
    removed_at = [i for i, (m, p, _, _) in enumerate(exchanges) if m == "DELETE"]
    assert removed_at and all(i > pinned_at for i in removed_at), exchanges
    assert [p for i, (m, p, _, _) in enumerate(exchanges) if m == "DELETE"] == [
        f"/pins/{pin['requestid']}"
    ]
    assert pinned_count(ipfs_cluster, new_root) == 2
    assert root not in ipfs_cluster.pinset()
    assert ipfs_cluster.pin(new_root)["metadata"]["odf_head"] == out2["plan"]["head"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if all(p.kubo is not None and root not in kubo_pins(p.kubo) for p in ipfs_cluster.peers):
            break
        time.sleep(0.3)
    else:
        raise AssertionError("the old root is still pinned on a Kubo node after 30 s")


def test_sigkill_of_a_kubo_node_dataset_still_pulls_and_verifies(
    tmp_path: Path,
    dataset: Path,
    ipfs_cluster: Cluster,
    publisher: KuboNode,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cfg = make_config(tmp_path, publisher, {"cluster": cluster_service(ipfs_cluster, tmp_path)})
    code, out, err = run(
        capsys, "publish", str(dataset), "--to", "pinning:cluster", "--config", str(cfg)
    )
    assert code == 0, err
    root = out["locator"]
    allocations = ipfs_cluster.pin(root)["allocations"]
    holders = [p for p in ipfs_cluster.peers if p.peer_id in allocations]
    victim, survivor = holders
    ipfs_cluster.kill_kubo(victim.index)
    try:
        assert survivor.kubo is not None and survivor.kubo.has_block(root)
        # Read through the surviving node only (its gateway and RPC API).
        read_cfg = make_config(tmp_path / "reader", survivor.kubo, {})
        dest = tmp_path / "copy"
        code, _, err = run(capsys, "pull", f"ipfs://{root}", str(dest), "--config", str(read_cfg))
        assert code == 0, err
        code, _, err = run(
            capsys,
            "verify",
            str(dest),
            "--against",
            f"ipfs://{root}",
            "--deep",
            "--config",
            str(read_cfg),
        )
        assert code == 0, err
        assert (dest / "refs" / "head").read_bytes() == (dataset / "refs" / "head").read_bytes()
    finally:
        ipfs_cluster.restart_kubo(victim.index)


def test_cluster_restart_keeps_pinset_and_meta(
    tmp_path: Path,
    dataset: Path,
    ipfs_cluster: Cluster,
    publisher: KuboNode,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cfg = make_config(tmp_path, publisher, {"cluster": cluster_service(ipfs_cluster, tmp_path)})
    code, out, err = run(
        capsys, "publish", str(dataset), "--to", "pinning:cluster", "--config", str(cfg)
    )
    assert code == 0, err
    root = out["locator"]
    before = ipfs_cluster.pin(root)
    ipfs_cluster.restart()
    after = ipfs_cluster.pinset()
    assert root in after
    assert (
        after[root]["metadata"]
        == before["metadata"]
        == {
            "odf_dataset_id": out["plan"]["datasetId"],
            "odf_head": out["plan"]["head"],
        }
    )
    assert after[root]["name"] == before["name"]
    assert sorted(after[root]["allocations"]) == sorted(before["allocations"])
    ipfs_cluster.wait_status(root, pinned=2)
    # The service still answers for the pin after the restart (same JWT: same credentials).
    code, status, err = run(capsys, "status", str(dataset), "--config", str(cfg))
    row = next(r for r in status["targets"] if r["target"] == "pinning:cluster")
    assert code == 0 and row["pin"]["status"] == "pinned" and row["pin"]["live"], err


def test_wrong_token_is_one_line_exit_77_and_nothing_is_sent(
    tmp_path: Path,
    dataset: Path,
    ipfs_cluster: Cluster,
    publisher: KuboNode,
    capsys: pytest.CaptureFixture[str],
) -> None:
    wrong = ipfs_cluster.token[:-4] + (
        "AAAA" if not ipfs_cluster.token.endswith("AAAA") else "BBBB"
    )
    service = {"endpoint": ipfs_cluster.pinsvc_url, "token_file": token_file(tmp_path, wrong)}
    cfg = make_config(tmp_path, publisher, {"cluster": service})
    code, _, err = run(
        capsys, "publish", str(dataset), "--to", "pinning:cluster", "--config", str(cfg)
    )
    assert code == 77
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "cluster" in lines[0] and "refused the access token" in lines[0]
    assert wrong not in err and ipfs_cluster.token not in err
    # no publish state (the verified-chain cache under state/cache is about the local chain)
    state = tmp_path / "state"
    assert not [p for p in state.rglob("*.json") if "cache" not in p.relative_to(state).parts]


def test_a_pin_the_service_reports_failed_is_one_line_exit_69(
    tmp_path: Path,
    dataset: Path,
    ipfs_cluster: Cluster,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # An offline publisher: the cluster cannot fetch the root from anywhere, its Kubo pin
    # times out (pin_timeout 10 s) and the cluster reports the pin failed.
    with start_kubo(tmp_path / "offline", offline=True, name="offline") as node:
        service = cluster_service(
            ipfs_cluster, tmp_path, deadline_s=90, cluster_api=ipfs_cluster.rest_url
        )
        cfg = make_config(tmp_path, node, {"cluster": service})
        code, out, err = run(
            capsys, "publish", str(dataset), "--to", "pinning:cluster", "--config", str(cfg)
        )
    assert code == 69, err
    problems = [line for line in err.strip().splitlines() if "failed" in line]
    assert len(problems) == 1, err
    assert "pinning service cluster" in problems[0] and "failed" in problems[0]
    # The cluster's own reason (its REST API's peer error; the pinning API gives none).
    assert "failed: peer peer" in problems[0] and "no reason" not in problems[0], problems[0]
    # The record was not moved: no service holds the data; --json says only the error.
    assert out is not None and set(out) == {"error"} and out["error"]["exit"] == 69, out


def test_several_services_each_reported_a_hanging_one_bounded(
    tmp_path: Path,
    dataset: Path,
    ipfs_cluster: Cluster,
    publisher: KuboNode,
    silent_server: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    services = {
        "cluster": cluster_service(ipfs_cluster, tmp_path),
        "silent": {
            "endpoint": silent_server,
            "token_file": token_file(tmp_path, "t0ken", "silent.token"),
            "timeout_s": 2,
            "deadline_s": 3,
        },
    }
    cfg = make_config(tmp_path, publisher, services)
    # Alone, the hanging service is bounded by its timeout: one line, exit 69. The bound is
    # the one the client enforces and names (the server never answers at all).
    code, out, err = run(
        capsys, "publish", str(dataset), "--to", "pinning:silent", "--config", str(cfg)
    )
    assert code == 69 and out["error"]["exit"] == 69, out
    assert len(err.strip().splitlines()) == 1 and "no answer within 2 s" in err, err
    assert "no answer within 2 s" in out["error"]["message"]
    # With the cluster beside it: the cluster pins, the silent one fails, each reported.
    code, out, err = run(
        capsys,
        "publish",
        str(dataset),
        "--to",
        "pinning:cluster",
        "--to",
        "pinning:silent",
        "--config",
        str(cfg),
    )
    assert code == 69, err
    assert out["pins"]["cluster"]["status"] == "pinned"
    assert "no answer within 2 s" in out["pins"]["silent"]["error"]
    assert "pinning service silent failed" in err
    assert pinned_count(ipfs_cluster, out["locator"]) == 2
    assert out["record"]["name"], "one failing service does not undo the others"
    code, status, _ = run(capsys, "status", str(dataset), "--config", str(cfg), "--offline")
    targets = {r["target"] for r in status["targets"]}
    assert "pinning:cluster" in targets and "pinning:silent" not in targets


def test_without_a_local_node_the_car_is_uploaded_to_the_cluster(
    tmp_path: Path,
    dataset: Path,
    ipfs_cluster: Cluster,
    capsys: pytest.CaptureFixture[str],
) -> None:
    service = cluster_service(ipfs_cluster, tmp_path, cluster_api=ipfs_cluster.rest_url)
    cfg_data = {
        "keystore": str(tmp_path / "keys"),
        "state_dir": str(tmp_path / "state"),
        # No node: nothing listens here, and nothing may be sent to it.
        "ipfs": {"api": "http://127.0.0.1:9", "gateway": "http://127.0.0.1:9"},
        "pinning": {"services": {"cluster": service}, "via": "car"},
    }
    cfg = tmp_path / "odfweb3.yaml"
    cfg.write_text(yaml.safe_dump(cfg_data))
    code, out, err = run(
        capsys, "publish", str(dataset), "--to", "pinning:cluster", "--config", str(cfg)
    )
    assert code == 0, err
    root = out["locator"]
    assert out["pins"]["cluster"]["status"] == "pinned"
    assert pinned_count(ipfs_cluster, root) == 2
    assert ipfs_cluster.pin(root)["metadata"]["odf_head"] == out["plan"]["head"]
    staged = tmp_path / "state" / "pinning-car"
    assert (staged / f"{root}.car").is_file() and list(staged.glob("*.ipns-record"))

    append_blocks(dataset, 1, data_bytes=40_000, fsync=False)
    code, out2, err = run(
        capsys, "publish", str(dataset), "--to", "pinning:cluster", "--config", str(cfg)
    )
    assert code == 0, err
    new_root = out2["locator"]
    assert out2["pins"]["cluster"]["update"] == "add-then-remove"
    assert out2["pins"]["cluster"]["replaced"] == root
    assert pinned_count(ipfs_cluster, new_root) == 2
    assert root not in ipfs_cluster.pinset()
