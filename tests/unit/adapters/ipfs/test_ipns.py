"""IPNS records: golden bytes, round trips, and every verification step of the spec."""

from __future__ import annotations

import contextlib
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odfweb3.errors import FormatError, ResolutionError, SignatureError
from odfweb3_ipfs.formats.dagcbor import decode_dagcbor, encode_dagcbor
from odfweb3_ipfs.formats.ipns import (
    DEFAULT_TTL_NS,
    MAX_RECORD_SIZE,
    IpnsRecord,
    OdfExtension,
    RecordExpired,
    create_record,
    decode_record,
    encode_record,
    format_validity,
    name_of_private_key,
    parse_validity,
    verify_record,
)
from odfweb3_ipfs.formats.libp2p_keys import (
    private_key_from_protobuf,
    public_key_bytes,
    public_key_to_protobuf,
)

# Ed25519 key from the libp2p peer-ids spec test vectors.
SPEC_KEY = private_key_from_protobuf(
    bytes.fromhex(
        "080112407e0830617c4a7de83925dfb2694556b12936c477a0e1feb2e148ec9da60fee7d"
        "1ed1e8fae2c4a144b8be8fd4b47bf3d3b34b871c3cacf6010f0e42d474fce27e"
    )
)
SPEC_NAME = "k51qzi5uqu5dgy8qsq67hbz73jqkw87l3fgf4a91qb0d9b5173tir7n4vxk1oe"
VALUE = "/ipfs/bafkqadtwgiww63tmpeqhezldn5zgi"
EOL = "2099-01-02T03:04:05.123456789Z"
# Written by the npm `ipns` package (10.1.6, createIPNSRecordWithExpiration) with
# SPEC_KEY, VALUE, sequence 7, EOL and TTL 300 s: a V1+V2 record. Ed25519 signatures
# are deterministic, so an exact byte match means the same protobuf, CBOR and signatures.
JS_IPNS_V1V2 = bytes.fromhex(
    "0a242f697066732f6261666b7161647477676977773633746d70657168657a6c646e357a6769124090a9783212aef7ed"
    "f233c663ac63d923fbc9c33b25f84099200165597533259c6db394573b2d18c17919d45474c514328f4a90e1220fe64c"
    "4a8a70410ccf94071800221e323039392d30312d30325430333a30343a30352e3132333435363738395a28073080f092"
    "cbdd084240d15f2bbff948cc99af05e9031269aa19e4e320f08e0e95b895d523d9c15df25246b7fa604f89811fcb49f0"
    "d9d92026405d5837340063bdcfac1b4d42f29b040e4a7ba56354544c1b00000045d964b8006556616c756558242f6970"
    "66732f6261666b7161647477676977773633746d70657168657a6c646e357a67696853657175656e6365076856616c69"
    "64697479581e323039392d30312d30325430333a30343a30352e3132333435363738395a6c56616c6964697479547970"
    "6500"
)
# The same record written V2-only (v1Compatible: false) is its fields 8 and 9 alone.
JS_IPNS_V2 = JS_IPNS_V1V2[JS_IPNS_V1V2.index(bytes.fromhex("4240d15f")) :]

NOW = datetime(2030, 1, 1, tzinfo=UTC)
DATASET_ID = "did:odf:fed01" + "ab" * 32
HEAD = "f1620" + "11" * 32
PREV = "f1620" + "22" * 32


def _odf_record(sequence: int = 1, **kwargs: object) -> IpnsRecord:
    ext = OdfExtension(DATASET_ID, HEAD, PREV, {"schema": 1})
    return create_record(SPEC_KEY, VALUE, sequence, extensions={"_odf": ext}, now=NOW, **kwargs)


def _with_entry(record: IpnsRecord, **changes: object) -> bytes:
    return encode_record(replace(record, entry=replace(record.entry, **changes)))


# --- golden bytes -------------------------------------------------------------------


def test_v1v2_record_is_byte_identical_to_js_ipns():
    record = create_record(SPEC_KEY, VALUE, 7, parse_validity(EOL.encode()), 300_000_000_000)
    assert encode_record(record) == JS_IPNS_V1V2


def test_v2_only_record_is_byte_identical_to_js_ipns():
    record = create_record(
        SPEC_KEY, VALUE, 7, parse_validity(EOL.encode()), 300_000_000_000, v1_compatible=False
    )
    assert encode_record(record) == JS_IPNS_V2


def test_js_ipns_record_decodes_and_verifies():
    for data in (JS_IPNS_V1V2, JS_IPNS_V2):
        record = verify_record(data, SPEC_NAME, NOW)
        assert record.value_text == VALUE
        assert record.sequence == 7
        assert record.ttl_ns == 300_000_000_000
        assert record.validity == EOL.encode()
        assert record.odf is None and dict(record.extensions) == {}


# --- validity formatting ------------------------------------------------------------


def test_validity_format_matches_spec_example_and_go_layout():
    assert format_validity(1) == b"1970-01-01T00:00:00.000000001Z"
    moment = datetime(2024, 2, 29, 23, 59, 58, 250000, tzinfo=UTC)
    assert format_validity(moment) == b"2024-02-29T23:59:58.250000000Z"


@pytest.mark.parametrize(
    ("text", "expected_ns"),
    [
        ("1970-01-01T00:00:00.000000001Z", 1),
        ("1970-01-01T00:00:01Z", 1_000_000_000),
        ("1970-01-01T01:00:00+01:00", 0),
        ("1969-12-31T23:00:00.5-01:00", 500_000_000),
        (EOL, parse_validity(EOL.encode())),
    ],
)
def test_validity_parse(text, expected_ns):
    assert parse_validity(text.encode()) == expected_ns


@pytest.mark.parametrize(
    "text", ["", "2024-13-01T00:00:00Z", "2024-01-01 00:00:00Z", "2024-01-01T00:00:60Z", "yes"]
)
def test_validity_parse_rejects(text):
    with pytest.raises(FormatError):
        parse_validity(text.encode())


# --- creation and round trips -------------------------------------------------------


def test_round_trip_with_odf_extension():
    record = _odf_record(sequence=3)
    data = encode_record(record)
    decoded = decode_record(data)
    assert decoded == record
    assert decoded.odf == OdfExtension(DATASET_ID, HEAD, PREV, {"schema": 1})
    assert decoded.expires_at == NOW + timedelta(hours=48)
    assert decoded.ttl_ns == DEFAULT_TTL_NS
    assert decoded.entry.pub_key is None  # Ed25519: key inlined in the name
    doc = decode_dagcbor(decoded.entry.data or b"")
    assert isinstance(doc, dict)
    assert list(doc) == ["TTL", "_odf", "Value", "Sequence", "Validity", "ValidityType"]
    assert verify_record(data, name_of_private_key(SPEC_KEY), NOW) == record


def test_first_publish_has_null_prev_head():
    ext = OdfExtension(DATASET_ID, HEAD)
    record = create_record(SPEC_KEY, VALUE, 0, extensions={"_odf": ext}, now=NOW)
    assert verify_record(encode_record(record), SPEC_NAME, NOW).odf == ext


def test_v1_signature_is_over_value_validity_and_eol_name():
    record = create_record(SPEC_KEY, VALUE, 1, now=NOW)
    signed = VALUE.encode() + record.validity + b"EOL"
    SPEC_KEY.public_key().verify(record.entry.signature_v1 or b"", signed)


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("ipfs/bafy", 1), {}),
        ((b"", 1), {}),
        ((VALUE, -1), {}),
        ((VALUE, 1 << 63), {}),
        ((VALUE, 1), {"ttl_ns": -5}),
        ((VALUE, 1), {"extensions": {"Value": b"x"}}),
        ((VALUE, 1), {"validity": datetime(2030, 1, 1)}),  # naive datetime
    ],
)
def test_create_rejects_bad_arguments(args, kwargs):
    with pytest.raises(ValueError):
        create_record(SPEC_KEY, *args, now=NOW, **kwargs)


def _padded(n: int) -> dict[str, object]:
    return {"_pad": b"x" * n}


def test_size_limit_on_create_and_parse():
    base = len(encode_record(create_record(SPEC_KEY, VALUE, 1, extensions=_padded(9000), now=NOW)))
    exact = 9000 + MAX_RECORD_SIZE - base
    fits = create_record(SPEC_KEY, VALUE, 1, extensions=_padded(exact), now=NOW)
    assert len(encode_record(fits)) == MAX_RECORD_SIZE
    assert verify_record(encode_record(fits), SPEC_NAME, NOW).sequence == 1
    with pytest.raises(FormatError, match="10240"):
        create_record(SPEC_KEY, VALUE, 1, extensions=_padded(exact + 1), now=NOW)
    oversized = encode_record(fits) + b"\x50\x00"  # an unknown empty field 10 appended
    with pytest.raises(FormatError, match="limit"):
        decode_record(oversized)
    with pytest.raises(FormatError, match="limit"):
        verify_record(oversized, SPEC_NAME, NOW)


# --- verification -------------------------------------------------------------------


def test_tampered_protobuf_value_is_rejected():
    record = _odf_record()
    with pytest.raises(SignatureError, match="value"):
        verify_record(_with_entry(record, value=b"/ipfs/bafkqaaa"), SPEC_NAME, NOW)


def test_tampered_protobuf_sequence_is_rejected():
    with pytest.raises(SignatureError, match="sequence"):
        verify_record(_with_entry(_odf_record(), sequence=99), SPEC_NAME, NOW)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (b"hSequence\x01", b"hSequence\x02"),  # signed sequence
        (HEAD.encode(), PREV.encode()),  # _odf.head
        (DATASET_ID.encode(), DATASET_ID.replace("ab", "cd").encode()),  # _odf.datasetId
    ],
)
def test_tampered_signed_data_is_rejected(old, new):
    record = _odf_record()
    data = record.entry.data or b""
    assert old in data
    with pytest.raises(SignatureError, match="signatureV2"):
        verify_record(_with_entry(record, data=data.replace(old, new, 1)), SPEC_NAME, NOW)


def test_v1_fields_differing_from_cbor_with_both_signatures_valid_is_rejected():
    # Spec test vector 3: both signatures valid, but 'value' differs between pb and CBOR.
    record = _odf_record()
    other = b"/ipfs/bafkqaaa"
    sig_v1 = SPEC_KEY.sign(other + record.validity + b"EOL")
    with pytest.raises(SignatureError, match="value"):
        verify_record(_with_entry(record, value=other, signature_v1=sig_v1), SPEC_NAME, NOW)


def test_broken_v1_signature_with_valid_v2_is_accepted():
    # Spec test vector 5: only signatureV2 valid -> record valid (V1 is never verified).
    record = _odf_record()
    data = _with_entry(record, signature_v1=bytes(64))
    assert verify_record(data, SPEC_NAME, NOW).value_text == VALUE


def test_v1_only_record_is_rejected():
    # Spec test vector 1: a V1-only record is invalid.
    record = _odf_record()
    data = _with_entry(record, signature_v2=None, data=None)
    with pytest.raises(SignatureError, match="signatureV2"):
        verify_record(data, SPEC_NAME, NOW)
    with pytest.raises(FormatError):
        decode_record(data)


def test_bad_signature_v2_is_rejected():
    sig = bytearray(_odf_record().entry.signature_v2 or b"")
    sig[0] ^= 0x01
    with pytest.raises(SignatureError):
        verify_record(_with_entry(_odf_record(), signature_v2=bytes(sig)), SPEC_NAME, NOW)


def test_wrong_name_is_rejected():
    other = name_of_private_key(Ed25519PrivateKey.generate())
    with pytest.raises(SignatureError):
        verify_record(encode_record(_odf_record()), other, NOW)


def test_embedded_public_key_must_match_the_name():
    record = _odf_record()
    own = public_key_to_protobuf(public_key_bytes(SPEC_KEY))
    assert verify_record(_with_entry(record, pub_key=own), SPEC_NAME, NOW).sequence == 1
    stranger = public_key_to_protobuf(public_key_bytes(Ed25519PrivateKey.generate()))
    with pytest.raises(SignatureError, match="embedded public key"):
        verify_record(_with_entry(record, pub_key=stranger), SPEC_NAME, NOW)


def test_sha256_name_without_public_key_is_rejected():
    with pytest.raises(SignatureError, match="no public key"):
        verify_record(
            encode_record(_odf_record()), "QmWEekX7EZLUd9VXRNMRXW3LXe4F6x7mB8oPxY5XLptrBq", NOW
        )


def test_expiry_boundary():
    record = create_record(SPEC_KEY, VALUE, 1, validity=timedelta(hours=1), now=NOW)
    data = encode_record(record)
    assert verify_record(data, SPEC_NAME, NOW + timedelta(hours=1)).sequence == 1
    with pytest.raises(RecordExpired) as info:
        verify_record(data, SPEC_NAME, NOW + timedelta(hours=1, microseconds=1))
    assert isinstance(info.value, ResolutionError)
    assert "expired" in str(info.value)


def test_unknown_protobuf_fields_and_cbor_keys_are_ignored():
    record = create_record(
        SPEC_KEY, VALUE, 4, extensions={"_other": {"x": [1, 2]}, "Zzz": True}, now=NOW
    )
    data = encode_record(record) + b"\x50\x05" + b"\x62\x03abc"  # field 10 varint, 12 bytes
    verified = verify_record(data, SPEC_NAME, NOW)
    assert verified.sequence == 4 and verified.odf is None
    assert dict(verified.extensions) == {"_other": {"x": [1, 2]}, "Zzz": True}


@pytest.mark.parametrize(
    "odf",
    [
        "not a map",
        {"head": HEAD},
        {"datasetId": "did:web:x", "head": HEAD},
        {"datasetId": DATASET_ID, "head": "zzz-not-multibase"},
        {"datasetId": DATASET_ID, "head": HEAD, "prevHead": 5},
    ],
)
def test_malformed_odf_extension_is_a_format_error(odf):
    with pytest.raises(FormatError, match="_odf"):
        create_record(SPEC_KEY, VALUE, 1, extensions={"_odf": odf}, now=NOW)
    # The same map arriving from elsewhere: written under another key, then renamed.
    record = create_record(SPEC_KEY, VALUE, 1, extensions={"_odX": odf}, now=NOW)
    data = (record.entry.data or b"").replace(b"_odX", b"_odf")
    with pytest.raises(FormatError, match="_odf"):
        decode_record(_with_entry(record, data=data))


@pytest.mark.parametrize(
    "document",
    [
        {"Value": "text", "Validity": b"x", "ValidityType": 0, "Sequence": 0, "TTL": 0},
        {"Validity": b"x", "ValidityType": 0, "Sequence": 0, "TTL": 0},
        {"Value": b"/ipfs/x", "Validity": b"x", "ValidityType": 0, "Sequence": -1, "TTL": 0},
        [1, 2],
    ],
)
def test_cbor_document_shape_is_checked(document):
    data = b"\x42\x02\x00\x00" + b"\x4a" + bytes([len(encode_dagcbor(document))])
    data += encode_dagcbor(document)
    with pytest.raises(FormatError):
        decode_record(data)


def test_unsupported_validity_type_is_rejected():
    document = {
        "Value": VALUE.encode(),
        "Validity": EOL.encode(),
        "ValidityType": 1,
        "Sequence": 0,
        "TTL": 0,
    }
    data = encode_dagcbor(document)
    sig = SPEC_KEY.sign(b"ipns-signature:" + data)
    raw = b"\x42\x40" + sig + b"\x4a" + bytes([len(data)]) + data
    with pytest.raises(FormatError, match="ValidityType"):
        verify_record(raw, SPEC_NAME, NOW)


# --- fuzzing: only our error types ----------------------------------------------------

_OURS = (FormatError, SignatureError, RecordExpired)
_VALID = encode_record(_odf_record())


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_decode_random_bytes_raises_only_our_errors(data):
    with contextlib.suppress(FormatError):
        decode_record(data)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.integers(0, len(_VALID) - 1), st.integers(0, 255)), min_size=1, max_size=4
    ),
    st.integers(0, len(_VALID)),
)
def test_mutated_records_raise_only_our_errors(edits, cut):
    data = bytearray(_VALID)
    for pos, byte in edits:
        data[pos] = byte
    with contextlib.suppress(_OURS):
        verify_record(bytes(data[:cut] if cut < 40 else data), SPEC_NAME, NOW)
