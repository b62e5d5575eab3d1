"""Reading UnixFS DAGs from untrusted blocks: walk, resolve paths, read files.

Every block comes from a ``get(cid) -> bytes`` function and is checked against
its CID before it is parsed (verify on read), so a lying node or a corrupt CAR
can make a read fail but never return wrong bytes. Directories may be plain or
HAMT-sharded (link names carry a 2-hex-digit bucket prefix; entries are found by
listing the shards, so no hash function is needed to read).

Budgets: a DAG can describe far more than it holds (one 1 MiB leaf
linked a million times; empty leaves nested 4,000 deep three times; a HAMT whose shards
all link to one sub-shard). Every walk counts the blocks it visits and the bytes it
produces and stops at a budget derived from what the object may be:

- a file: at most ``max_size`` bytes (the size the naming ODF block records, the ODF
  block limit, or 256 bytes for ``refs/head``) and at most :func:`file_block_budget`
  blocks for that size (two blocks per KiB of content, plus :data:`FILE_BLOCK_SLACK`);
  the root's UnixFS ``filesize`` is checked against ``max_size`` before any leaf is read,
  and a file node is decoded once per walk however often it is linked. Repeated leaves
  are legitimate in a file (a run of zeros is one chunk linked many times), so repeats
  are allowed but counted;
- a directory: at most :data:`MAX_DIR_ENTRIES` entries; a HAMT sub-shard linked twice,
  an entry name found twice, or a shard deeper than its hash allows is refused (a
  canonical HAMT never has any of these);
- :func:`iter_dag`: each distinct block once, at most ``max_blocks``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Final

from odfweb3.errors import FormatError, NotFound
from odfweb3.odf.digest_map import DigestMap
from odfweb3_ipfs.formats.cid import CODEC_DAG_PB, CODEC_RAW, Cid
from odfweb3_ipfs.formats.dagpb import PBNode, decode_pbnode, pb_links
from odfweb3_ipfs.formats.unixfs_data import DataType, UnixFSData, decode_unixfs_data

__all__ = [
    "FILE_BLOCK_SLACK",
    "MAX_DIR_ENTRIES",
    "MAX_FILE_BLOCKS",
    "BlockGetter",
    "count_dag",
    "file_block_budget",
    "iter_dag",
    "iter_directory",
    "iter_directory_raw",
    "list_directory",
    "read_file",
    "resolve_path",
]

BlockGetter = Callable[[Cid], bytes]
_MAX_DEPTH: Final = 64
#: Blocks a file DAG may have beyond two per KiB of content (root, interior nodes).
FILE_BLOCK_SLACK: Final = 64
#: Blocks a file of unknown size may have (4 Mi: 1 TiB in Kubo's 256 KiB chunks).
MAX_FILE_BLOCKS: Final = 1 << 22
#: Entries a directory listing may hold (ODF folders: one per block, file or checkpoint;
#: datasets of 100,000 blocks are expected). About 300 bytes each once listed: 80 MB at most per
#: folder, so the three folders of a replica stay within the 256 MB a read may take.
MAX_DIR_ENTRIES: Final = 1 << 18
_HOSTILE: Final = "; the DAG is corrupt or hostile: use another replica"


def file_block_budget(max_size: int | None) -> int:
    """Blocks a UnixFS file of at most ``max_size`` bytes may take: two per KiB (a chunker
    far finer than any real one: Kubo's default is 256 KiB) plus :data:`FILE_BLOCK_SLACK`."""
    if max_size is None:
        return MAX_FILE_BLOCKS
    return min(MAX_FILE_BLOCKS, FILE_BLOCK_SLACK + 2 * (max_size // 1024 + 1))


def _verified(get: BlockGetter, cid: Cid) -> bytes:
    data = get(cid)
    cid.verify(data, what="block")
    return data


def _node(get: BlockGetter, cid: Cid) -> PBNode:
    if cid.codec != CODEC_DAG_PB:
        raise FormatError(f"{cid}: expected a dag-pb node, found codec 0x{cid.codec:x}")
    return decode_pbnode(_verified(get, cid), where=cid)  # formatted only for an error


def _node_links(get: BlockGetter, cid: Cid) -> tuple[list[tuple[bytes, bytes]], bytes | None]:
    """:func:`_node` as :func:`.pb_links` reads it: ``(CID bytes, name)`` pairs and Data."""
    if cid.codec != CODEC_DAG_PB:
        raise FormatError(f"{cid}: expected a dag-pb node, found codec 0x{cid.codec:x}")
    return pb_links(_verified(get, cid), where=cid)


def iter_dag(
    root: Cid,
    get: BlockGetter,
    *,
    max_blocks: int | None = None,
    has: Callable[[Cid], bool] | None = None,
) -> Iterator[Cid]:
    """Yield every CID reachable from ``root`` once, verifying each block (completeness check).

    ``has``: a raw block for which it answers True is counted without being read: the
    caller verified it already (a CAR index checks every block against its CID as it is
    indexed, and every later read checks it again); a raw block links to nothing, so the
    walk needs only that it is there. A dag-pb node is always read and verified (its links
    are walked).

    Raises:
        NotFound: a block is missing (``get`` raises it).
        HashMismatch: a block does not match its CID.
        FormatError: more than ``max_blocks`` distinct blocks.
    """
    held = None if has is None else (lambda raw: has(Cid.from_bytes(raw)))
    for raw in _walk_dag(root, get, max_blocks, held):
        yield Cid.from_bytes(raw)


def count_dag(
    root: Cid, get: BlockGetter, *, max_blocks: int | None = None, has: Callable[[bytes], bool]
) -> int:
    """How many distinct blocks :func:`iter_dag` yields (the same checks and errors), ``has``
    asked of a raw block's CID bytes: a CAR directory's check, which walks every link of its
    DAG (40,000 at 10,000 dataset blocks) and needs no :class:`Cid` for its raw leaves."""
    return sum(1 for _ in _walk_dag(root, get, max_blocks, has))


_V1_RAW_SHA256: Final = b"\x01\x55\x12\x20"


def _walk_dag(
    root: Cid, get: BlockGetter, max_blocks: int | None, has: Callable[[bytes], bool] | None
) -> Iterator[bytes]:
    """:func:`iter_dag` as CID bytes (each link's CID checked by :func:`.pb_links`)."""
    # The CIDs seen, in a DigestMap (about 35 bytes a CID with a 32-byte digest, where a
    # set of CID bytes is about 110): a car:DIR of 100,000 dataset blocks has 400,000.
    seen = DigestMap()
    stack = [root.raw]
    while stack:
        raw = stack.pop()
        if not seen.put(raw):
            continue
        if max_blocks is not None and len(seen) > max_blocks:
            raise FormatError(f"/ipfs/{root}: more than the {max_blocks} blocks expected{_HOSTILE}")
        if len(raw) == 36 and raw[:4] == _V1_RAW_SHA256:  # a raw leaf, as nearly all are
            if has is None or not has(raw):
                _verified(get, Cid.from_bytes(raw))
        else:
            cid = Cid.from_bytes(raw)
            if cid.codec == CODEC_RAW:
                if has is None or not has(raw):
                    _verified(get, cid)
            else:
                links, _ = _node_links(get, cid)
                stack.extend(link for link, _ in links)
        yield raw


def list_directory(
    cid: Cid, get: BlockGetter, *, max_entries: int = MAX_DIR_ENTRIES
) -> dict[str, Cid]:
    """Entries of a UnixFS directory (plain or HAMT), name -> CID.

    Raises:
        FormatError: not a directory; more than ``max_entries`` entries; two entries of one
            name; a HAMT that a canonical builder cannot produce (a sub-shard linked twice,
            deeper than its hash bits allow, a prefix of the wrong width).
    """
    out: dict[str, Cid] = {}
    for name, entry in iter_directory(cid, get, max_entries=max_entries):
        if name in out:
            raise FormatError(f"{cid}: a directory with two entries named {name!r}{_HOSTILE}")
        out[name] = entry
    return out


def iter_directory(
    cid: Cid, get: BlockGetter, *, max_entries: int = MAX_DIR_ENTRIES
) -> Iterator[tuple[str, Cid]]:
    """The entries of a UnixFS directory (plain or HAMT), ``(name, CID)``, as its nodes are
    read: nothing but the shards still to expand is held (a listing of 100,000 entries as a
    ``dict`` of names and ``Cid`` objects was some 40 MB). A name that comes twice is
    yielded twice: the caller refuses it (:func:`list_directory` does).

    Raises:
        FormatError: as :func:`list_directory`, but for a repeated name.
    """
    for name, raw in iter_directory_raw(cid, get, max_entries=max_entries):
        yield name, Cid.from_bytes(raw)


def iter_directory_raw(
    cid: Cid, get: BlockGetter, *, max_entries: int = MAX_DIR_ENTRIES
) -> Iterator[tuple[str, bytes]]:
    """:func:`iter_directory`, each entry's CID as its bytes (checked as a CID by
    :func:`.pb_links`): a layout folder's listing keeps the bytes, not a :class:`Cid`."""
    links, data = _node_links(get, cid)
    meta = decode_unixfs_data(data or b"", where=str(cid))
    if meta.type == DataType.DIRECTORY:
        if len(links) > max_entries:
            raise FormatError(
                f"{cid}: more than the {max_entries} directory entries allowed{_HOSTILE}"
            )
        for raw, name in links:
            yield name.decode("utf-8", "surrogateescape"), raw
        return
    if meta.type == DataType.HAMT_SHARD:
        yield from _iter_hamt(cid, links, meta.fanout, get, max_entries)
        return
    raise FormatError(f"{cid}: not a directory (UnixFS type {meta.type})")


def _iter_hamt(
    root: Cid,
    links: list[tuple[bytes, bytes]],
    fanout: int | None,
    get: BlockGetter,
    max_entries: int,
) -> Iterator[tuple[str, bytes]]:
    """A HAMT's entries, each shard expanded at most once (boxo ``hamt`` layout)."""
    if fanout is None or fanout < 2 or fanout & (fanout - 1) or fanout > 1024:
        raise FormatError(f"{root}: HAMT fanout {fanout} is not a power of two up to 1024")
    width = len(f"{fanout - 1:X}")
    max_depth = min(_MAX_DEPTH, -(-64 // (fanout.bit_length() - 1)))  # 64 hash bits
    entries = 0
    seen = {root.raw}
    stack: list[tuple[bytes, list[tuple[bytes, bytes]], int]] = [(root.raw, links, 0)]
    while stack:
        at, shard, depth = stack.pop()
        for raw, name_bytes in shard:
            name = name_bytes.decode("utf-8", "surrogateescape")
            if len(name) < width:
                raise FormatError(
                    f"{Cid.from_bytes(at)}: HAMT link name {name!r} lacks its bucket prefix"
                )
            if len(name) == width:  # a sub-shard
                if raw in seen:
                    raise FormatError(
                        f"{root}: HAMT sub-shard {Cid.from_bytes(raw)} linked twice{_HOSTILE}"
                    )
                if depth + 1 >= max_depth:
                    raise FormatError(f"{root}: HAMT deeper than its {max_depth} levels{_HOSTILE}")
                seen.add(raw)
                if len(seen) > max_entries:
                    raise FormatError(
                        f"{root}: more HAMT shards than the entries allowed{_HOSTILE}"
                    )
                child = Cid.from_bytes(raw)
                child_links, child_data = _node_links(get, child)
                meta = decode_unixfs_data(child_data or b"", where=str(child))
                if meta.type != DataType.HAMT_SHARD or meta.fanout != fanout:
                    raise FormatError(f"{child}: a HAMT sub-shard that is not one")
                stack.append((raw, child_links, depth + 1))
                continue
            entries += 1
            if entries > max_entries:
                raise FormatError(
                    f"{root}: more than the {max_entries} directory entries allowed{_HOSTILE}"
                )
            yield name[width:], raw


def resolve_path(root: Cid, path: str, get: BlockGetter) -> Cid:
    """The CID at ``path`` (``a/b/c``) below ``root``.

    Raises:
        NotFound: a path component does not exist.
    """
    cid = root
    for part in [p for p in path.split("/") if p]:
        if part in (".", ".."):
            raise FormatError(f"path {path!r}: '.' and '..' are not allowed")
        entries = list_directory(cid, get)
        if part not in entries:
            raise NotFound(f"/ipfs/{root}/{path}: no entry {part!r}")
        cid = entries[part]
    return cid


def read_file(
    cid: Cid, get: BlockGetter, *, max_size: int | None = None, max_blocks: int | None = None
) -> Iterator[bytes]:
    """Stream the content of a UnixFS file (raw leaves or dag-pb), verified block by block.

    Args:
        max_size: refuse to yield more than this many bytes in total (and a root whose
            UnixFS ``filesize`` says more).
        max_blocks: refuse to visit more blocks (default :func:`file_block_budget`).

    Raises:
        FormatError: over a budget, or not a file.
    """
    budget = file_block_budget(max_size) if max_blocks is None else max_blocks
    if cid.codec == CODEC_RAW and budget >= 1:
        # One raw leaf (every object of a publish up to its chunk size): the walk below
        # without its stack and node table, the same checks (30,000 reads in a pull).
        chunk = _verified(get, cid)
        if max_size is not None and len(chunk) > max_size:
            raise FormatError(f"/ipfs/{cid}: larger than the {max_size} bytes expected{_HOSTILE}")
        if chunk:
            yield chunk
        return
    total = 0
    visited = 0
    nodes: dict[bytes, tuple[PBNode, UnixFSData]] = {}  # file nodes decoded once per walk
    stack = [cid]
    while stack:
        current = stack.pop()
        visited += 1
        if visited > budget:
            raise FormatError(
                f"/ipfs/{cid}: more than the {budget} blocks a file of "
                f"{'unknown size' if max_size is None else f'{max_size} bytes'} may have"
                f"{_HOSTILE}"
            )
        if current.codec == CODEC_RAW:
            chunk = _verified(get, current)
        else:
            cached = nodes.get(current.raw)
            if cached is None:
                pb = _node(get, current)
                cached = (pb, decode_unixfs_data(pb.data or b"", where=str(current)))
                if pb.links:
                    nodes[current.raw] = cached
            node, meta = cached
            if meta.type not in (DataType.FILE, DataType.RAW):
                raise FormatError(f"{current}: not a file (UnixFS type {meta.type})")
            if (
                current is cid
                and max_size is not None
                and meta.filesize is not None
                and meta.filesize > max_size
            ):
                raise FormatError(
                    f"/ipfs/{cid}: says it holds {meta.filesize} bytes, more than the "
                    f"{max_size} expected{_HOSTILE}"
                )
            if node.links:
                stack.extend(link.cid for link in reversed(node.links))
                chunk = meta.data or b""
                if chunk:
                    raise FormatError(f"{current}: file node with both data and links")
                continue
            chunk = meta.data or b""
        total += len(chunk)
        if max_size is not None and total > max_size:
            raise FormatError(f"/ipfs/{cid}: larger than the {max_size} bytes expected{_HOSTILE}")
        if chunk:
            yield chunk
