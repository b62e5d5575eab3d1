"""Two Kubo nodes, no odfweb3: a bitswap session that stops asking for blocks (issue 18).

Usage::

    python bench/repro_bitswap_stall.py [--ipfs .gonodes/bin/ipfs] [--mb 400] [--files 2000]
                                        [--stop-ms 120] [--run-ms 60] [--throttle-s 20]
                                        [--fetchers 1] [--rounds 3]

Standard library only; any Kubo binary (built here by ``make gonodes``: v0.43.1, boxo v0.43.0).
One round:

1. two (or ``--fetchers`` + 1) fresh repos (``ipfs init --profile=test``: loopback only, no
   bootstrap), daemons started; the publisher P gets ``--files`` random files of
   ``--mb`` MB in all (``ipfs add -r --cid-version 1 --raw-leaves``);
2. each fetcher F connects to P (``swarm/connect``) and runs ``pin/add ROOT`` (``progress``),
   as an IPFS Cluster peer does when a pin names P as its origin;
3. for ``--throttle-s`` seconds P is slowed the way a busy machine slows it: SIGSTOP for
   ``--stop-ms``, SIGCONT for ``--run-ms``, repeated. Then P runs freely;
4. a fetcher that has not finished and received no byte for 60 s *after* the throttle ended,
   while connected to P and with P holding every block, is **stalled**: the script prints the
   evidence (F's and P's views of F's wantlist, F's session log lines), runs a second
   ``pin/add`` of the same root on it (a new session: does it finish?) and exits 1.

What it shows (Kubo v0.43.1 / boxo v0.43.0): F's DONT_HAVE timeout is derived from the
measured loopback latency (x2, floor 50 ms). When P answers want-blocks later than that, F
simulates DONT_HAVEs (``bitswap/client/msgq`` "timeout waiting for blocks", timeout ~50 ms);
16 in a row make F's session prune P (``bitswap/session`` "sent too many dont haves,
removing from session"). Usually a broadcast re-adds P at once, but when P is the session's
last peer and the pending wants were already broadcast once, the session never sends a want
or searches again: P's ledger for F is empty, F's pin/add hangs forever although P is
connected and has every block.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

QUIET_S = 60.0  # no byte received for this long after the throttle: stalled


class Node:
    def __init__(self, ipfs: str, root: Path, name: str) -> None:
        self.ipfs, self.name = ipfs, name
        self.repo = root / name / "repo"
        self.log = root / name / "daemon.log"
        self.env = {**os.environ, "IPFS_PATH": str(self.repo), "IPFS_TELEMETRY": "off"}
        self.proc: subprocess.Popen[bytes] | None = None
        self.api = ""
        self.peer_id = ""
        self.addr = ""

    def start(self) -> None:
        self.repo.parent.mkdir(parents=True)
        subprocess.run(
            [self.ipfs, "init", "--profile=test", "--empty-repo"],
            env=self.env,
            check=True,
            capture_output=True,
        )
        cfg_path = self.repo / "config"
        cfg = json.loads(cfg_path.read_text())
        cfg["Routing"]["Type"] = "dht"
        cfg.setdefault("AutoNAT", {})["ServiceMode"] = "disabled"
        cfg_path.write_text(json.dumps(cfg))
        # GOLOG: the two lines that tell the story, nothing else
        env = {**self.env, "GOLOG_LOG_LEVEL": "error,bitswap/session=info,bitswap/client/msgq=info"}
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [self.ipfs, "daemon"],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                api = (self.repo / "api").read_text().strip().split("/")
                self.api = f"http://{api[2]}:{api[4]}"
                ident = self.rpc("id")
                self.peer_id = ident["ID"]
                self.addr = next(a for a in ident["Addresses"] if "/127.0.0.1/tcp/" in a)
                return
            time.sleep(0.2)
        raise SystemExit(f"{self.name}: daemon not ready; see {self.log}")

    def rpc(self, cmd: str, *args: str, timeout: float = 30, **params: str) -> Any:
        q = urllib.parse.urlencode([("arg", a) for a in args] + list(params.items()))
        req = urllib.request.Request(f"{self.api}/api/v0/{cmd}?{q}", method="POST")
        with urllib.request.urlopen(req, timeout=timeout) as r:
            body = r.read()
        return json.loads(body) if body.strip() else {}

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGCONT)
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)


def pin(node: Node, root: str, result: dict[str, Any]) -> None:
    t = time.monotonic()
    q = urllib.parse.urlencode({"arg": root, "progress": "true"})
    req = urllib.request.Request(f"{node.api}/api/v0/pin/add?{q}", method="POST")
    try:
        with urllib.request.urlopen(req, timeout=3600) as r:
            for _ in r:
                pass
        result[node.name] = time.monotonic() - t
    except OSError as e:  # daemon stopped at the end of a stalled round
        result[node.name] = f"error: {e}"


def throttle(proc: subprocess.Popen[bytes], seconds: float, stop_ms: int, run_ms: int) -> None:
    end = time.monotonic() + seconds
    with contextlib.suppress(ProcessLookupError):
        while time.monotonic() < end and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGSTOP)
            time.sleep(stop_ms / 1000)
            os.killpg(proc.pid, signal.SIGCONT)
            time.sleep(run_ms / 1000)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGCONT)


def make_tree(data: Path, mb: int, files: int) -> None:
    """The shape of a 1 GB dataset: ``files`` large files (``mb`` MB in all, one raw block
    each below 256 KiB) and two directories of ``files`` small files (1-2 KB), each directory
    big enough for Kubo to shard it (HAMT)."""
    size = mb * 1_000_000 // files
    for sub, n_bytes in (("large", size), ("small_a", 1100), ("small_b", 2000)):
        d = data / sub
        d.mkdir(parents=True)
        for _ in range(files):
            (d / f"{os.urandom(16).hex()}").write_bytes(os.urandom(n_bytes))


def one_round(args: argparse.Namespace, work: Path) -> bool:
    """True if a fetcher stalled."""
    nodes = (
        [Node(args.ipfs, work, "publisher")]
        + [Node(args.ipfs, work, f"fetcher{i}") for i in range(args.fetchers)]
        + [Node(args.ipfs, work, f"idle{i}") for i in range(args.idle)]
    )
    try:
        for n in nodes:
            n.start()
        pub, fetchers, idle = nodes[0], nodes[1 : 1 + args.fetchers], nodes[1 + args.fetchers :]
        data = work / "data"
        make_tree(data, args.mb, args.files)
        out = subprocess.run(
            [args.ipfs, "add", "-r", "-Q", "--cid-version", "1", "--raw-leaves", str(data)],
            env=pub.env,
            check=True,
            capture_output=True,
            text=True,
        )
        root = out.stdout.strip()
        print(f"publisher {pub.peer_id}: {3 * args.files} files, {args.mb} MB, root {root}")
        for f in fetchers:
            f.rpc("swarm/connect", f"{pub.addr}/p2p/{pub.peer_id}")
        if args.connect_fetchers:  # every fetcher and idle node to each other
            others = fetchers + idle
            for i, a in enumerate(others):
                for b in others[i + 1 :]:
                    a.rpc("swarm/connect", f"{b.addr}/p2p/{b.peer_id}")
        done: dict[str, Any] = {}
        for f in fetchers:
            threading.Thread(target=pin, args=(f, root, done), daemon=True).start()
        slowed = nodes if args.throttle_all else [pub]
        threads = []
        for n in slowed:
            assert n.proc is not None
            threads.append(
                threading.Thread(
                    target=throttle,
                    args=(n.proc, args.throttle_s, args.stop_ms, args.run_ms),
                    daemon=True,
                )
            )
            threads[-1].start()
            time.sleep(args.run_ms / 1000 / len(slowed))  # out of phase
        th = threads[0]
        t0 = time.monotonic()
        last: dict[str, tuple[int, float]] = {}
        while len(done) < len(fetchers):
            time.sleep(5)
            now = time.monotonic()
            line = [f"{now - t0:5.0f}s{' (P throttled)' if th.is_alive() else ''}"]
            stalled = []
            for f in fetchers:
                if f.name in done:
                    line.append(f"{f.name}: done in {done[f.name]:.1f} s")
                    continue
                got = int(f.rpc("stats/bitswap")["DataReceived"])
                wl = f.rpc("bitswap/wantlist").get("Keys") or []
                line.append(f"{f.name}: {got / 1e6:.0f} MB, wantlist {len(wl)}")
                prev = last.get(f.name)
                if prev is None or prev[0] != got or th.is_alive():
                    last[f.name] = (got, now)
                elif now - prev[1] >= QUIET_S:
                    stalled.append(f)
            print(" | ".join(line), flush=True)
            if stalled:
                for f in stalled:
                    evidence(pub, f, root)
                retry(fetchers, stalled, root)
                return True
        print("all fetchers finished:", done)
        return False
    finally:
        for n in nodes:
            n.stop()


def evidence(pub: Node, f: Node, root: str) -> None:
    peers = {p["Peer"] for p in f.rpc("swarm/peers").get("Peers") or []}
    wl = [k["/"] for k in f.rpc("bitswap/wantlist").get("Keys") or []]
    seen_by_pub = pub.rpc("bitswap/wantlist", peer=f.peer_id).get("Keys") or []
    missing = 0
    for c in wl:
        with contextlib.suppress(OSError):
            f.rpc("block/stat", c, offline="true")
            continue
        missing += 1
    print(f"STALLED: {f.name} received nothing for {QUIET_S:.0f} s after the throttle ended")
    print(f"  connected to the publisher: {pub.peer_id in peers}")
    print(f"  {f.name}'s wantlist: {len(wl)} CIDs, {missing} of them not in its blockstore")
    print(f"  the publisher's view of {f.name}'s wantlist: {len(seen_by_pub)} CIDs")
    print(f"  publisher ledger for {f.name}: {pub.rpc('bitswap/ledger', f.peer_id)}")
    log = f.log.read_text(errors="replace").splitlines()
    timeouts = [x for x in log if "timeout waiting for blocks" in x]
    prunes = [x for x in log if "too many dont haves" in x]
    print(
        f"  {f.name} log: {len(timeouts)} simulated DONT_HAVE timeouts, "
        f"{len(prunes)} session prunes; last session lines:"
    )
    for x in [x for x in log if "bitswap/session" in x][-4:]:
        print("   ", x[:220])
    if timeouts:
        print("   ", timeouts[-1][:220])


def retry(fetchers: list[Node], stalled: list[Node], root: str) -> None:
    """A second pin/add of the same root on each stalled fetcher: a new session."""
    again: dict[str, Any] = {}
    for f in stalled:
        f.name = f"{f.name} (second pin/add)"
        threading.Thread(target=pin, args=(f, root, again), daemon=True).start()
    deadline = time.monotonic() + 300
    while len(again) < len(stalled) and time.monotonic() < deadline:
        time.sleep(1)
    for f in stalled:
        took = again.get(f.name)
        print(
            f"  {f.name}: "
            + (
                f"finished in {took:.1f} s"
                if isinstance(took, float)
                else f"not finished after 300 s ({took or 'still running'})"
            )
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    default_ipfs = Path(__file__).resolve().parents[1] / ".gonodes" / "bin" / "ipfs"
    ap.add_argument("--ipfs", default=str(default_ipfs))
    ap.add_argument("--mb", type=int, default=1000)
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--fetchers", type=int, default=1)
    ap.add_argument("--idle", type=int, default=0, help="extra nodes holding nothing")
    ap.add_argument(
        "--connect-fetchers",
        action="store_true",
        help="connect the fetchers and idle nodes to each other (as a cluster's Kubo nodes are)",
    )
    ap.add_argument("--stop-ms", type=int, default=120)
    ap.add_argument("--run-ms", type=int, default=60)
    ap.add_argument("--throttle-s", type=float, default=20.0)
    ap.add_argument(
        "--throttle-all",
        action="store_true",
        help="slow every node (out of phase), not only the publisher: a loaded machine",
    )
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    print(subprocess.run([args.ipfs, "version", "--all"], capture_output=True, text=True).stdout)
    for r in range(1, args.rounds + 1):
        work = Path(tempfile.mkdtemp(prefix="bitswap-stall-"))
        print(f"--- round {r} ({work})", flush=True)
        try:
            if one_round(args, work):
                print(f"stalled in round {r}; logs in {work}")
                return 1
        finally:
            if not args.keep:
                shutil.rmtree(work, ignore_errors=True)
    print(f"no stall in {args.rounds} rounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
