"""One large data item through a Turbo bundler's multipart ``/chunks`` upload, resumable.

An item of at least ``arweave.turbo_chunked_above`` bytes is not posted whole to
``POST /v1/tx`` (one request body: the whole item in memory, and an interruption loses all
of it) but in chunks of ``arweave.turbo_chunk_bytes`` streamed from the spooled bundle (64 KiB
at a time) (:class:`~odfweb3_arweave.client.turbo.TurboClient`: create, one ``POST`` per chunk,
finalize, then the upload's status until the bundler has assembled, validated and
receipted the item).

What the checkpoint keeps (``chunked``, :func:`send_chunked` saves it at each step through
the caller's atomic checkpoint write): the item, the upload id, the chunk size, the offsets
the bundler answered 200 for (``sent``), the one being sent (``sending``, saved before its
first byte) and whether finalize was asked (``finalizing``). A rerun after Ctrl-C or a kill
asks the bundler which chunks it holds and sends only the others; a chunk it lists that
odfweb3 never sent (not planned, or never attempted) is refused, as is an upload id it does
not answer for. Nothing here is proof of anything: the receipt at the end is, verified for
the item's id by the pinned key exactly as ``POST /v1/tx``'s, and only a verified receipt is
kept (by the caller). The bundler checks the assembled bytes itself (it parses the item and
verifies its signature); a chunk it lost or mangled makes the item invalid, never another
item of ours.

Pure: :func:`plan_chunks` and :func:`chunks_to_send` (the planner). :func:`send_chunked` runs
the plan.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, BinaryIO, Final

from odfweb3.errors import BackendError, BackendRejected, FormatError, NotYetConfirmed
from odfweb3_arweave.client.turbo import ChunkedStatus, TurboClient
from odfweb3_arweave.formats.receipt import Receipt

__all__ = [
    "DEFAULT_CHUNKED_ABOVE",
    "DEFAULT_CHUNK_BYTES",
    "MAX_CHUNK_BYTES",
    "MIN_CHUNK_BYTES",
    "chunks_to_send",
    "plan_chunks",
    "resumed_bytes",
    "send_chunked",
]

#: The bundler's chunk size limits (turbo-upload-service ``src/constants.ts``: S3's 5 MiB
#: minimum part, its own 500 MiB maximum).
MIN_CHUNK_BYTES: Final = 5 << 20
MAX_CHUNK_BYTES: Final = 500 << 20
#: The smallest chunk the bundler takes (a chunk is streamed, never held whole).
DEFAULT_CHUNK_BYTES: Final = MIN_CHUNK_BYTES
#: Items from this size go in chunks: two chunks at least (bench/RESULTS.md, "one large item
#: whole against chunked": below it one POST is about twice as fast and the item small).
DEFAULT_CHUNKED_ABOVE: Final = 2 * DEFAULT_CHUNK_BYTES
_MAX_PARTS: Final = 10_000  # S3's part-number limit

Chunk = tuple[int, int]  # (offset in the item, size)


def plan_chunks(size: int, chunk_size: int) -> tuple[Chunk, ...]:
    """The chunks of an item of ``size`` bytes: ``chunk_size`` each, the last the rest.

    Raises:
        FormatError: a chunk size outside the bundler's limits, or more than 10,000 parts.
    """
    if not MIN_CHUNK_BYTES <= chunk_size <= MAX_CHUNK_BYTES:
        raise FormatError(
            f"arweave.turbo_chunk_bytes {chunk_size}: the bundler takes chunks of "
            f"{MIN_CHUNK_BYTES} to {MAX_CHUNK_BYTES} bytes"
        )
    chunks = tuple((o, min(chunk_size, size - o)) for o in range(0, size, chunk_size))
    if len(chunks) > _MAX_PARTS:
        raise FormatError(
            f"an item of {size} bytes is more than {_MAX_PARTS} chunks of {chunk_size}: raise "
            "arweave.turbo_chunk_bytes"
        )
    return chunks


def chunks_to_send(
    planned: tuple[Chunk, ...],
    listed: tuple[Chunk, ...],
    attempted: frozenset[int],
    *,
    where: str,
) -> tuple[tuple[Chunk, ...], tuple[Chunk, ...]]:
    """``(held, to_send)``: the planned chunks the bundler lists (``listed``) and the rest.

    A listed chunk counts as held only if it is one of ours: a planned offset with the
    planned size that odfweb3 attempted (``attempted``: answered 200, or being sent when the
    run stopped).

    Raises:
        BackendRejected: the bundler lists a chunk odfweb3 never sent (one line; nothing
            is sent).
    """
    plan = dict(planned)
    held: dict[int, int] = {}
    for offset, size in listed:
        if plan.get(offset) != size or offset not in attempted:
            raise BackendRejected(
                f"{where} lists a chunk at offset {offset} ({size} bytes) that odfweb3 never "
                "sent; nothing more was sent: delete the upload checkpoint beside the publish "
                "state and publish again (a new upload is started)",
                200,
                "chunk never sent",
            )
        held[offset] = size
    return (
        tuple(c for c in planned if c[0] in held),
        tuple(c for c in planned if c[0] not in held),
    )


def resumed_bytes(entry: Any, item_id: str) -> int:
    """The bytes of ``item_id`` the checkpoint entry says the bundler took (0: none)."""
    if not isinstance(entry, dict) or entry.get("itemId") != item_id:
        return 0
    chunk, size, sent = entry.get("chunkSize"), entry.get("size"), entry.get("sent")
    if not isinstance(chunk, int) or not isinstance(size, int) or not isinstance(sent, list):
        return 0
    return sum(min(chunk, max(size - o, 0)) for o in sent if isinstance(o, int) and o >= 0)


def _entry(raw: Any, item_id: str, size: int, chunk_size: int) -> dict[str, Any] | None:
    """The checkpoint's entry for this item, if it is one (else None: start anew)."""
    if not isinstance(raw, dict) or raw.get("itemId") != item_id or raw.get("size") != size:
        return None
    if not isinstance(raw.get("uploadId"), str) or raw.get("chunkSize") != chunk_size:
        return None
    sent = raw.get("sent")
    if not isinstance(sent, list) or not all(isinstance(o, int) for o in sent):
        return None
    return raw


def send_chunked(
    turbo: TurboClient,
    f: BinaryIO,
    item: tuple[str, int, int],
    saved: Any,
    save: Callable[[dict[str, Any] | None], None],
    *,
    chunk_size: int,
    timeout: float,
    sleep: Callable[[float], None],
    monotonic: Callable[[], float],
    poll_interval: float,
    advance: Callable[[int], None],
) -> Receipt:
    """Send ``item`` (``(id, offset in f, size)``) in chunks; its receipt, verified.

    ``saved`` is the checkpoint's ``chunked`` entry (None: nothing sent yet); ``save`` writes
    the entry (None: forget it) atomically with the checkpoint before this goes on;
    ``timeout`` bounds the wait for the bundler to assemble and receipt the item.

    Raises:
        BackendRejected: a refusal (the upload unknown, a chunk refused, a chunk listed
            that was never sent, the item invalid, no credits).
        SignatureError: a receipt for another item, by another key, or not verifying.
        NotYetConfirmed: no receipt by the deadline (exit 75; the checkpoint keeps the
            upload, a rerun asks again and sends nothing).
    """
    item_id, base, size = item
    planned = plan_chunks(size, chunk_size)
    entry = _entry(saved, item_id, size, chunk_size)
    where = f"Turbo bundler {turbo.url}"
    if entry is not None:
        upload_id = str(entry["uploadId"])
        where = f"{where} upload {upload_id}"
        if entry.get("finalizing"):
            receipt = _wait_receipt(
                turbo, entry, save, timeout, sleep, monotonic, poll_interval, resumed=True
            )
            if receipt is not None:
                return receipt
            entry = None  # the bundler knows the upload no more: start anew
        else:
            held = turbo.upload_chunks(upload_id)
            if held is None:
                entry = None  # expired or never ours: start anew
            else:
                attempted = frozenset(entry["sent"]) | (
                    {entry["sending"]} if isinstance(entry.get("sending"), int) else set()
                )
                kept, _ = chunks_to_send(planned, held.chunks, attempted, where=where)
                entry["sent"] = sorted({o for o, _ in kept})
                entry["sending"] = None
    if entry is None:
        created = turbo.create_upload(chunk_size)
        entry = {
            "itemId": item_id,
            "size": size,
            "uploadId": created.upload_id,
            "chunkSize": chunk_size,
            "sent": [],
            "sending": None,
            "finalizing": False,
        }
    save(entry)  # the upload id is kept before the first chunk goes
    upload_id = str(entry["uploadId"])
    done = set(entry["sent"])
    for offset, n in planned:
        if offset in done:
            continue
        entry["sending"] = offset
        save(entry)
        turbo.post_chunk(upload_id, offset, (n, _reader(f, base + offset, n)))
        entry["sent"] = sorted({*entry["sent"], offset})
        entry["sending"] = None
        save(entry)
        advance(n)
    entry["finalizing"] = True
    save(entry)
    receipt = turbo.finalize_upload(upload_id, item_id)
    if receipt is not None:
        return receipt
    receipt = _wait_receipt(
        turbo, entry, save, timeout, sleep, monotonic, poll_interval, resumed=False
    )
    if receipt is None:
        raise BackendError(
            f"Turbo bundler {turbo.url} lost upload {upload_id} of item {item_id} after it "
            "took every chunk; run publish again (a new upload is started)"
        )
    return receipt


_PIECE: Final = 1 << 16


def _reader(f: BinaryIO, start: int, n: int) -> Callable[[], Iterator[bytes]]:
    """The chunk's bytes from the spool in 64 KiB pieces, from the start on every call (a
    retried request sends it again): never a whole chunk in memory."""

    def pieces() -> Iterator[bytes]:
        f.seek(start)
        left = n
        while left > 0:
            piece = f.read(min(_PIECE, left))
            if not piece:
                raise FormatError(f"{getattr(f, 'name', 'bundle')}: spooled bundle is short")
            left -= len(piece)
            yield piece

    return pieces


def _wait_receipt(
    turbo: TurboClient,
    entry: dict[str, Any],
    save: Callable[[dict[str, Any] | None], None],
    timeout: float,
    sleep: Callable[[float], None],
    monotonic: Callable[[], float],
    poll_interval: float,
    *,
    resumed: bool,
) -> Receipt | None:
    """Ask the upload's status until FINALIZED with a verified receipt (returned), a
    failure (raised, the entry forgotten) or ``timeout`` (NotYetConfirmed, the entry kept).
    None: the bundler does not know the upload (the entry is forgotten)."""
    upload_id, item_id = str(entry["uploadId"]), str(entry["itemId"])
    deadline = monotonic() + timeout
    asked_again = not resumed
    while True:
        status: ChunkedStatus = turbo.upload_status(upload_id, item_id)
        if status.receipt is not None:
            return status.receipt
        if status.state == "NOT_FOUND":
            save(None)
            return None
        if status.state == "ASSEMBLING" and not asked_again:
            # A run stopped between saving "finalizing" and the bundler taking the request.
            asked_again = True
            receipt = turbo.finalize_upload(upload_id, item_id)
            if receipt is not None:
                return receipt
        elif status.state not in ("ASSEMBLING", "VALIDATING", "FINALIZING"):
            save(None)
            why = (
                "the wallet has no Turbo credits for it: top it up"
                if status.state == "UNDERFUNDED"
                else "it refused the assembled item"
            )
            raise BackendRejected(
                f"Turbo bundler {turbo.url} says upload {upload_id} of item {item_id} "
                f"{status.state}: {why}; nothing was kept, publish again sends it anew",
                200,
                status.state,
            )
        if monotonic() >= deadline:
            raise NotYetConfirmed(
                f"Turbo bundler {turbo.url} gave no receipt for item {item_id} (upload "
                f"{upload_id}) within {timeout:g} s (arweave.turbo_chunked_timeout_s; it says "
                f"{status.state}): its chunks are sent; run publish again later (it asks "
                "again and sends nothing more)"
            )
        sleep(min(poll_interval, max(deadline - monotonic(), 0.0)))
