"""``ar://<record-or-manifest-id>``: a dataset read through a gateway's path manifests.

Reads only what any gateway serves (Simple Transfer Protocol): ``GET /{manifest}/refs/head``,
``GET /{manifest}/blocks/{hash}``, ``GET /{manifest}/data/{hash}``, ... The id may name an
upload record (its ``ODF-Manifest`` and ``ODF-Head`` tags are looked up by GraphQL, and the
head served must equal ``ODF-Head``) or a path manifest. Nothing the gateway says is
trusted: blocks are hashed here, objects by :func:`odfweb3.read.replica.read_object_verified`,
and the head by the chain walk that starts from it.

An encrypted upload (docs/design.md, "Encryption") is known by its record body's ``keyEnvelope``
item id (the body is checked against the record's tags by
:func:`.record.decode_record`): then ``refs/head`` and every object are ciphertext, so
:meth:`ArweaveReplica.head` is the record's ``ODF-Head``, :meth:`~ArweaveReplica.sealed_head`
serves the encrypted ``refs/head`` and blocks are returned unchecked for
:class:`odfweb3.read.sealed_replica.DecryptingReplica`, whose chain walk checks the plaintext.

A *delta* upload (its record carries ``ODF-Full-Manifest``) has a manifest with
only the paths it added. A path it did not add is read through the manifest of the upload
that added it last, older paths through the last full manifest: the uploads back to it are
walked once, on the first such path (:func:`.lookup.walk_to_full_manifest`: each record's
signature, owner, dataset and head continuity checked; at most ``MAX_DELTA_UPLOADS``; a
tiered record's jumps make that about log2(n) records, and a path one of them lists in
``earlier`` is read as its data item, ``GET /{id}``, hashed like any other). A
delta manifest opened by its own id is refused: it does not hold the dataset.

An ArFS private drive (the record body's ``drive.privacy`` is ``private``) is read by
:mod:`.private_replica` with the owner's wallet and the drive password; this class only
keeps the record and owner for it and refuses to serve the ciphertext as a dataset.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from odfweb3.crypto.envelope import MAX_ENVELOPE_SIZE, decode_envelope
from odfweb3.crypto.segments import MAGIC as SEALED_MAGIC
from odfweb3.errors import (
    FormatError,
    NotFound,
    ReadRefused,
    ReplicaMismatch,
    ResolutionError,
    UsageError,
)
from odfweb3.odf.layout import ObjectKind, object_relpath
from odfweb3.odf.multihash import (
    multihash_from_str,
    multihash_to_str,
    verify_bytes,
)
from odfweb3_arweave.client.gateway import MAX_STREAM, ArweaveGateway
from odfweb3_arweave.formats.arfs import tag_value
from odfweb3_arweave.formats.item_check import proof_of
from odfweb3_arweave.formats.manifest import (
    FULL_MANIFEST_TAG,
    MANIFEST_CONTENT_TYPE,
    decode_manifest,
)
from odfweb3_arweave.formats.record import UploadRecord, decode_record, record_tags
from odfweb3_arweave.formats.tags import Tag
from odfweb3_arweave.read.lookup import (
    Upload,
    item_tags,
    lookup_items,
    verify_item,
    walk_to_full_manifest,
)

__all__ = ["MAX_BLOCK_SIZE", "ArweaveReplica", "open_ar_replica"]

MAX_BLOCK_SIZE: Final = 16 << 20
_ID_LENGTH: Final = 43
_MAX_RECORD_SIZE: Final = 64 << 20
_MAX_MANIFEST_SIZE: Final = 64 << 20  # a path per object: ~600,000 objects


class ArweaveReplica:
    """A dataset at one path manifest on a gateway (see the module docstring)."""

    def __init__(
        self,
        gateway: ArweaveGateway,
        manifest_id: str,
        ref: str,
        expected_head: str | None,
        *,
        key_envelope_id: str | None = None,
        dataset_id: str | None = None,
        inputs: Mapping[str, str] | None = None,
        record: UploadRecord | None = None,
        record_id: str | None = None,
        owner: str | None = None,
        unverified: bool = False,
    ) -> None:
        if key_envelope_id is not None and expected_head is None:
            raise ResolutionError(f"{ref}: an encrypted upload without ODF-Head cannot be read")
        self.gateway = gateway
        self.manifest_id = manifest_id
        self.expected_head = expected_head
        self.key_envelope_id = key_envelope_id
        self.dataset_id = dataset_id
        self.inputs = dict(inputs or {})
        self.name = ref
        # The decoded upload record and its owner (None when opened by manifest id); an ArFS
        # private drive is read by .private_replica from these.
        self.record = record
        self.record_id = record_id
        self.owner = owner
        # Opened by its path manifest under arweave.insecure_unverified_manifests: nothing
        # signed binds refs/head, so odfweb3.read.compare never reports it identical.
        self.unverified = unverified and expected_head is None
        # A delta upload: path -> the manifest that maps it, built on the first path the
        # latest manifest lacks (None until then); other paths: the last full manifest.
        self._older: dict[str, str] | None = None
        self._full_manifest: str | None = None

    def _path(self, relpath: str) -> str:
        """``{manifest}/{relpath}`` for the manifest that maps ``relpath``."""
        record = self.record
        if record is None or not record.delta or relpath in record.added:
            return f"{self.manifest_id}/{relpath}"
        if self._older is None:
            assert self.record_id is not None and self.owner is not None
            latest = Upload(self.record_id, self.owner, record.tags_view, record_tags(record), None)
            records = walk_to_full_manifest(self.gateway, latest, record)
            older: dict[str, str] = {}
            for rec in records[1:]:
                # A tier's earlier uploads: their data items, read as any item is
                # (GET /{id}); then what the record's own manifest maps. Newest wins.
                older.update((p, a.data_item_id) for p, a in rec.earlier.items())
                older.update((p, f"{rec.manifest_id}/{p}") for p in rec.added)
            self._full_manifest = records[0].manifest_id
            self._older = older
        assert self._full_manifest is not None
        return self._older.get(relpath) or f"{self._full_manifest}/{relpath}"

    @property
    def arfs_private(self) -> bool:
        """Whether the upload record says the drive is an ArFS private drive."""
        return self.record is not None and self.record.drive.privacy == "private"

    def lineage_inputs(self) -> Mapping[str, str]:
        """Where each input lives, from the upload record body's ``inputs`` (dataset ID ->
        ``ar://RECORD``, written by ``publish --with-inputs``); else empty."""
        return dict(self.inputs)

    @property
    def encrypted(self) -> bool:
        """Whether the upload record names a key envelope (an encrypted upload)."""
        return self.key_envelope_id is not None

    def sealed_head(self) -> bytes:
        """The raw bytes of ``refs/head`` (ciphertext in an encrypted upload)."""
        return self.gateway.get_data(f"{self.manifest_id}/refs/head", limit=256)

    def key_envelope(self) -> bytes | None:
        """The key envelope item the upload record names (``GET /{id}``), else None.

        Raises:
            FormatError: the item is not a key envelope, or one for another dataset.
        """
        if self.key_envelope_id is None:
            return None
        data = self.gateway.get_data(self.key_envelope_id, limit=MAX_ENVELOPE_SIZE)
        envelope = decode_envelope(data)
        if self.dataset_id is not None and envelope.dataset_id != self.dataset_id:
            raise FormatError(
                f"{self.name}: key envelope {self.key_envelope_id} is for "
                f"{envelope.dataset_id}, the upload record for {self.dataset_id}"
            )
        return data

    def head(self) -> bytes:
        if self.arfs_private:
            raise UsageError(
                f"{self.name} is an ArFS private drive: pass --wallet WALLET.json and "
                "--drive-password-file FILE (or ODFWEB3_DRIVE_PASSWORD) to read it"
            )
        if self.key_envelope_id is not None and self.expected_head is not None:
            # Encrypted refs/head: the record's ODF-Head is the head; DecryptingReplica
            # decrypts sealed_head() and checks that it agrees.
            return multihash_from_str(self.expected_head)
        raw = self.sealed_head()
        if raw.startswith(SEALED_MAGIC):
            # An --encrypt upload opened by its manifest: only the record names the envelope.
            raise ResolutionError(
                f"{self.name}: refs/head is encrypted and no upload record names its key "
                "envelope; open the dataset by its upload record (ar://RECORD_ID, printed by "
                "publish and status)"
            )
        try:
            head = multihash_from_str(raw.decode("ascii", "replace").strip())
        except FormatError as exc:
            raise FormatError(
                f"{self.name}: refs/head is not a multibase hash ({exc}); if this is a "
                "private-drive upload, open it by its upload record (ar://RECORD_ID)"
            ) from None
        if self.expected_head is not None and multihash_to_str(head) != self.expected_head:
            raise ReplicaMismatch(
                f"{self.name}: refs/head is {multihash_to_str(head)} but the upload record says "
                f"{self.expected_head}; the gateway serves something else"
            )
        return head

    def read_block(self, mh: bytes) -> bytes:
        data = self.gateway.get_data(self._path(object_relpath("block", mh)), limit=MAX_BLOCK_SIZE)
        if self.encrypted:
            return data  # ciphertext: the plaintext's hash is checked after decryption
        verify_bytes(data, mh, self.name)
        return data

    def stream_object(self, kind: ObjectKind, mh: bytes, size: int | None) -> Iterator[bytes]:
        n = 0
        path = self._path(object_relpath(kind, mh))
        # The transport's limit sits one read above the size the verified chain names, so
        # the check below is what reports a longer object; nothing is buffered either way.
        limit = MAX_STREAM if size is None else size + (2 << 20)
        for chunk in self.gateway.stream_data(path, limit=limit):
            n += len(chunk)
            if size is not None and n > size:
                raise ReplicaMismatch(
                    f"{self.name}: {object_relpath(kind, mh)} is longer than {size} bytes"
                )
            yield chunk


def _signed_manifest_head(
    gateway: ArweaveGateway,
    item_id: str,
    node: dict[str, Any],
    tags: tuple[Tag, ...],
    ref: str,
    expected_owner: str | None,
) -> tuple[str, str] | None:
    """``(head, owner)`` of a path manifest whose own bytes the gateway serves, else None.

    ``GET /raw/{id}`` (ar.io) gives the manifest's JSON; its signature, id and owner are
    checked as a record's (:func:`.lookup.verify_item`); then its ``refs/head`` item, which
    must be signed by the same owner. That head binds the dataset as an upload record's
    ``ODF-Head`` does: :meth:`ArweaveReplica.head` compares what is served under the
    manifest with it and every block and object is re-hashed.

    Raises:
        SignatureError / ReplicaMismatch: the manifest or its ``refs/head`` is forged, or
            signed by someone other than ``expected_owner`` (or the manifest's owner).
        FormatError: the signed manifest is not a path manifest with a ``refs/head``.
        ResolutionError: an encrypted ``refs/head`` (only the record names its envelope).
    """
    raw = gateway.get_raw(item_id, limit=_MAX_MANIFEST_SIZE)
    if raw is None:
        return None
    where = f"{ref}: path manifest"
    item = verify_item(
        gateway, item_id, proof_of(node), tags, raw, expected_owner=expected_owner, where=where
    )
    head_id = decode_manifest(item.data, where).paths.get("refs/head")
    if head_id is None:
        raise FormatError(f"{where}: it has no refs/head; not an odfweb3 upload")
    head_node = lookup_items(gateway, [head_id]).get(head_id)
    if head_node is None:
        raise ResolutionError(f"{ref}: {gateway.url} does not know its refs/head item {head_id}")
    head_item = verify_item(
        gateway,
        head_id,
        proof_of(head_node),
        item_tags(head_node),
        gateway.get_data(head_id, limit=256),
        expected_owner=item.owner,
        where=f"{ref}: refs/head item {head_id}",
    )
    if head_item.data.startswith(SEALED_MAGIC):
        raise ResolutionError(
            f"{ref}: refs/head is encrypted and no upload record names its key envelope; "
            "open the dataset by its upload record (ar://RECORD_ID, printed by publish and "
            "status)"
        )
    try:
        head = multihash_from_str(head_item.data.decode("ascii", "replace").strip())
    except FormatError as exc:
        raise FormatError(f"{ref}: the signed refs/head is not a multibase hash ({exc})") from None
    return multihash_to_str(head), item.owner


def open_ar_replica(
    gateway: ArweaveGateway,
    ref: str,
    *,
    expected_owner: str | None = None,
    insecure_unverified_manifests: bool = False,
) -> ArweaveReplica:
    """Open ``ar://<id>``: an upload record id or a path manifest id.

    A path manifest opened directly cannot be verified: gateways serve its paths resolved
    (``GET /{id}`` is the index's data, arlocal has no ``/raw/{id}``), so neither its signature
    nor its owner can be checked and nothing signed binds ``refs/head``; a hostile gateway may
    serve any dataset under it. It is refused, naming ``ar://RECORD_ID``,
    unless ``insecure_unverified_manifests`` (``arweave.insecure_unverified_manifests``) is
    set: then the replica is marked ``unverified`` and never reported ``identical``.

    An upload record's signature is checked before anything in it is used
    (:func:`.resolve.verify_item`): its owner (``expected_owner`` when given), its tags
    (``ODF-Manifest``, ``ODF-Head``) and its body are the signer's, not the gateway's.

    Raises:
        ResolutionError: the id is neither, or the gateway does not know it.
        ReplicaMismatch: the record is signed by someone other than ``expected_owner``.
        ReadRefused: a path manifest, without the opt-in (or with ``expected_owner``):
            exit 69, as for an IPFS gateway serving neither raw blocks nor CARs.
        SignatureError: the record's signature does not verify (a forged record).
    """
    item_id = ref.removeprefix("ar://").strip("/")
    if len(item_id) != _ID_LENGTH:
        raise ResolutionError(f"{ref}: not ar://<43-character id>")
    node = lookup_items(gateway, [item_id]).get(item_id)
    if node is None:
        raise ResolutionError(f"{ref}: {gateway.url} does not know that id")
    tags = item_tags(node)
    if tag_value(tags, "ODF-Manifest") is not None:
        try:
            body = gateway.get_data(item_id, limit=_MAX_RECORD_SIZE)
        except NotFound as exc:
            raise ResolutionError(f"{ref}: cannot read the upload record ({exc})") from exc
        item = verify_item(
            gateway,
            item_id,
            proof_of(node),
            tags,
            body,
            expected_owner=expected_owner,
            where=f"{ref}: upload record",
        )
        manifest = tag_value(item.tags, "ODF-Manifest")
        try:
            record = decode_record(item.tags, item.data, f"{ref}: upload record")
        except FormatError as exc:
            raise ResolutionError(f"{ref}: cannot read the upload record ({exc})") from exc
        return ArweaveReplica(
            gateway,
            str(manifest),
            ref,
            record.head,
            key_envelope_id=record.key_envelope,
            dataset_id=record.dataset_id,
            inputs=record.inputs,
            record=record,
            record_id=item_id,
            owner=item.owner,
        )
    if tag_value(tags, "Content-Type") == MANIFEST_CONTENT_TYPE:
        full = tag_value(tags, FULL_MANIFEST_TAG)
        if full is not None:
            # A lying gateway can only make this refuse, as it could by serving nothing.
            raise ResolutionError(
                f"{ref} is a delta path manifest: it maps only the paths its upload added; "
                f"open the dataset by its upload record (ar://RECORD_ID, printed by publish "
                f"and status), or ar://{full[:43]} (the last full manifest before it)"
            )
        signed = _signed_manifest_head(gateway, item_id, node, tags, ref, expected_owner)
        if signed is not None:
            head, owner = signed
            return ArweaveReplica(gateway, item_id, ref, head, owner=owner)
        if expected_owner is not None or not insecure_unverified_manifests:
            raise ReadRefused(
                f"{ref} is a path manifest: no signature binds what {gateway.url} serves under "
                "it, so it is not read; open the dataset by its upload record (ar://RECORD_ID, "
                "printed by publish and status) or did:odf"
                + (
                    " with --owner"
                    if expected_owner is not None
                    else " (arweave.insecure_unverified_manifests reads it UNVERIFIED)"
                )
            )
        return ArweaveReplica(gateway, item_id, ref, None, unverified=True)
    raise ResolutionError(f"{ref}: neither an odfweb3 upload record nor a path manifest")
