"""Bytes and seconds the Croissant and DCAT documents add to a +1-block publish, per design.

At N blocks (one data file each) one block is appended, and each candidate builds the two
documents a publish would put beside the dataset (rendered and encoded as published,
canonical JSON):

- ``whole``: every data file in both (what ``describe`` writes): the facts extended by the
  new block from the previous head's (kept, the best case: no walk), each SHA-256 known
  (kept too: the best case, no file read);
- ``a: per publish``: what :mod:`odfweb3.descriptor.published` publishes: the files of the
  blocks above the target's head (:func:`facts_since`: the new block read and verified, the
  rest from the verified chain's cached facts), each new file hashed, linked to the last;
- ``b: FileSet``: Croissant with one ``cr:FileSet`` (``includes`` a glob) contained in the
  data directory and one record set per schema; DCAT with one distribution, the directory
  (constant size; no per-file checksum or URL);
- ``c: capped``: the newest 100 data files in full documents (the rest left to ``describe``).

The reference, measured in the same run, is the publish's own delta: the new block's and its
data file's bytes (what the CAR or bundle carries besides directories and the record).
Printed: bytes of both documents, seconds to build them (best of ``--repeat``), and bytes as
a multiple of the delta. No timing assertions.

Usage: ``python bench/bench_discovery_publish.py [--sizes 100,10000] [--repeat 3]
[--cache DIR]`` (datasets kept under ``--cache``, default a temp dir removed at the end).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import best_of, machine, print_table

from odfweb3.descriptor.codec import encode_descriptor
from odfweb3.descriptor.croissant import (
    PARQUET_FORMATS,
    _fields,
    croissant_from_facts,
    data_file_urls,
    local_sha256,
)
from odfweb3.descriptor.dcat import PARQUET_MEDIA_TYPE, dcat_from_facts
from odfweb3.descriptor.discovery_facts import DiscoveryFacts, Presentation, discovery_facts
from odfweb3.descriptor.published import (
    Earlier,
    facts_since,
    published_croissant,
    published_dcat,
)
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.chain import walk_chain
from odfweb3.odf.facts import facts_of_chain
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str

ROOT = "bafybeihp2ter6bakf5qduf33yu32bgxfr43keeyr5lpsrk6cc4s6ldab3y"
CAP = 100


def _bytes(*docs: dict[str, Any]) -> int:
    return sum(len(encode_descriptor(d)) for d in docs)


def _fileset(facts: DiscoveryFacts, shown: Presentation) -> tuple[dict, dict]:
    """Candidate b: constant-size documents (one FileSet; one directory distribution)."""
    base = croissant_from_facts(dataclasses.replace(facts, files=()), shown)
    base["distribution"] = [
        {
            "@type": "cr:FileObject",
            "@id": "data-directory",
            "contentUrl": f"ipfs://{ROOT}/data",
            "encodingFormat": "application/x-tar",
        },
        {
            "@type": "cr:FileSet",
            "@id": "data-files",
            "containedIn": {"@id": "data-directory"},
            "encodingFormat": list(PARQUET_FORMATS),
            "includes": "data/*",
        },
    ]
    if facts.schema is not None:
        rs = _fields(facts.schema, "records", "data-files")
        for f in rs:
            if "source" in f:
                f["source"] = {"fileSet": {"@id": "data-files"}, **f["source"]}
                f["source"].pop("fileObject", None)
        base["recordSet"] = [{"@type": "cr:RecordSet", "@id": "records", "field": rs}]
    dcat = dcat_from_facts(dataclasses.replace(facts, files=()), shown)
    dcat["@graph"][1]["dcat:distribution"] = [
        {
            "@id": f"{facts.version_id}/data",
            "@type": "dcat:Distribution",
            "dcat:accessURL": f"ipfs://{ROOT}/data",
            "dcat:mediaType": PARQUET_MEDIA_TYPE,
        }
    ]
    return base, dcat


def measure(n: int, base: Path, repeat: int) -> list[tuple[str, ...]]:
    ds = base / f"ds-{n}"
    if not ds.exists():
        create_root_dataset(ds, blocks=n, data_bytes=n * 300, seed=9, fsync=False)
    work = base / f"work-{n}"
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(ds, work)
    reader = DatasetReader.open(work)
    prev_entries = list(walk_chain(reader))
    prev_facts = discovery_facts(prev_entries)
    append_blocks(work, 1, data_bytes=300, seed=n, fsync=False)
    reader = DatasetReader.open(work)
    entries = list(walk_chain(reader))
    cached = facts_of_chain(entries)  # a publish has them from the verified-chain cache
    head, prev_head = entries[0].hash, prev_entries[0].hash
    new_block = entries[0]
    new_file = reader.root / "data" / multihash_to_str(new_block.block.event.new_data.physical_hash)  # type: ignore[union-attr]
    delta = new_block.size + new_file.stat().st_size
    sha_all = local_sha256(reader)
    known = {f.physical_hash: sha_all(f.physical_hash) for f in discovery_facts(entries).files}
    urls = data_file_urls(ipfs=ROOT)

    def shown(sha: Any) -> Presentation:
        return Presentation(
            {"name": "Bench"}, landing="ipns://k51bench", url_of=urls, sha256_of=sha
        )

    def whole() -> int:
        facts = prev_facts.extended([new_block])
        p = shown(known.get)
        return _bytes(croissant_from_facts(facts, p), dcat_from_facts(facts, p))

    earlier = Earlier(prev_head, "ipfs://bafyprevcroissant", "ipfs://bafyprevdcat")

    def per_publish() -> int:
        facts = facts_since(reader, head, prev_head, cached)
        p = shown(local_sha256(reader))
        return _bytes(published_croissant(facts, p, earlier), published_dcat(facts, p, earlier))

    def fileset() -> int:
        facts = facts_since(reader, head, head, cached)  # identity, schema: no file listed
        return _bytes(*_fileset(facts, shown(None)))

    def capped() -> int:
        since = entries[min(CAP, len(entries) - 1)].hash
        facts = facts_since(reader, head, since, cached)
        p = shown(local_sha256(reader))
        return _bytes(croissant_from_facts(facts, p), dcat_from_facts(facts, p))

    rows = []
    for name, fn in (
        ("whole", whole),
        ("a: per publish", per_publish),
        ("b: FileSet", fileset),
        (f"c: capped {CAP}", capped),
    ):
        t, size = best_of(fn, repeat)
        rows.append((f"{n}", name, f"{size:,}", f"{t.best:.4f}", f"{size / delta:.1f}x"))
    rows.append((f"{n}", "(the +1 delta)", f"{delta:,}", "", "1.0x"))
    shutil.rmtree(work)
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="100,10000")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--cache", type=Path, default=None, help="keep the datasets here")
    args = p.parse_args()
    base = args.cache or Path(tempfile.mkdtemp(prefix="bench-discovery-publish-"))
    base.mkdir(parents=True, exist_ok=True)
    print(machine(), f"; load {os.getloadavg()[0]:.1f}")
    rows: list[tuple[str, ...]] = [("blocks", "design", "doc bytes", "seconds", "x delta")]
    try:
        for n in (int(s) for s in args.sizes.split(",")):
            rows += measure(n, base, args.repeat)
    finally:
        if args.cache is None:
            shutil.rmtree(base, ignore_errors=True)
    print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
