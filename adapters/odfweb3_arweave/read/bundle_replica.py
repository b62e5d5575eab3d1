"""``bundle:DIR``: the offline Arweave output of ``publish --to bundle:DIR``, read as a replica.

As checkable as ``car:DIR``: nothing in the directory is trusted.

1. Every ``*.bundle`` file is read item by item (:func:`.ans104.iter_bundle`): offsets,
   sizes, ids (``SHA-256(signature)``) and every signature are checked; each item is then
   indexed by id with its file and data offset, and its bytes dropped.
2. The latest upload record is the record item that no other record names as its
   ``ODF-Prev-Upload`` (``publish.json``'s ``recordId`` only breaks a tie); its tags and
   body are checked against each other (:func:`.record.decode_record`).
3. Every upload record in the directory must be signed by one wallet, and every item read
   later by that same wallet (anyone can put a bundle in a directory); the path manifest
   is the record's ``ODF-Manifest``; a delta upload's (``ODF-Full-Manifest``)
   maps only what it added, so the records before it are read back to the last full
   manifest (same wallet and dataset, head continuity) and their manifests overlaid, the
   newest winning. Which wallet that should be only the reader knows:
   ``resolve``/``verify`` show the dataset, compare the publisher's address yourself.
4. The head is the record's signed ``ODF-Head``; blocks are hashed by the chain walk and
   objects by :func:`odfweb3.read.replica.read_object_verified`.

Encrypted uploads and ArFS private drives are refused with a one-line error (read them
once posted, through ``ar://``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from odfweb3.errors import (
    FormatError,
    HashMismatch,
    NotFound,
    OdfWeb3Error,
    ReplicaMismatch,
    ResolutionError,
    UsageError,
)
from odfweb3.foreign_json import read_foreign_json_file
from odfweb3.odf.layout import ObjectKind, object_relpath
from odfweb3.odf.multihash import multihash_from_str
from odfweb3_arweave.formats.ans104 import iter_bundle
from odfweb3_arweave.formats.manifest import MAX_DELTA_UPLOADS, decode_manifest
from odfweb3_arweave.formats.record import (
    UploadRecord,
    check_delta_link,
    decode_record,
    parse_record_tags,
)
from odfweb3_arweave.formats.tags import Tag

__all__ = ["BundleDirReplica", "open_bundle_dir"]

_MAX_BUNDLES: Final = 10_000
_MAX_SMALL_ITEM: Final = 64 << 20  # records, manifests, blocks, refs/head
_MAX_SUMMARY_SIZE: Final = 64 << 20  # publish.json, as for car:DIR
_CHUNK: Final = 1 << 20


@dataclass(frozen=True)
class _Item:
    """Where a verified item's data lies, and what it says about itself."""

    path: Path
    data_offset: int
    data_size: int
    owner: bytes
    tags: tuple[Tag, ...]


def _index_bundle(path: Path, items: dict[str, _Item]) -> None:
    """Verify every item of one bundle file and index it (its bytes are not kept)."""
    with open(path, "rb") as f:
        count = int.from_bytes(f.read(32), "little")
        sizes = [int.from_bytes(f.read(64)[:32], "little") for _ in range(min(count, 1 << 20))]
        f.seek(0)
        offset = 32 + 64 * len(sizes)
        for size, item in zip(sizes, iter_bundle(f, verify=True), strict=False):
            header_len = size - item.header.data_size
            items[item.id_b64] = _Item(
                path, offset + header_len, item.header.data_size, item.header.owner, item.tags
            )
            offset += size


def _read(item: _Item, limit: int, what: str) -> bytes:
    if item.data_size > limit:
        raise FormatError(f"{what}: {item.data_size} bytes, more than {limit}")
    with open(item.path, "rb") as f:
        f.seek(item.data_offset)
        data = f.read(item.data_size)
    if len(data) != item.data_size:
        raise FormatError(f"{what}: {item.path.name} changed while read")
    return data


class BundleDirReplica:
    """A dataset in a ``bundle:DIR`` directory (see the module docstring)."""

    def __init__(self, out_dir: Path, ref: str, *, sealed_ok: bool = False) -> None:
        """``sealed_ok``: an encrypted or private-drive upload is indexed too (its items,
        records and manifests are checked; its ``refs/head``, ciphertext, is not read): for
        a publish checking what the directory holds, never for reading the dataset."""
        self.name = ref
        self.out_dir = out_dir
        bundles = sorted(out_dir.glob("*.bundle"))[: _MAX_BUNDLES + 1]
        if not bundles:
            raise NotFound(f"{ref}: no .bundle file in {out_dir}; publish with --to {ref} first")
        if len(bundles) > _MAX_BUNDLES:
            raise FormatError(f"{ref}: more than {_MAX_BUNDLES} bundles; not an odfweb3 output")
        self._items: dict[str, _Item] = {}
        for path in bundles:
            try:
                _index_bundle(path, self._items)
            except HashMismatch as exc:  # an item id that is not SHA-256(signature)
                raise HashMismatch(
                    exc.expected, exc.actual, f"{ref}: {path.name}: {exc.where}"
                ) from None
            except OdfWeb3Error as exc:
                raise type(exc)(f"{ref}: {path.name}: {exc}") from None
        record_id = self._latest_record()
        record_item = self._items[record_id]
        self.owner = record_item.owner
        self.record: UploadRecord = decode_record(
            record_item.tags,
            _read(record_item, _MAX_SMALL_ITEM, f"{ref}: upload record"),
            f"{ref}: upload record {record_id}",
        )
        self.record_id = record_id
        self.dataset_id = self.record.dataset_id
        self.inputs = dict(self.record.inputs or {})
        sealed = self.record.key_envelope is not None or self.record.drive.privacy == "private"
        if sealed and not sealed_ok:
            raise UsageError(
                f"{ref}: an encrypted or private-drive upload; read it through ar://{record_id} "
                "once posted"
            )
        self._paths: dict[str, str] = {}
        for record in self._back_to_full_manifest(record_id):
            manifest = decode_manifest(
                _read(self._owned(record.manifest_id, "path manifest"), _MAX_SMALL_ITEM, ref),
                f"{ref}: manifest {record.manifest_id}",
            )
            self._paths.update(manifest.paths)
        served = self._paths.get("refs/head")
        if served is not None and not sealed:
            text = _read(self._owned(served, "refs/head"), 1024, f"{ref}: refs/head").strip()
            if text.decode("ascii", "replace") != self.record.head:
                raise ReplicaMismatch(
                    f"{ref}: refs/head says {text[:80]!r}, the signed record {self.record.head}"
                )

    def check_file(self, path: str, data_item: str, meta_item: str) -> None:
        """Refuse a file revision the directory does not hold as the manifests map it: its
        data item is not the one the manifests give ``path``, or either item is in no bundle
        or signed by another wallet (for a publish that reuses the directory's index).

        Raises:
            NotFound / ReplicaMismatch: naming the path and the item.
        """
        mapped = self._paths.get(path)
        if mapped != data_item:
            raise ReplicaMismatch(
                f"{self.name}: {path} is {data_item} in the file index, "
                f"{mapped or 'absent'} in the manifests"
            )
        self._owned(data_item, path)
        self._owned(meta_item, f"{path} metadata")

    def _latest_record(self) -> str:
        records: dict[str, str | None] = {}
        owners: set[bytes] = set()
        for item_id, item in self._items.items():
            try:
                facts = parse_record_tags(item.tags, f"item {item_id}")
            except FormatError:
                continue  # data, metadata, manifest, descriptor
            records[item_id] = facts.prev_upload
            owners.add(item.owner)
        if len(owners) > 1:
            # Anyone can drop a bundle here: records from two wallets are not one dataset.
            raise ReplicaMismatch(
                f"{self.name}: upload records signed by {len(owners)} different wallets; "
                "keep only the publisher's bundles in the directory"
            )
        named = {prev for prev in records.values() if prev}
        tips = sorted(r for r in records if r not in named)
        if not tips:
            raise NotFound(f"{self.name}: no upload record in {self.out_dir}")
        if len(tips) > 1:
            hint = self._summary_record_id()
            if hint in tips:
                return hint
            raise ReplicaMismatch(
                f"{self.name}: {len(tips)} latest upload records ({', '.join(tips[:3])}); "
                "the directory mixes diverged publishes"
            )
        return tips[0]

    def _back_to_full_manifest(self, record_id: str) -> list[UploadRecord]:
        """The records from the last one with a full manifest to the latest (oldest first).

        A delta upload's manifest maps only what it added: its predecessors are
        read back to the newest upload without ``ODF-Full-Manifest``, each link checked as
        on a gateway (:func:`.lookup.walk_to_full_manifest`): signed by the same wallet,
        same dataset, ``ODF-Prev-Head`` = the previous ``ODF-Head``, every delta naming that
        full manifest, at most ``MAX_DELTA_UPLOADS`` of them.
        """
        records = [self.record]
        current, current_id = self.record, record_id
        count = current.delta_uploads
        if count is not None and count > MAX_DELTA_UPLOADS:
            raise ResolutionError(
                f"{self.name}: upload {record_id} says it is delta upload {count} since the last "
                f"full manifest; readers walk at most {MAX_DELTA_UPLOADS}: refusing it"
            )
        while current.delta:
            prev_id = current.prev_upload
            where = f"{self.name}: upload {current_id} -> ODF-Prev-Upload {prev_id}"
            if prev_id is None:
                raise ResolutionError(f"{where}: the first upload has a delta manifest")
            if len(records) > MAX_DELTA_UPLOADS:
                raise ResolutionError(
                    f"{self.name}: more than {MAX_DELTA_UPLOADS} delta manifests since the last "
                    "full one; refusing to walk them"
                )
            item = self._owned(prev_id, "upload record")
            prev = decode_record(item.tags, _read(item, _MAX_SMALL_ITEM, where), where)
            if prev.dataset_id != self.dataset_id or prev.head != current.prev_head:
                raise ResolutionError(
                    f"{where}: another dataset or head than ODF-Prev-Head; the chain is broken"
                )
            check_delta_link(current.tags_view, prev.tags_view, where)
            records.append(prev)
            current, current_id = prev, prev_id
        full = records[-1].manifest_id
        if any(r.full_manifest != full for r in records[:-1]):
            raise ResolutionError(
                f"{self.name}: a delta upload names another full manifest than {full}; "
                "the chain of uploads is broken"
            )
        records.reverse()
        return records

    def _summary_record_id(self) -> str | None:
        # Only a hint among the tips; bounded and confined like every file of bundle:DIR
        # (a publish.json that is a FIFO, /dev/zero or 3 GB costs one read of 1 MiB).
        try:
            doc = read_foreign_json_file(
                self.out_dir / "publish.json", max_bytes=_MAX_SUMMARY_SIZE, expect=dict
            )
        except (FormatError, NotFound):
            return None
        value = doc.get("recordId")
        return value if isinstance(value, str) else None

    def _owned(self, item_id: str, what: str) -> _Item:
        item = self._items.get(item_id)
        if item is None:
            raise NotFound(f"{self.name}: {what} item {item_id} is in none of the bundles")
        if item.owner != self.owner:
            raise ReplicaMismatch(
                f"{self.name}: {what} item {item_id} is signed by another wallet than the record"
            )
        return item

    def _item_for(self, kind: ObjectKind, mh: bytes) -> _Item:
        path = object_relpath(kind, mh)
        item_id = self._paths.get(path)
        if item_id is None:
            raise NotFound(f"{self.name}: {path} is not in the manifest")
        return self._owned(item_id, path)

    def head(self) -> bytes:
        """The record's signed ``ODF-Head``."""
        return multihash_from_str(self.record.head)

    def read_block(self, mh: bytes) -> bytes:
        """A block's bytes (the chain walk hashes them)."""
        return _read(self._item_for("block", mh), _MAX_SMALL_ITEM, f"{self.name}: block")

    def stream_object(self, kind: ObjectKind, mh: bytes, size: int | None) -> Iterator[bytes]:
        """A data file or checkpoint, in chunks, never more than its item holds."""
        item = self._item_for(kind, mh)
        left = item.data_size if size is None else min(item.data_size, size + 1)
        with open(item.path, "rb") as f:
            f.seek(item.data_offset)
            while left > 0:
                chunk = f.read(min(_CHUNK, left))
                if not chunk:
                    return
                left -= len(chunk)
                yield chunk


def open_bundle_dir(ref: str) -> BundleDirReplica:
    """The replica of ``bundle:DIR``."""
    arg = ref.partition(":")[2]
    if not arg:
        raise UsageError("bundle:DIR needs a directory, e.g. bundle:./out")
    out_dir = Path(arg).expanduser()
    if not out_dir.is_dir():
        raise NotFound(f"{ref}: no such directory")
    return BundleDirReplica(out_dir, ref)
