"""Planning the one ANS-104 bundle of a publish (pure; signing is :mod:`.bundle_sign`).

docs/design.md, "Arweave mapping".

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
4. the path manifest, index ``refs/head``: a *delta* (the paths this bundle adds, tagged
   ``ODF-Full-Manifest``: the last full manifest's id) when an earlier upload left a full
   manifest and the chain of deltas after it stays within
   :data:`~odfweb3_arweave.formats.manifest.MAX_DELTA_UPLOADS`; else (a first upload, a
   resend of everything, ``manifest="full"``) *full*: every path of the dataset, new paths
   -> new items, old -> old (docs/arweave.md, section 9);
5. the upload record (names the manifest and the previous record);
6. optionally an extra item that must name the upload (the discovery descriptor, whose
   ``relation`` lists ``ar://<manifest>`` for a full manifest, ``ar://<record>`` for a
   delta, which a reader cannot open alone), made by a caller's function of that id.

Bundle order puts 6 before 5, so the record is the last item. Streamed items are read a
second time when the bundle is written; that read is verified again.

Encrypted publishes outside ArFS private drives (``sealer``, docs/design.md, "Encryption"): every
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

import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from odfweb3.crypto.sealer import Sealer
from odfweb3.errors import FormatError
from odfweb3.odf.chain import DatasetObject
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.plan import PublishPlan
from odfweb3_arweave.formats.ans104 import (
    check_tags,
    encode_tags,
)
from odfweb3_arweave.formats.arfs import (
    OCTET_STREAM,
    DriveLayout,
    Privacy,
    is_uuid,
)
from odfweb3_arweave.formats.manifest import MAX_DELTA_UPLOADS
from odfweb3_arweave.formats.record import AddedFile, SkipLink, UploadRecord, record_tags
from odfweb3_arweave.formats.tags import Tag
from odfweb3_arweave.publish.planned_files import FileToAdd, PlannedFiles

__all__ = [
    "KEY_ENVELOPE_TAG",
    "REFS_HEAD",
    "BundlePlan",
    "FileRef",
    "FileRefs",
    "FileToAdd",
    "KeptFiles",
    "ManifestKind",
    "Overlay",
    "PreviousUpload",
    "Tier",
    "merged_tiers",
    "plan_bundle",
    "plan_tier",
    "rebuilt_tiers",
    "tiers_after",
]

REFS_HEAD = "refs/head"
KEY_ENVELOPE_TAG = "ODF-Key-Envelope"
_REFS_HEAD_CONTENT_TYPE = "text/plain"
_PLACEHOLDER_ID = "A" * 43

# "delta": the manifest maps the paths the bundle adds, when the chain allows it;
# "full": every path (a consolidation: one id serves the whole dataset again).
ManifestKind = Literal["delta", "full"]


@dataclass(frozen=True, slots=True)
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


class FileRefs(Mapping[str, FileRef]):
    """Path -> :class:`FileRef` over a state's ``objects`` (a dict, or ``bundle:DIR``'s
    file index read part by part), each entry parsed when asked: an update reads the
    entries of its own paths only."""

    def __init__(self, raw: Mapping[str, Mapping[str, Any]], where: str) -> None:
        self.raw = raw
        self.where = where
        self._parsed: dict[str, FileRef] = {}

    def __contains__(self, key: object) -> bool:
        return key in self.raw

    def __getitem__(self, key: str) -> FileRef:
        ref = self._parsed.get(key)
        if ref is None:
            ref = self._parsed[key] = FileRef.from_json(self.raw[key], f"{self.where}: {key}")
        return ref

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)


class KeptFiles(Mapping[str, FileRef]):
    """``known`` without the ``dropped`` paths (sent again, and ``refs/head``), nothing
    copied: the paths a bundle keeps, as the state lists them."""

    def __init__(self, known: Mapping[str, FileRef], dropped: frozenset[str]) -> None:
        self.known = known
        self.dropped = dropped
        self._len = len(known) - sum(1 for p in dropped if p in known)

    def __contains__(self, key: object) -> bool:
        return key not in self.dropped and key in self.known

    def __getitem__(self, key: str) -> FileRef:
        if key in self.dropped:
            raise KeyError(key)
        return self.known[key]

    def __iter__(self) -> Iterator[str]:
        return (p for p in self.known if p not in self.dropped)

    def __len__(self) -> int:
        return self._len


class Overlay(Mapping[str, FileRef]):
    """``new`` over ``base`` (the dataset's files after a bundle: the kept ones and the ones
    it adds) without copying ``base``; iterating reads it all (a full manifest does)."""

    def __init__(self, base: Mapping[str, FileRef], new: Mapping[str, FileRef]) -> None:
        self.base = base
        self.new = new

    def __contains__(self, key: object) -> bool:
        return key in self.new or key in self.base

    def __getitem__(self, key: str) -> FileRef:
        ref = self.new.get(key)
        return ref if ref is not None else self.base[key]

    def __iter__(self) -> Iterator[str]:
        yield from self.new
        yield from (p for p in self.base if p not in self.new)

    def __len__(self) -> int:
        return len(self.base) + sum(1 for p in self.new if p not in self.base)


@dataclass(frozen=True)
class Tier:
    """One level of the publisher's binary counter of delta uploads (the record's tier,
    :mod:`odfweb3_arweave.formats.record`), kept in publish state.

    Attributes:
        link: the upload (record id, head, delta uploads since the full manifest).
        uploads: how many uploads its tier spans (0: the end of the chain: the full upload,
            or an upload without a tier, which a reader walks past by ``ODF-Prev-Upload``).
        files: what those uploads added (``refs/head`` left out), as the record lists it;
            None while only in its tier file (:mod:`.tier_files`, read when consolidated).
        digest: the SHA-256 of its tier file (None: not stored yet, ``files`` in hand).
    """

    link: SkipLink
    uploads: int
    files: tuple[tuple[str, AddedFile], ...] | None = ()
    digest: str | None = None


def merged_tiers(tiers: Sequence[Tier]) -> int:
    """How many of the newest ``tiers`` the next delta upload consolidates (pure): it spans
    itself and every newest tier whose span equals what it spans so far (1, 2, 4, ...)."""
    span, i = 1, 0
    while i < len(tiers) and tiers[i].uploads == span:
        span += tiers[i].uploads
        i += 1
    return i


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
        full_manifest_id: the last full manifest (None: unknown, the next one is full).
        deltas: delta uploads since that full manifest.
        tiers: the binary counter after the last upload, newest first (None: unknown, e.g.
            state written before tiers or rebuilt from the network: the next record jumps
            to the previous one only).
        croissant_id / dcat_id: the Croissant and DCAT documents' items of the last upload
            that wrote them (None: none yet).
    """

    drive: DriveLayout
    files: Mapping[str, FileRef]
    record_id: str | None
    head: str | None
    complete: bool = True
    full_manifest_id: str | None = None
    deltas: int = 0
    tiers: tuple[Tier, ...] | None = None
    croissant_id: str | None = None
    dcat_id: str | None = None


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
        add: file revisions to add: new objects in plan order, then ``refs/head`` (a
            :class:`.planned_files.PlannedFiles`: packed, each entry made when asked).
        keep: paths already uploaded and unchanged.
        unix_time: ``Unix-Time`` of every item.
        app_version: ``App-Version``.
        record_extra_tags: extra tags for the record item (checked against the limits).
        inputs: dataset ID -> ``ar://RECORD`` of each input, for the record body (lineage;
            from ``plan.record_extra["inputs"]``), or None.
        full_manifest: the last full manifest's id when this bundle's manifest is a delta
            (the paths of ``add`` only); None: a full manifest (``add`` and ``keep``).
        deltas: delta uploads since the last full manifest, this one included (0: full).
        span_uploads: the record's tier span (None: a full upload; see :func:`plan_tier`).
        earlier: what the ``span_uploads - 1`` uploads before this one added.
        skip_chain: where a reader jumps from this record, then from there.
        tiers_after: the binary counter after this upload, without this upload's own tier
            (:func:`tiers_after`, which adds it once the record id is known).
    """

    dataset_id: str
    head: str
    prev_head: str | None
    prev_upload: str | None
    drive: DriveLayout
    drive_name: str
    include_drive: bool
    add: Sequence[FileToAdd]
    keep: Mapping[str, FileRef]
    unix_time: int
    app_version: str
    record_extra_tags: tuple[Tag, ...] = ()
    inputs: Mapping[str, str] | None = None
    full_manifest: str | None = None
    deltas: int = 0
    span_uploads: int | None = None
    earlier: Mapping[str, AddedFile] = field(default_factory=dict)
    skip_chain: tuple[SkipLink, ...] = ()
    tiers_after: tuple[Tier, ...] = ()


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
    manifest: ManifestKind = "delta",
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
        manifest: ``"delta"`` (default): a delta manifest when ``previous`` names a full
            one and the chain of deltas stays within ``MAX_DELTA_UPLOADS``, else a full
            one; ``"full"``: a full manifest (consolidation).

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
    keep: Mapping[str, FileRef] = {}
    if reliable and plan.relation == "ahead":
        # The head descends from the published one, whose objects the state lists: the rest
        # of the layout is the state's, without walking the chain (plan.objects is lazy)
        # or reading the state's other entries (a view). Its length is known: a
        # state that does not add up is checked below.
        keep = KeptFiles(known, frozenset(sending | {REFS_HEAD}))
    if len(keep) + len(sending) != len(plan.objects):
        walked: dict[str, FileRef] = {}
        for obj in plan.objects:
            if obj.path in sending:
                continue
            if not reliable or obj.path not in known:
                raise FormatError(
                    f"{obj.path}: not in this bundle and not in the publish state; "
                    "move publish.json away to publish everything again"
                )
            walked[obj.path] = known[obj.path]
        keep = walked
    add = PlannedFiles(plan.send, drive)
    for obj in plan.send:
        size = obj.size if obj.size is not None else (size_of(obj) if size_of else None)
        if size is None:
            raise FormatError(f"{obj.path}: size unknown; cannot sign its data item")
        if sealer is not None:
            size = sealer.sealed_size(size)
        drive.folder_for(obj.path)  # a path outside the layout refused now, not when signed
        old = known.get(obj.path)
        add.append(old.file_id if old else str(new_id()), size)
    head_text = multihash_to_str(plan.head)
    head_ref = known.get(REFS_HEAD)
    head_bytes = head_text.encode("ascii")
    if sealer is not None:
        head_bytes = sealer.seal_bytes(head_bytes, REFS_HEAD)
    add.close(
        FileToAdd(
            path=REFS_HEAD,
            folder_id=drive.folder_ids["refs"],
            file_id=head_ref.file_id if head_ref else str(new_id()),
            size=len(head_bytes),
            content_type=_REFS_HEAD_CONTENT_TYPE if sealer is None else OCTET_STREAM,
            content=head_bytes,
        )
    )
    full_id = previous.full_manifest_id if previous is not None and reliable else None
    deltas = previous.deltas + 1 if previous is not None else 0
    # Every path sent again (a first upload, an encryption switch): the delta is full.
    if manifest == "full" or full_id is None or deltas > MAX_DELTA_UPLOADS or not keep:
        full_id, deltas = None, 0
    span: int | None = None
    earlier: dict[str, AddedFile] = {}
    chain: tuple[SkipLink, ...] = ()
    rest: tuple[Tier, ...] = ()
    if full_id is not None and previous is not None:
        span, earlier, chain, rest = plan_tier(previous, deltas, (a.path for a in add))
    bundle = BundlePlan(
        dataset_id=plan.dataset_id,
        head=head_text,
        prev_head=previous.head if previous is not None else None,
        prev_upload=previous.record_id if previous is not None else None,
        drive=drive,
        drive_name=drive_name or plan.dataset_id,
        include_drive=not reliable,
        add=add,
        keep=keep,
        unix_time=unix_time,
        app_version=app_version,
        record_extra_tags=tuple(record_extra_tags),
        inputs=_inputs(plan),
        full_manifest=full_id,
        deltas=deltas,
        span_uploads=span,
        earlier=earlier,
        skip_chain=chain,
        tiers_after=rest,
    )
    # Refuse tags over the limits now, before any file is read or anything signed.
    encode_tags(_record_tags(bundle, _PLACEHOLDER_ID, {}))
    return bundle


def plan_tier(
    previous: PreviousUpload, deltas: int, own: Iterable[str]
) -> tuple[int, dict[str, AddedFile], tuple[SkipLink, ...], tuple[Tier, ...]]:
    """The tier of delta upload ``deltas`` (pure): ``(span, earlier, skip chain, the
    counter's remaining tiers)``.

    A binary counter: the new upload spans itself and every newest tier whose span equals
    what it spans so far (1, then 2, 4, ...), so upload ``n`` spans the lowest set bit of
    ``n`` and the chain holds one tier per other set bit: a reader jumps through at most
    log2(n) + 1 records. Each upload's paths are copied into about log2(n) tiers: bytes per
    upload grow with the log of the chain, not with the dataset (docs/arweave.md, section 9).
    Without a known counter (``previous.tiers`` None) the upload spans itself only and
    jumps to the previous record.
    """
    own_paths = set(own)
    back = Tier(SkipLink(str(previous.record_id), str(previous.head), previous.deltas), 0)
    tiers = previous.tiers if previous.tiers else (back,)
    if tiers[0].link.record_id != previous.record_id or tiers[0].link.deltas != deltas - 1:
        tiers = (back,)  # a counter of another upload: never jump by it
    if any(t.files is None for t in tiers[: merged_tiers(tiers)]):
        tiers = (back,)  # a tier's files could not be read: no tier without them
    span, i = 1, 0
    earlier: dict[str, AddedFile] = {}
    while i < len(tiers) and tiers[i].uploads == span:
        for path, added in tiers[i].files or ():
            if path not in own_paths and path != REFS_HEAD:
                earlier.setdefault(path, added)  # newest tier first: newest revision wins
        span += tiers[i].uploads
        i += 1
    rest = tiers[i:]
    return span, earlier, tuple(t.link for t in rest), rest


def tiers_after(
    bundle: BundlePlan, record_id: str, added: Mapping[str, AddedFile]
) -> tuple[Tier, ...]:
    """The binary counter after ``bundle`` is posted as record ``record_id``, which lists
    ``added`` (newest first): a full upload starts it; a delta's own tier goes before the
    ones it did not span."""
    link = SkipLink(record_id, bundle.head, bundle.deltas)
    if bundle.span_uploads is None:
        return (Tier(link, 0),)
    files = dict(bundle.earlier)
    files.update((p, a) for p, a in added.items() if p != REFS_HEAD)
    return (Tier(link, bundle.span_uploads, tuple(sorted(files.items()))), *bundle.tiers_after)


def rebuilt_tiers(newest_first: Sequence[tuple[str, UploadRecord]]) -> tuple[Tier, ...] | None:
    """The binary counter after the newest of ``newest_first`` (record id, verified record),
    from the records a reader's tiered walk reached (pure): the latest, the records its
    ``skipChain`` names, down to the full upload. Each delta record's tier is what it lists
    (its span, ``earlier`` and ``added``), as :func:`tiers_after` made it; None when the
    records are not one skip chain (records without tiers, a walk by ``ODF-Prev-Upload``),
    and the next record then jumps to the previous one only."""
    tiers: list[Tier] = []
    expect: tuple[str, int] | None = None
    for record_id, record in newest_first:
        deltas = record.delta_uploads if record.delta else 0
        if deltas is None or (expect is not None and expect != (record_id, deltas)):
            return None
        link = SkipLink(record_id, record.head, deltas)
        if not record.delta:
            return (*tiers, Tier(link, 0))
        if record.span_uploads is None or not record.skip_chain:
            return None
        files = dict(record.earlier)
        files.update((p, a) for p, a in record.added.items() if p != REFS_HEAD)
        tiers.append(Tier(link, record.span_uploads, tuple(sorted(files.items()))))
        expect = (record.skip_chain[0].record_id, deltas - record.span_uploads)
    return None


def _inputs(plan: PublishPlan) -> Mapping[str, str] | None:
    """The inputs map the publish asked the record to carry, or None."""
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
        full_manifest=bundle.full_manifest,
        delta_uploads=bundle.deltas if bundle.full_manifest is not None else None,
        span_uploads=bundle.span_uploads,
        earlier=bundle.earlier,
        skip_chain=bundle.skip_chain,
    )


def _record_tags(
    bundle: BundlePlan, manifest_id: str, added: Mapping[str, AddedFile]
) -> tuple[Tag, ...]:
    tags = record_tags(_record(bundle, manifest_id, added)) + bundle.record_extra_tags
    check_tags(tags)
    return tags
