"""Publish state size and +1 publish time with n delta uploads since the full manifest.

Usage::

    python bench/bench_arweave_state.py [--sizes 10,1000,10000] [--before-root DIR]
                                        [--scratch /tmp/odfweb3-bench-arweave-state]

The binary counter of tiered upload records (docs/arweave.md, section 9, 2a) lives in the
publish state (``extra.tiers``). For each n: a ``bundle:DIR`` publish of a small dataset (the
offline target: no network in the measurement; the gateway target saves its state through
the same code), then its ``publish.json`` is given the counter the publisher holds after n
one-block updates (three objects each; the counter computed by the publisher's own
``plan_tier`` / ``tiers_after``, its newest tier the real last record, its entries in the
form states were written in before tier files: inline), then two one-block updates are
published and timed. Printed: the state's bytes before, the first update's seconds (a new
version converts the inline state), the state's bytes after, the second update's seconds and
the bytes it wrote (``publish.json`` and new tier files), and the tier files' total on disk.

``--before-root DIR``: also run the same measurement with the code of another checkout (e.g.
a worktree of the commit before tier files) in a subprocess, first, as the reference of the
ratio; the seconds are for information (a shared machine), the bytes are exact.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from _before_after import measure_before, parse_args, use_code_root

use_code_root()

import uuid  # noqa: E402

from _common import machine, print_table  # noqa: E402

from odfweb3.odf.builder import append_blocks, create_root_dataset  # noqa: E402
from odfweb3.odf.multihash import hash_bytes, multihash_to_str  # noqa: E402
from odfweb3.publish.execute import publish_dataset  # noqa: E402
from odfweb3_arweave.formats.b64 import b64url_encode  # noqa: E402
from odfweb3_arweave.formats.record import AddedFile, SkipLink  # noqa: E402
from odfweb3_arweave.publish.bundle_plan import (  # noqa: E402
    BundlePlan,
    PreviousUpload,
    Tier,
    plan_tier,
    tiers_after,
)
from odfweb3_arweave.publish.bundle_target import BundleTarget  # noqa: E402
from odfweb3_arweave.wallet import generate_wallet  # noqa: E402


def _id(seed: str) -> str:
    return b64url_encode(hash_bytes(seed.encode())[-32:])


def _counter(n: int, record_id: str, head: str, full_manifest: str, drive) -> list:  # type: ignore[no-untyped-def]
    """The counter after n one-block updates (inline JSON), the last one ``record_id``."""
    tiers: tuple[Tier, ...] = (Tier(SkipLink(_id("full"), head, 0), 0),)
    for k in range(1, n + 1):
        rid = record_id if k == n else _id(f"r{k}")
        kh = head if k == n else multihash_to_str(hash_bytes(f"h{k}".encode()))
        added = {
            f"{kind}/{multihash_to_str(hash_bytes(f'{kind}{k}'.encode()))}": AddedFile(
                _id(f"d{kind}{k}"), _id(f"m{kind}{k}"), str(uuid.UUID(int=k))
            )
            for kind in ("blocks", "data", "checkpoints")
        }
        prev = tiers[0].link
        previous = PreviousUpload(
            drive, {}, prev.record_id, prev.head, full_manifest_id=full_manifest, deltas=k - 1
        )
        previous = PreviousUpload(**{**previous.__dict__, "tiers": tiers})
        span, earlier, chain, rest = plan_tier(previous, k, added)
        plan = BundlePlan(
            dataset_id="",
            head=kh,
            prev_head=prev.head,
            prev_upload=prev.record_id,
            drive=drive,
            drive_name="",
            include_drive=False,
            add=(),
            keep={},
            unix_time=k,
            app_version="bench",
            full_manifest=full_manifest,
            deltas=k,
            span_uploads=span,
            earlier=earlier,
            skip_chain=chain,
            tiers_after=rest,
        )
        tiers = tiers_after(plan, rid, added)
    return [
        [
            t.link.record_id,
            t.link.head,
            t.link.deltas,
            t.uploads,
            {p: a.to_json() for p, a in (t.files or ())},
        ]
        for t in tiers
    ]


def _tier_bytes(out: Path) -> int:
    return sum(p.stat().st_size for p in out.glob("tier-*.json"))


def measure(sizes: list[int], scratch: Path, label: str) -> list[tuple[str, ...]]:
    from odfweb3_arweave.formats.arfs import DriveLayout

    wallet = generate_wallet()
    rows = []
    for n in sizes:
        work = scratch / f"{label}-{n}"
        ds = create_root_dataset(work / "ds", blocks=2, data_bytes=2_000, seed=n).path
        out = work / "out"
        publish_dataset(ds, BundleTarget(out, wallet))
        summary = out / "publish.json"
        doc = json.loads(summary.read_text())
        extra = doc["extra"]
        drive = DriveLayout.from_json(extra["drive"], "bench")
        head = (ds / "refs" / "head").read_text().strip()
        extra["deltaUploads"] = n
        extra["tiers"] = _counter(n, extra["recordId"], head, extra["fullManifestId"], drive)
        summary.write_text(json.dumps(doc, sort_keys=True, indent=None) + "\n")
        before = summary.stat().st_size
        seconds = []
        written = 0
        for step in (1, 2):
            append_blocks(ds, 1, data_bytes=600, seed=n + step)
            tiers0 = {p.name for p in out.glob("tier-*.json")}
            t0 = time.perf_counter()
            publish_dataset(ds, BundleTarget(out, wallet))
            seconds.append(time.perf_counter() - t0)
            new_tiers = sum(
                p.stat().st_size for p in out.glob("tier-*.json") if p.name not in tiers0
            )
            written = summary.stat().st_size + new_tiers
        after = summary.stat().st_size
        rows.append(
            (
                str(n),
                label,
                f"{before:,}",
                f"{seconds[0]:.2f}",
                f"{after:,}",
                f"{seconds[1]:.2f}",
                f"{written:,}",
                f"{_tier_bytes(out):,}",
            )
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse_args(
        __doc__, argv, sizes="10,1000,10000", scratch=Path("/tmp/odfweb3-bench-arweave-state")
    )
    if args.json:  # the --before-root subprocess
        print(json.dumps(measure(args.size_list, args.scratch, args.label)))
        return 0
    print(machine())
    header = ("updates", "code", "state B", "+1 s", "state B after", "+1 s again")
    rows: list[tuple[str, ...]] = [(*header, "B written", "tier files B")]
    if args.before_root is not None:
        rows += [tuple(r) for r in measure_before(__file__, args)]
    rows += measure(args.size_list, args.scratch, "after")
    print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
