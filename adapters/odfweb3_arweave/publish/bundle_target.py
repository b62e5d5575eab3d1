"""Offline Arweave publishing: one signed ANS-104 bundle per publish, in a directory.

``--to bundle:OUT_DIR --wallet WALLET.json`` writes into ``OUT_DIR``:

- ``<record-id>.bundle``: the binary bundle (ANS-104) with the delta's data items, their
  ArFS metadata, the new ``refs/head`` revision, the drive and folders (first publish
  only), the path manifest, the discovery descriptor (JSON-LD, ``Content-Type:
  application/ld+json``, tagged ``ODF-Dataset-Id``, ``Title``, ``Description``; left out
  with the reason in the summary when it fails validation), the Croissant and DCAT
  documents of the data files this publish added (tagged ``ODF-Discovery``; ids in
  ``publish.json`` as ``croissantId`` / ``dcatId``; :mod:`odfweb3.descriptor.published`)
  and the upload record (see
  :mod:`.bundle_plan`). Post it as
  the data of one L1 transaction tagged ``Bundle-Format: binary``, ``Bundle-Version:
  2.0.0``, or hand it to a bundler. Bundles of successive publishes reference each other's
  items: post them all, oldest first;
- encrypted publishes (``sealer``, docs/design.md, "Encryption"): every data item is ciphertext (see
  :mod:`.bundle_plan`), the key envelope is an item of the bundle named by the record, its id
  in ``publish.json`` as ``keyEnvelope``; no Croissant or DCAT document, and no descriptor
  but the summary the owner may allow (:mod:`odfweb3.descriptor.summary`, ``descriptorId``);
- ArFS private drives (``drive_password``, :mod:`.arfs_private`): every data and metadata
  item encrypted as ArDrive does (drive key from the wallet and the drive password), so
  ArDrive opens the drive with the same wallet and password; the path manifest and the
  upload record stay public; no descriptor, Croissant or DCAT document;
- ``index-<hash>.pack``: per path the file id, data item, metadata item and size, in the
  packs of :mod:`.file_index` (an update writes one small pack of the parts its paths fall
  in);
- ``publish.json``: publish state (dataset, head, drive ids, where the index parts are),
  the manifest and record ids, this bundle's paths and data items (``itemsAdded``; null
  past :data:`ITEMS_ADDED_MAX` paths, e.g. a first upload: the index has them), the
  bundle's size, the L1 tags and the price query to run (``GET /price/<bytes>``); it
  makes the next publish incremental. Written before the index (``objects`` listing every
  path, ``itemsByPath``), it is read and converted by the next publish.

Commit order as everywhere: nothing is written before every item is signed (so a bad
dataset, a corrupt file or tags over the limits leave ``OUT_DIR`` untouched); the bundle
is streamed to a temp file, fsynced and renamed, then the index pack; ``publish.json``
comes last, and packs it no longer names are removed after it. The wallet is only used
to sign: it is never copied, logged or written anywhere.

One publisher at a time, as ``car:DIR`` (the offline targets' one state home,
:mod:`odfweb3.publish.out_dir`): the executor's session holds ``OUT_DIR/.publish.lock``, and
``upload`` and ``commit`` refuse (ConflictError, exit 75) when ``publish.json`` is no longer
the one ``inspect`` read (a rival published meanwhile).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Final

from odfweb3 import __version__
from odfweb3.crypto.sealer import Sealer
from odfweb3.errors import ConflictError, IntegrityError, OdfWeb3Error
from odfweb3.odf.layout import DatasetReader
from odfweb3.publish.out_dir import OutDirHome
from odfweb3.publish.outdir_seal import OutDirSeal
from odfweb3.publish.plan import PublishPlan
from odfweb3.publish.state import RawState, load_summary_file
from odfweb3.publish.target import RemoteView, UploadResult
from odfweb3_arweave.formats.ans104 import BUNDLE_TAGS
from odfweb3_arweave.formats.arfs import app_tags
from odfweb3_arweave.formats.record import inputs_to_record
from odfweb3_arweave.formats.tags import Tag
from odfweb3_arweave.publish.bundle_plan import (
    FileRef,
    ManifestKind,
    PreviousUpload,
)
from odfweb3_arweave.publish.file_index import FileIndex, index_after
from odfweb3_arweave.publish.publish_bundle import (
    ArweaveView,
    manifest_chain,
    manifest_extra,
    previous_from_state,
    sealed_extra,
    sign_publish_bundle,
    tier_digests,
    upload_view,
    with_stored_tiers,
    write_bundle_file,
)
from odfweb3_arweave.publish.state import (
    ARWEAVE_CODEC,
    ArweaveExtra,
    ArweaveTyped,
    UploadFacts,
    parse_arweave_state,
)
from odfweb3_arweave.publish.tier_files import drop_tier_files
from odfweb3_arweave.read.bundle_replica import BundleDirReplica
from odfweb3_arweave.wallet import Wallet

__all__ = ["ITEMS_ADDED_MAX", "BundleTarget", "objects_of"]

Clock = Callable[[], datetime]
# publish.json lists the paths a bundle added up to this many.
ITEMS_ADDED_MAX: Final = 1000


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
        sealer: Sealer | None = None,
        drive_password: str | None = None,
        manifest: ManifestKind = "delta",
        seal: OutDirSeal | None = None,
    ) -> None:
        self.out_dir = out_dir
        # What this machine last wrote here (private state): the index and bundles a publish
        # reuses are checked against it, or re-read (:meth:`_check_reused`). None: unchecked
        # (a directory a test or tool builds by hand); the backend always passes one.
        self.seal = seal
        self.manifest = manifest
        self.sealer = sealer
        # ArFS private drive (arfs_private): only used to derive the drive key; never
        # stored, logged or shown in the repr.
        self._drive_password = drive_password
        self.publisher = publisher
        self.name = f"bundle:{out_dir}"
        self.wallet = wallet
        self.app_version = app_version
        self.drive_name = drive_name
        self.record_tags = tuple(record_tags)
        self.clock = clock
        self.new_id = new_id
        self._written: list[str] = []
        # this bundle's paths -> data items (itemsAdded; None: more than ITEMS_ADDED_MAX)
        self._added: dict[str, str] | None = {}
        self._unchanged = False  # upload found nothing new: commit and save write nothing
        self._raw: dict[str, Any] = {}  # publish.json as inspect read it
        # publish.json: read (its typed state parsed there, once), locked, compared and
        # written (serialized there, once): odfweb3.publish.out_dir
        self.home = OutDirHome(out_dir, ARWEAVE_CODEC, self._opened)
        self._refused: IntegrityError | None = None  # found by inspect, raised by upload

    def __repr__(self) -> str:
        return f"BundleTarget({self.out_dir}, owner={self.wallet.address})"

    @property
    def summary_path(self) -> Path:
        """The ``publish.json`` of this directory."""
        return self.out_dir / "publish.json"

    def _opened(self, state: ArweaveTyped) -> ArweaveTyped:
        """A state read from ``publish.json``, its file index attached (the paths are in
        OUT_DIR's packs, read when asked)."""
        index = state.extra.object_index
        if index is None:
            return state
        where = str(self.summary_path)
        return state.evolve(objects=FileIndex.from_json(self.out_dir, index, where))

    def session(self) -> AbstractContextManager[None]:
        """Hold ``OUT_DIR/.publish.lock`` for ``upload``, ``commit`` and ``save``
        (:meth:`odfweb3.publish.out_dir.OutDirHome.session`); a ConflictError when another
        live process is publishing into this directory."""
        return self.home.session(ended=self._ended)

    def _ended(self) -> None:
        self._unchanged = False

    def inspect(self, dataset_id: str, local_head: bytes) -> ArweaveView:
        """What the directory holds: the last ``publish.json``, if its bundles are all there."""
        state, self._raw = self.home.inspect()
        if state is None:
            return RemoteView(head=None)
        if state.dataset_id != dataset_id:
            raise ConflictError(
                f"{self.out_dir}: holds dataset {state.dataset_id}, not {dataset_id}; "
                "use another output directory"
            )
        typed = state
        owner = typed.extra.owner
        if owner != self.wallet.address:
            raise ConflictError(
                f"{self.out_dir}: was published with wallet {owner}, not {self.wallet.address}; "
                "readers ignore uploads by other owners: use the same wallet or another directory"
            )
        bundles = typed.extra.bundles or ()
        missing = [f"{b} is gone" for b in bundles if not (self.out_dir / b).is_file()]
        self._refused = None
        if not missing and self.seal is not None:
            doubt = self.seal.vouches_summary(self._raw)
            if doubt is None:
                # A bundle emptied or replaced: its items are sent again, as for a missing
                # one (publish.json, vouched for, still holds this machine's ids).
                missing = self.seal.changed_files(self.out_dir, bundles)
            else:
                # Raised by upload, before anything is signed (the encryption policy, which
                # looks at the view first, gets its say: a second machine over ciphertext).
                self._refused = self._reread(state, doubt)
        if missing:
            note = f"{self.out_dir}: {missing[0]}: writing every object again"
            return upload_view(RemoteView(head=None, state=state, notes=(note,)), self.sealer)
        # The state's paths as they are (refs/head among them is no dataset object): with
        # the file index a membership test reads one part.
        has = state.objects if isinstance(state.objects, FileIndex) else frozenset(state.objects)
        return upload_view(RemoteView(head=state.head, has=has, state=state), self.sealer)

    def _reread(self, state: ArweaveTyped, doubt: str) -> IntegrityError | None:
        """The refusal to build on a ``publish.json`` this machine did not write (a full
        manifest maps every path the file index names: signed over an item in no bundle,
        posted to Arweave, that is permanent), unless the directory, re-read and verified as
        a reader would (every item's signature, the records, the manifests), holds every
        revision the index names; None when it may be built on."""
        assert self.seal is not None
        try:
            replica = BundleDirReplica(self.out_dir, self.name, sealed_ok=True)
            for path, entry in state.objects.items():
                replica.check_file(path, str(entry["dataItemId"]), str(entry["metaItemId"]))
        except (OdfWeb3Error, KeyError, TypeError) as exc:
            return IntegrityError(
                f"{self.summary_path}: {doubt}, and the directory does not check out ({exc}); "
                "nothing signed: restore the directory, or publish to a new one"
            )
        self.seal.forget_files()  # checked as they are now: hashed again at save
        return None

    def _previous(self, view: ArweaveView) -> PreviousUpload | None:
        # complete=False: a bundle is missing, only the ids are kept
        return previous_from_state(
            view.state, str(self.summary_path), complete=view.head is not None
        )

    def upload(
        self,
        plan: PublishPlan,
        reader: DatasetReader,
        view: ArweaveView,
        progress: Callable[[int], None],
    ) -> UploadResult[ArweaveExtra]:
        """Sign every item, then stream the bundle to a temp file renamed ``<record>.bundle``.

        Raises:
            IntegrityError: :meth:`inspect` found a ``publish.json`` this machine did not
                write over a directory that does not check out (nothing is signed).
        """
        if self._refused is not None:
            raise self._refused
        self.home.check_unchanged()  # compare-and-set: nothing written over a rival's
        self._unchanged = False
        self._added = {}
        previous = self._previous(view)
        prev = view.state
        # A plain publish keeps the inputs map the last upload recorded.
        last_inputs = dict(prev.extra.inputs) if prev and prev.extra.inputs else None
        asked = plan.record_extra.get("inputs")
        inputs = inputs_to_record(asked, last_inputs, str(self.summary_path))
        if inputs and not asked:
            plan = dataclasses.replace(plan, record_extra={**plan.record_extra, "inputs": inputs})
        if plan.keep_record and view.state is not None:
            # Same head, nothing new: an upload would only repeat refs/head. Keep the last one.
            self._unchanged = True
            return UploadResult.kept(view.state, bundle=None, note="nothing new: no bundle written")
        prepared = sign_publish_bundle(
            plan,
            reader,
            previous,
            self.wallet,
            unix_time=int(self.clock().timestamp()),
            app_version=self.app_version,
            drive_name=self.drive_name,
            record_tags=self.record_tags,
            new_id=self.new_id,
            publisher=self.publisher,
            progress=progress,
            sealer=self.sealer,
            drive_password=self._drive_password,
            manifest=self.manifest,
        )
        bundle_plan, signed, descriptor = prepared.plan, prepared.signed, prepared.descriptor
        bundle_name = f"{signed.record_id}.bundle"
        _, size = write_bundle_file(signed.items, self.out_dir, bundle_name)
        index = self._write_index(view, bundle_plan.keep, signed.files, signed.added)
        bundles = [*(prev.extra.bundles or () if prev else ()), bundle_name]
        self._written = [bundle_name]
        # itemsAdded up to ITEMS_ADDED_MAX paths: past it (a first upload's every path)
        # neither listed nor held.
        added = signed.added
        self._added = (
            {p: added[p].data_item_id for p in sorted(added)}
            if len(added) <= ITEMS_ADDED_MAX
            else None
        )
        extra = ArweaveExtra(
            upload=UploadFacts(
                record_id=signed.record_id,
                prev_upload=bundle_plan.prev_upload,
                unix_time=bundle_plan.unix_time,
                bundle=bundle_name,
                bundle_bytes=size,
                bundle_items=len(signed.items),
            ),
            drive=bundle_plan.drive,
            owner=self.wallet.address,
            bundles=tuple(bundles),
            manifests=manifest_chain(prepared),
            descriptor_id=descriptor.get("descriptorId"),
            croissant_id=descriptor.get("croissantId"),
            dcat_id=descriptor.get("dcatId"),
            inputs=inputs or None,
            object_index=index.to_json(),
        )
        return UploadResult(
            locator=signed.manifest_id,
            objects=index,
            extra=sealed_extra(extra, self.sealer, descriptor),
            bytes_sent=size,
            summary={
                "bundle": bundle_name,
                "bundleItems": len(signed.items),
                "bundleBytes": size,
                "manifestId": signed.manifest_id,
                **manifest_extra(prepared),
                "recordId": signed.record_id,
                **descriptor,
            },
        )

    def _write_index(
        self,
        view: ArweaveView,
        keep: Mapping[str, Any],
        files: Mapping[str, FileRef],
        added: Mapping[str, Any],
    ) -> FileIndex:
        """The file index after this bundle, its pack written after the bundle, before
        ``publish.json`` (:func:`.file_index.index_after`)."""
        old = view.state.objects if view.state is not None else None
        return index_after(old, keep, files, added, partial(FileIndex.fresh, self.out_dir))

    def commit(
        self, plan: PublishPlan, upload: UploadResult[ArweaveExtra], view: ArweaveView
    ) -> ArweaveTyped:
        """The record travels inside the bundle; here only the state is assembled, once
        ``publish.json`` is still the one the plan was made on (compare-and-set)."""
        self.home.check_unchanged()
        if self._unchanged and view.state is not None:
            self._written = []
            self._added = {}
            return view.state
        sent = upload.extra
        up = sent.upload
        assert up is not None  # our own upload's facts
        record = UploadFacts(
            record_id=up.record_id,
            manifest_id=upload.locator,
            prev_upload=up.prev_upload,
            unix_time=up.unix_time,
            bundle=up.bundle,
            bundle_bytes=up.bundle_bytes,
        )
        return ArweaveTyped(
            dataset_id=plan.dataset_id,
            target=self.name,
            head=plan.head,
            locator=upload.locator,
            record=record,
            objects=upload.objects,
            extra=sent,
        )

    def save(self, state: ArweaveTyped) -> RawState:
        """Write ``publish.json`` last: the state plus what to do with the bundle.

        Nothing new (no bundle written, the state :meth:`inspect` read kept): nothing is
        written, so ``publish.json`` still names the last bundle and the paths it added,
        and a nothing-new publish leaves OUT_DIR byte for byte as it was.
        """
        if self._unchanged:
            return ARWEAVE_CODEC.serialize(state)  # as publish.json holds it, not written
        state = with_stored_tiers(state, self.out_dir)  # tier files before the state
        typed = state
        record = typed.record
        size = record.bundle_bytes or 0 if record is not None else 0
        l1_tags = [*BUNDLE_TAGS, *app_tags(self.app_version)]
        summary = {
            "driveId": typed.extra.drive.drive_id if typed.extra.drive else None,
            "manifestId": state.locator,
            "recordId": record.record_id if record is not None else None,
            "keyEnvelope": typed.extra.key_envelope,
            "bundle": record.bundle if record is not None else None,
            "bundleBytes": size,
            # This bundle's paths (the index and the manifests hold the rest);
            # null past ITEMS_ADDED_MAX (a first upload: every path, in the index anyway,
            # which the next publish would read whole here).
            "itemsAdded": dict(self._added) if self._added is not None else None,
            "l1Tags": [{"name": n, "value": v} for n, v in (t.text() for t in l1_tags)],
            "priceQuery": f"GET /price/{size}",
            "filesWritten": list(self._written),
        }
        # Up to 1,024 index refs: compact past 1,000 paths, as a state listing them was.
        saved = self.home.write(
            state,
            summary,
            large=len(state.objects) > 1000,
            seal=self.seal,
            files=typed.extra.bundles or (),
            written=self._written,
        )
        drop_tier_files(self.out_dir, tier_digests(state))
        return saved


def objects_of(out_dir: Path) -> dict[str, Mapping[str, Any]]:
    """Every path a ``bundle:DIR`` records (path -> its file revision's JSON), from its file
    index or, written by older versions, ``publish.json``'s ``objects`` (for tools and
    tests; reads every part)."""
    path = out_dir / "publish.json"
    state = load_summary_file(path)[0]
    if state is None:
        return {}
    index = parse_arweave_state(state, str(path)).extra.object_index
    if index is None:
        return dict(state.objects)
    return dict(FileIndex.from_json(out_dir, index, str(path)))
