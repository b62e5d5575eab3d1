"""Arweave bundles: L1 transactions per publish and bytes of overhead per publish.

For a 5,000-block dataset's first publish and a one-block update, through the offline
``bundle:DIR`` target (the same bundle the live ``arweave`` target posts as ONE L1
transaction, whatever the number of objects). Overhead = every bundle byte that is not an
object's own bytes: ANS-104 headers and tags, ArFS metadata, drive and folders, the path
manifest, the descriptor and the upload record. Run from the repository root::

    .venv/bin/python bench/bench_arweave.py [--blocks 5000]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.publish.execute import publish_dataset
from odfweb3_arweave.formats.ans104 import iter_bundle
from odfweb3_arweave.publish.bundle_target import BundleTarget
from odfweb3_arweave.wallet import generate_wallet


def measure(out_dir: Path, bundle_name: str, payload_ids: set[str]) -> dict[str, int]:
    """Bundle size, items, payload bytes (object data items' data), by item kind."""
    total = (out_dir / bundle_name).stat().st_size
    payload = 0
    manifest = 0
    with open(out_dir / bundle_name, "rb") as f:
        items = 0
        for item in iter_bundle(f):
            items += 1
            tags = dict(t.text() for t in item.tags)
            if item.id_b64 in payload_ids:
                payload += len(item.data)
            if tags.get("Content-Type") == "application/x.arweave-manifest+json":
                manifest = len(item.data)
    return {"bundle": total, "items": items, "payload": payload, "manifest": manifest}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--blocks", type=int, default=5000)
    args = ap.parse_args()
    wallet = generate_wallet()
    with tempfile.TemporaryDirectory() as tmp:
        ds = create_root_dataset(
            Path(tmp, "ds"), blocks=args.blocks, data_bytes=args.blocks * 2048, seed=9, fsync=False
        ).path
        out = Path(tmp, "out")
        rows = []
        for label in (f"first publish ({args.blocks} blocks)", "one-block update"):
            if rows:
                append_blocks(ds, 1, data_bytes=2048, seed=99, fsync=False)
            o = publish_dataset(ds, BundleTarget(out, wallet))
            sent = {x.path for x in o.plan.send}
            ids = {ref["dataItemId"] for p, ref in o.state.objects.items() if p in sent}
            m = measure(out, o.state.record["bundle"], ids)
            overhead = m["bundle"] - m["payload"]
            rows.append((label, len(sent), m, overhead))
        print(
            f"{'publish':<32} {'objects':>8} {'L1 txs':>6} {'items':>7} {'bundle B':>12} "
            f"{'payload B':>12} {'overhead B':>11} {'ovh/payload':>11} {'manifest B':>11}"
        )
        for label, n, m, ovh in rows:
            print(
                f"{label:<32} {n:>8} {1:>6} {m['items']:>7} {m['bundle']:>12} "
                f"{m['payload']:>12} {ovh:>11} {ovh / m['payload']:>11.3f} {m['manifest']:>11}"
            )


if __name__ == "__main__":
    main()
