"""Start and stop Kubo daemons built by `make gonodes` (tools/go_nodes.sh -> .gonodes/bin/ipfs).

    with start_kubo(tmp_path / "a") as a, start_kubo(tmp_path / "b") as b:
        connect(a, b)                       # swarm connect + peering, both directions checked
        cid = a.block_put(b"x", cid_codec="raw")
        b.rpc_json("block/stat", cid)       # fetched by B over bitswap

Each node has its own `IPFS_PATH` (`workdir/repo`), made by `ipfs init --profile=test`: API,
gateway and swarm on 127.0.0.1 port 0 (the kernel picks free ports, no probe-then-bind race; the
daemon writes the chosen API and gateway addresses to `repo/api` and `repo/gateway`), no
bootstrap peers, no MDNS, AutoConf off (no configuration fetched from the network), no delegated
routers. On top of that (`BASE_CONFIG`): `Routing.Type=dht` (DHT only: with no bootstrap peers
the nodes' only DHT peers are the ones a test connects), AutoNAT, relays and NAT port mapping
off, telemetry off. `offline=True` runs `ipfs daemon --offline` (no swarm at all). `config`
overrides any key by its dotted path, e.g. `{"Ipns.UsePubsub": True}`.

Starting again on a `workdir` whose repo exists reuses the repo (a restart keeps blocks, pins,
keys and the peer ID). The daemon runs in its own session with PR_SET_PDEATHSIG (a killed pytest
leaves no daemon); a normal stop is SIGTERM (Kubo shuts down cleanly), then SIGKILL. Every
start-up failure names the log file (`workdir/kubo.log`) and shows its tail. No skip: a missing
binary is an error telling to run `make gonodes`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.support.nodes import IpfsNode, NodeProcess, NodeStartError, require_installed

__all__ = [
    "BASE_CONFIG",
    "KUBO_BIN",
    "KUBO_VERSION",
    "KuboNode",
    "connect",
    "kubo_env",
    "start_kubo",
]

ROOT = Path(__file__).resolve().parents[2]
KUBO_BIN = Path(os.environ.get("ODFWEB3_GONODES", ROOT / ".gonodes")) / "bin" / "ipfs"
KUBO_VERSION = "0.43.1"  # tools/go_nodes.sh KUBO_VERSION; tests/hygiene checks they agree

INIT_TIMEOUT = 120.0
READY_TIMEOUT = 120.0
CONNECT_TIMEOUT = 30.0

BASE_CONFIG: Mapping[str, Any] = {
    "Routing.Type": "dht",
    "AutoNAT.ServiceMode": "disabled",
    "Swarm.RelayClient.Enabled": False,
    "Swarm.RelayService.Enabled": False,
    "Swarm.DisableNatPortMap": True,
    "Plugins.Plugins.telemetry.Config.Mode": "off",
}


def added_cids(out: str, path: Path) -> dict[str, str]:
    """What ``ipfs add -r PATH`` printed: relative path -> CID of every file and directory
    ("" = ``path`` itself)."""
    cids: dict[str, str] = {}
    for line in out.splitlines():
        m = re.fullmatch(r"added (\S+) (\S+)", line.strip())
        assert m, line
        rel = m.group(2)
        cids["" if rel == path.name else rel.removeprefix(path.name + "/")] = m.group(1)
    return cids


def kubo_env(repo: Path) -> dict[str, str]:
    """Environment for `ipfs` on `repo`: its IPFS_PATH, no telemetry, quiet logs."""
    return {"IPFS_PATH": str(repo), "IPFS_TELEMETRY": "off", "GOLOG_LOG_LEVEL": "error"}


def _set_dotted(cfg: dict[str, Any], dotted: str, value: Any) -> None:
    node = cfg
    *parents, last = dotted.split(".")
    for key in parents:
        child = node.get(key)
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child
    node[last] = value


def _write_config(repo: Path, overrides: Mapping[str, Any]) -> None:
    """Apply dotted-key overrides to repo/config (temp file + rename)."""
    path = repo / "config"
    cfg = json.loads(path.read_text())
    for key, value in overrides.items():
        _set_dotted(cfg, key, value)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(cfg, indent=2))
    tmp.replace(path)


@dataclass(frozen=True)
class KuboNode(IpfsNode):
    """A running Kubo daemon: `IpfsNode` (rpc, gateway_get, block_put...) plus its identity."""

    peer_id: str = ""
    swarm_addrs: tuple[str, ...] = ()  # loopback listen addresses, without /p2p/ID
    offline: bool = False
    process: NodeProcess | None = field(default=None, compare=False, repr=False)

    def env(self) -> dict[str, str]:
        """Environment for running the `ipfs` CLI against this node's repo (and daemon)."""
        assert self.repo_path is not None
        return {**os.environ, **kubo_env(self.repo_path)}

    def cli(self, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        """Run `ipfs ARGS` on this node (through its running daemon); raise on failure."""
        done = subprocess.run(
            [str(KUBO_BIN), *args],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"ipfs {' '.join(args)}: exit {done.returncode}: {done.stderr}")
        return done

    def has_block(self, cid: str) -> bool:
        """True if the block is in this node's own blockstore (never asks the network)."""
        r = httpx.post(
            f"{self.api_url}/api/v0/block/stat",
            params={"arg": cid, "offline": "true"},
            timeout=30.0,
        )
        return r.status_code == 200

    def peers(self) -> set[str]:
        """Peer IDs this node is connected to."""
        answer = self.rpc_json("swarm/peers")
        return {str(p["Peer"]) for p in answer.get("Peers") or []}

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of this node's log."""
        return self.process.log_tail(lines) if self.process is not None else "(no log)"


def _init_repo(repo: Path, log_path: Path) -> None:
    init = NodeProcess(
        "ipfs init",
        [str(KUBO_BIN), "init", "--profile=test", "--empty-repo"],
        log_path,
        kubo_env(repo),
        cwd=repo.parent,
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


def _read_addr_file(path: Path) -> str | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return text or None


def _http_from_multiaddr(addr: str) -> str:
    # /ip4/127.0.0.1/tcp/PORT (repo/api) or already http://... (repo/gateway)
    if addr.startswith("http://"):
        return addr.rstrip("/")
    parts = addr.strip("/").split("/")
    if len(parts) >= 4 and parts[0] == "ip4" and parts[2] == "tcp":
        return f"http://{parts[1]}:{parts[3]}"
    raise ValueError(f"unexpected Kubo listen address {addr!r}")


@contextlib.contextmanager
def start_kubo(
    workdir: Path,
    *,
    offline: bool = False,
    config: Mapping[str, Any] | None = None,
    name: str = "kubo",
) -> Iterator[KuboNode]:
    """Init (or reuse) `workdir/repo`, run `ipfs daemon` on it, yield the node, stop it."""
    require_installed(KUBO_BIN)
    workdir.mkdir(parents=True, exist_ok=True)
    repo = workdir / "repo"
    log_path = workdir / "kubo.log"
    if not (repo / "config").exists():
        _init_repo(repo, log_path)
    _write_config(repo, {**BASE_CONFIG, **(config or {})})
    for stale in ("api", "gateway"):
        (repo / stale).unlink(missing_ok=True)

    argv = [str(KUBO_BIN), "daemon"] + (["--offline"] if offline else [])
    daemon = NodeProcess(name, argv, log_path, kubo_env(repo), cwd=workdir)
    try:
        daemon.start()
        urls: dict[str, str] = {}

        def ready() -> bool:
            api = _read_addr_file(repo / "api")
            gateway = _read_addr_file(repo / "gateway")
            if api is None or gateway is None:
                return False
            urls["api"] = _http_from_multiaddr(api)
            urls["gateway"] = _http_from_multiaddr(gateway)
            try:
                r = httpx.post(f"{urls['api']}/api/v0/id", timeout=5.0)
            except httpx.HTTPError:
                return False
            return r.status_code == 200

        daemon.wait_until(ready, READY_TIMEOUT, "repo/api, repo/gateway and /api/v0/id")
        ident = httpx.post(f"{urls['api']}/api/v0/id", timeout=30.0).json()
        version = httpx.post(f"{urls['api']}/api/v0/version", timeout=30.0).json()
        if version.get("Version") != KUBO_VERSION:
            raise daemon.failure(f"answers version {version.get('Version')!r}, not {KUBO_VERSION}")
        node = KuboNode(
            api_url=urls["api"],
            gateway_url=urls["gateway"],
            kind="kubo",
            repo_path=repo,
            log_path=log_path,
            peer_id=str(ident["ID"]),
            swarm_addrs=tuple(
                str(a).split("/p2p/")[0]
                for a in ident.get("Addresses") or []
                if str(a).startswith("/ip4/127.0.0.1/")
            ),
            offline=offline,
            process=daemon,
        )
        yield node
    finally:
        daemon.stop()


def connect(a: KuboNode, b: KuboNode, timeout: float = CONNECT_TIMEOUT) -> None:
    """Connect `a` to `b` (swarm connect, then peering on both sides so the link is kept and
    re-dialled), and wait until each lists the other among its peers."""
    if a.offline or b.offline:
        raise ValueError("connect: both nodes must run online (start_kubo(offline=False))")
    if not b.swarm_addrs:
        raise NodeStartError(f"{b.peer_id}: no loopback swarm address; log: {b.log_path}")
    addr = f"{b.swarm_addrs[0]}/p2p/{b.peer_id}"
    a.rpc("swarm/connect", addr)
    a.rpc("swarm/peering/add", addr)
    if a.swarm_addrs:
        b.rpc("swarm/peering/add", f"{a.swarm_addrs[0]}/p2p/{a.peer_id}")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if b.peer_id in a.peers() and a.peer_id in b.peers():
            return
        time.sleep(0.2)
    raise NodeStartError(
        f"{a.peer_id} and {b.peer_id} not connected after {timeout:.0f} s\n"
        f"---- {a.log_path} ----\n{a.log_tail()}\n---- {b.log_path} ----\n{b.log_tail()}"
    )
