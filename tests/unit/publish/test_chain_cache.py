"""The verified-chain cache: a publish reads only the blocks above a head it
verified before, checks every one of them against every chain rule, and gives the same
plan, descriptor and bytes as a walk of the whole chain."""

import dataclasses
import json
import shutil

import pytest

from odfweb3.crypto.keystore import Keystore
from odfweb3.descriptor import build_descriptor, descriptor_from_facts
from odfweb3.errors import OdfWeb3Error
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.chain import iter_objects, walk_chain
from odfweb3.odf.codec import block_hash, decode_block, encode_block
from odfweb3.odf.facts import ObjectFilter, facts_of_chain
from odfweb3.odf.layout import DatasetReader, DatasetWriter
from odfweb3.odf.model_gen import (
    AddData,
    Checkpoint,
    DisablePollingSource,
    Seed,
    SetTransform,
)
from odfweb3.odf.timestamp import Timestamp
from odfweb3.publish import chain_cache
from odfweb3.publish.chain_cache import ChainCache, facts_from_json, facts_to_json, load_chain
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.plan import LazySequence, plan_publish
from odfweb3_ipfs.publish.car_target import CarTarget

DID = "did:odf:test"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    return create_root_dataset(
        tmp_path_factory.mktemp("cc") / "ds", blocks=6, data_bytes=6000, seed=5
    ).path


@pytest.fixture
def ds(pristine, tmp_path):
    dest = tmp_path / "ds"
    shutil.copytree(pristine, dest)
    return dest


def _same_facts(a, b):
    """Equal in everything but the filter's size (chosen when it was first built)."""
    return dataclasses.replace(a, seen=None) == dataclasses.replace(b, seen=None)


def test_second_load_walks_only_the_new_blocks(ds, tmp_path):
    cache = ChainCache(tmp_path / "verified")
    first = load_chain(DatasetReader.open(ds), cache)
    assert first.complete and len(first.walked) == 10
    append_blocks(ds, 2, data_bytes=100, seed=1)
    second = load_chain(DatasetReader.open(ds), ChainCache(tmp_path / "verified"))
    assert not second.complete
    assert len(second.walked) == 3  # two new blocks and the cached head
    whole = list(walk_chain(DatasetReader.open(ds)))
    assert _same_facts(second.facts, facts_of_chain(whole))
    assert all(
        second.facts.seen.may_hold(o.kind, o.hash) for o in iter_objects(whole) if o.kind != "block"
    )
    assert second.whole() == whole and second.complete
    # The entry round-trips through its JSON form.
    again = facts_from_json(json.loads(json.dumps(facts_to_json(second.facts))))
    assert again == second.facts


def test_same_head_reads_one_block(ds, tmp_path):
    cache = ChainCache(tmp_path / "verified")
    load_chain(DatasetReader.open(ds), cache)
    again = load_chain(DatasetReader.open(ds), ChainCache(tmp_path / "verified"))
    assert len(again.walked) == 1 and not again.complete


def _rewrite_head(ds, **changes):
    """Replace the head block by a copy with ``changes`` (block fields or ``event``)."""
    reader = DatasetReader.open(ds)
    blk = decode_block(reader.read_block_bytes(reader.head()))
    bad = dataclasses.replace(blk, **changes)
    data = encode_block(bad)
    w = DatasetWriter(ds)
    w.write_object("block", block_hash(data), data)
    w.set_head(block_hash(data))
    return blk


def _event(ds, **changes):
    reader = DatasetReader.open(ds)
    ev = decode_block(reader.read_block_bytes(reader.head())).event
    assert isinstance(ev, AddData)
    return dataclasses.replace(ev, **changes)


BAD = {
    "offsets-sequential": lambda ds: {"event": _event(ds, prev_offset=123456)},
    "prev-checkpoint": lambda ds: {"event": _event(ds, prev_checkpoint=None)},
    "watermark-monotonic": lambda ds: {"event": _event(ds, new_watermark=Timestamp(1990, 1, 0, 0))},
    "watermark-dropped": lambda ds: {"event": _event(ds, new_watermark=None)},
    "system-time-monotonic": lambda ds: {"system_time": Timestamp(1990, 1, 0, 0)},
    "sequence-number": lambda ds: {"sequence_number": 99},
    "seed-once": lambda ds: {"event": Seed(dataset_id=b"\x00" * 34, dataset_kind=0)},
    "unimplemented-event": lambda ds: {"event": DisablePollingSource()},
    "transform-inputs": lambda ds: {"event": SetTransform(inputs=(), transform=None)},
    # no data; the checkpoint the previous block wrote, again; its watermark: nothing changes
    "no-op": lambda ds: {"event": _event(ds, new_data=None,
                                         new_checkpoint=_head_event(ds).new_checkpoint,
                                         new_watermark=_head_event(ds).new_watermark)},
}  # fmt: skip


def _head_event(ds):
    reader = DatasetReader.open(ds)
    blk = decode_block(reader.read_block_bytes(reader.head()))
    return decode_block(reader.read_block_bytes(blk.prev_block_hash)).event


@pytest.mark.parametrize("rule", sorted(BAD))
def test_a_bad_new_block_above_a_cached_head_is_refused(ds, tmp_path, rule):
    cache_dir = tmp_path / "verified"
    load_chain(DatasetReader.open(ds), ChainCache(cache_dir))  # the head is cached now
    append_blocks(ds, 1, data_bytes=100, seed=3)
    _rewrite_head(ds, **BAD[rule](ds))
    if rule == "watermark-dropped":
        rule = "watermark-monotonic"
    with pytest.raises(OdfWeb3Error) as err:
        load_chain(DatasetReader.open(ds), ChainCache(cache_dir))
    assert (rule if rule != "sequence-number" else "sequence number") in str(err.value)
    # Without the cache the same block is refused too (the same rules, one walk).
    with pytest.raises(OdfWeb3Error):
        load_chain(DatasetReader.open(ds), None)


@pytest.mark.parametrize(
    "damage",
    ["garbage", "other-head", "truncated", "directory", "filter-flip", "filter-gone",
     "filter-name", "patch"],
)  # fmt: skip
def test_a_damaged_cache_costs_a_full_walk(ds, tmp_path, damage):
    cache_dir = tmp_path / "verified"
    load_chain(DatasetReader.open(ds), ChainCache(cache_dir))
    (entry,) = cache_dir.glob("*.json")
    (bloom,) = cache_dir.glob("bloom-*.bin")
    doc = json.loads(entry.read_text())
    if damage == "filter-flip":
        data = bytearray(bloom.read_bytes())
        data[5] ^= 1
        bloom.write_bytes(bytes(data))
    elif damage == "filter-gone":
        bloom.unlink()
    elif damage == "filter-name":
        doc["seen"][2]["file"] = "../" + bloom.name
        entry.write_text(json.dumps(doc))
    elif damage == "patch":  # past the filter's end
        doc["seen"][2]["patch"] = (10**9).to_bytes(4, "big").hex() + "ff"
        entry.write_text(json.dumps(doc))
    elif damage == "garbage":
        entry.write_bytes(b"\xff{not json")
    elif damage == "other-head":  # an entry under another block's name
        other = list(walk_chain(DatasetReader.open(ds)))[3].hash
        shutil.copy(entry, cache_dir / f"{other.hex()}.json")
        entry.unlink()
    elif damage == "truncated":
        entry.write_bytes(entry.read_bytes()[:100])
    else:
        entry.unlink()
        entry.mkdir()
    append_blocks(ds, 1, data_bytes=100, seed=4)
    chain = load_chain(DatasetReader.open(ds), ChainCache(cache_dir))
    assert chain.complete
    assert _same_facts(chain.facts, facts_of_chain(list(walk_chain(DatasetReader.open(ds)))))


def test_a_repeated_object_is_counted_once(ds, tmp_path):
    """A new block naming an older block's checkpoint: the filter sends it to a full walk."""
    cache_dir = tmp_path / "verified"
    load_chain(DatasetReader.open(ds), ChainCache(cache_dir))
    old_cp = next(o for o in iter_objects(walk_chain(DatasetReader.open(ds)))
                  if o.kind == "checkpoint" and o.size)  # fmt: skip
    append_blocks(ds, 1, data_bytes=100, seed=6)
    _rewrite_head(ds, event=_event(ds, new_checkpoint=Checkpoint(old_cp.hash, old_cp.size)))
    chain = load_chain(DatasetReader.open(ds), ChainCache(cache_dir))
    assert chain.complete  # the filter could not rule the repeat out
    whole = list(walk_chain(DatasetReader.open(ds)))
    assert _same_facts(chain.facts, facts_of_chain(whole))
    assert chain.facts.objects == len(list(iter_objects(whole)))
    plan = plan_publish(
        chain,
        dataset_id=DID,
        target="t",
        remote_head=whole[1].hash,
        remote_has=frozenset(o.path for o in iter_objects(whole[1:])) - {old_cp.path},
    )
    # Its block and data file are sent; the old checkpoint is not sent again.
    assert [o.kind for o in plan.send] == ["block", "data"]


def test_plan_and_descriptor_match_the_whole_chain(ds, tmp_path):
    cache_dir = tmp_path / "verified"
    before = load_chain(DatasetReader.open(ds), ChainCache(cache_dir))
    append_blocks(ds, 2, data_bytes=100, seed=7)
    chain = load_chain(DatasetReader.open(ds), ChainCache(cache_dir))
    whole = list(walk_chain(DatasetReader.open(ds)))
    have = frozenset(o.path for o in iter_objects(whole[2:]))
    lazy = plan_publish(chain, dataset_id=DID, target="t", remote_head=before.head, remote_has=have)
    full = plan_publish(whole, dataset_id=DID, target="t", remote_head=before.head, remote_has=have)
    assert isinstance(lazy.objects, LazySequence) and not lazy.objects.loaded
    assert (lazy.relation, lazy.send, lazy.new_blocks) == (full.relation, full.send, 2)
    assert len(lazy.objects) == len(full.objects) and lazy.total_bytes == full.total_bytes
    assert lazy.to_json() == full.to_json() and str(lazy) == str(full)
    assert not lazy.objects.loaded  # printing the plan walked nothing
    assert lazy.objects == full.objects and lazy.chain == full.chain
    pub = {"name": "P", "type": "Person"}
    assert descriptor_from_facts(chain.facts, pub, {"ipfs": "bafy"}) == build_descriptor(
        whole, pub, {"ipfs": "bafy"}
    )


@pytest.mark.parametrize("relation", ["same", "behind-forced", "new"])
def test_other_relations_plan_as_from_the_whole_chain(ds, tmp_path, relation):
    cache_dir = tmp_path / "verified"
    old = load_chain(DatasetReader.open(ds), ChainCache(cache_dir))
    append_blocks(ds, 1, data_bytes=100, seed=8)
    chain = load_chain(DatasetReader.open(ds), ChainCache(cache_dir))
    whole = list(walk_chain(DatasetReader.open(ds)))
    kw = {
        "same": {"remote_head": chain.head},
        "behind-forced": {"remote_head": b"\x16\x20" + b"\x01" * 32, "force": True},
        "new": {"remote_head": None},
    }[relation]
    a = plan_publish(chain, dataset_id=DID, target="t", **kw)
    b = plan_publish(whole, dataset_id=DID, target="t", **kw)
    assert a == b and a.to_json() == b.to_json()
    assert old.head in {e.hash for e in a.chain}


def test_car_publishes_with_and_without_the_cache_are_identical(ds, tmp_path):
    keys = tmp_path / "keys"
    keys.mkdir(mode=0o700)
    other = tmp_path / "ds2"
    shutil.copytree(ds, other)
    cache = tmp_path / "verified"
    for step in range(3):
        if step:
            append_blocks(ds, 1, data_bytes=500, seed=step)
            append_blocks(other, 1, data_bytes=500, seed=step)
        a = publish_dataset(ds, CarTarget(tmp_path / "a", Keystore(keys)),
                            chain_cache=ChainCache(cache))  # fmt: skip
        b = publish_dataset(other, CarTarget(tmp_path / "b", Keystore(keys)))
        assert a.upload.locator == b.upload.locator
        assert a.plan.send == b.plan.send and a.state.objects == b.state.objects
    cars = sorted(p.name for p in (tmp_path / "a").glob("*.car"))
    assert cars == sorted(p.name for p in (tmp_path / "b").glob("*.car"))
    for name in cars:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


@pytest.mark.parametrize("case", ["cached", "repeat", "target-head-not-cached"])
def test_a_head_cached_before_plans_from_the_target_heads_facts(ds, tmp_path, case):
    # A head verified (and cached) by a publish to one target, published to a
    # second target holding an older head: the base is our head itself, so the target's
    # head's own cached filter says which new objects are repeats; the whole chain is
    # walked only when it cannot rule one out (or that head is not cached).
    cache_dir = tmp_path / "verified"
    before = load_chain(DatasetReader.open(ds), ChainCache(cache_dir))
    below = list(walk_chain(DatasetReader.open(ds)))[1:]  # below the target's head
    old_cp = next(o for o in iter_objects(below) if o.kind == "checkpoint" and o.size)
    append_blocks(ds, 2, data_bytes=100, seed=9)
    if case == "repeat":  # the new head names an older block's checkpoint again
        _rewrite_head(ds, event=_event(ds, new_checkpoint=Checkpoint(old_cp.hash, old_cp.size)))
    load_chain(DatasetReader.open(ds), ChainCache(cache_dir))  # the first target's publish
    if case == "target-head-not-cached":
        (cache_dir / f"{before.head.hex()}.json").unlink()
    chain = load_chain(DatasetReader.open(ds), ChainCache(cache_dir))
    assert len(chain.walked) == 1 and chain.base is not None  # our head: cached
    whole = list(walk_chain(DatasetReader.open(ds)))
    # (The old checkpoint is not listed as held: only the target's head covers it.)
    have = frozenset(o.path for o in iter_objects(whole[2:])) - {old_cp.path}
    lazy = plan_publish(chain, dataset_id=DID, target="t", remote_head=before.head, remote_has=have)
    full = plan_publish(whole, dataset_id=DID, target="t", remote_head=before.head, remote_has=have)
    assert (lazy.relation, lazy.send, lazy.new_blocks) == (full.relation, full.send, 2)
    assert old_cp.path not in {o.path for o in lazy.send}
    # Walked down to the target's head only, unless the filter could not answer.
    assert chain.complete == (case != "cached")
    if case == "cached":
        assert len(chain.walked) == 3


def test_the_filter_is_sized_for_data_files_and_checkpoints(ds, monkeypatch):
    # Blocks are never added to the filter: sizing it for them too doubled the cache entry
    # (1 MB of filter at 100,000 blocks, read and written by every publish).
    asked = []
    real = ObjectFilter.sized_for.__func__

    def sized_for(cls, n):
        asked.append(n)
        return real(cls, n)

    monkeypatch.setattr(ObjectFilter, "sized_for", classmethod(sized_for))
    facts = load_chain(DatasetReader.open(ds)).facts
    held = facts.data_files + facts.checkpoints
    assert asked == [held] and 0 < held < facts.objects


@pytest.mark.parametrize("rule", sorted(BAD))
def test_a_streamed_walk_refuses_what_a_held_walk_refuses(ds, tmp_path, monkeypatch, rule):
    # Past HELD blocks without a cached head the walk keeps no decoded block and
    # checks the rules walking back: the same verdict and message as the held walk.
    append_blocks(ds, 1, data_bytes=100, seed=3)
    _rewrite_head(ds, **BAD[rule](ds))
    with pytest.raises(OdfWeb3Error) as held:
        load_chain(DatasetReader.open(ds), None)
    monkeypatch.setattr(chain_cache, "HELD", 2)
    with pytest.raises(OdfWeb3Error) as streamed:
        load_chain(DatasetReader.open(ds), ChainCache(tmp_path / "verified"))
    assert str(streamed.value) == str(held.value)


def test_a_streamed_walk_gives_the_held_walks_chain(ds, tmp_path, monkeypatch):
    held = load_chain(DatasetReader.open(ds), None)
    monkeypatch.setattr(chain_cache, "HELD", 2)
    cache = ChainCache(tmp_path / "verified")
    streamed = load_chain(DatasetReader.open(ds), cache)
    assert len(streamed.walked) == 2 and not streamed.complete  # the rest was not kept
    assert streamed.facts == held.facts and cache.get(held.head) == held.facts
    assert streamed.objects() == held.objects()
    assert streamed.whole() == held.whole()  # walked again when asked
    # A cached head deeper than HELD: walked again, holding only the blocks above it.
    append_blocks(ds, 4, data_bytes=100, seed=8)
    again = load_chain(DatasetReader.open(ds), ChainCache(tmp_path / "verified"))
    assert len(again.walked) == 5 and again.base == held.facts
    assert _same_facts(again.facts, facts_of_chain(list(walk_chain(DatasetReader.open(ds)))))


def test_extended_entries_name_one_filter_file_and_list_what_changed(ds, tmp_path, monkeypatch):
    # The filter (1 MB at 100,000 blocks) is written once, not into every entry;
    # an extended head's entry names the file and lists the bytes its objects changed.
    import odfweb3.publish.chain_cache as cc

    cache_dir = tmp_path / "verified"
    load_chain(DatasetReader.open(ds), ChainCache(cache_dir))
    (first,) = cache_dir.glob("bloom-*.bin")
    for step in range(3):
        append_blocks(ds, 1, data_bytes=100, seed=20 + step)
        chain = load_chain(DatasetReader.open(ds), ChainCache(cache_dir))
        assert not chain.complete
        assert list(cache_dir.glob("bloom-*.bin")) == [first]
        doc = json.loads((cache_dir / f"{chain.head.hex()}.json").read_text())
        assert doc["seen"][2]["file"] == first.name and doc["seen"][2]["patch"]
        # read back: the same filter as the one extended in memory
        assert ChainCache(cache_dir).get(chain.head) == chain.facts
    whole = list(walk_chain(DatasetReader.open(ds)))
    assert _same_facts(chain.facts, facts_of_chain(whole))
    # Past MAX_PATCH changed bytes, a new file.
    monkeypatch.setattr(cc, "MAX_PATCH", 2)
    append_blocks(ds, 1, data_bytes=100, seed=30)
    chain = load_chain(DatasetReader.open(ds), ChainCache(cache_dir))
    files = set(cache_dir.glob("bloom-*.bin"))
    assert len(files) == 2 and first in files
    doc = json.loads((cache_dir / f"{chain.head.hex()}.json").read_text())
    assert doc["seen"][2]["file"] != first.name and doc["seen"][2]["patch"] == ""
    assert ChainCache(cache_dir).get(chain.head) == chain.facts


def test_pruning_keeps_the_filter_files_of_the_kept_entries(ds, tmp_path, monkeypatch):
    import odfweb3.publish.chain_cache as cc

    monkeypatch.setattr(cc, "KEEP", 2)
    monkeypatch.setattr(cc, "MAX_PATCH", 2)  # every extension writes its own file
    cache_dir = tmp_path / "verified"
    load_chain(DatasetReader.open(ds), ChainCache(cache_dir))
    heads = []
    for step in range(4):
        append_blocks(ds, 1, data_bytes=100, seed=40 + step)
        heads.append(load_chain(DatasetReader.open(ds), ChainCache(cache_dir)).head)
    entries = {p.name for p in cache_dir.glob("*.json")}
    assert entries == {f"{h.hex()}.json" for h in heads[-2:]}
    named = {json.loads((cache_dir / n).read_text())["seen"][2]["file"] for n in entries}
    assert {p.name for p in cache_dir.glob("bloom-*.bin")} == named
    for h in heads[-2:]:
        assert ChainCache(cache_dir).get(h) is not None


def test_an_entry_with_its_filter_inline_is_still_read(ds, tmp_path):
    # entries written before issue 19's filter files hold the filter in base64
    cache_dir = tmp_path / "verified"
    facts = load_chain(DatasetReader.open(ds), ChainCache(cache_dir)).facts
    for p in cache_dir.iterdir():
        p.unlink()
    (cache_dir / f"{facts.head.hex()}.json").write_text(json.dumps(facts_to_json(facts)))
    assert ChainCache(cache_dir).get(facts.head) == facts
    append_blocks(ds, 1, data_bytes=100, seed=50)
    chain = load_chain(DatasetReader.open(ds), ChainCache(cache_dir))
    assert not chain.complete and len(list(cache_dir.glob("bloom-*.bin"))) == 1


def test_a_damaged_filter_file_is_written_again(ds, tmp_path):
    cache_dir = tmp_path / "verified"
    load_chain(DatasetReader.open(ds), ChainCache(cache_dir))
    (bloom,) = cache_dir.glob("bloom-*.bin")
    good = bloom.read_bytes()
    bloom.write_bytes(b"\0" * len(good))
    chain = load_chain(DatasetReader.open(ds), ChainCache(cache_dir))
    assert chain.complete  # the entry could not be used: walked whole, cached again
    assert bloom.read_bytes() == good
    assert ChainCache(cache_dir).get(chain.head) == chain.facts


def test_an_entry_of_the_old_format_is_walked_again(ds, tmp_path):
    """An entry of an older format holds a head checked against older rules: ignored, so
    the chain is walked and checked against kamu's rules again."""
    cache_dir = tmp_path / "verified"
    load_chain(DatasetReader.open(ds), ChainCache(cache_dir))
    (entry,) = cache_dir.glob("*.json")
    doc = json.loads(entry.read_text())
    assert doc["format"] == 6 and doc["rules"]["dataSeen"] is True
    doc["format"] = 5
    entry.write_text(json.dumps(doc))
    append_blocks(ds, 1, data_bytes=100, seed=4)
    chain = load_chain(DatasetReader.open(ds), ChainCache(cache_dir))
    assert chain.complete


def test_nothing_new_to_a_target_holding_our_head_reads_only_the_head(ds, tmp_path, monkeypatch):
    keys = tmp_path / "keys"
    keys.mkdir(mode=0o700)
    cache = tmp_path / "verified"
    out = tmp_path / "car"
    first = publish_dataset(ds, CarTarget(out, Keystore(keys)), chain_cache=ChainCache(cache))
    cars = sorted(p.name for p in out.iterdir())
    read: list[bytes] = []
    real = DatasetReader.read_block_bytes

    def counting(self, mh):
        read.append(mh)
        return real(self, mh)

    monkeypatch.setattr(DatasetReader, "read_block_bytes", counting)
    again = publish_dataset(ds, CarTarget(out, Keystore(keys)), chain_cache=ChainCache(cache))
    monkeypatch.undo()
    assert again.plan.relation == "same" and again.plan.send == () and again.plan.is_noop
    assert read == [first.plan.head]  # the cached head only: no block below it decoded
    assert not again.plan.objects.loaded
    assert sorted(p.name for p in out.iterdir()) == cars  # and nothing written
    assert again.state.head == first.state.head


@pytest.mark.parametrize("lost", [0, 1, "all"])
def test_same_head_sends_only_what_the_targets_view_lacks(ds, tmp_path, lost):
    cache_dir = tmp_path / "verified"
    load_chain(DatasetReader.open(ds), ChainCache(cache_dir))
    chain = load_chain(DatasetReader.open(ds), ChainCache(cache_dir))
    whole = list(walk_chain(DatasetReader.open(ds)))
    everything = [o.path for o in iter_objects(whole)]
    has = set() if lost == "all" else set(everything[lost:])
    kw = {"remote_head": chain.head, "remote_has": has}
    a = plan_publish(chain, dataset_id=DID, target="t", **kw)
    assert a.objects.loaded == (lost != 0)  # a whole view: nothing below the head is read
    b = plan_publish(whole, dataset_id=DID, target="t", **kw)
    assert a.relation == "same" and a == b
    assert [o.path for o in a.send] == [p for p in everything if p not in has]
