"""Hand-made hostile IPFS DAGs and ``car:DIR`` publishes.

Small inputs that describe huge things: a file of ``fanout ** depth`` links to one leaf
(1,000 x 1,000 links to one 1 MiB leaf: 1 TB from a CAR of about 45 MB... or 1.4 MB with
a 1 KiB leaf), files of empty leaves nested ``fanout ** depth`` times, and a HAMT whose
every shard links all its buckets to one sub-shard. Everything is built with the
project's own encoders (dag-pb, UnixFS, CID, CAR) so the blocks are valid: only their
shape is hostile.

:func:`forge_car_dir` rewrites an honest ``car:DIR`` publish: replace entries of the
published layout (``refs/head``, a ``data/<hash>`` file...) by hostile DAGs, write one
new CAR holding every block, point ``publish.json`` at the new root and, when given the
publisher's keys (a hostile publisher), re-sign the IPNS record so that every check
before the hostile read passes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from odfweb3.crypto.keystore import Keystore
from odfweb3_ipfs.formats.car import CarWriter, iter_car
from odfweb3_ipfs.formats.cid import CODEC_DAG_PB, CODEC_RAW, Cid
from odfweb3_ipfs.formats.dagpb import PBLink, encode_pbnode
from odfweb3_ipfs.formats.ipns import OdfExtension, create_record, encode_record
from odfweb3_ipfs.formats.unixfs_data import DataType, UnixFSData, encode_unixfs_data
from odfweb3_ipfs.formats.unixfs_reader import list_directory, resolve_path

__all__ = [
    "Blocks",
    "amplified_file",
    "directory",
    "empty_leaf_nest",
    "file_node",
    "forge_car_dir",
    "hamt_bomb",
    "raw_leaf",
    "write_car",
]

Blocks = dict[bytes, bytes]  # cid.raw -> block bytes


def _put(blocks: Blocks, data: bytes, codec: int) -> Cid:
    cid = Cid.sha256(hashlib.sha256(data).digest(), version=1, codec=codec)
    blocks[cid.raw] = data
    return cid


def raw_leaf(blocks: Blocks, data: bytes) -> Cid:
    """A raw-codec leaf."""
    return _put(blocks, data, CODEC_RAW)


def file_node(blocks: Blocks, links: list[Cid], *, filesize: int | None = None) -> Cid:
    """A UnixFS file node linking ``links`` (``filesize`` may lie or be left out)."""
    data = encode_unixfs_data(UnixFSData(type=DataType.FILE, filesize=filesize))
    return _put(blocks, encode_pbnode([PBLink(c, b"", 0) for c in links], data), CODEC_DAG_PB)


def directory(blocks: Blocks, entries: Mapping[str, Cid]) -> Cid:
    """A plain UnixFS directory (entries sorted by name, as importers write them)."""
    links = [PBLink(c, n.encode(), 0) for n, c in sorted(entries.items())]
    data = encode_unixfs_data(UnixFSData(type=DataType.DIRECTORY))
    return _put(blocks, encode_pbnode(links, data), CODEC_DAG_PB)


def amplified_file(blocks: Blocks, *, fanout: int, depth: int, leaf: bytes) -> Cid:
    """A file of ``fanout ** depth`` links to one leaf: ``depth + 1`` distinct blocks."""
    cid = raw_leaf(blocks, leaf)
    for _ in range(depth):
        cid = file_node(blocks, [cid] * fanout)
    return cid


def empty_leaf_nest(blocks: Blocks, *, fanout: int, depth: int) -> Cid:
    """A file of ``fanout ** depth`` empty leaves (0 bytes; cost is in blocks visited)."""
    cid = raw_leaf(blocks, b"")
    for _ in range(depth):
        cid = file_node(blocks, [cid] * fanout, filesize=0)
    return cid


def hamt_bomb(blocks: Blocks, *, depth: int, fanout: int = 256) -> Cid:
    """A HAMT whose every shard links all ``fanout`` buckets to one sub-shard, ``depth``
    levels down to a shard of one entry: ``fanout ** depth`` expansions if unchecked."""
    width = len(f"{fanout - 1:X}")
    bitfield = ((1 << fanout) - 1).to_bytes(fanout // 8, "big")

    def shard(links: list[PBLink], bits: bytes) -> Cid:
        data = encode_unixfs_data(
            UnixFSData(type=DataType.HAMT_SHARD, data=bits, hash_type=0x22, fanout=fanout)
        )
        return _put(blocks, encode_pbnode(links, data), CODEC_DAG_PB)

    entry = raw_leaf(blocks, b"entry")
    cid = shard([PBLink(entry, b"00" + b"name", 0)], b"\x01")
    for _ in range(depth):
        names = [f"{i:0{width}X}".encode() for i in range(fanout)]
        cid = shard([PBLink(cid, n, 0) for n in names], bitfield)
    return cid


def write_car(path: Path, root: Cid, blocks: Blocks) -> None:
    """One CAR v1 with ``root`` and every block."""
    with open(path, "wb") as f:
        writer = CarWriter(f, root)
        for raw, data in blocks.items():
            writer.write_block(Cid.from_bytes(raw), data)


def _car_blocks(out: Path, doc: Mapping[str, Any]) -> Blocks:
    blocks: Blocks = {}
    for name in doc["extra"]["cars"]:
        with open(out / name, "rb") as f:
            _roots, sections = iter_car(f)
            for cid, data in sections:
                blocks[cid.raw] = data
    return blocks


def forge_car_dir(
    out: Path,
    replace: Mapping[str, Cid],
    extra: Blocks,
    *,
    keys: Keystore | None = None,
    summary: Mapping[str, Any] | None = None,
) -> Cid:
    """Rewrite the publish in ``out`` with ``replace`` (``folder/name`` or a top-level name
    -> CID) and the ``extra`` blocks; returns the new root.

    Without ``keys`` the old record is left (signed over the old root: a reader that checks
    the record first refuses it; one that reads first is exposed). ``summary`` entries
    replace top-level ``publish.json`` fields afterwards (``record``, ``extra``...).
    """
    doc = json.loads((out / "publish.json").read_text("utf-8"))
    blocks = _car_blocks(out, doc)
    blocks.update(extra)
    root = Cid.decode(doc["root"])

    def get(cid: Cid) -> bytes:
        return blocks[cid.raw]

    top = list_directory(root, get)
    folders: dict[str, dict[str, Cid]] = {}
    for path, cid in replace.items():
        folder, _, name = path.rpartition("/")
        if folder:
            if folder not in folders:
                folders[folder] = list_directory(resolve_path(root, folder, get), get)
            folders[folder][name] = cid
        else:
            top[name] = cid
    for folder, entries in folders.items():
        top[folder] = directory(blocks, entries)
    new_root = directory(blocks, top)
    for name in doc["extra"]["cars"]:
        (out / name).unlink()
    car_name = f"{new_root.encode()}.car"
    write_car(out / car_name, new_root, blocks)
    doc["root"] = doc["locator"] = new_root.encode()
    doc["extra"]["cars"] = [car_name]
    if keys is not None:
        key = keys.load(doc["datasetId"])
        now = datetime.now(UTC)
        seq = int(doc["record"]["sequence"]) + 1
        record = create_record(
            key,
            f"/ipfs/{new_root.encode()}",
            seq,
            validity=now + timedelta(hours=1),
            extensions={"_odf": OdfExtension(dataset_id=doc["datasetId"], head=doc["head"])},
            now=now,
        )
        (out / doc["record"]["file"]).write_bytes(encode_record(record))
        doc["record"]["sequence"] = doc["sequence"] = seq
        doc["record"]["value"] = f"/ipfs/{new_root.encode()}"
    doc.update(summary or {})
    (out / "publish.json").write_text(json.dumps(doc, indent=1), "utf-8")
    return new_root
