"""Offline publish (car:DIR): full, incremental, and every refusal leaves nothing behind."""

import dataclasses
import json
import os
import shutil
from datetime import UTC, datetime, timedelta

import pytest

from odfweb3.crypto.keystore import Keystore
from odfweb3.errors import ConflictError, HashMismatch, IntegrityError
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.execute import publish_dataset
from odfweb3_ipfs.formats.car import iter_car
from odfweb3_ipfs.formats.ipns import DEFAULT_LIFETIME
from odfweb3_ipfs.publish.car_target import CarTarget
from odfweb3_ipfs.publish.unixfs_import import import_tree
from odfweb3_ipfs.read.car_replica import check_car_dir


@pytest.fixture
def keystore(tmp_path):
    return Keystore(tmp_path / "keys")


def car_cids(path):
    with open(path, "rb") as f:
        _roots, blocks = iter_car(f)
        return {cid.raw for cid, _ in blocks}


def test_full_then_incremental(tmp_path, keystore):
    ds = create_root_dataset(tmp_path / "ds", blocks=4, data_bytes=600_000, seed=5).path
    out = tmp_path / "out"
    first = publish_dataset(ds, CarTarget(out, keystore))
    assert first.plan.relation == "new" and len(first.plan.send) == len(first.plan.objects)
    root1 = first.upload.locator
    assert root1 == import_tree(ds).cid.encode()  # = ipfs add -r --cid-version=1
    check1 = check_car_dir(out)
    assert check1.record.sequence == 0 and check1.record.odf.prev_head is None
    first_car = set(car_cids(out / f"{root1}.car"))

    head1 = first.plan.head
    append_blocks(ds, 1, data_bytes=1000)
    second = publish_dataset(ds, CarTarget(out, keystore))
    assert second.plan.relation == "ahead"
    assert {o.kind for o in second.plan.send} == {"block", "data", "checkpoint"}
    assert len(second.plan.send) == 3
    root2 = second.upload.locator
    assert root2 == import_tree(ds).cid.encode()
    delta = car_cids(out / f"{root2}.car")
    assert not (delta & first_car), "the delta CAR repeats blocks of the first"
    assert os.path.getsize(out / f"{root2}.car") < 20_000
    check2 = check_car_dir(out)
    assert check2.record.sequence == 1
    assert check2.record.odf.prev_head == multihash_to_str(head1)
    assert check2.read_path("refs/head").decode() == multihash_to_str(second.plan.head)
    summary = json.loads((out / "publish.json").read_text())
    assert summary["ipnsName"].startswith("k51") and summary["sequence"] == 1
    assert any("dag import" in line for line in summary["import"])

    # Nothing new: a third publish sends no objects and leaves every file as it was
    # (the record stays at its sequence)...
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    third = publish_dataset(ds, CarTarget(out, keystore))
    assert third.plan.relation == "same" and not third.plan.send
    assert third.state.record["sequence"] == 1
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    # ...until the record is past half its lifetime: then it is renewed, sequence + 1.
    later = datetime.now(UTC) + DEFAULT_LIFETIME / 2 + timedelta(minutes=1)
    publish_dataset(ds, CarTarget(out, keystore, clock=lambda: later))
    assert json.loads((out / "publish.json").read_text())["sequence"] == 2
    # The keystore entry remembers the highest sequence signed with the name's key.
    key = keystore.load(first.plan.dataset_id)
    pub = key.public_key().public_bytes_raw()
    assert keystore.highest_signed(first.plan.dataset_id, pub) == 2


def test_unchanged_files_are_not_read_again(tmp_path, keystore):
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=5000, seed=1).path
    out = tmp_path / "out"
    publish_dataset(ds, CarTarget(out, keystore))
    old = sorted((ds / "data").iterdir())[0]
    old.write_bytes(b"x" * old.stat().st_size)  # corrupt, same size: only a re-read notices
    append_blocks(ds, 1)
    publish_dataset(ds, CarTarget(out, keystore))  # succeeds: the old file was not read


def test_corrupt_new_file_publishes_nothing(tmp_path, keystore):
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=5000, seed=1).path
    out = tmp_path / "out"
    publish_dataset(ds, CarTarget(out, keystore))
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    append_blocks(ds, 1, data_bytes=3000)
    newest = max((ds / "data").iterdir(), key=lambda p: p.stat().st_mtime_ns)
    raw = bytearray(newest.read_bytes())
    raw[10] ^= 0xFF
    newest.write_bytes(bytes(raw))
    with pytest.raises((HashMismatch, IntegrityError)):
        publish_dataset(ds, CarTarget(out, keystore))
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_invalid_dataset_refused_before_writing(tmp_path, keystore):
    ds = create_root_dataset(tmp_path / "ds", blocks=2, seed=2).path
    blk = sorted((ds / "blocks").iterdir())[0]
    blk.write_bytes(blk.read_bytes()[:-1])
    out = tmp_path / "out"
    with pytest.raises(Exception) as ei:
        publish_dataset(ds, CarTarget(out, keystore))
    assert "block" in str(ei.value)
    assert not out.exists()


def test_diverged_refused_then_forced(tmp_path, keystore):
    a = create_root_dataset(tmp_path / "a", blocks=2, seed=9).path
    b = tmp_path / "b"
    shutil.copytree(a, b)
    append_blocks(a, 1, seed=1)
    append_blocks(b, 1, seed=2)
    out = tmp_path / "out"
    publish_dataset(a, CarTarget(out, keystore))
    with pytest.raises(ConflictError, match="--force"):
        publish_dataset(b, CarTarget(out, keystore))
    forced = publish_dataset(b, CarTarget(out, keystore), force=True)
    assert forced.plan.forced
    assert check_car_dir(out).head == forced.plan.head


def test_other_dataset_in_same_dir(tmp_path, keystore):
    a = create_root_dataset(tmp_path / "a", seed=1).path
    b = create_root_dataset(tmp_path / "b", seed=2).path
    out = tmp_path / "out"
    publish_dataset(a, CarTarget(out, keystore))
    with pytest.raises(ConflictError, match="another output directory"):
        publish_dataset(b, CarTarget(out, keystore))


def test_cid_v0(tmp_path, keystore):
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=300_000, seed=4).path
    out = tmp_path / "out"
    res = publish_dataset(ds, CarTarget(out, keystore, cid_version=0))
    assert res.upload.locator.startswith("Qm")
    assert res.upload.locator == import_tree(ds, cid_version=0).cid.encode()
    assert check_car_dir(out).root.version == 0


def test_dry_run_writes_nothing(tmp_path, keystore):
    ds = create_root_dataset(tmp_path / "ds", seed=3).path
    out = tmp_path / "out"
    res = publish_dataset(ds, CarTarget(out, keystore), dry_run=True)
    assert res.state is None and "send" in str(res.plan)
    assert not out.exists() and not (tmp_path / "keys").exists()


def test_published_files_are_world_readable_keys_are_not(tmp_path, keystore):
    ds = create_root_dataset(tmp_path / "ds", seed=3).path
    out = tmp_path / "out"
    publish_dataset(ds, CarTarget(out, keystore))
    for p in out.iterdir():
        assert p.stat().st_mode & 0o044, p
    for p in (tmp_path / "keys").iterdir():
        assert p.stat().st_mode & 0o777 == 0o600


def test_descriptor_published_beside_the_dataset(tmp_path, keystore):
    import hashlib

    from multiformats import CID, multihash

    from odfweb3.descriptor import decode_descriptor, validate_descriptor

    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=2000, seed=6).path
    out = tmp_path / "out"
    publisher = {"type": "Organization", "name": "Example Lab"}
    outcome = publish_dataset(ds, CarTarget(out, keystore, publisher=publisher))
    desc_cid = outcome.upload.summary["descriptor"]
    car = out / outcome.upload.summary["descriptorCar"]
    with open(car, "rb") as f:
        roots, blocks = iter_car(f)
        blocks = list(blocks)
    assert [r.encode() for r in roots] == [desc_cid] and len(blocks) == 1
    data = blocks[0][1]
    # Independent of our UnixFS code: a small file added with raw leaves is one raw block.
    expected = CID("base32", 1, "raw", multihash.wrap(hashlib.sha256(data).digest(), "sha2-256"))
    assert desc_cid == str(expected)
    doc = decode_descriptor(data)
    assert validate_descriptor(doc) == [] and doc["creator"]["name"] == "Example Lab"
    check = check_car_dir(out)
    assert check.record.odf.extra["descriptor"] == desc_cid
    assert doc["relation"] == [f"ipfs://{outcome.upload.locator}", f"ipns://{check.name}"]
    # Not inside the dataset root: the root is still exactly `ipfs add -r` of the layout.
    assert outcome.upload.locator == import_tree(ds).cid.encode()
    summary = json.loads((out / "publish.json").read_text())
    assert summary["descriptor"] == desc_cid and car.name in summary["import"][0]

    # Without a publisher the creator is the publisher's own IPNS name: the
    # descriptor is still published.
    out2 = tmp_path / "out2"
    outcome = publish_dataset(ds, CarTarget(out2, keystore))
    assert "descriptorSkipped" not in outcome.upload.summary
    check2 = check_car_dir(out2)
    plain_cid = check2.record.odf.extra["descriptor"]
    with open(out2 / outcome.upload.summary["descriptorCar"], "rb") as f:
        roots, blocks = iter_car(f)
        [(_, plain_bytes)] = list(blocks)
    assert [r.encode() for r in roots] == [plain_cid]
    plain = decode_descriptor(plain_bytes)
    assert plain["creator"] == {"type": "foaf:Agent", "name": f"ipns://{check2.name}"}
    assert validate_descriptor(plain) == []


def test_publish_json_replaced_after_inspect_is_a_conflict(tmp_path, keystore):
    # Compare-and-set (issue 19 keeps it without a second parse of publish.json): another
    # publisher replacing publish.json between inspect and upload is refused, nothing written.
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=2000, seed=11).path
    out = tmp_path / "out"
    publish_dataset(ds, CarTarget(out, keystore))
    append_blocks(ds, 1, data_bytes=1000, seed=3)
    slow = CarTarget(out, keystore)
    from odfweb3.odf.layout import DatasetReader
    from odfweb3.publish.execute import load_verified_chain
    from odfweb3.publish.plan import plan_publish

    entries, dataset_id = load_verified_chain(DatasetReader.open(ds))
    view = slow.inspect(str(dataset_id), entries[0].hash)
    plan = plan_publish(
        entries, dataset_id=str(dataset_id), target=slow.name, remote_head=view.head,
        remote_has=view.has,
    )  # fmt: skip
    won = publish_dataset(ds, CarTarget(out, keystore))
    before = sorted(os.listdir(out))
    with pytest.raises(ConflictError, match="another publish moved it to"):
        slow.upload(plan, DatasetReader.open(ds), view, lambda n: None)
    assert sorted(os.listdir(out)) == before
    assert json.loads((out / "publish.json").read_text())["head"] == multihash_to_str(won.plan.head)


def test_unchanged_publish_json_is_not_parsed_again(tmp_path, keystore, monkeypatch):
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=2000, seed=12).path
    out = tmp_path / "out"
    publish_dataset(ds, CarTarget(out, keystore))
    append_blocks(ds, 1, data_bytes=1000, seed=4)
    target = CarTarget(out, keystore)
    loads = []
    real = target.home.load
    monkeypatch.setattr(target.home, "load", lambda: loads.append(1) or real())
    publish_dataset(ds, target)
    assert len(loads) == 1  # inspect's; upload's and commit's checks saw the same file


def test_the_executor_holds_the_lock_from_upload_to_save_and_drops_it(tmp_path, keystore):
    # The lock is a session the executor opens around upload, commit and
    # save; the target never takes or drops it itself. Seen from inside each step.
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=2000, seed=13).path
    out = tmp_path / "out"
    target = CarTarget(out, keystore)
    held = []
    for step in ("upload", "commit", "save"):
        real = getattr(target, step)

        def spy(*args, _real=real, _step=step):
            held.append((_step, target.lock_path.read_text("ascii")))
            return _real(*args)

        setattr(target, step, spy)
    publish_dataset(ds, target)
    assert held == [(s, str(os.getpid())) for s in ("upload", "commit", "save")]
    assert not target.lock_path.exists()
    # a live holder (this process's parent stands in for another publisher) is refused
    target.lock_path.write_text(str(os.getppid()))
    append_blocks(ds, 1, data_bytes=1000, seed=5)
    before = sorted(os.listdir(out))
    with pytest.raises(ConflictError, match="another publisher"):
        publish_dataset(ds, CarTarget(out, keystore))
    assert sorted(os.listdir(out)) == before
    target.lock_path.unlink()


def test_a_failed_step_inside_the_session_drops_the_lock(tmp_path, keystore, monkeypatch):
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=2000, seed=14).path
    out = tmp_path / "out"
    target = CarTarget(out, keystore)

    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(target, "_commit", fail)
    with pytest.raises(OSError, match="disk full"):
        publish_dataset(ds, target)
    assert not target.lock_path.exists()
    publish_dataset(ds, CarTarget(out, keystore))  # the next publisher gets in
    assert (out / "publish.json").is_file()


@pytest.mark.parametrize("fanout", [8, 256])
def test_sharded_updates_rebuild_one_shard_path_and_equal_a_full_build(tmp_path, keystore, fanout):
    # An update of a sharded directory reuses the previous trie (publish.json
    # hamtShards) and must give the root a full build gives, while writing only the shards
    # on the new entries' paths. A low threshold shards the 40-block dataset's directories.
    from odfweb3_ipfs.publish.cid_profile import DEFAULT_PROFILE

    prof = dataclasses.replace(DEFAULT_PROFILE, name="test-sharded", hamt_threshold=500,
                               hamt_fanout=fanout)  # fmt: skip
    ds = create_root_dataset(tmp_path / "ds", blocks=40, data_bytes=40_000, seed=21).path
    out = tmp_path / "out"
    first = publish_dataset(ds, CarTarget(out, keystore, profile=prof))
    tables = json.loads((out / "publish.json").read_text())["extra"]["hamtShards"]
    assert set(tables) == {"blocks", "data", "checkpoints"}
    sent = car_cids(out / first.upload.summary["car"])
    for step in range(3):
        append_blocks(ds, 1, data_bytes=700, seed=step)
        upd = publish_dataset(ds, CarTarget(out, keystore, profile=prof))
        new = car_cids(out / upd.upload.summary["car"])
        full_out = tmp_path / f"full-{step}"
        full = publish_dataset(ds, CarTarget(full_out, keystore, profile=prof))
        assert upd.upload.locator == full.upload.locator
        assert import_tree(ds, cid_version=1, hamt_threshold=500, fanout=fanout).cid.encode() == (
            upd.upload.locator
        )
        state = json.loads((out / "publish.json").read_text())["extra"]
        assert (
            state["hamtShards"]
            == json.loads((full_out / "publish.json").read_text())["extra"]["hamtShards"]
        )
        # No list of every directory block sent: the update's CAR holds no
        # block an earlier CAR holds, and the CARs together hold every block of the root.
        assert "dirBlocks" not in state
        assert not new & sent
        sent |= new
        assert car_cids(full_out / full.upload.summary["car"]) <= sent
        check_car_dir(out)
    assert first.upload.locator != upd.upload.locator


def test_inspect_reports_the_record_as_facts_and_the_plan_decides(tmp_path, keystore):
    # Car: says what its record is (fresh or due, its inputs map); keeping
    # it on a no-op publish is the plan's decision (odfweb3.publish.plan.plan_record).
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=1000, seed=7).path
    out = tmp_path / "out"
    first = publish_dataset(ds, CarTarget(out, keystore))
    head, did = first.plan.head, first.plan.dataset_id
    view = CarTarget(out, keystore).inspect(did, head)
    assert view.record is not None and not view.record.renewal_due and view.record.inputs is None
    later = datetime.now(UTC) + DEFAULT_LIFETIME / 2 + timedelta(minutes=1)
    due = CarTarget(out, keystore, clock=lambda: later).inspect(did, head)
    assert due.record is not None and due.record.renewal_due
    (out / first.state.record["file"]).unlink()  # no record file: nothing to keep
    assert CarTarget(out, keystore).inspect(did, head).record is None
    again = publish_dataset(ds, CarTarget(out, keystore))
    assert not again.plan.keep_record and again.state.record["sequence"] == 1


def test_an_update_parses_the_state_once_where_read_and_serializes_once_where_written(
    tmp_path, keystore, monkeypatch
):
    # The typed state goes from inspect to save: publish.json is parsed once, where it is
    # read (upload and commit compare the same file by its identity), and the new state is
    # serialized once, where publish.json is written.
    from odfweb3_ipfs.publish import state as ipfs_state

    ds = create_root_dataset(tmp_path / "ds", blocks=3, data_bytes=2000, seed=21).path
    out = tmp_path / "out"
    publish_dataset(ds, CarTarget(out, keystore))
    append_blocks(ds, 1, data_bytes=1000, seed=22)
    parsed, written = [], []
    parse, serialize = ipfs_state.parse_car_extra, ipfs_state.serialize_car_extra
    monkeypatch.setattr(
        ipfs_state, "parse_car_extra", lambda raw, w: parsed.append(w) or parse(raw, w)
    )
    monkeypatch.setattr(
        ipfs_state, "serialize_car_extra", lambda x: written.append(x) or serialize(x)
    )
    done = publish_dataset(ds, CarTarget(out, keystore))
    assert parsed == [str(out / "publish.json")] and len(written) == 1
    assert done.state is not None and done.state.extra == serialize(written[0])


def test_the_first_cars_rename_is_durable_before_publish_json(tmp_path, keystore, monkeypatch):
    # The resumable first CAR is renamed from its own partial name: its directory is
    # fsynced before publish.json (which names the CAR) is written, or a crash could keep
    # the state's rename and lose the CAR's.
    from odfweb3_ipfs.publish import car_target

    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=10_000, seed=3).path
    out = tmp_path / "out"
    seen = []
    real = car_target.fsync_dir

    def spy(directory):
        if directory == out:
            seen.append(
                (sorted(p.name for p in out.glob("*.car")), (out / "publish.json").exists())
            )
        real(directory)

    monkeypatch.setattr(car_target, "fsync_dir", spy)
    first = publish_dataset(ds, CarTarget(out, keystore))
    assert seen == [([f"{first.upload.locator}.car"], False)]
