"""Building the one signed bundle of a publish: shared by ``bundle:DIR`` and ``arweave``.

Both targets do the same three things before their transport differs (a file in a
directory, or an L1 transaction through a gateway):

1. :func:`previous_from_state`: what earlier uploads left (drive ids, path -> file
   revision, last record id and head), from publish state that the target has checked;
2. :func:`sign_publish_bundle`: plan the bundle (:func:`.bundle_plan.plan_bundle`), build
   the discovery descriptor (placed after the manifest, left out with the reason when it
   fails validation) and the Croissant and DCAT documents of the files this upload adds
   (:mod:`odfweb3.descriptor.published`, after the descriptor), and sign every item
   (:func:`.bundle_plan.sign_bundle`); with a
   ``sealer`` every data item is ciphertext, the key envelope is one more item and the
   descriptor and the documents (which would reveal the dataset) are left out, but for the
   summary descriptor when the owner allowed it (:mod:`odfweb3.descriptor.summary`);
   With a ``drive_password`` the drive is an ArFS private drive (:mod:`.arfs_private`):
   the drive key is derived from the wallet and the password, every data and metadata item
   is encrypted as ArDrive does, and the descriptor and documents are left out as well;
3. :func:`write_bundle_file`: stream the bundle to a temp file in a directory, fsync and
   rename it (public file mode: a bundle is public).
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO, Final, cast

from odfweb3.atomic_file import open_atomic, remove_partials
from odfweb3.crypto.sealer import Sealer
from odfweb3.descriptor import (
    build_descriptor,
    descriptor_from_facts,
    descriptor_tags,
    encode_descriptor,
    validate_descriptor,
    with_locators,
)
from odfweb3.descriptor.codec import encode_descriptor_chunks
from odfweb3.descriptor.croissant import local_sha256
from odfweb3.descriptor.discovery_facts import Presentation
from odfweb3.descriptor.published import (
    CROISSANT_MEDIA_TYPE,
    DCAT_MEDIA_TYPE,
    Earlier,
    facts_since,
    published_croissant,
    published_dcat,
)
from odfweb3.descriptor.summary import summary_descriptor, validate_summary
from odfweb3.errors import FormatError
from odfweb3.odf.chain import ChainEntry, DatasetObject, walk_chain
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_from_str, multihash_to_str
from odfweb3.publish.plan import PublishPlan, RemoteRecord, held_entries
from odfweb3.publish.source import SealedReader, VerifyingReader, open_for_publish
from odfweb3.publish.target import RemoteView
from odfweb3.writeback import WritebackFile
from odfweb3_arweave.formats.arfs import app_tags
from odfweb3_arweave.formats.arfs_private import derive_drive_key
from odfweb3_arweave.formats.tags import Tag
from odfweb3_arweave.publish.bundle_plan import (
    BundlePlan,
    FileRef,
    FileRefs,
    ManifestKind,
    PreviousUpload,
    plan_bundle,
    tiers_after,
)
from odfweb3_arweave.publish.bundle_sign import AfterManifest, SignedBundle, sign_bundle
from odfweb3_arweave.publish.file_index import FileIndex
from odfweb3_arweave.publish.item_spool import ItemSpool
from odfweb3_arweave.publish.state import (
    ArweaveExtra,
    ArweaveTyped,
    ManifestChain,
    UploadFacts,
)
from odfweb3_arweave.publish.tier_files import load_merged_tiers, store_tiers
from odfweb3_arweave.wallet import Wallet

ArweaveView = RemoteView[UploadFacts | None, ArweaveExtra]

__all__ = [
    "ArweaveView",
    "PreparedBundle",
    "manifest_chain",
    "manifest_extra",
    "previous_from_state",
    "sealed_extra",
    "sign_publish_bundle",
    "tier_digests",
    "upload_view",
    "with_stored_tiers",
    "write_bundle_file",
]


def previous_from_state(
    state: ArweaveTyped | None, where: str, *, complete: bool = True
) -> PreviousUpload | None:
    """What earlier uploads left, from a checked publish state (None: a first upload).

    Args:
        state: the state (its ``objects`` map path -> :class:`.bundle_plan.FileRef` JSON;
            its typed record and extra, :mod:`.state`: the drive ids, the last record, the
            manifest chain).
        where: the state's location, for messages.
        complete: the earlier items can be relied on (else everything is sent again).

    Raises:
        FormatError: a malformed file reference or drive.
    """
    if state is None:
        return None
    typed = state
    # The last full manifest and the deltas since (None: the next manifest is a
    # full one). A state written before delta manifests existed names a full manifest as
    # its locator.
    chain = typed.extra.manifests or ManifestChain(state.locator, 0)
    # Parsed entry by entry when used: an update reads only its own paths.
    files = FileRefs(state.objects, where)
    # The tiers the next record consolidates, read from their tier files, which sit beside
    # the file index's packs (a state without an index holds its tiers' files itself).
    side = state.objects.out_dir if isinstance(state.objects, FileIndex) else None
    if typed.extra.drive is None:
        raise FormatError(f"{where}: drive: drive layout is not a JSON object")
    return PreviousUpload(
        drive=typed.extra.drive,
        files=files,
        record_id=typed.record.record_id if typed.record is not None else None,
        head=multihash_to_str(state.head) if state.head else None,
        complete=complete,
        full_manifest_id=chain.full_manifest_id,
        deltas=chain.deltas,
        tiers=load_merged_tiers(side, chain.tiers),
        croissant_id=typed.extra.croissant_id,
        dcat_id=typed.extra.dcat_id,
    )


def with_stored_tiers(state: ArweaveTyped, directory: Path) -> ArweaveTyped:
    """``state`` with every tier whose files it holds (made by this upload, rebuilt from the
    network, or a state written before tier files) moved to its tier file in ``directory``
    (:mod:`.tier_files`, written here, before the state naming it is saved)."""
    chain = state.extra.manifests
    if chain is None or chain.tiers is None or all(t.digest or not t.files for t in chain.tiers):
        return state
    directory.mkdir(parents=True, exist_ok=True)
    stored = replace(chain, tiers=store_tiers(directory, chain.tiers))
    return state.evolve(extra=replace(state.extra, manifests=stored))


def tier_digests(state: ArweaveTyped) -> set[str]:
    """The tier files a saved state names (the rest may go: :func:`.tier_files.drop_tier_files`)."""
    chain = state.extra.manifests
    return {t.digest for t in (chain.tiers or ()) if t.digest} if chain is not None else set()


def manifest_chain(prepared: PreparedBundle) -> ManifestChain:
    """Which manifest is the last full one after this bundle: this bundle's
    manifest when it is full, else the one its delta names; and the delta uploads since
    that full manifest (0: this one is full)."""
    bplan, signed = prepared.plan, prepared.signed
    return ManifestChain(
        bplan.full_manifest or signed.manifest_id,
        bplan.deltas,
        tiers_after(bplan, signed.record_id, signed.added),
    )


def manifest_extra(prepared: PreparedBundle) -> dict[str, Any]:
    """:func:`manifest_chain` as the summary shows it (``fullManifestId``,
    ``deltaUploads``, the state's keys)."""
    chain = manifest_chain(prepared)
    return {"fullManifestId": chain.full_manifest_id, "deltaUploads": chain.deltas}


class _Descriptor:
    """The discovery descriptor's data item: built once the id it names is known (its
    ``ar://``: the full manifest, or the record of a delta upload; :func:`.sign_bundle`).

    A plain data item (not an ArFS entity) with ``Content-Type: application/ld+json`` and the
    tags of :func:`odfweb3.descriptor.descriptor_tags` (``ODF-Dataset-Id``, ``Title``,
    ``Description``…), placed after the manifest and before the record. Left out, with the
    reason in the summary, when the descriptor fails validation.
    """

    def __init__(
        self,
        plan: PublishPlan,
        reader: DatasetReader,
        publisher: Mapping[str, Any] | None,
        app_version: str,
        owner_address: str,
        previous: PreviousUpload | None = None,
    ) -> None:
        self.app_version = app_version
        self.plan, self.reader, self.publisher = plan, reader, publisher
        # Without publisher.name the creator is the signing wallet.
        self.identity = identity = f"Arweave address {owner_address}"
        if plan.facts is not None:  # the verified chain's facts: no walk
            doc = descriptor_from_facts(plan.facts, publisher, identity=identity)
        else:
            chain: list[ChainEntry] = list(plan.chain) or list(walk_chain(reader, plan.head))
            doc = build_descriptor(chain, publisher, identity=identity)
        self.doc = doc
        errors = [p for p in validate_descriptor(doc) if p.severity == "error"]
        self.valid = not errors
        self.skipped = {"descriptorSkipped": "; ".join(p.message for p in errors)}
        self.earlier = earlier_documents(plan, previous)
        # Nothing new since the documents of the last upload: they stay the latest.
        self.kept = (
            {"croissantId": self.earlier.croissant_item, "dcatId": self.earlier.dcat_item}
            if self.earlier.head == plan.head and self.earlier.croissant_item
            else {}
        )
        self.kinds: list[str] = []

    def item(self, opened_by: str) -> tuple[bytes, list[Tag]]:
        """The item, naming ``ar://`` the full manifest or, for a delta upload, the record."""
        doc = with_locators(self.doc, {"ar": opened_by})  # the chain is walked once
        tags = [Tag.of(n, v) for n, v in descriptor_tags(doc)]
        return encode_descriptor(doc), [*tags, *app_tags(self.app_version)]

    def items(
        self, opened_by: str, files: Mapping[str, FileRef]
    ) -> Iterator[tuple[bytes | Iterable[bytes], list[Tag]]]:
        """The descriptor (when valid), then the Croissant and DCAT documents of the files
        this upload adds, each file's ``contentUrl`` ``ar://`` its own data item (a delta
        manifest is refused alone, so no path under it is a URL a gateway serves).

        Made one at a time as the signer asks; each document's data is its encoded pieces,
        which the signer spools as they come (both documents list every data file this
        upload adds: ~5 KB a block, held whole they were most of a first upload's peak)."""
        self.kinds = ["descriptor"] if self.valid else []
        if self.valid:
            yield self.item(opened_by)
        if self.kept:
            return
        plan = self.plan
        facts = facts_since(
            self.reader,
            plan.head,
            self.earlier.head,
            plan.facts,
            held_entries(plan.chain),
            plan.discovery,
        )

        def url_of(rel: str) -> str:
            ref = files.get(rel)
            return f"ar://{ref.data_item_id}" if ref is not None else f"ar://{opened_by}/{rel}"

        shown = Presentation(
            self.publisher,
            self.identity,
            landing=f"ar://{opened_by}",
            url_of=url_of,
            sha256_of=local_sha256(self.reader),
        )
        earlier = self.earlier
        links = Earlier(
            earlier.head,
            f"ar://{earlier.croissant_item}" if earlier.croissant_item else None,
            f"ar://{earlier.dcat_item}" if earlier.dcat_item else None,
        )
        common = [Tag.of("ODF-Dataset-Id", facts.dataset_id), *app_tags(self.app_version)]
        for kind, doc, media in (
            (
                "croissant",
                published_croissant(facts, shown, links, streamed=True),
                CROISSANT_MEDIA_TYPE,
            ),
            ("dcat", published_dcat(facts, shown, links, streamed=True), DCAT_MEDIA_TYPE),
        ):
            tags = [Tag.of("Content-Type", media), Tag.of("ODF-Discovery", kind), *common]
            # Encoded a data file at a time, each piece spooled as it is made: neither the
            # document's dicts nor its bytes are held.
            self.kinds.append(kind)
            yield encode_descriptor_chunks(doc), tags


ENCRYPTED_NO_DESCRIPTOR: Final = "encrypted dataset: a descriptor would reveal it"


class _Summary:
    """The summary descriptor of an encrypted publish whose owner allowed it
    (:mod:`odfweb3.descriptor.summary`): a plain data item after the manifest with the
    descriptor's ``Content-Type`` and tags (the dataset ID, head, title and description),
    naming no item (an ``ar://`` id would point into the ciphertext); left out, with the
    reason, when it fails its shape (no ``publisher.name``)."""

    def __init__(
        self,
        plan: PublishPlan,
        reader: DatasetReader,
        publisher: Mapping[str, Any] | None,
        app_version: str,
    ) -> None:
        chain: list[ChainEntry] = list(plan.chain) or list(walk_chain(reader, plan.head))
        self.doc = summary_descriptor(chain, publisher)
        self.app_version = app_version
        errors = [p for p in validate_summary(self.doc) if p.severity == "error"]
        self.valid = not errors
        self.skipped = "; ".join(p.message for p in errors)

    def items(self, opened_by: str, files: Mapping[str, FileRef]) -> list[tuple[bytes, list[Tag]]]:
        """The summary item (when valid); ``opened_by`` and ``files`` are not shown."""
        if not self.valid:
            return []
        tags = [Tag.of(n, v) for n, v in descriptor_tags(self.doc)]
        return [(encode_descriptor(self.doc), [*tags, *app_tags(self.app_version)])]


@dataclass(frozen=True)
class _EarlierItems:
    """The head and document items of the last upload that wrote Croissant and DCAT."""

    head: bytes | None = None
    croissant_item: str | None = None
    dcat_item: str | None = None


def earlier_documents(plan: PublishPlan, previous: PreviousUpload | None) -> _EarlierItems:
    """The documents of the last upload, when this publish continues its head; nothing for a
    first upload, one whose state names none, or a forced publish (every file again)."""
    if previous is None or previous.head is None or not previous.complete:
        return _EarlierItems()
    if plan.forced or plan.relation not in ("ahead", "same"):
        return _EarlierItems()
    head = multihash_from_str(previous.head)
    if head != plan.remote_head or not (previous.croissant_id and previous.dcat_id):
        return _EarlierItems()
    return _EarlierItems(head, previous.croissant_id, previous.dcat_id)


@dataclass(frozen=True)
class PreparedBundle:
    """A planned and signed bundle.

    Attributes:
        plan: the bundle plan (drive, previous upload, time).
        signed: the signed items and their ids.
        descriptor: ``{"descriptorId": id}`` or ``{"descriptorSkipped": reason}``, and
            ``croissantId`` / ``dcatId`` (the documents' items, or the last upload's when
            nothing is new); for an encrypted publish ``{"keyEnvelope": id}`` instead.
    """

    plan: BundlePlan
    signed: SignedBundle
    descriptor: dict[str, Any] = field(default_factory=dict)


def sign_publish_bundle(
    plan: PublishPlan,
    reader: DatasetReader,
    previous: PreviousUpload | None,
    wallet: Wallet,
    *,
    unix_time: int,
    app_version: str,
    drive_name: str | None = None,
    record_tags: Sequence[Tag] = (),
    new_id: Callable[[], uuid.UUID] = uuid.uuid4,
    publisher: Mapping[str, Any] | None = None,
    progress: Callable[[int], None] = lambda n: None,
    sealer: Sealer | None = None,
    drive_password: str | None = None,
    manifest: ManifestKind = "delta",
) -> PreparedBundle:
    """Plan, describe and sign the bundle of one publish (nothing is written).

    With ``sealer`` every data item is encrypted (docs/design.md, "Encryption") and the key
    envelope is one more item of the bundle. With ``drive_password`` the drive is an ArFS
    private drive (its key derived from ``wallet`` and the password; never stored).
    ``manifest``: ``"full"`` writes a full path manifest even when a delta would do
    (:func:`.bundle_plan.plan_bundle`).

    Raises:
        FormatError: tags over the limits, an object unknown to ``previous``.
        IntegrityError / HashMismatch: an object's bytes differ from its recorded hash.
    """
    bundle_plan = plan_bundle(
        plan,
        previous,
        unix_time=unix_time,
        app_version=app_version,
        drive_name=drive_name,
        size_of=lambda o: reader.size_of(o.kind, o.hash),
        record_extra_tags=record_tags,
        new_id=new_id,
        sealer=sealer,
        privacy="private" if drive_password is not None else "public",
        manifest=manifest,
    )
    drive_key = None
    if drive_password is not None:
        drive_key = derive_drive_key(wallet, bundle_plan.drive.drive_id, drive_password)
    summary: _Summary | None = None
    if sealer is None and drive_key is None:
        desc = _Descriptor(plan, reader, publisher, app_version, wallet.address, previous)
        after: AfterManifest | None = desc.items
    elif drive_key is None and sealer is not None and sealer.discovery == "summary":
        summary = _Summary(plan, reader, publisher, app_version)
        after = summary.items
    else:
        after = None
    # An object is read twice (signed, then written): one salt per object, so both reads
    # give the same ciphertext (same key, nonces and plaintext: nothing new is revealed).
    salts: dict[str, bytes] = {}

    def open_object(obj: DatasetObject) -> SealedReader | VerifyingReader:
        salt = salts.setdefault(obj.path, secrets.token_bytes(32)) if sealer else None
        return open_for_publish(reader, obj, sealer, salt=salt)

    signed = sign_bundle(
        bundle_plan,
        wallet,
        open_object,
        progress=progress,
        after_manifest=after,
        key_envelope=sealer.envelope if sealer is not None else None,
        drive_key=drive_key,
    )
    descriptor: dict[str, Any]
    if drive_key is not None:
        descriptor = {"descriptorSkipped": "ArFS private drive: a descriptor would reveal it"}
    elif sealer is not None:
        descriptor = {"keyEnvelope": signed.key_envelope_id}
        if summary is not None and summary.valid:
            descriptor["descriptorId"] = signed.extra_ids[0]
        else:
            descriptor["descriptorSkipped"] = (
                summary.skipped if summary is not None else ENCRYPTED_NO_DESCRIPTOR
            )
    else:
        ids = dict(zip(desc.kinds, signed.extra_ids, strict=True))
        descriptor = {"descriptorId": ids["descriptor"]} if "descriptor" in ids else desc.skipped
        descriptor |= desc.kept
        descriptor |= {f"{k}Id": ids[k] for k in ("croissant", "dcat") if k in ids}
    return PreparedBundle(bundle_plan, signed, descriptor)


def write_bundle_file(items: ItemSpool, directory: Path, name: str) -> tuple[Path, int]:
    """Stream the bundle to ``directory/name`` (temp file, fsync, rename); return path, size.

    The spool is closed (removed) afterwards, written or not.
    """
    directory.mkdir(parents=True, exist_ok=True)
    # What an interrupted writer left (its lock gone with it), then ours as
    # .tmp-PID-XXXX.bundle.partial: no *.bundle glob reads it half written (atomic_file).
    remove_partials(directory)
    try:
        with open_atomic(directory, suffix=".bundle", public=True) as out:
            # written back while it is written: the fsync in commit waits for little
            size = items.write(cast(BinaryIO, WritebackFile(out.file)))
            out.commit(name)
    finally:
        items.close()
    return directory / name, size


def upload_view(view: ArweaveView, sealer: Sealer | None) -> ArweaveView:
    """``view`` as the earlier uploads of its state make it: the record a publish that sends
    nothing keeps, ``encrypted`` when the uploads hold ciphertext, and nothing counted as
    uploaded when encryption was switched on or off.

    An upload record never expires: the plan keeps it (nothing posted, nothing written)
    while nothing is sent and the inputs map it carries is the one asked for
    (:func:`odfweb3.publish.plan.plan_record`, as for every target).

    Plaintext and ciphertext revisions never mix in one manifest: after a switch every
    object gets a new revision (same ArFS file ids).
    """
    state = view.state
    if state is None:
        return view
    extra = state.extra
    # The state (or the record it was rebuilt from) names a key envelope, or an ArFS private
    # drive: the target holds ciphertext, which the encryption policy does not let a plain
    # publish cover.
    private = extra.drive is not None and extra.drive.privacy == "private"
    record = RemoteRecord(renewal_due=False, inputs=dict(extra.inputs) if extra.inputs else None)
    view = replace(
        view, record=record, encrypted=bool(extra.encrypted or extra.key_envelope or private)
    )
    if bool(extra.encrypted) == (sealer is not None):
        return view
    now = "encrypted" if sealer is not None else "plain"
    note = f"the earlier uploads are not {now}: uploading every object again ({now})"
    # holds_head off as well: an "ahead" plan would otherwise skip every object the target's
    # head covers, and the new manifest would mix the earlier revisions with the new ones.
    return replace(view, has=frozenset(), holds_head=False, notes=(*view.notes, note))


def sealed_extra(
    extra: ArweaveExtra, sealer: Sealer | None, descriptor: Mapping[str, Any]
) -> ArweaveExtra:
    """``extra`` with the facts of an encrypted upload (unchanged for a plain one):
    ``encrypted``, the key epoch and the key envelope's item id."""
    if sealer is None:
        return extra
    envelope = descriptor.get("keyEnvelope")
    return replace(
        extra,
        encrypted=True,
        key_epoch=sealer.epoch,
        key_envelope=str(envelope) if envelope is not None else None,
    )
