"""Blocks of whole DAGs streamed from an untrusted gateway, spooled to one local file.

A pull asks a trustless gateway for a folder of the layout as one CAR (``dag-scope=all``)
instead of one request per block: the chain walk, which must read block after block (each
names the one before it), then reads from disk. What is kept is bounded and checked:

- every block matches its own CID (the CAR reader hashes it) and is *wanted*: the DAG's root,
  or a block a kept dag-pb node links to. A gateway that sends anything else, or sends a child
  before its parent (the order asked is depth-first, IPIP-412 ``order=dfs``), ends the fill
  there; only raw and dag-pb blocks are kept;
- at most ``max_bytes`` bytes and ``max_blocks`` blocks a fill (the stream is cut there);
- a failed stream (dropped, malformed, a block that is not its CID's) ends the fill: what was
  kept stays, and the blocks it lacks are read one by one as before.

Every read of a kept block is verified again against the CID asked for (the readers of
:mod:`odfweb3_ipfs.formats.unixfs_reader` do so for any block source): the spool file is a
cache, never trusted. The file is created with ``O_EXCL``, mode 0600, and removed by
:meth:`DagSpool.close`.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections.abc import Generator
from pathlib import Path
from typing import Final

from odfweb3.errors import FormatError, NotFound, OdfWeb3Error
from odfweb3_ipfs.formats.cid import CODEC_DAG_PB, CODEC_RAW, Cid
from odfweb3_ipfs.formats.dagpb import decode_pbnode

__all__ = ["MAX_SPOOL_BLOCKS", "DagSpool"]

#: Blocks one fill may keep (the index holds a small tuple per block).
MAX_SPOOL_BLOCKS: Final = 1 << 22


class DagSpool:
    """Verified blocks kept in ``path`` (see the module docstring); safe to read from several
    threads (positioned reads)."""

    def __init__(self, path: Path) -> None:
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        self._path = path
        self._fd: int | None = os.open(path, flags, 0o600)
        self._closer = weakref.finalize(self, _close_quietly, self._fd)
        self._where: dict[bytes, tuple[int, int]] = {}
        self._end = 0
        self._lock = threading.Lock()

    @property
    def blocks(self) -> int:
        """How many blocks are kept."""
        return len(self._where)

    @property
    def size(self) -> int:
        """How many bytes are kept."""
        return self._end

    def fill(
        self,
        root: Cid,
        sections: Generator[tuple[Cid, bytes], None, None],
        *,
        max_bytes: int,
        max_blocks: int = MAX_SPOOL_BLOCKS,
    ) -> int:
        """Keep the blocks of ``sections`` (CID-checked by the CAR reader) that belong to the
        DAG under ``root``, until the first that does not, a bound, or a failure; close
        ``sections`` (and the answer it reads). Returns how many blocks were kept."""
        wanted = {root.raw}
        kept = 0
        spent = 0
        try:
            for cid, data in sections:
                raw = cid.raw
                if raw in self._where:
                    continue  # already kept (another folder, or a duplicate)
                if raw not in wanted or cid.codec not in (CODEC_RAW, CODEC_DAG_PB):
                    break  # not the DAG's, or out of order: the rest is read block by block
                if kept >= max_blocks or spent + len(data) > max_bytes:
                    break
                if cid.codec == CODEC_DAG_PB:
                    node = decode_pbnode(data, where=cid)
                    wanted.update(link.cid.raw for link in node.links)
                wanted.discard(raw)
                self._keep(raw, data)
                kept += 1
                spent += len(data)
        except OdfWeb3Error:
            pass  # what was kept is verified; the rest is read block by block
        finally:
            with contextlib.suppress(OdfWeb3Error):
                sections.close()  # ends the HTTP answer it reads
        return kept

    def _keep(self, raw: bytes, data: bytes) -> None:
        with self._lock:
            if self._fd is None:
                raise FormatError(f"{self._path}: the spool is closed")
            offset = self._end
            os.pwrite(self._fd, data, offset)
            self._end += len(data)
            self._where[raw] = (offset, len(data))

    def __contains__(self, cid: object) -> bool:
        return isinstance(cid, Cid) and cid.raw in self._where

    def get(self, cid: Cid) -> bytes:
        """A kept block's bytes (the caller verifies them against ``cid``)."""
        try:
            offset, length = self._where[cid.raw]
        except KeyError:
            raise NotFound(f"block {cid} is not in the spool") from None
        fd = self._fd
        if fd is None:
            raise NotFound(f"block {cid}: the spool is closed")
        data = os.pread(fd, length, offset)
        if len(data) != length:
            raise FormatError(f"{self._path}: shorter than written (block {cid})")
        return data

    def close(self) -> None:
        """Forget every block and remove the file."""
        with self._lock:
            fd, self._fd = self._fd, None
            self._where = {}
        if fd is not None:
            self._closer()  # closes the file once, here or when the spool is collected
            with contextlib.suppress(FileNotFoundError):
                self._path.unlink()


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)
