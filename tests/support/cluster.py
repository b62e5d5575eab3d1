"""A real IPFS Cluster on loopback: 3 Kubo daemons and 3 cluster peers.

    with start_cluster(tmp_path) as cluster:
        cluster.rest("GET", "/peers")             # REST API, basic auth
        cluster.pinsvc_url, cluster.token         # Pinning Service API, bearer token (JWT)
        cluster.wait_status(cid, pinned=2)        # replication factor 2 honoured
        cluster.kill_kubo(1); cluster.restart_kubo(1)
        cluster.restart()                         # every cluster peer stopped and started again

Built by `make gonodes` (tools/go_nodes.sh): `.gonodes/bin/ipfs` (Kubo v0.43.1) and
`.gonodes/bin/ipfs-cluster-service` (IPFS Cluster v1.1.6). Each peer `i` has its own directory
`workdir/peer<i>/` with `kubo/` (the Kubo repo and log, :mod:`tests.support.kubo`) and
`cluster/` (`service.json`, `identity.json`, the datastore, `cluster.log`).

Configuration (the same as the docs page "Keeping datasets online" shows):

- consensus ``crdt``; ``trusted_peers`` = the three peer IDs (no ``"*"``); one shared
  ``secret`` (32 random bytes, hex); ``peer_addresses`` = the other peers, so a restarted peer
  finds them without ``--bootstrap``; libp2p on 127.0.0.1 TCP only (no QUIC, no mDNS);
- ``replication_factor_min`` = ``replication_factor_max`` = 2 (of 3 peers);
- REST API and Pinning Service API on 127.0.0.1, both with ``basic_auth_credentials``
  (one user, a random password); the Pinning Service API takes ``Authorization: Bearer JWT``
  where the JWT comes from ``POST /token`` with the basic credentials (cluster's scheme);
  the IPFS proxy API is left out of the configuration, so it does not start;
- datastore ``leveldb`` (pebble's default cache is 1 GiB per peer);
- ``pin_timeout`` 10 s by default (a pin with no progress for that long fails: how the tests get a
  ``failed`` pin), ``monitor_ping_interval`` 2 s, informer ``metric_ttl`` 10 s (allocation
  needs fresh metrics from every peer).

Ports are picked once (free 127.0.0.1 ports) and kept across restarts, so a restarted Kubo or
cluster peer is found where it was. Kubo nodes are connected to each other with peering
(:func:`tests.support.kubo.connect`), so a restarted node is re-dialled. Processes die with the
test process (PR_SET_PDEATHSIG); a normal stop is SIGTERM, then SIGKILL; every start-up failure
names the log and shows its tail. Start-up runs the inits and daemons of the three peers in
parallel (about 10-20 s here).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.support.kubo import KuboNode, connect, start_kubo
from tests.support.nodes import NodeProcess, NodeStartError, free_port, require_installed

__all__ = [
    "CLUSTER_BIN",
    "CLUSTER_CTL",
    "CLUSTER_VERSION",
    "Cluster",
    "ClusterPeer",
    "start_cluster",
]

ROOT = Path(__file__).resolve().parents[2]
_GONODES = Path(os.environ.get("ODFWEB3_GONODES", ROOT / ".gonodes")) / "bin"
CLUSTER_BIN = _GONODES / "ipfs-cluster-service"
CLUSTER_CTL = _GONODES / "ipfs-cluster-ctl"
CLUSTER_VERSION = "1.1.6"  # tools/go_nodes.sh CLUSTER_VERSION

PEERS = 3
REPLICATION = 2
USER = "odfweb3"
READY_TIMEOUT = 90.0
INIT_TIMEOUT = 60.0


@dataclass
class ClusterPeer:
    """One Kubo daemon and the cluster peer in front of it."""

    index: int
    workdir: Path
    kubo_ports: tuple[int, int, int]  # api, gateway, swarm
    cluster_port: int
    rest_port: int
    pinsvc_port: int
    peer_id: str = ""
    kubo: KuboNode | None = None
    process: NodeProcess | None = field(default=None, repr=False)
    _kubo_ctx: contextlib.ExitStack | None = field(default=None, repr=False)

    @property
    def config_dir(self) -> Path:
        return self.workdir / "cluster"

    @property
    def rest_url(self) -> str:
        return f"http://127.0.0.1:{self.rest_port}"

    @property
    def pinsvc_url(self) -> str:
        return f"http://127.0.0.1:{self.pinsvc_port}"

    @property
    def addr(self) -> str:
        return f"/ip4/127.0.0.1/tcp/{self.cluster_port}/p2p/{self.peer_id}"

    def kubo_config(self) -> dict[str, Any]:
        api, gateway, swarm = self.kubo_ports
        return {
            "Addresses.API": f"/ip4/127.0.0.1/tcp/{api}",
            "Addresses.Gateway": f"/ip4/127.0.0.1/tcp/{gateway}",
            "Addresses.Swarm": [f"/ip4/127.0.0.1/tcp/{swarm}"],
        }

    def start_kubo(self) -> KuboNode:
        stack = contextlib.ExitStack()
        try:
            self.kubo = stack.enter_context(
                start_kubo(
                    self.workdir / "kubo", config=self.kubo_config(), name=f"kubo{self.index}"
                )
            )
        except BaseException:
            stack.close()
            raise
        self._kubo_ctx = stack
        return self.kubo

    def stop_kubo(self) -> None:
        if self._kubo_ctx is not None:
            self._kubo_ctx.close()
            self._kubo_ctx = None

    def log_tail(self, lines: int = 40) -> str:
        return self.process.log_tail(lines) if self.process is not None else "(no log)"


def _init_peer(peer: ClusterPeer) -> None:
    """`ipfs-cluster-service init` (identity + default service.json), once per directory."""
    if (peer.config_dir / "identity.json").exists():
        return
    peer.config_dir.mkdir(parents=True, exist_ok=True)
    init = NodeProcess(
        f"cluster{peer.index} init",
        [
            str(CLUSTER_BIN),
            "--config",
            str(peer.config_dir),
            "init",
            "--consensus",
            "crdt",
            "--datastore",
            "leveldb",
        ],
        peer.config_dir / "cluster.log",
    )
    init.start()
    assert init.proc is not None
    try:
        code = init.proc.wait(timeout=INIT_TIMEOUT)
    except subprocess.TimeoutExpired:
        init.stop()
        raise init.failure(f"did not finish in {INIT_TIMEOUT:.0f} s") from None
    if code != 0:
        raise init.failure("failed")


def _write_service_json(
    peer: ClusterPeer,
    others: list[ClusterPeer],
    secret: str,
    password: str,
    trusted: list[str],
    pin_timeout: str,
) -> None:
    path = peer.config_dir / "service.json"
    cfg = json.loads(path.read_text())
    c = cfg["cluster"]
    c["peername"] = f"peer{peer.index}"
    c["secret"] = secret
    c["listen_multiaddress"] = [f"/ip4/127.0.0.1/tcp/{peer.cluster_port}"]
    c["peer_addresses"] = [o.addr for o in others]
    c["mdns_interval"] = "0s"
    c["enable_relay_hop"] = False
    c["replication_factor_min"] = REPLICATION
    c["replication_factor_max"] = REPLICATION
    c["monitor_ping_interval"] = "2s"
    c["peer_watch_interval"] = "2s"
    c["dial_peer_timeout"] = "2s"
    c["leave_on_shutdown"] = False
    cfg["consensus"]["crdt"]["trusted_peers"] = trusted
    cfg["consensus"]["crdt"]["cluster_name"] = "odfweb3-test"
    api = cfg["api"]
    api.pop("ipfsproxy", None)
    credentials = {USER: password}
    api["restapi"]["http_listen_multiaddress"] = f"/ip4/127.0.0.1/tcp/{peer.rest_port}"
    api["restapi"]["basic_auth_credentials"] = credentials
    api["pinsvcapi"]["http_listen_multiaddress"] = f"/ip4/127.0.0.1/tcp/{peer.pinsvc_port}"
    api["pinsvcapi"]["basic_auth_credentials"] = credentials
    kubo_api = peer.kubo_ports[0]
    connector = cfg["ipfs_connector"]["ipfshttp"]
    connector["node_multiaddress"] = f"/ip4/127.0.0.1/tcp/{kubo_api}"
    connector["pin_timeout"] = pin_timeout
    # One Kubo call may take this long (default 5m0s; a 1 GB pin over bitswap on 2 busy cores
    # can take longer). A pin that stops making progress is pin_timeout's business: that is how
    # the Kubo bitswap stall shows (bench/RESULTS.md; docs/kubo-notes.md).
    connector["ipfs_request_timeout"] = "30m0s"
    connector["connect_swarms_delay"] = "1s"
    for informer in cfg["informer"].values():
        informer["metric_ttl"] = "10s"
    cfg["monitor"]["pubsubmon"]["check_interval"] = "2s"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(cfg, indent=2))
    os.chmod(tmp, 0o600)
    tmp.replace(path)


class Cluster:
    """The running cluster: peers, credentials, and helpers over the REST API."""

    def __init__(self, workdir: Path, peers: list[ClusterPeer], password: str) -> None:
        self.workdir = workdir
        self.peers = peers
        self.user = USER
        self.password = password
        self.token = ""

    # -------------------------------------------------------------- endpoints

    @property
    def pinsvc_url(self) -> str:
        """Peer 0's Pinning Service API."""
        return self.peers[0].pinsvc_url

    @property
    def rest_url(self) -> str:
        """Peer 0's REST API."""
        return self.peers[0].rest_url

    def kubos(self) -> list[KuboNode]:
        return [p.kubo for p in self.peers if p.kubo is not None]

    def rest(self, method: str, path: str, peer: int = 0, **kw: Any) -> httpx.Response:
        """A REST API request to peer `peer` with basic auth; raise on a non-2xx answer."""
        r = httpx.request(
            method,
            f"{self.peers[peer].rest_url}{path}",
            auth=(self.user, self.password),
            timeout=kw.pop("timeout", 30.0),
            **kw,
        )
        if r.status_code >= 300:
            raise RuntimeError(f"cluster {method} {path}: HTTP {r.status_code}: {r.text[:300]}")
        return r

    def status(self, cid: str, peer: int = 0) -> dict[str, str]:
        """``{peer_id: tracker status}`` for `cid` (``pinned``, ``pinning``, ``remote``...)."""
        answer = self.rest("GET", f"/pins/{cid}", peer=peer).json()
        return {
            pid: str(info.get("status")) for pid, info in (answer.get("peer_map") or {}).items()
        }

    def pin(self, cid: str, peer: int = 0) -> dict[str, Any]:
        """The cluster's pin object for `cid` (allocations, name, metadata), via the REST API."""
        result: dict[str, Any] = self.rest("GET", f"/allocations/{cid}", peer=peer).json()
        return result

    def pinset(self, peer: int = 0) -> dict[str, dict[str, Any]]:
        """Every pin in the shared state: ``{cid: pin object}``."""
        r = self.rest("GET", "/allocations", peer=peer, params={"filter": "all"})
        return {str(p["cid"]): p for p in _json_lines(r.text)}

    def wait_status(
        self, cid: str, *, pinned: int, timeout: float = 60.0, peer: int = 0
    ) -> dict[str, str]:
        """Wait until exactly `pinned` peers report `cid` pinned; return the status map."""
        deadline = time.monotonic() + timeout
        seen: dict[str, str] = {}
        while time.monotonic() < deadline:
            with contextlib.suppress(RuntimeError, httpx.HTTPError):
                seen = self.status(cid, peer=peer)
                if sum(1 for s in seen.values() if s == "pinned") == pinned:
                    return seen
            time.sleep(0.3)
        raise AssertionError(f"{cid}: not pinned on {pinned} peers after {timeout:.0f} s: {seen}")

    def wait_until(self, probe: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(RuntimeError, httpx.HTTPError):
                if probe():
                    return
            time.sleep(0.3)
        raise NodeStartError(f"cluster: not {what} after {timeout:.0f} s\n{self.log_tails()}")

    def log_tails(self) -> str:
        return "\n".join(
            f"---- peer{p.index} ({p.config_dir / 'cluster.log'}) ----\n{p.log_tail(25)}"
            for p in self.peers
        )

    # -------------------------------------------------------------- life cycle

    def start_peers(self) -> None:
        """Start every cluster peer's daemon, then wait for each REST API."""
        for i in range(len(self.peers)):
            self.launch_peer(i)
        for i in range(len(self.peers)):
            self.wait_peer(i)

    def start_peer(self, i: int) -> None:
        """Start cluster peer `i`'s daemon (its Kubo must be up) and wait for its REST API."""
        self.launch_peer(i)
        self.wait_peer(i)

    def launch_peer(self, i: int) -> None:
        """Start cluster peer `i`'s daemon (from the calling thread: see start_cluster)."""
        peer = self.peers[i]
        proc = NodeProcess(
            f"cluster{i}",
            [str(CLUSTER_BIN), "--config", str(peer.config_dir), "daemon"],
            peer.config_dir / "cluster.log",
            {"GOLOG_LOG_LEVEL": "error"},
        )
        peer.process = proc
        proc.start()

    def wait_peer(self, i: int) -> None:
        """Wait until cluster peer `i` answers on its REST API."""
        peer = self.peers[i]
        proc = peer.process
        assert proc is not None

        def ready() -> bool:
            try:
                r = httpx.get(f"{peer.rest_url}/id", auth=(self.user, self.password), timeout=5)
            except httpx.HTTPError:
                return False
            return r.status_code == 200

        proc.wait_until(ready, READY_TIMEOUT, f"REST API on {peer.rest_url}")

    def stop_peer(self, i: int) -> None:
        """SIGTERM cluster peer `i` (SIGKILL if it does not exit)."""
        proc = self.peers[i].process
        if proc is not None:
            proc.stop()

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        """Every peer sees all peers, and has fresh freespace metrics from all of them."""

        def all_see_all() -> bool:
            for i in range(len(self.peers)):
                peers = _json_lines(self.rest("GET", "/peers", peer=i).text)
                if len({p.get("id") for p in peers if not p.get("error")}) != len(self.peers):
                    return False
                metrics = self.rest("GET", "/monitor/metrics/freespace", peer=i).json()
                if len({m.get("peer") for m in metrics if m.get("valid")}) != len(self.peers):
                    return False
            return True

        self.wait_until(all_see_all, timeout, "all peers connected with fresh metrics")

    def restart(self) -> None:
        """Stop every cluster peer (SIGTERM), start them again, wait until ready."""
        for i in range(len(self.peers)):
            self.stop_peer(i)
        self.start_peers()
        self.wait_ready()

    def kill_kubo(self, i: int) -> None:
        """SIGKILL peer `i`'s Kubo daemon (no clean shutdown)."""
        kubo = self.peers[i].kubo
        assert kubo is not None and kubo.process is not None and kubo.process.proc is not None
        os.killpg(kubo.process.proc.pid, signal.SIGKILL)
        kubo.process.proc.wait(timeout=10)

    def restart_kubo(self, i: int) -> KuboNode:
        """Start peer `i`'s Kubo again on the same repo and ports; reconnect it to the others."""
        peer = self.peers[i]
        peer.stop_kubo()
        node = peer.start_kubo()
        for other in self.peers:
            alive = other.kubo is not None and other.kubo.process is not None
            if other is not peer and alive and other.kubo.process.running():  # type: ignore[union-attr]
                assert other.kubo is not None
                connect(node, other.kubo)
        return node

    def new_token(self, peer: int = 0) -> str:
        """A JWT for the Pinning Service API (``POST /token`` with the basic credentials)."""
        r = httpx.post(
            f"{self.peers[peer].pinsvc_url}/token", auth=(self.user, self.password), timeout=30
        )
        r.raise_for_status()
        return str(r.json()["token"])


def _json_lines(text: str) -> list[dict[str, Any]]:
    """The cluster streams lists as one JSON object per line (or one JSON array)."""
    text = text.strip()
    if not text:
        return []
    if text.startswith("["):
        return list(json.loads(text))
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@contextlib.contextmanager
def start_cluster(workdir: Path, *, pin_timeout: str = "10s") -> Iterator[Cluster]:
    """Start 3 Kubo daemons and 3 cluster peers on loopback; stop them all afterwards.

    ``pin_timeout``: how long a Kubo pin may make no progress before the cluster fails it
    (10 s: the tests' failed pin; the benchmark uses 1m0s, then recovers a stalled pin)."""
    require_installed(CLUSTER_BIN)
    workdir.mkdir(parents=True, exist_ok=True)
    peers = [
        ClusterPeer(
            index=i,
            workdir=workdir / f"peer{i}",
            kubo_ports=(free_port(), free_port(), free_port()),
            cluster_port=free_port(),
            rest_port=free_port(),
            pinsvc_port=free_port(),
        )
        for i in range(PEERS)
    ]
    password = secrets.token_hex(16)
    secret = secrets.token_hex(32)
    cluster = Cluster(workdir, peers, password)
    try:
        # Daemons are started from this thread only: PR_SET_PDEATHSIG fires when the *thread*
        # that forked the child exits, so a daemon started by a pool thread dies with it.
        with ThreadPoolExecutor(PEERS) as pool:
            inits = [pool.submit(_init_peer, p) for p in peers]
            for p in peers:
                p.start_kubo()
            for f in inits:
                f.result()
        for p in peers:
            p.peer_id = json.loads((p.config_dir / "identity.json").read_text())["id"]
        trusted = [p.peer_id for p in peers]
        for p in peers:
            others = [o for o in peers if o is not p]
            _write_service_json(p, others, secret, password, trusted, pin_timeout)
        nodes = cluster.kubos()
        for a_i, a in enumerate(nodes):
            for b in nodes[a_i + 1 :]:
                connect(a, b)
        cluster.start_peers()
        cluster.wait_ready()
        cluster.token = cluster.new_token()
        yield cluster
    finally:
        for i in range(len(peers)):
            cluster.stop_peer(i)
        for p in peers:
            p.stop_kubo()
