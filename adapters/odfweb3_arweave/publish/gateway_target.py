"""Live Arweave publishing (``--to arweave``): one bundle per publish, posted through a gateway.

Commit order (docs/design.md, "Commit order"), as :func:`odfweb3.publish.execute.publish_dataset`
drives it:

- ``inspect``: the latest upload record of this dataset *by this wallet* (GraphQL, see
  :mod:`.resolve`). Saved state is used only when it names that record (or when its last
  upload is still pending and the gateway knows the transaction); otherwise the state is
  rebuilt from the network: the tiered walk gives the records (about log2(n) of them,
  :func:`.lookup.walk_records`), their ``earlier`` and ``added`` maps give every path's file
  revision and the records' binary counter, a GraphQL ``ids`` lookup says which items the
  gateway has. The planner then refuses a head that does not descend (``--force``).
- ``upload``: plan and sign the bundle (:mod:`.publish_bundle`, the code ``bundle:DIR``
  uses), spool it to a file under the state directory, ask ``/price/{bytes}`` (shown
  through ``on_price`` before anything is posted; ``max_cost`` refuses above a limit),
  check ``/wallet/{address}/balance``, sign an L1 transaction (``Bundle-Format: binary``,
  ``Bundle-Version: 2.0.0``, ``App-Name``, ``App-Version``, ``ODF-Upload-Record``) anchored
  at ``/tx_anchor``, and post it: inline when small, else header + chunks. A checkpoint
  (the signed transaction, the spool file, the next chunk) is saved before the first byte
  is posted, so an interrupted publish resumes the same transaction instead of paying
  twice.
- ``commit``: the record travels inside the bundle: once the gateway took the
  transaction the update is visible (pending until mined). Arweave cannot refuse a post,
  so a race with another publisher of the same wallet is settled after it:
  the post-check polls GraphQL (up to ``confirm_timeout`` seconds) until our record is
  in a block, then applies the readers' own rule (:func:`.resolve.competing_winner`);
  if another upload won, it raises :class:`~odfweb3.errors.ConflictError` and nothing
  is saved. Unsettled at the deadline, state records the upload as pending;
  ``odfweb3 status`` asks the gateway for confirmations (:func:`upload_statuses`).
- ``save``: publish state, written last through the target's state home
  (:class:`~odfweb3.publish.state_home.StateHome`: read once by ``inspect``, the lock the
  executor's session holds, compare-and-set at ``upload`` and ``commit``, the checkpoint,
  the packs), then the checkpoint and spool file go.

State: the per-path file revisions are not listed in the state file nor in the
checkpoint; they are in a :class:`.file_index.FileIndex` (the ``bundle:DIR`` form: content-
named packs, here in ``<state file>.index/`` beside the state), and the state's and the
checkpoint's ``extra.objectIndex`` name the parts. An update writes one small pack of the
parts its new paths fall in (temp file, fsync, rename) before the checkpoint that names it,
and reads only those parts; packs the saved state no longer names that were there before the
publish began are removed after the save. A state written before (``objects`` listing every
path) is converted by its next upload.

The wallet only signs; it is never written anywhere.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
import uuid
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO, ClassVar

from odfweb3 import __version__
from odfweb3.crypto.sealer import Sealer
from odfweb3.errors import (
    BackendError,
    BackendRejected,
    ConflictError,
    FormatError,
    UsageError,
)
from odfweb3.odf.layout import DatasetReader, object_relpath
from odfweb3.odf.multihash import multihash_from_str, multihash_to_str
from odfweb3.publish.pack_index import write_pack
from odfweb3.publish.plan import PublishPlan
from odfweb3.publish.state import PublishState, RawState, StateStore
from odfweb3.publish.state_home import StateHome, UploadCheckpoint
from odfweb3.publish.target import NoPhases, Phases, Price, UploadResult
from odfweb3_arweave.client.gateway import ArweaveGateway, ChunkProgress, TxStatus, format_winston
from odfweb3_arweave.formats.ans104 import BUNDLE_TAGS
from odfweb3_arweave.formats.arfs import app_tags
from odfweb3_arweave.formats.merkle import build_tree_from_stream
from odfweb3_arweave.formats.record import UploadRecord, inputs_to_record
from odfweb3_arweave.formats.tags import Tag
from odfweb3_arweave.formats.tx import (
    Transaction,
    from_json,
    new_transaction,
    sign_transaction,
    to_json_dict,
)
from odfweb3_arweave.publish.bundle_plan import (
    FileRef,
    ManifestKind,
    PreviousUpload,
    rebuilt_tiers,
)
from odfweb3_arweave.publish.file_index import FileIndex, index_after
from odfweb3_arweave.publish.publish_bundle import (
    ArweaveView,
    PreparedBundle,
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
    ManifestChain,
    UploadEntry,
    UploadFacts,
    parse_arweave_extra,
    parse_arweave_state,
    serialize_arweave_extra,
    serialize_upload_facts,
)
from odfweb3_arweave.publish.tier_files import drop_tier_files
from odfweb3_arweave.read.lookup import (
    Upload,
    collect_uploads,
    competing_winner,
    fetch_record,
    find_latest_upload,
    lookup_items,
    walk_records,
)
from odfweb3_arweave.wallet import Wallet

__all__ = ["GatewayFileIndex", "GatewayTarget", "PriceFn", "checkpoint_doc", "upload_statuses"]


PriceFn = Callable[[int, int], None]
ApproveFn = Callable[[Price | None], bool]
Clock = Callable[[], datetime]


class GatewayFileIndex(FileIndex):
    """The gateway target's file index: its packs are in ``<state file>.index/``."""

    remedy: ClassVar[str] = (
        "delete the publish state file beside this .index directory to rebuild it from the gateway"
    )


class GatewayTarget:
    """An Arweave gateway with a wallet, as a publish target.

    Args:
        gateway: the gateway client.
        wallet: the signing wallet (its address owns every upload).
        states: publish state store (``config.state_dir``).
        max_cost: refuse an upload whose fee (winston) is above this.
        on_price: called with ``(winston, bundle bytes)`` before anything is posted.
        approve: called with the :class:`~odfweb3.publish.target.Price` once it is known
            and within ``max_cost`` (None: a price that cannot be known), before anything
            is paid; False: nothing is posted (the CLI asks on a terminal; None: go on).
        app_version: ``App-Version`` tag.
        clock: time source for ``Unix-Time``.
        new_id: UUID source for ArFS ids.
        publisher: the discovery descriptor's publisher (config).
        sealer: encrypt every data item; the key envelope goes in the bundle
            (docs/design.md, "Encryption").
        drive_password: an ArFS private drive with this password (:mod:`.arfs_private`).
        confirm_timeout: seconds the post-check waits for our upload to be mined before
            leaving the race unsettled (0: look once, do not wait).
        race_timeout: seconds the post-check waits instead when it sees a rival (another
            upload naming the same previous upload with another head): a visible race is
            settled even when ``confirm_timeout`` is 0.
        poll_interval: seconds between two post-check looks.
        sleep: how to wait (injected for tests).
        monotonic: a monotonic clock in seconds (injected for tests).
        manifest: ``"delta"``: each upload's path manifest maps the paths it adds;
            ``"full"``: every path (``arweave.manifest: full``, a consolidation).
        progress: the publish's display, told each phase: signing (the objects' bytes),
            sending (the bytes of the transaction or items, from where a resumed upload
            stands), confirming (what is waited for).
    """

    def __init__(
        self,
        gateway: ArweaveGateway,
        wallet: Wallet,
        states: StateStore,
        *,
        max_cost: int | None = None,
        on_price: PriceFn = lambda winston, size: None,
        approve: ApproveFn | None = None,
        app_version: str = __version__,
        clock: Clock = lambda: datetime.now(UTC),
        new_id: Callable[[], uuid.UUID] = uuid.uuid4,
        publisher: Mapping[str, Any] | None = None,
        sealer: Sealer | None = None,
        drive_password: str | None = None,
        confirm_timeout: float = 0.0,
        race_timeout: float = 1800.0,
        poll_interval: float = 2.0,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        manifest: ManifestKind = "delta",
        progress: Phases | None = None,
    ) -> None:
        self.gateway = gateway
        self.progress: Phases = progress if progress is not None else NoPhases()
        self.manifest = manifest
        self.sealer = sealer
        # ArFS private drive (arfs_private): only used to derive the drive key; never
        # stored, logged or shown in the repr.
        self._drive_password = drive_password
        self.wallet = wallet
        self.states = states
        self.max_cost = max_cost
        self.on_price = on_price
        self.approve = approve
        self.app_version = app_version
        self.clock = clock
        self.new_id = new_id
        self.publisher = publisher
        self.name = f"arweave:{gateway.url}"
        # The state file: read once, locked, compared, written last (odfweb3.publish.state_home)
        # The state, typed from its read to its write (ARWEAVE_CODEC)
        self.home = StateHome(states, self.name, ARWEAVE_CODEC)
        self.confirm_timeout = confirm_timeout
        self.race_timeout = race_timeout
        self.poll_interval = poll_interval
        self.sleep = sleep
        self.monotonic = monotonic
        self._unchanged = False  # upload found nothing new: commit returns the saved state
        self._final: frozenset[str] = frozenset()  # listed uploads inspect saw final: folded

    def __repr__(self) -> str:
        return f"GatewayTarget({self.gateway.url}, owner={self.wallet.address})"

    # -- step 2 ----------------------------------------------------------------------

    def inspect(self, dataset_id: str, local_head: bytes) -> ArweaveView:
        """The latest upload of ``dataset_id`` by this wallet; state checked against it."""
        notes: list[str] = []
        state = self._load(dataset_id)
        owner = state.extra.owner if state is not None else None
        if state is not None and owner != self.wallet.address:
            notes.append(
                f"saved state is for wallet {owner}: ignored, reading the "
                f"uploads of {self.wallet.address} from {self.gateway.url}"
            )
            state = None
        # The publisher's own look (verify=False): a pending record of ours may not be served
        # yet; a forged one can only make it rebuild (walk_records verifies) or refuse.
        latest = find_latest_upload(self.gateway, self.wallet.address, dataset_id, verify=False)
        self._final = frozenset()
        if state is not None and self._state_is_current(state, latest):
            self._final = self._final_uploads(state, latest)
            assert state.head is not None
            # With the file index a membership test reads one part; refs/head
            # among the paths is no dataset object.
            has = (
                state.objects
                if isinstance(state.objects, FileIndex)
                else frozenset(p for p in state.objects if p != "refs/head")
            )
            view = ArweaveView(head=state.head, has=has, state=state, notes=tuple(notes))
            return upload_view(view, self.sealer)
        if latest is None:
            if state is not None:
                notes.append(
                    f"{self.gateway.url} knows none of the saved uploads: publishing everything"
                )
            return ArweaveView(head=None, notes=tuple(notes))
        if state is not None:
            notes.append("saved state is not the latest upload: rebuilt from the network")
        else:
            notes.append(f"no saved state: rebuilt from the uploads on {self.gateway.url}")
        rebuilt, paths = self._rebuild(dataset_id, latest)
        # The target's chain holds our head: its block is in the dataset's layout.
        ahead = (
            latest.facts.head != multihash_to_str(local_head)
            and object_relpath("block", local_head) in paths
        )
        has = frozenset(p for p in rebuilt.objects if p != "refs/head")
        view = ArweaveView(
            head=multihash_from_str(latest.facts.head),
            has=has,
            ahead=ahead,
            state=rebuilt,
            notes=tuple(notes),
        )
        return upload_view(view, self.sealer)

    # -- the state file and its file index -----------------------------------

    def index_dir(self, dataset_id: str) -> Path:
        """Where this target keeps the dataset's file index packs: beside its state file,
        ``<state>.index/``."""
        return self.home.index_dir(dataset_id)

    def session(self) -> AbstractContextManager[None]:
        """The state home's lock of (dataset, this target), held by the executor around
        upload, commit and save (:class:`~odfweb3.publish.target.SessionTarget`)."""
        return self.home.session()

    def _index(self, dataset_id: str, raw: Mapping[str, Any], where: str) -> GatewayFileIndex:
        return GatewayFileIndex.from_json(self.index_dir(dataset_id), raw, where)

    def _load(self, dataset_id: str) -> ArweaveTyped | None:
        """The saved state, read and parsed once per publish (:meth:`StateHome.inspect`);
        its ``objects`` are the file index (read part by part) when the state has one."""
        state = self.home.inspect(dataset_id)
        if state is None:
            return None
        index = state.extra.object_index
        if index is not None:
            where = str(self.home.path(dataset_id))
            state = state.evolve(objects=self._index(dataset_id, index, where))
        return state

    def _write_index(
        self, dataset_id: str, view: ArweaveView, prepared: PreparedBundle
    ) -> FileIndex:
        """The file index after this bundle, its pack written before the checkpoint naming
        it (:func:`.file_index.index_after`)."""
        signed = prepared.signed
        old = view.state.objects if view.state is not None else None
        fresh = partial(GatewayFileIndex.fresh, self.index_dir(dataset_id))
        return index_after(old, prepared.plan.keep, signed.files, signed.added, fresh)

    def _indexed(self, state: ArweaveTyped) -> ArweaveTyped:
        """A state listing every path (rebuilt from the network, or an unchanged publish
        over a state written before the index) with its paths moved to one pack, written
        before the state naming it; as it was when a path is not of the dataset layout."""
        try:
            index, pack = GatewayFileIndex.of_objects(
                self.index_dir(state.dataset_id), state.objects
            )
        except FormatError:
            return state
        index.out_dir.mkdir(parents=True, exist_ok=True)
        write_pack(index.out_dir, pack)
        extra = dataclasses.replace(state.extra, object_index=index.to_json())
        return state.evolve(objects=index, extra=extra)

    def _state_is_current(self, state: ArweaveTyped, latest: Upload | None) -> bool:
        record = state.record
        if record is None:
            return False
        if latest is not None and latest.id == record.record_id:
            return True
        # Our last upload may not be indexed yet: trust it while the gateway has its tx
        # and the network's latest is the upload it replaced.
        prev = record.prev_upload
        if (latest is None and prev is None) or (latest is not None and latest.id == prev):
            tx_id = record.bundle_tx_id
            if tx_id and self.gateway.tx_status(tx_id).state != "not_found":
                return True
        return False

    def _final_uploads(self, state: ArweaveTyped, latest: Upload | None) -> frozenset[str]:
        """The uploads the saved state lists that are final: the last one when the gateway's
        latest is it, in a block, or the state says confirmed/finalized (the bundler's
        FINALIZED); any other listed one when GraphQL shows it in a block (one request per
        100, asked only when the list holds more than the last upload)."""
        typed = state
        record = typed.record
        final: set[str] = set()
        if record is not None and (
            record.status in ("confirmed", "finalized")
            or (latest is not None and latest.id == record.record_id and not latest.pending)
        ):
            final.add(record.record_id)
        others = [
            u.record_id
            for u in typed.extra.uploads or ()
            if record is None or u.record_id != record.record_id
        ]
        if others:
            try:
                nodes = lookup_items(self.gateway, others)
            except BackendError:
                nodes = {}  # not known final: kept listed, asked again next time
            final |= {
                i
                for i, node in nodes.items()
                if isinstance(node.get("block"), dict) and node["block"].get("height") is not None
            }
        return frozenset(final)

    def _rebuild(self, dataset_id: str, latest: Upload) -> tuple[ArweaveTyped, frozenset[str]]:
        """The state the network's records give (and every path they name): the tiered
        walk (:func:`.lookup.walk_records`, about log2(n) records for n uploads, each
        verified), their ``earlier`` and ``added`` maps oldest first, one GraphQL ``ids``
        lookup per 100 data items (which the gateway has, and their sizes), and the records'
        binary counter (:func:`.bundle_plan.rebuilt_tiers`), so the next record keeps its tier."""
        pairs = walk_records(self.gateway, latest, fetch_record(self.gateway, latest))
        records = [r for _, r in pairs]
        added: dict[str, tuple[str, str, str]] = {}
        for rec in records:
            for path, a in [*sorted(rec.earlier.items()), *sorted(rec.added.items())]:
                added[path] = (a.file_id, a.data_item_id, a.meta_item_id)
        known = lookup_items(self.gateway, [v[1] for v in added.values()])
        objects: dict[str, dict[str, Any]] = {}
        for path, (file_id, data_id, meta_id) in sorted(added.items()):
            node = known.get(data_id)
            if node is None:
                continue  # the gateway lacks it: it will be sent again
            size = int((node.get("data") or {}).get("size") or 0)
            objects[path] = FileRef(file_id, data_id, meta_id, size).to_json()
        last = records[-1]
        state = ArweaveTyped(
            dataset_id=dataset_id,
            target=self.name,
            head=multihash_from_str(last.head),
            locator=last.manifest_id,
            objects=objects,
            record=UploadFacts(
                record_id=latest.id,
                manifest_id=last.manifest_id,
                prev_upload=last.prev_upload,
                unix_time=last.unix_time,
                status="pending" if latest.pending else "confirmed",
            ),
            extra=ArweaveExtra(
                drive=last.drive,
                owner=self.wallet.address,
                # The uploads the walk verified (not every one: the tiers skip the rest).
                uploads=tuple(
                    UploadEntry(u.id, head=u.facts.head, manifest_id=u.facts.manifest_id)
                    for u, _ in pairs
                ),
                rebuilt=True,
                manifests=_manifest_chain(pairs),
                encrypted=True if last.key_envelope else None,
                key_envelope=last.key_envelope or None,
                # The next plain publish keeps the last record's inputs map.
                inputs=dict(last.inputs) if last.inputs else None,
            ),
        )
        return state, frozenset(added)

    # -- steps 3-5 -------------------------------------------------------------------

    def _checkpoint(self, dataset_id: str) -> UploadCheckpoint:
        return self.home.checkpoint(dataset_id)

    @property
    def spool_dir(self) -> Path:
        """Where bundles wait until their upload is confirmed by the gateway."""
        return self.states.root / "arweave-spool"

    def upload(
        self,
        plan: PublishPlan,
        reader: DatasetReader,
        view: ArweaveView,
        progress: Callable[[int], None],
    ) -> UploadResult[ArweaveExtra]:
        """Sign, price, check the balance, post (see the module docstring).

        The steps, in order: decide the record's inputs map and whether anything is new
        (:meth:`_record_inputs`, :meth:`_unchanged`), resume a checkpointed upload, pin
        what must not change before signing (:meth:`_before_signing`), sign and spool the
        bundle (:meth:`_sign_bundle`), pay for it (:meth:`_pay`: price it, check the
        balance, sign the L1 transaction), checkpoint (:func:`checkpoint_doc`, pure) and
        send (:meth:`_send`). ``--to turbo`` is this with its own ``_before_signing``,
        ``_pay`` and ``_send``.
        """
        self._unchanged = False
        self.home.check_unchanged()  # another publish on this machine moved it: nothing sent
        where = str(self.home.path(plan.dataset_id))
        previous = previous_from_state(view.state, where)
        prev_id = previous.record_id if previous else None
        inputs = self._record_inputs(plan, view, where)
        if plan.keep_record and view.state is not None:
            self._unchanged = True
            return UploadResult.kept(view.state, note=self.nothing_sent)
        checkpoint = self._load_checkpoint(plan, prev_id)
        if checkpoint is not None:
            return self._send(plan.dataset_id, checkpoint, resumed=True)
        if inputs and not plan.record_extra.get("inputs"):
            inputs = self._latest_inputs(inputs)
            plan = dataclasses.replace(plan, record_extra={**plan.record_extra, "inputs": inputs})
        pinned = self._before_signing(view)  # a changed key sends nothing
        prepared = self._sign_bundle(plan, reader, previous, progress)
        signed = prepared.signed
        sizes = signed.items.sizes()
        spool, size = write_bundle_file(signed.items, self.spool_dir, f"{signed.record_id}.bundle")
        try:
            self._check_latest(plan.dataset_id, prev_id, view)
            tx, reward = self._pay(spool, sizes, size, signed.record_id)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                spool.unlink()
            raise
        index = self._write_index(plan.dataset_id, view, prepared)
        checkpoint = checkpoint_doc(
            prepared,
            view,
            tx,
            spool=spool.name,
            size=size,
            reward=reward,
            owner=self.wallet.address,
            sealer=self.sealer,
            inputs=inputs,
            object_index=index.to_json(),
            fold=self._final,
        )
        checkpoint.update(pinned)
        self._checkpoint(plan.dataset_id).write(checkpoint)
        return self._send(plan.dataset_id, checkpoint, resumed=False)

    #: The summary's note when nothing new was sent.
    nothing_sent: ClassVar[str] = "nothing new: no transaction posted"

    def _before_signing(self, view: ArweaveView) -> dict[str, Any]:
        """What must be fixed before anything is signed, as checkpoint fields (none here)."""
        return {}

    def _pay(
        self, spool: Path, sizes: list[int], size: int, record_id: str
    ) -> tuple[Transaction | None, int]:
        """Price the spooled bundle, hold it to the limits and the balance, sign the L1
        transaction carrying it: ``(transaction, fee in winston)``."""
        reward = self._price(size, len(sizes))
        return self._sign_transaction(spool, size, reward, record_id), reward

    def _send(
        self, dataset_id: str, checkpoint: dict[str, Any], *, resumed: bool
    ) -> UploadResult[ArweaveExtra]:
        """Post what the checkpoint holds (:meth:`_post`: the transaction and its chunks)."""
        return self._post(dataset_id, checkpoint, resumed=resumed)

    def _last_inputs(self, view: ArweaveView) -> dict[str, str] | None:
        """The inputs map the last upload recorded (None: none)."""
        last = view.state.extra.inputs if view.state is not None else None
        return dict(last) if last else None

    def _record_inputs(
        self, plan: PublishPlan, view: ArweaveView, where: str
    ) -> dict[str, str] | None:
        """The inputs map the new record carries (a plain publish keeps the last)."""
        return inputs_to_record(plan.record_extra.get("inputs"), self._last_inputs(view), where)

    def _sign_bundle(
        self,
        plan: PublishPlan,
        reader: DatasetReader,
        previous: PreviousUpload | None,
        progress: Callable[[int], None],
    ) -> PreparedBundle:
        """Plan and sign the bundle (:mod:`.publish_bundle`, shared with ``bundle:DIR``)."""
        self.progress.phase(f"signing {_count(len(plan.send), 'object')}", plan.send_bytes)
        return sign_publish_bundle(
            plan,
            reader,
            previous,
            self.wallet,
            unix_time=int(self.clock().timestamp()),
            app_version=self.app_version,
            publisher=self.publisher,
            new_id=self.new_id,
            progress=progress,
            sealer=self.sealer,
            drive_password=self._drive_password,
            manifest=self.manifest,
        )

    def quote(self, plan: PublishPlan, reader: DatasetReader, view: ArweaveView) -> Price | None:
        """``--dry-run``: the fee of the bundle :meth:`upload` would post for ``plan``.

        The bundle is signed as :meth:`upload` signs it (its size is what is charged) but
        kept in the item spool only, which goes: nothing is written, nothing posted. None
        when nothing is new.
        """
        prepared = self._prepare_quote(plan, reader, view)
        if prepared is None:
            return None
        items = prepared.signed.items
        try:
            size, count = items.bundle_size(), len(items)
        finally:
            items.close()
        return Price(
            self.gateway.price(size), "winston", size, count, f"{self.gateway.url}/price/{size}"
        )

    def _prepare_quote(
        self, plan: PublishPlan, reader: DatasetReader, view: ArweaveView
    ) -> PreparedBundle | None:
        """The bundle :meth:`upload` would sign for ``plan`` (None: nothing new)."""
        where = str(self.home.path(plan.dataset_id))
        previous = previous_from_state(view.state, where)
        inputs = self._record_inputs(plan, view, where)
        if plan.keep_record:
            return None
        if inputs and not plan.record_extra.get("inputs"):
            inputs = self._latest_inputs(inputs)
            plan = dataclasses.replace(plan, record_extra={**plan.record_extra, "inputs": inputs})
        return self._sign_bundle(plan, reader, previous, lambda n: None)

    def _hold_to(self, price: Price) -> None:
        """``max_cost`` and ``approve``: refuse a price above the limit or not approved.

        Raises:
            UsageError: above ``max_cost``, or ``approve`` said no; nothing was posted.
        """
        if self.max_cost is not None and price.amount > self.max_cost:
            raise UsageError(
                f"--max-cost: the upload costs {format_winston(price.amount, price.unit)} for "
                f"{price.size} bytes, above the limit of "
                f"{format_winston(self.max_cost, price.unit)}; nothing was posted"
            )
        if self.approve is not None and not self.approve(price):
            raise UsageError(
                f"the upload's price ({format_winston(price.amount, price.unit)}) was not "
                "accepted; nothing was posted (--yes pays without asking)"
            )

    def _price(self, size: int, count: int) -> int:
        """The fee for ``size`` bytes, shown, held to ``max_cost``, ``approve`` and to the
        wallet's balance."""
        reward = self.gateway.price(size)
        self.on_price(reward, size)
        self._hold_to(Price(reward, "winston", size, count, f"{self.gateway.url}/price/{size}"))
        balance = self.gateway.balance(self.wallet.address)
        if balance < reward:
            raise BackendRejected(
                f"insufficient balance: wallet {self.wallet.address} has "
                f"{format_winston(balance)} on {self.gateway.url}, the upload costs "
                f"{format_winston(reward)}; fund the wallet (nothing was posted)",
                410,
                "insufficient balance",
            )
        return reward

    def _sign_transaction(self, spool: Path, size: int, reward: int, record_id: str) -> Transaction:
        """The L1 transaction carrying the spooled bundle, anchored at ``/tx_anchor``."""
        with open(spool, "rb") as f:
            tree = build_tree_from_stream(f, size)
        tags = [
            *BUNDLE_TAGS,
            *app_tags(self.app_version),
            Tag.of("ODF-Upload-Record", record_id),
        ]
        return sign_transaction(
            new_transaction(
                owner=self.wallet.owner,
                reward=reward,
                last_tx=self.gateway.tx_anchor(),
                tags=tags,
                data_size=size,
                data_root=tree.data_root,
            ),
            self.wallet,
        )

    def _latest_inputs(self, carried: Mapping[str, str]) -> dict[str, str]:
        """A carried inputs map, each input pointed at its latest upload by this wallet.

        Why: ``ar://RECORD`` names one upload, and a derivative republished with new
        blocks may consume input blocks only a later upload of that input holds. Inputs
        of ``--with-inputs`` go to this gateway with this wallet, so their latest upload
        (the readers' rule, :func:`.resolve.find_latest_upload`) is where they live now;
        an input with no upload by this wallet keeps its locator.
        """
        out: dict[str, str] = {}
        for did, locator in carried.items():
            latest = find_latest_upload(self.gateway, self.wallet.address, did)
            out[did] = f"ar://{latest.id}" if latest is not None else locator
        return out

    def _check_latest(self, dataset_id: str, expected: str | None, view: ArweaveView) -> None:
        """Re-read the latest record just before posting: another publisher's is a conflict.

        Our own last upload may not be indexed yet: the record it replaced is accepted too.
        (Two posts that pass this check at the same moment make a fork: :meth:`commit`'s
        post-check settles it with the readers' rule; see docs/reliability.md.)
        """
        latest = find_latest_upload(self.gateway, self.wallet.address, dataset_id, verify=False)
        ours = {expected}
        record = view.state.record if view.state is not None else None
        if record is not None:
            ours.add(record.prev_upload)
        if latest is not None and latest.id not in ours:
            raise ConflictError(
                f"{self.gateway.url}: another publisher posted upload {latest.id} (head "
                f"{latest.facts.head}) for {dataset_id} while we prepared ours; nothing was "
                "posted: run publish again"
            )

    def _post(
        self, dataset_id: str, checkpoint: dict[str, Any], *, resumed: bool
    ) -> UploadResult[ArweaveExtra]:
        tx = from_json(checkpoint["tx"])
        spool = self.spool_dir / str(checkpoint["spool"])

        def open_spool() -> BinaryIO:
            return open(spool, "rb")

        with open_spool() as f:
            tree = build_tree_from_stream(f, tx.data_size)
        if tree.data_root != tx.data_root:
            raise FormatError(f"{spool}: spooled bundle changed; delete it and publish again")

        def save(p: ChunkProgress) -> None:
            checkpoint["nextChunk"] = p.next_chunk
            self._checkpoint(dataset_id).write(checkpoint)

        start = int(checkpoint.get("nextChunk", 0))
        progress = ChunkProgress(tx.id_b64, start, save)
        sent = sum(c.size for c in tree.upload_chunks[:start])
        self.progress.phase(f"sending transaction {tx.id_b64}", tx.data_size, done=sent)
        self.gateway.upload_data(tx, tree, open_spool, progress, self.progress.advance)
        result = checkpoint["result"]
        summary = dict(result["summary"])
        if resumed:
            summary["resumed"] = f"transaction {tx.id_b64} from chunk {start}"
        where = str(self._checkpoint(dataset_id).path)
        # The checkpoint's extra, parsed once where it is read.
        extra = parse_arweave_extra(result["extra"], where)
        index = extra.object_index
        objects: Mapping[str, Mapping[str, Any]] = (
            self._index(dataset_id, index, where) if index is not None else dict(result["objects"])
        )
        return UploadResult(
            locator=str(result["locator"]),
            objects=objects,
            extra=extra,
            bytes_sent=int(tx.data_size),
            summary=summary,
        )

    def _load_checkpoint(self, plan: PublishPlan, prev_upload: str | None) -> dict[str, Any] | None:
        """The checkpoint of this upload to resume (same head, same previous upload, its
        spool file there); any other is dropped, with its spool file."""
        try:
            doc = self._checkpoint(plan.dataset_id).read()
        except FormatError:
            doc = {}  # half written or damaged: dropped
        if doc is None:
            return None
        if (
            doc.get("head") == multihash_to_str(plan.head)
            and doc.get("prevUpload") == prev_upload
            and (self.spool_dir / str(doc.get("spool"))).is_file()
        ):
            return doc
        self._drop_checkpoint(plan.dataset_id, doc)
        return None

    def _drop_checkpoint(self, dataset_id: str, doc: dict[str, Any] | None) -> None:
        if doc is not None and isinstance(doc.get("spool"), str):
            with contextlib.suppress(FileNotFoundError):
                (self.spool_dir / doc["spool"]).unlink()
        self._checkpoint(dataset_id).clear()

    # -- steps 6-7 -------------------------------------------------------------------

    def commit(
        self, plan: PublishPlan, upload: UploadResult[ArweaveExtra], view: ArweaveView
    ) -> ArweaveTyped:
        """The record is inside the posted bundle: assemble the (pending) state."""
        if self._unchanged and view.state is not None:
            later = self.home.settled_now
            # What a look at the network settled since inspect (Turbo's ``status``: the
            # bundler's FINALIZED) is kept, not written over with the state inspect read.
            return view.state if later is None else view.state.evolve(record=later.record)
        self.home.check_unchanged()  # the state is still the one this upload builds on
        where = self._checkpoint(plan.dataset_id).path
        sent = upload.extra
        up = sent.upload
        if up is None:
            raise FormatError(f"{where}: the upload names no record; delete it and publish again")
        settled = self._post_check(plan.dataset_id, up.record_id)
        record = UploadFacts(
            record_id=up.record_id,
            manifest_id=upload.locator,
            bundle_tx_id=up.bundle_tx_id,
            prev_upload=up.prev_upload,
            unix_time=up.unix_time,
            reward=up.reward,
            status="pending",
        )
        extra = dataclasses.replace(sent, race_check="won" if settled else "unsettled")
        return ArweaveTyped(
            dataset_id=plan.dataset_id,
            target=self.name,
            head=plan.head,
            locator=upload.locator,
            record=record,
            objects=upload.objects,
            extra=extra,
        )

    def _post_check(self, dataset_id: str, record_id: str) -> bool:
        """Settle a race after posting; True when ours stands, False if unsettled.

        The verdict is final once our record is in a block (by the readers' rule a rival
        mined later or still pending cannot beat it any more) and two looks in a row
        agree (a rival in the same block may be indexed a moment later). Ours stands if
        :func:`.resolve.competing_winner` names no other upload: the readers' rule, so
        the writer and every reader agree.

        Raises:
            ConflictError: another upload of this wallet won; ours is not recorded.
        """
        start = self.monotonic()
        deadline = start + self.confirm_timeout
        last: tuple[str | None] | None = None
        if self.confirm_timeout > 0:
            self.progress.phase(
                f"confirming: waiting for record {record_id} to be in a block on "
                f"{self.gateway.url}",
                None,
                unit="time",
            )
        while True:
            self.progress.advance(0)
            try:
                uploads = collect_uploads(self.gateway, self.wallet.address, dataset_id)
            except BackendError:
                # Ours is posted already: a failed look leaves the race unsettled (the
                # next publish's inspect applies the same rule); it must not undo a post.
                uploads = []
            ours = next((u for u in uploads if u.id == record_id), None)
            if ours is not None and any(
                u.id != ours.id
                and u.facts.prev_upload == ours.facts.prev_upload
                and u.facts.head != ours.facts.head
                for u in uploads
            ):
                # A rival is visible: settle the race whatever confirm_timeout says.
                deadline = max(deadline, start + self.race_timeout)
            if ours is None or ours.pending:
                last = None
            else:
                winner = competing_winner(uploads, ours)
                verdict = (winner.id if winner else None,)
                if verdict == last:
                    if winner is None:
                        return True
                    self._drop_checkpoint(dataset_id, self._read_checkpoint(dataset_id))
                    raise ConflictError(
                        f"{self.gateway.url}: upload {record_id} of {dataset_id} lost a race to "
                        f"upload {winner.id} (head {winner.facts.head}) by the same wallet, "
                        "which readers pick; ours was not recorded: pull and merge, or run "
                        "publish again (it builds on the winner if your head descends from it)"
                    )
                last = verdict
            if self.monotonic() >= deadline:
                return False
            self.sleep(self.poll_interval)

    def _read_checkpoint(self, dataset_id: str) -> dict[str, Any] | None:
        """The checkpoint, or None (none, or unreadable: then only the file goes)."""
        with contextlib.suppress(FormatError):
            return self._checkpoint(dataset_id).read()
        return None

    def save(self, state: ArweaveTyped) -> RawState:
        """Save the state (serialized once, by the state home, which drops the packs it no
        longer names), then drop the checkpoint, the spooled bundle and the tier files the
        state no longer names."""
        doc = self._read_checkpoint(state.dataset_id)
        if not isinstance(state.objects, FileIndex) and state.objects:
            state = self._indexed(state)
        side = self.index_dir(state.dataset_id)
        state = with_stored_tiers(state, side)  # tier files before the state
        saved = self.home.write(state)  # the paths stay in the packs (extra.objectIndex)
        self._drop_checkpoint(state.dataset_id, doc)
        drop_tier_files(side, tier_digests(state), older_than=self.home.started)
        return saved


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _manifest_chain(pairs: list[tuple[Upload, UploadRecord]]) -> ManifestChain:
    """The manifest chain of rebuilt state: the newest upload without
    ``ODF-Full-Manifest``, the delta uploads after it (the latest record's count; records
    without one were all walked) and the records' counter (none found: the next is full)."""
    for walked, (_, record) in enumerate(reversed(pairs)):
        if not record.delta:
            latest = pairs[-1][1]
            deltas = latest.delta_uploads if latest.delta_uploads is not None else walked
            return ManifestChain(
                record.manifest_id, deltas, rebuilt_tiers([(u.id, r) for u, r in pairs[::-1]])
            )
    return ManifestChain(None, 0)


def checkpoint_doc(
    prepared: PreparedBundle,
    view: ArweaveView,
    tx: Transaction | None,
    *,
    spool: str,
    size: int,
    reward: int,
    owner: str,
    sealer: Sealer | None,
    inputs: Mapping[str, str] | None,
    object_index: Mapping[str, Any] | None = None,
    fold: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """The upload checkpoint (pure): saved before the first byte is posted, so a resumed
    publish posts the same transaction; its ``result`` is the :class:`UploadResult`.

    ``extra.uploads`` is the previous state's plus this upload, less the uploads in ``fold``
    (seen final: in a block, or FINALIZED by the bundler), which ``extra.folded`` counts:
    nothing later needs them (the records' tiers name them, a second machine's rebuild walks
    those), so the state stays the same size however many uploads there were, and ``status``
    asks only about uploads not known final.

    With ``object_index`` (the file index's refs, its packs written already) the
    paths are not listed (``objects`` empty) and ``extra.objectIndex`` names the parts.
    ``tx`` is None when no L1 transaction carries the items (a bundler posts them:
    :mod:`.turbo_target`)."""
    signed, bplan = prepared.signed, prepared.plan
    tx_id = tx.id_b64 if tx is not None else None
    prev = view.state.extra if view.state is not None else None
    prev_uploads = prev.uploads if prev is not None else None
    new_upload = UploadEntry(signed.record_id, bplan.head, signed.manifest_id, tx_id)
    folded = prev.folded if prev is not None else None
    if fold and prev_uploads:
        kept = tuple(u for u in prev_uploads if u.record_id not in fold)
        folded, prev_uploads = (folded or 0) + len(prev_uploads) - len(kept), kept
    extra = ArweaveExtra(
        upload=UploadFacts(
            record_id=signed.record_id,
            prev_upload=bplan.prev_upload,
            unix_time=bplan.unix_time,
            bundle_tx_id=tx_id,
            bundle_bytes=size,
            bundle_items=len(signed.items),
            reward=reward,
        ),
        drive=bplan.drive,
        owner=owner,
        uploads=(*(prev_uploads or ()), new_upload),
        folded=folded,
        manifests=manifest_chain(prepared),
        descriptor_id=prepared.descriptor.get("descriptorId"),
        croissant_id=prepared.descriptor.get("croissantId"),
        dcat_id=prepared.descriptor.get("dcatId"),
        inputs=dict(inputs) if inputs else None,
        object_index=object_index,
    )
    objects = (
        {}
        if object_index is not None
        else {p: r.to_json() for p, r in sorted(signed.files.items())}
    )
    return {
        "head": bplan.head,
        "prevUpload": bplan.prev_upload,
        "tx": to_json_dict(tx, include_data=False) if tx is not None else None,
        "spool": spool,
        "nextChunk": 0,
        "result": {
            "locator": signed.manifest_id,
            "objects": objects,
            "extra": serialize_arweave_extra(sealed_extra(extra, sealer, prepared.descriptor)),
            "summary": {
                # cost: winston, an integer (--json numbers are numbers; text mode adds the AR)
                **({"transaction": tx_id, "cost": reward} if tx_id else {}),
                "bundleItems": len(signed.items),
                "bundleBytes": size,
                "manifestId": signed.manifest_id,
                **manifest_extra(prepared),
                "recordId": signed.record_id,
                **prepared.descriptor,
            },
        },
    }


def upload_statuses(gateway: ArweaveGateway, state: PublishState) -> list[dict[str, Any]]:
    """Per upload of ``state`` (oldest first): pending / confirmed, height, confirmations.

    Uses ``/tx/{bundle}/status`` when the bundle transaction is known, else the record's
    block in GraphQL and ``/info``'s height.
    """
    typed = parse_arweave_state(state, f"publish state of {state.target}")
    uploads = list(typed.extra.uploads or ())
    rows = [u.to_json() for u in uploads]  # what status shows of each
    record = typed.record
    if not uploads and record is not None:  # state older than the uploads list
        head = multihash_to_str(state.head) if state.head else None
        uploads = [UploadEntry(record.record_id, head, record.manifest_id, record.bundle_tx_id)]
        rows = [serialize_upload_facts(record) | {"head": head}]
    nodes = lookup_items(gateway, [u.record_id for u in uploads])
    height: int | None = None
    out: list[dict[str, Any]] = []
    for u, row in zip(uploads, rows, strict=True):
        if u.bundle_tx_id:
            status = gateway.tx_status(u.bundle_tx_id)
        else:
            node = nodes.get(u.record_id)
            block = (node or {}).get("block")
            if node is None:
                status = TxStatus("not_found")
            elif isinstance(block, dict) and block.get("height") is not None:
                if height is None:
                    height = int(gateway.info()["height"])
                h = int(block["height"])
                status = TxStatus("confirmed", height=h, confirmations=max(height - h, 0))
            else:
                status = TxStatus("pending")
        out.append({**row, **status.to_json()})
    return out
