"""DAG-CBOR codec: RFC 8949 appendix A vectors, DAG-CBOR strictness rules, round trips."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from multiformats import CID

from odfweb3.errors import FormatError
from odfweb3_ipfs.formats.dagcbor import MAX_DEPTH, decode_dagcbor, encode_dagcbor

# RFC 8949 appendix A examples that DAG-CBOR keeps (floats only in 64-bit form).
RFC8949_VECTORS = [
    (0, "00"),
    (1, "01"),
    (10, "0a"),
    (23, "17"),
    (24, "1818"),
    (25, "1819"),
    (100, "1864"),
    (1000, "1903e8"),
    (1000000, "1a000f4240"),
    (1000000000000, "1b000000e8d4a51000"),
    (18446744073709551615, "1bffffffffffffffff"),
    (-18446744073709551616, "3bffffffffffffffff"),
    (-1, "20"),
    (-10, "29"),
    (-100, "3863"),
    (-1000, "3903e7"),
    (False, "f4"),
    (True, "f5"),
    (None, "f6"),
    (b"", "40"),
    (bytes.fromhex("01020304"), "4401020304"),
    ("", "60"),
    ("a", "6161"),
    ("IETF", "6449455446"),
    ('"\\', "62225c"),
    ("\u00fc", "62c3bc"),
    ("\u6c34", "63e6b0b4"),
    ([], "80"),
    ([1, 2, 3], "83010203"),
    ([1, [2, 3], [4, 5]], "8301820203820405"),
    ({}, "a0"),
    ({"a": 1, "b": [2, 3]}, "a26161016162820203"),
    (["a", {"b": "c"}], "826161a161626163"),
    (1.1, "fb3ff199999999999a"),
    (100000.0, "fb40f86a0000000000"),
    (-4.1, "fbc010666666666666"),
]


@pytest.mark.parametrize(("value", "hexed"), RFC8949_VECTORS)
def test_rfc8949_vectors_encode_and_decode(value, hexed):
    assert encode_dagcbor(value).hex() == hexed
    assert decode_dagcbor(bytes.fromhex(hexed)) == value


def test_map_keys_sorted_length_first_then_bytewise():
    # The IPNS spec's data map order: TTL, Value, Sequence, Validity, ValidityType.
    doc = {"Value": b"", "Validity": b"", "ValidityType": 0, "Sequence": 0, "TTL": 0}
    encoded = encode_dagcbor(doc)
    order = ["TTL", "Value", "Sequence", "Validity", "ValidityType"]
    positions = [encoded.index(k.encode()) for k in order]
    assert positions == sorted(positions)
    assert encode_dagcbor({"b": 1, "aa": 2}).hex() == "a2616201626161" + "02"


def test_cid_tag_42_round_trip_v1_and_v0():
    v1 = CID.decode("bafkqadtwgiww63tmpeqhezldn5zgi")
    v0 = CID.decode("QmWEekX7EZLUd9VXRNMRXW3LXe4F6x7mB8oPxY5XLptrBq")
    header = {"roots": [v1], "version": 1}
    encoded = encode_dagcbor(header)
    # a2 'roots' [tag 42 bytes(0x00 + cid)] 'version' 1
    assert encoded.hex() == (
        "a265726f6f747381d82a53000155000e76322d6f6e6c79207265636f72646776657273696f6e01"
    )
    assert decode_dagcbor(encoded) == header
    assert decode_dagcbor(encode_dagcbor([v0])) == [v0]


@pytest.mark.parametrize(
    ("hexed", "reason"),
    [
        ("5f4101ff", "indefinite byte string"),
        ("7f6161ff", "indefinite text string"),
        ("9f01ff", "indefinite array"),
        ("bf616101ff", "indefinite map"),
        ("1817", "non-shortest uint (1 byte for 23)"),
        ("190017", "non-shortest uint (2 bytes)"),
        ("1a0000ffff", "non-shortest uint (4 bytes)"),
        ("1b00000000ffffffff", "non-shortest uint (8 bytes)"),
        ("3817", "non-shortest negative int"),
        ("5801ff", "non-shortest byte string length"),
        ("a2616101616101", "duplicate map key"),
        ("a2616201616101", "keys out of bytewise order"),
        ("a262616101616202", "keys out of length-first order"),
        ("a10101", "integer map key"),
        ("0000", "trailing bytes"),
        ("c074323031332d30332d32315432303a30343a30305a", "tag 0"),
        ("d82a4101", "CID tag without 0x00 prefix"),
        ("d82a6161", "CID tag around a text string"),
        ("f7", "undefined"),
        ("f0", "unassigned simple value"),
        ("f818", "one-byte simple value"),
        ("f93c00", "half float"),
        ("fa47c35000", "single float"),
        ("fb7ff8000000000000", "NaN"),
        ("fb7ff0000000000000", "Infinity"),
        ("62c328", "invalid UTF-8"),
        ("1c", "reserved additional info"),
        ("", "empty input"),
        ("43", "truncated byte string"),
        ("9bffffffffffffffff", "absurd array length"),
        ("82", "truncated array"),
    ],
)
def test_decoder_rejects_non_canonical_or_malformed(hexed, reason):
    with pytest.raises(FormatError):
        decode_dagcbor(bytes.fromhex(hexed))


def test_nesting_limit():
    deep = bytes.fromhex("81") * (MAX_DEPTH + 2) + b"\x00"
    with pytest.raises(FormatError, match="nesting"):
        decode_dagcbor(deep)
    ok = bytes.fromhex("81") * MAX_DEPTH + b"\x00"
    assert decode_dagcbor(ok) is not None


def test_encoder_refuses_what_dag_cbor_cannot_hold():
    with pytest.raises(ValueError):
        encode_dagcbor(1 << 64)
    with pytest.raises(ValueError):
        encode_dagcbor(float("nan"))
    with pytest.raises(TypeError):
        encode_dagcbor({1: 2})
    with pytest.raises(TypeError):
        encode_dagcbor({"a": object()})


_leaf = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(1 << 64), max_value=(1 << 64) - 1)
    | st.binary(max_size=40)
    | st.text(max_size=20)
    | st.floats(allow_nan=False, allow_infinity=False)
)
_values = st.recursive(
    _leaf,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=25,
)


@settings(max_examples=300)
@given(_values)
def test_round_trip_is_identity_and_canonical(value):
    encoded = encode_dagcbor(value)
    decoded = decode_dagcbor(encoded)
    assert decoded == value
    assert encode_dagcbor(decoded) == encoded


@settings(max_examples=500)
@given(st.binary(max_size=64))
def test_random_bytes_raise_only_format_error(data):
    try:
        value = decode_dagcbor(data)
    except FormatError:
        return
    # Whatever decodes must be canonical: re-encoding gives the same bytes.
    assert encode_dagcbor(value) == data
