"""Encrypted bundle:DIR publishes (public-drive mode): every data item is segmented
ciphertext, the key envelope is an item of the bundle named by the record, nothing in
plaintext is written, and a recipient decrypts every object the manifest names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3.crypto.envelope import decode_envelope, open_envelope
from odfweb3.crypto.segments import decrypt_bytes, decrypt_object
from odfweb3.errors import DecryptionError
from odfweb3.odf.builder import append_blocks
from odfweb3.odf.multihash import multihash_from_str, multihash_to_str
from odfweb3.publish.execute import publish_dataset
from odfweb3_arweave.formats.ans104 import DataItem, iter_bundle
from odfweb3_arweave.formats.arfs import parse_file_metadata, tag_value
from odfweb3_arweave.formats.manifest import decode_manifest
from odfweb3_arweave.formats.record import decode_record
from odfweb3_arweave.publish.bundle_plan import KEY_ENVELOPE_TAG
from odfweb3_arweave.publish.bundle_target import BundleTarget
from tests.support.encrypted import make_encrypted_world

from .conftest import FIXED_WALLET_PATH


def read_bundle(path: Path) -> list[DataItem]:
    with open(path, "rb") as f:
        return list(iter_bundle(f))  # verifies offsets, ids and every signature


def tags_of(item: DataItem) -> dict[str, str]:
    return dict(t.text() for t in item.tags)


@pytest.fixture
def world(tmp_path, monkeypatch):
    return make_encrypted_world(tmp_path, monkeypatch)


def _open_bundle(out: Path, record_id: str):
    items = read_bundle(out / f"{record_id}.bundle")
    by_id = {i.id_b64: i for i in items}
    record_item = items[-1]
    record = decode_record(record_item.tags, record_item.data)
    return items, by_id, record


def test_encrypted_bundle_leaks_nothing_and_decrypts(tmp_path, fixed_wallet, world):
    out = tmp_path / "out"
    target = BundleTarget(out, fixed_wallet, sealer=world.sealer)
    first = publish_dataset(world.ds, target, sealer=world.sealer)
    summary = json.loads((out / "publish.json").read_text())
    assert summary["extra"]["encrypted"] is True and summary["extra"]["keyEpoch"] == 1
    assert "descriptorId" not in summary["extra"]

    # --- leak scan over every byte written -----------------------------------------------
    written = b"".join(p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file())
    assert len(written) > 300_000
    world.assert_no_leak(written, str(out))

    # --- the key envelope item, named by the record ----------------------------------------
    items, by_id, record = _open_bundle(out, first.state.record["recordId"])
    envelope_items = [i for i in items if tags_of(i).get(KEY_ENVELOPE_TAG) == "1"]
    assert len(envelope_items) == 1
    env_item = envelope_items[0]
    assert tags_of(env_item)["Content-Type"] == "application/json"
    assert tags_of(env_item)["ODF-Dataset-Id"] == world.did
    assert record.key_envelope == env_item.id_b64 == summary["keyEnvelope"]
    ring = open_envelope(decode_envelope(env_item.data), world.alice)
    assert not any(tags_of(i).get("Content-Type") == "application/ld+json" for i in items)

    # --- the manifest maps ODF paths to ciphertext items; a recipient decrypts each -------
    manifest_item = by_id[record.manifest_id]
    manifest = decode_manifest(manifest_item.data)
    assert manifest.index == "refs/head"
    head_ct = by_id[manifest.paths["refs/head"]].data
    assert decrypt_bytes(head_ct, ring, "refs/head").decode() == multihash_to_str(world.built.head)
    checked = 0
    for path, item_id in manifest.paths.items():
        if path == "refs/head":
            continue
        data = by_id[item_id].data
        expected = multihash_from_str(path.split("/", 1)[1])
        plain = b"".join(decrypt_object([data], ring, path, expected))
        assert plain == (world.ds / path).read_bytes()
        checked += 1
    assert checked == len(first.plan.objects)

    # ArFS metadata (public drive) names the file by its ODF path; size = ciphertext size
    some_path = next(p for p in manifest.paths if p.startswith("data/"))
    meta_id = record.added[some_path].meta_item_id
    meta = parse_file_metadata(by_id[meta_id].tags, by_id[meta_id].data, meta_id)
    assert meta.name == some_path.split("/", 1)[1]
    assert meta.size == len(by_id[manifest.paths[some_path]].data)
    assert tag_value(by_id[meta_id].tags, "Drive-Privacy") in (None, "public")

    # a ciphertext under another path fails
    data_paths = [p for p in manifest.paths if p.startswith("data/")]
    with pytest.raises(DecryptionError):
        decrypt_bytes(by_id[manifest.paths[data_paths[0]]].data, ring, "data/" + "f" * 68)

    # --- incremental: only the new objects, still encrypted, still verified ------------------
    append_blocks(world.ds, 1, data_bytes=7000, fsync=False)
    second = publish_dataset(
        world.ds, BundleTarget(out, fixed_wallet, sealer=world.sealer), sealer=world.sealer
    )
    _items2, by_id2, record2 = _open_bundle(out, second.state.record["recordId"])
    assert record2.prev_upload == first.state.record["recordId"]
    assert set(record2.added) == {o.path for o in second.plan.send} | {"refs/head"}
    for path, added in record2.added.items():
        data = by_id2[added.data_item_id].data
        if path == "refs/head":
            assert decrypt_bytes(data, ring, path).decode() == multihash_to_str(second.plan.head)
        else:
            expected = multihash_from_str(path.split("/", 1)[1])
            assert (
                b"".join(decrypt_object([data], ring, path, expected))
                == (world.ds / path).read_bytes()
            )
    world.assert_no_leak(
        b"".join(p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()), str(out)
    )


def test_switching_to_encrypted_resends_everything(tmp_path, fixed_wallet, world):
    out = tmp_path / "out"
    plain = publish_dataset(world.ds, BundleTarget(out, fixed_wallet))
    enc = publish_dataset(
        world.ds, BundleTarget(out, fixed_wallet, sealer=world.sealer), sealer=world.sealer
    )
    assert any("not encrypted" in n for n in enc.notes)
    assert {o.path for o in enc.plan.send} == {o.path for o in plain.plan.objects}
    _items, by_id, record = _open_bundle(out, enc.state.record["recordId"])
    manifest = decode_manifest(by_id[record.manifest_id].data)
    for path, item_id in manifest.paths.items():  # no plaintext revision left in the manifest
        assert item_id in by_id, path


def test_switching_to_encrypted_with_new_blocks_resends_everything(tmp_path, fixed_wallet, world):
    """The target holds an ancestor of our head in plaintext: the encrypted publish is
    "ahead", and must still send every object, not only the new ones (an ahead plan skips
    what the target's head covers only when the target holds those objects as we would)."""
    out = tmp_path / "out"
    publish_dataset(world.ds, BundleTarget(out, fixed_wallet))
    append_blocks(world.ds, 1, data_bytes=2000, seed=9)
    enc = publish_dataset(
        world.ds, BundleTarget(out, fixed_wallet, sealer=world.sealer), sealer=world.sealer
    )
    assert enc.plan.relation == "ahead" and any("not encrypted" in n for n in enc.notes)
    assert {o.path for o in enc.plan.send} == {o.path for o in enc.plan.objects}
    _items, by_id, record = _open_bundle(out, enc.state.record["recordId"])
    manifest = decode_manifest(by_id[record.manifest_id].data)
    for path, item_id in manifest.paths.items():  # every path a ciphertext item of this bundle
        assert item_id in by_id, path


def test_cli_publish_encrypt_to_bundle(tmp_path, capsys, world):
    env = {
        "ODFWEB3_KEYSTORE": str(world.keys_dir),
        "ODFWEB3_STATE_DIR": str(tmp_path / "state"),
        "HOME": str(tmp_path),
    }
    out = tmp_path / "cli-out"
    argv = ["-vv", "--json", "publish", str(world.ds), "--to", f"bundle:{out}", "--encrypt"]
    code = main([*argv, "--wallet", str(FIXED_WALLET_PATH)], env=env)
    stdout, stderr = capsys.readouterr()
    assert code == 0, stderr
    assert json.loads(stdout)["keyEnvelope"]
    world.assert_no_leak((stdout + stderr).encode(), "CLI output")
    world.assert_no_leak(
        b"".join(p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()), str(out)
    )
