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
    assert dict(sha) == {mh: d.hex() for mh, d in want.items()}
    assert sha.get(_mh(5000)) is None


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
