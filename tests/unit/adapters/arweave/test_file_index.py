"""bundle:DIR's file index: per-path file revisions in the core's content-named
packs; an update reads and writes only the parts its paths fall in, publish.json names this
bundle's paths only; an old publish.json listing every object is read and converted; a
publisher killed (SIGKILL) anywhere in a publish loses nothing and, rerun, leaves the
directory as one uninterrupted publish would (every path indexed, only named packs, the
replica reads back)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.multihash import multihash_from_str
from odfweb3.publish.chain_cache import ChainCache
from odfweb3.publish.execute import publish_dataset
from odfweb3_arweave.publish import bundle_target
from odfweb3_arweave.publish.bundle_plan import FileRef
from odfweb3_arweave.publish.bundle_target import BundleTarget, objects_of
from odfweb3_arweave.publish.file_index import FileIndex, index_after, partition_of
from odfweb3_arweave.read.bundle_replica import open_bundle_dir

from .conftest import FIXED_WALLET_PATH


def dataset_paths(ds: Path) -> set[str]:
    top = ("blocks", "refs", "data", "checkpoints")
    return {
        str(p.relative_to(ds))
        for p in ds.rglob("*")
        if p.is_file() and p.relative_to(ds).parts[0] in top
    }


def packs_named(out: Path) -> set[str]:
    doc = json.loads((out / "publish.json").read_text())
    return {r[0] for parts in doc["extra"]["objectIndex"].values() for r in parts.values()}


def check_directory(ds: Path, out: Path) -> None:
    """What one uninterrupted publish leaves: every path indexed, only the named packs."""
    assert set(objects_of(out)) == dataset_paths(ds)
    assert packs_named(out) == {p.name for p in out.glob("index-*.pack")}
    head = multihash_from_str((ds / "refs" / "head").read_text().strip())
    assert open_bundle_dir(f"bundle:{out}").head() == head


def test_updates_read_and_write_only_their_parts(tmp_path, fixed_wallet, monkeypatch) -> None:
    ds = create_root_dataset(tmp_path / "ds", blocks=40, data_bytes=4_000, seed=151).path
    out = tmp_path / "out"
    cache = ChainCache(tmp_path / "cache")
    monkeypatch.setattr(bundle_target, "ITEMS_ADDED_MAX", 10)
    publish_dataset(ds, BundleTarget(out, fixed_wallet), chain_cache=cache)
    # A first upload adds every path: publish.json does not list them (the index does).
    assert json.loads((out / "publish.json").read_text())["itemsAdded"] is None
    loads: list[tuple[str, int]] = []
    real_part = FileIndex.part

    def counting(self, folder, i):
        if (folder, i) not in self._parts:
            loads.append((folder, i))
        return real_part(self, folder, i)

    monkeypatch.setattr(FileIndex, "part", counting)
    for step in range(3):
        append_blocks(ds, 1, data_bytes=100, seed=160 + step)
        before = {p.name: p.stat().st_size for p in out.glob("index-*.pack")}
        loads.clear()
        outcome = publish_dataset(ds, BundleTarget(out, fixed_wallet), chain_cache=cache)
        assert outcome.plan.relation == "ahead" and len(outcome.plan.send) == 3
        added = {o.path for o in outcome.plan.send} | {"refs/head"}
        dirty = {(p.split("/")[0], partition_of(p.split("/")[1])) for p in added}
        assert set(loads) == dirty  # the parts of its own paths, no other
        doc = json.loads((out / "publish.json").read_text())
        assert "objects" not in doc and "itemsByPath" not in doc
        assert set(doc["itemsAdded"]) == added
        new = {p.name: p.stat().st_size for p in out.glob("index-*.pack")}.items() - before.items()
        assert len(new) == 1 and next(iter(new))[1] < max(before.values()) / 4
        check_directory(ds, out)
    fresh = tmp_path / "fresh"
    publish_dataset(ds, BundleTarget(fresh, fixed_wallet))
    assert set(objects_of(fresh)) == set(objects_of(out))


def test_an_old_publish_json_listing_every_object_is_converted(tmp_path, fixed_wallet) -> None:
    ds = create_root_dataset(tmp_path / "ds", blocks=12, data_bytes=3_000, seed=152).path
    out = tmp_path / "out"
    first = publish_dataset(ds, BundleTarget(out, fixed_wallet))
    # As written before the index: objects and itemsByPath in publish.json, no pack.
    doc = json.loads((out / "publish.json").read_text())
    objects = objects_of(out)
    doc["objects"] = objects
    doc["itemsByPath"] = {p: o["dataItemId"] for p, o in sorted(objects.items())}
    del doc["extra"]["objectIndex"], doc["itemsAdded"]
    (out / "publish.json").write_text(json.dumps(doc, indent=1, sort_keys=True))
    for p in out.glob("index-*.pack"):
        p.unlink()
    append_blocks(ds, 1, data_bytes=100, seed=153)
    again = publish_dataset(ds, BundleTarget(out, fixed_wallet))
    assert again.plan.relation == "ahead" and len(again.plan.send) == 3
    record = json.loads((out / "publish.json").read_text())["record"]
    assert record["prevUpload"] == first.state.record["recordId"]
    after = objects_of(out)
    assert {p: after[p] for p in objects if p != "refs/head"} == {
        p: o for p, o in objects.items() if p != "refs/head"
    }  # the old revisions kept: nothing sent twice
    check_directory(ds, out)


_CHILD = """
import os, signal, sys
from pathlib import Path
from odfweb3.publish import out_dir
from odfweb3.publish.execute import publish_dataset
from odfweb3_arweave.publish import bundle_target, file_index
from odfweb3_arweave.wallet import load_wallet

point = sys.argv[3]

def die(*_a, **_k):
    os.kill(os.getpid(), signal.SIGKILL)

if point == "bundle":  # the bundle renamed into place, nothing else
    real = bundle_target.write_bundle_file
    bundle_target.write_bundle_file = lambda *a, **k: (real(*a, **k), die())[0]
elif point == "pack":  # the pack written, publish.json not
    real_pack = file_index.write_pack  # file_index.index_after writes the pack
    file_index.write_pack = lambda *a, **k: (real_pack(*a, **k), die())[0]
else:  # publish.json written, the old packs not dropped yet
    out_dir.drop_packs = die  # the offline targets' state home drops them
target = bundle_target.BundleTarget(Path(sys.argv[2]), load_wallet(sys.argv[4]))
publish_dataset(sys.argv[1], target)
"""


@pytest.mark.parametrize("point", ["bundle", "pack", "state"])
def test_a_killed_publisher_loses_nothing_and_the_rerun_completes(
    tmp_path, fixed_wallet, point
) -> None:
    ds = create_root_dataset(tmp_path / "ds", blocks=20, data_bytes=3_000, seed=154).path
    out = tmp_path / "out"
    first = publish_dataset(ds, BundleTarget(out, fixed_wallet))
    append_blocks(ds, 1, data_bytes=100, seed=155)
    append_blocks(ds, 1, data_bytes=100, seed=156)  # a second update to leave old packs
    publish_dataset(ds, BundleTarget(out, fixed_wallet))
    before = json.loads((out / "publish.json").read_text())
    append_blocks(ds, 1, data_bytes=100, seed=157)
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(ds), str(out), point, str(FIXED_WALLET_PATH)],
        env={**os.environ, "PYTHONHASHSEED": "0"},
        capture_output=True,
        check=False,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()[-2000:]
    now = json.loads((out / "publish.json").read_text())
    if point == "state":  # published: the rerun has nothing to send
        assert now["head"] != before["head"]
        again = publish_dataset(ds, BundleTarget(out, fixed_wallet))
        assert again.plan.is_noop and again.upload.summary["bundle"] is None
    else:  # not published: publish.json as it was, every pack it names still there
        assert now == before
        assert packs_named(out) <= {p.name for p in out.glob("index-*.pack")}
        again = publish_dataset(ds, BundleTarget(out, fixed_wallet))
        assert again.plan.relation == "ahead" and len(again.plan.send) == 3
    doc = json.loads((out / "publish.json").read_text())
    # The bundles to post: each publish's once (an interrupted run's is not among them).
    assert len(doc["extra"]["bundles"]) == 3
    assert doc["extra"]["bundles"][0] == first.state.record["bundle"]
    check_directory(ds, out)


def test_a_fresh_index_is_written_as_it_is_encoded(tmp_path) -> None:
    """A first upload's index (every path) is streamed into its pack: the bytes
    ``of_objects`` gives, and no part held once written (read back when asked)."""
    files = {
        f"{folder}/{n:04x}": FileRef(f"f{n}", f"d{n}".ljust(43, "x"), f"m{n}".ljust(43, "y"), n)
        for folder in ("blocks", "data")
        for n in range(1500)
    } | {"refs/head": FileRef("fh", "h".ljust(43, "x"), "i".ljust(43, "y"), 52)}
    want, pack = FileIndex.of_objects(tmp_path / "a", {p: r.to_json() for p, r in files.items()})
    got = index_after(None, {}, files, files, partial(FileIndex.fresh, tmp_path / "b"))
    assert [p.read_bytes() for p in (tmp_path / "b").glob("index-*.pack")] == [pack]
    assert got.to_json() == want.to_json() and len(got) == len(files)
    assert not got._parts  # nothing held: parts are read from the pack when asked
    assert dict(got["data/0005"]) == files["data/0005"].to_json()
