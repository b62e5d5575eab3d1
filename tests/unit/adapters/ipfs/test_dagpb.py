"""dag-pb, UnixFS Data message and CID helpers: Kubo's byte layout, strict decoding, fuzz."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odfweb3.errors import FormatError
from odfweb3_ipfs.formats.cid import CODEC_DAG_PB, Cid
from odfweb3_ipfs.formats.dagpb import PBLink, PBNode, decode_pbnode, encode_pbnode
from odfweb3_ipfs.formats.unixfs_data import (
    DataType,
    UnixFSData,
    decode_unixfs_data,
    encode_unixfs_data,
)

HELLO_V0 = "Qmf412jQZiuVUtdgnB36FXFX7xg5V6KEbSJ4dpQuhkLyfD"


def test_empty_directory_block() -> None:
    # QmUNLLs… is sha256 of 0a 02 08 01: PBNode{Data: UnixFS{Type: Directory}}
    block = encode_pbnode([], encode_unixfs_data(UnixFSData(type=DataType.DIRECTORY)))
    assert block == b"\x0a\x02\x08\x01"
    cid = Cid.of_block(block, version=0, codec=CODEC_DAG_PB)
    assert str(cid) == "QmUNLLsPACCz1vLxQVkXqqLX5R1X345qqfHbsf67hvA3Nn"


def test_hello_world_leaf_block() -> None:
    data = encode_unixfs_data(UnixFSData(type=DataType.FILE, data=b"hello world", filesize=11))
    block = encode_pbnode([], data)
    assert str(Cid.of_block(block, version=0, codec=CODEC_DAG_PB)) == HELLO_V0
    node = decode_pbnode(block)
    assert node == PBNode(links=(), data=data)
    assert decode_unixfs_data(data) == UnixFSData(
        type=DataType.FILE, data=b"hello world", filesize=11
    )


def test_links_before_data_with_empty_name_and_tsize() -> None:
    child = Cid.decode(HELLO_V0)
    block = encode_pbnode([PBLink(child, b"", 0)], b"\x08\x01")
    assert block == b"\x12\x28\x0a\x22" + child.raw + b"\x12\x00\x18\x00" + b"\x0a\x02\x08\x01"
    assert decode_pbnode(block).links == (PBLink(child, b"", 0),)


def test_decoder_accepts_data_first_and_absent_fields() -> None:
    child = Cid.decode(HELLO_V0)
    link = b"\x0a\x22" + child.raw  # Hash only: no Name, no Tsize
    block = b"\x0a\x02\x08\x01" + b"\x12" + bytes([len(link)]) + link
    node = decode_pbnode(block)
    assert node.links == (PBLink(child, b"", None),)
    assert node.data == b"\x08\x01"


@pytest.mark.parametrize(
    "block",
    [
        b"\x0a",  # truncated length
        b"\x0a\x05\x08",  # data runs past the end
        b"\x08\x01",  # varint field 1: wrong wire type
        b"\x1a\x00",  # unknown field 3
        b"\x0a\x00\x0a\x00",  # Data twice
        b"\x12\x02\x12\x00",  # link without Hash
        b"\x12\x04\x0a\x02\x01\x02",  # link Hash is not a CID
        b"\x12\x06\x12\x00\x0a\x02\x12\x20",  # link fields out of order
    ],
)
def test_decoder_rejects_malformed(block: bytes) -> None:
    with pytest.raises(FormatError):
        decode_pbnode(block)


def test_unixfs_blocksizes_unpacked_on_write_packed_accepted_on_read() -> None:
    msg = UnixFSData(type=DataType.FILE, filesize=3, blocksizes=(1, 2))
    assert encode_unixfs_data(msg) == b"\x08\x02\x18\x03\x20\x01\x20\x02"
    assert decode_unixfs_data(b"\x08\x02\x18\x03\x22\x02\x01\x02") == msg


def test_unixfs_full_message_round_trip() -> None:
    msg = UnixFSData(
        type=DataType.HAMT_SHARD,
        data=b"\x01\x00",
        hash_type=0x22,
        fanout=256,
        mode=0o644,
        mtime=(-5, 7),
    )
    assert decode_unixfs_data(encode_unixfs_data(msg)) == msg


@pytest.mark.parametrize("data", [b"", b"\x18\x01", b"\x08\x09", b"\x08", b"\x12\x05ab"])
def test_unixfs_rejects_malformed(data: bytes) -> None:
    with pytest.raises(FormatError):
        decode_unixfs_data(data)


def test_cid_string_forms() -> None:
    v0 = Cid.decode(HELLO_V0)
    assert v0.version == 0 and v0.codec == CODEC_DAG_PB and len(v0.raw) == 34
    v1 = v0.to_v1()
    assert str(v1).startswith("bafybei") and Cid.decode(str(v1)) == v1
    assert Cid.decode(v1.raw) == v1
    assert bytes(v1.to_multiformats()) == v1.raw
    assert Cid.decode("f" + v1.raw.hex()) == v1  # any multibase is read
    assert v1.multihash == v0.raw and v1.digest == v0.digest


@pytest.mark.parametrize("text", ["", "Qm", "bafy!!", "zzzz", "b" + "a" * 10, "\x00"])
def test_cid_rejects_garbage(text: str) -> None:
    with pytest.raises(FormatError):
        Cid.decode(text)


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=300))
def test_fuzz_decoders_raise_only_format_error(data: bytes) -> None:
    for decode in (decode_pbnode, decode_unixfs_data, Cid.from_bytes):
        with contextlib.suppress(FormatError):
            decode(data)  # type: ignore[operator]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.binary(max_size=40), st.integers(min_value=0, max_value=2**64 - 1)), max_size=8
    ),
    st.one_of(st.none(), st.binary(max_size=100)),
)
def test_fuzz_pbnode_round_trip(links: list[tuple[bytes, int]], data: bytes | None) -> None:
    child = Cid.decode(HELLO_V0)
    node = PBNode(links=tuple(PBLink(child, name, tsize) for name, tsize in links), data=data)
    assert decode_pbnode(encode_pbnode(node.links, node.data)) == node


def _strict(block: bytes) -> PBNode | FormatError:
    from odfweb3_ipfs.formats.dagpb import _decode_strict

    try:
        return _decode_strict(block, "b")
    except FormatError as exc:
        return exc


_A_CID = Cid.of_block(b"x", version=1, codec=0x55).raw


@settings(max_examples=600, deadline=None)
@given(
    links=st.lists(
        st.tuples(st.binary(max_size=140), st.one_of(st.none(), st.integers(0, 1 << 40))),
        max_size=5,
    ),
    data=st.one_of(st.none(), st.binary(max_size=200)),
    cut=st.integers(0, 400),
    flip=st.tuples(st.integers(0, 400), st.integers(0, 255)),
)
def test_the_fast_decoder_agrees_with_the_strict_one_or_leaves_it_to_it(
    links: list[tuple[bytes, int | None]],
    data: bytes | None,
    cut: int,
    flip: tuple[int, int],
) -> None:
    """The fast path (the layout every writer uses) never accepts what the strict decoder
    refuses, and decodes what it accepts to the same node: on well-formed blocks (names of
    every length, Tsize absent or many bytes), cut short, and with one byte changed."""
    from odfweb3_ipfs.formats.dagpb import _fast_node

    good = encode_pbnode([PBLink(Cid.from_bytes(_A_CID), n, t or 0) for n, t in links], data)
    mutated = bytearray(good)
    if mutated:
        mutated[flip[0] % len(mutated)] = flip[1]
    for block in (good, good[: cut % (len(good) + 1)], bytes(mutated)):
        strict = _strict(block)
        fast = _fast_node(block)
        if isinstance(strict, FormatError):
            assert fast is None
            with pytest.raises(FormatError):
                decode_pbnode(block)
        else:
            assert fast is None or fast == strict
            assert decode_pbnode(block) == strict
    assert _fast_node(good) is not None  # the writers' layout takes the fast path


_CIDS = (
    _A_CID,
    Cid.of_block(b"leaf").raw,  # CIDv1 raw sha2-256
    Cid.of_block(b"node", version=0, codec=CODEC_DAG_PB).raw,
    b"\x01\x55\x00\x03abc",  # identity
)


@settings(max_examples=600, deadline=None)
@given(
    links=st.lists(
        st.tuples(
            st.sampled_from(_CIDS),
            st.binary(max_size=140),
            st.one_of(st.none(), st.integers(0, 1 << 40)),
        ),
        max_size=5,
    ),
    data=st.one_of(st.none(), st.binary(max_size=200)),
    cut=st.integers(0, 400),
    flip=st.tuples(st.integers(0, 400), st.integers(0, 255)),
)
def test_pb_links_reads_what_decode_pbnode_reads(
    links: list[tuple[bytes, bytes, int | None]],
    data: bytes | None,
    cut: int,
    flip: tuple[int, int],
) -> None:
    """pb_links (CID bytes and names, no objects) accepts exactly the blocks decode_pbnode
    accepts, with the same links and Data, and refuses the others with a FormatError: on
    well-formed blocks of every CID shape, cut short, and with one byte changed (a CID's
    prefix too)."""
    from odfweb3_ipfs.formats.dagpb import pb_links

    good = encode_pbnode([PBLink(Cid.from_bytes(c), n, t or 0) for c, n, t in links], data)
    mutated = bytearray(good)
    if mutated:
        mutated[flip[0] % len(mutated)] = flip[1]
    for block in (good, good[: cut % (len(good) + 1)], bytes(mutated)):
        strict = _strict(block)
        if isinstance(strict, FormatError):
            with pytest.raises(FormatError):
                pb_links(block)
        else:
            assert pb_links(block) == ([(x.cid.raw, x.name) for x in strict.links], strict.data)
