"""Signing on threads and hashing beside the writes change nothing a reader sees.

Items are signed on two threads and a large object's re-check (the SHA-384 its signature
covers) runs on a worker while the bundle is written: the bundle still holds the items in plan
order, each verifies, each data item carries exactly its file; and a file changed between
signing and writing is still refused before the bundle is renamed into place.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import odfweb3_arweave.publish.bundle_target as bundle_target
from odfweb3.errors import FormatError, HashMismatch, IntegrityError
from odfweb3.odf.builder import create_root_dataset
from odfweb3.publish.execute import publish_dataset
from odfweb3_arweave.formats.ans104 import iter_bundle
from odfweb3_arweave.publish.bundle_target import BundleTarget
from odfweb3_arweave.wallet import Wallet


def _data_files(ds: Path) -> dict[bytes, str]:
    return {p.read_bytes(): p.name for p in sorted((ds / "data").iterdir())}


def test_bundle_items_verify_and_carry_their_files(tmp_path: Path, session_wallet: Wallet) -> None:
    ds = tmp_path / "ds"
    create_root_dataset(ds, blocks=4, data_bytes=6_000_000, seed=3, fsync=False)  # 1.5 MB files
    out = tmp_path / "out"
    publish_dataset(ds, BundleTarget(out, session_wallet))
    (bundle,) = out.glob("*.bundle")
    with open(bundle, "rb") as f:
        items = list(iter_bundle(f, verify=True))  # every signature and id checked
    files = _data_files(ds)
    carried = [item.data for item in items if item.data in files]
    assert len(carried) == len(files)  # each large file once, byte for byte
    assert {files[data] for data in carried} == set(files.values())


# 2 MB files: the write's check runs on the hasher thread; 100 KB: inline.
@pytest.mark.parametrize("data_bytes", [4_000_000, 200_000])
@pytest.mark.parametrize("change", ["flip", "grow", "shrink"])
def test_a_file_changed_after_signing_is_refused_at_write(
    tmp_path: Path,
    session_wallet: Wallet,
    monkeypatch: pytest.MonkeyPatch,
    data_bytes: int,
    change: str,
) -> None:
    # The write re-reads each object and checks the SHA-384 its signature covers (not the
    # SHA3-256 again): any change between signing and writing is still refused.
    ds = tmp_path / "ds"
    create_root_dataset(ds, blocks=2, data_bytes=data_bytes, seed=4, fsync=False)
    victim = max((ds / "data").iterdir(), key=lambda p: p.stat().st_size)
    original = bundle_target.write_bundle_file

    def corrupt_then_write(*args: object, **kwargs: object) -> object:
        data = bytearray(victim.read_bytes())
        if change == "flip":
            data[len(data) // 2] ^= 1  # same size, different bytes, after the signatures
        elif change == "grow":
            data += b"x"
        else:
            del data[-1]
        victim.write_bytes(bytes(data))
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(bundle_target, "write_bundle_file", corrupt_then_write)
    out = tmp_path / "out"
    with pytest.raises((HashMismatch, IntegrityError, FormatError)) as caught:
        publish_dataset(ds, BundleTarget(out, session_wallet))
    if change == "flip":
        assert isinstance(caught.value, HashMismatch)
        assert "changed between signing and writing" in str(caught.value)
    assert not list(out.glob("*.bundle"))  # nothing renamed into place
