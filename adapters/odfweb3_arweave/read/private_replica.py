"""``ar://RECORD`` of an ArFS private drive: read back with the owner's wallet and password.

A ``publish --arfs-private`` upload (:mod:`.bundle_plan`, :mod:`.arfs_private`) leaves in
plaintext: the upload record (tags and JSON body: head, drive ids, path -> data item, metadata
item and ``File-Id`` for what it added), the path manifest (paths = ODF hashes of the
plaintext) and each data item's ``Cipher-IV`` tag. File data, file/folder/drive metadata and
``refs/head`` are AES-256-GCM ciphertext. A reader therefore needs exactly the owner's wallet
(to re-make the RSA-PSS signature the drive key derives from) and the drive password.

:func:`open_private_replica` checks, before anything is served:

1. the wallet is the record's owner (only the owner's signature derives the drive key);
2. the drive key opens the drive's own metadata entity (``Entity-Type: drive`` by the owner,
   found by GraphQL), whose ``rootFolderId`` must be the record's; so a later decryption
   failure means altered data, not a wrong password;
3. the records back to the first upload give each path's data item and ``File-Id``
   (:func:`collect_files`): tiered records are walked as readers of a public drive walk them
   (:func:`.lookup.walk_records`: the skip chain in one GraphQL request, each record's
   signature, owner, dataset and counts checked, about log2(n) records for n uploads; records
   without tiers by ``ODF-Prev-Upload``, owner and head continuity checked); each data item
   must be the owner's and carry a ``Cipher-IV``.
   Data items are read by id (``GET /{id}``), not through the path manifest: the manifest
   adds nothing the owner's records do not say, and the GCM tag plus the ODF hash of the
   plaintext check every byte anyway;
4. ``refs/head`` decrypts to the record's ``ODF-Head``, the head served.

Then :meth:`PrivateDriveReplica.read_block` decrypts and re-hashes each block and
:meth:`~PrivateDriveReplica.stream_object` releases a file's plaintext only after its GCM tag
checked (:func:`decrypt_to_spool`); ``read_object_verified`` and the chain walk check ODF hashes.

Limit: an ArFS file is one GCM message with the tag at its end, so no plaintext can be
trusted before the last byte. Plaintext is spooled (memory up to ``spool_memory`` bytes, then a
temporary file) and files above ``max_file_size`` (default 4 GiB) are refused.
"""

from __future__ import annotations

import base64
import binascii
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from odfweb3.errors import (
    DecryptionError,
    FormatError,
    NotFound,
    ReplicaMismatch,
    ResolutionError,
)
from odfweb3.foreign_json import load_foreign_json
from odfweb3.odf.layout import HEAD_REF, ObjectKind, object_relpath
from odfweb3.odf.multihash import (
    multihash_from_str,
    verify_bytes,
)
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.formats.arfs import tag_value
from odfweb3_arweave.formats.arfs_private import (
    IV_SIZE,
    TAG_SIZE,
    DriveKey,
    FileKey,
    decrypt,
    derive_drive_key,
    derive_file_key,
)
from odfweb3_arweave.formats.record import AddedFile, UploadRecord, record_tags
from odfweb3_arweave.read.lookup import Upload, item_tags, lookup_items, walk_records
from odfweb3_arweave.wallet import Wallet

__all__ = [
    "DEFAULT_MAX_FILE_SIZE",
    "MAX_BLOCK_SIZE",
    "PrivateDriveReplica",
    "PrivateFile",
    "collect_files",
    "decrypt_to_spool",
    "open_private_replica",
]

DEFAULT_MAX_FILE_SIZE: Final = 4 << 30
MAX_BLOCK_SIZE: Final = 16 << 20
_SPOOL_MEMORY: Final = 8 << 20
_MAX_META_SIZE: Final = 1 << 20
_CHUNK: Final = 1 << 20

_DRIVE_ENTITY = (
    "query($owners: [String!], $drive: String!) { transactions(owners: $owners,"
    ' tags: [{name: "Drive-Id", values: [$drive]}, {name: "Entity-Type", values: ["drive"]}],'
    " first: 10) { edges { node { id owner { address } tags { name value } } } } }"
)


@dataclass(frozen=True)
class PrivateFile:
    """One path of the drive: where its ciphertext is and how to decrypt it.

    Attributes:
        path: dataset path (``data/f1620…``, ``refs/head``).
        data_item_id: the data item holding ``ciphertext || tag``.
        file_id: the ArFS ``File-Id`` (the file key derives from it).
        cipher_iv: the data item's ``Cipher-IV`` tag (base64).
    """

    path: str
    data_item_id: str
    file_id: str
    cipher_iv: str


def collect_files(records: Sequence[UploadRecord]) -> dict[str, AddedFile]:
    """Path -> current file revision, from the records' ``earlier`` and ``added`` maps
    (oldest first; a tiered record's ``earlier`` is what the uploads it spans added before it).

    A later revision of a path (``refs/head`` gets one per upload) replaces an earlier one;
    this is the same union the newest upload's path manifest was made from (old paths ->
    old items, new paths -> new items; :func:`.bundle_plan.sign_bundle`).

    Raises:
        ResolutionError: two records add the same data item under different paths.
    """
    latest: dict[str, AddedFile] = {}
    seen: dict[str, str] = {}
    for record in records:
        for path, added in [*sorted(record.earlier.items()), *sorted(record.added.items())]:
            other = seen.setdefault(added.data_item_id, path)
            if other != path:
                raise ResolutionError(
                    f"upload records name data item {added.data_item_id} as both {other[:80]} "
                    f"and {path[:80]}; the chain of uploads is corrupt"
                )
            latest[path] = added
    return latest


def decrypt_to_spool(
    key: FileKey,
    iv: bytes,
    chunks: Iterable[bytes],
    *,
    max_size: int,
    where: str,
    spool_dir: Path | None = None,
    spool_memory: int = _SPOOL_MEMORY,
) -> IO[bytes]:
    """Decrypt one ArFS ciphertext (``ciphertext || 16-byte tag``) arriving in ``chunks``.

    Plaintext goes to a spooled temporary file (in memory up to ``spool_memory`` bytes); it
    is returned, rewound, only once the GCM tag checked. The caller closes it.

    Raises:
        ReplicaMismatch: more than ``max_size + 16`` bytes arrive.
        DecryptionError: the tag does not check (altered data or a wrong key), or the input
            is shorter than a tag.
        FormatError: ``iv`` is not 12 bytes.
    """
    if len(iv) != IV_SIZE:
        raise FormatError(f"{where}: Cipher-IV is {len(iv)} bytes, need {IV_SIZE}")
    dec = Cipher(algorithms.AES(key.key), modes.GCM(iv)).decryptor()
    # returned open to the caller, closed here on any failure
    spool: IO[bytes] = tempfile.SpooledTemporaryFile(  # noqa: SIM115
        max_size=spool_memory, dir=None if spool_dir is None else str(spool_dir)
    )
    try:
        held = b""  # the last TAG_SIZE bytes seen: possibly the tag
        total = 0
        for chunk in chunks:
            total += len(chunk)
            if total > max_size + TAG_SIZE:
                raise ReplicaMismatch(
                    f"{where}: ciphertext longer than {max_size + TAG_SIZE} bytes; refusing it"
                )
            held += chunk
            if len(held) > TAG_SIZE:
                spool.write(dec.update(held[:-TAG_SIZE]))
                held = held[-TAG_SIZE:]
        if len(held) < TAG_SIZE:
            raise DecryptionError(f"{where}: ArFS ciphertext shorter than its GCM tag")
        try:
            spool.write(dec.finalize_with_tag(held))
        except InvalidTag:
            raise DecryptionError(
                f"{where}: ArFS data does not decrypt (GCM tag mismatch) although the drive "
                "key is right: the ciphertext or its Cipher-IV was altered"
            ) from None
        spool.seek(0)
        return spool
    except BaseException:
        spool.close()
        raise


@dataclass
class PrivateDriveReplica:
    """A private drive's dataset as plaintext (see the module docstring).

    Build it with :func:`open_private_replica`, which runs the checks.
    """

    name: str
    gateway: ArweaveGateway
    record: UploadRecord
    files: Mapping[str, PrivateFile]
    drive_key: DriveKey = field(repr=False)
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    spool_dir: Path | None = None
    spool_memory: int = _SPOOL_MEMORY

    def head(self) -> bytes:
        """The upload record's ``ODF-Head`` (checked against the decrypted ``refs/head``)."""
        return multihash_from_str(self.record.head)

    def lineage_inputs(self) -> Mapping[str, str]:
        """The record body's ``inputs``, else empty."""
        return dict(self.record.inputs or {})

    def _file(self, path: str) -> PrivateFile:
        f = self.files.get(path)
        if f is None:
            raise NotFound(f"{self.name}: {path} is not in the drive's path manifest")
        return f

    def _key(self, f: PrivateFile) -> FileKey:
        return derive_file_key(self.drive_key, f.file_id)

    def _iv(self, f: PrivateFile) -> bytes:
        try:
            return base64.b64decode(f.cipher_iv, validate=True)
        except binascii.Error:
            raise DecryptionError(f"{self.name}: {f.path}: Cipher-IV is not base64") from None

    def read_plain(self, path: str, limit: int) -> bytes:
        """The plaintext of a small file (``refs/head``, a block), tag checked."""
        f = self._file(path)
        data = self.gateway.get_data(f.data_item_id, limit=limit + TAG_SIZE)
        try:
            return decrypt(self._key(f), f.cipher_iv, data, f"{self.name}: {path}")
        except DecryptionError:
            raise DecryptionError(
                f"{self.name}: {path} does not decrypt (GCM tag mismatch) although the drive "
                "key is right: the ciphertext or its Cipher-IV was altered"
            ) from None

    def read_block(self, mh: bytes) -> bytes:
        """A block's plaintext, decrypted and re-hashed against ``mh``."""
        path = object_relpath("block", mh)
        data = self.read_plain(path, MAX_BLOCK_SIZE)
        verify_bytes(data, mh, self.name)
        return data

    def stream_object(self, kind: ObjectKind, mh: bytes, size: int | None) -> Iterator[bytes]:
        """A data file or checkpoint's plaintext, released once its GCM tag checked.

        Raises:
            FormatError: the object is above ``max_file_size`` (one GCM message).
            DecryptionError / ReplicaMismatch: altered or oversized ciphertext.
        """
        path = object_relpath(kind, mh)
        if size is not None and size > self.max_file_size:
            raise FormatError(
                f"{self.name}: {path} is {size} bytes, above the private-drive limit of "
                f"{self.max_file_size} (an ArFS file is one GCM message, checked only at its "
                "end); raise max_file_size to read it"
            )
        f = self._file(path)
        limit = self.max_file_size if size is None else size
        spool = decrypt_to_spool(
            self._key(f),
            self._iv(f),
            self.gateway.stream_data(f.data_item_id, _CHUNK),
            max_size=limit,
            where=f"{self.name}: {path}",
            spool_dir=self.spool_dir,
            spool_memory=self.spool_memory,
        )
        with spool:
            while chunk := spool.read(_CHUNK):
                yield chunk


def _check_drive_key(
    gateway: ArweaveGateway, record: UploadRecord, owner: str, key: DriveKey, ref: str
) -> bool:
    """Whether the drive entity decrypts under ``key`` (False: no drive entity found).

    Raises:
        DecryptionError: it does not decrypt, or names another root folder.
    """
    drive_id = record.drive.drive_id
    data = gateway.graphql(_DRIVE_ENTITY, {"owners": [owner], "drive": drive_id})
    edges = (data.get("transactions") or {}).get("edges") or []
    nodes: list[dict[str, Any]] = [
        e["node"] for e in edges if isinstance(e, dict) and isinstance(e.get("node"), dict)
    ]
    wrong = DecryptionError(
        f"{ref}: ArFS private drive {drive_id} does not open: wrong drive password or wallet "
        "(its drive metadata does not decrypt); check --drive-password-file and --wallet"
    )
    for node in nodes:
        owner_node = node.get("owner")
        if not isinstance(owner_node, dict) or owner_node.get("address") != owner:
            continue  # anyone can post these tags
        tags = item_tags(node)
        iv = tag_value(tags, "Cipher-IV")
        if iv is None:
            continue
        body = gateway.get_data(str(node.get("id")), limit=_MAX_META_SIZE)
        try:
            plain = decrypt(key, iv, body, f"{ref}: drive {drive_id}")
        except DecryptionError:
            raise wrong from None
        try:
            doc = load_foreign_json(plain, what=f"{ref}: drive {drive_id}", max_bytes=len(plain))
        except FormatError:
            raise wrong from None
        if not isinstance(doc, dict) or doc.get("rootFolderId") != record.drive.root_folder_id:
            raise ReplicaMismatch(
                f"{ref}: drive {drive_id} metadata names another root folder than the record"
            )
        return True
    return False


def open_private_replica(
    gateway: ArweaveGateway,
    ref: str,
    record_id: str,
    record: UploadRecord,
    owner: str,
    wallet: Wallet,
    password: str,
    *,
    max_file_size: int = DEFAULT_MAX_FILE_SIZE,
    spool_dir: Path | None = None,
) -> PrivateDriveReplica:
    """Open the private drive the upload record ``record_id`` (by ``owner``) published.

    ``record`` is the decoded record (body checked against its tags). Runs the checks of
    the module docstring.

    Raises:
        DecryptionError: another wallet than the owner's, or a wrong drive password
            ("wrong drive password or wallet"); altered ``refs/head``.
        ResolutionError: the chain of uploads is broken, or an item is missing.
        ReplicaMismatch: the decrypted ``refs/head`` disagrees with the record, or the drive
            entity names another root folder.
        FormatError: not a private drive.
    """
    if record.drive.privacy != "private":
        raise FormatError(f"{ref}: drive {record.drive.drive_id} is not an ArFS private drive")
    if wallet.address != owner:
        raise DecryptionError(
            f"{ref}: the drive belongs to wallet {owner}, --wallet is {wallet.address}: wrong "
            "drive password or wallet; pass the wallet that published it"
        )
    key = derive_drive_key(wallet, record.drive.drive_id, password)
    verified_key = _check_drive_key(gateway, record, owner, key, ref)
    latest = Upload(record_id, owner, record.tags_view, record_tags(record), None)
    added = collect_files([r for _, r in walk_records(gateway, latest, record)])
    nodes = lookup_items(gateway, [a.data_item_id for a in added.values()])
    files: dict[str, PrivateFile] = {}
    for path, a in added.items():
        node = nodes.get(a.data_item_id)
        owner_node = node.get("owner") if node is not None else None
        if node is None or not isinstance(owner_node, dict) or owner_node.get("address") != owner:
            raise ResolutionError(
                f"{ref}: {path}: data item {a.data_item_id} unknown to {gateway.url} or not "
                "the owner's; try another gateway"
            )
        iv = tag_value(item_tags(node), "Cipher-IV")
        if iv is None:
            raise FormatError(f"{ref}: {path}: data item {a.data_item_id} has no Cipher-IV tag")
        files[path] = PrivateFile(path, a.data_item_id, a.file_id, iv)
    replica = PrivateDriveReplica(
        ref, gateway, record, files, key, max_file_size=max_file_size, spool_dir=spool_dir
    )
    if HEAD_REF not in files:
        raise ResolutionError(f"{ref}: the drive's manifest has no {HEAD_REF}")
    try:
        head_text = replica.read_plain(HEAD_REF, 256)
    except DecryptionError:
        if verified_key:
            raise
        raise DecryptionError(
            f"{ref}: {HEAD_REF} does not decrypt: wrong drive password or wallet (or altered "
            "data; no drive metadata was found to tell which)"
        ) from None
    if head_text.decode("ascii", "replace").strip() != record.head:
        raise ReplicaMismatch(
            f"{ref}: the decrypted {HEAD_REF} differs from the record's ODF-Head "
            f"{record.head}; the drive is inconsistent"
        )
    return replica
