"""Bytes the upload records store per one-block update, with tiers and without (no network).

Usage::

    python bench/bench_arweave_tier_bytes.py [--updates 10000] [--window 100]

The issue's goal for Arweave updates: amortised bytes per update within the payload + 64 KiB
at 100,000 objects. Tiers add to each record what the uploads of its span added, so the
record is the part that grows with the chain (nothing in an update grows with the dataset:
bench/RESULTS.md, "Issue 19, goal 2"). Here the records of a full upload and ``--updates``
one-block updates (three objects and ``refs/head`` each, as ``tests/support/ar_chains.py``
makes them) are built with the publisher's counter (``plan_tier`` / ``tiers_after``) and
measured as they are stored in a bundle: the ANS-104 header (2 + 512-byte signature +
512-byte owner + 2 flags + 16 + the encoded tags), the JSON body, and the bundle's 64-byte
entry. Nothing is signed (the bytes do not depend on the signature's value) so 10,000
updates take seconds. Printed: the average per update over the first 10 / 1,000 / ...
updates, the largest single record and the worst window of ``--window`` consecutive
updates, before (records without tiers) and after.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _common import machine, print_table  # noqa: E402

from odfweb3.odf.multihash import hash_bytes, multihash_to_str  # noqa: E402
from odfweb3_arweave.formats.ans104 import encode_tags  # noqa: E402
from odfweb3_arweave.formats.arfs import DriveLayout  # noqa: E402
from odfweb3_arweave.formats.b64 import b64url_encode  # noqa: E402
from odfweb3_arweave.formats.record import (  # noqa: E402
    AddedFile,
    SkipLink,
    UploadRecord,
    encode_record,
    record_tags,
)
from odfweb3_arweave.publish.bundle_plan import (  # noqa: E402
    BundlePlan,
    PreviousUpload,
    Tier,
    plan_tier,
    tiers_after,
)

# ANS-104: signature type (2), RSA-4096 signature and owner (512 each), target and anchor
# flags (none present), tag count and tag bytes length (8 each); a bundle entry is 64 bytes.
_ITEM_FIXED = 2 + 512 + 512 + 1 + 1 + 16 + 64
_DATASET = "did:odf:fed01" + "ab" * 32


def _id(seed: str) -> str:
    return b64url_encode(hashlib.sha256(seed.encode()).digest())


def _head(seed: str) -> str:
    return multihash_to_str(hash_bytes(seed.encode()))


def record_sizes(n: int, *, tiered: bool) -> list[int]:
    """Stored bytes of each delta record 1..n (the full upload's left out)."""
    drive = DriveLayout.new(lambda: uuid.UUID(int=1))
    full = _id("manifest-0")
    prev_id, prev_head = _id("record-0"), _head("h-0")
    tiers: tuple[Tier, ...] = (Tier(SkipLink(prev_id, prev_head, 0), 0),)
    sizes = []
    for k in range(1, n + 1):
        added = {
            f"{kind}/{_head(f'{kind}-{k}')}": AddedFile(
                _id(f"{kind}-d-{k}"), _id(f"{kind}-m-{k}"), str(uuid.UUID(int=k))
            )
            for kind in ("blocks", "data", "checkpoints")
        }
        added["refs/head"] = AddedFile(_id(f"hd-{k}"), _id(f"hm-{k}"), str(uuid.UUID(int=7)))
        span, earlier, chain, rest = None, {}, (), ()
        if tiered:
            previous = PreviousUpload(
                drive, {}, prev_id, prev_head, full_manifest_id=full, deltas=k - 1, tiers=tiers
            )
            span, earlier, chain, rest = plan_tier(previous, k, added)
        head = _head(f"h-{k}")
        record = UploadRecord(
            dataset_id=_DATASET,
            head=head,
            prev_head=prev_head,
            prev_upload=prev_id,
            manifest_id=_id(f"manifest-{k}"),
            drive=drive,
            added=added,
            unix_time=1_700_000_000 + k,
            app_version="0.1.0",
            full_manifest=full,
            delta_uploads=k,
            span_uploads=span,
            earlier=earlier,
            skip_chain=chain,
        )
        sizes.append(
            _ITEM_FIXED + len(encode_tags(record_tags(record))) + len(encode_record(record))
        )
        record_id = _id(f"record-{k}")
        if tiered:
            plan = BundlePlan(
                dataset_id=_DATASET,
                head=head,
                prev_head=prev_head,
                prev_upload=prev_id,
                drive=drive,
                drive_name=_DATASET,
                include_drive=False,
                add=(),
                keep={},
                unix_time=k,
                app_version="0.1.0",
                full_manifest=full,
                deltas=k,
                span_uploads=span,
                earlier=earlier,
                skip_chain=chain,
                tiers_after=rest,
            )
            tiers = tiers_after(plan, record_id, added)
        prev_id, prev_head = record_id, head
    return sizes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--updates", type=int, default=10_000)
    ap.add_argument("--window", type=int, default=100)
    args = ap.parse_args(argv)
    print(machine())
    rows = [("records", "10", "1,000", f"{args.updates:,}", "largest", f"worst {args.window}")]
    for tiered in (False, True):
        sizes = record_sizes(args.updates, tiered=tiered)
        w = args.window
        window = max(sum(sizes[i : i + w]) / w for i in range(len(sizes) - w + 1))
        avg = [sum(sizes[:k]) / k for k in (10, 1000, args.updates)]
        rows.append(
            (
                "tiered" if tiered else "without tiers",
                *(f"{a:,.0f}" for a in avg),
                f"{max(sizes):,}",
                f"{window:,.0f}",
            )
        )
    print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
