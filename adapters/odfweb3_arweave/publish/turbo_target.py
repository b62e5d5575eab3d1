"""Publishing through a Turbo bundler (``--to turbo``): the L1 path's items, posted one by one.

The upload is what ``--to arweave`` signs (:mod:`.publish_bundle`: files, metadata, path
manifest, descriptor, record last; spooled as one ANS-104 bundle file), but instead of one
L1 transaction paid by the wallet, each data item goes to the bundler's ``POST /v1/tx``
(:class:`~odfweb3_arweave.client.turbo.TurboClient`), in bundle order, the record last. The
bundler answers each with a receipt it signs; the receipt is verified (for that item, by the
bundler's pinned key) and saved in the checkpoint before the next item is sent, so an
interrupted publish resumes with the first item that has no receipt, and the record is sent
only once every other item has one. The bundler then bundles the items into its own L1
transactions; readers find them through a gateway as today (GraphQL by owner and tags; every
item's signature checked), since each item keeps our wallet's signature.

Why items one by one, not one item holding a nested bundle: a gateway indexes the items of
an L1 bundle (arlocal does, on ``/mine``) but arlocal does not look inside a bundle nested in
a data item, so nested items would not be found by id or by GraphQL there; one by one they
are, with readers unchanged (docs/arweave.md, "Through a Turbo bundler").

The key: ``arweave.turbo_address`` if set, else the one publish state saw before, else the
one ``GET /v1/info`` names now (then kept in state); ``/v1/info`` naming another is refused
before anything is sent. State records the last upload's receipts (``extra.receipts``) and
the key (``extra.bundler``); nothing without a verified receipt is recorded as uploaded.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO

from odfweb3.errors import FormatError, UsageError
from odfweb3.odf.layout import DatasetReader
from odfweb3.publish.plan import PublishPlan
from odfweb3.publish.state import PublishState, StateStore
from odfweb3.publish.target import Price, RemoteView, UploadResult
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.client.turbo import TurboClient, TurboPayment, TurboStatus
from odfweb3_arweave.formats.b64 import b64url_encode
from odfweb3_arweave.formats.receipt import decode_receipt, encode_receipt, verify_receipt
from odfweb3_arweave.publish.gateway_target import GatewayTarget, checkpoint_doc
from odfweb3_arweave.publish.publish_bundle import previous_from_state, write_bundle_file
from odfweb3_arweave.publish.state import (
    parse_arweave_extra,
    parse_arweave_state,
    serialize_arweave_extra,
)
from odfweb3_arweave.read.lookup import Upload
from odfweb3_arweave.wallet import Wallet

__all__ = ["TurboTarget", "bundle_index", "record_finalized", "turbo_price", "turbo_statuses"]

_MAX_ITEMS = 1 << 20
# Distinct item sizes priced one by one; beyond, sizes are rounded up to Arweave's 256 KiB
# chunks first (a bound: the price of a size never falls as it grows) so a publish of
# thousands of files asks a handful of prices, not one per file.
_MAX_PRICE_ASKS = 32
_CHUNK = 256 * 1024


def turbo_price(payment: TurboPayment, sizes: list[int]) -> Price:
    """The credits the items of ``sizes`` bytes cost through Turbo: its payment service
    prices each data item on its own (``GET /v1/price/bytes/{n}``), so the sum over items,
    one request per distinct size (rounded up to whole chunks past ``_MAX_PRICE_ASKS``
    distinct sizes: then an upper bound)."""
    distinct = sorted(set(sizes))
    bound = len(distinct) > _MAX_PRICE_ASKS
    if bound:
        sizes = [-(-n // _CHUNK) * _CHUNK for n in sizes]
        distinct = sorted(set(sizes))
    asked = {n: payment.price(n) for n in distinct}
    return Price(
        sum(asked[n] for n in sizes),
        "winc",
        sum(sizes),
        len(sizes),
        f"{payment.url}/v1/price/bytes/N",
        bound=bound,
    )


def bundle_index(f: BinaryIO) -> list[tuple[str, int, int]]:
    """``(item id, offset, size)`` of every item of the bundle file ``f`` (our own spool,
    written and fsynced by :func:`.publish_bundle.write_bundle_file`), in bundle order.

    Raises:
        FormatError: a header that does not describe the file.
    """
    f.seek(0, 2)
    total = f.tell()
    f.seek(0)
    head = f.read(32)
    count = int.from_bytes(head, "little") if len(head) == 32 else -1
    if not 0 < count <= _MAX_ITEMS:
        raise FormatError(f"{getattr(f, 'name', 'bundle')}: not a bundle (count {count})")
    raw = f.read(64 * count)
    offset = 32 + 64 * count
    out: list[tuple[str, int, int]] = []
    for i in range(count):
        entry = raw[64 * i : 64 * i + 64]
        size = int.from_bytes(entry[:32], "little")
        out.append((b64url_encode(entry[32:]), offset, size))
        offset += size
    if offset != total:
        raise FormatError(f"{getattr(f, 'name', 'bundle')}: item sizes do not add up")
    return out


class TurboTarget(GatewayTarget):
    """A Turbo bundler as a publish target; the gateway is where readers (and ``inspect``)
    look. Arguments as :class:`GatewayTarget`, plus ``turbo`` (the bundler client, its
    ``signer`` the configured key or None) and ``payment`` (Turbo's payment service, which
    prices the items in winc; None: the price is not known, ``max_cost`` is refused).
    ``max_cost`` is in winc here."""

    def __init__(
        self,
        gateway: ArweaveGateway,
        turbo: TurboClient,
        wallet: Wallet,
        states: StateStore,
        *,
        payment: TurboPayment | None = None,
        **kw: Any,
    ) -> None:
        super().__init__(gateway, wallet, states, **kw)
        self.turbo = turbo
        self.payment = payment
        self.name = f"turbo:{turbo.url}"

    def __repr__(self) -> str:
        return f"TurboTarget({self.turbo.url}, owner={self.wallet.address})"

    # -- the saved state is current while the bundler has our last record ------------------

    def _state_is_current(self, state: PublishState, latest: Upload | None) -> bool:
        record = self._typed(state).record
        if record is None:
            return False
        if latest is not None and latest.id == record.record_id:
            return True
        prev = record.prev_upload
        if (latest is None and prev is None) or (latest is not None and latest.id == prev):
            # Our last upload is not indexed yet: trust it while its receipt verifies and
            # the bundler still has it (its status is only a hint of where it is).
            self._check_receipts(state)
            return self.turbo.status(record.record_id).state in ("CONFIRMED", "FINALIZED")
        return False

    def _check_receipts(self, state: PublishState) -> None:
        """The saved state's receipts verify, by the key it pinned."""
        where = str(self.states.path_for(state.dataset_id, self.name))
        extra = parse_arweave_extra(state.extra, where)
        record = self._typed(state).record
        receipts = extra.receipts or {}
        if record is None or extra.bundler is None or record.record_id not in receipts:
            raise FormatError(f"{where}: no bundler receipt for upload record; {_REMEDY}")
        for item_id, doc in receipts.items():
            receipt = decode_receipt(doc, f"{where}: receipt of {item_id}")
            verify_receipt(receipt, item_id=item_id, signer=extra.bundler, where=where)

    # -- the price first ---------------------------------------------------------------

    def quote(self, plan: PublishPlan, reader: DatasetReader, view: RemoteView) -> Price | None:
        """``--dry-run``: the credits the items :meth:`upload` would post cost (signed in
        the item spool only, which goes; nothing written or sent). None when nothing is new
        or no payment service is configured."""
        if self.payment is None:
            return None
        prepared = self._prepare_quote(plan, reader, view)
        if prepared is None:
            return None
        items = prepared.signed.items
        try:
            sizes = items.sizes()
        finally:
            items.close()
        return turbo_price(self.payment, sizes)

    def _charge(self, sizes: list[int], total: int) -> None:
        """Before the first item is sent: the price, held to ``max_cost`` and ``approve``
        (without a payment service ``approve`` is asked with None: the price not known)."""
        if self.payment is not None:
            self._hold_to(turbo_price(self.payment, sizes))
        elif self.approve is not None and not self.approve(None):
            raise UsageError(
                f"the upload ({len(sizes)} items, {total} bytes) was not accepted; nothing was "
                "sent (--yes sends without asking)"
            )

    # -- upload: sign as --to arweave does, post the items ---------------------------------

    def _pin(self, view: RemoteView) -> str:
        """The bundler's key: configured, else seen before (state), else ``/v1/info``'s."""
        if self.turbo.signer is None and view.state is not None:
            where = str(self.states.path_for(view.state.dataset_id, self.name))
            self.turbo.signer = parse_arweave_extra(view.state.extra, where).bundler
        return self.turbo.pinned_signer()

    def upload(
        self,
        plan: PublishPlan,
        reader: DatasetReader,
        view: RemoteView,
        progress: Callable[[int], None],
    ) -> UploadResult:
        """Sign and spool the items (as ``--to arweave``), then post each (module docstring)."""
        self._unchanged = False
        where = str(self.states.path_for(plan.dataset_id, self.name))
        previous = previous_from_state(view.state, where)
        prev_id = previous.record_id if previous else None
        inputs = self._record_inputs(plan, view, where)
        if previous is not None and self._nothing_new(plan, view, inputs):
            assert view.state is not None
            self._unchanged = True
            return UploadResult(
                locator=str(view.state.locator),
                objects=view.state.objects,
                extra=dict(view.state.extra),
                summary={"note": "nothing new: nothing sent to the bundler"},
            )
        checkpoint = self._load_checkpoint(plan, prev_id)
        if checkpoint is not None:
            return self._post_items(plan.dataset_id, checkpoint, resumed=True)
        if inputs and not plan.record_extra.get("inputs"):
            inputs = self._latest_inputs(inputs)
            plan = dataclasses.replace(plan, record_extra={**plan.record_extra, "inputs": inputs})
        signer = self._pin(view)  # before signing: a changed key sends nothing
        prepared = self._sign_bundle(plan, reader, previous, progress)
        signed = prepared.signed
        sizes = signed.items.sizes()
        spool, size = write_bundle_file(signed.items, self.spool_dir, f"{signed.record_id}.bundle")
        try:
            self._check_latest(plan.dataset_id, prev_id, view)
            self._charge(sizes, size)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                spool.unlink()
            raise
        index = self._write_index(plan.dataset_id, view, prepared)
        checkpoint = checkpoint_doc(
            prepared,
            view,
            None,
            spool=spool.name,
            size=size,
            reward=0,
            owner=self.wallet.address,
            sealer=self.sealer,
            inputs=inputs,
            object_index=index.to_json(),
        )
        checkpoint["bundler"] = signer
        checkpoint["receipts"] = {}
        self._save_checkpoint(plan.dataset_id, checkpoint)
        return self._post_items(plan.dataset_id, checkpoint, resumed=False)

    def _post_items(
        self, dataset_id: str, checkpoint: dict[str, Any], *, resumed: bool
    ) -> UploadResult:
        spool = self.spool_dir / str(checkpoint["spool"])
        where = str(self._checkpoint_path(dataset_id))
        signer = checkpoint.get("bundler")
        receipts = checkpoint.get("receipts")
        if not isinstance(signer, str) or not isinstance(receipts, dict):
            raise FormatError(f"{where}: not a Turbo upload checkpoint; {_REMEDY}")
        self.turbo.signer = signer
        result = checkpoint["result"]
        sent = parse_arweave_extra(result["extra"], where)
        assert sent.upload is not None
        record_id = sent.upload.record_id
        with open(spool, "rb") as f:
            entries = bundle_index(f)
            # Bundle order is the record last already; keep it so whatever the order.
            entries.sort(key=lambda e: e[0] == record_id)
            skipped = 0
            for item_id, offset, size in entries:
                if item_id in receipts:
                    kept = decode_receipt(receipts[item_id], f"{where}: receipt of {item_id}")
                    verify_receipt(kept, item_id=item_id, signer=signer, where=where)
                    skipped += 1
                    continue
                f.seek(offset)
                body = f.read(size)
                receipt = self.turbo.post_item(item_id, body)
                receipts[item_id] = encode_receipt(receipt)
                self._save_checkpoint(dataset_id, checkpoint)
        extra = dataclasses.replace(sent, bundler=signer, receipts=dict(receipts))
        summary = dict(result["summary"])
        summary["bundler"] = self.turbo.url
        summary["receipts"] = len(receipts)
        if resumed:
            summary["resumed"] = f"{skipped} item(s) had a receipt already"
        index = extra.object_index
        objects: Mapping[str, Mapping[str, Any]] = (
            self._index(dataset_id, index, where) if index is not None else dict(result["objects"])
        )
        return UploadResult(
            locator=str(result["locator"]),
            objects=objects,
            extra=serialize_arweave_extra(extra),
            bytes_sent=int(checkpoint.get("result", {}).get("summary", {}).get("bundleBytes", 0)),
            summary=summary,
        )


_REMEDY = "delete it and publish again (the items are re-sent; the bundler keeps one copy)"


def turbo_statuses(
    turbo: TurboClient, state: PublishState, states: StateStore | None = None
) -> list[dict[str, Any]]:
    """The last upload's record as the bundler reports it (``GET /v1/tx/{id}/status``:
    CONFIRMED, FINALIZED, FAILED or NOT_FOUND; unsigned, a hint of where it is).

    With ``states``, a FINALIZED record is recorded in the saved state (``record.status:
    finalized``, :func:`record_finalized`); ``saved`` says what the state says after.
    """
    typed = parse_arweave_state(state, f"publish state of {state.target}")
    record = typed.record
    if record is None:
        return []
    status: TurboStatus = turbo.status(record.record_id)
    receipts = typed.extra.receipts or {}
    saved = record.status
    if states is not None and status.state == "FINALIZED" and record_finalized(states, state):
        saved = "finalized"
    return [
        {
            "recordId": record.record_id,
            "manifestId": record.manifest_id,
            "receipts": len(receipts),
            **status.to_json(),
            "saved": saved,
        }
    ]


def record_finalized(states: StateStore, state: PublishState) -> bool:
    """Save ``record.status: finalized`` in the state of ``state``'s upload once the
    bundler said FINALIZED (its bundle is in a block and it verified it), so ``status
    --offline`` and the next publish know without asking. The state is read again just
    before it is written and left alone unless it still names the same record (a publish
    that moved on in between wins). True when the saved state says finalized after.
    """
    record_id = state.record.get("recordId")
    current = states.load(state.dataset_id, state.target)
    if current is None or current.record.get("recordId") != record_id:
        return False
    if current.record.get("status") == "finalized":
        return True
    states.save(current.evolve(record={**current.record, "status": "finalized"}))
    return True
