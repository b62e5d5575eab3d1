"""``car:DIR``'s object index: the per-object links, partitioned so an update reads and
writes only the partitions its new objects fall in.

``publish.json`` used to list every object (path -> ``{cid, tsize, size}``: 6 MB at 10,000
blocks), read and written whole by every publish. Now the entries live in the packs of the
core's :mod:`odfweb3.publish.pack_index` (``OUT_DIR/index-<sha-256 prefix>.pack``; written
before ``publish.json``, unreferenced ones removed after, read bounded and verified), with
this layout: one part ``{name: [cid, tsize, size]}`` per top directory (``blocks``,
``data``, ``checkpoints``) and partition, the partition of a name being the top byte of its
HAMT hash, so a partition holds exactly the entries of one child of a sharded directory's
root (fanout 256): an update rebuilds a child from its partition. ``publish.json`` keeps, in
``extra.objectIndex``, where each part is (at most 768 refs, whatever the dataset's size).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final

from odfweb3.errors import FormatError
from odfweb3.publish.pack_index import MAX_PACKS, IndexLayout, PackIndex, PartRef, is_pack_name
from odfweb3_ipfs.formats.hamt import hamt_hash

__all__ = [
    "MAX_PACKS",
    "ObjectIndex",
    "PartRef",
    "is_pack_name",
    "partition_of",
]

_FOLDERS: Final = ("blocks", "checkpoints", "data")


def partition_of(name: str) -> int:
    """The partition of an entry name: the top byte of its HAMT hash (its root bucket at
    fanout 256)."""
    return hamt_hash(name.encode("ascii")) >> 56


def _encode(entry: Mapping[str, Any]) -> list[Any]:
    return [entry["cid"], entry["tsize"], entry["size"]]


def _decode(raw: Any, where: str) -> dict[str, Any]:
    """``{"cid", "tsize", "size"}``, as publish.json had them."""
    if not (isinstance(raw, list) and len(raw) == 3 and isinstance(raw[0], str)):
        raise FormatError(f"{where}: malformed object index entry")
    cid, tsize, size = raw
    for v in (tsize, size):
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise FormatError(f"{where}: malformed object index entry")
    return {"cid": cid, "tsize": tsize, "size": size}


class ObjectIndex(PackIndex):
    """Object path -> ``{cid, tsize, size}``, read part by part when asked
    (:class:`~odfweb3.publish.pack_index.PackIndex` with the HAMT-bucket layout)."""

    layout: ClassVar[IndexLayout] = IndexLayout(_FOLDERS, partition_of, _encode, _decode)
