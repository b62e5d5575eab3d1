"""car:DIR's object index: per-object links in content-named packs, partitioned by
HAMT root bucket; an update reads and writes only the parts its new objects fall in, builds
the same DAG as a build over every object, and a damaged index is one FormatError."""

import dataclasses
import json
import shutil

import pytest

from odfweb3.crypto.keystore import Keystore
from odfweb3.errors import FormatError
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.publish import pack_index as oi
from odfweb3.publish.chain_cache import ChainCache
from odfweb3.publish.execute import publish_dataset
from odfweb3_ipfs.formats.car import iter_car
from odfweb3_ipfs.publish import pipeline
from odfweb3_ipfs.publish.car_target import CarTarget, objects_of
from odfweb3_ipfs.publish.cid_profile import DEFAULT_PROFILE
from odfweb3_ipfs.publish.object_index import ObjectIndex, partition_of

# Shards from a few dozen entries on, so small datasets exercise the HAMT paths.
SMALL_SHARDS = dataclasses.replace(DEFAULT_PROFILE, hamt_threshold=1000)


def _entries(n, folder="data"):
    return {
        f"{folder}/f1620{i:064x}": {"cid": f"bafy{i}", "tsize": 10 + i, "size": i} for i in range(n)
    }


def _write(tmp_path, pack):
    (tmp_path / ObjectIndex.pack_name(pack)).write_bytes(pack)


def test_round_trip_reads_one_part_per_lookup(tmp_path):
    objects = _entries(300) | _entries(20, "blocks")
    index, pack = ObjectIndex.of_objects(tmp_path, objects)
    _write(tmp_path, pack)
    again = ObjectIndex.from_json(tmp_path, json.loads(json.dumps(index.to_json())), "t")
    assert len(again) == 320 and again.count("data") == 300 and again.count("checkpoints") == 0
    path = "data/f1620" + f"{7:064x}"
    assert path in again and again[path] == objects[path]
    assert len(again._parts) == 1  # one part read, not the whole index
    assert "data/f1620" + "ff" * 32 not in again and "nonsense" not in again
    assert dict(again) == objects


def test_a_fresh_index_streams_the_same_pack(tmp_path):
    # write_fresh (values straight from the links, the pack streamed to its
    # content name) writes the bytes of_objects gives, and holds no entry.
    objects = _entries(300) | _entries(20, "blocks") | _entries(7, "checkpoints")
    want, pack = ObjectIndex.of_objects(tmp_path / "a", objects)

    def value(path):
        e = objects[path]
        return [e["cid"], e["tsize"], e["size"]]

    got = ObjectIndex.write_fresh(tmp_path, reversed(list(objects)), value)
    assert [p.name for p in tmp_path.iterdir() if p.is_file()] == [ObjectIndex.pack_name(pack)]
    assert (tmp_path / ObjectIndex.pack_name(pack)).read_bytes() == pack
    assert got.to_json() == want.to_json() and len(got) == len(objects)
    assert not got._parts  # read from the pack when asked, not held
    assert dict(ObjectIndex.from_json(tmp_path, got.to_json(), "t")) == objects
    with pytest.raises(FormatError, match="not an object"):
        ObjectIndex.write_fresh(tmp_path, ["refs/head"], value)


def test_an_update_writes_only_the_changed_parts(tmp_path):
    index, pack = ObjectIndex.of_objects(tmp_path, _entries(300))
    _write(tmp_path, pack)
    new = {"data/f1620" + "ab" * 32: {"cid": "bafynew", "tsize": 1, "size": 1}}
    after, delta = index.updated(new)
    _write(tmp_path, delta)
    part = partition_of("f1620" + "ab" * 32)
    changed = {
        (f, i)
        for f, parts in after.refs.items()
        for i, r in parts.items()
        if r.pack != ObjectIndex.pack_name(pack)
    }
    assert changed == {("data", part)} and len(delta) < len(pack) / 20
    reread = ObjectIndex.from_json(tmp_path, after.to_json(), "t")
    assert dict(reread) == _entries(300) | new


def test_past_max_packs_one_full_pack(tmp_path, monkeypatch):
    monkeypatch.setattr(oi, "MAX_PACKS", 3)  # the core pack store's
    index, _ = ObjectIndex.of_objects(tmp_path, _entries(50))
    for i in range(5):
        index, _ = index.updated({f"data/f1620{i:x}": {"cid": "c", "tsize": 1, "size": 1}})
        assert len(index.packs) <= 3
    assert len(index) == 55


@pytest.mark.parametrize("damage", ["flip", "missing", "name", "length", "count", "foreign"])
def test_a_damaged_index_is_one_format_error(tmp_path, damage):
    index, pack = ObjectIndex.of_objects(tmp_path, _entries(40))
    _write(tmp_path, pack)
    raw = index.to_json()
    name = ObjectIndex.pack_name(pack)
    key = next(iter(raw["data"]))
    if damage == "flip":
        data = bytearray(pack)
        data[raw["data"][key][1] + 3] ^= 1
        (tmp_path / name).write_bytes(bytes(data))
    elif damage == "missing":
        (tmp_path / name).unlink()
    elif damage == "name":
        raw["data"][key][0] = "../" + name
    elif damage == "length":
        raw["data"][key][2] = oi.MAX_PART + 1
    elif damage == "count":
        raw["data"][key][4] += 1
    else:
        raw["other"] = {}
    with pytest.raises(FormatError):
        again = ObjectIndex.from_json(tmp_path, raw, "publish.json")
        again.part("data", int(key, 16))


@pytest.fixture
def small(tmp_path):
    return create_root_dataset(tmp_path / "ds", blocks=60, data_bytes=6000, seed=3).path


def _publish(ds, out, keys, cache=None):
    target = CarTarget(out, Keystore(keys), profile=SMALL_SHARDS)
    return publish_dataset(ds, target, chain_cache=cache)


def test_updates_read_only_their_parts_and_build_the_same_dag(small, tmp_path, monkeypatch):
    keys = tmp_path / "keys"
    keys.mkdir(mode=0o700)
    cache = ChainCache(tmp_path / "verified")
    first = _publish(small, tmp_path / "a", keys, cache)
    assert first.upload.summary["carBlocks"] > 0
    loads = []
    real_part = ObjectIndex.part

    def counting(self, folder, i):
        if (folder, i) not in self._parts:
            loads.append((folder, i))
        return real_part(self, folder, i)

    monkeypatch.setattr(ObjectIndex, "part", counting)
    indexed = []
    real = pipeline.build_dataset_dag_indexed
    monkeypatch.setattr(
        pipeline, "build_dataset_dag_indexed", lambda *a, **k: indexed.append(1) or real(*a, **k)
    )
    for step in range(3):
        append_blocks(small, 1, data_bytes=100, seed=step)
        doc = json.loads((tmp_path / "a" / "publish.json").read_text())
        singles = {
            (f, int(k, 16)) for f, parts in doc["extra"]["objectIndex"].items()
            for k, ref in parts.items() if ref[4] == 1
        }  # fmt: skip
        loads.clear()
        out = _publish(small, tmp_path / "a", keys, cache)
        assert out.plan.relation == "ahead" and len(out.plan.send) == 3
        # The part of each new object (plan membership and the shard rebuilds share it),
        # and a root bucket's lone entry (linked by name; rare in a directory large
        # enough to shard under Kubo's threshold, everywhere in this small one).
        dirty = {(o.path.split("/")[0], partition_of(o.path.split("/")[1])) for o in out.plan.send}
        assert set(loads) <= dirty | singles, set(loads) - dirty - singles
        assert len(dirty & set(loads)) == 3
    assert indexed == [1, 1, 1]
    # The same root and objects as one publish of the final head into a fresh directory.
    fresh = _publish(small, tmp_path / "b", keys)
    assert out.upload.locator == fresh.upload.locator
    assert objects_of(tmp_path / "a") == objects_of(tmp_path / "b")
    # Every pack publish.json names is there, and only those.
    doc = json.loads((tmp_path / "a" / "publish.json").read_text())
    named = {r[0] for parts in doc["extra"]["objectIndex"].values() for r in parts.values()}
    assert named == {p.name for p in (tmp_path / "a").glob("index-*.pack")}
    assert "objects" not in doc


def test_an_old_publish_json_with_objects_is_read_and_converted(small, tmp_path):
    keys = tmp_path / "keys"
    keys.mkdir(mode=0o700)
    _publish(small, tmp_path / "a", keys)
    out = tmp_path / "a"
    # As written before the index: the objects in publish.json, no objectIndex, no pack,
    # and (before issue 19's last step) dirBlocks: every directory block sent.
    doc = json.loads((out / "publish.json").read_text())
    doc["objects"] = objects_of(out)
    del doc["extra"]["objectIndex"]
    sent = _car_blocks(out)
    doc["extra"]["dirBlocks"] = sorted(c.hex() for c in sent if c[:2] == b"\x01\x70")
    (out / "publish.json").write_text(json.dumps(doc))
    for p in out.glob("index-*.pack"):
        p.unlink()
    assert objects_of(out) == doc["objects"]
    for step in range(2):  # converted, then an update from the converted state
        append_blocks(small, 1, data_bytes=100, seed=9 + step)
        again = _publish(small, out, keys)
        assert again.plan.relation == "ahead" and len(again.plan.send) == 3
        assert "dirBlocks" not in json.loads((out / "publish.json").read_text())["extra"]
        new = _car_blocks(out, again.upload.summary["car"])
        assert new and not new & sent  # nothing sent twice
        sent |= new
        fresh = _publish(small, tmp_path / f"b{step}", keys)
        assert again.upload.locator == fresh.upload.locator
        assert objects_of(out) == objects_of(tmp_path / f"b{step}")
        assert _car_blocks(tmp_path / f"b{step}") <= sent  # nothing missing


def _car_blocks(out, name=None):
    """The raw CIDs of the blocks in ``out``'s dataset CARs (or the one named)."""
    names = [name] if name else json.loads((out / "publish.json").read_text())["extra"]["cars"]
    got = set()
    for car in names:
        with open(out / car, "rb") as f:
            _roots, blocks = iter_car(f)
            got |= {cid.raw for cid, _ in blocks}
    return got


def test_a_crash_before_publish_json_leaves_a_pack_and_the_rerun_recovers(
    small, tmp_path, monkeypatch
):
    keys = tmp_path / "keys"
    keys.mkdir(mode=0o700)
    _publish(small, tmp_path / "a", keys)
    before = (tmp_path / "a" / "publish.json").read_bytes()
    append_blocks(small, 1, data_bytes=100, seed=11)

    def crash(self, state):
        raise KeyboardInterrupt

    monkeypatch.setattr(CarTarget, "save", crash)
    with pytest.raises(KeyboardInterrupt):
        _publish(small, tmp_path / "a", keys)
    assert (tmp_path / "a" / "publish.json").read_bytes() == before
    monkeypatch.undo()
    again = _publish(small, tmp_path / "a", keys)
    assert again.plan.relation == "ahead" and len(again.plan.send) == 3
    fresh = _publish(small, tmp_path / "b", keys)
    assert again.upload.locator == fresh.upload.locator
    shutil.rmtree(tmp_path / "b")


def test_a_fresh_index_of_many_slices_is_the_same_pack(tmp_path, monkeypatch):
    # Past the slice size the paths are read again, a slice of parts at a time (no list of
    # every path held): the same pack and refs as one group of every entry.
    objects = _entries(900) | _entries(300, "blocks") | _entries(50, "checkpoints")
    want, pack = ObjectIndex.of_objects(tmp_path / "a", objects)
    monkeypatch.setattr(oi, "_SLICE", 64)
    reads = 0

    class Paths:
        def __iter__(self):
            nonlocal reads
            reads += 1
            return iter(objects)

    def value(path):
        e = objects[path]
        return [e["cid"], e["tsize"], e["size"]]

    hashed = 0
    partition_of = ObjectIndex.layout.partition_of

    def counted(name):
        nonlocal hashed
        hashed += 1
        return partition_of(name)

    layout = dataclasses.replace(ObjectIndex.layout, partition_of=counted)
    monkeypatch.setattr(ObjectIndex, "layout", layout)
    got = ObjectIndex.write_fresh(tmp_path, Paths(), value)
    assert (tmp_path / ObjectIndex.pack_name(pack)).read_bytes() == pack
    assert got.to_json() == want.to_json()
    assert reads > 2  # the count, then a read per slice
    assert hashed == len(objects)  # each name's part found once, on the first read
    assert dict(ObjectIndex.from_json(tmp_path, got.to_json(), "t")) == objects
