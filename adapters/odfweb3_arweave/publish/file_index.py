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
from typing import Any, ClassVar, Final

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


def index_after(
    old: object,
    keep: Mapping[str, Any],
    files: Mapping[str, FileRef],
    added: Iterable[str],
    of_objects: Callable[[dict[str, Any]], tuple[FileIndex, bytes]],
) -> FileIndex:
    """The file index after a bundle, its new pack written (before the state or checkpoint
    naming it, content-named: a crash leaves only an unreferenced pack).

    When the bundle keeps the state's other paths as they are (``keep`` a view over the
    state's index ``old``), the index is ``old`` with the bundle's ``added`` paths replaced:
    one small pack of the parts they fall in. Otherwise (a first upload, a rebuilt state,
    a state written before the index, kept paths a subset of the state's) one pack of every
    path in ``files`` (``of_objects``).
    """
    if (
        isinstance(old, FileIndex)
        and isinstance(keep, KeptFiles)
        and isinstance(keep.known, FileRefs)
        and keep.known.raw is old
    ):
        index, pack = old.updated({p: files[p].to_json() for p in added})
    else:
        index, pack = of_objects({p: ref.to_json() for p, ref in files.items()})
    if pack:
        index.out_dir.mkdir(parents=True, exist_ok=True)
        write_pack(index.out_dir, pack)
    return index
