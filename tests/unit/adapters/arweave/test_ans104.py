"""ANS-104 data items and bundles: arbundles tag vectors, limits, signing, bundle parsing."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from odfweb3.errors import FormatError, HashMismatch, SignatureError
from odfweb3_arweave.formats.ans104 import (
    BUNDLE_TAGS,
    MAX_TAG_NAME_BYTES,
    MAX_TAG_VALUE_BYTES,
    DataItem,
    StreamedDataItem,
    create_data_item,
    decode_bundle,
    decode_data_item,
    decode_tags,
    encode_bundle,
    encode_data_item,
    encode_tags,
    iter_bundle,
    read_data_item_header,
    sign_data_item_stream,
    verify_data_item,
    write_bundle,
)
from odfweb3_arweave.formats.deephash import deep_hash
from odfweb3_arweave.formats.tags import Tag
from odfweb3_arweave.wallet import Wallet, verify_signature

# arbundles src/__tests__/tags.spec.ts ("rustTags", "shortTags", "longTags", "warpTags").
RUST_TAGS = [Tag.of("Hello", "Bundlr!"), Tag.of("This is a ", "Test")]
RUST_ENC = bytes(
    [4, 10, 72, 101, 108, 108, 111, 14, 66, 117, 110, 100, 108, 114, 33, 20, 84, 104, 105]
) + bytes([115, 32, 105, 115, 32, 97, 32, 8, 84, 101, 115, 116, 0])
SHORT_TAGS = [Tag.of("ThisIsAShortName", "ThisIsAShortValue")]
SHORT_ENC = bytes([2, 32]) + b"ThisIsAShortName" + bytes([34]) + b"ThisIsAShortValue" + b"\x00"
LONG_NAME = "ThisIsALongName" + "A" * 49
LONG_VALUE = "ThisIsALongValue" + "A" * 62
LONG_TAGS = [Tag.of(LONG_NAME, LONG_VALUE)]
LONG_ENC = bytes([2, 128, 1]) + LONG_NAME.encode() + bytes([156, 1]) + LONG_VALUE.encode() + b"\0"
WARP_TAGS = [
    Tag.of("YnVuZGxlci10ZXN0cw", "dHJ1ZQ"),
    Tag.of(
        "ZFJUQUJSb1VNSmRXTUFtVGlQUlZ6T3hLc3Vya29HeEJlaFF6UlB5d2dITw",
        "enBJVFFUUWpzSGRtSFlVTGpCamZOZllpcHNaaUNRUENycEFSQUxaenJheQ",
    ),
    Tag.of(
        "WFRvbkZlaFltYmRWb21RUUtMWFZGc2tqak1wZkxFZGhlcnpoclRJT05vTg",
        "YkNtcXpZS254RUtFQXVKa0VGSUdaVGl3c29xdWdsWEZYeVVNUUhXQVNNdQ",
    ),
    Tag.of(
        "T25QVnp6RENsY3RIVUVFd3VhZ0xmYlVNc0pZTmV0ZkpXeFVLRXdpV2Z6Sg",
        "R3BocXp4bU5xekNQUFF3eUtVY2pXeXhUSldpTkhwTWtvT3JVbGdlQ2FRbA",
    ),
    Tag.of(
        "SWZzUmVyTXJ4VmtBTnpjUGpoZG1SSkZwTWlFTEJXS1NBWVNHQ2p1TGREaA",
        "b1NHbWtNRlRjeg",
    ),
]


def test_arbundles_tag_vectors() -> None:
    assert LONG_ENC[2 + 1 : 2 + 1 + 64] == LONG_NAME.encode()  # vector shape sanity
    for tags, enc in ((RUST_TAGS, RUST_ENC), (SHORT_TAGS, SHORT_ENC), (LONG_TAGS, LONG_ENC)):
        assert encode_tags(tags) == enc
        assert decode_tags(enc) == tuple(tags)


def test_warp_tags_negative_block_count() -> None:
    """arbundles' "weirdEnc": block count -5 followed by the block's byte size (454)."""
    enc = encode_tags(WARP_TAGS)
    assert enc[0] == 10 and enc[-1] == 0
    body = enc[1:-1]
    assert len(body) == 454
    weird = bytes([9, 140, 7]) + body + b"\x00"  # zigzag(-5) = 9, zigzag(454) = 908
    assert decode_tags(weird) == tuple(WARP_TAGS)


def test_no_tags_encode_to_nothing() -> None:
    assert encode_tags([]) == b""
    assert decode_tags(b"") == ()
    assert decode_tags(b"\x00") == ()


@pytest.mark.parametrize(
    ("tags", "message"),
    [
        ([Tag.of(f"n{i}", "v") for i in range(129)], "129 tags"),
        ([Tag(b"n" * (MAX_TAG_NAME_BYTES + 1), b"v")], "name is 1025 bytes"),
        ([Tag(b"n", b"v" * (MAX_TAG_VALUE_BYTES + 1))], "value is 3073 bytes"),
        ([Tag(b"", b"v")], "empty"),
        ([Tag(b"n", b"")], "empty"),
        ([Tag(b"n" * 1024, b"v" * 3072)], "4096"),
    ],
)
def test_tag_limits(tags: list[Tag], message: str) -> None:
    with pytest.raises(FormatError, match=message):
        encode_tags(tags)


def test_tags_at_the_limits_are_fine() -> None:
    encode_tags([Tag.of(f"n{i}", "v") for i in range(128)])
    encode_tags([Tag(b"n" * 1024, b"v" * 3000)])


@pytest.mark.parametrize(
    "raw",
    [b"\x02\x02a", b"\x02\x02a\x02b", b"\x02\x02a\x02b\x00\x00", b"\xff" * 11, b"\x02\x7fab"],
)
def test_malformed_tags(raw: bytes) -> None:
    with pytest.raises(FormatError):
        decode_tags(raw)


def test_item_round_trip_and_signature_data(fixed_wallet: Wallet) -> None:
    target, anchor = bytes(range(32)), b"A" * 32
    item = create_data_item(fixed_wallet, b"payload", RUST_TAGS, target=target, anchor=anchor)
    raw = encode_data_item(item)
    back = decode_data_item(raw)
    assert back == item
    assert back.header.target == target and back.header.anchor == anchor
    assert back.tags == tuple(RUST_TAGS) and back.data == b"payload"
    assert len(back.id) == 32
    # what arbundles getSignatureData signs: type as text, raw Avro tag bytes
    message = deep_hash(
        [b"dataitem", b"1", b"1", fixed_wallet.owner, target, anchor, RUST_ENC, b"payload"]
    )
    verify_signature(fixed_wallet.owner, message, item.header.signature)


def test_item_layout(fixed_wallet: Wallet) -> None:
    raw = encode_data_item(create_data_item(fixed_wallet, b"xyz", SHORT_TAGS))
    assert raw[:2] == b"\x01\x00"
    assert raw[514:1026] == fixed_wallet.owner
    assert raw[1026:1028] == b"\x00\x00"  # no target, no anchor
    assert int.from_bytes(raw[1028:1036], "little") == 1
    assert int.from_bytes(raw[1036:1044], "little") == len(SHORT_ENC)
    assert raw[1044 : 1044 + len(SHORT_ENC)] == SHORT_ENC
    assert raw.endswith(b"xyz")


def test_tampered_item_fails(fixed_wallet: Wallet) -> None:
    raw = bytearray(encode_data_item(create_data_item(fixed_wallet, b"payload", RUST_TAGS)))
    raw[-1] ^= 1
    with pytest.raises(SignatureError):
        decode_data_item(bytes(raw))


def test_malformed_items(fixed_wallet: Wallet) -> None:
    raw = encode_data_item(create_data_item(fixed_wallet, b"payload"))
    with pytest.raises(FormatError, match="signature type 2"):
        decode_data_item(b"\x02\x00" + raw[2:])
    with pytest.raises(FormatError, match="presence byte"):
        decode_data_item(raw[:1026] + b"\x02" + raw[1027:])
    with pytest.raises(FormatError, match="truncated"):
        decode_data_item(raw[:1030])
    with pytest.raises(FormatError, match="too short"):
        decode_data_item(raw[:50])
    with pytest.raises(FormatError, match="32"):
        create_data_item(fixed_wallet, b"x", anchor=b"short")


def test_streamed_item_matches_in_memory(fixed_wallet: Wallet, tmp_path: Path) -> None:
    data = bytes(range(256)) * 4000
    path = tmp_path / "data.bin"
    path.write_bytes(data)
    with path.open("rb") as stream:
        header = sign_data_item_stream(fixed_wallet, stream, len(data), SHORT_TAGS)
    verify_data_item(DataItem(header, data))
    with path.open("rb") as stream:
        verify_data_item(header, stream)
    with pytest.raises(FormatError, match="early"), path.open("rb") as stream:
        sign_data_item_stream(fixed_wallet, stream, len(data) + 1)


def _items(wallet: Wallet) -> list[DataItem]:
    return [
        create_data_item(wallet, b"first", RUST_TAGS),
        create_data_item(wallet, b"", SHORT_TAGS, anchor=b"B" * 32),
        create_data_item(wallet, b"third" * 100),
    ]


def test_bundle_round_trip(fixed_wallet: Wallet, tmp_path: Path) -> None:
    items = _items(fixed_wallet)
    data = bytes(range(256)) * 2000
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    with path.open("rb") as stream:
        header = sign_data_item_stream(fixed_wallet, stream, len(data), LONG_TAGS)
    streamed = StreamedDataItem(header, lambda: path.open("rb"))
    out = io.BytesIO()
    size = write_bundle(out, [*items, streamed])
    raw = out.getvalue()
    assert size == len(raw)
    assert int.from_bytes(raw[:32], "little") == 4
    assert int.from_bytes(raw[32:64], "little") == len(encode_data_item(items[0]))
    assert raw[64:96] == items[0].id
    parsed = decode_bundle(raw)
    assert [i.id for i in parsed] == [*(i.id for i in items), header.id]
    assert parsed[3].data == data
    assert encode_bundle(items) == encode_bundle(decode_bundle(encode_bundle(items)))


class _Unseekable(io.BytesIO):
    def seekable(self) -> bool:
        return False


def test_bundle_bad_offsets(fixed_wallet: Wallet) -> None:
    raw = encode_bundle(_items(fixed_wallet))
    with pytest.raises(FormatError, match="bad offsets"):
        decode_bundle(raw + b"\x00")
    with pytest.raises(FormatError, match="bad offsets"):
        decode_bundle(raw[:-1])
    bigger = bytearray(raw)
    bigger[32:64] = (int.from_bytes(raw[32:64], "little") + 1).to_bytes(32, "little")
    with pytest.raises(FormatError, match="bad offsets"):
        decode_bundle(bytes(bigger))
    tiny = bytearray(raw)
    tiny[32:64] = (10).to_bytes(32, "little")
    with pytest.raises(FormatError, match="bad offsets"):
        decode_bundle(bytes(tiny))
    with pytest.raises(FormatError, match="declares size 10"):
        list(iter_bundle(_Unseekable(bytes(tiny))))
    # a non-seekable stream is checked item by item as it is read
    with pytest.raises(FormatError, match="remain"):
        list(iter_bundle(_Unseekable(raw[:-1])))
    with pytest.raises(FormatError, match="after its last item"):
        list(iter_bundle(_Unseekable(raw + b"\x00")))
    with pytest.raises(FormatError, match="header entry"):
        decode_bundle((5).to_bytes(32, "little") + raw[32:96])
    with pytest.raises(FormatError, match="not a bundle"):
        decode_bundle(b"\xff" * 32)
    with pytest.raises(FormatError):
        decode_bundle(b"\x01")


def test_bundle_wrong_id_and_bad_signature(fixed_wallet: Wallet) -> None:
    raw = encode_bundle(_items(fixed_wallet))
    wrong = bytearray(raw)
    wrong[64] ^= 1
    with pytest.raises(HashMismatch, match="bundle item 0 id"):
        decode_bundle(bytes(wrong))
    corrupt = bytearray(raw)
    corrupt[-1] ^= 1
    with pytest.raises(SignatureError):
        list(iter_bundle(io.BytesIO(bytes(corrupt))))


def test_empty_bundle_and_tags() -> None:
    assert decode_bundle(encode_bundle([])) == []
    assert [t.text() for t in BUNDLE_TAGS] == [
        ("Bundle-Format", "binary"),
        ("Bundle-Version", "2.0.0"),
    ]


def test_read_header_from_stream(fixed_wallet: Wallet) -> None:
    item = create_data_item(fixed_wallet, b"data!", RUST_TAGS, target=b"T" * 32)
    raw = encode_data_item(item)
    stream = io.BytesIO(raw)
    header = read_data_item_header(stream, len(raw))
    assert header == item.header
    assert stream.read() == b"data!"
