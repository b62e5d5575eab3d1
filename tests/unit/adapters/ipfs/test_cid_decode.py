"""Cid.decode's fast path (v1, raw or dag-pb, sha2-256) gives the same CID as the
full varint parse, and every other shape still takes the full parse."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odfweb3.errors import FormatError
from odfweb3_ipfs.formats.cid import CODEC_DAG_PB, CODEC_RAW, Cid, encode_uvarint


def _fields(cid: Cid) -> tuple[bytes, int, int, int, bytes, str]:
    return (cid.raw, cid.version, cid.codec, cid.hash_code, cid.multihash, cid.encode())


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64), st.sampled_from([CODEC_RAW, CODEC_DAG_PB, 0x71, 0x0129]))
def test_decode_equals_the_binary_parse(data: bytes, codec: int) -> None:
    made = Cid.sha256(hashlib.sha256(data).digest(), version=1, codec=codec)
    text = made.encode()
    assert _fields(Cid.decode(text)) == _fields(made)
    assert _fields(Cid.decode(text)) == _fields(Cid(made.raw))


def test_cidv0_and_other_hashes_keep_the_full_parse() -> None:
    v0 = Cid.sha256(hashlib.sha256(b"x").digest(), version=0, codec=CODEC_DAG_PB)
    assert _fields(Cid.decode(v0.encode())) == _fields(v0)
    identity = Cid(b"\x01\x55\x00\x03abc")
    assert Cid.decode(identity.encode()).hash_code == 0


def test_a_36_byte_cid_with_a_wrong_length_byte_is_refused() -> None:
    raw = b"\x01\x55\x12\x21" + bytes(32)  # says 33 digest bytes, 32 follow
    with pytest.raises(FormatError):
        Cid.decode(_b32(raw))


def _b32(raw: bytes) -> str:
    import base64

    return "b" + base64.b32encode(raw).decode().lower().rstrip("=")


def test_uvarint_codecs_above_one_byte_decode() -> None:
    raw = b"\x01" + encode_uvarint(0x0129) + b"\x12\x20" + bytes(32)
    assert Cid.decode(_b32(raw)).codec == 0x0129


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=1, max_size=80))
def test_the_text_form_is_rfc_4648_base32(raw: bytes) -> None:
    # Any CIDv1 byte string (the encoder does not parse: every length takes every padding)
    from odfweb3_ipfs.formats.cid import _b32_lower_decode, _b32_lower_encode

    assert "b" + _b32_lower_encode(raw) == _b32(raw)
    assert _b32_lower_decode(_b32_lower_encode(raw)) == raw
