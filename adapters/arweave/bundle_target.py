"""Offline Arweave publishing: one signed ANS-104 bundle per publish, in a directory.

``--to bundle:OUT_DIR --wallet WALLET.json`` writes into ``OUT_DIR``:

- ``<record-id>.bundle``: the binary bundle (ANS-104) with the delta's data items, their
  ArFS metadata, the new ``refs/head`` revision, the drive and folders (first publish
  only), the path manifest, the discovery descriptor (JSON-LD, ``Content-Type:
  application/ld+json``, tagged ``ODF-Dataset-Id``, ``Title``, ``Description``; left out
  with the reason in the summary when it fails validation) and the upload record (see
  :mod:`.bundle_plan`). Post it as
  the data of one L1 transaction tagged ``Bundle-Format: binary``, ``Bundle-Version:
  2.0.0``, or hand it to a bundler. Bundles of successive publishes reference each other's
  items: post them all, oldest first;
- ``publish.json``: publish state (dataset, head, drive ids, per path the file id, data
  item and metadata item), the manifest and record ids, the bundle's size, the L1 tags
  and the price query to run (``GET /price/<bytes>``); it makes the next publish
  incremental.

Commit order as everywhere: nothing is written before every item is signed (so a bad
dataset, a corrupt file or tags over the limits leave ``OUT_DIR`` untouched); the bundle
is streamed to a temp file, fsynced and renamed; ``publish.json`` comes last. The wallet
is only used to sign: it is never copied, logged or written anywhere.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from odfweb3 import __version__
from odfweb3.descriptor import (
    build_descriptor,
    descriptor_tags,
    encode_descriptor,
    validate_descriptor,
)
from odfweb3.errors import ConflictError, FormatError
from odfweb3.odf.chain import ChainEntry, walk_chain
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.plan import PublishPlan
from odfweb3.publish.source import open_verified
from odfweb3.publish.state import PublishState
from odfweb3.publish.target import RemoteView, UploadResult

from .ans104 import BUNDLE_TAGS, write_bundle
from .arfs import DriveLayout, app_tags
from .bundle_plan import FileRef, PreviousUpload, plan_bundle, sign_bundle
from .tags import Tag
from .wallet import Wallet

__all__ = ["BundleTarget"]

Clock = Callable[[], datetime]


def _public_mode(fd: int) -> None:
    # mkstemp creates 0600; a bundle and its summary are public: honour the umask instead.
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)


class BundleTarget:
    """A directory receiving signed ANS-104 bundles and ``publish.json``."""

    def __init__(
        self,
        out_dir: Path,
        wallet: Wallet,
        *,
        app_version: str = __version__,
        drive_name: str | None = None,
        record_tags: Sequence[Tag] = (),
        clock: Clock = lambda: datetime.now(UTC),
        new_id: Callable[[], uuid.UUID] = uuid.uuid4,
        publisher: Mapping[str, Any] | None = None,
    ) -> None:
        self.out_dir = out_dir
        self.publisher = publisher
        self.name = f"bundle:{out_dir}"
        self.wallet = wallet
        self.app_version = app_version
        self.drive_name = drive_name
        self.record_tags = tuple(record_tags)
        self.clock = clock
        self.new_id = new_id
        self._written: list[str] = []

    def __repr__(self) -> str:
        return f"BundleTarget({self.out_dir}, owner={self.wallet.address})"

    @property
    def summary_path(self) -> Path:
        """The ``publish.json`` of this directory."""
        return self.out_dir / "publish.json"

    def _load(self) -> PublishState | None:
        try:
            raw = json.loads(self.summary_path.read_text("utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, json.JSONDecodeError) as exc:
            raise FormatError(
                f"{self.summary_path}: unreadable ({exc}); move it away to publish afresh"
            ) from None
        return PublishState.from_json(raw, str(self.summary_path))

    def inspect(self, dataset_id: str, local_head: bytes) -> RemoteView:
        """What the directory holds: the last ``publish.json``, if its bundles are all there."""
        state = self._load()
        if state is None:
            return RemoteView(head=None)
        if state.dataset_id != dataset_id:
            raise ConflictError(
                f"{self.out_dir}: holds dataset {state.dataset_id}, not {dataset_id}; "
                "use another output directory"
            )
        owner = state.extra.get("owner")
        if owner != self.wallet.address:
            raise ConflictError(
                f"{self.out_dir}: was published with wallet {owner}, not {self.wallet.address}; "
                "readers ignore uploads by other owners: use the same wallet or another directory"
            )
        bundles = [str(b) for b in state.extra.get("bundles", [])]
        missing = [b for b in bundles if not (self.out_dir / b).is_file()]
        if missing:
            note = f"{missing[0]} is gone from {self.out_dir}: writing every object again"
            return RemoteView(head=None, state=state, notes=(note,))
        paths = frozenset(p for p in state.objects if p != "refs/head")
        return RemoteView(head=state.head, has=paths, state=state)

    def _previous(self, view: RemoteView) -> PreviousUpload | None:
        state = view.state
        if state is None:
            return None
        where = str(self.summary_path)
        files = {
            path: FileRef.from_json(ref, f"{where}: {path}") for path, ref in state.objects.items()
        }
        return PreviousUpload(
            drive=DriveLayout.from_json(state.extra.get("drive"), f"{where}: drive"),
            files=files,
            record_id=state.record.get("recordId"),
            head=multihash_to_str(state.head) if state.head else None,
            complete=view.head is not None,  # None: a bundle is missing, only ids are kept
        )

    def upload(
        self,
        plan: PublishPlan,
        reader: DatasetReader,
        view: RemoteView,
        progress: Callable[[int], None],
    ) -> UploadResult:
        """Sign every item, then stream the bundle to a temp file renamed ``<record>.bundle``."""
        previous = self._previous(view)
        if plan.is_noop and previous is not None and previous.complete and view.state is not None:
            # Same head, nothing new: an upload would only repeat refs/head. Keep the last one.
            return UploadResult(
                locator=str(view.state.locator),
                objects=view.state.objects,
                extra=dict(view.state.extra, unchanged=True),
                summary={"bundle": None, "note": "nothing new: no bundle written"},
            )
        bundle_plan = plan_bundle(
            plan,
            previous,
            unix_time=int(self.clock().timestamp()),
            app_version=self.app_version,
            drive_name=self.drive_name,
            size_of=lambda o: reader.size_of(o.kind, o.hash),
            record_extra_tags=self.record_tags,
            new_id=self.new_id,
        )
        desc = _Descriptor(list(walk_chain(reader, plan.head)), self.publisher, self.app_version)
        signed = sign_bundle(
            bundle_plan,
            self.wallet,
            lambda o: open_verified(reader, o),
            progress=progress,
            after_manifest=desc.item if desc.valid else None,
        )
        descriptor = {"descriptorId": signed.extra_id} if signed.extra_id else desc.skipped
        self.out_dir.mkdir(parents=True, exist_ok=True)
        bundle_name = f"{signed.record_id}.bundle"
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".bundle", dir=self.out_dir)
        _public_mode(fd)
        try:
            with os.fdopen(fd, "wb") as f:
                size = write_bundle(f, signed.items)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.out_dir / bundle_name)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        prev_state = view.state
        bundles = [str(b) for b in (prev_state.extra.get("bundles", []) if prev_state else [])]
        bundles.append(bundle_name)
        self._written = [bundle_name]
        return UploadResult(
            locator=signed.manifest_id,
            objects={p: ref.to_json() for p, ref in sorted(signed.files.items())},
            extra={
                "drive": bundle_plan.drive.to_json(),
                "owner": self.wallet.address,
                "bundles": bundles,
                "recordId": signed.record_id,
                "prevUpload": bundle_plan.prev_upload,
                "unixTime": bundle_plan.unix_time,
                "bundle": bundle_name,
                "bundleBytes": size,
                "bundleItems": len(signed.items),
                **{k: v for k, v in descriptor.items() if k == "descriptorId"},
            },
            bytes_sent=size,
            summary={
                "bundle": bundle_name,
                "bundleItems": len(signed.items),
                "bundleBytes": size,
                "manifestId": signed.manifest_id,
                "recordId": signed.record_id,
                **descriptor,
            },
        )

    def commit(self, plan: PublishPlan, upload: UploadResult, view: RemoteView) -> PublishState:
        """The record travels inside the bundle; here only the state is assembled."""
        if upload.extra.get("unchanged") and view.state is not None:
            self._written = []
            return view.state
        extra = dict(upload.extra)
        return PublishState(
            dataset_id=plan.dataset_id,
            target=self.name,
            head=plan.head,
            locator=upload.locator,
            record={
                "recordId": extra["recordId"],
                "manifestId": upload.locator,
                "prevUpload": extra["prevUpload"],
                "unixTime": extra["unixTime"],
                "bundle": extra["bundle"],
                "bundleBytes": extra["bundleBytes"],
            },
            objects=upload.objects,
            extra=extra,
        )

    def save(self, state: PublishState) -> None:
        """Write ``publish.json`` last: the state plus what to do with the bundle."""
        size = int(state.record.get("bundleBytes", 0))
        l1_tags = [*BUNDLE_TAGS, *app_tags(self.app_version)]
        doc = state.to_json()
        doc.update(
            {
                "driveId": state.extra.get("drive", {}).get("driveId"),
                "manifestId": state.locator,
                "recordId": state.record.get("recordId"),
                "bundle": state.record.get("bundle"),
                "bundleBytes": size,
                "itemsByPath": {p: o.get("dataItemId") for p, o in sorted(state.objects.items())},
                "l1Tags": [{"name": n, "value": v} for n, v in (t.text() for t in l1_tags)],
                "priceQuery": f"GET /price/{size}",
                "filesWritten": list(self._written),
            }
        )
        data = (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode()
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=self.out_dir)
        _public_mode(fd)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.summary_path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise


class _Descriptor:
    """The discovery descriptor's data item: built once the manifest id (its ``ar://``) is known.

    A plain data item (not an ArFS entity) with ``Content-Type: application/ld+json`` and the
    tags of :func:`odfweb3.descriptor.descriptor_tags` (``ODF-Dataset-Id``, ``Title``,
    ``Description``…), placed after the manifest and before the record. Left out, with the
    reason in the summary, when the descriptor fails validation.
    """

    def __init__(
        self, entries: list[ChainEntry], publisher: Mapping[str, Any] | None, app_version: str
    ) -> None:
        self.entries = entries
        self.publisher = publisher
        self.app_version = app_version
        doc = build_descriptor(entries, publisher)
        errors = [p for p in validate_descriptor(doc) if p.severity == "error"]
        self.valid = not errors
        self.skipped = {"descriptorSkipped": "; ".join(p.message for p in errors)}

    def item(self, manifest_id: str) -> tuple[bytes, list[Tag]]:
        doc = build_descriptor(self.entries, self.publisher, {"ar": manifest_id})
        tags = [Tag.of(n, v) for n, v in descriptor_tags(doc)]
        return encode_descriptor(doc), [*tags, *app_tags(self.app_version)]
