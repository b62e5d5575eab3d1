"""``bundle:DIR`` as a replica: verify, pull and log read the offline Arweave output.

Nothing in the directory is trusted: a flipped byte, or an upload record signed by
another wallet dropped beside the publisher's bundles, is refused in one line.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3.errors import HashMismatch, ReplicaMismatch, SignatureError
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.execute import publish_dataset
from odfweb3_arweave.publish.bundle_target import BundleTarget
from odfweb3_arweave.read.bundle_replica import open_bundle_dir


def run(capsys, tmp_path: Path, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv), env={"HOME": str(tmp_path / "home")})
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def published(tmp_path: Path, fixed_wallet):
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=40_000, seed=71).path
    out = tmp_path / "ar"
    publish_dataset(ds, BundleTarget(out, fixed_wallet))
    append_blocks(ds, 1, data_bytes=3_000, seed=72)
    second = publish_dataset(ds, BundleTarget(out, fixed_wallet))
    return ds, out, second


def test_verify_pull_and_log_a_bundle_dir(capsys, tmp_path, published):
    ds, out, second = published
    replica = open_bundle_dir(f"bundle:{out}")
    assert replica.head() == second.plan.head
    assert replica.record_id == second.state.record["recordId"]
    code, text, err = run(
        capsys, tmp_path, "verify", str(ds), "--against", f"bundle:{out}", "--deep"
    )
    assert code == 0, err
    assert "identical" in text and "objects re-hashed" in text
    code, text, err = run(capsys, tmp_path, "pull", f"bundle:{out}", str(tmp_path / "copy"))
    assert code == 0, err
    assert (tmp_path / "copy" / "refs" / "head").read_text().strip() == multihash_to_str(
        second.plan.head
    )
    code, text, _ = run(capsys, tmp_path, "log", f"bundle:{out}", "--json")
    assert code == 0 and json.loads(text)["blocks"][0]["hash"] == multihash_to_str(second.plan.head)
    gone = f"bundle:{tmp_path / 'nope'}"
    code, text, _ = run(capsys, tmp_path, "verify", str(ds), "--against", gone)
    assert code == 2 and f"{gone}: unreachable: {gone}: no such directory" in text


def test_a_flipped_byte_is_refused(tmp_path, published):
    _, out, second = published
    bundle = out / f"{second.state.record['recordId']}.bundle"
    data = bytearray(bundle.read_bytes())
    data[len(data) // 2] ^= 0x01
    bundle.write_bytes(bytes(data))
    with pytest.raises((SignatureError, ReplicaMismatch, HashMismatch), match=bundle.name):
        open_bundle_dir(f"bundle:{out}")


def test_a_flipped_signature_byte_is_one_line(tmp_path, published):
    # A byte of the first item's signature: its id is no longer SHA-256(signature).
    _, out, second = published
    bundle = out / f"{second.state.record['recordId']}.bundle"
    data = bytearray(bundle.read_bytes())
    count = int.from_bytes(data[:32], "little")
    data[32 + 64 * count + 2 + 10] ^= 0x01
    bundle.write_bytes(bytes(data))
    with pytest.raises(HashMismatch, match=f"{bundle.name}: bundle item 0 id"):
        open_bundle_dir(f"bundle:{out}")


def test_a_record_from_another_wallet_is_refused(tmp_path, published, session_wallet):
    ds, out, _ = published
    other = tmp_path / "other"
    shutil.copytree(ds, tmp_path / "ds2")
    append_blocks(tmp_path / "ds2", 1, data_bytes=1_000, seed=73)
    publish_dataset(tmp_path / "ds2", BundleTarget(other, session_wallet))
    for bundle in other.glob("*.bundle"):
        shutil.copy(bundle, out / bundle.name)
    with pytest.raises(ReplicaMismatch, match="different wallets"):
        open_bundle_dir(f"bundle:{out}")
