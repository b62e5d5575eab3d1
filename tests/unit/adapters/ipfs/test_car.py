"""CAR v1 writer and verifying reader (spec: ipld/ipld specs/transport/car/carv1)."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odfweb3.errors import FormatError, HashMismatch
from odfweb3_ipfs.formats.car import (
    CarWriter,
    CidSet,
    decode_car_header,
    encode_car_header,
    index_car_file,
    iter_car,
    read_car_header,
)
from odfweb3_ipfs.formats.cid import CODEC_RAW, Cid, encode_uvarint
from odfweb3_ipfs.publish.unixfs_import import import_bytes, import_tree

ROOT = Cid.decode("bafybeiczsscdsbs7ffqz55asqdf3smv6klcw3gofszvwlyarci47bgf354")


def _car(blocks: list[tuple[Cid, bytes]], root: Cid = ROOT) -> bytes:
    out = io.BytesIO()
    writer = CarWriter(out, root)
    for cid, data in blocks:
        writer.write_block(cid, data)
    return out.getvalue()


def test_header_bytes_are_canonical_dag_cbor() -> None:
    # {"roots": [CID], "version": 1}: keys length-first sorted, CID = tag 42 over 0x00+bytes.
    # go-car writes the same bytes: 3a a2 65"roots" 81 d82a 5825 00<cid> 67"version" 01
    header = encode_car_header(ROOT)
    assert len(header) == 0x3A
    assert header == (b"\xa2\x65roots\x81\xd8\x2a\x58\x25\x00" + ROOT.raw + b"\x67version\x01")
    assert decode_car_header(header) == [ROOT]
    v0 = Cid.decode("QmUNLLsPACCz1vLxQVkXqqLX5R1X345qqfHbsf67hvA3Nn")
    assert decode_car_header(encode_car_header(v0)) == [v0]


def test_round_trip_and_dedupe() -> None:
    a = import_bytes(b"alpha")
    b = import_bytes(b"beta")
    out = io.BytesIO()
    writer = CarWriter(out, a.cid)
    assert writer.write_block(a.cid, b"alpha") is True
    assert writer.write_block(b.cid, b"beta") is True
    assert writer.write_block(a.cid, b"alpha") is False  # written once per CAR
    assert a.cid in writer and writer.blocks_written == 2
    assert writer.bytes_written == len(out.getvalue())
    roots, blocks = iter_car(io.BytesIO(out.getvalue()))
    assert roots == [a.cid]
    assert list(blocks) == [(a.cid, b"alpha"), (b.cid, b"beta")]


def test_a_writer_told_no_block_follows_refuses_one_and_still_sets_its_root() -> None:
    a = import_bytes(b"alpha")
    out = io.BytesIO()
    writer = CarWriter.with_root_later(out)
    writer.write_block(a.cid, b"alpha")
    writer.end_blocks()
    with pytest.raises(ValueError, match="end_blocks"):
        writer.write_block(a.cid, b"alpha")  # not even a duplicate: the set is gone
    with pytest.raises(ValueError, match="end_blocks"):
        _ = a.cid in writer
    writer.set_root(a.cid)
    roots, blocks = iter_car(io.BytesIO(out.getvalue()))
    assert roots == [a.cid] and list(blocks) == [(a.cid, b"alpha")]
    assert writer.blocks_written == 1 and writer.bytes_written == len(out.getvalue())


def test_streaming_tree_into_car_with_root_set_later(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "refs").mkdir()
    (tmp_path / "refs" / "head").write_bytes(b"f1620" + b"ab" * 32)
    (tmp_path / "big").write_bytes(bytes(range(256)) * 2000)
    out = io.BytesIO()
    writer = CarWriter.with_root_later(out)
    node = import_tree(tmp_path, sink=writer)
    writer.set_root(node.cid)
    assert read_car_header(io.BytesIO(out.getvalue())) == [node.cid]
    _, blocks = iter_car(io.BytesIO(out.getvalue()))
    got = dict(blocks)
    assert node.cid in got
    assert node.tsize == sum(len(d) for d in got.values())


def test_identity_multihash_blocks_verify() -> None:
    data = b"tiny"
    cid = Cid(b"\x01\x55\x00" + encode_uvarint(len(data)) + data)
    _, blocks = iter_car(io.BytesIO(_car([(cid, data)])))
    assert list(blocks) == [(cid, data)]
    bad = _car([(cid, b"tinx")])
    with pytest.raises(HashMismatch):
        list(iter_car(io.BytesIO(bad))[1])


def test_reader_rejects_tampered_block() -> None:
    cid = Cid.of_block(b"genuine", codec=CODEC_RAW)
    car = _car([(cid, b"genuine")]).replace(b"genuine", b"forgery")
    _, blocks = iter_car(io.BytesIO(car))
    with pytest.raises(HashMismatch) as info:
        list(blocks)
    assert str(cid) in str(info.value)


def test_writer_verify_option() -> None:
    cid = Cid.of_block(b"one", codec=CODEC_RAW)
    writer = CarWriter(io.BytesIO(), cid, verify=True)
    with pytest.raises(HashMismatch):
        writer.write_block(cid, b"two")


def test_writer_verify_failure_leaves_the_cid_unwritten() -> None:
    cid = Cid.of_block(b"one", codec=CODEC_RAW)
    out = io.BytesIO()
    writer = CarWriter(out, cid, verify=True)
    with pytest.raises(HashMismatch):
        writer.write_block(cid, b"two")
    assert cid not in writer
    assert writer.write_block(cid, b"one") is True  # the right bytes are still written
    assert list(iter_car(io.BytesIO(out.getvalue()))[1]) == [(cid, b"one")]


def _cid_of(kind: int, digest: bytes) -> Cid:
    """Same digest, different CIDs: v0, v1 raw, v1 dag-pb, or an identity CID."""
    if kind == 0:
        return Cid(b"\x12\x20" + digest)
    if kind == 3:
        return Cid(b"\x01\x55\x00" + encode_uvarint(len(digest[:9])) + digest[:9])
    return Cid.sha256(digest, version=1, codec=CODEC_RAW if kind == 1 else 0x70)


# digests sharing bytes and first-two-byte buckets, so an unaligned match and a shared
# bucket both happen; the model is a plain set of the CIDs' bytes
_DIGEST = st.builds(
    lambda head, tail: (head + tail)[:32].ljust(32, b"\x00"),
    st.sampled_from([b"\x00\x00", b"\x00\x01", b"\xab\xab" * 16]),
    st.binary(max_size=30),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "discard"]), st.integers(0, 3), _DIGEST)))
def test_cid_set_behaves_as_a_set_of_cid_bytes(ops: list[tuple[str, int, bytes]]) -> None:
    got, model = CidSet(), set()
    for op, kind, digest in ops:
        cid = _cid_of(kind, digest)
        if op == "add":
            assert got.add(cid) is (cid.raw not in model)
            model.add(cid.raw)
        else:
            got.discard(cid)
            model.discard(cid.raw)
        assert len(got) == len(model)
    for _, _kind, digest in ops:
        for other in range(4):
            probe = _cid_of(other, digest)
            assert (probe in got) is (probe.raw in model)
    # a digest found only across two slots of a bucket is not a member
    a = Cid.sha256(b"\x00\x00" + b"\x11" * 28 + b"\x00\x00", version=1, codec=CODEC_RAW)
    b = Cid.sha256(b"\x00\x00" + b"\x22" * 30, version=1, codec=CODEC_RAW)
    # the bucket holds a + b: its bytes 30..62 are a's last two and b's first thirty
    straddle = Cid.sha256(b"\x00\x00" * 2 + b"\x22" * 28, version=1, codec=CODEC_RAW)
    fresh = CidSet()
    fresh.add(a)
    fresh.add(b)
    assert straddle not in fresh and "not a cid" not in fresh
    assert fresh.add(straddle) is True and straddle in fresh and len(fresh) == 3


def test_cid_set_grows_its_buckets_and_stays_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    import odfweb3.odf.digest_map as dm

    monkeypatch.setattr(dm, "_FIRST_BITS", 1)  # 2 buckets, doubled past 2 per bucket
    monkeypatch.setattr(dm, "_GROW_AT", 2)
    cids = [Cid.of_block(i.to_bytes(4, "big"), codec=CODEC_RAW) for i in range(3000)]
    got = CidSet()
    for i, cid in enumerate(cids):
        assert got.add(cid) is True
        if i % 7 == 0:
            assert got.add(cids[i // 2]) is False
    assert len(got) == 3000
    table = next(iter(got._map._tables.values()))
    assert table.bits > 1 and table.count == 3000  # it grew, and no digest was lost
    assert sum(len(b) for b in table.buckets) == 3000 * 32
    assert all(cid in got for cid in cids)
    assert Cid.of_block(b"other", codec=CODEC_RAW) not in got
    for cid in cids[::2]:
        got.discard(cid)
    assert len(got) == 1500 and all((cid in got) is (i % 2 == 1) for i, cid in enumerate(cids))


@pytest.mark.parametrize("cut", [1, 5, 20, 58, 60, 61, 70, -1])
def test_reader_rejects_truncation(cut: int) -> None:
    car = _car([(Cid.of_block(b"some block data"), b"some block data")])
    truncated = car[:cut]
    with pytest.raises(FormatError):
        _, blocks = iter_car(io.BytesIO(truncated))
        list(blocks)


@pytest.mark.parametrize(
    "header",
    [
        b"",
        b"\x00",
        b"\x01\xa0",  # {} : no version
        b"\x0b\xa1\x67version\x02",  # version 2
        b"\x0c\xa2\x65roots\x80\x67version",  # truncated map
        b"\x11\xa2\x65roots\x01\x67version\x01",  # roots not a list
        b"\x03\xfa\x00\x00",  # float
    ],
)
def test_reader_rejects_bad_header(header: bytes) -> None:
    with pytest.raises(FormatError):
        read_car_header(io.BytesIO(header))


def test_reader_rejects_oversized_section() -> None:
    car = _car([]) + encode_uvarint(1 << 30) + b"\x01"
    with pytest.raises(FormatError):
        list(iter_car(io.BytesIO(car))[1])


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_fuzz_reader_raises_only_format_errors(data: bytes) -> None:
    try:
        _, blocks = iter_car(io.BytesIO(data))
        list(blocks)
    except (FormatError, HashMismatch):
        pass


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=120), st.integers(min_value=0, max_value=200))
def test_fuzz_mutated_car_raises_only_declared_errors(noise: bytes, at: int) -> None:
    car = bytearray(_car([(Cid.of_block(b"x" * 50), b"x" * 50)]))
    at = min(at, len(car))
    car[at : at + len(noise)] = noise
    try:
        _, blocks = iter_car(io.BytesIO(bytes(car)))
        list(blocks)
    except (FormatError, HashMismatch):
        pass


def _outcome(read: Callable[[bytes], list[tuple[bytes, bytes]]], car: bytes) -> object:
    """What a reader makes of ``car``: its blocks, or its error's type and message."""
    try:
        return read(car)
    except (FormatError, HashMismatch) as exc:
        return type(exc), str(exc)


def _by_stream(car: bytes) -> list[tuple[bytes, bytes]]:
    return [(cid.raw, data) for cid, data in iter_car(io.BytesIO(car))[1]]


def _by_index(car: bytes) -> list[tuple[bytes, bytes]]:
    # the bytes at each offset the index gives, as a CAR index reads them back
    return [(raw, car[at : at + n]) for raw, at, n in index_car_file(io.BytesIO(car))[1]]


def _mixed_car() -> bytes:
    """Blocks of every CID shape and of one-, two- and three-byte section lengths, some
    across the index's 1 MiB reads: raw and dag-pb CIDv1, a CIDv0, an identity CID."""
    blocks = [(Cid.of_block(b"x" * n), b"x" * n) for n in (0, 1, 91, 92, 300, 16_300, 16_400)]
    big = bytes(range(256)) * 2100  # 537,601 bytes each: the second crosses the first 1 MiB read
    blocks += [(Cid.of_block(big + bytes((i,))), big + bytes((i,))) for i in range(3)]
    blocks.append((Cid.of_block(b"node", version=0, codec=0x70), b"node"))
    blocks.append((Cid.of_block(b"node", codec=0x70), b"node"))
    blocks.append((Cid.from_bytes(b"\x01\x55\x00\x03abc"), b"abc"))  # identity
    return _car(blocks)


def test_index_reads_every_block_as_iter_car() -> None:
    car = _mixed_car()
    got = _by_index(car)
    assert len(got) == 13 and got == _by_stream(car)


@pytest.mark.parametrize(
    "damage",
    [
        "cut-in-varint", "cut-in-cid", "cut-in-data", "cut-in-big", "flip-data", "flip-big",
        "flip-cid", "zero-length", "oversized", "non-minimal", "endless-varint", "short-cid",
    ],
)  # fmt: skip
def test_index_refuses_what_iter_car_refuses_with_its_message(damage: str) -> None:
    car = bytearray(_mixed_car())
    first = len(_car([]))  # the first section's length varint
    big_at = car.index(bytes(range(256)) * 4)
    if damage == "cut-in-varint":
        car = _car([(Cid.of_block(b"a"), b"a")]) + b"\x80\x80"  # the file ends in one
    elif damage == "cut-in-cid":
        car = car[: first + 10]
    elif damage == "cut-in-data":
        car = car[: car.index(b"x" * 300) + 100]
    elif damage == "cut-in-big":
        car = car[: big_at + 700_000]
    elif damage == "flip-data":
        car[car.index(b"x" * 16_300) + 5] ^= 1
    elif damage == "flip-big":
        car[big_at + 600_000] ^= 1  # in the block that crosses the first read
    elif damage == "flip-cid":
        car[first + 1 + 10] ^= 1  # the digest of the first block's CID
    elif damage == "zero-length":
        car = _car([]) + b"\x00"
    elif damage == "oversized":
        car = _car([]) + encode_uvarint(9 << 20) + b"\x01"
    elif damage == "non-minimal":
        car = _car([]) + b"\xa5\x00" + bytes(37)  # 37 as two bytes
    elif damage == "endless-varint":
        car = _car([]) + b"\xff" * 12
    else:  # a CIDv1 prefix with fewer bytes than its digest
        car = _car([]) + b"\x06\x01\x55\x12\x20ab"
    stream = _outcome(_by_stream, bytes(car))
    assert isinstance(stream, tuple) and isinstance(stream[1], str)  # refused
    assert _outcome(_by_index, bytes(car)) == stream


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=120), st.integers(min_value=0, max_value=200))
def test_fuzz_index_agrees_with_iter_car(noise: bytes, at: int) -> None:
    car = bytearray(_car([(Cid.of_block(b"x" * 200), b"x" * 200), (Cid.of_block(b"y"), b"y")]))
    at = min(at, len(car))
    car[at : at + len(noise)] = noise
    assert _outcome(_by_index, bytes(car)) == _outcome(_by_stream, bytes(car))
