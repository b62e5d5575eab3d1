"""UnixFS importer: Kubo's published CIDs, DAG shape, round trips, bounded memory.

Vector sources (ipfs/kubo):
- ``test/cli/add_test.go`` (TestAdd): "hello world" CIDs; 44544/44800 KiB files
  (seed "v0-seed", legacy-cid-v0 = Kubo default); 262144 KiB with --max-file-links
  1024 (seed "hello world"); test-cid-v1 profile 174/175 MiB files (seed "v1-seed",
  1 MiB chunks, 174 links, raw leaves).
- ``test/cli/cid_profiles_test.go`` (TestCIDProfiles): unixfs-v0-2015 and
  unixfs-v1-2025 file-at/over-max-links and dir-basic/dir-hamt threshold vectors.
Well-known CIDs of the empty file and empty directory are what every Kubo prints.
"""

from __future__ import annotations

import io
import os
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from odfweb3.errors import FormatError
from odfweb3_ipfs.formats.cid import CODEC_DAG_PB, CODEC_RAW, Cid
from odfweb3_ipfs.formats.dagpb import decode_pbnode
from odfweb3_ipfs.formats.hamt import hamt_hash
from odfweb3_ipfs.formats.unixfs_data import DataType, decode_unixfs_data
from odfweb3_ipfs.publish.unixfs_import import (
    DirNode,
    Entry,
    FileNode,
    build_directory,
    import_bytes,
    import_file,
    import_tree,
)

from .kubo_testdata import DeterministicStream, deterministic_names

KiB = 1024
MiB = 1024 * 1024


class Blocks(dict[Cid, bytes]):
    """A block sink that keeps everything (for inspecting small DAGs)."""

    def __call__(self, cid: Cid, data: bytes) -> None:
        self[cid] = data


def read_file_dag(blocks: dict[Cid, bytes], cid: Cid) -> Iterator[bytes]:
    """Reassemble a UnixFS file, checking filesize/blocksizes on the way."""
    data = blocks[cid]
    assert Cid.of_block(data, version=cid.version, codec=cid.codec) == cid
    if cid.codec == CODEC_RAW:
        yield data
        return
    node = decode_pbnode(data)
    assert node.data is not None
    fs = decode_unixfs_data(node.data)
    assert fs.type == DataType.FILE
    if not node.links:
        assert fs.filesize == len(fs.data or b"")
        yield fs.data or b""
        return
    assert len(fs.blocksizes) == len(node.links)
    assert fs.filesize == sum(fs.blocksizes)
    for link, size in zip(node.links, fs.blocksizes, strict=True):
        assert link.name == b""
        got = b"".join(read_file_dag(blocks, link.cid))
        assert len(got) == size
        yield got


def dag_size(blocks: dict[Cid, bytes], cid: Cid) -> int:
    """Sum of the sizes of all blocks under ``cid`` (what Tsize must equal)."""
    data = blocks[cid]
    if cid.codec == CODEC_RAW:
        return len(data)
    return len(data) + sum(dag_size(blocks, link.cid) for link in decode_pbnode(data).links)


# --- small files and well-known CIDs -------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"cid_version": 0}, "Qmf412jQZiuVUtdgnB36FXFX7xg5V6KEbSJ4dpQuhkLyfD"),
        ({"cid_version": 1}, "bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e"),
        (
            {"cid_version": 1, "raw_leaves": False},
            "bafybeihykld7uyxzogax6vgyvag42y7464eywpf55gxi5qpoisibh3c5wa",
        ),
    ],
)
def test_hello_world_matches_kubo_add_test(kwargs: dict[str, object], expected: str) -> None:
    node = import_bytes(b"hello world", **kwargs)  # type: ignore[arg-type]
    assert str(node.cid) == expected
    assert node.size == 11


def test_single_chunk_raw_leaf_is_the_file() -> None:
    blocks = Blocks()
    node = import_bytes(b"hello world", sink=blocks)
    assert list(blocks) == [node.cid]
    assert node.cid.codec == CODEC_RAW and node.tsize == 11
    assert blocks[node.cid] == b"hello world"


def test_empty_file_and_empty_directory_well_known_cids() -> None:
    assert str(import_bytes(b"").cid) == (
        "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku"
    )
    assert str(import_bytes(b"", cid_version=0).cid) == (
        "QmbFMke1KXqnYyBBWxB74N4c5SBnJMVAiMNRcGu6x1AwQH"
    )
    assert str(build_directory({}, cid_version=0).cid) == (
        "QmUNLLsPACCz1vLxQVkXqqLX5R1X345qqfHbsf67hvA3Nn"
    )
    assert str(build_directory({}).cid) == (
        "bafybeiczsscdsbs7ffqz55asqdf3smv6klcw3gofszvwlyarci47bgf354"
    )


# --- multi-chunk files: Kubo's deterministic vectors ---------------------------------------


@pytest.mark.parametrize(
    ("size", "seed", "kwargs", "expected", "root_links"),
    [
        # add_test.go "legacy-cid-v0 ... under/above UnixFSFileMaxLinks=174" and
        # cid_profiles_test.go unixfs-v0-2015 FileAtMaxLinksCID / FileOverMaxLinksCID
        (
            44544 * KiB,
            "v0-seed",
            {"cid_version": 0},
            "QmUbBALi174SnogsUzLpYbD4xPiBSFANF4iztWCsHbMKh2",
            174,
        ),
        (
            44800 * KiB,
            "v0-seed",
            {"cid_version": 0},
            "QmepeWtdmS1hHXx1oZXsPUv6bMrfRRKfZcoPPU4eEfjnbf",
            2,
        ),
        # add_test.go "--max-file-links overrides": 262144KiB, seed "hello world", 1024 links
        (
            262144 * KiB,
            "hello world",
            {"cid_version": 0, "max_links": 1024},
            "QmbBftNHWmjSWKLC49dMVrfnY8pjrJYntiAXirFJ7oJrNk",
            1024,
        ),
        # add_test.go "--profile=test-cid-v1": CIDv1 raw leaves, 1 MiB chunks, 174 links
        (
            174 * MiB,
            "v1-seed",
            {"chunk_size": MiB},
            "bafybeigwduxcf2aawppv3isnfeshnimkyplvw3hthxjhr2bdeje4tdaicu",
            174,
        ),
        (
            175 * MiB,
            "v1-seed",
            {"chunk_size": MiB},
            "bafybeidhd7lo2n2v7lta5yamob3xwhbxcczmmtmhquwhjesi35jntf7mpu",
            2,
        ),
    ],
)
def test_multichunk_files_match_kubo_vectors(
    size: int, seed: str, kwargs: dict[str, int], expected: str, root_links: int
) -> None:
    roots = Blocks()

    def keep_parents(cid: Cid, data: bytes) -> None:
        if cid.codec == CODEC_DAG_PB and len(data) < 200 * KiB:
            roots[cid] = data

    node = import_file(DeterministicStream(size, seed), sink=keep_parents, **kwargs)  # type: ignore[arg-type]
    assert str(node.cid) == expected
    assert node.size == size
    assert len(decode_pbnode(roots[node.cid]).links) == root_links


@pytest.mark.slow
@pytest.mark.parametrize(
    ("size", "expected"),
    [
        # cid_profiles_test.go unixfs-v1-2025: 1 MiB chunks, 1024 links, raw leaves
        (1024 * MiB, "bafybeihmf37wcuvtx4hpu7he5zl5qaf2ineo2lqlfrapokkm5zzw7zyhvm"),
        (1025 * MiB, "bafybeihmzokxxjqwxjcryerhp5ezpcog2wcawfryb2xm64xiakgm4a5jue"),
    ],
)
def test_unixfs_v1_2025_profile_file_vectors(size: int, expected: str) -> None:
    stream = DeterministicStream(size, "v1-2025-seed")
    node = import_file(stream, chunk_size=MiB, max_links=1024)
    assert str(node.cid) == expected


@pytest.mark.parametrize("cid_version", [0, 1])
@pytest.mark.parametrize("length", [1, 262143, 262144, 262145, 3 * 262144 + 7])
def test_file_round_trip_and_tsize(cid_version: int, length: int) -> None:
    data = DeterministicStream(length, f"rt-{length}").read()
    blocks = Blocks()
    node = import_bytes(data, cid_version=cid_version, sink=blocks)
    assert b"".join(read_file_dag(blocks, node.cid)) == data
    assert node.tsize == dag_size(blocks, node.cid) == sum(map(len, blocks.values()))
    assert node.size == length


def test_deep_balanced_tree_round_trip() -> None:
    # 3 levels with tiny chunks: 4-link nodes over 40 chunks (boxo balanced layout)
    data = bytes(range(256)) * 5
    blocks = Blocks()
    node = import_file(io.BytesIO(data), chunk_size=32, max_links=4, sink=blocks, cid_version=0)
    assert b"".join(read_file_dag(blocks, node.cid)) == data
    root = decode_pbnode(blocks[node.cid])
    assert len(root.links) == 3  # 40 leaves -> 10 -> 3 -> root
    first = decode_pbnode(blocks[root.links[0].cid])
    assert len(first.links) == 4  # left-packed: the first subtree is full


def test_blocksizes_are_not_packed() -> None:
    blocks = Blocks()
    node = import_bytes(bytes(2 * 262144), sink=blocks)
    data = decode_pbnode(blocks[node.cid]).data
    assert data is not None
    # Type=File, filesize=524288, then two separate 0x20 fields (not one packed 0x22)
    assert data == b"\x08\x02\x18\x80\x80\x20" + b"\x20\x80\x80\x10" * 2


def test_link_layout_is_kubos() -> None:
    blocks = Blocks()
    node = import_bytes(bytes(262145), sink=blocks)
    block = blocks[node.cid]
    # first field is Links (0x12), Name present even when empty (0x12 0x00), Tsize present
    assert block[0] == 0x12
    assert b"\x12\x00\x18" in block


def test_unreadable_stream_read_fallback() -> None:
    class ReadOnly:
        def __init__(self, data: bytes) -> None:
            self._io = io.BytesIO(data)

        def read(self, n: int = -1) -> bytes:
            return self._io.read(min(n, 1000))  # short reads, like a pipe

    data = bytes(range(256)) * 3000
    assert import_file(ReadOnly(data)).cid == import_bytes(data).cid  # type: ignore[arg-type]


def test_memory_bounded_on_large_stream() -> None:
    class Pattern(io.RawIOBase):
        """140 MB of generated bytes, never held in memory at once."""

        def __init__(self, size: int) -> None:
            self.left = size
            self.block = bytes(range(256)) * 4096  # 1 MiB

        def readable(self) -> bool:
            return True

        def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def, override]
            n = min(len(buffer), self.left, len(self.block))
            memoryview(buffer)[:n] = self.block[:n]
            self.left -= n
            return n

    seen = [0]

    def sink(cid: Cid, data: bytes) -> None:
        seen[0] += len(data)

    size = 140 * 1000 * 1000
    tracemalloc.start()
    try:
        node = import_file(Pattern(size), cid_version=0, sink=sink)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert node.size == size
    assert seen[0] == node.tsize
    assert peak < 4 * MiB, f"peak {peak} bytes: the importer is buffering the file"


# --- directories ---------------------------------------------------------------------------


def _dir(names: list[str], leaf: Entry, **kwargs: object) -> DirNode:
    return build_directory({name: leaf for name in names}, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("profile", "count", "name_len", "last_len", "expected", "sharded"),
    [
        # cid_profiles_test.go unixfs-v0-2015 (Kubo default): links estimation,
        # 4096 * (30 + 34) = 262144 stays flat; 4033 * (31 + 34) = 262145 shards
        ("v0", 4096, 30, 30, "QmX5GtRk3TSSEHtdrykgqm4eqMEn3n2XhfkFAis5fjyZmN", False),
        ("v0", 4033, 31, 31, "QmeMiJzmhpJAUgynAcxTQYek5PPKgdv3qEvFsdV3XpVnvP", True),
        # unixfs-v1-2025: block estimation, block of exactly 262144 bytes stays flat
        ("v1", 4766, 11, 21, "bafybeic3h7rwruealwxkacabdy45jivq2crwz6bufb5ljwupn36gicplx4", False),
        ("v1", 4766, 11, 22, "bafybeiegvuterwurhdtkikfhbxcldohmxp566vpjdofhzmnhv6o4freidu", True),
    ],
)
def test_hamt_threshold_vectors(
    profile: str, count: int, name_len: int, last_len: int, expected: str, sharded: bool
) -> None:
    seed = "hamt-unixfs-v0-2015" if profile == "v0" else "hamt-unixfs-v1-2025"
    names = deterministic_names(count, name_len, last_len, seed)
    blocks = Blocks()
    if profile == "v0":
        leaf = import_bytes(b"x", cid_version=0, sink=blocks)
        node = _dir(names, leaf, cid_version=0, sink=blocks)
    else:
        leaf = import_bytes(b"x", sink=blocks)
        node = _dir(names, leaf, estimation="block", sink=blocks)
    assert str(node.cid) == expected
    assert node.sharded is sharded
    root = decode_pbnode(blocks[node.cid])
    assert root.data is not None
    fs = decode_unixfs_data(root.data)
    if not sharded:
        assert fs.type == DataType.DIRECTORY and len(root.links) == count
        if profile == "v1":
            assert len(blocks[node.cid]) == 262144
    else:
        assert fs.type == DataType.HAMT_SHARD and fs.fanout == 256 and fs.hash_type == 0x22
        assert len(root.links) <= 256
    assert node.tsize == dag_size(blocks, node.cid)


def test_hamt_structure_and_lookup() -> None:
    names = deterministic_names(4033, 31, 31, "hamt-unixfs-v0-2015")
    leaf = import_bytes(b"x", cid_version=0)
    blocks = Blocks()
    node = _dir(names, leaf, cid_version=0, sink=blocks)
    found: dict[str, Cid] = {}

    def walk(cid: Cid, depth: int) -> None:
        pb = decode_pbnode(blocks[cid])
        assert pb.data is not None
        fs = decode_unixfs_data(pb.data)
        assert fs.data is not None
        bitfield = int.from_bytes(fs.data, "big")
        indices = [int(link.name[:2], 16) for link in pb.links]
        assert indices == sorted(indices)
        assert bitfield == sum(1 << i for i in indices)
        for link, index in zip(pb.links, indices, strict=True):
            assert link.name[:2] == f"{index:02X}".encode()
            if len(link.name) == 2:
                walk(link.cid, depth + 1)
            else:
                name = link.name[2:].decode()
                assert (hamt_hash(name.encode()) >> (56 - 8 * depth)) & 0xFF == index
                found[name] = link.cid

    walk(node.cid, 0)
    assert sorted(found) == sorted(names)
    assert set(found.values()) == {leaf.cid}


def test_directory_links_sorted_by_name_bytes() -> None:
    leaf = import_bytes(b"x")
    blocks = Blocks()
    names = ["b", "B", "a", "é", "aa", "_", "Z"]
    node = _dir(names, leaf, sink=blocks)
    links = decode_pbnode(blocks[node.cid]).links
    assert [lnk.name for lnk in links] == sorted(n.encode() for n in names)
    assert all(lnk.tsize == 1 for lnk in links)
    assert node.tsize == len(blocks[node.cid]) + len(names)


@pytest.mark.parametrize("bad", ["", ".", "..", "a/b"])
def test_invalid_entry_names_rejected(bad: str) -> None:
    with pytest.raises(FormatError):
        build_directory({bad: import_bytes(b"x")})


def test_import_tree_matches_build_directory_and_reuses_entries(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    (root / "blocks").mkdir(parents=True)
    (root / "refs").mkdir()
    (root / "data").mkdir()
    (root / "checkpoints").mkdir()
    (root / "refs" / "head").write_bytes(b"f1620abc")
    (root / "blocks" / "f1620abc").write_bytes(bytes(300_000))
    (root / ".hidden").write_bytes(b"kept")
    os.symlink("/etc/passwd", root / "link")
    recorded: dict[str, Entry] = {}
    blocks = Blocks()
    node = import_tree(root, sink=blocks, on_entry=lambda p, e: recorded.__setitem__(p, e))
    assert set(recorded) == {
        "blocks",
        "blocks/f1620abc",
        "refs",
        "refs/head",
        "data",
        "checkpoints",
        ".hidden",
        "link",
    }
    assert recorded["data"].cid == build_directory({}).cid
    assert isinstance(recorded["blocks/f1620abc"], FileNode)
    # the symlink is a Symlink node holding the target, not the target's content
    link_block = decode_pbnode(blocks[recorded["link"].cid])
    assert link_block.data is not None
    link_fs = decode_unixfs_data(link_block.data)
    assert link_fs.type == DataType.SYMLINK and link_fs.data == b"/etc/passwd"
    # incremental: rebuild the root from recorded entries without reading any file
    top = {name: recorded[name] for name in recorded if "/" not in name}
    assert build_directory(top).cid == node.cid
    assert node.tsize == dag_size(blocks, node.cid)


def test_import_tree_hamt_on_disk(tmp_path: Path) -> None:
    names = deterministic_names(4033, 31, 31, "hamt-unixfs-v0-2015")
    for name in names:
        (tmp_path / name).write_bytes(b"x")
    node = import_tree(tmp_path, cid_version=0)
    assert str(node.cid) == "QmeMiJzmhpJAUgynAcxTQYek5PPKgdv3qEvFsdV3XpVnvP"


def test_import_tree_refuses_non_directory(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x")
    with pytest.raises(FormatError):
        import_tree(path)


def test_invalid_cid_version() -> None:
    with pytest.raises(ValueError):
        import_bytes(b"x", cid_version=2)
