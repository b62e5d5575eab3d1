"""``bundle:DIR``'s file index: where each path's current file entity revision is, in the
core's content-named packs (:mod:`odfweb3.publish.pack_index`), so a publish reads and
writes only the parts its new paths fall in.

``publish.json`` used to list every path twice (``objects``: path -> ``{fileId,
dataItemId, metaItemId, size}``, and ``itemsByPath``: 40 MB at 100,000 blocks), read and
written whole by every publish. Now the entries live in ``OUT_DIR/index-<hash>.pack``
(written before ``publish.json``, unreferenced ones removed after; read bounded and
verified), one part ``{name: [dataItemId, fileId, metaItemId, size]}`` per top directory
(``blocks``, ``checkpoints``, ``data``, ``refs``) and partition, the partition of a name
being the first byte of its SHA-256 (object names are ODF hashes: the parts fill evenly).
``publish.json`` keeps where each part is in ``extra.objectIndex`` (at most 1,024 refs,
whatever the dataset's size). An entry reads back as the JSON
:class:`.bundle_plan.FileRef` had in ``objects``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Final, Self

from odfweb3.errors import FormatError
from odfweb3.publish.pack_index import IndexLayout, PackIndex, write_pack
from odfweb3_arweave.publish.bundle_plan import FileRef, FileRefs, KeptFiles

__all__ = ["FileIndex", "index_after", "partition_of"]

_FOLDERS: Final = ("blocks", "checkpoints", "data", "refs")


def partition_of(name: str) -> int:
    """The partition of an entry name: the first byte of its SHA-256."""
    return hashlib.sha256(name.encode("ascii")).digest()[0]


def _encode(entry: Mapping[str, Any]) -> list[Any]:
    return [entry["dataItemId"], entry["fileId"], entry["metaItemId"], entry["size"]]


def _decode(raw: Any, where: str) -> dict[str, Any]:
    """``{dataItemId, fileId, metaItemId, size}`` (checked again, as every state entry is,
    by :meth:`.bundle_plan.FileRef.from_json` when used)."""
    if not (isinstance(raw, list) and len(raw) == 4 and all(isinstance(v, str) for v in raw[:3])):
        raise FormatError(f"{where}: malformed file index entry")
    data, file_id, meta, size = raw
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise FormatError(f"{where}: malformed file index entry")
    return {"dataItemId": data, "fileId": file_id, "metaItemId": meta, "size": size}


class FileIndex(PackIndex):
    """Path -> the JSON of its :class:`.bundle_plan.FileRef`, read part by part when asked."""

    layout: ClassVar[IndexLayout] = IndexLayout(_FOLDERS, partition_of, _encode, _decode)

    @classmethod
    def fresh(cls, out_dir: Path, files: Mapping[str, FileRef]) -> Self:
        """A fresh index of every path of ``files``, its one pack written part by part as
        it is encoded (:meth:`PackIndex.write_fresh`: the bytes :meth:`of_objects` gives;
        no entry dict per path nor the whole pack in memory: a first upload's 300,000
        paths at 100,000 blocks)."""
        out_dir.mkdir(parents=True, exist_ok=True)
        return cls.write_fresh(out_dir, files, lambda path: _encode(files[path].to_json()))


def index_after(
    old: object,
    keep: Mapping[str, Any],
    files: Mapping[str, FileRef],
    added: Iterable[str],
    fresh: Callable[[Mapping[str, FileRef]], FileIndex],
) -> FileIndex:
    """The file index after a bundle, its new pack written (before the state or checkpoint
    naming it, content-named: a crash leaves only an unreferenced pack).

    When the bundle keeps the state's other paths as they are (``keep`` a view over the
    state's index ``old``), the index is ``old`` with the bundle's ``added`` paths replaced:
    one small pack of the parts they fall in. Otherwise (a first upload, a rebuilt state,
    a state written before the index, kept paths a subset of the state's) one pack of every
    path in ``files``, written as it is encoded (``fresh``: :meth:`FileIndex.fresh`).
    """
    if (
        isinstance(old, FileIndex)
        and isinstance(keep, KeptFiles)
        and isinstance(keep.known, FileRefs)
        and keep.known.raw is old
    ):
        index, pack = old.updated({p: files[p].to_json() for p in added})
    else:
        return fresh(files)
    if pack:
        index.out_dir.mkdir(parents=True, exist_ok=True)
        write_pack(index.out_dir, pack)
    return index
