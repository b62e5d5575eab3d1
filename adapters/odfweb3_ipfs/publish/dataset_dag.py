"""An ODF dataset as a UnixFS directory, built incrementally (docs/design.md, "IPFS mapping").

The dataset maps 1:1 onto UnixFS with exactly the ODF names::

    <root>/
      blocks/<f1620…>        one file per metadata block
      checkpoints/<f1620…>
      data/<f1620…>
      refs/head              the head hash as text (no newline, as odfweb3 writes it)

so ``GET /ipfs/<root>/refs/head`` works with no ODF knowledge, and the root CID
equals ``ipfs add -r --cid-version=1`` of a directory holding exactly that layout
(or ``ipfs add -r`` under the Kubo profile given, see :mod:`.cid_profile`).
All four directories are always present (empty when the dataset has no data).

Incremental: the per-object ``(cid, tsize)`` of a previous publish are reused
without reading the files again; only new files are imported, and only the
directory nodes are rebuilt (cheap: no file I/O, HAMT shards included). Blocks
the previous publish already sent (``previous_dir_blocks``) are not emitted again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Final, cast

from odfweb3.crypto.sealer import Sealer
from odfweb3.odf.chain import DatasetObject
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.source import open_for_publish
from odfweb3.publish.state import PublishState
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.publish.cid_profile import CidProfile, profile_for
from odfweb3_ipfs.publish.unixfs_import import (
    BlockSink,
    DirNode,
    Entry,
    FileNode,
)

__all__ = ["DatasetDag", "ObjectLink", "build_dataset_dag", "reusable_links"]

_TOP_DIRS: Final = ("blocks", "checkpoints", "data")


@dataclass(frozen=True)
class ObjectLink:
    """Where one object is in the DAG: its file root CID, DAG size and file size."""

    cid: Cid
    tsize: int
    size: int

    def to_json(self) -> dict[str, Any]:
        """State form."""
        return {"cid": self.cid.encode(), "tsize": self.tsize, "size": self.size}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ObjectLink:
        """Parse the state form."""
        return cls(Cid.decode(str(data["cid"])), int(data["tsize"]), int(data["size"]))


@dataclass(frozen=True)
class DatasetDag:
    """The result: root, per-object links, and the directory blocks' CIDs."""

    root: DirNode
    objects: dict[str, ObjectLink]
    dir_blocks: frozenset[bytes]
    new_blocks: int = 0
    new_bytes: int = 0
    dirs: dict[str, DirNode] = field(default_factory=dict)
    reused: frozenset[str] = frozenset()

    def objects_json(self, previous: Mapping[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Per-object state entries: the previous publish's entries for reused objects
        (no re-encoding of thousands of CIDs), fresh ones for new objects."""
        return {
            path: previous[path]  # shared, never mutated: no copy per object (issue 19)
            if path in self.reused and path in previous
            else link.to_json()
            for path, link in self.objects.items()
        }


def reusable_links(
    state: PublishState | None,
    has: frozenset[str],
    *,
    cid_version: int,
    encrypted: bool,
    profile: CidProfile | None = None,
) -> tuple[dict[str, ObjectLink], frozenset[bytes]]:
    """What an incremental build may reuse from the previous publish's state.

    Returns the links of objects the target still holds and the directory blocks sent
    before; nothing when the CID version, the CID profile (state ``cidProfile``, absent
    for the parameters ``cidVersion`` alone names) or the encryption changed (plaintext
    and ciphertext files never mix in one root).
    """
    if state is None:
        return {}, frozenset()
    previous = {
        path: ObjectLink.from_json(link) for path, link in state.objects.items() if path in has
    }
    if state.extra.get("cidVersion", 1) != cid_version:
        previous = {}
    tag = (profile or profile_for(None, cid_version)).state_tag
    if state.extra.get("cidProfile") != tag:
        previous = {}
    if bool(state.extra.get("encrypted")) != encrypted:
        previous = {}
    dirs = frozenset(bytes.fromhex(h) for h in state.extra.get("dirBlocks", []))
    return previous, dirs


def build_dataset_dag(
    reader: DatasetReader,
    head: bytes,
    objects: Iterable[DatasetObject],
    previous: Mapping[str, ObjectLink],
    *,
    cid_version: int = 1,
    sink: BlockSink | None = None,
    previous_dir_blocks: frozenset[bytes] = frozenset(),
    progress: Callable[[int], None] | None = None,
    sealer: Sealer | None = None,
    profile: CidProfile | None = None,
) -> DatasetDag:
    """Build the dataset's UnixFS DAG, importing only objects not in ``previous``.

    Args:
        reader: the local dataset (new objects are read through verified streams).
        head: the head being published (written as ``refs/head``).
        objects: every object of the dataset at ``head``.
        previous: object path -> link from an earlier publish (their files are not read).
        cid_version: 1 (raw leaves, default) or 0.
        sink: receives every *new* block (file blocks of new objects, directory blocks
            not in ``previous_dir_blocks``).
        previous_dir_blocks: raw CIDs of directory blocks sent before.
        progress: called with bytes of file content read.
        sealer: encrypt every new object and ``refs/head`` (docs/design.md, "Encryption"); paths
            stay the same, file CIDs are those of the ciphertext. ``previous`` must then
            come from an encrypted publish too.
        profile: the UnixFS import parameters (default: ``cid_version``'s, see
            :func:`.cid_profile.profile_for`); ``previous`` must come from the same profile.

    Raises:
        IntegrityError / HashMismatch: a new object's size or hash is wrong.
    """
    prof = profile or profile_for(None, cid_version)
    new_blocks = 0
    new_bytes = 0

    def file_sink(cid: Cid, block: bytes) -> None:
        nonlocal new_blocks, new_bytes
        new_blocks += 1
        new_bytes += len(block)
        if sink is not None:
            sink(cid, block)

    dir_cids: set[bytes] = set()

    def dir_sink(cid: Cid, block: bytes) -> None:
        nonlocal new_blocks, new_bytes
        raw = cid.raw
        dir_cids.add(raw)
        if raw in previous_dir_blocks:
            return
        new_blocks += 1
        new_bytes += len(block)
        if sink is not None:
            sink(cid, block)

    links: dict[str, ObjectLink] = {}
    reused: set[str] = set()
    folders: dict[str, dict[str, Entry]] = {name: {} for name in _TOP_DIRS}
    for obj in objects:
        path = obj.path
        link = previous.get(path)
        if link is not None:
            reused.add(path)
        else:
            with open_for_publish(reader, obj, sealer) as stream:
                node: FileNode = prof.import_file(cast(BinaryIO, stream), file_sink)
                stream.finish()
            if progress is not None:
                progress(node.size)
            link = ObjectLink(node.cid, node.tsize, node.size)
        links[path] = link
        folder, name = path.split("/", 1)
        folders[folder][name] = Entry(link.cid, link.tsize)

    head_text = multihash_to_str(head).encode("ascii")
    if sealer is not None:
        head_text = sealer.seal_bytes(head_text, "refs/head")
    head_file = prof.import_bytes(head_text, file_sink)
    dirs: dict[str, DirNode] = {}
    for name in _TOP_DIRS:
        dirs[name] = prof.build_directory(folders[name], dir_sink)
    dirs["refs"] = prof.build_directory({"head": Entry(head_file.cid, head_file.tsize)}, dir_sink)
    root = prof.build_directory({name: Entry(d.cid, d.tsize) for name, d in dirs.items()}, dir_sink)
    return DatasetDag(
        root, links, frozenset(dir_cids), new_blocks, new_bytes, dirs, frozenset(reused)
    )
