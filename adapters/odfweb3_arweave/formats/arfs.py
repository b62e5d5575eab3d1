"""ArFS 0.15 entities (public drives): the tags and JSON bodies ArDrive reads.

ArFS (docs.ardrive.io, "Entity Types") splits each entity into tags (for GraphQL) and a
JSON body (the item's data). odfweb3 maps one dataset onto one drive::

    drive "<name>"                 Entity-Type: drive, Drive-Privacy: public
      root folder                  Entity-Type: folder, no Parent-Folder-Id
        blocks/ refs/ data/ checkpoints/   Entity-Type: folder, Parent-Folder-Id: root
          <one file entity per object>    metadata item (JSON) + data item (the bytes)

Tags, in the order ardrive-core-js writes them (``arfs_prototypes.ts`` then the base
ArFS tags of ``arfs_tag_settings.ts``): ``Content-Type``, ``Entity-Type``, ``Unix-Time``
(seconds), ``Drive-Id``, then per entity ``Drive-Privacy`` (drive) / ``Folder-Id`` and
``Parent-Folder-Id`` (folder, none for the root) / ``File-Id`` and ``Parent-Folder-Id``
(file), then ``App-Name``, ``App-Version``, ``ArFS``. A file's data item carries only
``Content-Type`` (the object's media type) and the app tags.

JSON bodies, with the key order ardrive-core-js gives ``JSON.stringify``: drive
``{name, rootFolderId}``, folder ``{name}``, file ``{name, size, lastModifiedDate
(milliseconds), dataTxId, dataContentType}``.

A new revision of a file is a new metadata item with the same ``File-Id`` (ArFS
"Update File"): ``refs/head`` gets one per publish. Private drives (``Drive-Privacy:
private``): the same entities, then sealed by :func:`.arfs_private.seal_entity` (encrypted
body, ``Content-Type: application/octet-stream``, ``Cipher``, ``Cipher-IV``).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from odfweb3.errors import FormatError
from odfweb3.foreign_json import load_foreign_json
from odfweb3_arweave.formats.tags import Tag

__all__ = [
    "APP_NAME",
    "ARFS_VERSION",
    "DATASET_FOLDERS",
    "JSON_CONTENT_TYPE",
    "OCTET_STREAM",
    "DriveLayout",
    "Entity",
    "FileMetadata",
    "Privacy",
    "app_tags",
    "drive_entity",
    "file_data_tags",
    "file_metadata_entity",
    "folder_entity",
    "is_uuid",
    "parse_file_metadata",
    "tag_value",
]

ARFS_VERSION: Final = "0.15"
APP_NAME: Final = "odfweb3"
JSON_CONTENT_TYPE: Final = "application/json"
OCTET_STREAM: Final = "application/octet-stream"
DATASET_FOLDERS: Final = ("blocks", "refs", "data", "checkpoints")

Privacy = Literal["public", "private"]
"""Drive privacy (``Drive-Privacy``); private drives: :mod:`.arfs_private`."""

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TX_ID = re.compile(r"[A-Za-z0-9_-]{43}")


def is_uuid(text: object) -> bool:
    """Whether ``text`` is a lower-case hyphenated UUID, as ArFS ids are written."""
    return isinstance(text, str) and _UUID.fullmatch(text) is not None


def tag_value(tags: Sequence[Tag], name: str) -> str | None:
    """The first value of tag ``name`` as text, or None."""
    raw = name.encode()
    for tag in tags:
        if tag.name == raw:
            return tag.value.decode("utf-8", errors="replace")
    return None


@dataclass(frozen=True)
class Entity:
    """An unsigned ArFS item: its tags and its data (a JSON body or file bytes)."""

    tags: tuple[Tag, ...]
    body: bytes


@dataclass(frozen=True)
class DriveLayout:
    """The stable ids of a dataset's drive: kept in publish state, reused every publish.

    Attributes:
        drive_id: the drive's UUID.
        root_folder_id: the root folder's UUID.
        folder_ids: folder name (``blocks``, ``refs``, ``data``, ``checkpoints``) -> UUID.
        privacy: ``"public"`` or ``"private"``.
    """

    drive_id: str
    root_folder_id: str
    folder_ids: Mapping[str, str]
    privacy: Privacy = "public"

    @classmethod
    def new(
        cls, new_id: Callable[[], uuid.UUID] = uuid.uuid4, privacy: Privacy = "public"
    ) -> DriveLayout:
        """Fresh UUIDv4 ids for a new drive, its root and the four dataset folders."""
        drive_id, root_id = str(new_id()), str(new_id())
        folders = {name: str(new_id()) for name in DATASET_FOLDERS}
        return cls(drive_id, root_id, folders, privacy)

    def to_json(self) -> dict[str, Any]:
        """JSON form (publish state, upload record)."""
        return {
            "driveId": self.drive_id,
            "rootFolderId": self.root_folder_id,
            "folderIds": dict(sorted(self.folder_ids.items())),
            "privacy": self.privacy,
        }

    @classmethod
    def from_json(cls, data: Any, where: str) -> DriveLayout:
        """Parse and check the JSON form.

        Raises:
            FormatError: missing fields, ids that are not UUIDs, or an unknown privacy.
        """
        if not isinstance(data, dict):
            raise FormatError(f"{where}: drive layout is not a JSON object")
        folders = data.get("folderIds")
        if not isinstance(folders, dict) or sorted(folders) != sorted(DATASET_FOLDERS):
            raise FormatError(f"{where}: drive layout needs folder ids for {DATASET_FOLDERS}")
        ids = [data.get("driveId"), data.get("rootFolderId"), *folders.values()]
        if not all(is_uuid(i) for i in ids):
            raise FormatError(f"{where}: drive layout holds an id that is not a UUID")
        privacy = data.get("privacy", "public")
        if privacy not in ("public", "private"):
            raise FormatError(f"{where}: drive privacy must be public or private")
        return cls(str(data["driveId"]), str(data["rootFolderId"]), dict(folders), privacy)

    def folder_for(self, path: str) -> str:
        """The folder id holding a dataset path (``data/f1620…`` -> the ``data`` folder)."""
        top = path.split("/", 1)[0]
        try:
            return self.folder_ids[top]
        except KeyError:
            raise FormatError(f"{path}: not under one of {DATASET_FOLDERS}") from None


def app_tags(app_version: str) -> tuple[Tag, Tag]:
    """``App-Name: odfweb3`` and ``App-Version``."""
    return (Tag.of("App-Name", APP_NAME), Tag.of("App-Version", app_version))


def _json(body: dict[str, Any]) -> bytes:
    # Key order as given (ardrive-core-js's JSON.stringify order), compact, UTF-8.
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _metadata_tags(
    entity_type: str, drive_id: str, unix_time: int, specific: Sequence[Tag], app_version: str
) -> tuple[Tag, ...]:
    return (
        Tag.of("Content-Type", JSON_CONTENT_TYPE),
        Tag.of("Entity-Type", entity_type),
        Tag.of("Unix-Time", str(unix_time)),
        Tag.of("Drive-Id", drive_id),
        *specific,
        *app_tags(app_version),
        Tag.of("ArFS", ARFS_VERSION),
    )


def _check_name(name: str, what: str) -> None:
    # ArFS entity names (arfs_entity_name_validators.ts): non-empty, at most 255 bytes.
    if not name or len(name.encode("utf-8")) > 255:
        raise FormatError(f"ArFS {what} name {name[:40]!r}: must be 1 to 255 bytes")


def drive_entity(layout: DriveLayout, name: str, unix_time: int, app_version: str) -> Entity:
    """The drive entity (ArFS "Drive"): body ``{name, rootFolderId}``.

    Raises:
        FormatError: an empty or over-long name.
    """
    _check_name(name, "drive")
    tags = _metadata_tags(
        "drive", layout.drive_id, unix_time, [Tag.of("Drive-Privacy", layout.privacy)], app_version
    )
    return Entity(tags, _json({"name": name, "rootFolderId": layout.root_folder_id}))


def folder_entity(
    drive_id: str,
    folder_id: str,
    name: str,
    parent_folder_id: str | None,
    unix_time: int,
    app_version: str,
) -> Entity:
    """A folder entity (ArFS "Folder"); the drive's root folder has no parent.

    Raises:
        FormatError: an empty or over-long name.
    """
    _check_name(name, "folder")
    specific = [Tag.of("Folder-Id", folder_id)]
    if parent_folder_id is not None:
        specific.append(Tag.of("Parent-Folder-Id", parent_folder_id))
    return Entity(
        _metadata_tags("folder", drive_id, unix_time, specific, app_version), _json({"name": name})
    )


@dataclass(frozen=True)
class FileMetadata:
    """A file entity's metadata (tags and JSON body, both checked).

    Attributes:
        drive_id: ``Drive-Id``.
        file_id: ``File-Id`` (stable across revisions).
        parent_folder_id: ``Parent-Folder-Id``.
        name: file name (for us the object's hash, or ``head``).
        size: data size in bytes.
        last_modified_ms: ``lastModifiedDate``, milliseconds since the epoch.
        data_tx_id: id of the data item holding the bytes.
        data_content_type: media type of the data.
        unix_time: ``Unix-Time`` (seconds).
    """

    drive_id: str
    file_id: str
    parent_folder_id: str
    name: str
    size: int
    last_modified_ms: int
    data_tx_id: str
    data_content_type: str
    unix_time: int


def file_metadata_entity(meta: FileMetadata, app_version: str) -> Entity:
    """A file's metadata item (ArFS "File"), linking its data item by ``dataTxId``.

    Raises:
        FormatError: a name out of bounds, a negative size or a malformed ``dataTxId``.
    """
    _check_name(meta.name, "file")
    if meta.size < 0 or not _TX_ID.fullmatch(meta.data_tx_id):
        raise FormatError(f"ArFS file {meta.name}: bad size or dataTxId")
    specific = [Tag.of("File-Id", meta.file_id), Tag.of("Parent-Folder-Id", meta.parent_folder_id)]
    body = {
        "name": meta.name,
        "size": meta.size,
        "lastModifiedDate": meta.last_modified_ms,
        "dataTxId": meta.data_tx_id,
        "dataContentType": meta.data_content_type,
    }
    tags = _metadata_tags("file", meta.drive_id, meta.unix_time, specific, app_version)
    return Entity(tags, _json(body))


def file_data_tags(content_type: str, app_version: str) -> tuple[Tag, ...]:
    """Tags of a public file's data item: its ``Content-Type`` and the app tags."""
    return (Tag.of("Content-Type", content_type), *app_tags(app_version))


def parse_file_metadata(tags: Sequence[Tag], body: bytes, where: str) -> FileMetadata:
    """Read back a public file metadata item (for pull and state rebuilding).

    Raises:
        FormatError: not an ArFS file entity, or fields missing or malformed.
    """
    if tag_value(tags, "Entity-Type") != "file" or tag_value(tags, "ArFS") is None:
        raise FormatError(f"{where}: not an ArFS file metadata item")
    ids = {n: tag_value(tags, n) for n in ("Drive-Id", "File-Id", "Parent-Folder-Id")}
    if not all(is_uuid(v) for v in ids.values()):
        raise FormatError(f"{where}: ArFS file item lacks Drive-Id/File-Id/Parent-Folder-Id UUIDs")
    unix = tag_value(tags, "Unix-Time") or ""
    doc = load_foreign_json(body, what=f"{where}: ArFS file metadata", max_bytes=len(body))
    if not isinstance(doc, dict):
        raise FormatError(f"{where}: ArFS file metadata is not a JSON object")
    name, size, modified = doc.get("name"), doc.get("size"), doc.get("lastModifiedDate")
    data_id, ctype = doc.get("dataTxId"), doc.get("dataContentType")
    if (
        not isinstance(name, str)
        or not isinstance(size, int)
        or isinstance(size, bool)
        or size < 0
        or not isinstance(modified, int)
        or not isinstance(data_id, str)
        or not _TX_ID.fullmatch(data_id)
        or not isinstance(ctype, str)
        or not unix.isdigit()
    ):
        raise FormatError(f"{where}: ArFS file metadata has missing or malformed fields")
    return FileMetadata(
        drive_id=str(ids["Drive-Id"]),
        file_id=str(ids["File-Id"]),
        parent_folder_id=str(ids["Parent-Folder-Id"]),
        name=name,
        size=size,
        last_modified_ms=modified,
        data_tx_id=data_id,
        data_content_type=ctype,
        unix_time=int(unix),
    )
