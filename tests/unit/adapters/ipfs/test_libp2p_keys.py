"""libp2p Ed25519 keys, peer IDs and IPNS names against published vectors."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from odfweb3.errors import FormatError
from odfweb3_ipfs.formats.libp2p_keys import (
    IpnsName,
    ipns_name_for_public_key,
    parse_ipns_name,
    private_key_from_protobuf,
    private_key_to_protobuf,
    public_key_bytes,
    public_key_from_protobuf,
    public_key_to_protobuf,
)

# libp2p specs, peer-ids/peer-ids.md "Test vectors" (Ed25519 rows).
SPEC_PRIVATE = bytes.fromhex(
    "080112407e0830617c4a7de83925dfb2694556b12936c477a0e1feb2e148ec9da60fee7d"
    "1ed1e8fae2c4a144b8be8fd4b47bf3d3b34b871c3cacf6010f0e42d474fce27e"
)
SPEC_PUBLIC = bytes.fromhex(
    "080112201ed1e8fae2c4a144b8be8fd4b47bf3d3b34b871c3cacf6010f0e42d474fce27e"
)
# Peer ID of that key, as asserted by go-libp2p's HTTP peer-ID-auth tests.
SPEC_PEER_ID = "12D3KooWBtg3aaRMjxwedh83aGiUkwSxDwUZkzuJcfaqUmo7R3pq"
# The same key as a base36 CIDv1 libp2p-key, as printed by @libp2p/peer-id (see the
# oracle test, which re-derives it with js for random keys).
SPEC_NAME = "k51qzi5uqu5dgy8qsq67hbz73jqkw87l3fgf4a91qb0d9b5173tir7n4vxk1oe"

# IPNS spec "Test Vectors": names of the V2-only and V1+V2 fixtures.
IPNS_SPEC_NAMES = [
    "k51qzi5uqu5dit2ku9mutlfgwyz8u730on38kd10m97m36bjt66my99hb6103f",
    "k51qzi5uqu5dlkw8pxuw9qmqayfdeh4kfebhmreauqdc6a7c3y7d5i9fi8mk9w",
    "k51qzi5uqu5dm4tm0wt8srkg9h9suud4wuiwjimndrkydqm81cqtlb5ak6p7ku",
]


def test_spec_private_key_round_trips_and_gives_spec_public_key():
    key = private_key_from_protobuf(SPEC_PRIVATE)
    assert private_key_to_protobuf(key) == SPEC_PRIVATE
    assert public_key_to_protobuf(public_key_bytes(key)) == SPEC_PUBLIC
    assert public_key_from_protobuf(SPEC_PUBLIC) == SPEC_PUBLIC[4:]


def test_spec_key_peer_id_and_name():
    name = IpnsName.from_public_key(SPEC_PUBLIC[4:])
    assert name.peer_id == SPEC_PEER_ID
    assert str(name) == SPEC_NAME
    assert ipns_name_for_public_key(SPEC_PUBLIC[4:]) == SPEC_NAME
    assert name.multihash == b"\x00\x24" + SPEC_PUBLIC
    assert name.routing_key == b"/ipns/\x00\x24" + SPEC_PUBLIC
    assert name.inlined_public_key() == SPEC_PUBLIC[4:]


@pytest.mark.parametrize(
    "text",
    [
        SPEC_NAME,
        SPEC_PEER_ID,
        "/ipns/" + SPEC_NAME,
        "bafzaajaiaejcahwr5d5ofrfbis4l5d6uwr57hu5tjodrypfm6yaq6dsc2r2pzyt6",
        "  " + SPEC_NAME.upper() + "  ",
    ],
)
def test_parse_name_in_every_form(text):
    assert parse_ipns_name(text) == IpnsName.from_public_key(SPEC_PUBLIC[4:])


@pytest.mark.parametrize("text", IPNS_SPEC_NAMES)
def test_ipns_spec_vector_names_inline_ed25519_keys(text):
    name = parse_ipns_name(text)
    key = name.inlined_public_key()
    assert key is not None and len(key) == 32
    assert str(name) == text


def test_sha256_peer_id_parses_but_inlines_no_key():
    name = parse_ipns_name("QmWEekX7EZLUd9VXRNMRXW3LXe4F6x7mB8oPxY5XLptrBq")
    assert name.multihash[:2] == b"\x12\x20"
    assert name.inlined_public_key() is None


@pytest.mark.parametrize(
    "text",
    [
        "",
        "/ipns/",
        "bafkqadtwgiww63tmpeqhezldn5zgi",  # a raw-codec CID, not libp2p-key
        "not-a-name",
        "12D3KooW0000",  # invalid base58 character 0
        "example.com",
    ],
)
def test_parse_name_rejects_non_names(text):
    with pytest.raises(FormatError):
        parse_ipns_name(text)


def test_legacy_96_byte_private_key_form():
    legacy = b"\x08\x01\x12\x60" + SPEC_PRIVATE[4:] + SPEC_PRIVATE[-32:]
    assert private_key_to_protobuf(private_key_from_protobuf(legacy)) == SPEC_PRIVATE
    broken = b"\x08\x01\x12\x60" + SPEC_PRIVATE[4:] + bytes(32)
    with pytest.raises(FormatError):
        private_key_from_protobuf(broken)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x08\x00\x12\x20" + bytes(32),  # RSA key type
        b"\x08\x01\x12\x1f" + bytes(31),  # short key
        b"\x08\x01",  # no Data
        b"\x12\x20" + bytes(32),  # no Type
        b"\x0a\x01\x01\x12\x20" + bytes(32),  # Type with wrong wire type
        b"\x08\x01\x12\x21" + bytes(32),  # truncated Data
    ],
)
def test_public_key_protobuf_rejects_malformed(data):
    with pytest.raises(FormatError):
        public_key_from_protobuf(data)


def test_private_key_with_mismatched_public_half_is_rejected():
    tampered = SPEC_PRIVATE[:-1] + bytes([SPEC_PRIVATE[-1] ^ 1])
    with pytest.raises(FormatError, match="does not match"):
        private_key_from_protobuf(tampered)


def test_generated_keys_round_trip_and_names_are_stable():
    key = Ed25519PrivateKey.generate()
    again = private_key_from_protobuf(private_key_to_protobuf(key))
    assert public_key_bytes(again) == public_key_bytes(key)
    name = ipns_name_for_public_key(public_key_bytes(key))
    assert name.startswith("k51")
    assert parse_ipns_name(name).inlined_public_key() == public_key_bytes(key)


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=32, max_size=32), st.binary(min_size=32, max_size=32))
def test_the_base36_name_is_the_multiformats_text(key: bytes, digest: bytes) -> None:
    # Written by hand (no multiformats import on a publish); the same text as its CID
    from multiformats import CID

    for mh in (IpnsName.from_public_key(key).multihash, b"\x12\x20" + digest):
        name = IpnsName(mh)
        assert str(name) == CID("base36", 1, 0x72, mh).encode("base36")
        assert parse_ipns_name(str(name)) == name
