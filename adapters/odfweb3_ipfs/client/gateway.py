"""An IPFS HTTP gateway client: GET only, bounded reads; its answers are verified by callers."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Generator, Iterator
from dataclasses import replace
from typing import Final

import httpx

from odfweb3.errors import (
    BackendRejected,
    FormatError,
    NotFound,
)
from odfweb3.odf.layout import MAX_BLOCK_SIZE
from odfweb3.transport.http import Answer, HttpClient
from odfweb3.transport.settings import NetworkSettings
from odfweb3_ipfs.formats.car import iter_car
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.formats.ipns import MAX_RECORD_SIZE
from odfweb3_ipfs.formats.libp2p_keys import IpnsName

__all__ = ["CAR_TYPE", "MAX_STREAM", "RAW_BLOCK_TYPE", "RECORD_TYPE", "IpfsGateway"]

RAW_BLOCK_TYPE: Final = "application/vnd.ipld.raw"
CAR_TYPE: Final = "application/vnd.ipld.car"
RECORD_TYPE: Final = "application/vnd.ipfs.ipns-record"
#: The most bytes a gateway stream reads when the caller names no size.
MAX_STREAM: Final = 64 << 30
_GATEWAY_RETRY: Final = frozenset({429, 502, 503, 504})
_ANY_STATUS: Final = frozenset(range(100, 600))


class IpfsGateway:
    """An IPFS HTTP gateway, read-only (GET), its answers unverified here.

    Requests go through the shared HTTP layer (:mod:`odfweb3.transport.http`): bounded in
    size (every read names its limit) and time (``network.deadline_s``), retried on 429,
    502, 503 and 504 (not 500: js-ipfs answers 500 for a missing path).

    Args:
        url: the gateway base, e.g. ``http://127.0.0.1:8080``.
        settings: budgets (``network:`` in the config).
        timeout: seconds for connect and each read (overrides ``settings``).
        transport: an httpx transport (fault tests only).
    """

    def __init__(
        self,
        url: str,
        *,
        settings: NetworkSettings | None = None,
        timeout: float | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        base = settings or NetworkSettings()
        self.settings = base if timeout is None else replace(base, timeout_s=timeout)
        self._http = HttpClient(
            self.url,
            service=f"IPFS gateway {self.url}",
            hint="check ODFWEB3_IPFS_GATEWAY / ipfs.gateway and retry",
            settings=self.settings,
            retry=lambda status, body: status in _GATEWAY_RETRY,
            follow_redirects=True,
            max_connections=64,
            transport=transport,
        )
        self._raw: bool | None = None
        self._car: bool | None = None
        self._records: bool | None = None

    def __repr__(self) -> str:
        return f"IpfsGateway({self.url!r})"

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def _fail(self, path: str, status: int) -> NotFound | BackendRejected:
        where = f"IPFS gateway {self.url}{path}"
        if status in (404, 410):
            return NotFound(f"{where}: not found ({status})")
        # js-ipfs answers 500 for a missing path below a directory (docs/jsipfs-notes.md).
        return BackendRejected(
            f"{where}: HTTP {status}; the gateway lacks it or failed (see its log)",
            status,
            "gateway error",
        )

    @contextlib.contextmanager
    def _send(
        self, path: str, headers: dict[str, str] | None = None, *, follow: bool = True
    ) -> Iterator[Answer]:
        """``GET path``; every status is handed over (the caller decides)."""
        with self._http.request(
            "GET",
            path,
            endpoint=path.split("?")[0],
            headers=headers,
            ok=_ANY_STATUS,
            follow_redirects=follow,
        ) as answer:
            yield answer

    def fetch(self, path: str, *, limit: int) -> bytes:
        """``GET path``: at most ``limit`` bytes (more is a FormatError)."""
        with self._send(path) as r:
            if r.status != 200:
                raise self._fail(path, r.status)
            return _read_limited(r, limit, f"{self.url}{path}")

    def stream(
        self, path: str, chunk_size: int = 1 << 20, *, limit: int = MAX_STREAM
    ) -> Iterator[bytes]:
        """Stream ``GET path``, at most ``limit`` bytes (the caller hashes)."""
        with self._send(path) as r:
            if r.status != 200:
                raise self._fail(path, r.status)
            yield from r.iter_bytes(limit, chunk_size)

    def raw_block(self, cid: Cid) -> bytes | None:
        """A raw block (trustless gateway), or None when the gateway serves none."""
        if self._raw is False:
            return None
        path = f"/ipfs/{cid.encode()}?format=raw"
        with self._send(path, {"Accept": RAW_BLOCK_TYPE}, follow=False) as r:
            kind = r.content_type()
            if r.status != 200 or kind != RAW_BLOCK_TYPE:
                if self._raw is None:
                    self._raw = False  # js-ipfs: 301 to a listing, or the file itself
                    return None
                raise self._fail(path, r.status)
            self._raw = True
            return _read_limited(r, MAX_BLOCK_SIZE, f"{self.url}{path}")

    def car_block(self, cid: Cid) -> bytes | None:
        """One block from a one-block CAR (``?format=car&dag-scope=block``), verified against
        ``cid``; None when the gateway serves no CARs.

        Raises:
            HashMismatch / FormatError: the CAR holds other bytes, or not this block.
        """
        if self._car is False:
            return None
        path = f"/ipfs/{cid.encode()}?format=car&dag-scope=block"
        with self._send(path, {"Accept": CAR_TYPE}, follow=False) as r:
            kind = r.content_type()
            if r.status != 200 or kind != CAR_TYPE:
                if self._car is None:
                    self._car = False  # js-ipfs: the file itself, or a listing
                    return None
                raise self._fail(path, r.status)
            # One block plus the header and one section head.
            data = _read_limited(r, MAX_BLOCK_SIZE + 4096, f"{self.url}{path}")
        where = f"{self.url}{path}"
        _roots, sections = iter_car(io.BytesIO(data), max_section=MAX_BLOCK_SIZE + 1024)
        for got, block in sections:  # each block re-hashed against its own CID by iter_car
            if got.multihash == cid.multihash and got.codec == cid.codec:
                self._car = True
                return block
        raise FormatError(f"{where}: the CAR does not hold block {cid}")

    def dag_car(self, cid: Cid, *, limit: int) -> Generator[tuple[Cid, bytes], None, None]:
        """The DAG under ``cid`` as one CAR (trustless gateway, ``dag-scope=all``, asked
        depth-first without duplicates: the IPIP-412 ``order=dfs; dups=n``), its blocks as
        they arrive, each checked against its own CID by the CAR reader; at most ``limit``
        bytes. Nothing when the gateway serves no CARs. Whether the blocks are the DAG's is
        the caller's check (:class:`odfweb3_ipfs.read.dag_spool.DagSpool`).

        Raises:
            HashMismatch / FormatError: a block is not its CID's, or the CAR is malformed,
                truncated, or rooted elsewhere.
            BackendRejected / BackendUnavailable: more than ``limit`` bytes, a dropped
                connection, the deadline.
        """
        if self._car is False:
            return
        path = f"/ipfs/{cid.encode()}?format=car&dag-scope=all"
        accept = f"{CAR_TYPE}; version=1; order=dfs; dups=n"
        with self._send(path, {"Accept": accept}, follow=False) as r:
            if r.status != 200 or r.content_type() != CAR_TYPE:
                return
            reader = io.BufferedReader(_ChunkStream(r.iter_bytes(limit)), 1 << 16)
            roots, sections = iter_car(reader)
            if roots[:1] != [cid]:
                raise FormatError(f"{self.url}{path}: the CAR is rooted elsewhere, not at {cid}")
            yield from sections

    def ipns_record(self, name: IpnsName) -> bytes | None:
        """The raw IPNS record (Kubo's gateway), or None when the gateway gives none."""
        if self._records is False:
            return None
        path = f"/ipns/{name}?format=ipns-record"
        with self._send(path, {"Accept": RECORD_TYPE}, follow=False) as r:
            kind = r.content_type()
            if r.status != 200 or kind != RECORD_TYPE:
                if kind != RECORD_TYPE and r.status != 404:
                    self._records = False  # js-ipfs: ignores the Accept header
                return None
            self._records = True
            return _read_limited(r, MAX_RECORD_SIZE, f"{self.url}{path}")


class _ChunkStream(io.RawIOBase):
    """A byte iterator read as a file (the CAR reader reads a stream)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._pending:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._pending = memoryview(chunk)
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n


def _read_limited(answer: Answer, limit: int, where: str) -> bytes:
    try:
        return answer.read(limit)
    except BackendRejected as exc:
        if exc.detail != "answer too large":
            raise
        raise FormatError(f"{where}: answer is longer than the {limit} bytes expected") from None
