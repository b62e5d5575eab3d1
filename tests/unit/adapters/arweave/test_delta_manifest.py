"""Delta path manifests: an update's manifest maps only what it added.

Checked on ``bundle:DIR`` (the same bundle code as the live target): each update's manifest
holds exactly its record's ``added`` paths and names the last full manifest
(``ODF-Full-Manifest`` on the manifest item and the record); ``arweave.manifest: full``
consolidates; the chain of deltas is bounded on both sides; readers (``open_bundle_dir``,
``pull``, ``verify --against``) walk back to the full manifest and refuse a broken chain;
state written before delta manifests (no ``fullManifestId``) continues with a delta.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odfweb3.backends import TargetOptions, open_target
from odfweb3.cli.main import main
from odfweb3.config import load_config
from odfweb3.errors import ConfigError, FormatError, ResolutionError
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.publish.chain_cache import ChainCache
from odfweb3.publish.execute import PublishOutcome, publish_dataset
from odfweb3.publish.pack_index import write_pack
from odfweb3.publish.plan import LazySequence
from odfweb3_arweave.declaration import ArweaveOptions
from odfweb3_arweave.formats.ans104 import DataItem, iter_bundle
from odfweb3_arweave.formats.arfs import tag_value
from odfweb3_arweave.formats.manifest import PathManifest, decode_manifest
from odfweb3_arweave.formats.record import UploadRecord, decode_record
from odfweb3_arweave.publish import bundle_plan
from odfweb3_arweave.publish.bundle_target import BundleTarget, objects_of
from odfweb3_arweave.publish.file_index import FileIndex
from odfweb3_arweave.read import bundle_replica
from odfweb3_arweave.read.bundle_replica import open_bundle_dir
from odfweb3_arweave.wallet import Wallet

from .conftest import FIXED_WALLET_PATH


def dataset_files(ds: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(ds)): p.read_bytes()
        for p in ds.rglob("*")
        if p.is_file() and p.relative_to(ds).parts[0] in ("blocks", "refs", "data", "checkpoints")
    }


def items_of(out: Path, outcome: PublishOutcome) -> list[DataItem]:
    with open(out / outcome.state.record["bundle"], "rb") as f:
        return list(iter_bundle(f))


def manifest_and_record(
    out: Path, outcome: PublishOutcome
) -> tuple[DataItem, PathManifest, UploadRecord]:
    items = items_of(out, outcome)
    record = decode_record(items[-1].tags, items[-1].data)
    item = next(i for i in items if i.id_b64 == record.manifest_id)
    return item, decode_manifest(item.data), record


def descriptor_relation(out: Path, outcome: PublishOutcome) -> list[str]:
    """The discovery descriptor's ``relation`` (the item before the Croissant and DCAT
    documents, which precede the record, the last)."""
    items = items_of(out, outcome)
    summary = outcome.upload.summary
    ids = [summary["descriptorId"], summary["croissantId"], summary["dcatId"]]
    assert [i.id_b64 for i in items[-4:-1]] == ids
    assert items[-1].id_b64 == outcome.state.record["recordId"]
    relation: list[str] = json.loads(items[-4].data)["relation"]
    return relation


def check_reads_back(capsys, tmp_path: Path, ds: Path, out: Path, name: str) -> None:
    env = {"HOME": str(tmp_path / "home")}
    code = main(["verify", str(ds), "--against", f"bundle:{out}", "--deep"], env=env)
    text, err = capsys.readouterr()
    assert code == 0 and "identical" in text, text + err
    dest = tmp_path / name
    assert main(["pull", f"bundle:{out}", str(dest)], env=env) == 0, capsys.readouterr()
    capsys.readouterr()
    assert dataset_files(dest) == dataset_files(ds)


def test_updates_store_delta_manifests_and_read_back(capsys, tmp_path, fixed_wallet) -> None:
    ds = create_root_dataset(tmp_path / "ds", blocks=3, data_bytes=3_000, seed=81).path
    out = tmp_path / "out"
    first = publish_dataset(ds, BundleTarget(out, fixed_wallet))
    _, full, record1 = manifest_and_record(out, first)
    assert set(full.paths) == set(dataset_files(ds)) and not record1.delta
    assert first.state.extra["fullManifestId"] == record1.manifest_id
    assert first.state.extra["deltaUploads"] == 0
    assert descriptor_relation(out, first) == [f"ar://{record1.manifest_id}"]  # one id: all
    for n in range(1, 4):
        append_blocks(ds, 1, data_bytes=500, seed=81 + n)
        outcome = publish_dataset(ds, BundleTarget(out, fixed_wallet))
        item, manifest, record = manifest_and_record(out, outcome)
        # the paths this update added and refs/head, nothing else
        assert (
            set(manifest.paths)
            == set(record.added)
            == {
                *(o.path for o in outcome.plan.send),
                "refs/head",
            }
        )
        assert manifest.index == "refs/head"
        assert {p: a.data_item_id for p, a in record.added.items()} == dict(manifest.paths)
        assert tag_value(item.tags, "ODF-Full-Manifest") == record1.manifest_id
        assert record.full_manifest == record1.manifest_id
        assert outcome.state.extra["deltaUploads"] == n
        # the descriptor names what opens the upload: its record, not the delta manifest
        assert descriptor_relation(out, outcome) == [f"ar://{outcome.state.record['recordId']}"]
        # the state still knows every path (the next plan needs them)
        assert set(outcome.state.objects) == set(dataset_files(ds))
    replica = open_bundle_dir(f"bundle:{out}")
    assert replica.head() == outcome.plan.head
    check_reads_back(capsys, tmp_path, ds, out, "copy")


def test_full_manifest_consolidates_and_deltas_follow_it(capsys, tmp_path, fixed_wallet) -> None:
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=2_000, seed=91).path
    out = tmp_path / "out"
    publish_dataset(ds, BundleTarget(out, fixed_wallet))
    append_blocks(ds, 1, data_bytes=500, seed=92)
    publish_dataset(ds, BundleTarget(out, fixed_wallet))
    append_blocks(ds, 1, data_bytes=500, seed=93)
    full = publish_dataset(ds, BundleTarget(out, fixed_wallet, manifest="full"))
    item, manifest, record = manifest_and_record(out, full)
    assert set(manifest.paths) == set(dataset_files(ds))  # one id serves every path again
    assert tag_value(item.tags, "ODF-Full-Manifest") is None and not record.delta
    assert full.state.extra == full.state.extra | {
        "fullManifestId": record.manifest_id,
        "deltaUploads": 0,
    }
    append_blocks(ds, 1, data_bytes=500, seed=94)
    after = publish_dataset(ds, BundleTarget(out, fixed_wallet))
    _, _, delta = manifest_and_record(out, after)
    assert delta.full_manifest == record.manifest_id
    check_reads_back(capsys, tmp_path, ds, out, "copy")


def test_the_delta_chain_is_bounded(capsys, tmp_path, fixed_wallet, monkeypatch) -> None:
    monkeypatch.setattr(bundle_plan, "MAX_DELTA_UPLOADS", 2)
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=2_000, seed=101).path
    out = tmp_path / "out"
    publish_dataset(ds, BundleTarget(out, fixed_wallet))
    kinds = []
    for n in range(4):
        append_blocks(ds, 1, data_bytes=300, seed=102 + n)
        outcome = publish_dataset(ds, BundleTarget(out, fixed_wallet))
        kinds.append(manifest_and_record(out, outcome)[2].delta)
    # two deltas, then the publisher writes a full manifest rather than a third
    assert kinds == [True, True, False, True]
    check_reads_back(capsys, tmp_path, ds, out, "copy")
    # a reader walks at most its own bound of deltas: two deltas after a full one, bound 1
    monkeypatch.setattr(bundle_plan, "MAX_DELTA_UPLOADS", 5)
    append_blocks(ds, 1, data_bytes=300, seed=110)
    publish_dataset(ds, BundleTarget(out, fixed_wallet))
    monkeypatch.setattr(bundle_replica, "MAX_DELTA_UPLOADS", 1)
    # The latest record counts its deltas (ODF-Delta-Uploads): refused before any walk.
    with pytest.raises(ResolutionError, match=r"says it is delta upload 2 .* at most 1"):
        open_bundle_dir(f"bundle:{out}")


def test_a_count_of_deltas_past_the_bound_is_refused_before_the_walk(
    tmp_path, fixed_wallet, monkeypatch
) -> None:
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=2_000, seed=141).path
    out = tmp_path / "out"
    publish_dataset(ds, BundleTarget(out, fixed_wallet))
    append_blocks(ds, 1, data_bytes=300, seed=142)
    publish_dataset(ds, BundleTarget(out, fixed_wallet))
    # A publisher (here: one with another bound and a doctored state) signs a record
    # counting 10,005 deltas since the full manifest; readers walk at most 10,000.
    monkeypatch.setattr(bundle_plan, "MAX_DELTA_UPLOADS", 20_000)
    summary = out / "publish.json"
    doc = json.loads(summary.read_text())
    doc["extra"]["deltaUploads"] = 10_004
    summary.write_text(json.dumps(doc))
    append_blocks(ds, 1, data_bytes=300, seed=143)
    last = publish_dataset(ds, BundleTarget(out, fixed_wallet))
    assert manifest_and_record(out, last)[2].delta_uploads == 10_005
    reads: list[str] = []
    real = bundle_replica.BundleDirReplica._owned

    def owned(self, item_id, what):  # count the records read back
        reads.append(item_id)
        return real(self, item_id, what)

    monkeypatch.setattr(bundle_replica.BundleDirReplica, "_owned", owned)
    with pytest.raises(ResolutionError, match=r"delta upload 10005 .* at most 10000"):
        open_bundle_dir(f"bundle:{out}")
    assert not reads, "records were read back before the count was refused"


def test_a_count_that_disagrees_with_the_chain_is_refused(tmp_path, fixed_wallet) -> None:
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=2_000, seed=151).path
    out = tmp_path / "out"
    publish_dataset(ds, BundleTarget(out, fixed_wallet))
    for n in range(2):
        append_blocks(ds, 1, data_bytes=300, seed=152 + n)
        publish_dataset(ds, BundleTarget(out, fixed_wallet))
    # The third delta counts itself the first: the chain is longer than its records say.
    summary = out / "publish.json"
    doc = json.loads(summary.read_text())
    doc["extra"]["deltaUploads"] = 0
    summary.write_text(json.dumps(doc))
    append_blocks(ds, 1, data_bytes=300, seed=155)
    last = publish_dataset(ds, BundleTarget(out, fixed_wallet))
    record = manifest_and_record(out, last)[2]
    assert record.delta and record.delta_uploads == 1
    with pytest.raises(ResolutionError, match="longer than its records say"):
        open_bundle_dir(f"bundle:{out}")


def test_state_from_before_delta_manifests_continues_with_a_delta(tmp_path, fixed_wallet) -> None:
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=2_000, seed=121).path
    out = tmp_path / "out"
    first = publish_dataset(ds, BundleTarget(out, fixed_wallet))
    summary = out / "publish.json"
    doc = json.loads(summary.read_text())
    del doc["extra"]["fullManifestId"], doc["extra"]["deltaUploads"]
    summary.write_text(json.dumps(doc))
    append_blocks(ds, 1, data_bytes=300, seed=122)
    second = publish_dataset(ds, BundleTarget(out, fixed_wallet))
    # the old state's locator was a full manifest (every manifest was, then)
    assert manifest_and_record(out, second)[2].full_manifest == first.state.locator
    assert open_bundle_dir(f"bundle:{out}").head() == second.plan.head


def test_a_delta_naming_another_full_manifest_is_refused(tmp_path, fixed_wallet: Wallet) -> None:
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=2_000, seed=131).path
    out = tmp_path / "out"
    first = publish_dataset(ds, BundleTarget(out, fixed_wallet))
    summary = out / "publish.json"
    doc = json.loads(summary.read_text())
    doc["extra"]["fullManifestId"] = first.state.record["recordId"]  # not the full manifest
    summary.write_text(json.dumps(doc))
    append_blocks(ds, 1, data_bytes=300, seed=132)
    publish_dataset(ds, BundleTarget(out, fixed_wallet))
    with pytest.raises(ResolutionError, match="names another full manifest"):
        open_bundle_dir(f"bundle:{out}")


@pytest.mark.parametrize(("value", "kind"), [(None, "delta"), ("delta", "delta"), ("full", "full")])
def test_arweave_manifest_config_reaches_both_targets(tmp_path, value, kind) -> None:
    cfg = tmp_path / "odfweb3.yaml"
    arweave = {"gateway": "http://127.0.0.1:9", "wallet": str(FIXED_WALLET_PATH)}
    if value is not None:
        arweave["manifest"] = value
    cfg.write_text(json.dumps({"arweave": arweave, "state_dir": str(tmp_path / "state")}))
    config = load_config(cfg, env={})
    options = TargetOptions(own=ArweaveOptions(wallet=FIXED_WALLET_PATH))
    assert open_target(f"bundle:{tmp_path / 'out'}", config, options).manifest == kind
    assert open_target("arweave", config, options).manifest == kind


def test_an_unknown_arweave_manifest_value_is_a_config_error(tmp_path) -> None:
    cfg = tmp_path / "odfweb3.yaml"
    cfg.write_text(json.dumps({"arweave": {"manifest": "nested"}}))
    with pytest.raises(ConfigError, match=r"arweave\.manifest: 'nested' is not one of"):
        open_target(
            f"bundle:{tmp_path / 'out'}",
            load_config(cfg, env={}),
            TargetOptions(own=ArweaveOptions(wallet=FIXED_WALLET_PATH)),
        )


@pytest.mark.parametrize("form", ["index", "objects"])
def test_an_update_does_not_walk_the_chain_and_a_short_state_is_refused(
    tmp_path, fixed_wallet, form
) -> None:
    # Issue 19 goal 1 on bundle:DIR: the layout beyond the new objects comes from the state
    # (plan.objects stays unloaded), and a state missing an object still stops the publish.
    ds = create_root_dataset(tmp_path / "ds", blocks=5, data_bytes=5_000, seed=141).path
    out = tmp_path / "out"
    cache = ChainCache(tmp_path / "cache")
    publish_dataset(ds, BundleTarget(out, fixed_wallet), chain_cache=cache)
    append_blocks(ds, 1, data_bytes=300, seed=142)
    update = publish_dataset(ds, BundleTarget(out, fixed_wallet), chain_cache=cache)
    assert isinstance(update.plan.objects, LazySequence) and not update.plan.objects.loaded
    assert set(update.state.objects) == set(dataset_files(ds))
    summary = out / "publish.json"
    doc = json.loads(summary.read_text())
    objects = objects_of(out)
    dropped = next(p for p in objects if p.startswith("data/"))
    del objects[dropped]
    if form == "objects":  # as written before the file index
        doc["objects"] = objects
        del doc["extra"]["objectIndex"]
    else:
        index, pack = FileIndex.of_objects(out, objects)
        write_pack(out, pack)
        doc["extra"]["objectIndex"] = index.to_json()
    summary.write_text(json.dumps(doc))
    append_blocks(ds, 1, data_bytes=300, seed=143)
    with pytest.raises(FormatError, match="not in this bundle and not in the publish state"):
        publish_dataset(ds, BundleTarget(out, fixed_wallet), chain_cache=cache)
