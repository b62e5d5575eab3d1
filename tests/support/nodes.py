"""Start and stop the real test nodes: arlocal here, Kubo in tests/support/kubo.py.

arlocal is installed by `make nodes` (tests/nodes/install.sh) under tests/nodes/arlocal; Kubo is
built by `make gonodes` (tools/go_nodes.sh). Each node runs in its own temp directory on free
127.0.0.1 ports, with its output captured to a log file whose path (and tail) appears in every
start-up failure. Processes run in their own session and get SIGKILL from the kernel if the test
process dies (PR_SET_PDEATHSIG), so a crashed or killed pytest leaves no daemon behind; a normal
stop is SIGTERM, then SIGKILL. `IpfsNode` is what every IPFS test sees: a started Kubo
(`tests.support.kubo.KuboNode`) or an external node (`external_ipfs`, e.g. kubo-docker).

js-ipfs 0.66.1 was the IPFS test node until issue 17; what was learnt about it is kept in
docs/jsipfs-notes.md.

arlocal 1.1.66 (full record: docs/arlocal-notes.md): ``GET /info`` (readiness, ``height``),
``GET /mint/{addr}/{winston}``, ``GET /mine/{n}``, ``GET /wallet/{addr}/balance``.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import secrets
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

__all__ = [
    "NODES_DIR",
    "ArlocalNode",
    "IpfsNode",
    "NodeProcess",
    "NodeStartError",
    "NodesNotInstalled",
    "detect_kind",
    "external_ipfs",
    "free_port",
    "require_installed",
    "start_arlocal",
]

NODES_DIR = Path(__file__).resolve().parents[1] / "nodes"
ARLOCAL_BIN = NODES_DIR / "arlocal" / "node_modules" / ".bin" / "arlocal"

# Generous: a loaded 2-core CI machine is slow to start node processes.
INIT_TIMEOUT = 180.0
READY_TIMEOUT = 180.0
STOP_TIMEOUT = 15.0
START_ATTEMPTS = 3  # a free port can be taken between probing it and the node binding it


class NodesNotInstalled(RuntimeError):
    """The npm trees under tests/nodes are missing: run `make nodes`."""


class NodeStartError(RuntimeError):
    """A test node did not start; the message holds its log path and log tail."""


def require_installed(*paths: Path) -> None:
    """Fail (never skip) when a node binary is missing, telling how to install it."""
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise NodesNotInstalled(
            f"test node binaries missing ({', '.join(missing)}): run `make nodes gonodes` "
            "(tests/nodes/install.sh, tools/go_nodes.sh) first"
        )


# free_port's ports: below the kernel's ephemeral range (32768-60999 on Linux), so no port the
# kernel hands out (a `bind(0)`, a client's source port) is ever one of them; each claimed by
# an flock on a file here, held until the test process exits (a killed one's goes with it).
PORT_CLAIMS = Path(tempfile.gettempdir()) / "odfweb3-test-ports"
_PORT_RANGE = (20000, 32000)
_claims: dict[int, int] = {}  # port -> the open claim file's descriptor (never closed)


def _port_range() -> tuple[int, int]:
    low, high = _PORT_RANGE
    try:
        ephemeral = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return low, high
    return (low, ephemeral) if low + 1000 < ephemeral < high else (low, high)


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 for a node to listen on, this process's alone.

    A port probed free and handed to a node that binds it a moment later (Kubo, Cluster,
    Turbo's parts, arlocal) used to be the same port another test process (a second xdist
    worker, another checkout's run) probed in between: one node then failed to start. Now
    every test process claims its ports (an flock on ``PORT_CLAIMS/<port>``, kept for the
    process's life, so a restarted node finds its port still its own) out of a range the
    kernel never picks from, and checks each is not bound by anything else.
    """
    PORT_CLAIMS.mkdir(mode=0o777, exist_ok=True)
    low, high = _port_range()
    span = high - low
    start = secrets.randbelow(span)  # not `random`: Hypothesis seeds it
    for i in range(span):
        port = low + (start + i) % span
        if port in _claims:
            continue
        fd = os.open(PORT_CLAIMS / str(port), os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind(("127.0.0.1", port))
        except OSError:
            os.close(fd)  # another test process's, or in use
            continue
        _claims[port] = fd
        return port
    raise NodeStartError(f"no free port in {low}-{high} (claims: {PORT_CLAIMS})")


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Ask the kernel to SIGKILL the child if the test process goes away (Linux)."""
    with contextlib.suppress(Exception):
        pr_set_pdeathsig = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


@dataclass
class NodeProcess:
    """One node process with its output captured to `log_path`."""

    name: str
    argv: Sequence[str]
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    proc: subprocess.Popen[bytes] | None = None
    #: run as this uid/gid (postgres refuses to run as root, and CI runs as root)
    user: tuple[int, int] | None = None

    def start(self) -> None:
        """Start the process in its own session, appending its output to the log file."""
        full_env = {**os.environ, **self.env}
        with self.log_path.open("ab") as log:
            log.write(f"$ {' '.join(self.argv)}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                list(self.argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=full_env,
                cwd=self.cwd,
                start_new_session=True,
                preexec_fn=_die_with_parent,
                user=None if self.user is None else self.user[0],
                group=None if self.user is None else self.user[1],
                extra_groups=None if self.user is None else [],
            )

    def running(self) -> bool:
        """True while the process has not exited."""
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        """The last `lines` lines of the log."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def failure(self, what: str) -> NodeStartError:
        """An error naming the node, what failed, the log path and its tail."""
        code = None if self.proc is None else self.proc.poll()
        state = "still running" if code is None else f"exit code {code}"
        return NodeStartError(
            f"{self.name}: {what} ({state}); log: {self.log_path}\n"
            f"---- log tail ----\n{self.log_tail()}\n------------------"
        )

    def stop(self) -> None:
        """SIGTERM the process group, then SIGKILL it if it does not exit in time."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, STOP_TIMEOUT), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
            try:
                proc.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def wait_until(self, probe: Callable[[], bool], timeout: float, what: str) -> None:
        """Poll `probe` until it is true; raise with the log tail on exit or timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running():
                raise self.failure(f"exited while waiting for {what}")
            if probe():
                return
            time.sleep(0.25)
        raise self.failure(f"not ready after {timeout:.0f} s waiting for {what}")


def _answers(method: str, url: str) -> Callable[[], bool]:
    def probe() -> bool:
        try:
            return httpx.request(method, url, timeout=5.0).status_code == 200
        except httpx.HTTPError:
            return False

    return probe


def _port_in_use(proc: NodeProcess) -> bool:
    return "EADDRINUSE" in proc.log_tail(200)


# ---------------------------------------------------------------- IPFS


def detect_kind(version: dict[str, Any]) -> str:
    """Tell Kubo from js-ipfs by the shape of their `/api/v0/version` answers."""
    if "ipfs-core" in version or "interface-ipfs-core" in version:
        return "js-ipfs"
    if "Golang" in version or "System" in version:
        return "kubo"
    raise ValueError(f"unknown IPFS node: /api/v0/version answered {version!r}")


@dataclass(frozen=True)
class IpfsNode:
    """A running IPFS node: RPC and gateway base URLs (no trailing slash)."""

    api_url: str
    gateway_url: str
    kind: str  # "js-ipfs" or "kubo"
    repo_path: Path | None = None  # None for an external node
    log_path: Path | None = None

    def rpc(
        self,
        endpoint: str,
        *args: str,
        files: dict[str, tuple[str, bytes, str]] | None = None,
        timeout: float = 60.0,
        params: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """POST /api/v0/<endpoint> with `arg`s and params; raise on a non-2xx answer."""
        query = httpx.QueryParams([("arg", a) for a in args])
        for k, v in (params or {}).items():
            query = query.add(k.replace("_", "-"), v)
        r = httpx.post(
            f"{self.api_url}/api/v0/{endpoint}", params=query, files=files, timeout=timeout
        )
        if r.status_code >= 300:
            raise RuntimeError(f"{self.kind} {endpoint}: HTTP {r.status_code}: {r.text[:300]}")
        return r

    def rpc_json(self, endpoint: str, *args: str, **params: str) -> Any:
        """`rpc` and parse the JSON answer."""
        return self.rpc(endpoint, *args, params=params).json()

    def version(self) -> dict[str, Any]:
        """The node's `/api/v0/version` answer."""
        result: dict[str, Any] = self.rpc_json("version")
        return result

    def block_put(self, data: bytes, **params: str) -> str:
        """Store one block; return the CID string as the node prints it."""
        part = {"file": ("block", data, "application/octet-stream")}
        r = self.rpc("block/put", files=part, params=params)
        return str(r.json()["Key"])

    def gateway_get(self, path: str, timeout: float = 60.0) -> httpx.Response:
        """GET {gateway}{path}, following redirects."""
        return httpx.get(f"{self.gateway_url}{path}", timeout=timeout, follow_redirects=True)


def external_ipfs(api_url: str, gateway_url: str) -> IpfsNode:
    """Use an already running node (e.g. Kubo from kubo-docker); its kind is detected."""
    api = api_url.rstrip("/")
    try:
        r = httpx.post(f"{api}/api/v0/version", timeout=30.0)
        r.raise_for_status()
    except httpx.HTTPError as exc:
        raise NodeStartError(f"external IPFS node at {api} does not answer: {exc}") from exc
    return IpfsNode(api, gateway_url.rstrip("/"), detect_kind(r.json()))


# ---------------------------------------------------------------- Arweave


MINE_DEADLINE = 60.0  # retrying arlocal's 404s (see ArlocalNode.mine): seconds


@dataclass(frozen=True)
class ArlocalNode:
    """A running arlocal gateway at `url` (no trailing slash), with test-only helpers."""

    url: str
    log_path: Path | None = None

    def get(self, path: str, timeout: float = 30.0) -> httpx.Response:
        """GET {url}{path}."""
        return httpx.get(f"{self.url}{path}", timeout=timeout)

    def info(self) -> dict[str, Any]:
        """`GET /info`: network, height, current block, ..."""
        r = self.get("/info")
        r.raise_for_status()
        result: dict[str, Any] = r.json()
        return result

    def height(self) -> int:
        """Current block height."""
        return int(self.info()["height"])

    def mint(self, address: str, winston: int) -> None:
        """Add `winston` to `address`'s balance (arlocal's `/mint/{addr}/{amount}`)."""
        r = self.get(f"/mint/{address}/{int(winston)}")
        if r.status_code != 200:
            raise RuntimeError(f"arlocal /mint: HTTP {r.status_code}: {r.text[:300]}")

    def mine(self, blocks: int = 1, deadline: float = MINE_DEADLINE) -> None:
        """Mine `blocks` blocks, confirming pending transactions (`/mine/{n}`). The first
        mine after a bundle was seeded unbundles all of it (hundreds of items after a big
        turbo publish): a generous deadline, as on a loaded machine.

        A 404 is asked again. arlocal's mine route catches its own errors, logs them and
        leaves the body unset, which Koa answers as 404, having mined nothing. The one error
        seen is a race inside arlocal: a bundle posted as a header (its data in chunks) is
        unbundled twice, by a task `POST /tx` leaves polling for the last chunk and by `/mine`
        from the chunks it finds; whichever inserts an item second fails on the unique
        `transactions.id`. The next mine finds the items there and skips them."""
        until = time.monotonic() + deadline
        while True:
            r = self.get(f"/mine/{int(blocks)}", timeout=300.0)
            if r.status_code == 200:
                return
            if r.status_code != 404 or time.monotonic() > until:
                raise RuntimeError(
                    f"arlocal /mine: HTTP {r.status_code}: {r.text[:300]}"
                    + (f"; log: {self.log_path}" if self.log_path else "")
                )
            time.sleep(0.2)

    def balance(self, address: str) -> int:
        """Winston balance of `address`."""
        r = self.get(f"/wallet/{address}/balance")
        r.raise_for_status()
        return int(r.text)


@contextlib.contextmanager
def start_arlocal(workdir: Path) -> Iterator[ArlocalNode]:
    """Run `arlocal <port> --dbpath <workdir>/db` (no --persist: a fresh chain), stop on exit.

    arlocal's CLI (bin/index.js): positional port (default 1984), `--hidelogs`, `--persist`,
    `--fails <percent>`, `--dbpath <dir>` (default inside node_modules: always pass one).
    Request logs are kept (not --hidelogs): they go to the log file, useful on failure.
    """
    require_installed(ARLOCAL_BIN)
    workdir.mkdir(parents=True, exist_ok=True)
    log_path = workdir / "arlocal.log"
    proc: NodeProcess | None = None
    try:
        for attempt in range(1, START_ATTEMPTS + 1):
            port = free_port()
            db = workdir / f"db-{port}"
            proc = NodeProcess(
                "arlocal",
                [str(ARLOCAL_BIN), str(port), "--dbpath", str(db)],
                log_path,
                cwd=workdir,
            )
            proc.start()
            url = f"http://127.0.0.1:{port}"
            try:
                proc.wait_until(_answers("GET", f"{url}/info"), READY_TIMEOUT, "GET /info")
                break
            except NodeStartError:
                proc.stop()
                if attempt < START_ATTEMPTS and _port_in_use(proc):
                    continue
                raise
        assert proc is not None
        node = ArlocalNode(url=url, log_path=log_path)
        if not str(node.info().get("network", "")).startswith("arlocal"):
            raise proc.failure(f"{url} is not our arlocal")
        yield node
    finally:
        if proc is not None:
            proc.stop()
