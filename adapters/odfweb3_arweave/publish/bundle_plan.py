"""Planning and signing the one ANS-104 bundle of a publish (DESIGN.md section 5).

:func:`plan_bundle` is pure: from the publish plan and what earlier uploads left
(:class:`PreviousUpload`: path -> data item, metadata item and ArFS ``File-Id``) it decides
which file entity revisions the bundle adds, and whether the drive and its folders must be
created. :func:`sign_bundle` then signs the items; ids exist only once an item is signed
(id = SHA-256(signature)), so the order of signing follows the references:

1. the data items of new objects (each streamed once from its file through a verified
   reader: hash and size are checked as the bytes are signed) and of ``refs/head``;
2. their ArFS metadata items, whose JSON names the data item (``dataTxId``);
3. on the first upload only: the drive, its root folder and ``blocks/ refs/ data/
   checkpoints/``; then, for an encrypted publish, the key envelope (JSON, tagged
   ``ODF-Key-Envelope: 1``), named by the record;
4. the path manifest (every path of the dataset: new paths -> new items, old -> old;
   index ``refs/head``);
5. optionally an extra item that must name the manifest (the discovery descriptor, whose
   ``relation`` lists ``ar://<manifest>``), made by a caller's function of the manifest id;
6. the upload record (names the manifest and the previous record).

Bundle order is the same, so the record is the last item. Streamed items are read a
second time when the bundle is written; that read is verified again.

Encrypted publishes outside ArFS private drives (``sealer``, DESIGN.md section 6): every
data item (objects and ``refs/head``) holds the segmented ciphertext of
:mod:`odfweb3.crypto.segments` with the ODF path bound in, sizes are ciphertext sizes, and
``open_object`` yields ciphertext (:func:`odfweb3.publish.source.open_for_publish`). The
ArFS metadata and the manifest still name files by their ODF paths.

ArFS private drives (``privacy="private"``, :mod:`.arfs_private`): ``open_object`` yields
plaintext, which :func:`sign_bundle` encrypts with the file key of the entry's ``File-Id``
and a fresh IV per entry (the same IV when the object is read again to write the bundle,
so both reads give the same ciphertext); drive, folder and file metadata bodies are
encrypted too. File metadata keeps ArFS's plaintext ``size`` and ``dataContentType``
(inside the encrypted body); the data item is 16 bytes longer (the GCM tag). The path
manifest and the upload record stay public (paths = ODF hashes of the plaintext).
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, BinaryIO, Protocol, cast

from odfweb3.crypto.sealer import Sealer
from odfweb3.errors import FormatError
from odfweb3.odf.chain import DatasetObject
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.plan import PublishPlan
from odfweb3_arweave.formats.ans104 import (
    DataItem,
    StreamedDataItem,
    check_tags,
    create_data_item,
    encode_tags,
    sign_data_item_stream,
)
from odfweb3_arweave.formats.arfs import (
    DATASET_FOLDERS,
    JSON_CONTENT_TYPE,
    OCTET_STREAM,
    DriveLayout,
    FileMetadata,
    Privacy,
    app_tags,
    drive_entity,
    file_data_tags,
    file_metadata_entity,
    folder_entity,
    is_uuid,
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
from odfweb3_arweave.formats.manifest import MANIFEST_CONTENT_TYPE, PathManifest, encode_manifest
from odfweb3_arweave.formats.record import AddedFile, UploadRecord, encode_record, record_tags
from odfweb3_arweave.formats.tags import Tag
from odfweb3_arweave.wallet import Wallet

__all__ = [
    "KEY_ENVELOPE_TAG",
    "REFS_HEAD",
    "BundlePlan",
    "FileRef",
    "FileToAdd",
    "PreviousUpload",
    "SignedBundle",
    "VerifiedStream",
    "plan_bundle",
    "sign_bundle",
]

REFS_HEAD = "refs/head"
KEY_ENVELOPE_TAG = "ODF-Key-Envelope"
_REFS_HEAD_CONTENT_TYPE = "text/plain"
_PLACEHOLDER_ID = "A" * 43


class VerifiedStream(Protocol):
    """A stream over one object that checks its hash and size at the end (``open_verified``)."""

    def read(self, n: int = -1) -> bytes:
        """Read up to ``n`` bytes."""
        ...

    def finish(self) -> None:
        """Raise unless everything read matched the recorded size and hash."""
        ...

    def close(self) -> None:
        """Close the file."""
        ...


@dataclass(frozen=True)
class FileRef:
    """Where an earlier upload put one path: its current file entity revision.

    Attributes:
        file_id: the ArFS ``File-Id``.
        data_item_id: the data item with the bytes.
        meta_item_id: the ArFS metadata item.
        size: data size in bytes.
    """

    file_id: str
    data_item_id: str
    meta_item_id: str
    size: int

    def to_json(self) -> dict[str, Any]:
        """JSON form (publish state)."""
        return {
            "dataItemId": self.data_item_id,
            "fileId": self.file_id,
            "metaItemId": self.meta_item_id,
            "size": self.size,
        }

    @classmethod
    def from_json(cls, data: Any, where: str) -> FileRef:
        """Parse the JSON form.

        Raises:
            FormatError: a field missing or malformed.
        """
        try:
            ref = cls(
                str(data["fileId"]),
                str(data["dataItemId"]),
                str(data["metaItemId"]),
                int(data["size"]),
            )
        except (KeyError, TypeError, ValueError):
            raise FormatError(f"{where}: malformed file reference") from None
        if not is_uuid(ref.file_id) or len(ref.data_item_id) != 43 or len(ref.meta_item_id) != 43:
            raise FormatError(f"{where}: file reference with a bad fileId or item id")
        return ref


@dataclass(frozen=True)
class PreviousUpload:
    """What earlier uploads of this dataset left (from publish state or the network).

    Attributes:
        drive: the drive's ids (kept forever).
        files: path -> current revision, ``refs/head`` included.
        record_id: the last upload record's item id.
        head: the head that upload published (multibase).
        complete: the earlier items can be relied on. When false (e.g. an earlier bundle
            was lost before it was posted) everything is sent again, drive included, under
            the same drive, folder and file ids.
    """

    drive: DriveLayout
    files: Mapping[str, FileRef]
    record_id: str | None
    head: str | None
    complete: bool = True


@dataclass(frozen=True)
class FileToAdd:
    """One file entity revision the bundle adds.

    Attributes:
        path: dataset path (``data/f1620…``, ``refs/head``).
        folder_id: parent folder id.
        file_id: ``File-Id`` (reused when the path was uploaded before).
        size: data size.
        content_type: media type of the data.
        obj: the dataset object to stream, or None for in-memory ``content``.
        content: the bytes (``refs/head``) when ``obj`` is None.
    """

    path: str
    folder_id: str
    file_id: str
    size: int
    content_type: str
    obj: DatasetObject | None = None
    content: bytes | None = None

    @property
    def name(self) -> str:
        """The ArFS file name: the last path segment."""
        return self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class BundlePlan:
    """What one bundle holds, before signing (no ids yet).

    Attributes:
        dataset_id: ``did:odf:…``.
        head: the head being published (multibase).
        prev_head: the previous upload's head, if any.
        prev_upload: the previous upload's record id, if any.
        drive: the drive's ids.
        drive_name: the drive's ArFS name.
        include_drive: create the drive and its folders (first upload).
        add: file revisions to add: new objects in plan order, then ``refs/head``.
        keep: paths already uploaded and unchanged.
        unix_time: ``Unix-Time`` of every item.
        app_version: ``App-Version``.
        record_extra_tags: extra tags for the record item (checked against the limits).
        inputs: dataset ID -> ``ar://RECORD`` of each input, for the record body (issue 11;
            from ``plan.record_extra["inputs"]``), or None.
    """

    dataset_id: str
    head: str
    prev_head: str | None
    prev_upload: str | None
    drive: DriveLayout
    drive_name: str
    include_drive: bool
    add: tuple[FileToAdd, ...]
    keep: Mapping[str, FileRef]
    unix_time: int
    app_version: str
    record_extra_tags: tuple[Tag, ...] = ()
    inputs: Mapping[str, str] | None = None

    @property
    def item_count(self) -> int:
        """Items in the bundle."""
        return 2 * len(self.add) + (6 if self.include_drive else 0) + 2


def plan_bundle(
    plan: PublishPlan,
    previous: PreviousUpload | None,
    *,
    unix_time: int,
    app_version: str,
    drive_name: str | None = None,
    size_of: Callable[[DatasetObject], int] | None = None,
    record_extra_tags: Sequence[Tag] = (),
    new_id: Callable[[], uuid.UUID] = uuid.uuid4,
    sealer: Sealer | None = None,
    privacy: Privacy = "public",
) -> BundlePlan:
    """Decide the bundle's content (pure: no I/O, nothing signed).

    Args:
        plan: the publish plan (``send``: objects to upload; ``objects``: all of them).
        previous: what earlier uploads left, or None for a first upload.
        unix_time: seconds since the epoch, for ``Unix-Time`` tags.
        app_version: ``App-Version`` tag value.
        drive_name: the drive's name (default: the dataset id).
        size_of: size of an object whose block records none.
        record_extra_tags: user tags for the record item.
        new_id: UUID source (tests pass a deterministic one).
        sealer: encrypt: data item sizes are ciphertext sizes, ``refs/head`` is sealed.
        privacy: ``"private"``: an ArFS private drive (sizes stay plaintext sizes here;
            :func:`sign_bundle` encrypts). Not with ``sealer``.

    Raises:
        FormatError: an object the plan does not send is missing from ``previous``, an
            object without a known size, record tags over the ANS-104 limits, a drive
            whose privacy differs from ``privacy``, or ``sealer`` with a private drive.
    """
    if sealer is not None and privacy == "private":
        raise FormatError("ArFS private drive: do not also --encrypt; use one or the other")
    if previous is not None and previous.drive.privacy != privacy:
        raise FormatError(
            f"the earlier uploads went to a {previous.drive.privacy} drive, this publish asks "
            f"for a {privacy} one; move publish.json away to start a new drive"
        )
    drive = previous.drive if previous is not None else DriveLayout.new(new_id, privacy)
    known: Mapping[str, FileRef] = previous.files if previous is not None else {}
    reliable = previous is not None and previous.complete
    sending = {o.path for o in plan.send}
    keep: dict[str, FileRef] = {}
    for obj in plan.objects:
        if obj.path in sending:
            continue
        if not reliable or obj.path not in known:
            raise FormatError(
                f"{obj.path}: not in this bundle and not in the publish state; "
                "move publish.json away to publish everything again"
            )
        keep[obj.path] = known[obj.path]
    add: list[FileToAdd] = []
    for obj in plan.send:
        size = obj.size if obj.size is not None else (size_of(obj) if size_of else None)
        if size is None:
            raise FormatError(f"{obj.path}: size unknown; cannot sign its data item")
        if sealer is not None:
            size = sealer.sealed_size(size)
        old = known.get(obj.path)
        add.append(
            FileToAdd(
                path=obj.path,
                folder_id=drive.folder_for(obj.path),
                file_id=old.file_id if old else str(new_id()),
                size=size,
                content_type=OCTET_STREAM,
                obj=obj,
            )
        )
    head_text = multihash_to_str(plan.head)
    head_ref = known.get(REFS_HEAD)
    head_bytes = head_text.encode("ascii")
    if sealer is not None:
        head_bytes = sealer.seal_bytes(head_bytes, REFS_HEAD)
    add.append(
        FileToAdd(
            path=REFS_HEAD,
            folder_id=drive.folder_ids["refs"],
            file_id=head_ref.file_id if head_ref else str(new_id()),
            size=len(head_bytes),
            content_type=_REFS_HEAD_CONTENT_TYPE if sealer is None else OCTET_STREAM,
            content=head_bytes,
        )
    )
    bundle = BundlePlan(
        dataset_id=plan.dataset_id,
        head=head_text,
        prev_head=previous.head if previous is not None else None,
        prev_upload=previous.record_id if previous is not None else None,
        drive=drive,
        drive_name=drive_name or plan.dataset_id,
        include_drive=not reliable,
        add=tuple(add),
        keep=keep,
        unix_time=unix_time,
        app_version=app_version,
        record_extra_tags=tuple(record_extra_tags),
        inputs=_inputs(plan),
    )
    # Refuse tags over the limits now, before any file is read or anything signed.
    encode_tags(_record_tags(bundle, _PLACEHOLDER_ID, {}))
    return bundle


def _inputs(plan: PublishPlan) -> Mapping[str, str] | None:
    """The inputs map the publish asked the record to carry (issue 11), or None."""
    raw = plan.record_extra.get("inputs")
    return {str(k): str(v) for k, v in raw.items()} if raw else None


def _record(
    bundle: BundlePlan,
    manifest_id: str,
    added: Mapping[str, AddedFile],
    key_envelope: str | None = None,
) -> UploadRecord:
    return UploadRecord(
        dataset_id=bundle.dataset_id,
        head=bundle.head,
        prev_head=bundle.prev_head,
        prev_upload=bundle.prev_upload,
        manifest_id=manifest_id,
        drive=bundle.drive,
        added=added,
        unix_time=bundle.unix_time,
        app_version=bundle.app_version,
        key_envelope=key_envelope,
        inputs=bundle.inputs,
    )


def _record_tags(
    bundle: BundlePlan, manifest_id: str, added: Mapping[str, AddedFile]
) -> tuple[Tag, ...]:
    tags = record_tags(_record(bundle, manifest_id, added)) + bundle.record_extra_tags
    check_tags(tags)
    return tags


@dataclass(frozen=True)
class SignedBundle:
    """The signed items of one bundle and the ids they got.

    Attributes:
        items: in bundle order, the record last.
        files: path -> current revision for the whole dataset after this upload.
        added: path -> the revisions this bundle adds.
        manifest: the path manifest.
        manifest_id: its item id.
        record: the upload record.
        record_id: its item id.
        extra_id: the id of the ``after_manifest`` item, if any.
        key_envelope_id: the id of the key envelope item, if any.
    """

    items: tuple[DataItem | StreamedDataItem, ...]
    files: Mapping[str, FileRef]
    added: Mapping[str, AddedFile]
    manifest: PathManifest
    manifest_id: str
    record: UploadRecord
    record_id: str
    extra_id: str | None = None
    key_envelope_id: str | None = None


class _CheckedStream:
    """Re-reading an object for the bundle: verified again when its ``with`` block ends."""

    def __init__(self, stream: VerifiedStream) -> None:
        self._stream = stream

    def read(self, n: int = -1) -> bytes:
        return self._stream.read(n)

    def __enter__(self) -> _CheckedStream:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if exc is None:
                self._stream.finish()
        finally:
            self._stream.close()


def _sign_object(
    wallet: Wallet,
    entry: FileToAdd,
    tags: Sequence[Tag],
    open_object: Callable[[DatasetObject], VerifiedStream],
    size: int,
) -> StreamedDataItem:
    obj = entry.obj
    assert obj is not None
    stream = open_object(obj)
    try:
        header = sign_data_item_stream(wallet, cast(BinaryIO, stream), size, tags)
        stream.finish()  # hash and size checked before the signature is used
    finally:
        stream.close()

    def reopen() -> BinaryIO:
        return cast(BinaryIO, _CheckedStream(open_object(obj)))

    return StreamedDataItem(header, reopen)


def sign_bundle(
    bundle: BundlePlan,
    wallet: Wallet,
    open_object: Callable[[DatasetObject], VerifiedStream],
    progress: Callable[[int], None] = lambda n: None,
    after_manifest: Callable[[str], tuple[bytes, Sequence[Tag]]] | None = None,
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
        after_manifest: given the manifest id, the data and tags of one more item, signed and
            placed between the manifest and the record (its id: ``SignedBundle.extra_id``).
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
    data_items: list[DataItem | StreamedDataItem] = []
    data_sizes: list[int] = []
    for entry in bundle.add:
        if drive_key is not None:
            # ArFS private file data: AES-256-GCM with the file key, fresh IV per revision
            # (a File-Id is reused by every revision of refs/head).
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

                data_items.append(_sign_object(wallet, entry, tags, opener, size))
                progress(entry.size)
            else:
                _, ct = encrypt(file_key, entry.content or b"", iv)
                data_items.append(create_data_item(wallet, ct, tags))
        else:
            tags = file_data_tags(entry.content_type, v)
            size = entry.size
            if entry.obj is not None:
                data_items.append(_sign_object(wallet, entry, tags, open_object, size))
                progress(entry.size)
            else:
                data_items.append(create_data_item(wallet, entry.content or b"", tags))
        data_sizes.append(size)
    meta_items: list[DataItem] = []
    added: dict[str, AddedFile] = {}
    files: dict[str, FileRef] = dict(bundle.keep)
    for entry, data_item, size in zip(bundle.add, data_items, data_sizes, strict=True):
        data_id = data_item.header.id_b64
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
        meta_item = create_data_item(wallet, entity.body, entity.tags)
        meta_items.append(meta_item)
        added[entry.path] = AddedFile(data_id, meta_item.id_b64, entry.file_id)
        files[entry.path] = FileRef(entry.file_id, data_id, meta_item.id_b64, size)
    # Bundle order: object data, object metadata, then refs/head's data + metadata.
    items: list[DataItem | StreamedDataItem] = [*data_items[:-1], *meta_items[:-1]]
    items += [data_items[-1], meta_items[-1]]
    if bundle.include_drive:
        entities = [drive_entity(d, bundle.drive_name, t, v)]
        entities.append(folder_entity(d.drive_id, d.root_folder_id, bundle.drive_name, None, t, v))
        for name in DATASET_FOLDERS:
            folder_id = d.folder_ids[name]
            entities.append(folder_entity(d.drive_id, folder_id, name, d.root_folder_id, t, v))
        if drive_key is not None:  # ArFS: drive and folder metadata under the drive key
            entities = [seal_entity(e, drive_key, new_iv()) for e in entities]
        items += [create_data_item(wallet, e.body, e.tags) for e in entities]
    envelope_id = None
    if key_envelope is not None:
        envelope_tags = [
            Tag.of("Content-Type", JSON_CONTENT_TYPE),
            Tag.of(KEY_ENVELOPE_TAG, "1"),
            Tag.of("ODF-Dataset-Id", bundle.dataset_id),
            *app_tags(v),
        ]
        envelope_item = create_data_item(wallet, key_envelope, envelope_tags)
        items.append(envelope_item)
        envelope_id = envelope_item.id_b64
    # index = refs/head: a gateway serves the head at /{manifest}. arlocal 1.1.66 also needs
    # an index to resolve /{manifest}/{path} at all (without one it serves the manifest).
    manifest = PathManifest({p: f.data_item_id for p, f in sorted(files.items())}, index=REFS_HEAD)
    manifest_tags = (Tag.of("Content-Type", MANIFEST_CONTENT_TYPE), *app_tags(v))
    manifest_item = create_data_item(wallet, encode_manifest(manifest), manifest_tags)
    items.append(manifest_item)
    extra_id = None
    if after_manifest is not None:
        extra_data, extra_tags = after_manifest(manifest_item.id_b64)
        extra_item = create_data_item(wallet, extra_data, list(extra_tags))
        items.append(extra_item)
        extra_id = extra_item.id_b64
    record = _record(bundle, manifest_item.id_b64, added, envelope_id)
    tags = _record_tags(bundle, manifest_item.id_b64, added)
    record_item = create_data_item(wallet, encode_record(record), tags)
    items.append(record_item)
    return SignedBundle(
        items=tuple(items),
        files=files,
        added=added,
        manifest=manifest,
        manifest_id=manifest_item.id_b64,
        record=record,
        record_id=record_item.id_b64,
        extra_id=extra_id,
        key_envelope_id=envelope_id,
    )
