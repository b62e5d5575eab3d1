"""Live IPFS publish (``--to ipfs``) against a real node, and kamu's way as the peer.

Usage::

    python bench/bench_publish_ipfs.py [--api http://127.0.0.1:5001] [--blocks 5000]
        [--data-bytes 1000000000] [--cache DIR] [--profile]

Without ``--api`` it starts its own Kubo v0.43.1 (``make gonodes``; tests/support/kubo.py:
loopback only, no peers, DHT routing) in the temp directory. One run:

1. odfweb3 initial publish of the dataset (full delta CAR, one ``dag/import``, pin, record);
2. ``append_blocks(ds, 1)`` (+1 block, +1 data file, +1 checkpoint), then the same publish:
   the incremental one;
3. the peer, kamu's way: ``add -r --cid-version 1 --raw-leaves`` of the whole (updated)
   dataset directory through the same node (one multipart ``/api/v0/add`` with every file,
   streamed), as kamu re-adds the dataset on every push, then ``name/publish`` of that root
   with a node key; its root must equal ours (same UnixFS profile: CIDv1, raw leaves).

``--profile`` runs the incremental publish under cProfile and prints where its local time
goes. The load average before and after is printed (the machine is shared).

For each: wall time, bytes read by this process (``rchar`` of /proc/self/io: every read
syscall, page cache included), bytes sent to the node (request bodies), RPC calls. Prints
incremental / initial ratios (goal: wall time <= 0.02, bytes sent <= delta + directories).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import pstats
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ensure_dataset, linked_copy, machine, print_table

from odfweb3.crypto.keystore import Keystore
from odfweb3.odf.builder import append_blocks
from odfweb3.publish.chain_cache import ChainCache
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import StateStore
from odfweb3_ipfs.client.kubo import KuboClient
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.publish.node_target import IpfsNodeTarget

LAYOUT = ("blocks", "checkpoints", "data", "refs")


def rchar() -> int:
    """Bytes this process has read through read syscalls so far."""
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    return 0


def _multipart(root: Path, boundary: str, counter: list[int]) -> Iterator[bytes]:
    """Multipart body of a directory tree as Kubo's ``add -r`` sends it, one file at a time."""

    def part(name: str, ctype: str) -> bytes:
        return (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
            f'filename="{name}"\r\nContent-Type: {ctype}\r\n\r\n'
        ).encode()

    top = root.name
    chunks: list[bytes] = [part(top, "application/x-directory"), b"\r\n"]
    for sub in LAYOUT:
        chunks += [part(f"{top}%2F{sub}", "application/x-directory"), b"\r\n"]
    yield from chunks
    for sub in LAYOUT:
        for path in sorted((root / sub).iterdir()):
            yield part(f"{top}%2F{sub}%2F{path.name}", "application/octet-stream")
            with open(path, "rb") as f:
                while chunk := f.read(1 << 20):
                    counter[0] += len(chunk)
                    yield chunk
            yield b"\r\n"
    yield f"--{boundary}--\r\n".encode()


def kamu_push(api: str, root: Path, key: str) -> tuple[Cid, int, float, float]:
    """kamu's way: ``add -r`` then ``name/publish``; (root, bytes sent, add s, publish s)."""
    t0 = time.perf_counter()
    cid, sent = add_recursive(api, root)
    t1 = time.perf_counter()
    r = httpx.post(
        f"{api}/api/v0/name/publish",
        params={"arg": f"/ipfs/{cid}", "key": key, "allow-offline": "true"},
        timeout=600,
    )
    r.raise_for_status()
    return cid, sent, t1 - t0, time.perf_counter() - t1


def add_recursive(api: str, root: Path) -> tuple[Cid, int]:
    """``ipfs add -r --cid-version=1 --pin=false`` of ``root``; returns (root CID, bytes sent)."""
    boundary = uuid.uuid4().hex
    counter = [0]
    sent = [0]

    def body() -> Iterator[bytes]:
        for chunk in _multipart(root, boundary, counter):
            sent[0] += len(chunk)
            yield chunk

    last: dict[str, object] = {}
    with (
        httpx.Client(timeout=httpx.Timeout(3600.0, connect=10.0)) as http,
        http.stream(
            "POST",
            f"{api}/api/v0/add",
            params={
                "cid-version": "1",
                "raw-leaves": "true",
                "pin": "false",
                "quieter": "true",
                "progress": "false",
            },
            headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
            content=body(),
        ) as response,
    ):
        response.raise_for_status()
        for line in response.iter_lines():
            if line.strip():
                item = json.loads(line)
                if item.get("Name") == root.name:
                    last = item
    return Cid.decode(str(last["Hash"])), sent[0]


def measure(label: str, fn):  # type: ignore[no-untyped-def]
    r0, t0 = rchar(), time.perf_counter()
    result = fn()
    return label, time.perf_counter() - t0, rchar() - r0, result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--api", default=None, help="node RPC API (default: start a Kubo v0.43.1 of our own)"
    )
    ap.add_argument("--profile", action="store_true", help="cProfile the incremental publish")
    ap.add_argument("--blocks", type=int, default=5000)
    ap.add_argument("--data-bytes", type=int, default=10**9)
    ap.add_argument("--cache", type=Path, default=None, help="reuse the dataset from here")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="odfweb3-bench-ipfs-") as tmp_text:
        tmp = Path(tmp_text)
        with contextlib.ExitStack() as stack:
            if args.api is None:
                sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
                from tests.support.kubo import start_kubo

                args.api = stack.enter_context(start_kubo(tmp / "kubo")).api_url
            return run(args, tmp)
    return 0


def run(args: argparse.Namespace, tmp: Path) -> int:
    """One benchmark run against the node at ``args.api``."""
    t0 = time.perf_counter()
    src, built = ensure_dataset(args.cache, tmp, blocks=args.blocks, data_bytes=args.data_bytes)
    ds = linked_copy(src, tmp / "ds")
    print(
        f"dataset: {args.blocks} blocks, {args.data_bytes} bytes of data "
        f"({f'built in {built:.1f} s' if built else 'reused'}; "
        f"{time.perf_counter() - t0:.1f} s)"
    )
    keystore, states = Keystore(tmp / "keys"), StateStore(tmp / "state")

    def publish() -> tuple[object, KuboClient]:
        client = KuboClient(args.api, timeout=3600)
        target = IpfsNodeTarget(client, keystore, states, tmp_dir=tmp)
        # As the CLI does: heads verified before are not walked again (issue 19).
        return publish_dataset(ds, target, chain_cache=ChainCache(tmp / "verified")), client

    node = KuboClient(args.api).node
    httpx.post(
        f"{args.api}/api/v0/key/gen", params={"arg": "kamu", "type": "ed25519"}, timeout=60
    ).raise_for_status()
    load_before = os.getloadavg()
    rows = []
    initial = measure("odfweb3 initial", publish)
    append_blocks(ds, 1, data_bytes=max(1, args.data_bytes // args.blocks), fsync=False)
    profiler = cProfile.Profile() if args.profile else None
    if profiler is not None:
        profiler.enable()
    incremental = measure("odfweb3 +1 block", publish)
    if profiler is not None:
        profiler.disable()
    kamu = measure("kamu way: add -r + name/publish", lambda: kamu_push(args.api, ds, "kamu"))
    load_after = os.getloadavg()

    _init_out, init_client = initial[3]
    inc_out, inc_client = incremental[3]
    kamu_root, kamu_sent, kamu_add_s, kamu_pub_s = kamu[3]
    same_root = kamu_root == Cid.decode(inc_out.upload.locator)
    for label, wall, read, client in (
        (initial[0], initial[1], initial[2], init_client),
        (incremental[0], incremental[1], incremental[2], inc_client),
    ):
        rows.append(
            (
                label,
                f"{wall:.2f}",
                f"{read:,}",
                f"{client.stats.bytes_sent:,}",
                str(client.stats.calls),
            )
        )
    rows.append((kamu[0], f"{kamu[1]:.2f}", f"{kamu[2]:,}", f"{kamu_sent:,}", "2"))

    print(f"node: {node.kind} {node.version}; {machine()}")
    print(
        "load average (1, 5, 15 min) before: "
        + ", ".join(f"{x:.2f}" for x in load_before)
        + "; after: "
        + ", ".join(f"{x:.2f}" for x in load_after)
    )
    print_table([("run", "wall s", "bytes read", "bytes sent", "RPC calls"), *rows])
    delta = inc_out.plan.send_bytes
    print(
        f"delta (new objects): {len(inc_out.plan.send)} objects, {delta:,} bytes; "
        f"CAR {inc_out.upload.summary['carBytes']:,} bytes "
        f"({inc_out.upload.summary['carBlocks']} blocks)"
    )
    print(
        f"incremental / initial: wall {incremental[1] / initial[1]:.4f}, "
        f"read {incremental[2] / max(1, initial[2]):.4f}, "
        f"sent {inc_client.stats.bytes_sent / init_client.stats.bytes_sent:.5f}, "
        f"calls {inc_client.stats.calls}/{init_client.stats.calls}"
    )
    car_bytes = int(inc_out.upload.summary["carBytes"])
    sent_inc = inc_client.stats.bytes_sent
    print(
        f"bytes sent (incremental) {sent_inc:,} vs delta {delta:,} + changed directory and "
        f"file-tree nodes {car_bytes - delta:,} (= CAR {car_bytes:,}): "
        f"{'within' if sent_inc <= car_bytes + 16384 else 'OVER'} CAR + 16 KiB of "
        f"multipart/record overhead ({sent_inc - car_bytes:,} bytes)"
    )
    print(
        f"kamu way: add -r {kamu_add_s:.2f} s + name/publish {kamu_pub_s:.2f} s; "
        f"(+1 block) / odfweb3 incremental: wall {kamu[1] / incremental[1]:.1f}x, "
        f"sent {kamu_sent / max(1, inc_client.stats.bytes_sent):.0f}x"
    )
    print(f"calls by endpoint (incremental): {inc_client.stats.by_endpoint}")
    for label, wall, client in (
        ("initial", initial[1], init_client),
        ("incremental", incremental[1], inc_client),
    ):
        spent = client.stats.seconds or {}
        parts = ", ".join(f"{k} {v:.2f}" for k, v in sorted(spent.items(), key=lambda kv: -kv[1]))
        print(f"{label}: {wall - sum(spent.values()):.2f} s local, node s: {parts}")
    print(
        f"add -r root {'equals' if same_root else 'DIFFERS from'} ours ({kamu_root}); "
        "Kubo and odfweb3 shard directories by size (256 KiB)"
    )
    if profiler is not None:
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("cumulative").print_stats(25)
        print("incremental publish, cProfile (this process only; cumulative):")
        print("\n".join(out.getvalue().splitlines()[:60]))
    shutil.rmtree(ds, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
