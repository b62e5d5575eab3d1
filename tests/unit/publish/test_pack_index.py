"""The core pack store: an index whose folders, partition and entry form are passed
in; an update writes one pack of the changed parts only; a pack is written before the state
names it and dropped once no state does; damaged parts are one FormatError."""

import hashlib

import pytest

from odfweb3.errors import FormatError
from odfweb3.publish import pack_index
from odfweb3.publish.pack_index import IndexLayout, PackIndex, drop_packs, write_pack


def _decode(raw, where):
    if not isinstance(raw, int) or isinstance(raw, bool):
        raise FormatError(f"{where}: malformed entry")
    return {"n": raw}


class _Index(PackIndex):
    layout = IndexLayout(
        ("a", "b"),
        lambda name: hashlib.sha256(name.encode()).digest()[0],
        lambda e: e["n"],
        _decode,
    )


def _objects(n, folder="a"):
    return {f"{folder}/x{i}": {"n": i} for i in range(n)}


def test_the_layout_decides_folders_partitions_and_entries(tmp_path):
    index, pack = _Index.of_objects(tmp_path, _objects(500) | _objects(3, "b"))
    write_pack(tmp_path, pack)
    again = _Index.from_json(tmp_path, index.to_json(), "t")
    assert len(again) == 503 and again.count("a") == 500
    assert again["a/x7"] == {"n": 7} and len(again._parts) == 1
    assert "c/x1" not in again and "a/nope" not in again
    assert dict(again) == _objects(500) | _objects(3, "b")
    with pytest.raises(FormatError):
        _Index.of_objects(tmp_path, {"c/x": {"n": 1}})  # not one of the layout's folders


def test_an_update_is_one_small_pack_and_old_packs_are_dropped_after(tmp_path):
    index, pack = _Index.of_objects(tmp_path, _objects(2000))
    first = write_pack(tmp_path, pack)
    after, delta = _Index.from_json(tmp_path, index.to_json(), "t").updated({"a/new": {"n": -1}})
    second = write_pack(tmp_path, delta)
    assert len(delta) * 50 < len(pack) and after.packs == {first, second}
    (tmp_path / PackIndex.pack_name(b"stale")).write_bytes(b"stale")  # an interrupted run's
    drop_packs(tmp_path, after.packs)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([first, second])
    assert _Index.from_json(tmp_path, after.to_json(), "t")["a/new"] == {"n": -1}


def test_drop_packs_older_than_keeps_a_pack_written_since(tmp_path):
    """A shared state directory (node and gateway targets): a pack another publisher wrote
    after this publish began is not this publish's to remove."""
    import os

    old = tmp_path / PackIndex.pack_name(b"old")
    new = tmp_path / PackIndex.pack_name(b"new")
    old.write_bytes(b"old")
    new.write_bytes(b"new")
    os.utime(old, (1000.0, 1000.0))
    os.utime(new, (3000.0, 3000.0))
    (tmp_path / "notes.txt").write_text("not a pack")
    drop_packs(tmp_path, set(), older_than=2000.0)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([new.name, "notes.txt"])


def test_past_max_packs_the_largest_pack_stays_and_the_rest_merge(tmp_path, monkeypatch):
    monkeypatch.setattr(pack_index, "MAX_PACKS", 3)
    index, full = _Index.of_objects(tmp_path, _objects(2000))
    first = write_pack(tmp_path, full)
    for i in range(7):
        index, pack = index.updated({f"b/y{i}": {"n": i}})
        write_pack(tmp_path, pack)
        assert len(index.packs) <= 3 and first in index.packs  # the full pack is never rewritten
        assert len(pack) * 20 < len(full)
    assert len(index) == 2007
    again = _Index.from_json(tmp_path, index.to_json(), "t")
    assert dict(again) == _objects(2000) | {f"b/y{i}": {"n": i} for i in range(7)}
    # A pack none of whose parts is named any more is no longer referenced.
    index, pack = index.updated({f"a/x{i}": {"n": -i} for i in range(2000)})
    index, pack = index.updated({"b/z": {"n": 0}})
    index, pack = index.updated({"b/w": {"n": 0}})
    assert first not in index.packs and len(index.packs) <= 3


@pytest.mark.parametrize("damage", ["entry", "partition", "flip"])
def test_a_damaged_part_is_one_format_error(tmp_path, damage):
    index, _ = _Index.of_objects(tmp_path, {"a/x": {"n": 1}})
    raw = index.to_json()
    ref = raw["a"][next(iter(raw["a"]))]
    body = {"entry": b'{"x":"1"}', "partition": b'{"zz":1}', "flip": b'{"x":2}'}[damage]
    if damage != "flip":  # a well-hashed part that lies about its content
        ref[1:4] = [0, len(body), hashlib.sha256(body).hexdigest()[:32]]
    (tmp_path / ref[0]).write_bytes(body)
    with pytest.raises(FormatError):
        _Index.from_json(tmp_path, raw, "publish.json")["a/x"]
