"""A small client for an Arweave gateway's HTTP API (arweave.net, an ar.io gateway, arlocal).

Only what odfweb3 needs (docs/design.md, "Commit order" and "Arweave mapping"): ``GET /tx_anchor``,
``GET /price/{bytes}``, ``GET /wallet/{address}/balance``, ``POST /tx`` (data inline when
small), ``POST /chunk`` (larger data, one chunk at a time with its Merkle proof),
``GET /tx/{id}`` and ``/tx/{id}/status``, ``GET /{id}`` and ``GET /{manifest}/{path}``
(data, through path manifests) and ``POST /graphql``. Every request goes through
:meth:`ArweaveGateway._send` and the shared HTTP layer (:mod:`odfweb3.transport.http`), which:

- retries *idempotent* requests (every GET, GraphQL, ``/chunk``, and ``/tx`` re-posts:
  a transaction's id is fixed by its signature, so posting it twice is harmless) on
  connection errors, timeouts, 429 and 5xx answers, with exponential backoff and full jitter;
- bounds every answer in size (each read names its limit; bodies gathered in a
  ``bytearray``, not ``bytes +=``, which is quadratic) and in time (``network.deadline_s``);
- translates failures once: :class:`~odfweb3.errors.BackendUnavailable` when the
  gateway cannot be reached, :class:`~odfweb3.errors.BackendRejected` naming the gateway,
  the endpoint, the HTTP status and the gateway's own message otherwise. HTTP 410 on
  ``POST /tx`` says "insufficient balance" (arweave-js and arlocal both use 410 for a
  transaction the node will not take because the wallet cannot pay).

Resumable uploads (:meth:`ArweaveGateway.upload_data`): the caller passes a
:class:`ChunkProgress` that records the index of the next chunk to send and is saved
after each accepted chunk; an interrupted upload continues from there. Before sending
anything, ``GET /tx/{id}/status`` is asked: a transaction the gateway already has as
confirmed needs nothing more. Re-sending one chunk is harmless on a real node (chunks are
stored by offset and proof); see docs/arweave.md for arlocal, which stores a duplicate.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any, BinaryIO, Final

import httpx

from odfweb3.errors import BackendRejected, FormatError, NotFound
from odfweb3.foreign_json import load_foreign_json
from odfweb3.transport.http import Answer, HttpClient, one_line
from odfweb3.transport.settings import NetworkSettings
from odfweb3_arweave.formats.b64 import b64url_decode
from odfweb3_arweave.formats.merkle import ChunkTree
from odfweb3_arweave.formats.tx import Transaction, iter_chunk_uploads, to_json

__all__ = [
    "INLINE_LIMIT",
    "MAX_STREAM",
    "WINSTON_PER_AR",
    "ArweaveGateway",
    "ChunkProgress",
    "TxStatus",
    "format_winston",
]

WINSTON_PER_AR: Final = 10**12
INLINE_LIMIT: Final = 256 * 1024  # arweave-js posts data inline up to one chunk
#: The most bytes :meth:`ArweaveGateway.stream_data` reads when the caller names no size.
MAX_STREAM: Final = 64 << 30
#: The largest JSON answer (GraphQL, /info, /price...) parsed; bounded, strict UTF-8, depth
#: at most 64 (:func:`odfweb3.foreign_json.load_foreign_json`).
_MAX_JSON_ANSWER: Final = 16 << 20


def format_winston(winston: int, unit: str = "winston") -> str:
    """``"123 winston (0.000000000123 AR)"``; ``unit="winc"``: Turbo credits, on the same
    scale (10^12 winc = 1 credit)."""
    whole = Decimal(winston) / Decimal(WINSTON_PER_AR)
    return f"{winston} {unit} ({whole:.12f} {'credits' if unit == 'winc' else 'AR'})"


_one_line = one_line


def _gateway_message(body: bytes) -> str:
    """The gateway's message: ``error``/``msg``/``message`` of a JSON body, else the text."""
    try:
        data = load_foreign_json(body, what="gateway error", max_bytes=len(body))
    except FormatError:
        return _one_line(body.decode("utf-8", "replace"))
    if isinstance(data, dict):
        for key in ("error", "msg", "message", "errors"):
            if key in data:
                return _one_line(str(data[key]))
    return _one_line(str(data))


@dataclass(frozen=True)
class TxStatus:
    """``GET /tx/{id}/status``.

    Attributes:
        state: ``"confirmed"``, ``"pending"`` or ``"not_found"``.
        height: block height when confirmed.
        block: the block's ``indep_hash`` when confirmed.
        confirmations: blocks mined on top of it (0 in its own block).
    """

    state: str
    height: int | None = None
    block: str | None = None
    confirmations: int = 0

    def to_json(self) -> dict[str, Any]:
        """JSON form (status output)."""
        return {
            "state": self.state,
            "height": self.height,
            "block": self.block,
            "confirmations": self.confirmations,
        }


@dataclass
class ChunkProgress:
    """Where a chunked upload stands: the next chunk index to send.

    Attributes:
        tx_id: the transaction whose chunks these are.
        next_chunk: chunks before this index were accepted by the gateway.
        save: called after each accepted chunk (persist the checkpoint).
    """

    tx_id: str
    next_chunk: int = 0
    save: Callable[[ChunkProgress], None] = lambda p: None


class ArweaveGateway:
    """Arweave gateway client.

    Args:
        url: the gateway base, e.g. ``https://arweave.net`` or ``http://127.0.0.1:1984``.
        settings: budgets (per-read timeout, deadline, retries; ``network:`` in the config).
        timeout: seconds to wait for connect and for each read/write (overrides ``settings``).
        retries: extra attempts for idempotent requests (overrides ``settings``).
        backoff: first backoff in seconds (doubles each attempt, full jitter).
        inline_limit: largest data posted inline in ``POST /tx``; larger goes by ``/chunk``.
        transport: an httpx transport (fault tests only).
        sleep: the sleep function (tests).
    """

    def __init__(
        self,
        url: str,
        *,
        settings: NetworkSettings | None = None,
        timeout: float | None = None,
        retries: int | None = None,
        backoff: float | None = None,
        inline_limit: int = INLINE_LIMIT,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.url = url.rstrip("/")
        base = settings or NetworkSettings()
        self.settings = replace(
            base,
            timeout_s=base.timeout_s if timeout is None else timeout,
            retries=base.retries if retries is None else retries,
            backoff_s=base.backoff_s if backoff is None else backoff,
        )
        self.retries = self.settings.retries
        self.backoff = self.settings.backoff_s
        self.inline_limit = inline_limit
        self._http = HttpClient(
            self.url,
            service=f"Arweave gateway {self.url}",
            hint="check that the gateway runs and ODFWEB3_ARWEAVE_GATEWAY / arweave.gateway "
            "points at it",
            settings=self.settings,
            reject=self._rejected,
            transport=transport,
            sleep=sleep,
        )

    @property
    def calls(self) -> int:
        """Requests sent so far (retries included)."""
        return self._http.attempts

    def __repr__(self) -> str:
        return f"ArweaveGateway({self.url!r})"

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> ArweaveGateway:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the one place requests are made (odfweb3.transport.http) -------------------------

    def _where(self, endpoint: str) -> str:
        return f"gateway {self.url} {endpoint}"

    @contextmanager
    def _send(
        self,
        method: str,
        path: str,
        *,
        endpoint: str,
        body: bytes | None = None,
        idempotent: bool = True,
        ok: frozenset[int] = frozenset(),
    ) -> Iterator[Answer]:
        """Send one request (with retries); yield the streamed answer.

        ``endpoint`` is the route shape named in messages (``/tx/{id}/status``); statuses
        in ``ok`` are handed to the caller instead of raising.
        """
        with self._http.request(
            method,
            path,
            endpoint=endpoint,
            content=body,
            headers={"content-type": "application/json"} if body is not None else None,
            idempotent=idempotent,
            ok=ok,
        ) as answer:
            yield answer

    def _rejected(self, method: str, endpoint: str, status: int, raw: bytes) -> BackendRejected:
        detail = _gateway_message(raw)
        if status == 410 and endpoint == "/tx":
            hint = "insufficient balance (or the transaction was refused): fund the wallet"
        elif status in (404, 405) and method == "POST":
            hint = "the gateway does not accept this request (does it support posting?)"
        elif status == 429:
            hint = "rate limited: wait and retry"
        else:
            hint = "see the gateway's log"
        return BackendRejected(
            f"Arweave {self._where(f'{method} {endpoint}')} answered HTTP {status}: "
            f"{detail or '(no message)'}; {hint}",
            status,
            detail,
        )

    def _read(
        self, method: str, path: str, endpoint: str, limit: int, **kw: Any
    ) -> tuple[int, bytes]:
        """``(status, body)``, the body at most ``limit`` bytes."""
        with self._send(method, path, endpoint=endpoint, **kw) as answer:
            return answer.status, answer.read(limit)

    def _json(self, method: str, path: str, endpoint: str, **kw: Any) -> Any:
        # One byte over the budget, so an oversized answer is refused, not cut and misread.
        _, data = self._read(method, path, endpoint, _MAX_JSON_ANSWER + 1, **kw)
        try:
            return load_foreign_json(
                data, what=f"Arweave {self._where(endpoint)}", max_bytes=_MAX_JSON_ANSWER
            )
        except FormatError:
            raise BackendRejected(
                f"Arweave {self._where(endpoint)} answered something that is not JSON: "
                f"{_one_line(data[:200].decode('utf-8', 'replace'))}",
                200,
                "not JSON",
            ) from None

    def _integer(self, path: str, endpoint: str) -> int:
        _, data = self._read("GET", path, endpoint, 1024)
        text = data.decode("ascii", "replace").strip().strip('"')
        if not text.isdigit():
            raise BackendRejected(
                f"Arweave {self._where(endpoint)} answered {_one_line(text[:80])!r}, not a number",
                200,
                "not a number",
            )
        return int(text)

    # -- network facts ---------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        """``GET /info`` (network, height, current block)."""
        data = self._json("GET", "/info", "/info")
        if not isinstance(data, dict) or "height" not in data:
            raise BackendRejected(
                f"Arweave {self._where('/info')} has no height; is this an Arweave gateway?",
                200,
                "no height",
            )
        return data

    def tx_anchor(self) -> bytes:
        """``GET /tx_anchor``: the anchor (``last_tx``) for a new transaction."""
        _, data = self._read("GET", "/tx_anchor", "/tx_anchor", 1024)
        text = data.decode("ascii", "replace").strip()
        try:
            anchor = b64url_decode(text, "tx anchor")
        except FormatError:
            anchor = b""
        if len(anchor) not in (32, 48):
            raise BackendRejected(
                f"Arweave {self._where('/tx_anchor')} answered {_one_line(text[:80])!r}, "
                "not a 32- or 48-byte base64url anchor",
                200,
                "bad anchor",
            )
        return anchor

    def price(self, size: int) -> int:
        """``GET /price/{bytes}``: the fee in winston to store ``size`` bytes."""
        return self._integer(f"/price/{int(size)}", "/price/{bytes}")

    def balance(self, address: str) -> int:
        """``GET /wallet/{address}/balance`` in winston."""
        return self._integer(f"/wallet/{address}/balance", "/wallet/{address}/balance")

    def tx_status(self, tx_id: str) -> TxStatus:
        """``GET /tx/{id}/status``: pending, confirmed (height, confirmations) or not found.

        Gateways answer 202 with ``Pending`` (arweave.net) or 200 ``Pending`` (arlocal)
        while the transaction waits for a block, 404 when they do not know it.
        """
        status, data = self._read(
            "GET", f"/tx/{tx_id}/status", "/tx/{id}/status", 1 << 16, ok=frozenset({404})
        )
        if status == 404:
            return TxStatus("not_found")
        text = data.decode("utf-8", "replace").strip()
        if status == 202 or text.strip('"').lower() == "pending":
            return TxStatus("pending")
        try:
            doc = load_foreign_json(data, what="tx status", max_bytes=len(data))
            return TxStatus(
                "confirmed",
                height=int(doc["block_height"]),
                block=str(doc.get("block_indep_hash") or ""),
                confirmations=int(doc.get("number_of_confirmations", 0)),
            )
        except (ValueError, KeyError, TypeError, RecursionError):
            raise BackendRejected(
                f"Arweave {self._where('/tx/{id}/status')} answered {_one_line(text[:120])!r}",
                status,
                "unreadable status",
            ) from None

    # -- posting ---------------------------------------------------------------------

    def post_tx(self, tx: Transaction, *, inline: bool) -> None:
        """``POST /tx``: the signed transaction, with its data inline or not (then chunks).

        Re-posting is idempotent (HTTP 208 "already processed" counts as success).
        """
        body = to_json(tx, include_data=inline).encode("ascii")
        self._read("POST", "/tx", "/tx", 1 << 20, body=body)

    def post_chunk(self, chunk: Mapping[str, str]) -> None:
        """``POST /chunk``: one chunk with its proof (from :func:`.tx.iter_chunk_uploads`)."""
        body = json.dumps(dict(chunk), separators=(",", ":")).encode("ascii")
        self._read("POST", "/chunk", "/chunk", 1 << 16, body=body)

    def upload_data(
        self,
        tx: Transaction,
        tree: ChunkTree,
        open_data: Callable[[], BinaryIO],
        progress: ChunkProgress,
        on_bytes: Callable[[int], None] = lambda n: None,
    ) -> None:
        """Post ``tx`` and its data; resumable from ``progress``.

        Data of at most :attr:`inline_limit` bytes goes inline in ``POST /tx``. Larger data:
        the header first (``data: ""``), then each chunk from ``progress.next_chunk`` on,
        saving ``progress`` after each accepted one. A transaction the gateway already
        reports as confirmed is not sent again.
        """
        if progress.tx_id != tx.id_b64:
            raise ValueError("progress belongs to another transaction")
        known = self.tx_status(tx.id_b64).state
        if known == "confirmed":
            return
        if tx.data_size <= self.inline_limit:
            if known == "pending":  # posted before (the answer was lost): nothing to add
                return
            with open_data() as f:
                data = f.read(tx.data_size + 1)
            if len(data) != tx.data_size:
                raise FormatError(f"transaction {tx.id_b64}: data is not {tx.data_size} bytes")
            self.post_tx(replace(tx, data=data), inline=True)
            on_bytes(len(data))
            return
        if known == "not_found":
            self.post_tx(tx, inline=False)
        with open_data() as f:
            for index, chunk in enumerate(iter_chunk_uploads(tree, f)):
                if index < progress.next_chunk:
                    continue
                self.post_chunk(chunk)
                progress.next_chunk = index + 1
                progress.save(progress)
                on_bytes(tree.upload_chunks[index].size)

    # -- reading ---------------------------------------------------------------------

    def get_tx_header(self, tx_id: str) -> dict[str, Any] | None:
        """``GET /tx/{id}``: the transaction JSON, or None when the gateway does not know it."""
        status, data = self._read("GET", f"/tx/{tx_id}", "/tx/{id}", 1 << 20, ok=frozenset({404}))
        if status == 404:
            return None
        try:
            doc = load_foreign_json(data, what=f"/tx/{tx_id}", max_bytes=len(data))
        except FormatError:
            return None  # "Pending" on some gateways; too deep, not UTF-8
        return doc if isinstance(doc, dict) else None

    def get_data(self, path: str, *, limit: int = 16 << 20) -> bytes:
        """``GET /{id}`` or ``GET /{manifest}/{path}``: at most ``limit`` bytes (unverified).

        Raises:
            NotFound: the gateway does not have it (404).
        """
        status, data = self._read("GET", f"/{path}", "/{id}[/{path}]", limit, ok=frozenset({404}))
        if status == 404:
            raise NotFound(f"Arweave {self._where('/' + path)}: not found (404)")
        return data

    def get_raw(self, item_id: str, *, limit: int) -> bytes | None:
        """``GET /raw/{id}`` (ar.io gateways): an item's own data, a path manifest's JSON
        rather than its index; at most ``limit`` bytes (unverified). None when the gateway
        does not serve it (404, 400, 405, 501: arlocal has no ``/raw``)."""
        status, data = self._read(
            "GET", f"/raw/{item_id}", "/raw/{id}", limit, ok=frozenset({400, 404, 405, 501})
        )
        return data if status < 300 else None

    def stream_data(
        self, path: str, chunk_size: int = 1 << 20, *, limit: int = MAX_STREAM
    ) -> Iterator[bytes]:
        """Stream ``GET /{path}``, at most ``limit`` bytes (unverified; the caller hashes
        what it keeps and passes the size it expects as ``limit`` when it knows it)."""
        with self._send("GET", f"/{path}", endpoint="/{id}[/{path}]", ok=frozenset({404})) as r:
            if r.status == 404:
                raise NotFound(f"Arweave {self._where('/' + path)}: not found (404)")
            yield from r.iter_bytes(limit, chunk_size)

    def graphql(self, query: str, variables: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /graphql``; returns ``data``.

        Raises:
            BackendRejected: the answer carries ``errors`` or no ``data``.
        """
        body = json.dumps({"query": query, "variables": dict(variables)}).encode("utf-8")
        doc = self._json("POST", "/graphql", "/graphql", body=body)
        if not isinstance(doc, dict) or doc.get("errors") or not isinstance(doc.get("data"), dict):
            detail = _one_line(str(doc.get("errors") if isinstance(doc, dict) else doc))
            raise BackendRejected(
                f"Arweave {self._where('POST /graphql')} returned errors: {detail}; "
                "does the gateway index GraphQL?",
                200,
                detail,
            )
        return dict(doc["data"])
