"""A bundle's planned revisions, packed: the FileToAdd entries they stand for."""

from __future__ import annotations

import uuid

import pytest

from odfweb3.odf.chain import DatasetObject, ObjectList
from odfweb3.odf.layout import object_relpath
from odfweb3_arweave.formats.arfs import OCTET_STREAM, DriveLayout
from odfweb3_arweave.formats.manifest import in_path_order
from odfweb3_arweave.publish.planned_files import FileToAdd, PlannedFiles

_MH = bytes.fromhex("1620") + bytes(range(32))


def _objects() -> list[DatasetObject]:
    kinds = ("block", "data", "checkpoint", "data")
    return [
        DatasetObject(kind, _MH[:-1] + bytes([k]), 100 + k)  # type: ignore[arg-type]
        for k, kind in enumerate(kinds)
    ]


@pytest.mark.parametrize("packed", [True, False])
def test_entries_are_the_file_to_adds_they_stand_for(packed: bool) -> None:
    counter = iter(range(1, 100))
    drive = DriveLayout.new(lambda: uuid.UUID(int=next(counter)))
    objects = _objects()
    send = ObjectList(objects) if packed else tuple(objects)
    ids = [str(uuid.UUID(int=1000 + k)) for k in range(len(objects))]
    ids[2] = "not-a-uuid"  # a File-Id from elsewhere comes back as given
    planned = PlannedFiles(send, drive)
    for obj, file_id in zip(objects, ids, strict=True):
        planned.append(file_id, 2 * (obj.size or 0))
    with pytest.raises(IndexError):
        planned.append(ids[0], 1)
    head = FileToAdd("refs/head", drive.folder_ids["refs"], ids[0], 5, "text/plain", content=b"h")
    planned.close(head)
    want = [
        FileToAdd(
            object_relpath(o.kind, o.hash),
            drive.folder_for(object_relpath(o.kind, o.hash)),
            i,
            2 * (o.size or 0),
            OCTET_STREAM,
            o,
        )
        for o, i in zip(objects, ids, strict=True)
    ] + [head]
    assert list(planned) == want and len(planned) == len(want)
    assert planned[-1] == head and planned[1:3] == want[1:3]
    assert [planned.path_at(k) for k in range(len(want))] == [w.path for w in want]
    assert [planned.file_id_at(k) for k in range(len(want))] == [w.file_id for w in want]
    with pytest.raises(IndexError):
        planned[len(want)]


def test_close_needs_every_object_and_in_path_order_sorts_plain_maps() -> None:
    planned = PlannedFiles(tuple(_objects()), DriveLayout.new(uuid.uuid4))
    with pytest.raises(ValueError, match="without its entry"):
        planned.close(FileToAdd("refs/head", "f", "i", 1, "text/plain", content=b"x"))
    assert list(in_path_order({"b": 1, "a": 2})) == ["a", "b"]
