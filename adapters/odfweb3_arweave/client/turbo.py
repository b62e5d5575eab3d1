"""A small client for a Turbo bundler's upload API (ArDrive Turbo; ``turbo-upload-service``).

A bundler takes signed ANS-104 data items, answers each with a receipt it signs, and gets
them into Arweave inside its own bundle transactions. Only what odfweb3 needs:

- ``GET /v1/info``: the receipt version and the bundler's Arweave address (``addresses.
  arweave``), the key every receipt must be signed with;
- ``POST /v1/tx`` (``application/octet-stream``, the item's bytes): 200 with the signed
  receipt (:mod:`odfweb3_arweave.formats.receipt`), 402 when the owner has no credits, 400
  for an item the bundler refuses, 202 (no receipt) for an item it is receiving already;
- ``GET /v1/tx/{id}/status``: ``CONFIRMED`` (taken, not yet in a block), ``FINALIZED``
  (its bundle is in a block and verified), ``FAILED``; 404 unknown.

Every answer is hostile (:mod:`odfweb3.transport.http`: bounded size and time); a receipt is
returned only once it verifies, for the item sent, by the pinned key. ``POST /v1/tx`` is not
retried: a second post of an item the bundler is still receiving answers 202 without a
receipt, so a retry would turn a slow success into "no proof".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from odfweb3.errors import BackendRejected, FormatError, SignatureError
from odfweb3.foreign_json import load_foreign_json
from odfweb3.transport.http import HttpClient, one_line
from odfweb3.transport.settings import NetworkSettings
from odfweb3_arweave.formats.receipt import Receipt, decode_receipt, verify_receipt

__all__ = ["TurboClient", "TurboInfo", "TurboPayment", "TurboStatus"]

_MAX_JSON: Final = 1 << 20
_STATES: Final = frozenset({"CONFIRMED", "FINALIZED", "FAILED"})
_MAX_WINC_DIGITS: Final = 30  # 10^30 winc = 10^18 credits: anything longer is not a price


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
