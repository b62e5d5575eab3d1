"""UnixFS import profiles: the parameters that decide every CID of a publish.

The two named profiles are Kubo's own (v0.43.1 ``config/profile.go``,
``applyUnixFSv02015`` / ``applyUnixFSv12025``; IPIP-499), so ``ipfs config profile
apply NAME`` followed by ``ipfs add -r`` gives the same CIDs as ``publish
--cid-profile NAME``:

==============================  ================  ================
Kubo ``Import.*`` key           unixfs-v0-2015    unixfs-v1-2025
==============================  ================  ================
CidVersion                      0                 1
UnixFSRawLeaves                 false             true
UnixFSChunker                   size-262144       size-1048576
HashFunction                    sha2-256          sha2-256
UnixFSFileMaxLinks              174               1024
UnixFSDirectoryMaxLinks         0 (no limit)      0 (no limit)
UnixFSHAMTDirectoryMaxFanout    256               256
UnixFSHAMTDirectorySizeThreshold  256KiB          256KiB
UnixFSHAMTDirectorySizeEstimation  links          block
UnixFSDAGLayout                 balanced          balanced
UnixFSPBNodeFieldOrder          links-first       links-first
==============================  ================  ================

Without a profile, a publish keeps what it always did (same bytes, same CIDs as
before profiles existed): Kubo's default parameters with ``--cid-version=1``, i.e.
CIDv1, raw leaves, 256 KiB chunks, 174 links per node, ``links`` estimation
(``ipfs add -r --cid-version=1``). ``--cid-version 0`` without a profile is
exactly ``unixfs-v0-2015``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import BinaryIO, Final, TypeVar

from odfweb3.errors import UsageError
from odfweb3_ipfs.formats.hamt import DEFAULT_FANOUT
from odfweb3_ipfs.publish.unixfs_import import (
    DEFAULT_CHUNK_SIZE,
    DEFAULT_MAX_LINKS,
    HAMT_SHARDING_THRESHOLD,
    BlockSink,
    DirNode,
    Entry,
    FileNode,
    ImportSource,
    SizeEstimation,
    build_directory,
    directory_shards,
    import_bytes,
    import_file,
    import_files,
    import_tree,
)

T = TypeVar("T")

__all__ = [
    "DEFAULT_PROFILE",
    "PROFILES",
    "UNIXFS_V0_2015",
    "UNIXFS_V1_2025",
    "CidProfile",
    "profile_for",
]


@dataclass(frozen=True, slots=True)
class CidProfile:
    """Every parameter of a UnixFS import (see the module docstring for Kubo's names).

    Attributes:
        name: Kubo's profile name, or None for odfweb3's default (CIDv1, Kubo defaults).
        cid_version: CID version of dag-pb nodes.
        raw_leaves: leaves are raw blocks (CIDv1) instead of dag-pb UnixFS File nodes.
        chunk_size: fixed chunk size in bytes.
        max_links: links per internal file node (balanced layout).
        hamt_fanout: width of a sharded directory node.
        hamt_threshold: a directory shards when its estimated size is above this.
        estimation: how that size is estimated (boxo ``SizeEstimationLinks``/``Block``).
    """

    name: str | None
    cid_version: int
    raw_leaves: bool
    chunk_size: int
    max_links: int
    hamt_fanout: int = DEFAULT_FANOUT
    hamt_threshold: int = HAMT_SHARDING_THRESHOLD
    estimation: SizeEstimation = "links"

    @property
    def state_tag(self) -> str | None:
        """What publish state records beside ``cidVersion`` so a later publish reuses
        per-object CIDs only when they were built the same way. None for the
        parameters that ``cidVersion`` alone identified before profiles existed."""
        if self in (DEFAULT_PROFILE, UNIXFS_V0_2015):
            return None
        return self.name

    @property
    def label(self) -> str:
        """The profile's name for messages."""
        return self.name or f"default (CIDv{self.cid_version}, Kubo defaults)"

    def import_file(self, stream: BinaryIO, sink: BlockSink | None) -> FileNode:
        """Import one file stream under this profile (:func:`.unixfs.import_file`)."""
        return import_file(
            stream,
            cid_version=self.cid_version,
            raw_leaves=self.raw_leaves,
            sink=sink,
            chunk_size=self.chunk_size,
            max_links=self.max_links,
        )

    def import_files(
        self,
        items: Iterable[T],
        open_source: Callable[[T], ImportSource],
        sink: BlockSink | None,
        size_of: Callable[[T], int | None] | None = None,
    ) -> Iterator[tuple[T, FileNode]]:
        """Import many files under this profile, hashing on workers
        (:func:`.unixfs_import.import_files`: same blocks, in the same order; ``size_of``
        lets one-chunk files be read on the workers too)."""
        return import_files(
            items,
            open_source,
            size_of=size_of,
            cid_version=self.cid_version,
            raw_leaves=self.raw_leaves,
            sink=sink,
            chunk_size=self.chunk_size,
            max_links=self.max_links,
        )

    def import_tree(
        self,
        path: str | os.PathLike[str],
        *,
        sink: BlockSink | None = None,
        on_entry: Callable[[str, Entry], object] | None = None,
        threads: int | None = None,
    ) -> DirNode:
        """Import a directory tree under this profile, as ``ipfs add -r --hidden`` with
        this profile's options does (:func:`.unixfs_import.import_tree`)."""
        return import_tree(
            path,
            cid_version=self.cid_version,
            raw_leaves=self.raw_leaves,
            sink=sink,
            chunk_size=self.chunk_size,
            max_links=self.max_links,
            hamt_threshold=self.hamt_threshold,
            estimation=self.estimation,
            fanout=self.hamt_fanout,
            on_entry=on_entry,
            threads=threads,
        )

    def import_bytes(self, data: bytes, sink: BlockSink | None) -> FileNode:
        """Import an in-memory file under this profile."""
        return import_bytes(
            data,
            cid_version=self.cid_version,
            raw_leaves=self.raw_leaves,
            sink=sink,
            chunk_size=self.chunk_size,
            max_links=self.max_links,
        )

    def directory_shards(self, links: Iterable[tuple[bytes, bytes, int]]) -> bool:
        """A directory of these ``(name, child CID bytes, child tsize)`` links is sharded
        under this profile (:func:`.unixfs_import.directory_shards`)."""
        return directory_shards(
            links, hamt_threshold=self.hamt_threshold, estimation=self.estimation
        )

    def build_directory(self, entries: Mapping[str, Entry], sink: BlockSink | None) -> DirNode:
        """One directory node (plain or HAMT) under this profile."""
        return build_directory(
            entries,
            cid_version=self.cid_version,
            sink=sink,
            hamt_threshold=self.hamt_threshold,
            estimation=self.estimation,
            fanout=self.hamt_fanout,
        )


DEFAULT_PROFILE: Final = CidProfile(
    name=None,
    cid_version=1,
    raw_leaves=True,
    chunk_size=DEFAULT_CHUNK_SIZE,
    max_links=DEFAULT_MAX_LINKS,
)
UNIXFS_V0_2015: Final = CidProfile(
    name="unixfs-v0-2015",
    cid_version=0,
    raw_leaves=False,
    chunk_size=262144,
    max_links=174,
    hamt_fanout=256,
    hamt_threshold=262144,
    estimation="links",
)
UNIXFS_V1_2025: Final = CidProfile(
    name="unixfs-v1-2025",
    cid_version=1,
    raw_leaves=True,
    chunk_size=1048576,
    max_links=1024,
    hamt_fanout=256,
    hamt_threshold=262144,
    estimation="block",
)
PROFILES: Final[dict[str, CidProfile]] = {
    "unixfs-v0-2015": UNIXFS_V0_2015,
    "legacy-cid-v0": UNIXFS_V0_2015,  # Kubo's alias
    "unixfs-v1-2025": UNIXFS_V1_2025,
}


def profile_for(name: str | None, cid_version: int | None = None) -> CidProfile:
    """The profile a publish uses.

    Args:
        name: a Kubo profile name (``--cid-profile`` / config ``ipfs.cid_profile``), or None.
        cid_version: ``--cid-version`` / config ``ipfs.cid_version``, or None. Without a
            name: 0 is ``unixfs-v0-2015``, 1 (default) odfweb3's default. With a name it
            must agree with the profile's version.

    Raises:
        UsageError: an unknown name, or a CID version the profile contradicts.
    """
    if name is None:
        return UNIXFS_V0_2015 if cid_version == 0 else DEFAULT_PROFILE
    profile = PROFILES.get(name)
    if profile is None:
        raise UsageError(f"unknown CID profile {name!r}: use one of {', '.join(sorted(PROFILES))}")
    if cid_version is not None and cid_version != profile.cid_version:
        raise UsageError(
            f"CID profile {name} makes CIDv{profile.cid_version}, not CIDv{cid_version}: "
            "drop --cid-version (or ipfs.cid_version) or pick the other profile"
        )
    return profile
