"""Encryption cost: encrypted vs plain offline publish, and raw AEAD vs hashlib SHA-256.

Usage::

    python bench/bench_encrypt.py [--blocks 1000] [--data-bytes 1000000000]
                                  [--cache DIR] [--aead-bytes 1000000000]
                                  [--repeat 3]

1. Raw throughput on the same in-memory bytes, one thread: hashlib SHA-256 (the
   reference), SHA3-256 (what ODF hashing costs) and odfweb3's segmented AES-256-GCM
   (``encrypt_stream``, 64 KiB segments) and its decryption.
2. ``publish_dataset(copy, CarTarget(out, …))`` plain and with a ``Sealer``, in
   ``--repeat`` interleaved rounds (fresh output directories, hard-linked dataset
   copies). Ratio per round = plain time / encrypted time, i.e. encrypted throughput /
   plain throughput; the median is printed (goal >= 0.7, bench/RESULTS.md).
   "CPU s" is the median process CPU time.

No timing assertions; numbers go to ``bench/RESULTS.md`` by hand.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ensure_dataset, linked_copy, machine, print_table

from odfweb3.crypto.envelope import encode_envelope, new_envelope
from odfweb3.crypto.keys import KeyRing
from odfweb3.crypto.keystore import Keystore
from odfweb3.crypto.sealer import Sealer
from odfweb3.crypto.segments import decrypt_stream, encrypt_stream
from odfweb3.odf.layout import DatasetReader
from odfweb3.publish.execute import load_verified_chain, publish_dataset
from odfweb3_ipfs.publish.car_target import CarTarget

GOAL = 0.7


def _rate(n: int, seconds: float) -> str:
    return f"{n / seconds / 1e6:,.0f} MB/s"


def _raw(total: int) -> list[tuple[str, ...]]:
    chunk = bytes(range(256)) * 4096  # 1 MiB
    chunks = [chunk] * max(1, total // len(chunk))
    n = len(chunk) * len(chunks)
    ring = KeyRing.new("did:odf:bench")
    key = ring.current_key()
    rows: list[tuple[str, ...]] = [("raw, 1 thread", "seconds", "throughput", "vs SHA-256")]
    results: dict[str, float] = {}
    for name, algo in (("hashlib SHA-256", "sha256"), ("hashlib SHA3-256", "sha3_256")):
        h = hashlib.new(algo)
        t = time.perf_counter()
        for c in chunks:
            h.update(c)
        results[name] = time.perf_counter() - t
    t = time.perf_counter()
    for _piece in encrypt_stream(chunks, key, "data/x"):
        pass
    results["AES-256-GCM encrypt"] = time.perf_counter() - t
    sample = b"".join(encrypt_stream(chunks[:64], key, "data/x"))
    reps = max(1, len(chunks) // 64)
    t = time.perf_counter()
    for _ in range(reps):
        for _p in decrypt_stream(io.BytesIO(sample), key, "data/x"):
            pass
    results["AES-256-GCM decrypt"] = (time.perf_counter() - t) * len(chunks) / (reps * 64)
    ref = results["hashlib SHA-256"]
    for name, sec in results.items():
        rows.append((name, f"{sec:.2f}", _rate(n, sec), f"{ref / sec:.2f}"))
    return rows


def main(argv: list[str] | None = None) -> int:
    """Run and print; exit status 0 (no timing assertions)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--blocks", type=int, default=1000, help="AddData blocks")
    parser.add_argument("--data-bytes", type=int, default=1_000_000_000, help="total data bytes")
    parser.add_argument("--aead-bytes", type=int, default=1_000_000_000, help="raw test bytes")
    parser.add_argument("--cache", type=Path, help="build/reuse the dataset under this directory")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved publish rounds")
    args = parser.parse_args(argv)
    print(f"machine: {machine()}")
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    print_table(_raw(args.aead_bytes))
    print()
    with tempfile.TemporaryDirectory(prefix="odfweb3-bench-enc-") as tmp:
        scratch = Path(tmp)
        ds, _built = ensure_dataset(
            args.cache, scratch, blocks=args.blocks, data_bytes=args.data_bytes
        )
        _entries, did = load_verified_chain(DatasetReader.open(ds))
        ring = KeyRing.new(str(did))
        key, envelope = ring.current_key(), encode_envelope(new_envelope(ring))
        variants: dict[str, Sealer | None] = {
            "plain": None,
            "encrypted": Sealer(key, envelope),
        }
        # Interleaved rounds: background load on a shared machine hits every variant alike.
        times: dict[str, list[float]] = {label: [] for label in variants}
        cpu: dict[str, list[float]] = {label: [] for label in variants}
        car_mb: dict[str, float] = {}
        for rnd in range(args.repeat):
            for label, sealer in variants.items():
                slug = label.replace(" ", "").replace(",", "-")
                copy = linked_copy(ds, scratch / f"copy-{slug}-{rnd}")
                out = scratch / f"out-{slug}-{rnd}"
                target = CarTarget(out, Keystore(scratch / "keys"), sealer=sealer)
                t, c = time.perf_counter(), time.process_time()
                outcome = publish_dataset(copy, target, sealer=sealer)
                times[label].append(time.perf_counter() - t)
                cpu[label].append(time.process_time() - c)
                assert outcome.upload is not None
                car_mb[label] = int(outcome.upload.summary.get("carBytes", 0)) / 1e6
                shutil.rmtree(out)
                shutil.rmtree(copy)
        rows: list[tuple[str, ...]] = [
            ("offline publish car:DIR", "median s", "data MB/s", "rounds (s)", "CPU s", "CAR MB")
        ]
        for label, ts in times.items():
            med = statistics.median(ts)
            rounds = " / ".join(f"{x:.2f}" for x in ts)
            cpu_med = f"{statistics.median(cpu[label]):.2f}"
            mb = f"{car_mb[label]:,.1f}"
            rows.append((label, f"{med:.2f}", _rate(args.data_bytes, med), rounds, cpu_med, mb))
        print_table(rows)
        print()
        plain = times["plain"]
        for label in list(variants)[1:]:
            per_round = [p / e for p, e in zip(plain, times[label], strict=True)]
            ratio = statistics.median(per_round)
            verdict = "meets" if ratio >= GOAL else "misses"
            print(
                f"{label} / plain throughput: median {ratio:.2f} ({verdict} the goal >= {GOAL}); "
                f"per round {' / '.join(f'{r:.2f}' for r in per_round)}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
