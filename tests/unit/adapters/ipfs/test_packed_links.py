"""The DAG build's new links kept without path strings: keyed by folder and multihash in a
DigestMap, any other shape of path or CID in a plain dict; the same links either way."""

from __future__ import annotations

import hashlib

import pytest

from odfweb3.odf.chain import DatasetObject, ObjectList
from odfweb3_ipfs.formats.cid import CODEC_DAG_PB, CODEC_RAW, Cid
from odfweb3_ipfs.publish.dataset_dag import (
    DataSha256,
    ObjectLink,
    _FolderNames,
    _link_key,
    _PackedLinks,
    _PositionLinks,
)


def _mh(i: int) -> bytes:
    return b"\x16\x20" + hashlib.sha3_256(str(i).encode()).digest()


def test_layout_paths_are_keyed_by_folder_and_multihash() -> None:
    path = "data/f" + _mh(1).hex()
    assert _link_key(path) == b"\x02" + _mh(1)
    assert _link_key("blocks/f" + _mh(1).hex()) == b"\x00" + _mh(1)
    # Not the canonical text of a multihash: no key (the dict keeps such a path whole).
    for odd in ("data/F" + _mh(1).hex(), "data/f" + _mh(1).hex().upper(), "refs/head", "data/x"):
        assert _link_key(odd) is None
    assert _link_key("data/f" + _mh(1).hex()[:-2] + " 0") is None


def test_links_round_trip_whatever_their_shape() -> None:
    links = _PackedLinks(ordered=True)
    want: dict[str, ObjectLink] = {}
    for i in range(500):
        codec = CODEC_RAW if i % 2 else CODEC_DAG_PB
        cid = Cid.sha256(hashlib.sha256(b"%d" % i).digest(), version=1, codec=codec)
        path = ("data/f", "blocks/f", "checkpoints/f")[i % 3] + _mh(i).hex()
        want[path] = ObjectLink(cid, 1000 + i, i)
    # A CIDv0, a CID whose digest is not 32 bytes, and a path that is no multihash.
    want["data/f" + _mh(1000).hex()] = ObjectLink(
        Cid.sha256(hashlib.sha256(b"v0").digest(), version=0, codec=CODEC_DAG_PB), 7, 3
    )
    want["data/f" + _mh(1001).hex()] = ObjectLink(Cid(b"\x01\x55\x00\x03abc"), 3, 3)
    want["data/odd"] = ObjectLink(
        Cid.sha256(hashlib.sha256(b"x").digest(), version=1, codec=CODEC_RAW), 1, 1
    )
    for path, link in want.items():
        links.add(path, link.cid, link.tsize, link.size)
    assert len(links) == len(want) and list(links) == list(want)
    for path, link in want.items():
        assert links[path] == link and links.pair(path) == (link.cid.raw, link.tsize)
    assert "data/f" + _mh(9999).hex() not in links and links.pair("data/nothing") is None
    links.add("data/odd", want["data/odd"].cid, 2, 2)  # a path added again keeps its last
    assert links["data/odd"].tsize == 2 and len(links) == len(want)


def test_unordered_links_are_looked_up_not_listed() -> None:
    links = _PackedLinks()
    links.add("data/f" + _mh(1).hex(), Cid.sha256(bytes(32), version=1, codec=CODEC_RAW), 1, 1)
    assert len(links) == 1 and "data/f" + _mh(1).hex() in links
    with pytest.raises(TypeError):
        list(links)


def test_data_sha256_gives_hex_by_multihash() -> None:
    sha = DataSha256()
    want = {_mh(i): hashlib.sha256(b"%d" % i).digest() for i in range(300)}
    for mh, digest in want.items():
        sha.put(mh, digest)
    assert {mh: sha.get(mh) for mh in want} == {mh: d.hex() for mh, d in want.items()}
    assert sha.get(_mh(5000)) is None


def test_a_one_leaf_data_file_sha256_is_its_raw_cid_digest() -> None:
    links = _PackedLinks()
    sha = DataSha256(links)
    leaf = hashlib.sha256(b"one chunk").digest()
    links.add("data/f" + _mh(1).hex(), Cid.sha256(leaf, version=1, codec=CODEC_RAW), 9, 9)
    # A dag-pb file root, a CIDv0 and a raw leaf outside data/ hold no file's SHA-256.
    node = Cid.sha256(hashlib.sha256(b"node").digest(), version=1, codec=CODEC_DAG_PB)
    links.add("data/f" + _mh(2).hex(), node, 300_000, 299_000)
    v0 = Cid.sha256(hashlib.sha256(b"v0").digest(), version=0, codec=CODEC_DAG_PB)
    links.add("data/f" + _mh(3).hex(), v0, 20, 9)
    links.add("blocks/f" + _mh(4).hex(), Cid.sha256(leaf, version=1, codec=CODEC_RAW), 9, 9)
    sha.put(_mh(2), hashlib.sha256(b"tapped").digest())
    assert sha.get(_mh(1)) == leaf.hex()
    assert sha.get(_mh(2)) == hashlib.sha256(b"tapped").hexdigest()
    assert sha.get(_mh(3)) is None and sha.get(_mh(4)) is None and sha.get(_mh(5)) is None
    assert DataSha256().get(_mh(1)) is None  # sealed: no leaves asked


def test_object_list_paths_are_the_objects_paths() -> None:
    objects = [
        DatasetObject(kind, _mh(i), i)  # type: ignore[arg-type]
        for i, kind in enumerate(("block", "data", "checkpoint", "linked") * 5)
    ]
    assert list(ObjectList(objects).paths()) == [o.path for o in objects]


def test_folder_names_are_made_from_the_packed_hashes() -> None:
    objects = [
        DatasetObject(kind, _mh(i), i)  # type: ignore[arg-type]
        for i, kind in enumerate(("block", "data", "checkpoint", "linked") * 5)
    ]
    packed = ObjectList(objects)
    for folder in ("blocks", "checkpoints", "data"):
        names = _FolderNames(packed, packed.in_folder(folder))
        want = [o.path.split("/")[1].encode() for o in objects if o.path.startswith(folder)]
        assert list(names) == want and len(names) == len(want)
        assert [names[i] for i in range(len(names))] == want and list(names[1:3]) == want[1:3]


def test_object_list_finds_each_path_at_its_position() -> None:
    kinds = ("block", "data", "checkpoint", "linked")
    objects = [DatasetObject(kinds[i % 4], _mh(i), i) for i in range(2000)]  # type: ignore[arg-type]
    # The same hash in two folders, and twice in one folder (data file and linked object).
    objects += [DatasetObject("data", _mh(0), 0), DatasetObject("linked", _mh(1), 1)]
    packed = ObjectList(objects)
    for i, obj in enumerate(objects[:2000]):
        assert packed.position(obj.path) == i
    assert packed.position("data/f" + _mh(0).hex()) == 2000  # blocks/ holds _mh(0) at 0
    assert packed.position("data/f" + _mh(1).hex()) == 1  # the first at that path
    for missing in ("data/f" + _mh(5000).hex(), "blocks/f" + _mh(1).hex(), "refs/head"):
        assert packed.position(missing) == -1
    for odd in ("data/F" + _mh(1).hex()[1:], "data/f" + _mh(1).hex().upper(), "data/f 0", "data"):
        assert packed.position(odd) == -1
    packed.append(DatasetObject("block", _mh(9000), 3))  # the index is made again
    assert packed.position("blocks/f" + _mh(9000).hex()) == 2002


def test_position_links_are_the_packed_links() -> None:
    kinds = ("block", "data", "checkpoint", "linked")
    objects = [DatasetObject(kinds[i % 4], _mh(i), i) for i in range(600)]  # type: ignore[arg-type]
    links = _PositionLinks(ObjectList(objects))
    want: dict[str, ObjectLink] = {}
    for i, obj in enumerate(objects):
        codec = CODEC_RAW if i % 2 else CODEC_DAG_PB
        cid = Cid.sha256(hashlib.sha256(b"%d" % i).digest(), version=1, codec=codec)
        want[obj.path] = ObjectLink(cid, 1000 + i, i)
    # A CIDv0, a CID whose digest is not 32 bytes, a path the list does not hold.
    want[objects[0].path] = ObjectLink(
        Cid.sha256(hashlib.sha256(b"v0").digest(), version=0, codec=CODEC_DAG_PB), 7, 3
    )
    want[objects[1].path] = ObjectLink(Cid(b"\x01\x55\x00\x03abc"), 3, 3)
    want["data/odd"] = ObjectLink(Cid.sha256(bytes(32), version=1, codec=CODEC_RAW), 1, 1)
    for path, link in want.items():
        links.add(path, link.cid, link.tsize, link.size)
    assert len(links) == len(want)
    for path, link in want.items():
        assert links[path] == link and links.pair(path) == (link.cid.raw, link.tsize)
    assert "data/f" + _mh(9999).hex() not in links and links.pair("data/nothing") is None
    # Added again: the last link kept, counted once, whichever way each was kept.
    raw = Cid.sha256(bytes(32), version=1, codec=CODEC_RAW)
    for path in (objects[1].path, objects[5].path):
        links.add(path, raw, 2, 2)
        assert links[path] == ObjectLink(raw, 2, 2)
    links.add(objects[5].path, Cid(b"\x01\x55\x00\x03abc"), 4, 4)
    assert links[objects[5].path] == ObjectLink(Cid(b"\x01\x55\x00\x03abc"), 4, 4)
    assert len(links) == len(want)
    with pytest.raises(TypeError):
        list(links)


def test_object_list_of_hashes_of_several_lengths() -> None:
    """Ends kept as a range while every hash has one length, an array from the first of
    another: the same items, paths, names and positions either way."""
    long = [DatasetObject("data", b"\x13\x40" + bytes([i]) * 64, i) for i in range(3)]
    for objects in (
        [DatasetObject("block", _mh(i), i) for i in range(5)] + long,
        long + [DatasetObject("block", _mh(i), None) for i in range(5)],
    ):
        packed = ObjectList(objects)
        assert list(packed) == objects and [packed[i] for i in range(8)] == objects
        assert list(packed.paths()) == [o.path for o in objects]
        names = [o.path.split("/")[1].encode() for o in objects]
        assert [packed.name_at(i) for i in range(8)] == names
        assert [packed.position(o.path) for o in objects] == list(range(8))
