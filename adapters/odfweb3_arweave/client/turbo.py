"""A small client for a Turbo bundler's upload API (ArDrive Turbo; ``turbo-upload-service``).

A bundler takes signed ANS-104 data items, answers each with a receipt it signs, and gets
them into Arweave inside its own bundle transactions. Only what odfweb3 needs:

- ``GET /v1/info``: the receipt version and the bundler's Arweave address (``addresses.
  arweave``), the key every receipt must be signed with;
- ``POST /v1/tx`` (``application/octet-stream``, the item's bytes): 200 with the signed
  receipt (:mod:`odfweb3_arweave.formats.receipt`), 402 when the owner has no credits, 400
  for an item the bundler refuses, 202 (no receipt) for an item it is receiving already;
- ``GET /v1/tx/{id}/status``: ``CONFIRMED`` (taken, not yet in a block), ``FINALIZED``
  (its bundle is in a block and verified), ``FAILED``; 404 unknown;
- the multipart upload of one large item (turbo-upload-service ``src/routes/
  multiPartUploads.ts``): ``GET /v1/chunks/arweave/-1/-1?chunkSize=N`` creates an upload
  (``{"id", "min", "max", "chunkSize"}``; sizes 5 MiB to 500 MiB, S3's part limits),
  ``POST /v1/chunks/arweave/{upload}/{offset}`` stores one chunk (200; every chunk but the
  last exactly ``chunkSize`` bytes, its part number ``offset / chunkSize + 1``),
  ``GET .../{upload}/-1`` lists the chunks held (``chunks: [[offset, size], ...]``, 404 for
  an upload it does not know), ``POST .../{upload}/finalize`` assembles them in the
  background (202; 200/201 with the receipt when it was done already) and
  ``GET .../{upload}/status`` says ``ASSEMBLING``, ``VALIDATING``, ``FINALIZING``, then
  ``FINALIZED`` with the receipt (signed as ``POST /v1/tx``'s), or a failure
  (``INVALID``, ``UNDERFUNDED``, ...).

Every answer is hostile (:mod:`odfweb3.transport.http`: bounded size and time); a receipt is
returned only once it verifies, for the item sent, by the pinned key. ``POST /v1/tx`` is not
retried: a second post of an item the bundler is still receiving answers 202 without a
receipt, so a retry would turn a slow success into "no proof".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from odfweb3.errors import BackendRejected, FormatError, SignatureError
from odfweb3.foreign_json import load_foreign_json
from odfweb3.transport.http import HttpClient, one_line
from odfweb3.transport.settings import NetworkSettings
from odfweb3_arweave.formats.receipt import Receipt, decode_receipt, verify_receipt

__all__ = [
    "ChunkedStatus",
    "ChunkedUpload",
    "TurboClient",
    "TurboInfo",
    "TurboPayment",
    "TurboStatus",
]

_MAX_JSON: Final = 1 << 20
_STATES: Final = frozenset({"CONFIRMED", "FINALIZED", "FAILED"})
_MAX_WINC_DIGITS: Final = 30  # 10^30 winc = 10^18 credits: anything longer is not a price
# The token naming the signature type in /chunks paths: our items are Arweave (RSA) signed.
_TOKEN: Final = "arweave"
# An upload id is S3's multipart upload id (letters, digits, '.', '_', '-'); it goes into
# request paths, so anything else is refused, not quoted.
_UPLOAD_ID: Final = re.compile(r"[A-Za-z0-9._-]{1,512}")
_MAX_CHUNKS_LISTED: Final = 10_000  # S3's part-number limit
_CHUNK_STATES: Final = frozenset({"ASSEMBLING", "VALIDATING", "FINALIZING", "FINALIZED"})


@dataclass(frozen=True)
class TurboInfo:
    """``GET /v1/info``: the receipt version and the bundler's Arweave signing address."""

    version: str
    address: str


@dataclass(frozen=True)
class TurboStatus:
    """``GET /v1/tx/{id}/status``: ``state`` is CONFIRMED, FINALIZED, FAILED or NOT_FOUND;
    ``bundle_id`` the bundle transaction the bundler says carries the item (unsigned: a
    reader checks the item itself, never this)."""

    state: str
    bundle_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        """JSON form (status output)."""
        return {"state": self.state, "bundleId": self.bundle_id}


@dataclass(frozen=True)
class ChunkedUpload:
    """A multipart upload the bundler holds: its ``upload_id``, the ``chunk_size`` every
    chunk but the last has, and the ``chunks`` it says it has (``(offset, size)``,
    unsigned: what to send again, never a proof; the receipt at the end is)."""

    upload_id: str
    chunk_size: int
    chunks: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class ChunkedStatus:
    """``GET /v1/chunks/.../status``: ``state`` (ASSEMBLING, VALIDATING, FINALIZING,
    FINALIZED, NOT_FOUND or the bundler's failure word) and, once FINALIZED, the receipt,
    verified (for the item, by the pinned key)."""

    state: str
    receipt: Receipt | None = None


class TurboClient:
    """A Turbo upload service at ``url`` (e.g. ``https://upload.ardrive.io``).

    Args:
        url: the service's base URL.
        settings: budgets (``network:`` in the config; the command budget included).
        signer: the bundler's Arweave address receipts must be signed by (``arweave.
            turbo_address``, or the one publish state saw before); None: the one ``/v1/info``
            names, which the caller then pins.
    """

    def __init__(
        self, url: str, *, settings: NetworkSettings | None = None, signer: str | None = None
    ) -> None:
        self.url = url.rstrip("/")
        self.signer = signer
        self._http = HttpClient(
            self.url,
            service=f"Turbo bundler {self.url}",
            hint="check that the bundler runs and arweave.turbo points at it",
            settings=settings,
            reject=self._rejected,
        )

    def __repr__(self) -> str:
        return f"TurboClient({self.url!r})"

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> TurboClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _rejected(self, method: str, endpoint: str, status: int, raw: bytes) -> BackendRejected:
        detail = one_line(raw.decode("utf-8", "replace"))
        if status == 402:
            hint = "the wallet has no Turbo credits for this upload: top it up (nothing was kept)"
        elif status == 400:
            hint = "the bundler refused the data item (nothing was kept)"
        elif status == 413:
            hint = "the data item is larger than the bundler takes"
        elif status == 404 and "/chunks/" in endpoint:
            hint = (
                "the bundler does not know that upload (expired, or not ours): run publish "
                "again, it starts a new one"
            )
        else:
            hint = "see the bundler's log"
        return BackendRejected(
            f"Turbo bundler {self.url} {method} {endpoint} answered HTTP {status}: "
            f"{detail or '(no message)'}; {hint}",
            status,
            detail,
        )

    def _json(self, status_and_body: tuple[int, bytes], endpoint: str) -> Any:
        status, body = status_and_body
        try:
            return load_foreign_json(
                body, what=f"Turbo bundler {self.url} {endpoint}", max_bytes=_MAX_JSON
            )
        except FormatError:
            raise BackendRejected(
                f"Turbo bundler {self.url} {endpoint} answered HTTP {status} with something "
                f"that is not JSON: {one_line(body[:200].decode('utf-8', 'replace'))}",
                status,
                "not JSON",
            ) from None

    def info(self) -> TurboInfo:
        """``GET /v1/info``."""
        with self._http.request("GET", "/v1/info") as answer:
            got = (answer.status, answer.read(_MAX_JSON + 1))
        doc = self._json(got, "GET /v1/info")
        addresses = doc.get("addresses") if isinstance(doc, dict) else None
        address = addresses.get("arweave") if isinstance(addresses, dict) else None
        version = doc.get("version") if isinstance(doc, dict) else None
        if not isinstance(address, str) or len(address) != 43 or not isinstance(version, str):
            raise BackendRejected(
                f"Turbo bundler {self.url} GET /v1/info names no Arweave address; is this a "
                "Turbo upload service?",
                200,
                "no address",
            )
        return TurboInfo(version=version[:32], address=address)

    def pinned_signer(self) -> str:
        """The address receipts must be signed by: the configured/seen one, which
        ``/v1/info`` must still name, else the one ``/v1/info`` names (then pinned here).

        Raises:
            SignatureError: ``/v1/info`` names another key than the pinned one.
        """
        named = self.info().address
        if self.signer is not None and named != self.signer:
            raise SignatureError(
                f"Turbo bundler {self.url}: GET /v1/info names signing key {named}, not "
                f"{self.signer} (configured or seen before); if the bundler changed its key "
                "on purpose, set arweave.turbo_address to the new one"
            )
        self.signer = named
        return named

    def post_item(
        self, item_id: str, body: bytes, on_sent: Callable[[int], None] | None = None
    ) -> Receipt:
        """``POST /v1/tx`` one signed data item (its bytes); its receipt, verified.

        Raises:
            BackendRejected: 402 (no credits), 400 (refused), 202 (being received already:
                no receipt) and other errors.
            SignatureError: a receipt for another item, by another key, or not verifying.
            FormatError: a receipt of the wrong shape.
        """
        signer = self.signer or self.pinned_signer()
        endpoint = "POST /v1/tx"
        with self._http.request(
            "POST",
            "/v1/tx",
            content=body,
            headers={"content-type": "application/octet-stream"},
            # A signed data item is named by its signature: posting the same bytes again is
            # the same upload (the bundler keys items by id), so a connection the service
            # reset (Node closes idle keep-alive sockets as we reuse them) is retried.
            idempotent=True,
            on_sent=on_sent,
        ) as answer:
            got = (answer.status, answer.read(_MAX_JSON + 1))
        if got[0] == 202:
            raise BackendRejected(
                f"Turbo bundler {self.url} {endpoint} answered 202 for item {item_id}: it is "
                "receiving that item already and gave no receipt; run publish again later",
                202,
                "no receipt",
            )
        where = f"Turbo bundler {self.url} receipt for item {item_id}"
        receipt = decode_receipt(self._json(got, endpoint), where)
        verify_receipt(receipt, item_id=item_id, signer=signer, where=where)
        return receipt

    def status(self, item_id: str) -> TurboStatus:
        """``GET /v1/tx/{id}/status`` (unsigned: what to wait for, never a proof)."""
        endpoint = "GET /v1/tx/{id}/status"
        with self._http.request(
            "GET", f"/v1/tx/{item_id}/status", endpoint="/v1/tx/{id}/status", ok=frozenset({404})
        ) as answer:
            got = (answer.status, answer.read(_MAX_JSON + 1))
        if got[0] == 404:
            return TurboStatus("NOT_FOUND")
        doc = self._json(got, endpoint)
        state = doc.get("status") if isinstance(doc, dict) else None
        if state not in _STATES:
            raise BackendRejected(
                f"Turbo bundler {self.url} {endpoint} answered status "
                f"{one_line(str(state)[:40])!r}, not one of {', '.join(sorted(_STATES))}",
                200,
                "bad status",
            )
        bundle = doc.get("bundleId")
        return TurboStatus(str(state), bundle if isinstance(bundle, str) else None)

    # -- the multipart upload of one large item ------------------------------------------

    def _upload_path(self, upload_id: str, tail: str) -> str:
        if not _UPLOAD_ID.fullmatch(upload_id):
            raise BackendRejected(
                f"Turbo bundler {self.url}: upload id {one_line(upload_id[:80])!r} is not an "
                "upload id (letters, digits, '.', '_', '-')",
                200,
                "bad upload id",
            )
        return f"/v1/chunks/{_TOKEN}/{upload_id}/{tail}"

    def create_upload(self, chunk_size: int) -> ChunkedUpload:
        """``GET /v1/chunks/arweave/-1/-1?chunkSize=N``: a new multipart upload.

        Raises:
            BackendRejected: 400 (a chunk size outside the bundler's limits), or an answer
                without an upload id, or one naming another chunk size.
        """
        endpoint = "GET /v1/chunks/{token}/-1/-1"
        with self._http.request(
            "GET",
            f"/v1/chunks/{_TOKEN}/-1/-1",
            endpoint="/v1/chunks/{token}/-1/-1",
            params=[("chunkSize", str(int(chunk_size)))],
            # Each attempt creates another upload; one that is never used costs nothing.
            idempotent=True,
        ) as answer:
            got = (answer.status, answer.read(_MAX_JSON + 1))
        doc = self._json(got, endpoint)
        upload_id = doc.get("id") if isinstance(doc, dict) else None
        size = doc.get("chunkSize") if isinstance(doc, dict) else None
        if not isinstance(upload_id, str) or not _UPLOAD_ID.fullmatch(upload_id):
            raise BackendRejected(
                f"Turbo bundler {self.url} {endpoint} answered no upload id; is this a Turbo "
                "upload service?",
                got[0],
                "no upload id",
            )
        if size is not None and size != chunk_size:
            raise BackendRejected(
                f"Turbo bundler {self.url} {endpoint} created upload {upload_id} with chunk "
                f"size {one_line(str(size)[:40])}, not the {chunk_size} asked",
                got[0],
                "chunk size",
            )
        return ChunkedUpload(upload_id, chunk_size)

    def upload_chunks(self, upload_id: str) -> ChunkedUpload | None:
        """``GET /v1/chunks/arweave/{upload}/-1``: the chunks the bundler holds of
        ``upload_id`` (None: it knows no such upload, or no longer: finalized or expired).

        Raises:
            BackendRejected: an answer for another upload, or chunks of the wrong shape.
        """
        endpoint = "GET /v1/chunks/{token}/{upload}/-1"
        with self._http.request(
            "GET",
            self._upload_path(upload_id, "-1"),
            endpoint="/v1/chunks/{token}/{upload}/-1",
            ok=frozenset({404}),
        ) as answer:
            got = (answer.status, answer.read(_MAX_JSON + 1))
        if got[0] == 404:
            return None
        doc = self._json(got, endpoint)
        if not isinstance(doc, dict) or doc.get("id") != upload_id:
            named = doc.get("id") if isinstance(doc, dict) else None
            raise BackendRejected(
                f"Turbo bundler {self.url} {endpoint} answered for upload "
                f"{one_line(str(named)[:80])!r}, not ours ({upload_id})",
                got[0],
                "another upload",
            )
        size, chunks = doc.get("size"), doc.get("chunks")
        ok = (
            isinstance(size, int)
            and not isinstance(size, bool)
            and size > 0
            and isinstance(chunks, list)
            and len(chunks) <= _MAX_CHUNKS_LISTED
            and all(
                isinstance(c, list)
                and len(c) == 2
                and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in c)
                for c in chunks
            )
        )
        if not ok:
            raise BackendRejected(
                f"Turbo bundler {self.url} {endpoint} listed upload {upload_id}'s chunks in a "
                "form that is not [[offset, size], ...]",
                got[0],
                "bad chunks",
            )
        assert isinstance(size, int) and isinstance(chunks, list)
        return ChunkedUpload(upload_id, size, tuple((int(o), int(n)) for o, n in chunks))

    def post_chunk(
        self,
        upload_id: str,
        offset: int,
        body: bytes | tuple[int, Callable[[], Iterator[bytes]]],
        on_sent: Callable[[int], None] | None = None,
    ) -> None:
        """``POST /v1/chunks/arweave/{upload}/{offset}``: one chunk (retried: the same bytes
        at the same offset are the same part). ``body``: the bytes, or ``(length, pieces)``
        streamed from where the caller reads them (:meth:`HttpClient.request`'s
        ``content_stream``).

        Raises:
            BackendRejected: 404 (the bundler knows no such upload), 400 (a chunk it
                refuses) and other errors.
        """
        with self._http.request(
            "POST",
            self._upload_path(upload_id, str(int(offset))),
            endpoint="/v1/chunks/{token}/{upload}/{offset}",
            content=body if isinstance(body, bytes) else None,
            content_stream=None if isinstance(body, bytes) else body,
            headers={"content-type": "application/octet-stream"},
            idempotent=True,
            on_sent=on_sent,
        ) as answer:
            answer.read(_MAX_JSON + 1)

    def finalize_upload(self, upload_id: str, item_id: str) -> Receipt | None:
        """``POST /v1/chunks/arweave/{upload}/finalize``: assemble the chunks (in the
        background: None, ask :meth:`upload_status`); the receipt, verified, when the
        bundler had finished already.

        Raises:
            BackendRejected: 404 (no such upload), 400 (the item is invalid), 402 (no
                credits) and other errors.
            SignatureError: a receipt for another item, by another key, or not verifying.
        """
        signer = self.signer or self.pinned_signer()
        endpoint = "POST /v1/chunks/{token}/{upload}/finalize"
        with self._http.request(
            "POST",
            self._upload_path(upload_id, "finalize"),
            endpoint="/v1/chunks/{token}/{upload}/finalize",
            # Finalizing twice is asking twice: the bundler answers what it has done.
            idempotent=True,
        ) as answer:
            got = (answer.status, answer.read(_MAX_JSON + 1))
        if got[0] == 202 or not got[1].strip():
            return None
        where = f"Turbo bundler {self.url} receipt for item {item_id} (upload {upload_id})"
        receipt = decode_receipt(self._json(got, endpoint), where)
        verify_receipt(receipt, item_id=item_id, signer=signer, where=where)
        return receipt

    def upload_status(self, upload_id: str, item_id: str) -> ChunkedStatus:
        """``GET /v1/chunks/arweave/{upload}/status``; a FINALIZED answer's receipt is
        verified (for ``item_id``, by the pinned key) before it is returned.

        Raises:
            BackendRejected: FINALIZED without a receipt, or a status of the wrong shape.
            SignatureError: a receipt for another item, by another key, or not verifying.
        """
        signer = self.signer or self.pinned_signer()
        endpoint = "GET /v1/chunks/{token}/{upload}/status"
        with self._http.request(
            "GET",
            self._upload_path(upload_id, "status"),
            endpoint="/v1/chunks/{token}/{upload}/status",
            ok=frozenset({404}),
        ) as answer:
            got = (answer.status, answer.read(_MAX_JSON + 1))
        if got[0] == 404:
            return ChunkedStatus("NOT_FOUND")
        doc = self._json(got, endpoint)
        state = doc.get("status") if isinstance(doc, dict) else None
        if not isinstance(state, str) or not state.isascii() or not 0 < len(state) <= 40:
            raise BackendRejected(
                f"Turbo bundler {self.url} {endpoint} answered no status for upload {upload_id}",
                got[0],
                "bad status",
            )
        if state != "FINALIZED":
            return ChunkedStatus(state if state in _CHUNK_STATES else one_line(state))
        assert isinstance(doc, dict)
        if doc.get("receipt") is None:
            # The service re-signs the receipt when it answers; FINALIZED without one is
            # "not yet" (its signing failed, or the item is not recorded yet): ask again.
            return ChunkedStatus("FINALIZING")
        where = f"Turbo bundler {self.url} receipt for item {item_id} (upload {upload_id})"
        receipt = decode_receipt(doc.get("receipt"), where)
        verify_receipt(receipt, item_id=item_id, signer=signer, where=where)
        return ChunkedStatus(state, receipt)


class TurboPayment:
    """Turbo's payment service at ``url`` (e.g. ``https://payment.ardrive.io``): the price
    of an upload in winc (10^12 winc = 1 credit), asked before anything is sent.

    ``GET /v1/price/bytes/{n}`` answers ``{"winc": "123", "adjustments": [...]}``: the
    credits one data item of ``n`` bytes costs (adjustments such as a free tier are in
    ``winc`` already). Unsigned: a quote to show and to hold ``--max-cost`` to, never a
    proof; every answer is bounded like any other (:mod:`odfweb3.transport.http`).
    """

    def __init__(self, url: str, *, settings: NetworkSettings | None = None) -> None:
        self.url = url.rstrip("/")
        self._http = HttpClient(
            self.url,
            service=f"Turbo payment service {self.url}",
            hint="check that arweave.turbo_payment points at a Turbo payment service",
            settings=settings,
        )

    def __repr__(self) -> str:
        return f"TurboPayment({self.url!r})"

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def price(self, size: int) -> int:
        """``GET /v1/price/bytes/{size}``: winc for one item of ``size`` bytes.

        Raises:
            BackendRejected: an answer without a non-negative integer ``winc``.
        """
        endpoint = "GET /v1/price/bytes/{n}"
        with self._http.request(
            "GET", f"/v1/price/bytes/{int(size)}", endpoint="/v1/price/bytes/{n}"
        ) as answer:
            body = answer.read(_MAX_JSON + 1)
        try:
            doc = load_foreign_json(
                body, what=f"Turbo payment service {self.url} {endpoint}", max_bytes=_MAX_JSON
            )
        except FormatError:
            doc = None
        winc = doc.get("winc") if isinstance(doc, dict) else None
        text = str(winc) if isinstance(winc, (str, int)) and not isinstance(winc, bool) else ""
        if not (text.isascii() and text.isdigit() and len(text) <= _MAX_WINC_DIGITS):
            raise BackendRejected(
                f"Turbo payment service {self.url} {endpoint} answered no price (winc "
                f"{one_line(text[:40]) or 'missing'}); is arweave.turbo_payment a Turbo "
                "payment service?",
                200,
                "no price",
            )
        return int(text)
