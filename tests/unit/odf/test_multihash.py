import hashlib
import io

import pytest
from multiformats import multibase

from odfweb3.errors import FormatError, HashMismatch
from odfweb3.odf.multihash import (
    SHA2_256,
    hash_bytes,
    hash_file,
    hash_stream,
    multihash_from_str,
    multihash_to_str,
    split_multihash,
    verify_bytes,
)


def test_sha3_multihash_and_base16_text():
    mh = hash_bytes(b"hello")
    assert mh[:2] == b"\x16\x20"
    assert mh[2:] == hashlib.sha3_256(b"hello").digest()
    text = multihash_to_str(mh)
    assert text.startswith("f1620") and len(text) == 69
    assert multihash_from_str(text) == mh


@pytest.mark.parametrize("base", ["base32", "base58btc", "base64url", "base16upper", "base36"])
def test_reads_every_final_multibase(base):
    mh = hash_bytes(b"odf")
    assert multihash_from_str(multibase.encode(mh, base)) == mh


def test_sha2_accepted():
    mh = hash_bytes(b"x", SHA2_256)
    assert split_multihash(mh) == (0x12, hashlib.sha256(b"x").digest())


@pytest.mark.parametrize(
    "text", ["", "f", "f1620", "zzzz", "f1120" + "00" * 32, "f1621" + "00" * 33, "hello world"]
)
def test_bad_text_is_format_error(text):
    with pytest.raises(FormatError):
        multihash_from_str(text)


def test_stream_and_file_hash_agree(tmp_path):
    data = bytes(range(256)) * 5000
    p = tmp_path / "f"
    p.write_bytes(data)
    assert hash_file(p) == (hash_bytes(data), len(data))
    assert hash_stream(io.BytesIO(data)) == (hash_bytes(data), len(data))


def test_verify_bytes_raises_hash_mismatch():
    good = hash_bytes(b"a")
    verify_bytes(b"a", good)
    with pytest.raises(HashMismatch) as ei:
        verify_bytes(b"b", good, "data/x")
    assert ei.value.expected == multihash_to_str(good)
    assert "data/x" in str(ei.value)
