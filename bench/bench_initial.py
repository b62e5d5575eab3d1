"""Initial publish against the two-core hashing limit, and peak memory (issue 19 goal 3).

Usage::

    python bench/bench_initial.py [--mb 1000] [--blocks 10000] [--files 20]
                                  [--targets car,bundle] [--repeat 1]
                                  [--rss-blocks 100000] [--big-gb 10]
                                  [--cache bench/.initial-cache]

Datasets (``create_root_dataset(..., fsync=False)``, built once into ``--cache``,
ignored by git; delete it to rebuild): ``--mb`` MB of data in ``--blocks`` AddData blocks
("blocks": many ~100 KB files) and the same bytes in ``--files`` blocks ("files": a few
large files). Per round, interleaved so the machine's load hits all alike:

1. the **two-core hashing limit**: SHA3-256 (what verifying a data file costs) and
   SHA-256 (what its CIDs cost) over the same bytes, every file a publish reads (blocks,
   data, checkpoints, refs/head), 1 MiB reads, the files split over two threads, each
   hashing its files with both (hashlib releases the GIL: both cores busy);
2. ``publish_dataset`` to ``car:DIR`` and to ``bundle:DIR`` (the initial publish; each in
   its own child process on a hard-linked copy, interpreter start not timed; peak RSS by
   ``wait4``); with ``--targets ...,ipfs``, also to a Kubo v0.43.1 node this script starts
   (``make gonodes``; tests/support/kubo.py: loopback only), with a new key store each round
   (a new IPNS name: no record replayed) after the node's pins were removed and its
   repository garbage-collected (the node stores every block again). Its row gives the
   node's CPU seconds during the publish beside ours: the node hashes every block it is
   sent on the same two cores.

Ratios are limit time / publish time (1.0 = as fast as hashing alone; goal >= 0.8).
Also measured: the RSA-4096 signing rate (RSA-PSS/SHA-256, one and two threads) and the
floor it puts under ``bundle:`` (two signatures per object); ``--rss-blocks`` N blocks of
2,000 bytes each (``car:`` initial, peak RSS; goal <= 200 MB) and a ``--big-gb`` GB
one-file dataset (``car:`` and ``bundle:``, peak RSS; built streaming, needs about
twice its size of free disk while a publish runs; 0 skips it). Load average is printed
per step. No timing assertions.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import READ_SIZE, ensure_dataset, linked_copy, machine, own_peak_rss, print_table

GOAL_RATIO = 0.8
GOAL_RSS = 200e6


def _files(root: Path) -> list[Path]:
    out: list[Path] = []
    for sub in ("blocks", "data", "checkpoints", "refs"):
        folder = root / sub
        if folder.is_dir():
            out.extend(sorted(p for p in folder.iterdir() if not p.name.startswith(".")))
    return out


def _hash_both(paths: list[Path]) -> int:
    buf = bytearray(READ_SIZE)
    view = memoryview(buf)
    total = 0
    for path in paths:
        sha3, sha2 = hashlib.sha3_256(), hashlib.sha256()
        with open(path, "rb", buffering=0) as f:
            while n := f.readinto(buf):
                sha3.update(view[:n])
                sha2.update(view[:n])
                total += n
        sha3.digest(), sha2.digest()
    return total


def hashing_limit(paths: list[Path], threads: int = 2) -> tuple[float, int]:
    """Seconds to SHA3-256 and SHA-256 every file on ``threads`` threads; bytes hashed.

    Files are dealt out largest first to the thread with the fewest bytes, so both
    threads get the same work even for a few large files.
    """
    shares: list[list[Path]] = [[] for _ in range(threads)]
    loads = [0] * threads
    for path in sorted(paths, key=lambda p: p.stat().st_size, reverse=True):
        k = loads.index(min(loads))
        shares[k].append(path)
        loads[k] += path.stat().st_size
    results = [0] * threads

    def run(k: int) -> None:
        results[k] = _hash_both(shares[k])

    workers = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return time.perf_counter() - start, sum(results)


def rsa_sign_rate(seconds: float = 2.0) -> tuple[float, float]:
    """RSA-4096 PSS/SHA-256 signatures per second on one thread and on two."""
    from odfweb3_arweave.wallet import generate_wallet

    wallet = generate_wallet()
    message = bytes(48)

    def rate(threads: int) -> float:
        counts = [0] * threads
        stop = time.perf_counter() + seconds

        def run(k: int) -> None:
            while time.perf_counter() < stop:
                wallet.sign(message)
                counts[k] += 1

        start = time.perf_counter()
        workers = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        return sum(counts) / (time.perf_counter() - start)

    return rate(1), rate(2)


def _step(target: str, ds: Path, out: Path, keys: Path) -> dict[str, float]:
    """One initial publish in this (child) process."""
    from odfweb3.crypto.keystore import Keystore
    from odfweb3.publish.execute import publish_dataset

    if target == "car":
        from odfweb3_ipfs.publish.car_target import CarTarget

        tgt: object = CarTarget(out, Keystore(keys))
    elif target == "ipfs":
        from odfweb3.publish.state import StateStore
        from odfweb3_ipfs.client.kubo import KuboClient
        from odfweb3_ipfs.publish.node_target import IpfsNodeTarget

        out.mkdir(parents=True, exist_ok=True)
        client = KuboClient(os.environ[_KUBO_API_ENV], timeout=3600)
        tgt = IpfsNodeTarget(client, Keystore(keys), StateStore(out / "state"), tmp_dir=out)
    else:
        from odfweb3_arweave.publish.bundle_target import BundleTarget
        from odfweb3_arweave.wallet import load_wallet

        tgt = BundleTarget(out, load_wallet(keys / "wallet.json"))
    cpu = time.process_time()
    start = time.perf_counter()
    outcome = publish_dataset(ds, tgt)  # type: ignore[arg-type]
    elapsed = time.perf_counter() - start
    assert outcome.upload is not None
    return {
        "seconds": elapsed,
        "cpu": time.process_time() - cpu,
        "bytes": float(outcome.upload.bytes_sent),
    }


# The node's RPC URL, handed to the publishing child (the script's own variable).
_KUBO_API_ENV = "ODFWEB3_BENCH_KUBO_API"


def _child(argv: list[str], code: Path | None = None) -> tuple[dict[str, float], int]:
    """Run ``--step`` in a child process (``code``: a checkout whose odfweb3 it runs); its
    result and peak RSS (bytes, ``wait4``)."""
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = f"{code}{os.pathsep}{code / 'adapters'}"
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--step", *argv],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    text = proc.stdout.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"step {argv} failed with status {os.waitstatus_to_exitcode(status)}")
    result = json.loads(text.strip().splitlines()[-1])
    # the step's own peak; wait4's also counts this process's image (see own_peak_rss)
    return result, int(result.pop("ownPeakRss", 0)) or usage.ru_maxrss * 1024


def _publish(
    target: str, base: Path, scratch: Path, code: Path | None = None
) -> tuple[dict[str, float], int]:
    """An initial publish of a hard-linked copy of ``base`` in a child; removed after."""
    work = scratch / "work"
    out = scratch / "out"
    keys = scratch / "keys"
    for p in (work, out):
        shutil.rmtree(p, ignore_errors=True)
    if target == "ipfs":
        shutil.rmtree(keys, ignore_errors=True)  # a new IPNS name each round
    keys.mkdir(mode=0o700, parents=True, exist_ok=True)
    if target == "bundle" and not (keys / "wallet.json").exists():
        from odfweb3_arweave.wallet import generate_wallet, save_wallet

        save_wallet(generate_wallet(), keys / "wallet.json")
    linked_copy(base, work)
    try:
        return _child([target, str(work), str(out), str(keys)], code)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)


def _proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _empty_node(api: str) -> None:
    """Unpin everything and garbage-collect: the next publish sends every block anew."""
    import httpx

    pins = httpx.post(f"{api}/api/v0/pin/ls", params={"type": "recursive"}, timeout=600)
    pins.raise_for_status()
    for cid in pins.json().get("Keys") or {}:
        httpx.post(f"{api}/api/v0/pin/rm", params={"arg": cid}, timeout=600).raise_for_status()
    httpx.post(f"{api}/api/v0/repo/gc", timeout=3600).raise_for_status()


def _load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def _mb(n: float) -> str:
    return f"{n / 1e6:,.0f} MB"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print tables (exit status 0: no timing assertions)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--mb", type=int, default=1000, help="MB of data per dataset")
    parser.add_argument("--blocks", type=int, default=10_000, help="blocks of the 'blocks' set")
    parser.add_argument("--files", type=int, default=20, help="blocks of the 'files' set")
    parser.add_argument("--targets", default="car,bundle")
    parser.add_argument("--datasets", default="blocks,files")
    parser.add_argument("--repeat", type=int, default=1, help="rounds (best is reported)")
    parser.add_argument("--bundle-rounds", type=int, default=1, help="bundle: rounds at most")
    parser.add_argument("--rss-blocks", type=int, default=100_000, help="0 skips the case")
    parser.add_argument("--big-gb", type=float, default=10.0, help="0 skips the case")
    parser.add_argument("--cache", type=Path, default=Path(__file__).parent / ".initial-cache")
    parser.add_argument(
        "--before-code",
        type=Path,
        help="a checkout (e.g. `git archive` of an older commit) whose publish runs too, "
        "in the same rounds, as 'TARGET (before)'",
    )
    parser.add_argument("--step", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.step:
        target, ds, out, keys = args.step
        result = _step(target, Path(ds), Path(out), Path(keys))
        print(json.dumps({**result, "ownPeakRss": own_peak_rss()}))
        return 0

    print(f"machine: {machine()}")
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    targets = [t for t in args.targets.split(",") if t]
    data_bytes = args.mb * 1_000_000
    sets = {"blocks": args.blocks, "files": args.files}
    chosen = [s for s in args.datasets.split(",") if s]
    bases: dict[str, Path] = {}
    for name in chosen:
        base, built = ensure_dataset(
            args.cache / f"{name}-{sets[name]}-{args.mb}mb",
            args.cache,
            blocks=sets[name],
            data_bytes=data_bytes,
        )
        bases[name] = base
        how = f"built in {built:.0f} s" if built is not None else "cached"
        print(f"dataset {name}: {sets[name]} blocks, {args.mb} MB of data ({how})")

    one, two = rsa_sign_rate()
    print(f"RSA-4096 sign rate: {one:.0f}/s on 1 thread, {two:.0f}/s on 2 threads (load {_load()})")

    variants: list[tuple[str, Path | None]] = [(t, None) for t in targets]
    if args.before_code is not None:
        variants += [(f"{t} (before)", args.before_code) for t in targets]
    limit: dict[str, list[float]] = {n: [] for n in chosen}
    runs: dict[tuple[str, str], list[tuple[dict[str, float], int]]] = {}
    nbytes: dict[str, int] = {}
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(
            tempfile.TemporaryDirectory(prefix="odfweb3-bench-initial-", dir=args.cache)
        )
        scratch = Path(tmp)
        kubo_pid = 0
        if "ipfs" in targets:
            sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
            from tests.support.kubo import start_kubo

            node = stack.enter_context(start_kubo(scratch / "kubo"))
            assert node.process is not None and node.process.proc is not None
            kubo_pid = node.process.proc.pid
            os.environ[_KUBO_API_ENV] = node.api_url
        for rnd in range(max(1, args.repeat)):
            for name in chosen:
                files = _files(bases[name])
                secs, nbytes[name] = hashing_limit(files)
                limit[name].append(secs)
                print(f"round {rnd + 1} {name}: limit {secs:.2f} s (load {_load()})", flush=True)
                for target, code in variants:
                    if target.startswith("bundle") and rnd >= args.bundle_rounds:
                        continue
                    kind = target.split()[0]
                    if kind == "ipfs":
                        _empty_node(os.environ[_KUBO_API_ENV])
                        node_cpu = _proc_cpu(kubo_pid)
                    res, rss = _publish(kind, bases[name], scratch, code)
                    if kind == "ipfs":
                        res["nodeCpu"] = _proc_cpu(kubo_pid) - node_cpu
                    runs.setdefault((name, target), []).append((res, rss))
                    node_note = f", node cpu {res['nodeCpu']:.2f} s" if "nodeCpu" in res else ""
                    print(
                        f"round {rnd + 1} {name}: {target}: {res['seconds']:.2f} s, cpu "
                        f"{res['cpu']:.2f} s{node_note}, peak RSS {_mb(rss)}, ratio "
                        f"{secs / res['seconds']:.3f} (load {_load()})",
                        flush=True,
                    )

        rows = [("dataset", "step", "best s", "MB/s", "ratio", "cpu s", "node cpu s", "peak RSS",
                 "rounds (s)")]  # fmt: skip
        for name in chosen:
            mb = nbytes[name] / 1e6
            best = min(limit[name])
            rows.append((name, "hashing limit (2 threads)", f"{best:.2f}", f"{mb / best:.0f}",
                         "1.000", "", "", "",
                         "/".join(f"{t:.2f}" for t in limit[name])))  # fmt: skip
            for target, _ in variants:
                got = runs.get((name, target), [])
                if not got:
                    continue
                res = min(got, key=lambda r: r[0]["seconds"])
                secs = res[0]["seconds"]
                # Ratio against the limit of the same round, the best such pair.
                ratio = max(limit[name][i] / g[0]["seconds"] for i, g in enumerate(got))
                rows.append((name, f"{target}: initial", f"{secs:.2f}", f"{mb / secs:.0f}",
                             f"{ratio:.3f}", f"{res[0]['cpu']:.2f}",
                             f"{res[0]['nodeCpu']:.2f}" if "nodeCpu" in res[0] else "",
                             _mb(max(g[1] for g in got)),
                             "/".join(f"{g[0]['seconds']:.2f}" for g in got)))  # fmt: skip
        print_table(rows)
        if "bundle" in targets:
            for name in chosen:
                objects = len(_files(bases[name])) - 1  # refs/head is signed as content too
                floor = 2 * (objects + 1) / two
                print(
                    f"bundle: {name}: {2 * (objects + 1)} RSA-4096 signatures at {two:.0f}/s "
                    f"(2 threads) = a floor of {floor:.1f} s, ratio at most "
                    f"{min(limit[name]) / floor:.3f}"
                )

        big: list[tuple[str, ...]] = [("case", "target", "s", "peak RSS", "goal")]
        cases: list[tuple[str, Callable[[], Path]]] = []
        if args.rss_blocks:

            def blocks_set() -> Path:
                base, _ = ensure_dataset(
                    args.cache / f"rss-{args.rss_blocks}",
                    args.cache,
                    blocks=args.rss_blocks,
                    data_bytes=2000 * args.rss_blocks,
                )
                return base

            cases.append((f"{args.rss_blocks:,} blocks", blocks_set))
        if args.big_gb:

            def big_file() -> Path:
                base, _ = ensure_dataset(
                    args.cache / f"big-{args.big_gb:g}gb",
                    args.cache,
                    blocks=1,
                    data_bytes=int(args.big_gb * 1e9),
                )
                return base

            cases.append((f"one {args.big_gb:g} GB file", big_file))
        for label, make in cases:
            base = make()
            for target in targets:
                if target == "bundle" and "blocks" in label:
                    continue  # two signatures per object: minutes (see the floor above)
                if target == "ipfs":
                    continue  # the node's memory is not ours; bench_memory.py has --to ipfs
                res, rss = _publish(target, base, scratch)
                goal = "met" if rss <= GOAL_RSS else "not met"
                big.append((label, target, f"{res['seconds']:.1f}", _mb(rss), goal))
                print(f"{label}: {target}: {res['seconds']:.1f} s, peak RSS {_mb(rss)} "
                      f"(load {_load()})", flush=True)  # fmt: skip
        if len(big) > 1:
            print_table(big)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
