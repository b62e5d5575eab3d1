"""Publishing through a Turbo bundler (``--to turbo``): the L1 path's items, posted one by one.

The upload is what ``--to arweave`` signs (:mod:`.publish_bundle`: files, metadata, path
manifest, descriptor, record last; spooled as one ANS-104 bundle file), but instead of one
L1 transaction paid by the wallet, each data item goes to the bundler's ``POST /v1/tx``
(:class:`~odfweb3_arweave.client.turbo.TurboClient`; an item of ``chunked_above`` bytes or
more through its multipart ``/chunks`` upload, :mod:`.turbo_chunks`, resumable chunk by
chunk), in bundle order, the record last. The
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

import dataclasses
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO, ClassVar

from odfweb3.errors import (
    BackendError,
    ConflictError,
    FormatError,
    NotYetConfirmed,
    UsageError,
)
from odfweb3.odf.layout import DatasetReader
from odfweb3.publish.plan import PublishPlan
from odfweb3.publish.state import PublishState, RawState, StateStore
from odfweb3.publish.state_home import StateHome
from odfweb3.publish.target import Phases, Price, UploadResult
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.client.turbo import TurboClient, TurboPayment, TurboStatus
from odfweb3_arweave.formats.b64 import b64url_encode
from odfweb3_arweave.formats.receipt import decode_receipt, encode_receipt, verify_receipt
from odfweb3_arweave.formats.tx import Transaction
from odfweb3_arweave.publish.gateway_target import GatewayTarget
from odfweb3_arweave.publish.publish_bundle import ArweaveView
from odfweb3_arweave.publish.state import (
    ARWEAVE_CODEC,
    ArweaveExtra,
    ArweaveTyped,
    parse_arweave_extra,
    parse_arweave_state,
)
from odfweb3_arweave.publish.turbo_chunks import (
    DEFAULT_CHUNK_BYTES,
    DEFAULT_CHUNKED_ABOVE,
    resumed_bytes,
    send_chunked,
)
from odfweb3_arweave.read.lookup import Upload
from odfweb3_arweave.wallet import Wallet

__all__ = [
    "TurboTarget",
    "bundle_index",
    "not_finalized",
    "only_finalized",
    "record_finalized",
    "turbo_price",
    "turbo_statuses",
    "wait_finalized",
]

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
    ``max_cost`` is in winc here. Items of ``chunked_above`` bytes or more go through the
    bundler's multipart upload in chunks of ``chunk_bytes`` (:mod:`.turbo_chunks`), its
    receipt awaited up to ``chunked_timeout`` seconds."""

    def __init__(
        self,
        gateway: ArweaveGateway,
        turbo: TurboClient,
        wallet: Wallet,
        states: StateStore,
        *,
        payment: TurboPayment | None = None,
        finalize_timeout: float = 0.0,
        chunked_above: int = DEFAULT_CHUNKED_ABOVE,
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        chunked_timeout: float = 600.0,
        **kw: Any,
    ) -> None:
        super().__init__(gateway, wallet, states, **kw)
        self.turbo = turbo
        self.payment = payment
        self.finalize_timeout = finalize_timeout
        self.chunked_above = chunked_above
        self.chunk_bytes = chunk_bytes
        self.chunked_timeout = chunked_timeout
        self.name = f"turbo:{turbo.url}"
        # The state under this target's own name; a ``status`` that recorded the bundler's
        # FINALIZED meanwhile is no rival (:func:`only_finalized`).
        self.home = StateHome(states, self.name, ARWEAVE_CODEC, settled=only_finalized)

    def __repr__(self) -> str:
        return f"TurboTarget({self.turbo.url}, owner={self.wallet.address})"

    # -- the saved state is current while the bundler has our last record ------------------

    def _state_is_current(self, state: ArweaveTyped, latest: Upload | None) -> bool:
        record = state.record
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

    def _check_receipts(self, state: ArweaveTyped) -> None:
        """The saved state's receipts verify, by the key it pinned."""
        where = str(self.home.path(state.dataset_id))
        extra, record = state.extra, state.record
        receipts = extra.receipts or {}
        if record is None or extra.bundler is None or record.record_id not in receipts:
            raise FormatError(f"{where}: no bundler receipt for upload record; {_REMEDY}")
        for item_id, doc in receipts.items():
            receipt = decode_receipt(doc, f"{where}: receipt of {item_id}")
            verify_receipt(receipt, item_id=item_id, signer=extra.bundler, where=where)

    # -- the price first ---------------------------------------------------------------

    def quote(self, plan: PublishPlan, reader: DatasetReader, view: ArweaveView) -> Price | None:
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

    def _pin(self, view: ArweaveView) -> str:
        """The bundler's key: configured, else seen before (state), else ``/v1/info``'s."""
        if self.turbo.signer is None and view.state is not None:
            self.turbo.signer = view.state.extra.bundler
        return self.turbo.pinned_signer()

    nothing_sent: ClassVar[str] = "nothing new: nothing sent to the bundler"

    def _before_signing(self, view: ArweaveView) -> dict[str, Any]:
        """The bundler's key, pinned before signing (:meth:`_pin`), and no receipt yet."""
        return {"bundler": self._pin(view), "receipts": {}}

    def _pay(
        self, spool: Path, sizes: list[int], size: int, record_id: str
    ) -> tuple[Transaction | None, int]:
        """The items' price, held to the limits (:meth:`_charge`); no L1 transaction."""
        self._charge(sizes, size)
        return None, 0

    def _send(
        self, dataset_id: str, checkpoint: dict[str, Any], *, resumed: bool
    ) -> UploadResult[ArweaveExtra]:
        """Post each item without a receipt (:meth:`_post_items`)."""
        return self._post_items(dataset_id, checkpoint, resumed=resumed)

    def _post_items(
        self, dataset_id: str, checkpoint: dict[str, Any], *, resumed: bool
    ) -> UploadResult[ArweaveExtra]:
        spool = self.spool_dir / str(checkpoint["spool"])
        where = str(self._checkpoint(dataset_id).path)
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
            sent_before = sum(size for item_id, _, size in entries if item_id in receipts)
            partial = checkpoint.get("chunked")
            part_id = str(partial.get("itemId")) if isinstance(partial, dict) else ""
            in_part = resumed_bytes(partial, part_id) if part_id not in receipts else 0
            label = f"sending {len(entries)} items to {self.turbo.url}"
            if in_part:
                label += f" (item {part_id} resumed at byte {in_part})"
            self.progress.phase(
                label, sum(size for _, _, size in entries), done=sent_before + in_part
            )

            def keep_chunked(entry: dict[str, Any] | None) -> None:
                if entry is None:
                    checkpoint.pop("chunked", None)
                else:
                    checkpoint["chunked"] = entry
                self._checkpoint(dataset_id).write(checkpoint)

            skipped = 0
            for item_id, offset, size in entries:
                if item_id in receipts:
                    kept = decode_receipt(receipts[item_id], f"{where}: receipt of {item_id}")
                    verify_receipt(kept, item_id=item_id, signer=signer, where=where)
                    skipped += 1
                    continue
                if size >= self.chunked_above:
                    # The bar counts the chunks held already (at its start) and each sent.
                    counted = [resumed_bytes(checkpoint.get("chunked"), item_id)]

                    def step(n: int, counted: list[int] = counted) -> None:
                        counted[0] += n
                        self.progress.advance(n)

                    receipt = send_chunked(
                        self.turbo,
                        f,
                        (item_id, offset, size),
                        checkpoint.get("chunked"),
                        keep_chunked,
                        chunk_size=self.chunk_bytes,
                        timeout=self.chunked_timeout,
                        sleep=self.sleep,
                        monotonic=self.monotonic,
                        poll_interval=self.poll_interval,
                        advance=step,
                    )
                    checkpoint.pop("chunked", None)
                    self.progress.advance(max(size - counted[0], 0))
                else:
                    f.seek(offset)
                    body = f.read(size)
                    receipt = self.turbo.post_item(item_id, body)
                receipts[item_id] = encode_receipt(receipt)
                self._checkpoint(dataset_id).write(checkpoint)
                if size < self.chunked_above:
                    self.progress.advance(size)
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
            extra=extra,
            bytes_sent=int(checkpoint.get("result", {}).get("summary", {}).get("bundleBytes", 0)),
            summary=summary,
        )

    # -- after the save: the bundler's FINALIZED, within the deadline ----------------------

    def save(self, state: ArweaveTyped) -> RawState:
        """Save the state (the upload is sent: its receipts prove it), then, with
        ``finalize_timeout``, wait that long for the bundler's FINALIZED of the record and
        record it (``record.status: finalized``, as :func:`record_finalized` does for
        ``status``; here through the state home, still inside the session).

        Raises:
            NotYetConfirmed: not FINALIZED by the deadline (exit 75); the state saved says
                pending, never finalized.
        """
        saved = super().save(state)
        record = state.record
        if self.finalize_timeout <= 0 or record is None or record.status == "finalized":
            return saved
        record_id = record.record_id
        status = wait_finalized(
            self.turbo,
            record_id,
            self.finalize_timeout,
            sleep=self.sleep,
            monotonic=self.monotonic,
            poll_interval=self.poll_interval,
            progress=self.progress,
        )
        line = not_finalized(self.turbo.url, record_id, status, self.finalize_timeout)
        if status.state == "FAILED":
            raise BackendError(line)
        if status.state != "FINALIZED":
            raise NotYetConfirmed(line)
        # Still inside the session: the state just written, compared, then marked.
        self.home.check_unchanged()
        seen = self.home.seen
        assert seen is not None and seen.record is not None
        final = dataclasses.replace(seen.record, status="finalized")
        return self.home.write(seen.evolve(record=final)).evolve(objects=saved.objects)


def wait_finalized(
    turbo: TurboClient,
    record_id: str,
    timeout: float,
    *,
    sleep: Callable[[float], None],
    monotonic: Callable[[], float],
    poll_interval: float = 2.0,
    progress: Phases | None = None,
) -> TurboStatus:
    """Ask ``GET /v1/tx/{record_id}/status`` until FINALIZED or FAILED, or until
    ``timeout`` seconds passed (then the last answer: CONFIRMED, NOT_FOUND). The status is
    unsigned: it only says whether to keep waiting."""
    deadline = monotonic() + timeout
    if progress is not None:
        progress.phase(
            f"confirming: waiting for {turbo.url} to finalize record {record_id}",
            None,
            unit="time",
        )
    while True:
        status = turbo.status(record_id)
        if progress is not None:
            progress.advance(0)
        if status.state in ("FINALIZED", "FAILED") or monotonic() >= deadline:
            return status
        sleep(min(poll_interval, max(deadline - monotonic(), 0.0)))


def not_finalized(url: str, record_id: str, status: TurboStatus, timeout: float) -> str:
    """The one line for a record the bundler did not finalize in time."""
    if status.state == "FAILED":
        return (
            f"Turbo bundler {url} says upload record {record_id} FAILED; the receipts prove "
            "it was taken: publish again (items without a receipt are sent) or ask the bundler"
        )
    return (
        f"Turbo bundler {url} did not finalize upload record {record_id} within {timeout:g} s "
        f"(arweave.finalize_timeout_s; it says {status.state}): the upload is sent and its "
        "receipts are kept; run `odfweb3 status` later"
    )


_REMEDY = "delete it and publish again (the items are re-sent; the bundler keeps one copy)"


def turbo_statuses(
    turbo: TurboClient,
    state: PublishState,
    states: StateStore | None = None,
    *,
    wait: float = 0.0,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
    poll_interval: float = 2.0,
) -> list[dict[str, Any]]:
    """The last upload's record as the bundler reports it (``GET /v1/tx/{id}/status``:
    CONFIRMED, FINALIZED, FAILED or NOT_FOUND; unsigned, a hint of where it is).

    With ``states``, a FINALIZED record is recorded in the saved state (``record.status:
    finalized``, :func:`record_finalized`); ``saved`` says what the state says after.
    With ``wait`` (``arweave.finalize_timeout_s``), a record not finalized yet is asked
    again until it is or ``wait`` seconds passed; then the row's ``unconfirmed`` is the
    one line saying so (the command exits 75).
    """
    typed = parse_arweave_state(state, f"publish state of {state.target}")
    record = typed.record
    if record is None:
        return []
    if wait > 0 and record.status != "finalized":
        status: TurboStatus = wait_finalized(
            turbo,
            record.record_id,
            wait,
            sleep=sleep,
            monotonic=monotonic,
            poll_interval=poll_interval,
        )
    else:
        status = turbo.status(record.record_id)
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
            **(
                {"unconfirmed": not_finalized(turbo.url, record.record_id, status, wait)}
                if wait > 0 and saved != "finalized"
                else {}
            ),
        }
    ]


def only_finalized(seen: ArweaveTyped, now: ArweaveTyped) -> bool:
    """``now`` is ``seen`` with only its record marked finalized (what
    :func:`record_finalized` writes): the same upload, settled further, not a rival's."""
    if (seen.head, seen.locator, seen.extra) != (now.head, now.locator, now.extra):
        return False
    before, after = seen.record, now.record
    return (
        before is not None
        and after is not None
        and after.status == "finalized"
        and dataclasses.replace(after, status=before.status) == before
    )


def record_finalized(states: StateStore, state: PublishState) -> bool:
    """Save ``record.status: finalized`` in the state of ``state``'s upload once the
    bundler said FINALIZED (its bundle is in a block and it verified it), so ``status
    --offline`` and the next publish know without asking. True when the saved state says
    finalized after.

    The write goes through the target's state home as a publish's does: read once, the
    target's lock held, compared and set. A publish of this dataset to this target that
    holds the lock, or wrote its state since the read, wins: its state is left as it is
    (the next ``status`` records the finalized record it names), never overwritten with
    this older view, and the publish never sees a state it did not read (no spurious
    conflict). The state is left alone too unless it still names the same record.
    """
    where = f"publish state of {state.target}"
    asked = parse_arweave_state(state, where).record
    home = StateHome(states, state.target, ARWEAVE_CODEC, settled=only_finalized)
    current = home.inspect(state.dataset_id)
    if asked is None or current is None:
        return False
    if current.record is None or current.record.record_id != asked.record_id:
        return False
    if current.record.status == "finalized":
        return True
    final = dataclasses.replace(current.record, status="finalized")
    try:
        with home.session():
            home.check_unchanged()
            home.write(current.evolve(record=final))
    except ConflictError:
        return False
    return True
