"""The one IPFS publish pipeline: what car:DIR and the node target build."""

import dataclasses
import io

import pytest

from odfweb3.crypto.keystore import Keystore
from odfweb3.descriptor import decode_descriptor
from odfweb3.errors import FormatError
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.layout import DatasetReader
from odfweb3.publish.execute import load_verified_chain, publish_dataset
from odfweb3.publish.plan import plan_publish
from odfweb3.publish.target import RemoteView
from odfweb3_ipfs.formats.car import iter_car
from odfweb3_ipfs.publish.car_target import CarTarget
from odfweb3_ipfs.publish.cid_profile import profile_for
from odfweb3_ipfs.publish.pipeline import (
    BuildSettings,
    build_delta,
    record_extension,
    side_files,
    write_delta_car,
)
from odfweb3_ipfs.publish.state import DagFacts

PROFILE = profile_for(None, 1)


def _plan(ds, view):
    entries, dataset_id = load_verified_chain(DatasetReader.open(ds))
    return plan_publish(
        entries, dataset_id=str(dataset_id), target="t", remote_head=view.head, remote_has=view.has
    )


def test_delta_car_holds_the_new_blocks_and_only_the_side_files_asked_inline(tmp_path):
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=3000, seed=21).path
    keystore = Keystore(tmp_path / "keys")
    plan = _plan(ds, RemoteView(head=None))
    settings = BuildSettings(keystore.load_or_generate, PROFILE)
    outs = {}
    cars = {}
    for inline in (None, False, True):
        buf = io.BytesIO()
        delta = write_delta_car(
            buf,
            plan,
            DatasetReader.open(ds),
            RemoteView(head=None),
            settings,
            progress=lambda n: None,
            inline=None if inline is None else lambda f, _i=inline: _i,
        )
        cars[inline] = buf.getvalue()
        buf.seek(0)
        roots, blocks = iter_car(buf)
        outs[inline] = (delta, [r.encode() for r in roots], {c.raw for c, _ in blocks})
    # No inline at all (the writer's CID set dropped after the DAG): the same CAR, byte for
    # byte, as side files refused one by one.
    assert cars[None] == cars[False]
    (plain, roots0, cids0), (with_side, roots1, cids1) = outs[False], outs[True]
    desc, croissant, dcat = plain.side.files
    assert desc.kind == "descriptor" and plain.side.skipped == {}
    assert (croissant.kind, dcat.kind) == ("croissant", "dcat")
    assert roots0 == roots1 == [plain.dag.root.cid.encode()]  # the dataset root, never a side file
    assert cids1 - cids0 == {c.raw for f in plain.side.files for c, _ in f.blocks}
    assert plain.blocks == len(cids0) and with_side.blocks == len(cids1)
    doc = decode_descriptor(b"".join(b for _, b in desc.blocks))
    assert plain.dag.root.cid.encode() in str(doc)  # it names the root it travels beside


def test_descriptor_names_the_dataset_key_and_is_the_same_for_every_target(tmp_path):
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=1000, seed=22).path
    keystore = Keystore(tmp_path / "keys")
    plan = _plan(ds, RemoteView(head=None))
    settings = BuildSettings(keystore.load_or_generate, PROFILE)
    a = side_files(plan, DatasetReader.open(ds), "bafyroot", settings)
    b = side_files(
        dataclasses.replace(plan, chain=()), DatasetReader.open(ds), "bafyroot", settings
    )
    assert a == b  # the chain is walked again only when the plan does not carry it


def test_record_extension_keeps_the_last_inputs_map_unless_the_plan_gives_one(tmp_path):
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=1000, seed=23).path
    first = _plan(ds, RemoteView(head=None))
    append_blocks(ds, 1, data_bytes=500, seed=2)
    plan = _plan(ds, RemoteView(head=first.head))
    sent = DagFacts(descriptor="bafydesc", dir_blocks=())
    prev = DagFacts(inputs={"did:a": "x"})
    ext, dag = record_extension(plan, sent, prev)
    assert ext.extra == {"descriptor": "bafydesc", "inputs": {"did:a": "x"}}
    assert dag == DagFacts(descriptor="bafydesc", dir_blocks=(), inputs={"did:a": "x"})
    assert ext.prev_head is not None and ext.dataset_id == plan.dataset_id
    asked = dataclasses.replace(plan, record_extra={"inputs": {"did:b": "y"}})
    ext, dag = record_extension(asked, sent, prev)
    assert ext.extra["inputs"] == dag.inputs == {"did:b": "y"}
    ext, dag = record_extension(first, sent, None)
    assert "inputs" not in ext.extra and dag.inputs is None and ext.prev_head is None


def test_the_build_follows_the_plan_and_refuses_to_guess(tmp_path):
    # The plan alone decides what is sent: an object it does not send must be linked from
    # the state; a view claiming objects it cannot name is an error, not a silent resend.
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=1000, seed=24).path
    claims = RemoteView(
        head=None, has=frozenset(o.path for o in _plan(ds, RemoteView(None)).objects)
    )
    plan = _plan(ds, claims)
    assert plan.send == ()
    with pytest.raises(FormatError, match="the plan does not send"):
        build_delta(
            plan, DatasetReader.open(ds), claims,
            BuildSettings(Keystore(tmp_path / "k").load_or_generate, PROFILE),
            sink=lambda cid, block: None, progress=lambda n: None,
        )  # fmt: skip


def test_a_state_made_with_another_cid_profile_is_sent_again_by_the_plan(tmp_path):
    # car:DIR published with CIDv1, then again with CIDv0 and one more block: the old CARs
    # hold no object as CIDv0 names it, so the plan (not the build) sends every object.
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=1000, seed=25).path
    keystore = Keystore(tmp_path / "keys")
    out = tmp_path / "out"
    publish_dataset(ds, CarTarget(out, keystore))
    append_blocks(ds, 1, data_bytes=500, seed=3)
    v0 = CarTarget(out, keystore, cid_version=0)
    outcome = publish_dataset(ds, v0)
    assert outcome.view.holds_head is False
    assert outcome.plan.relation == "ahead" and outcome.plan.send == outcome.plan.objects
    assert outcome.upload is not None and outcome.upload.locator.startswith("Qm")
    again = publish_dataset(ds, CarTarget(out, keystore, cid_version=0))
    assert again.view.holds_head and again.plan.send == ()  # now it holds them as CIDv0


@pytest.mark.parametrize("profile_name", [None, "unixfs-v1-2025"])
def test_a_streamed_side_file_is_the_file_imported_whole_its_blocks_read_back_from_disk(
    profile_name,
):
    # A first publish's discovery documents are imported as they are encoded, their blocks
    # spooled to a temporary file: the same CID and blocks as the bytes imported at once.
    from odfweb3_ipfs.publish.pipeline import SpooledBlocks, _unixfs_file, _unixfs_streamed

    profile = profile_for(profile_name, 1)
    data = bytes(range(251)) * (5 * (1 << 20) // 251)  # several chunks and a partial one
    pieces = [data[i : i + 700_001] for i in range(0, len(data), 700_001)]
    streamed = _unixfs_streamed("croissant", iter(pieces), profile)
    whole = _unixfs_file("croissant", data, profile)
    assert isinstance(streamed.blocks, SpooledBlocks)
    assert streamed.cid == whole.cid
    assert list(streamed.blocks) == list(whole.blocks)
    assert list(streamed.blocks) == list(whole.blocks)  # read again, the same
    assert len(streamed.blocks) == len(whole.blocks) > 5
    empty = _unixfs_streamed("dcat", iter(()), profile)
    assert empty.cid == _unixfs_file("dcat", b"", profile).cid
