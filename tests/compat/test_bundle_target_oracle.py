"""Offline Arweave publish (bundle:DIR): full and incremental bundles, checked by us and by
arbundles; every refusal leaves nothing behind; the wallet never leaves its file."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest

from odfweb3.backends import TargetOptions, open_target
from odfweb3.config import load_config
from odfweb3.descriptor.published import CROISSANT_MEDIA_TYPE, DCAT_MEDIA_TYPE
from odfweb3.errors import ConfigError, ConflictError, FormatError, IntegrityError, UsageError
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.multihash import hash_bytes, multihash_from_str, multihash_to_str
from odfweb3.publish.execute import publish_dataset
from odfweb3_arweave.declaration import ArweaveOptions
from odfweb3_arweave.formats.ans104 import DataItem, iter_bundle
from odfweb3_arweave.formats.arfs import parse_file_metadata, tag_value
from odfweb3_arweave.formats.manifest import decode_manifest
from odfweb3_arweave.formats.record import decode_record
from odfweb3_arweave.formats.tags import Tag
from odfweb3_arweave.publish.bundle_target import BundleTarget, objects_of
from odfweb3_arweave.wallet import Wallet

from .conftest import FIXED_WALLET_PATH
from .test_arweave_oracles import oracle


def read_bundle(path: Path) -> list[DataItem]:
    with open(path, "rb") as f:
        return list(iter_bundle(f))  # verifies offsets, ids and every signature


def tags_of(item: DataItem) -> dict[str, str]:
    return dict(t.text() for t in item.tags)


def kinds(items: list[DataItem]) -> list[str]:
    return [tags_of(i).get("Entity-Type") or tags_of(i)["Content-Type"] for i in items]


def check_manifest_covers_dataset(ds: Path, manifest: dict[str, str], items: dict[str, bytes]):
    """Every file of the dataset is in the manifest, mapped to an item with its bytes."""
    on_disk = {
        str(p.relative_to(ds)) for p in ds.rglob("*") if p.is_file() and p.parts[-2] != "info"
    }
    assert set(manifest) == on_disk
    for path, item_id in manifest.items():
        if item_id in items:
            assert items[item_id] == (ds / path).read_bytes(), path


def test_full_then_incremental(tmp_path: Path, fixed_wallet: Wallet) -> None:
    ds = create_root_dataset(tmp_path / "ds", blocks=3, data_bytes=600_000, seed=5).path
    out = tmp_path / "out"
    first = publish_dataset(ds, BundleTarget(out, fixed_wallet))
    n_objects = len(first.plan.objects)
    record1 = first.state.record["recordId"]
    bundle1 = out / f"{record1}.bundle"
    items1 = read_bundle(bundle1)
    # objects' data, their metadata, refs/head data + metadata, drive + 5 folders, manifest,
    # descriptor (its creator the wallet: no publisher configured), the Croissant and DCAT
    # documents, record
    assert len(items1) == 2 * n_objects + 2 + 6 + 5
    assert kinds(items1)[2 * n_objects :] == [
        "text/plain",
        "file",
        "drive",
        *["folder"] * 5,
        "application/x.arweave-manifest+json",
        "application/ld+json",
        CROISSANT_MEDIA_TYPE,
        DCAT_MEDIA_TYPE,
        "application/json",
    ]
    assert items1[-1].id_b64 == record1
    record = decode_record(items1[-1].tags, items1[-1].data)
    assert record.prev_upload is None and record.prev_head is None
    assert record.head == multihash_to_str(first.plan.head)
    assert items1[-5].id_b64 == record.manifest_id == first.upload.locator
    manifest = decode_manifest(items1[-5].data)
    by_id = {i.id_b64: i.data for i in items1}
    check_manifest_covers_dataset(ds, dict(manifest.paths), by_id)
    assert all(pid in by_id for pid in manifest.paths.values())
    # ArFS: every metadata item names its data item; one drive, root + 4 folders under it
    drive_id = record.drive.drive_id
    metas = [i for i in items1 if tags_of(i).get("Entity-Type") == "file"]
    for meta in metas:
        fm = parse_file_metadata(meta.tags, meta.data, meta.id_b64)
        assert fm.drive_id == drive_id and fm.data_tx_id in by_id
        assert len(by_id[fm.data_tx_id]) == fm.size
    folders = [i for i in items1 if tags_of(i).get("Entity-Type") == "folder"]
    assert sorted(json.loads(f.data)["name"] for f in folders[1:]) == sorted(
        ["blocks", "refs", "data", "checkpoints"]
    )
    assert {tag_value(f.tags, "Parent-Folder-Id") for f in folders[1:]} == {
        record.drive.root_folder_id
    }
    for item in items1:  # the data items hold exactly the objects' bytes
        if tags_of(item)["Content-Type"] == "application/octet-stream":
            path = next(p for p, i in manifest.paths.items() if i == item.id_b64)
            assert hash_bytes(item.data) == multihash_from_str(path.split("/")[1])
    # arbundles (independent implementation) verifies the whole bundle
    theirs = oracle("verify-bundle", bundle1)
    assert theirs["valid"] is True and theirs["ids"] == [i.id_b64 for i in items1]

    head1 = first.plan.head
    append_blocks(ds, 1, data_bytes=1000)
    second = publish_dataset(ds, BundleTarget(out, fixed_wallet))
    assert second.plan.relation == "ahead" and len(second.plan.send) == 3
    bundle2 = out / second.upload.summary["bundle"]
    items2 = read_bundle(bundle2)
    assert kinds(items2) == [
        *["application/octet-stream"] * 3,
        *["file"] * 3,
        "text/plain",
        "file",
        "application/x.arweave-manifest+json",
        "application/ld+json",
        CROISSANT_MEDIA_TYPE,
        DCAT_MEDIA_TYPE,
        "application/json",
    ]
    record2 = decode_record(items2[-1].tags, items2[-1].data)
    assert record2.prev_upload == record1  # the back-reference
    assert record2.prev_head == multihash_to_str(head1)
    assert record2.drive == record.drive
    assert set(record2.added) == {o.path for o in second.plan.send} | {"refs/head"}
    assert record2.added["refs/head"].file_id == record.added["refs/head"].file_id  # revision
    # A delta manifest, the paths this upload added only, naming the full one
    manifest2 = decode_manifest(items2[-5].data)
    assert tags_of(items2[-5])["ODF-Full-Manifest"] == record.manifest_id
    assert record2.full_manifest == record.manifest_id
    assert dict(manifest2.paths) == {p: a.data_item_id for p, a in record2.added.items()}
    all_items = by_id | {i.id_b64: i.data for i in items2}
    # the full manifest overlaid with the delta: every path of the dataset, old ids kept
    check_manifest_covers_dataset(ds, dict(manifest.paths) | dict(manifest2.paths), all_items)
    assert all_items[manifest2.paths["refs/head"]] == (ds / "refs/head").read_bytes()
    assert oracle("verify-bundle", bundle2)["valid"] is True

    summary = json.loads((out / "publish.json").read_text())
    assert summary["recordId"] == items2[-1].id_b64 and summary["driveId"] == drive_id
    assert summary["priceQuery"] == f"GET /price/{bundle2.stat().st_size}"
    assert summary["bundleBytes"] == bundle2.stat().st_size
    assert {"name": "Bundle-Format", "value": "binary"} in summary["l1Tags"]
    assert {"name": "Bundle-Version", "value": "2.0.0"} in summary["l1Tags"]
    # Publish.json names this bundle's paths only; the file index has every path
    assert summary["itemsAdded"] == dict(manifest2.paths) and "objects" not in summary
    index = {p: ref["dataItemId"] for p, ref in objects_of(out).items()}
    assert index == dict(manifest.paths) | dict(manifest2.paths)
    assert summary["extra"]["bundles"] == [bundle1.name, bundle2.name]

    # Nothing new: no bundle is written, the state stays.
    third = publish_dataset(ds, BundleTarget(out, fixed_wallet))
    assert third.plan.is_noop and third.upload.summary["bundle"] is None
    assert sorted(p.name for p in out.glob("*.bundle")) == sorted([bundle1.name, bundle2.name])
    assert json.loads((out / "publish.json").read_text())["recordId"] == record2_id(items2)


def record2_id(items: list[DataItem]) -> str:
    return items[-1].id_b64


def test_missing_bundle_resends_everything_with_the_same_ids(tmp_path, fixed_wallet) -> None:
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=3000, seed=3).path
    out = tmp_path / "out"
    first = publish_dataset(ds, BundleTarget(out, fixed_wallet))
    # Read now: a first upload's index is a view of its pack, which the next publish drops.
    old_ids = {p: o["fileId"] for p, o in first.state.objects.items()}
    (out / first.state.record["bundle"]).unlink()
    append_blocks(ds, 1)
    second = publish_dataset(ds, BundleTarget(out, fixed_wallet))
    assert second.notes and "gone" in second.notes[0]
    assert len(second.plan.send) == len(second.plan.objects)
    items = read_bundle(out / second.state.record["bundle"])
    record = decode_record(items[-1].tags, items[-1].data)
    assert record.drive.drive_id == first.state.extra["drive"]["driveId"]
    assert "drive" in kinds(items)
    assert all(record.added[p].file_id == fid for p, fid in old_ids.items())


def test_corrupt_new_file_publishes_nothing(tmp_path: Path, fixed_wallet: Wallet) -> None:
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=5000, seed=1).path
    out = tmp_path / "out"
    publish_dataset(ds, BundleTarget(out, fixed_wallet))
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    append_blocks(ds, 1, data_bytes=3000)
    newest = max((ds / "data").iterdir(), key=lambda p: p.stat().st_mtime_ns)
    raw = bytearray(newest.read_bytes())
    raw[10] ^= 0xFF
    newest.write_bytes(bytes(raw))
    with pytest.raises(IntegrityError):
        publish_dataset(ds, BundleTarget(out, fixed_wallet))
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_invalid_dataset_refused_before_writing(tmp_path: Path, fixed_wallet: Wallet) -> None:
    ds = create_root_dataset(tmp_path / "ds", blocks=2, seed=2).path
    blk = sorted((ds / "blocks").iterdir())[0]
    blk.write_bytes(blk.read_bytes()[:-1])
    out = tmp_path / "out"
    with pytest.raises(Exception, match="block"):
        publish_dataset(ds, BundleTarget(out, fixed_wallet))
    assert not out.exists()


def test_tag_over_limits_refused_before_writing(tmp_path: Path, fixed_wallet: Wallet) -> None:
    ds = create_root_dataset(tmp_path / "ds", blocks=1, seed=2).path
    out = tmp_path / "out"
    target = BundleTarget(out, fixed_wallet, record_tags=[Tag.of("Title", "x" * 3073)])
    with pytest.raises(FormatError, match="3072"):
        publish_dataset(ds, target)
    many = [Tag.of(f"T{i}", "v") for i in range(125)]
    with pytest.raises(FormatError, match="128"):
        publish_dataset(ds, BundleTarget(out, fixed_wallet, record_tags=many))
    assert not out.exists()


def test_other_wallet_or_dataset_refused(tmp_path, fixed_wallet, session_wallet) -> None:
    a = create_root_dataset(tmp_path / "a", seed=1).path
    b = create_root_dataset(tmp_path / "b", seed=2).path
    out = tmp_path / "out"
    publish_dataset(a, BundleTarget(out, fixed_wallet))
    with pytest.raises(ConflictError, match="another output directory"):
        publish_dataset(b, BundleTarget(out, fixed_wallet))
    append_blocks(a, 1)
    with pytest.raises(ConflictError, match="same wallet"):
        publish_dataset(a, BundleTarget(out, session_wallet))


def test_dry_run_writes_nothing(tmp_path: Path, fixed_wallet: Wallet) -> None:
    ds = create_root_dataset(tmp_path / "ds", seed=3).path
    out = tmp_path / "out"
    res = publish_dataset(ds, BundleTarget(out, fixed_wallet), dry_run=True)
    assert res.state is None and not out.exists()


# --- open_target: wallet handling -----------------------------------------------------------


@pytest.fixture
def wallet_file(tmp_path: Path) -> Path:
    path = tmp_path / "wallet.json"
    shutil.copyfile(FIXED_WALLET_PATH, path)
    path.chmod(0o600)
    return path


def test_open_target_publishes_and_never_copies_wallet(tmp_path, wallet_file) -> None:
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=4000, seed=8).path
    out = tmp_path / "out"
    config = load_config(None, env={})
    target = open_target(
        f"bundle:{out}", config, TargetOptions(own=ArweaveOptions(wallet=wallet_file))
    )
    assert isinstance(target, BundleTarget)
    publish_dataset(ds, target)
    secret = json.loads(wallet_file.read_text())["d"].encode()
    assert sorted(p.suffix for p in out.iterdir()) == [".bundle", ".json", ".pack"]
    for p in out.iterdir():
        assert secret not in p.read_bytes(), p
        assert p.stat().st_mode & 0o044, p  # published artifacts are world-readable
    assert secret not in repr(target).encode()
    assert stat.S_IMODE(wallet_file.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (None, "cannot read"),
        (b"{not json", "not JSON"),
        (b"[1, 2]", "not a JWK"),
        (b'{"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA", "d": "AA"}', "not 'RSA'"),
        (b'{"kty": "RSA", "n": "AQAB", "e": "AQAB"}', "lacks private key"),
    ],
)
def test_bad_wallet_clear_error_nothing_written(tmp_path, content, needle) -> None:
    wallet = tmp_path / "w.json"
    if content is not None:
        wallet.write_bytes(content)
    out = tmp_path / "out"
    with pytest.raises(ConfigError, match=needle) as ei:
        open_target(
            f"bundle:{out}",
            load_config(None, env={}),
            TargetOptions(own=ArweaveOptions(wallet=wallet)),
        )
    assert str(wallet) in str(ei.value) and "\n" not in str(ei.value)
    assert not out.exists()


def test_bundle_target_needs_wallet_and_dir(tmp_path: Path) -> None:
    config = load_config(None, env={})
    with pytest.raises(UsageError, match="--wallet"):
        open_target(f"bundle:{tmp_path / 'out'}", config)
    with pytest.raises(UsageError, match="directory"):
        open_target("bundle:", config, TargetOptions(own=ArweaveOptions(wallet=FIXED_WALLET_PATH)))
    assert not (tmp_path / "out").exists()


def test_descriptor_item_between_manifest_and_record(tmp_path: Path, fixed_wallet: Wallet) -> None:
    from odfweb3.descriptor import decode_descriptor, validate_descriptor

    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=2000, seed=6).path
    out = tmp_path / "out"
    target = BundleTarget(out, fixed_wallet, publisher={"type": "Person", "name": "Ada"})
    outcome = publish_dataset(ds, target)
    bundle = out / f"{outcome.state.record['recordId']}.bundle"
    items = read_bundle(bundle)
    assert oracle("verify-bundle", bundle)["valid"] is True  # arbundles accepts it
    manifest, desc, croissant, dcat, record = items[-5:]
    assert (croissant.id_b64, dcat.id_b64) == (
        outcome.upload.summary["croissantId"],
        outcome.upload.summary["dcatId"],
    )
    assert tags_of(croissant)["ODF-Discovery"] == "croissant"
    assert tags_of(dcat)["ODF-Discovery"] == "dcat"
    assert tags_of(manifest)["Content-Type"] == "application/x.arweave-manifest+json"
    assert desc.id_b64 == outcome.upload.summary["descriptorId"]
    assert outcome.state.extra["descriptorId"] == desc.id_b64
    tags = tags_of(desc)
    doc = decode_descriptor(desc.data)
    assert tags["Content-Type"] == "application/ld+json"
    assert tags["ODF-Dataset-Id"] == doc["id"] == outcome.plan.dataset_id
    assert tags["Title"] == doc["title"] and tags["Description"] == doc["description"]
    assert tags["App-Name"] == "odfweb3"
    assert doc["relation"] == [f"ar://{manifest.id_b64}"]
    assert validate_descriptor(doc) == []
    assert decode_record(record.tags, record.data).manifest_id == manifest.id_b64

    # No publisher configured: the creator is the signing wallet's address.
    out2 = tmp_path / "out2"
    outcome = publish_dataset(ds, BundleTarget(out2, fixed_wallet))
    items = read_bundle(out2 / f"{outcome.state.record['recordId']}.bundle")
    assert "descriptorSkipped" not in outcome.upload.summary
    [plain] = [i for i in items if i.id_b64 == outcome.upload.summary["descriptorId"]]
    creator = decode_descriptor(plain.data)["creator"]
    assert creator == {"type": "foaf:Agent", "name": f"Arweave address {fixed_wallet.address}"}
