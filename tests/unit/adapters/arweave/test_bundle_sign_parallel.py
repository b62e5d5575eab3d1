"""Signing on threads and hashing beside the writes change nothing a reader sees (issue 19).

Items are signed on two threads and a large object's SHA3-256 re-check runs on a worker while
the bundle is written: the bundle still holds the items in plan order, each verifies, each
data item carries exactly its file; and a file changed between signing and writing is still
refused before the bundle is renamed into place.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import odfweb3_arweave.publish.bundle_target as bundle_target
from odfweb3.errors import HashMismatch
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


def test_a_file_changed_after_signing_is_refused_at_write(
    tmp_path: Path, session_wallet: Wallet, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = tmp_path / "ds"
    create_root_dataset(ds, blocks=2, data_bytes=4_000_000, seed=4, fsync=False)  # 2 MB files
    victim = max((ds / "data").iterdir(), key=lambda p: p.stat().st_size)
    original = bundle_target.write_bundle_file

    def corrupt_then_write(*args: object, **kwargs: object) -> object:
        data = bytearray(victim.read_bytes())
        data[len(data) // 2] ^= 1  # same size, different bytes, after the signatures
        victim.write_bytes(bytes(data))
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(bundle_target, "write_bundle_file", corrupt_then_write)
    out = tmp_path / "out"
    with pytest.raises(HashMismatch):
        publish_dataset(ds, BundleTarget(out, session_wallet))
    assert not list(out.glob("*.bundle"))  # nothing renamed into place
