"""What the Croissant and DCAT documents cost a publish, against the chain walk they need.

A publish that put Croissant and DCAT beside the dataset would need their facts at the new
head. Measured at N blocks (one data file each):

- the reference: ``walk_chain`` of the whole chain (what a publish without cached facts does);
- :func:`discovery_facts` of the walked chain, and ``DiscoveryFacts.extended`` by the one
  block above it (what a +1 publish costs with the previous head's facts kept);
- rendering and encoding each document from the facts, and its size: both list every data
  file, so they grow with the chain, not with the change.

Usage: ``python bench/bench_discovery.py [--blocks N] [--repeat R] [--cache DIR]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import best_of, machine

from odfweb3.descriptor.codec import encode_descriptor
from odfweb3.descriptor.croissant import croissant_from_facts, data_file_urls
from odfweb3.descriptor.dcat import dcat_from_facts
from odfweb3.descriptor.discovery_facts import Presentation, discovery_facts
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.chain import walk_chain
from odfweb3.odf.layout import DatasetReader


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--blocks", type=int, default=10_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--cache", type=Path, default=None, help="keep the dataset here")
    args = p.parse_args()
    base = args.cache or Path(tempfile.mkdtemp(prefix="bench-discovery-"))
    ds = base / f"discovery-{args.blocks}"
    if not ds.exists():
        create_root_dataset(ds, blocks=args.blocks, data_bytes=args.blocks * 300, seed=9)
    reader = DatasetReader.open(ds)
    print(machine(), f"; load {os.getloadavg()[0]:.1f}")
    walk, entries = best_of(lambda: list(walk_chain(reader)), args.repeat)
    facts_t, facts = best_of(lambda: discovery_facts(entries), args.repeat)
    older = discovery_facts(entries[1:])
    extend_t, extended = best_of(lambda: older.extended([entries[0]]), args.repeat)
    assert extended == facts
    shown = Presentation({"name": "bench"}, None, None, "ipns://k51", data_file_urls(ipfs="bafy"))
    rows = [
        ("walk_chain (reference)", walk.best, None),
        ("discovery_facts (whole chain)", facts_t.best, None),
        ("DiscoveryFacts.extended (+1 block)", extend_t.best, None),
    ]
    for name, render in (("Croissant", croissant_from_facts), ("DCAT", dcat_from_facts)):
        t, data = best_of(lambda r=render: encode_descriptor(r(facts, shown)), args.repeat)  # type: ignore[misc]
        rows.append((f"{name}: render + encode", t.best, len(data)))
    print(f"{len(entries)} blocks, {len(facts.files)} data files")
    print(f"{'step':40} {'best s':>9} {'x walk':>8} {'bytes':>12} {'B/file':>7}")
    for name, secs, size in rows:
        per = f"{size / len(facts.files):.0f}" if size else ""
        print(f"{name:40} {secs:9.4f} {secs / walk.best:8.3f} {size if size else '':>12} {per:>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
