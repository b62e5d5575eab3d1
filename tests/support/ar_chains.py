"""Long chains of Arweave upload records, built fast for tests and bench/bench_arweave_reads.py.

Publishing 10,000 updates through ``publish_dataset`` takes hours on arlocal; readers only
need the records to find the last full manifest. So the records are made here directly:
a full upload (count 0) and ``n`` delta uploads, each adding three objects and
``refs/head`` (what a one-block update adds), signed by one wallet as the publisher signs
them (``encode_record``, ``record_tags``, ``create_data_item``), with the tiers the
publisher's planner computes (:func:`odfweb3_arweave.publish.bundle_plan.plan_tier`) or, for
``tiered=False``, records as odfweb3 wrote them before tiers. They are posted in bundles of
:data:`BUNDLE_ITEMS` items as L1 transactions and mined: the gateway indexes each item for
GraphQL and serves its body, as for a real publish. Manifests and objects are not made: a
reader reaches them only after the walk being measured.
"""

from __future__ import annotations

import hashlib
import io
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from odfweb3.odf.identity import generate_keypair
from odfweb3.odf.multihash import hash_bytes, multihash_to_str
from odfweb3_arweave.client.gateway import ArweaveGateway, ChunkProgress
from odfweb3_arweave.formats.ans104 import BUNDLE_TAGS, DataItem, create_data_item, encode_bundle
from odfweb3_arweave.formats.arfs import DriveLayout
from odfweb3_arweave.formats.b64 import b64url_encode
from odfweb3_arweave.formats.merkle import build_tree_from_stream
from odfweb3_arweave.formats.record import AddedFile, UploadRecord, encode_record, record_tags
from odfweb3_arweave.formats.tx import new_transaction, sign_transaction
from odfweb3_arweave.publish.bundle_plan import (
    BundlePlan,
    PreviousUpload,
    Tier,
    plan_tier,
    tiers_after,
)
from odfweb3_arweave.wallet import Wallet, generate_wallet

__all__ = ["BUNDLE_ITEMS", "Chain", "build_chain", "post_chain"]

BUNDLE_ITEMS = 500
BUNDLE_BYTES = 200 << 10  # most go inline (arlocal's chunked path is fragile: docs/arweave.md 7)


@dataclass(frozen=True)
class Chain:
    """A chain of records ready to post: ``bundles`` (encoded ANS-104 bundles, oldest
    first), the signer's ``owner`` address, the ``dataset_id`` and the ``latest`` record id."""

    bundles: tuple[bytes, ...]
    owner: str
    dataset_id: str
    latest: str
    full_manifest: str
    updates: int

    def save(self, directory: Path) -> None:
        """Cache it (bundles are public signed items; no key is written)."""
        directory.mkdir(parents=True, exist_ok=True)
        for i, bundle in enumerate(self.bundles):
            (directory / f"bundle-{i:05d}.bin").write_bytes(bundle)
        meta = {
            "owner": self.owner,
            "datasetId": self.dataset_id,
            "latest": self.latest,
            "fullManifest": self.full_manifest,
            "bundles": len(self.bundles),
            "updates": self.updates,
        }
        (directory / "chain.json").write_text(json.dumps(meta))

    @staticmethod
    def load(directory: Path) -> Chain | None:
        """A chain cached by :meth:`save`, or None."""
        try:
            meta = json.loads((directory / "chain.json").read_text())
            bundles = tuple(
                (directory / f"bundle-{i:05d}.bin").read_bytes() for i in range(meta["bundles"])
            )
        except (OSError, ValueError, KeyError):
            return None
        return Chain(
            bundles,
            meta["owner"],
            meta["datasetId"],
            meta["latest"],
            meta["fullManifest"],
            meta["updates"],
        )


def _id(seed: str) -> str:
    return b64url_encode(hashlib.sha256(seed.encode()).digest())


def _head(seed: str) -> str:
    return multihash_to_str(hash_bytes(seed.encode()))


def _records(
    wallet: Wallet, n: int, *, tiered: bool, seed: str
) -> Iterator[tuple[UploadRecord, DataItem]]:
    ids = iter(
        uuid.UUID(int=int.from_bytes(hashlib.sha256(f"{seed}{i}".encode()).digest()[:16]))
        for i in range(10**9)
    )
    drive = DriveLayout.new(lambda: next(ids))
    dataset_id = str(generate_keypair(hashlib.sha256(seed.encode()).digest()).dataset_id)
    full_manifest = _id(f"{seed}-manifest-0")
    prev: UploadRecord | None = None
    prev_id: str | None = None
    tiers: tuple[Tier, ...] | None = None
    for k in range(n + 1):
        added = {
            f"{kind}/{_head(f'{seed}-{kind}-{k}')}": AddedFile(
                _id(f"{seed}-{kind}-data-{k}"), _id(f"{seed}-{kind}-meta-{k}"), str(next(ids))
            )
            for kind in ("blocks", "data", "checkpoints")
        }
        added["refs/head"] = AddedFile(
            _id(f"{seed}-head-{k}"), _id(f"{seed}-hm-{k}"), str(uuid.UUID(int=7))
        )
        head = _head(f"{seed}-h-{k}")
        record = UploadRecord(
            dataset_id=dataset_id,
            head=head,
            prev_head=prev.head if prev else None,
            prev_upload=prev_id,
            manifest_id=full_manifest if k == 0 else _id(f"{seed}-manifest-{k}"),
            drive=drive,
            added=added,
            unix_time=1_700_000_000 + k,
            app_version="bench",
            full_manifest=full_manifest if k else None,
            delta_uploads=k or None,
        )
        bundle_plan: BundlePlan | None = None
        if tiered and k:
            assert prev is not None and prev_id is not None
            previous = PreviousUpload(
                drive,
                {},
                prev_id,
                prev.head,
                full_manifest_id=full_manifest,
                deltas=k - 1,
                tiers=tiers,
            )
            span, earlier, chain, rest = plan_tier(previous, k, added)
            record = UploadRecord(
                **{**record.__dict__, "span_uploads": span, "earlier": earlier, "skip_chain": chain}
            )
            bundle_plan = _plan_of(record, span, earlier, chain, rest)
        item = create_data_item(wallet, encode_record(record), record_tags(record))
        if tiered:
            if bundle_plan is None:
                bundle_plan = _plan_of(record, None, {}, (), ())
            tiers = tiers_after(bundle_plan, item.id_b64, added)
        yield record, item
        prev, prev_id = record, item.id_b64


def _plan_of(record, span, earlier, chain, rest) -> BundlePlan:  # type: ignore[no-untyped-def]
    return BundlePlan(
        dataset_id=record.dataset_id,
        head=record.head,
        prev_head=record.prev_head,
        prev_upload=record.prev_upload,
        drive=record.drive,
        drive_name=record.dataset_id,
        include_drive=False,
        add=(),
        keep={},
        unix_time=record.unix_time,
        app_version=record.app_version,
        full_manifest=record.full_manifest,
        deltas=record.delta_uploads or 0,
        span_uploads=span,
        earlier=earlier,
        skip_chain=chain,
        tiers_after=rest,
    )


def build_chain(n: int, *, tiered: bool, seed: str, wallet: Wallet | None = None) -> Chain:
    """A full upload and ``n`` delta uploads by ``wallet`` (default a fresh one; see the
    module docstring)."""
    wallet = wallet or generate_wallet()
    bundles: list[bytes] = []
    batch: list[DataItem] = []
    size = 0
    items = list(_records(wallet, n, tiered=tiered, seed=seed))
    record = items[-1][0]
    for _, item in items[:-1]:
        batch.append(item)
        size += len(item.data)
        if len(batch) == BUNDLE_ITEMS or size > BUNDLE_BYTES:
            bundles.append(encode_bundle(batch))
            batch, size = [], 0
    if batch:
        bundles.append(encode_bundle(batch))
    # The latest alone in the last block, as a publisher's latest upload is: GraphQL's
    # order inside one block is undefined, and readers page through the newest block.
    latest = items[-1][1].id_b64
    bundles.append(encode_bundle([items[-1][1]]))
    return Chain(
        tuple(bundles),
        wallet.address,
        record.dataset_id,
        latest,
        str(record.full_manifest or record.manifest_id),
        n,
    )


def post_chain(gateway: ArweaveGateway, chain: Chain, arlocal) -> None:  # type: ignore[no-untyped-def]
    """Post every bundle as an L1 transaction of a fresh funded wallet (inline when small,
    else by chunks, as the publisher does), mining a block after each."""
    poster = generate_wallet()
    arlocal.mint(poster.address, 10**18)
    for bundle in chain.bundles:
        tree = build_tree_from_stream(io.BytesIO(bundle), len(bundle))
        tx = sign_transaction(
            new_transaction(
                owner=poster.owner,
                reward=gateway.price(len(bundle)),
                last_tx=gateway.tx_anchor(),
                tags=BUNDLE_TAGS,
                data_size=len(bundle),
                data_root=tree.data_root,
            ),
            poster,
        )
        progress = ChunkProgress(tx.id_b64, 0, lambda p: None)
        gateway.upload_data(tx, tree, lambda b=bundle: io.BytesIO(b), progress)  # type: ignore[misc]
        arlocal.mine()  # one block per bundle: pages of one height stay few
