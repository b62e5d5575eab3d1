"""Pure parts of reading an ArFS private drive back: streamed GCM decryption
that releases plaintext only after the tag, and the path -> file map from upload records."""

from __future__ import annotations

import pytest

from odfweb3.errors import DecryptionError, FormatError, ReplicaMismatch, ResolutionError
from odfweb3_arweave.formats.arfs import DriveLayout
from odfweb3_arweave.formats.arfs_private import FileKey, encrypt
from odfweb3_arweave.formats.record import AddedFile, UploadRecord
from odfweb3_arweave.read.private_replica import collect_files, decrypt_to_spool

# McGrew & Viega, "The Galois/Counter Mode of Operation", test cases 13 and 14:
# AES-256, zero key, zero 96-bit IV, no associated data (ArFS uses none).
ZERO_KEY = FileKey(bytes(32))
ZERO_IV = bytes(12)
TC13_TAG = bytes.fromhex("530f8afbc74536b9a963b4f1c4cb738b")
TC14_CT = bytes.fromhex("cea7403d4d606b6e074ec5d3baf39d18")
TC14_TAG = bytes.fromhex("d0d1c8a799996bf0265b98b5d48ab919")


def _chunks(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def _plain(ct: bytes, size: int, chunk: int = 7, **kw: object) -> bytes:
    with decrypt_to_spool(
        ZERO_KEY, ZERO_IV, _chunks(ct, chunk), max_size=size, where="t", **kw
    ) as f:
        return f.read()


def test_gcm_known_answers() -> None:
    assert _plain(TC13_TAG, 0) == b""
    for chunk in (1, 5, 16, 17, 32):  # tags split across chunks in every way
        assert _plain(TC14_CT + TC14_TAG, 16, chunk) == bytes(16)


@pytest.mark.parametrize("chunk", [1, 15, 16, 4096, 1 << 20])
def test_round_trip_spills_to_disk(tmp_path, chunk) -> None:
    key = FileKey(bytes(range(32)))
    plain = bytes(i * 7 % 251 for i in range(100_003))
    iv, ct = encrypt(key, plain)
    assert len(ct) == len(plain) + 16
    with decrypt_to_spool(
        key,
        iv,
        _chunks(ct, chunk),
        max_size=len(plain),
        where="t",
        spool_dir=tmp_path,
        spool_memory=1024,
    ) as f:
        assert f.read() == plain


def test_altered_truncated_and_short_ciphertexts_fail() -> None:
    ct = TC14_CT + TC14_TAG
    for bad in (
        bytes([ct[0] ^ 1]) + ct[1:],  # a flipped bit in the data
        ct[:-1] + bytes([ct[-1] ^ 0x80]),  # in the tag
        ct[:-1],  # truncated
    ):
        with pytest.raises(DecryptionError, match="altered"):
            _plain(bad, 16)
    with pytest.raises(DecryptionError, match="shorter than its GCM tag"):
        _plain(ct[:15], 16)
    wrong = FileKey(bytes(31) + b"\x01")
    with pytest.raises(DecryptionError, match="altered"):
        decrypt_to_spool(wrong, ZERO_IV, [ct], max_size=16, where="t")


def test_oversized_ciphertext_refused_before_decrypting_all() -> None:
    seen: list[int] = []

    def endless():
        while True:
            seen.append(1)
            yield bytes(1000)

    with pytest.raises(ReplicaMismatch, match="longer than 116 bytes"):
        decrypt_to_spool(ZERO_KEY, ZERO_IV, endless(), max_size=100, where="t")
    assert len(seen) == 1


def test_bad_iv_length() -> None:
    with pytest.raises(FormatError, match="Cipher-IV is 11 bytes"):
        decrypt_to_spool(ZERO_KEY, bytes(11), [TC13_TAG], max_size=0, where="t")


def _record(added: dict[str, AddedFile], head: str) -> UploadRecord:
    drive = DriveLayout(
        "00000000-0000-4000-8000-000000000001",
        "00000000-0000-4000-8000-000000000002",
        {"blocks": "00000000-0000-4000-8000-000000000003"},
        "private",
    )
    return UploadRecord(
        dataset_id="did:odf:x",
        head=head,
        prev_head=None,
        prev_upload=None,
        manifest_id="M" * 43,
        drive=drive,
        added=added,
        unix_time=1,
        app_version="0",
    )


def test_collect_files_later_revisions_win() -> None:
    fid = "00000000-0000-4000-8000-0000000000aa"
    head1 = AddedFile("H" * 43, "h" * 43, fid)
    head2 = AddedFile("I" * 43, "i" * 43, fid)
    block = AddedFile("B" * 43, "b" * 43, "00000000-0000-4000-8000-0000000000bb")
    files = collect_files(
        [
            _record({"refs/head": head1, "blocks/f1": block}, "f1"),
            _record({"refs/head": head2}, "f2"),
        ]
    )
    assert files == {"refs/head": head2, "blocks/f1": block}


def test_collect_files_refuses_one_item_under_two_paths() -> None:
    item = AddedFile("B" * 43, "b" * 43, "00000000-0000-4000-8000-0000000000bb")
    with pytest.raises(ResolutionError, match="both blocks/f1 and data/f1"):
        collect_files([_record({"blocks/f1": item}, "f1"), _record({"data/f1": item}, "f2")])
