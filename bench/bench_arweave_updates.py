"""Arweave bytes stored per one-block update, delta against full path manifests (issue 19 goal 2).

Usage::

    python bench/bench_arweave_updates.py [--sizes 1000,10000,33334] [--updates 100]
                                          [--full-updates 10] [--block-bytes 2000]
                                          [--cache bench/.scale-cache]

For each size N (AddData blocks; the example datasets have about 3 objects per block, so
33,334 blocks is a 100,000-object dataset) the dataset is the one ``bench_scale.py`` caches
in ``--cache/N`` and its initial ``bundle:DIR`` publish is cached beside it
(``--cache/N/bundle-initial``: the output directory and the test wallet that signed it,
0600; delete the directory to redo it: it RSA-signs two data items per object, minutes at
10,000 blocks). Both modes then start from hard-linked copies of that output:

- ``delta`` (``arweave.manifest: delta``, the default): ``--updates`` consecutive one-block
  updates (``append_blocks(…, 1)`` then a publish), each storing a delta manifest;
- ``full`` (``arweave.manifest: full``: what every update stored before delta manifests,
  byte for byte): ``--full-updates`` of the same updates (same seeds, same payloads); its
  bytes per update are the same every time up to the manifest's growth, so fewer suffice.

Per update: the bundle's bytes (what is stored on Arweave), the payload (the new objects'
bytes and ``refs/head``), the path manifest's bytes (from the bundle). Printed per size and
mode: the mean bytes per update, mean payload, mean bytes above the payload, mean manifest
bytes, and the goal check: mean bytes <= mean payload + 64 KiB over the window of
``--updates`` consecutive updates. The reference for the ratio is the ``full`` mode of the
same size, measured in the same run. No timing assertions (seconds are printed for
information only: the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ensure_dataset, linked_copy, machine, print_table

HERE = Path(__file__).resolve().parent
GOAL_SLACK = 64 * 1024


def _initial(cache: Path, base: Path, scratch: Path) -> tuple[Path, Path, float | None]:
    """The cached initial bundle:DIR publish of ``base``: (out dir, wallet file, seconds)."""
    from odfweb3.odf.layout import DatasetReader
    from odfweb3.odf.multihash import multihash_to_str
    from odfweb3.publish.execute import publish_dataset
    from odfweb3_arweave.publish.bundle_target import BundleTarget
    from odfweb3_arweave.wallet import generate_wallet, load_wallet, save_wallet

    head = multihash_to_str(DatasetReader.open(base).head())
    where = cache / "bundle-initial"
    stamp = where / "head.txt"
    if stamp.is_file() and stamp.read_text("utf-8") == head:
        return where / "out", where / "wallet.json", None
    if where.exists():
        shutil.rmtree(where)
    where.mkdir(parents=True)
    wallet_path = where / "wallet.json"
    save_wallet(generate_wallet(), wallet_path)
    work = linked_copy(base, scratch / "initial-ds")
    start = time.perf_counter()
    publish_dataset(work, BundleTarget(where / "out", load_wallet(wallet_path)))
    elapsed = time.perf_counter() - start
    shutil.rmtree(work)
    stamp.write_text(head, "utf-8")
    return where / "out", wallet_path, elapsed


def _manifest_bytes(bundle: Path, manifest_id: str) -> int:
    from odfweb3_arweave.formats.ans104 import iter_bundle

    with open(bundle, "rb") as f:
        for item in iter_bundle(f, verify=False):
            if item.id_b64 == manifest_id:
                return len(item.data)
    raise SystemExit(f"{bundle}: manifest {manifest_id} not found")


def _updates(
    base: Path, out0: Path, wallet_path: Path, scratch: Path, mode: str, count: int, size: int
) -> list[dict[str, Any]]:
    """``count`` one-block updates published with ``mode`` manifests; one row per update."""
    from odfweb3.odf.builder import append_blocks
    from odfweb3.publish.execute import publish_dataset
    from odfweb3_arweave.publish.bundle_target import BundleTarget
    from odfweb3_arweave.wallet import load_wallet

    work = linked_copy(base, scratch / f"ds-{mode}")
    out = linked_copy(out0, scratch / f"out-{mode}")  # new files only, publish.json by rename
    wallet = load_wallet(wallet_path)
    rows = []
    for i in range(count):
        append_blocks(work, 1, data_bytes=size, seed=1000 + i, fsync=False)
        start = time.perf_counter()
        outcome = publish_dataset(work, BundleTarget(out, wallet, manifest=mode))  # type: ignore[arg-type]
        seconds = time.perf_counter() - start
        assert outcome.upload is not None
        summary = outcome.upload.summary
        payload = sum((work / o.path).stat().st_size for o in outcome.plan.send)
        payload += (work / "refs" / "head").stat().st_size
        rows.append(
            {
                "bytes": outcome.upload.bytes_sent,
                "payload": payload,
                "manifest": _manifest_bytes(out / str(summary["bundle"]), summary["manifestId"]),
                "objects": len(outcome.state.objects),
                "delta": int(outcome.state.extra.get("deltaUploads", 0)),
                "seconds": seconds,
            }
        )
    shutil.rmtree(work)
    shutil.rmtree(out)
    return rows


def _mean(rows: list[dict[str, Any]], key: str) -> float:
    return sum(float(r[key]) for r in rows) / len(rows)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table; exit status 0 (no assertions on time)."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,33334", help="AddData blocks, commas")
    ap.add_argument("--updates", type=int, default=100, help="delta updates per size")
    ap.add_argument("--full-updates", type=int, default=10, help="full-manifest updates per size")
    ap.add_argument("--block-bytes", type=int, default=2000, help="data bytes per block")
    ap.add_argument("--cache", type=Path, default=HERE / ".scale-cache", help="dataset cache")
    args = ap.parse_args(argv)
    print(f"machine: {machine()}")
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    table: list[tuple[str, ...]] = [
        ("blocks", "objects", "mode", "updates", "bytes/update", "payload/update",
         "above payload", "manifest/update", "s/update", "goal (<= payload + 64 KiB)"),
    ]  # fmt: skip
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="odfweb3-bench-arupd-") as tmp_name:
        tmp = Path(tmp_name)
        for n in [int(s) for s in args.sizes.split(",") if s]:
            base, built = ensure_dataset(
                args.cache / str(n), tmp, blocks=n, data_bytes=n * args.block_bytes
            )
            print(f"{n} blocks: dataset " + (f"built in {built:.1f} s" if built else "from cache"))
            out0, wallet_path, secs = _initial(args.cache / str(n), base, tmp)
            initial = sum(p.stat().st_size for p in out0.glob("*.bundle"))
            print(
                f"  initial bundle: {initial:,} bytes, "
                + (f"published in {secs:.1f} s" if secs else "from cache")
            )
            by_mode: dict[str, list[dict[str, Any]]] = {}
            for mode, count in (("full", args.full_updates), ("delta", args.updates)):
                if count <= 0:
                    continue
                rows = _updates(base, out0, wallet_path, tmp, mode, count, args.block_bytes)
                by_mode[mode] = rows
                mean_bytes, mean_payload = _mean(rows, "bytes"), _mean(rows, "payload")
                met = mean_bytes <= mean_payload + GOAL_SLACK
                table.append(
                    (f"{n:,}", f"{rows[-1]['objects']:,}", mode, str(len(rows)),
                     f"{mean_bytes:,.0f}", f"{mean_payload:,.0f}",
                     f"{mean_bytes - mean_payload:,.0f}", f"{_mean(rows, 'manifest'):,.0f}",
                     f"{_mean(rows, 'seconds'):.2f}", "met" if met else "not met")
                )  # fmt: skip
                print(f"  {mode}: {len(rows)} updates, {mean_bytes:,.0f} bytes/update")
                results.append(
                    {"blocks": n, "mode": mode, "initialBytes": initial, "updates": rows}
                )
            if "full" in by_mode and "delta" in by_mode:
                ratio = _mean(by_mode["full"], "bytes") / _mean(by_mode["delta"], "bytes")
                print(f"  bytes per update, full / delta: {ratio:.1f}")
    print_table(table)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("json: " + json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
