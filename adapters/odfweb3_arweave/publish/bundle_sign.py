"""Signing the planned ANS-104 bundle of a publish: the I/O half of :mod:`.bundle_plan`.

:func:`sign_bundle` signs the items :func:`~.bundle_plan.plan_bundle` decided on, in the
order their references need (ids exist only once an item is signed): data items (streamed
once through a verified reader), their ArFS metadata, the drive and folders on a first
upload, the key envelope, the path manifest, an optional item naming the manifest, and the
upload record last. The steps are told in :mod:`.bundle_plan`.
"""

from __future__ import annotations

import hashlib
import secrets
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import BinaryIO, TypeVar, cast

from odfweb3.errors import FormatError, HashMismatch
from odfweb3.odf.chain import DatasetObject
from odfweb3.streams import DeferrableStream, VerifiedStream, VerifiedStreamBase
from odfweb3_arweave.formats.ans104 import (
    DataItem,
    DataItemHeader,
    StreamedDataItem,
    create_data_item,
    sign_data_item_digest,
    sign_data_item_stream_digest,
)
from odfweb3_arweave.formats.arfs import (
    DATASET_FOLDERS,
    JSON_CONTENT_TYPE,
    FileMetadata,
    app_tags,
    drive_entity,
    file_data_tags,
    file_metadata_entity,
    folder_entity,
)
from odfweb3_arweave.formats.arfs_private import (
    IV_SIZE,
    DriveKey,
    EncryptingStream,
    FileKey,
    derive_file_key,
    encrypt,
    encrypted_size,
    private_data_tags,
    seal_entity,
)
from odfweb3_arweave.formats.b64 import b64url_encode
from odfweb3_arweave.formats.manifest import (
    FULL_MANIFEST_TAG,
    MANIFEST_CONTENT_TYPE,
    encode_manifest_chunks,
    in_path_order,
)
from odfweb3_arweave.formats.record import AddedFile, UploadRecord, encode_record_chunks
from odfweb3_arweave.formats.tags import Tag
from odfweb3_arweave.publish.bundle_plan import (
    KEY_ENVELOPE_TAG,
    REFS_HEAD,
    BundlePlan,
    FileRef,
    FileToAdd,
    Overlay,
    _record,
    _record_tags,
)
from odfweb3_arweave.publish.item_spool import ItemSpool
from odfweb3_arweave.publish.signed_files import SignedFiles
from odfweb3_arweave.wallet import Wallet

__all__ = ["AfterManifest", "SignedBundle", "sign_bundle"]

#: Items placed after the manifest, made once the id a reader opens the upload by and the
#: files after it (path -> revision) are known: each one's data (bytes, or its pieces, spooled
#: as they come: a document listing every data file is never joined) and tags, made one at a
#: time as they are signed.
AfterManifest = Callable[
    [str, Mapping[str, FileRef]], Iterable[tuple[bytes | Iterable[bytes], Sequence[Tag]]]
]


@dataclass(frozen=True)
class SignedBundle:
    """The signed items of one bundle and the ids they got.

    Attributes:
        items: in bundle order, the record last; spooled (:class:`.item_spool.ItemSpool`:
            written by its ``write``, closed by its ``close``).
        files: path -> current revision for the whole dataset after this upload.
        added: path -> the revisions this bundle adds.
        manifest_id: the path manifest's item id (every path, or a delta: the paths of
            ``added``; its data only in the spool).
        record: the upload record.
        record_id: its item id.
        extra_ids: the ids of the ``after_manifest`` items, in order.
        key_envelope_id: the id of the key envelope item, if any.
    """

    items: ItemSpool
    files: Mapping[str, FileRef]
    added: Mapping[str, AddedFile]
    manifest_id: str
    record: UploadRecord
    record_id: str
    extra_ids: tuple[str, ...] = ()
    key_envelope_id: str | None = None


# Items signed at once on the signing threads: each holds one open file and
# at most one read of it, so this bounds memory; two threads keep two cores busy (the
# hashes and OpenSSL's RSA release the GIL on their long runs).
_SIGN_THREADS = 2
_SIGN_AHEAD = 8
# An object re-read for the bundle hashes its chunks (its SHA3-256 check) on a worker while
# this thread writes them, when it is at least this large (smaller: not worth a handoff).
_OVERLAP_BYTES = 1 << 20

T = TypeVar("T")
# What a data item's signing job gives: a public object's header and signed SHA-384 (its
# data read again by index), or an item (in memory, or with its own reopen function).
Signed = tuple[DataItemHeader, bytes | None] | DataItem | StreamedDataItem


def _in_order(pool: ThreadPoolExecutor, jobs: Iterable[Callable[[], T]]) -> Iterator[T]:
    """Run ``jobs`` on ``pool``, at most ``_SIGN_AHEAD`` at once; results in job order."""
    window: deque[Future[T]] = deque()
    try:
        for job in jobs:
            window.append(pool.submit(job))
            if len(window) >= _SIGN_AHEAD:
                yield window.popleft().result()
        while window:
            yield window.popleft().result()
    finally:
        for future in window:
            future.cancel()


class _CheckedStream(VerifiedStreamBase):
    """Re-reading an object for the bundle: verified again when its ``with`` block ends.

    A large plaintext object (a reader with ``defer_hashing``) is hashed on ``hasher``'s
    one thread, in order, while the caller writes what it read: the check still covers
    exactly the bytes read, and runs before the ``with`` block ends.
    """

    finish_on_exit = True

    def __init__(
        self, stream: VerifiedStream, hasher: ThreadPoolExecutor | None = None, size: int = 0
    ) -> None:
        self._stream = stream
        self._hasher: ThreadPoolExecutor | None = None
        self._pending: deque[Future[None]] = deque()
        if hasher is not None and size >= _OVERLAP_BYTES and isinstance(stream, DeferrableStream):
            stream.defer_hashing()
            self._hasher = hasher
            self._absorb: Callable[[bytes], None] = stream.absorb

    def read(self, n: int = -1) -> bytes:
        data = self._stream.read(n)
        if self._hasher is not None and data:
            self._pending.append(self._hasher.submit(self._absorb, data))
            while len(self._pending) > _SIGN_AHEAD:
                self._pending.popleft().result()
        return data

    def finish(self) -> None:
        _drain(self._pending)
        self._stream.finish()

    def close(self) -> None:
        try:
            _drain(self._pending)
        finally:
            self._stream.close()


class _SignedBytes(VerifiedStreamBase):
    """Re-reading a signed plaintext object for the bundle: the same bytes as signed.

    Signing read the object once through its verifying reader (SHA3-256 and size against
    its block) and computed the SHA-384 its signature covers (the deep hash). This second
    read, to write the bytes into the bundle, checks that SHA-384 again instead of the
    SHA3-256: equal digests are the bytes that were verified and signed, at 0.9 instead
    of 1.75 CPU-s per GB (bench/RESULTS.md). Large objects are hashed on
    ``hasher``'s one thread, in order, while the caller writes; the check runs before the
    ``with`` block ends, so a file changed in between never reaches a renamed bundle.
    """

    finish_on_exit = True

    def __init__(
        self,
        stream: DeferrableStream,
        signed: bytes,
        where: str,
        hasher: ThreadPoolExecutor | None,
        size: int,
    ) -> None:
        stream.defer_hashing()  # the reader only counts now
        self._stream = stream
        self._signed = signed
        self._where = where
        self._sha384 = hashlib.sha384()
        self._hasher = hasher if size >= _OVERLAP_BYTES else None
        self._pending: deque[Future[None]] = deque()

    def read(self, n: int = -1) -> bytes:
        data = self._stream.read(n)
        if data:
            if self._hasher is not None:
                self._pending.append(self._hasher.submit(self._sha384.update, data))
                while len(self._pending) > _SIGN_AHEAD:
                    self._pending.popleft().result()
            else:
                self._sha384.update(data)
        return data

    def finish(self) -> None:
        _drain(self._pending)
        self._stream.end()  # nothing after the last byte
        got = self._sha384.digest()
        if got != self._signed:
            raise HashMismatch(
                f"SHA-384 {self._signed.hex()} (signed)",
                f"SHA-384 {got.hex()}",
                f"{self._where} (changed between signing and writing the bundle)",
            )

    def close(self) -> None:
        try:
            _drain(self._pending)
        finally:
            self._stream.close()


def _drain(pending: deque[Future[None]]) -> None:
    """Wait for the hashing handed to the worker (its errors raised here, in order)."""
    while pending:
        pending.popleft().result()


def _sign_object(
    wallet: Wallet,
    entry: FileToAdd,
    tags: Sequence[Tag],
    open_object: Callable[[DatasetObject], VerifiedStream],
    size: int,
) -> tuple[DataItemHeader, bytes | None]:
    """Sign ``entry``'s object as it is read: its header, and the signed SHA-384 its
    second read is checked by (None: checked again by its own hash)."""
    obj = entry.obj
    assert obj is not None
    stream = open_object(obj)
    try:
        header, digest = sign_data_item_stream_digest(wallet, cast(BinaryIO, stream), size, tags)
        stream.finish()  # hash and size checked before the signature is used
    finally:
        stream.close()
    # A plaintext verifying reader (it can defer its hashing and check its end) is checked
    # on the second read by the SHA-384 just signed; any other stream (encrypted) again.
    return header, digest if isinstance(stream, DeferrableStream) else None


def _reopen(
    open_object: Callable[[DatasetObject], VerifiedStream],
    obj: DatasetObject,
    digest: bytes | None,
    hasher: ThreadPoolExecutor | None,
    size: int,
) -> BinaryIO:
    """Open ``obj`` again to write it into the bundle, checked (see :func:`_sign_object`)."""
    again = open_object(obj)
    if digest is not None and isinstance(again, DeferrableStream):
        return cast(BinaryIO, _SignedBytes(again, digest, again.where, hasher, size))
    return cast(BinaryIO, _CheckedStream(again, hasher, size))


def _sign_private_object(
    wallet: Wallet,
    entry: FileToAdd,
    tags: Sequence[Tag],
    open_object: Callable[[DatasetObject], VerifiedStream],
    size: int,
) -> StreamedDataItem:
    """A private drive's object, signed with its own reopen function (its file key and IV)."""
    header, digest = _sign_object(wallet, entry, tags, open_object, size)
    assert entry.obj is not None
    return StreamedDataItem(header, partial(_reopen, open_object, entry.obj, digest, None, size))


def sign_bundle(
    bundle: BundlePlan,
    wallet: Wallet,
    open_object: Callable[[DatasetObject], VerifiedStream],
    progress: Callable[[int], None] = lambda n: None,
    after_manifest: AfterManifest | None = None,
    key_envelope: bytes | None = None,
    drive_key: DriveKey | None = None,
    new_iv: Callable[[], bytes] = lambda: secrets.token_bytes(IV_SIZE),
) -> SignedBundle:
    """Sign every item of ``bundle`` in reference order (see the module docstring).

    Args:
        bundle: the plan from :func:`plan_bundle`.
        wallet: the signing wallet (RSA-4096).
        open_object: opens a dataset object for a verified read (``open_verified``).
        progress: called with the bytes of each object once it is signed.
        after_manifest: given the id a reader opens this upload by and the files after it
            (path -> revision), the data and tags of more items, signed and placed between
            the manifest and the record (their ids: ``SignedBundle.extra_ids``). That id is
            the manifest's when it is full (one id serves every path), the record's when it
            is a delta (a delta manifest maps only what this upload adds and is refused
            alone, docs/arweave.md section 9):
            the record names no such item, so it is signed first.
        key_envelope: an encrypted publish's encoded key envelope: one item before the
            manifest (``Content-Type: application/json``, ``ODF-Key-Envelope: 1``,
            ``ODF-Dataset-Id``), named by the record.
        drive_key: the drive key of a private drive (required exactly when
            ``bundle.drive.privacy`` is ``"private"``).
        new_iv: source of the 12-byte ``Cipher-IV`` values (private drives).

    Raises:
        IntegrityError / HashMismatch: an object's bytes differ from its recorded hash.
        FormatError: tags over the limits; a drive key missing or given for a public drive.
        CryptoError: signing failed.
    """
    v, t, d = bundle.app_version, bundle.unix_time, bundle.drive
    private = d.privacy == "private"
    if private != (drive_key is not None):
        raise FormatError(
            f"{d.privacy} drive {d.drive_id}: a drive key is needed exactly for private drives"
        )
    # Items are signed on _SIGN_THREADS threads, in bundle order; the jobs are made here in
    # order (IVs drawn in order), so only the random PSS salts differ from one by one.
    # The writer's hasher (one thread) outlives this call with the items that use it.
    signers = ThreadPoolExecutor(_SIGN_THREADS, thread_name_prefix="ans104-sign")
    hasher = ThreadPoolExecutor(1, thread_name_prefix="ans104-verify")

    def data_jobs() -> Iterator[Callable[[], Signed]]:
        for entry in bundle.add:
            if drive_key is not None:
                # ArFS private file data: AES-256-GCM with the file key, fresh IV per
                # revision (a File-Id is reused by every revision of refs/head).
                file_key, iv = derive_file_key(drive_key, entry.file_id), new_iv()
                tags = private_data_tags(iv, v)
                size = encrypted_size(entry.size)
                if entry.obj is not None:
                    plain_open = open_object

                    def opener(
                        obj: DatasetObject,
                        k: FileKey = file_key,
                        i: bytes = iv,
                        o: Callable[[DatasetObject], VerifiedStream] = plain_open,
                    ) -> VerifiedStream:
                        return EncryptingStream(k, i, o(obj))

                    yield lambda e=entry, g=tags, o=opener, n=size: _sign_private_object(  # type: ignore[misc]
                        wallet, e, g, o, n
                    )
                else:
                    _, ct = encrypt(file_key, entry.content or b"", iv)
                    yield lambda c=ct, g=tags: create_data_item(wallet, c, g)  # type: ignore[misc]
            else:
                tags = file_data_tags(entry.content_type, v)
                if entry.obj is not None:
                    yield lambda e=entry, g=tags: _sign_object(  # type: ignore[misc]
                        wallet, e, g, open_object, e.size
                    )
                else:
                    content = entry.content or b""
                    yield lambda c=content, g=tags: create_data_item(wallet, c, g)  # type: ignore[misc]

    # Each item goes to the spool as it is signed; only ids, sizes and offsets stay in
    # memory (the items themselves were ~20 KB per block). A public object's data is read
    # again by its index in the plan, checked by the SHA-384 kept here (48 bytes, not a
    # reopen function an object).
    digests = bytearray()  # per entry: the signed SHA-384 (zeros: not checked by it)
    by_digest = bytearray()  # per entry: 1 when the second read is checked by that digest

    def reopen(k: int) -> BinaryIO:
        entry = bundle.add[k]
        assert entry.obj is not None
        digest = bytes(digests[48 * k : 48 * k + 48]) if by_digest[k] else None
        return _reopen(open_object, entry.obj, digest, hasher, entry.size)

    spool = ItemSpool(wallet.owner, reopen)
    # Data items are spooled first, in plan order (entry k's at k), then their metadata
    # (at n + k): no array of spool indexes.
    n = len(bundle.add)
    data_spooled, meta_spooled = range(n), range(n, 2 * n)
    data_sizes = array("q")

    def meta_jobs() -> Iterator[Callable[[], DataItem]]:
        for entry, spooled in zip(bundle.add, data_spooled, strict=True):
            data_id = b64url_encode(spool.item_id(spooled))
            meta = FileMetadata(
                drive_id=d.drive_id,
                file_id=entry.file_id,
                parent_folder_id=entry.folder_id,
                name=entry.name,
                size=entry.size,
                last_modified_ms=t * 1000,
                data_tx_id=data_id,
                data_content_type=entry.content_type,
                unix_time=t,
            )
            entity = file_metadata_entity(meta, v)
            if drive_key is not None:  # ArFS: file metadata under the file key
                entity = seal_entity(entity, derive_file_key(drive_key, entry.file_id), new_iv())
            yield lambda e=entity: create_data_item(wallet, e.body, e.tags)  # type: ignore[misc]

    try:
        with signers:
            jobs = enumerate(zip(bundle.add, _in_order(signers, data_jobs()), strict=True))
            for k, (entry, item) in jobs:
                if isinstance(item, tuple):
                    header, digest = item
                    digests.extend(digest or bytes(48))
                    by_digest.append(digest is not None)
                    _spooled_at(spool.add_streamed(header, k), k)
                else:
                    digests.extend(bytes(48))
                    by_digest.append(0)
                    _spooled_at(spool.add(item), k)
                data_sizes.append(
                    encrypted_size(entry.size) if drive_key is not None else entry.size
                )
                if entry.obj is not None:
                    progress(entry.size)
            for index, meta_item in zip(meta_spooled, _in_order(signers, meta_jobs()), strict=True):
                _spooled_at(spool.add(meta_item), index)
        signed = SignedFiles(bundle.add, spool, data_spooled, meta_spooled, data_sizes)
        return _sign_rest(
            bundle,
            wallet,
            spool,
            data_spooled,
            meta_spooled,
            signed.added,
            signed.files,
            after_manifest,
            key_envelope,
            drive_key,
            new_iv,
        )
    except BaseException:
        spool.close()
        raise


def _spooled_at(index: int, want: int) -> None:
    if index != want:
        raise RuntimeError(f"bundle item spool: item spooled at {index}, not {want}")


def _sign_rest(
    bundle: BundlePlan,
    wallet: Wallet,
    spool: ItemSpool,
    data_spooled: Sequence[int],
    meta_spooled: Sequence[int],
    added: Mapping[str, AddedFile],
    new_files: Mapping[str, FileRef],
    after_manifest: AfterManifest | None,
    key_envelope: bytes | None,
    drive_key: DriveKey | None,
    new_iv: Callable[[], bytes],
) -> SignedBundle:
    v, t, d = bundle.app_version, bundle.unix_time, bundle.drive
    # The kept files are not copied (a view over the state); a first upload keeps none.
    files = Overlay(bundle.keep, new_files) if bundle.keep else new_files
    # Bundle order: object data, object metadata, then refs/head's data + metadata.
    # Each item below is spooled once signed (its data not held: the manifest and the record
    # of a first upload list every path); the order is a flat array of spool indexes.
    order = array("I", data_spooled[:-1])
    order.extend(meta_spooled[:-1])
    order.append(data_spooled[-1])
    order.append(meta_spooled[-1])

    def spooled(item: DataItem | StreamedDataItem) -> str:
        order.append(spool.add(item))
        return item.header.id_b64

    if bundle.include_drive:
        entities = [drive_entity(d, bundle.drive_name, t, v)]
        entities.append(folder_entity(d.drive_id, d.root_folder_id, bundle.drive_name, None, t, v))
        for name in DATASET_FOLDERS:
            folder_id = d.folder_ids[name]
            entities.append(folder_entity(d.drive_id, folder_id, name, d.root_folder_id, t, v))
        if drive_key is not None:  # ArFS: drive and folder metadata under the drive key
            entities = [seal_entity(e, drive_key, new_iv()) for e in entities]
        for e in entities:
            spooled(create_data_item(wallet, e.body, e.tags))
    envelope_id = None
    if key_envelope is not None:
        envelope_tags = [
            Tag.of("Content-Type", JSON_CONTENT_TYPE),
            Tag.of(KEY_ENVELOPE_TAG, "1"),
            Tag.of("ODF-Dataset-Id", bundle.dataset_id),
            *app_tags(v),
        ]
        envelope_id = spooled(create_data_item(wallet, key_envelope, envelope_tags))
    # index = refs/head: a gateway serves the head at /{manifest}. arlocal 1.1.66 also needs
    # an index to resolve /{manifest}/{path} at all (without one it serves the manifest).
    # A delta manifest maps what this bundle adds (refs/head always among it).
    mapped: Mapping[str, FileRef | AddedFile] = files if bundle.full_manifest is None else added
    manifest_tags: tuple[Tag, ...] = (Tag.of("Content-Type", MANIFEST_CONTENT_TYPE), *app_tags(v))
    if bundle.full_manifest is not None:
        manifest_tags += (Tag.of(FULL_MANIFEST_TAG, bundle.full_manifest),)
    # Spooled as it is encoded, signed over the SHA-384 taken meanwhile: a full manifest
    # maps every path (as a dict of every path and one JSON text it was a first upload's
    # peak); only the sorted paths are listed here (their strings are the map's own).
    pairs = ((p, mapped[p].data_item_id) for p in in_path_order(mapped))
    opener, size, digest = spool.write_data(encode_manifest_chunks(pairs, REFS_HEAD))
    manifest_header = sign_data_item_digest(wallet, size, digest, list(manifest_tags))
    manifest_id = spooled(StreamedDataItem(manifest_header, opener))
    record = _record(bundle, manifest_id, added, envelope_id)
    tags = _record_tags(bundle, manifest_id, added)
    # Signed here (the items after the manifest may name it), placed last; spooled as it
    # is encoded (a first upload's lists every path).
    opener, size, digest = spool.write_data(encode_record_chunks(record))
    record_item = StreamedDataItem(sign_data_item_digest(wallet, size, digest, tags), opener)
    record_id, record_index = record_item.header.id_b64, spool.add(record_item)
    extra_ids: list[str] = []
    if after_manifest is not None:
        opened_by = manifest_id if bundle.full_manifest is None else record_id
        for extra_data, extra_tags in after_manifest(opened_by, files):
            if isinstance(extra_data, bytes):
                extra_item: DataItem | StreamedDataItem = create_data_item(
                    wallet, extra_data, list(extra_tags)
                )
            else:
                # Spooled piece by piece, signed over the SHA-384 taken as they were written.
                opener, size, digest = spool.write_data(extra_data)
                header = sign_data_item_digest(wallet, size, digest, list(extra_tags))
                extra_item = StreamedDataItem(header, opener)
            extra_ids.append(spooled(extra_item))
    order.append(record_index)
    spool.set_order(order)
    return SignedBundle(
        items=spool,
        files=files,
        added=added,
        manifest_id=manifest_id,
        record=record,
        record_id=record_id,
        extra_ids=tuple(extra_ids),
        key_envelope_id=envelope_id,
    )
