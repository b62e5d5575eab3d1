"""Reading UnixFS DAGs from untrusted blocks: walk, resolve paths, read files.

Every block comes from a ``get(cid) -> bytes`` function and is checked against
its CID before it is parsed (verify on read), so a lying node or a corrupt CAR
can make a read fail but never return wrong bytes. Directories may be plain or
HAMT-sharded (link names carry a 2-hex-digit bucket prefix; entries are found by
listing the shards, so no hash function is needed to read).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Final

from odfweb3.errors import FormatError, NotFound

from .cid import CODEC_DAG_PB, CODEC_RAW, Cid
from .dagpb import PBNode, decode_pbnode
from .unixfs_data import DataType, decode_unixfs_data

__all__ = ["BlockGetter", "iter_dag", "list_directory", "read_file", "resolve_path"]

BlockGetter = Callable[[Cid], bytes]
_MAX_DEPTH: Final = 64


def _verified(get: BlockGetter, cid: Cid) -> bytes:
    data = get(cid)
    cid.verify(data, where=f"block {cid}")
    return data


def _node(get: BlockGetter, cid: Cid) -> PBNode:
    if cid.codec != CODEC_DAG_PB:
        raise FormatError(f"{cid}: expected a dag-pb node, found codec 0x{cid.codec:x}")
    return decode_pbnode(_verified(get, cid), where=str(cid))


def iter_dag(root: Cid, get: BlockGetter) -> Iterator[Cid]:
    """Yield every CID reachable from ``root`` once, verifying each block (completeness check).

    Raises:
        NotFound: a block is missing (``get`` raises it).
        HashMismatch: a block does not match its CID.
    """
    seen: set[bytes] = set()
    stack = [root]
    while stack:
        cid = stack.pop()
        if cid.raw in seen:
            continue
        seen.add(cid.raw)
        if cid.codec == CODEC_RAW:
            _verified(get, cid)
        else:
            node = _node(get, cid)
            stack.extend(link.cid for link in node.links)
        yield cid


def list_directory(cid: Cid, get: BlockGetter, _depth: int = 0) -> dict[str, Cid]:
    """Entries of a UnixFS directory (plain or HAMT), name -> CID."""
    if _depth > _MAX_DEPTH:
        raise FormatError(f"{cid}: HAMT deeper than {_MAX_DEPTH} levels")
    node = _node(get, cid)
    meta = decode_unixfs_data(node.data or b"", where=str(cid))
    if meta.type == DataType.DIRECTORY:
        return {link.name.decode("utf-8", "surrogateescape"): link.cid for link in node.links}
    if meta.type == DataType.HAMT_SHARD:
        out: dict[str, Cid] = {}
        for link in node.links:
            name = link.name.decode("utf-8", "surrogateescape")
            if len(name) < 2:
                raise FormatError(f"{cid}: HAMT link name {name!r} lacks its bucket prefix")
            child = link.cid
            if len(name) == 2:  # a sub-shard
                out.update(list_directory(child, get, _depth + 1))
            else:
                out[name[2:]] = child
        return out
    raise FormatError(f"{cid}: not a directory (UnixFS type {meta.type})")


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


def read_file(cid: Cid, get: BlockGetter, *, max_size: int | None = None) -> Iterator[bytes]:
    """Stream the content of a UnixFS file (raw leaves or dag-pb), verified block by block.

    Args:
        max_size: refuse to yield more than this many bytes in total.
    """
    total = 0
    stack = [cid]
    while stack:
        current = stack.pop()
        if current.codec == CODEC_RAW:
            chunk = _verified(get, current)
        else:
            node = _node(get, current)
            meta = decode_unixfs_data(node.data or b"", where=str(current))
            if meta.type not in (DataType.FILE, DataType.RAW):
                raise FormatError(f"{current}: not a file (UnixFS type {meta.type})")
            if node.links:
                stack.extend(link.cid for link in reversed(node.links))
                chunk = meta.data or b""
                if chunk:
                    raise FormatError(f"{current}: file node with both data and links")
                continue
            chunk = meta.data or b""
        total += len(chunk)
        if max_size is not None and total > max_size:
            raise FormatError(f"/ipfs/{cid}: larger than the {max_size} bytes expected")
        if chunk:
            yield chunk
