"""ArFS 0.15 entities: exact tags and JSON bodies, checked against ardrive-core-js."""

from __future__ import annotations

import json
import uuid

import pytest

from odfweb3.errors import FormatError
from odfweb3_arweave.formats.arfs import (
    DATASET_FOLDERS,
    DriveLayout,
    FileMetadata,
    drive_entity,
    file_data_tags,
    file_metadata_entity,
    folder_entity,
    parse_file_metadata,
)
from odfweb3_arweave.formats.tags import Tag

# ardrive-core-js src/arfs/arfs_builders/arfs_file_builders.test.ts: a public file entity
# as ArDrive reads it (tags, and the metadata JSON as bytes written by JSON.stringify).
ARDRIVE_FILE_TAGS = {
    ("Content-Type", "application/json"),
    ("Drive-Id", "e93cf9c4-5f20-4d7a-87c4-034777cbb51e"),
    ("Entity-Type", "file"),
    ("Unix-Time", "1639073846"),
    ("Parent-Folder-Id", "6c312b3e-4778-4a18-8243-f2b346f5e7cb"),
    ("File-Id", "9f7038c7-26bd-4856-a843-8de24b828d4e"),
}
ARDRIVE_FILE_BODY = (
    b'{"name":"2","size":2048,"lastModifiedDate":1639073634269,'
    b'"dataTxId":"yAogaGWWYgWO5xWZevb45Y7YRp7E9iDsvkJvfR7To9c","dataContentType":"unknown"}'
)
ARDRIVE_FILE = FileMetadata(
    drive_id="e93cf9c4-5f20-4d7a-87c4-034777cbb51e",
    file_id="9f7038c7-26bd-4856-a843-8de24b828d4e",
    parent_folder_id="6c312b3e-4778-4a18-8243-f2b346f5e7cb",
    name="2",
    size=2048,
    last_modified_ms=1639073634269,
    data_tx_id="yAogaGWWYgWO5xWZevb45Y7YRp7E9iDsvkJvfR7To9c",
    data_content_type="unknown",
    unix_time=1639073846,
)


def texts(tags: tuple[Tag, ...]) -> list[tuple[str, str]]:
    return [t.text() for t in tags]


def counter_ids():
    n = iter(range(1, 100))
    return lambda: uuid.UUID(int=next(n))


def test_file_metadata_matches_ardrive_core_vector() -> None:
    entity = file_metadata_entity(ARDRIVE_FILE, "0.1.0")
    assert entity.body == ARDRIVE_FILE_BODY  # byte-identical to JSON.stringify
    tags = texts(entity.tags)
    assert set(tags) >= ARDRIVE_FILE_TAGS
    assert set(tags) - ARDRIVE_FILE_TAGS == {
        ("App-Name", "odfweb3"),
        ("App-Version", "0.1.0"),
        ("ArFS", "0.15"),
    }
    # Order as ardrive-core-js assembles it: protected tags, then the base ArFS tags.
    assert [n for n, _ in tags] == [
        "Content-Type",
        "Entity-Type",
        "Unix-Time",
        "Drive-Id",
        "File-Id",
        "Parent-Folder-Id",
        "App-Name",
        "App-Version",
        "ArFS",
    ]
    assert parse_file_metadata(entity.tags, entity.body, "t") == ARDRIVE_FILE


def test_drive_and_folders() -> None:
    layout = DriveLayout.new(counter_ids())
    assert layout.drive_id == "00000000-0000-0000-0000-000000000001"
    assert list(layout.folder_ids) == list(DATASET_FOLDERS)
    drive = drive_entity(layout, "my dataset", 1700000000, "0.1.0")
    assert json.loads(drive.body) == {"name": "my dataset", "rootFolderId": layout.root_folder_id}
    assert drive.body.startswith(b'{"name":')  # ardrive-core-js key order
    assert texts(drive.tags) == [
        ("Content-Type", "application/json"),
        ("Entity-Type", "drive"),
        ("Unix-Time", "1700000000"),
        ("Drive-Id", layout.drive_id),
        ("Drive-Privacy", "public"),
        ("App-Name", "odfweb3"),
        ("App-Version", "0.1.0"),
        ("ArFS", "0.15"),
    ]
    root = folder_entity(layout.drive_id, layout.root_folder_id, "my dataset", None, 1, "v")
    assert "Parent-Folder-Id" not in dict(texts(root.tags))  # a drive's root folder has none
    assert dict(texts(root.tags))["Folder-Id"] == layout.root_folder_id
    blocks = folder_entity(
        layout.drive_id, layout.folder_ids["blocks"], "blocks", layout.root_folder_id, 1, "v"
    )
    t = dict(texts(blocks.tags))
    assert t["Entity-Type"] == "folder" and t["Parent-Folder-Id"] == layout.root_folder_id
    assert blocks.body == b'{"name":"blocks"}'


def test_data_item_tags() -> None:
    assert texts(file_data_tags("application/octet-stream", "1.2")) == [
        ("Content-Type", "application/octet-stream"),
        ("App-Name", "odfweb3"),
        ("App-Version", "1.2"),
    ]


def test_layout_json_round_trip_and_rejects() -> None:
    layout = DriveLayout.new()
    assert DriveLayout.from_json(json.loads(json.dumps(layout.to_json())), "s") == layout
    assert layout.folder_for("data/f1620abc") == layout.folder_ids["data"]
    with pytest.raises(FormatError):
        layout.folder_for("info/x")
    bad = layout.to_json() | {"driveId": "not-a-uuid"}
    with pytest.raises(FormatError, match="UUID"):
        DriveLayout.from_json(bad, "s")
    with pytest.raises(FormatError, match="folder ids"):
        DriveLayout.from_json(layout.to_json() | {"folderIds": {"blocks": layout.drive_id}}, "s")
    with pytest.raises(FormatError, match="public or private"):
        DriveLayout.from_json(layout.to_json() | {"privacy": "secret"}, "s")
    private = DriveLayout.from_json(layout.to_json() | {"privacy": "private"}, "s")
    assert private.privacy == "private" and private.drive_id == layout.drive_id


@pytest.mark.parametrize("name", ["", "x" * 256])
def test_names_out_of_bounds(name: str) -> None:
    with pytest.raises(FormatError, match="1 to 255"):
        drive_entity(DriveLayout.new(), name, 1, "v")


def test_parse_file_metadata_rejects() -> None:
    entity = file_metadata_entity(ARDRIVE_FILE, "v")
    with pytest.raises(FormatError, match="not JSON"):
        parse_file_metadata(entity.tags, b"{", "m")
    body = json.loads(ARDRIVE_FILE_BODY)
    for key, value in [("size", -1), ("size", "2048"), ("dataTxId", "short"), ("name", None)]:
        with pytest.raises(FormatError, match="malformed"):
            parse_file_metadata(entity.tags, json.dumps(body | {key: value}).encode(), "m")
    folder = folder_entity(ARDRIVE_FILE.drive_id, ARDRIVE_FILE.file_id, "f", None, 1, "v")
    with pytest.raises(FormatError, match="not an ArFS file"):
        parse_file_metadata(folder.tags, ARDRIVE_FILE_BODY, "m")
    with pytest.raises(FormatError, match="dataTxId"):
        file_metadata_entity(FileMetadata(**{**ARDRIVE_FILE.__dict__, "data_tx_id": "x"}), "v")
