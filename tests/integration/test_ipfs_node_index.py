"""The node target's object index: ``--to ipfs`` keeps its per-object links in
content-named packs beside its state file (``<state>.index/``) and rebuilds only the changed
HAMT shard path, as ``car:DIR`` does; its checkpoint names packs, not every object.

Against the suite's Kubo. Each root is compared with an independent full build of the same
head (a fresh ``car:DIR`` publish with the same profile): never a wrong CID. Checked: the
index is used, an old whole-object state is migrated, a crash between the pack and the state
(or after the checkpoint, or after the record) loses and re-sends nothing, and a damaged or
hostile index is one error naming the file and what to do.
"""

import dataclasses
import json
import os
from datetime import UTC, datetime, timedelta

import pytest

from odfweb3.crypto.keystore import Keystore
from odfweb3.errors import FormatError
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.publish.chain_cache import ChainCache
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import StateStore
from odfweb3_ipfs.client.kubo import KuboClient
from odfweb3_ipfs.formats.libp2p_keys import IpnsName, public_key_bytes
from odfweb3_ipfs.publish import pipeline
from odfweb3_ipfs.publish.car_target import CarTarget
from odfweb3_ipfs.publish.cid_profile import DEFAULT_PROFILE
from odfweb3_ipfs.publish.node_target import IpfsNodeTarget, read_node_record

# Shards from a few dozen entries on, so a small dataset takes the HAMT paths.
SMALL_SHARDS = dataclasses.replace(DEFAULT_PROFILE, hamt_threshold=1000)


class Env:
    def __init__(self, tmp_path, api_url):
        self.tmp = tmp_path
        self.api_url = api_url
        self.keystore = Keystore(tmp_path / "keys")
        self.states = StateStore(tmp_path / "state")
        self.cache = ChainCache(tmp_path / "verified")
        self.ds = create_root_dataset(tmp_path / "ds", blocks=60, data_bytes=6000, seed=5).path
        self.fresh = 0

    def target(self, **kwargs):
        return IpfsNodeTarget(
            KuboClient(self.api_url),
            self.keystore,
            self.states,
            profile=SMALL_SHARDS,
            tmp_dir=self.tmp,
            settle=0,
            **kwargs,
        )

    def publish(self, **kwargs):
        return publish_dataset(self.ds, self.target(**kwargs), chain_cache=self.cache)

    def fresh_root(self):
        """The root of an independent full build of the local head (same profile)."""
        self.fresh += 1
        car = CarTarget(self.tmp / f"fresh-{self.fresh}", self.keystore, profile=SMALL_SHARDS)
        return publish_dataset(self.ds, car).upload.locator

    def state_path(self, did):
        return self.states.path_for(did, self.target().name)

    def doc(self, did):
        return json.loads(self.state_path(did).read_text())

    def packs_on_disk(self, did):
        return {p.name for p in self.target().index_dir(did).glob("index-*.pack")}

    def append(self, seed):
        append_blocks(self.ds, 1, data_bytes=100, seed=seed)


def _named(index_json):
    return {r[0] for parts in index_json.values() for r in parts.values()}


@pytest.fixture
def env(tmp_path, ipfs_node):
    return Env(tmp_path, ipfs_node.api_url)


@pytest.fixture
def indexed(monkeypatch):
    """Counts the builds that took the indexed path (only the changed shard path)."""
    calls = []
    real = pipeline.build_dataset_dag_indexed

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(pipeline, "build_dataset_dag_indexed", counting)
    return calls


def test_updates_use_the_index_and_build_the_same_root(env, indexed, monkeypatch):
    first = env.publish()
    did = first.plan.dataset_id
    doc = env.doc(did)
    assert doc["objects"] == {} and "hamtShards" in doc["extra"]
    assert _named(doc["extra"]["objectIndex"]) == env.packs_on_disk(did)
    assert first.upload.locator == env.fresh_root()
    checkpoints = []
    real = IpfsNodeTarget._checkpoint

    def keep(self, plan, *a, **k):
        real(self, plan, *a, **k)
        checkpoints.append(json.loads(self.states.path_for(plan.dataset_id, self.name).read_text()))

    monkeypatch.setattr(IpfsNodeTarget, "_checkpoint", keep)
    for step in range(3):
        env.append(100 + step)
        packs_before = env.packs_on_disk(did)
        out = env.publish()
        assert out.plan.relation == "ahead" and len(out.plan.send) == 3
        assert out.upload.locator == env.fresh_root()
        pending = checkpoints[-1]["extra"]["pending"]
        # The checkpoint names the index (one new small pack) and the new directory blocks.
        assert "objects" not in pending and set(pending["objectIndex"]) <= {
            "blocks",
            "checkpoints",
            "data",
        }
        new_packs = _named(pending["objectIndex"]) - packs_before
        assert len(new_packs) == 1
        # No list of every directory block: the layout says which are new.
        assert "dirBlocks" not in pending and "dirBlocks" not in checkpoints[-1]["extra"]
        doc = env.doc(did)
        assert "pending" not in doc["extra"] and doc["objects"] == {}
        assert _named(doc["extra"]["objectIndex"]) == env.packs_on_disk(did)
    assert indexed == [1, 1, 1]
    # Nothing new: the node serves our record, the plan keeps it: nothing built or sent.
    kept = env.publish()
    assert kept.plan.keep_record and kept.upload.bytes_sent == 0 and indexed == [1, 1, 1]
    # Nothing new with the record due for renewal (the clock 47 h on, of a 48 h lifetime):
    # the same root from the index; only refs/ and the root block are sent.
    later = datetime.now(UTC) + timedelta(hours=47)
    again = env.publish(clock=lambda: later)
    assert again.plan.relation == "same" and not again.plan.keep_record
    assert again.upload.locator == out.upload.locator
    assert again.upload.bytes_sent < 2048 and indexed == [1, 1, 1, 1]


def test_an_old_state_with_every_object_is_migrated(env, indexed):
    first = env.publish()
    did = first.plan.dataset_id
    # As older versions wrote it: every object in `objects`, no index, no shard tables.
    doc = env.doc(did)
    doc["objects"] = dict(first.state.objects)
    del doc["extra"]["objectIndex"], doc["extra"]["hamtShards"]
    env.state_path(did).write_text(json.dumps(doc))
    for pack in env.target().index_dir(did).iterdir():
        pack.unlink()
    env.append(7)
    again = env.publish()
    assert again.plan.relation == "ahead" and len(again.plan.send) == 3
    assert again.upload.locator == env.fresh_root()
    assert indexed == []  # the migrating publish builds from the whole state
    doc = env.doc(did)
    assert doc["objects"] == {} and _named(doc["extra"]["objectIndex"]) == env.packs_on_disk(did)
    env.append(8)
    third = env.publish()
    assert third.upload.locator == env.fresh_root() and indexed == [1]


def test_a_crash_between_the_pack_and_the_state_loses_nothing(env, indexed, monkeypatch):
    first = env.publish()
    did = first.plan.dataset_id
    before = env.state_path(did).read_bytes()
    env.append(21)

    def die(self, *a, **k):
        raise KeyboardInterrupt  # killed after the pack, before the checkpoint

    with monkeypatch.context() as crash, pytest.raises(KeyboardInterrupt):
        crash.setattr(IpfsNodeTarget, "_checkpoint", die)
        env.publish()
    assert env.state_path(did).read_bytes() == before
    orphans = env.packs_on_disk(did) - _named(json.loads(before)["extra"]["objectIndex"])
    assert len(orphans) == 1  # the new pack, named by no state
    again = env.publish()
    assert again.plan.relation == "ahead" and again.upload.locator == env.fresh_root()
    doc = env.doc(did)
    assert _named(doc["extra"]["objectIndex"]) == env.packs_on_disk(did)


def test_a_crash_after_the_checkpoint_resumes_from_it(env, indexed, monkeypatch):
    first = env.publish()
    did = first.plan.dataset_id
    env.append(31)

    def die(self, *a, **k):
        raise KeyboardInterrupt  # killed after the checkpoint, before the record

    with monkeypatch.context() as crash, pytest.raises(KeyboardInterrupt):
        crash.setattr(IpfsNodeTarget, "commit", die)
        env.publish()
    pending = env.doc(did)["extra"]["pending"]
    assert "objects" not in pending
    rerun = env.publish()
    assert any("resuming an interrupted publish" in n for n in rerun.notes)
    assert rerun.upload.locator == pending["root"] == env.fresh_root()
    assert rerun.plan.send == () and rerun.upload.bytes_sent < 5_000
    assert indexed == [1, 1]  # the killed run and the rerun, from the checkpoint's index
    env.append(32)
    assert env.publish().upload.locator == env.fresh_root()


def test_a_crash_after_the_record_reuses_the_checkpoint(env, indexed, monkeypatch):
    first = env.publish()
    did = first.plan.dataset_id
    env.append(41)

    def die(self, state):
        raise KeyboardInterrupt  # the record is put; the state is not saved

    with monkeypatch.context() as crash, pytest.raises(KeyboardInterrupt):
        crash.setattr(IpfsNodeTarget, "save", die)
        env.publish()
    root = env.doc(did)["extra"]["pending"]["root"]
    env.append(42)
    again = env.publish()
    assert any("interrupted publish: reusing it" in n for n in again.notes)
    assert len(again.plan.send) == 3 and again.upload.locator == env.fresh_root()
    assert again.plan.remote_head is not None and root != again.upload.locator
    assert indexed == [1, 1]


@pytest.mark.parametrize("damage", ["flip", "missing", "symlink", "hostile-name"])
def test_a_damaged_index_is_one_error_and_never_a_wrong_root(env, damage):
    first = env.publish()
    did = first.plan.dataset_id
    index_dir = env.target().index_dir(did)
    doc = env.doc(did)
    (pack,) = env.packs_on_disk(did)
    if damage == "flip":  # one bit in every part: whichever part the update reads
        data = bytearray((index_dir / pack).read_bytes())
        for parts in doc["extra"]["objectIndex"].values():
            for _pack, offset, length, _digest, _count in parts.values():
                data[offset + length // 2] ^= 1
        (index_dir / pack).write_bytes(bytes(data))
    elif damage == "missing":
        (index_dir / pack).unlink()
    elif damage == "symlink":
        (index_dir / pack).rename(index_dir / "elsewhere")
        os.symlink(index_dir / "elsewhere", index_dir / pack)
    else:
        folder = next(iter(doc["extra"]["objectIndex"]))
        part = next(iter(doc["extra"]["objectIndex"][folder]))
        doc["extra"]["objectIndex"][folder][part][0] = "../../" + pack
        env.state_path(did).write_text(json.dumps(doc))
    env.append(51)
    name = read_node_record(KuboClient(env.api_url), _ipns(env, did)).record.value_text
    with pytest.raises(FormatError) as err:
        env.publish()
    message = str(err.value)
    assert "\n" not in message
    if damage == "hostile-name":
        assert str(env.state_path(did)) in message
    else:
        assert str(index_dir / pack) in message and "delete the publish state" in message
    # Nothing moved; after doing what the message says, the publish is complete and right.
    assert read_node_record(KuboClient(env.api_url), _ipns(env, did)).record.value_text == name
    env.state_path(did).unlink()
    again = env.publish()
    assert again.upload.locator == env.fresh_root()


def _ipns(env, did):
    return IpnsName.from_public_key(public_key_bytes(env.keystore.load(did)))
