"""The live Arweave target's file index, on the session's arlocal: the state and
the upload checkpoint name content-named packs in ``<state file>.index/`` instead of listing
every path; an update reads only the parts its new paths fall in; a state listing every
path (older versions) is converted by its next upload; a publish interrupted between the
pack and the state loses nothing; a damaged pack is one clear line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odfweb3.errors import FormatError
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import StateStore
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.publish import file_index
from odfweb3_arweave.publish.file_index import FileIndex, partition_of
from odfweb3_arweave.publish.gateway_target import GatewayTarget
from odfweb3_arweave.wallet import Wallet, generate_wallet

RICH = 10**15


@pytest.fixture()
def wallet(arlocal) -> Wallet:
    w = generate_wallet()
    arlocal.mint(w.address, RICH)
    return w


def target(arlocal, wallet: Wallet, state_dir: Path) -> GatewayTarget:
    return GatewayTarget(ArweaveGateway(arlocal.url), wallet, StateStore(state_dir))


def dataset_paths(ds: Path) -> set[str]:
    top = ("blocks", "refs", "data", "checkpoints")
    return {
        str(p.relative_to(ds))
        for p in ds.rglob("*")
        if p.is_file() and p.relative_to(ds).parts[0] in top
    }


def state_doc(t: GatewayTarget, did: str) -> dict:
    return json.loads(t.states.path_for(did, t.name).read_text())


def packs_named(doc: dict) -> set[str]:
    return {r[0] for parts in doc["extra"]["objectIndex"].values() for r in parts.values()}


def check_state(t: GatewayTarget, ds: Path, did: str) -> None:
    """What one uninterrupted publish leaves: no path listed, every path indexed (the
    same revisions a load gives), only the named packs, no checkpoint."""
    doc = state_doc(t, did)
    assert doc["objects"] == {}
    index_dir = t.index_dir(did)
    assert packs_named(doc) == {p.name for p in index_dir.glob("index-*.pack")}
    loaded = t._load(did)
    assert loaded is not None and isinstance(loaded.objects, FileIndex)
    assert set(loaded.objects) == dataset_paths(ds)
    assert not t.home.checkpoint(did).exists()


def test_updates_read_only_their_parts(arlocal, wallet, tmp_path, monkeypatch) -> None:
    ds = create_root_dataset(tmp_path / "ds", blocks=30, data_bytes=2_000, seed=171).path
    state_dir = tmp_path / "state"
    first = publish_dataset(ds, target(arlocal, wallet, state_dir))
    did = first.state.dataset_id
    check_state(target(arlocal, wallet, state_dir), ds, did)
    loads: list[tuple[str, int]] = []
    real_part = FileIndex.part

    def counting(self, folder, i):
        if (folder, i) not in self._parts:
            loads.append((folder, i))
        return real_part(self, folder, i)

    monkeypatch.setattr(FileIndex, "part", counting)
    for step in range(2):
        append_blocks(ds, 1, data_bytes=100, seed=172 + step)
        t = target(arlocal, wallet, state_dir)
        before = {p.name: p.stat().st_size for p in t.index_dir(did).glob("index-*.pack")}
        loads.clear()
        out = publish_dataset(ds, t)
        assert out.plan.relation == "ahead" and len(out.plan.send) == 3
        added = {o.path for o in out.plan.send} | {"refs/head"}
        dirty = {(p.split("/")[0], partition_of(p.split("/")[1])) for p in added}
        assert set(loads) == dirty  # the parts of its own paths, no other
        after = {p.name: p.stat().st_size for p in t.index_dir(did).glob("index-*.pack")}
        new = after.items() - before.items()
        assert len(new) == 1 and next(iter(new))[1] < max(before.values()) / 4
        check_state(t, ds, did)
        # every path's revision is the one the gateway serves
        gw = ArweaveGateway(arlocal.url)
        for path in added - {"refs/head"}:
            assert gw.get_data(out.state.objects[path]["dataItemId"]) == (ds / path).read_bytes()


def test_an_old_state_listing_every_path_is_converted(arlocal, wallet, tmp_path) -> None:
    ds = create_root_dataset(tmp_path / "ds", blocks=8, data_bytes=2_000, seed=175).path
    state_dir = tmp_path / "state"
    t = target(arlocal, wallet, state_dir)
    first = publish_dataset(ds, t)
    did = first.state.dataset_id
    # As written before the index: every path in objects, no objectIndex, no pack.
    loaded = t._load(did)
    assert loaded is not None
    objects = {p: dict(v) for p, v in loaded.objects.items()}
    doc = state_doc(t, did)
    doc["objects"] = objects
    del doc["extra"]["objectIndex"]
    t.states.path_for(did, t.name).write_text(json.dumps(doc))
    for p in t.index_dir(did).glob("index-*.pack"):
        p.unlink()
    append_blocks(ds, 1, data_bytes=100, seed=176)
    again = publish_dataset(ds, target(arlocal, wallet, state_dir))
    assert again.plan.relation == "ahead" and len(again.plan.send) == 3
    assert again.state.record["prevUpload"] == first.state.record["recordId"]
    check_state(t, ds, did)
    after = t._load(did)
    assert after is not None
    kept = {p: o for p, o in objects.items() if p != "refs/head"}
    assert {p: dict(after.objects[p]) for p in kept} == kept  # nothing sent twice


class Crash(BaseException):
    """A publisher killed at a point (BaseException: nothing catches it)."""


@pytest.mark.parametrize("point", ["pack", "state"])
def test_a_crash_between_pack_and_state_loses_nothing(
    arlocal, wallet, tmp_path, monkeypatch, point
) -> None:
    ds = create_root_dataset(tmp_path / "ds", blocks=10, data_bytes=2_000, seed=177).path
    state_dir = tmp_path / "state"
    first = publish_dataset(ds, target(arlocal, wallet, state_dir))
    did = first.state.dataset_id
    append_blocks(ds, 1, data_bytes=100, seed=178)
    publish_dataset(ds, target(arlocal, wallet, state_dir))
    t = target(arlocal, wallet, state_dir)
    before = state_doc(t, did)
    append_blocks(ds, 1, data_bytes=100, seed=179)
    if point == "pack":  # the new pack written, no checkpoint, nothing posted
        real_pack = file_index.write_pack  # file_index.index_after writes the pack

        def die_after_pack(*a, **k):
            real_pack(*a, **k)
            raise Crash

        monkeypatch.setattr(file_index, "write_pack", die_after_pack)
    else:  # posted, the checkpoint names the pack, the state not written

        def die(*a, **k):
            raise Crash

        monkeypatch.setattr(t.home, "write", die)
    with pytest.raises(Crash):
        publish_dataset(ds, t)
    monkeypatch.undo()
    assert state_doc(t, did) == before  # the state as it was, its packs all there
    assert packs_named(before) <= {p.name for p in t.index_dir(did).glob("index-*.pack")}
    assert t.home.checkpoint(did).exists() == (point == "state")
    again = publish_dataset(ds, target(arlocal, wallet, state_dir))
    if point == "state":  # posted: rebuilt from the network, nothing to send, now indexed
        assert again.plan.is_noop and "nothing new" in again.upload.summary["note"]
    else:
        assert again.plan.relation == "ahead" and len(again.plan.send) == 3
    check_state(t, ds, did)


def test_a_damaged_pack_is_one_clear_line(arlocal, wallet, tmp_path) -> None:
    ds = create_root_dataset(tmp_path / "ds", blocks=4, data_bytes=2_000, seed=180).path
    state_dir = tmp_path / "state"
    first = publish_dataset(ds, target(arlocal, wallet, state_dir))
    t = target(arlocal, wallet, state_dir)
    for pack in t.index_dir(first.state.dataset_id).glob("index-*.pack"):
        data = bytearray(pack.read_bytes())
        for i in range(0, len(data), 16):  # every part damaged
            data[i] ^= 0x20
        pack.write_bytes(bytes(data))
    append_blocks(ds, 1, data_bytes=100, seed=181)
    with pytest.raises(FormatError) as err:
        publish_dataset(ds, target(arlocal, wallet, state_dir))
    line = str(err.value)
    assert "\n" not in line and "damaged" in line
    assert line.endswith("rebuild it from the gateway")
