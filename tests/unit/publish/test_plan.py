"""plan_publish, case by case: new, same, ahead, behind, diverged (forced or not), what the
target already holds, and what the plan reports."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from odfweb3.errors import ConflictError
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.chain import ChainEntry, iter_objects, walk_chain
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.plan import RemoteRecord, plan_publish, plan_record

DID = "did:odf:test"


def chain(path: Path) -> list[ChainEntry]:
    return list(walk_chain(DatasetReader.open(path)))


@pytest.fixture
def grown(tmp_path: Path) -> tuple[list[ChainEntry], list[ChainEntry]]:
    """The chain of a dataset before and after appending two blocks (head first)."""
    ds = create_root_dataset(tmp_path / "ds", blocks=3, data_bytes=3000, seed=5, fsync=False).path
    old = chain(ds)
    append_blocks(ds, 2, data_bytes=2000, fsync=False)
    return old, chain(ds)


def paths(objects) -> list[str]:
    return [o.path for o in objects]


def test_new_target_gets_everything_in_chain_order(grown) -> None:
    _, new = grown
    plan = plan_publish(new, dataset_id=DID, target="t", remote_head=None)
    everything = tuple(iter_objects(new))
    assert plan.relation == "new" and not plan.forced and plan.remote_head is None
    assert plan.send == everything == plan.objects
    assert plan.new_blocks == len(new)
    assert plan.head == new[0].hash
    assert plan.chain == tuple(new)
    assert plan.send_bytes == plan.total_bytes == sum(o.size or 0 for o in everything)
    assert not plan.is_noop


def test_new_target_skips_what_an_interrupted_publish_left(grown) -> None:
    _, new = grown
    objects = tuple(iter_objects(new))
    left = {objects[0].path, objects[-1].path}
    plan = plan_publish(new, dataset_id=DID, target="t", remote_head=None, remote_has=left)
    assert plan.relation == "new"
    assert paths(plan.send) == [o.path for o in objects if o.path not in left]
    assert plan.objects == objects  # the layout the target will hold is still whole


def test_same_head_sends_nothing_the_target_holds(grown) -> None:
    _, new = grown
    have = {o.path for o in iter_objects(new)}
    plan = plan_publish(new, dataset_id=DID, target="t", remote_head=new[0].hash, remote_has=have)
    assert plan.relation == "same" and plan.send == () and plan.new_blocks == 0
    assert plan.is_noop
    assert plan.send_bytes == 0 and plan.total_bytes > 0


def test_same_head_with_nothing_known_resends_everything(grown) -> None:
    # Unlike "ahead", "same" does not infer the objects from the head: only remote_has
    # (state checked against the network) says what is there; repeats are harmless.
    _, new = grown
    plan = plan_publish(new, dataset_id=DID, target="t", remote_head=new[0].hash)
    assert plan.relation == "same" and plan.send == plan.objects
    assert not plan.is_noop


def test_same_head_resends_what_the_target_lost(grown) -> None:
    # State may claim the head while objects are missing: only remote_has counts for "same".
    _, new = grown
    objects = tuple(iter_objects(new))
    have = {o.path for o in objects[1:]}
    plan = plan_publish(new, dataset_id=DID, target="t", remote_head=new[0].hash, remote_has=have)
    assert plan.relation == "same"
    assert plan.send == objects[:1]
    assert not plan.is_noop


def test_ahead_sends_only_the_delta(grown) -> None:
    old, new = grown
    plan = plan_publish(new, dataset_id=DID, target="t", remote_head=old[0].hash)
    covered = {o.path for o in iter_objects(old)}
    assert plan.relation == "ahead" and not plan.forced
    assert plan.new_blocks == 2 == len(new) - len(old)
    assert paths(plan.send) == [o.path for o in iter_objects(new) if o.path not in covered]
    assert all(o.path not in covered for o in plan.send)
    assert plan.send_bytes < plan.total_bytes


def test_ahead_of_a_head_the_target_does_not_hold_sends_what_it_lacks(grown) -> None:
    # The plan alone decides what is sent. A target that names the old
    # head but not its objects (a node that lost the root; objects made with another CID
    # profile or encryption) says so (remote_holds_head=False): only remote_has counts.
    old, new = grown
    objects = tuple(iter_objects(new))
    kept = set(paths(list(iter_objects(old))[:2]))
    plan = plan_publish(
        new,
        dataset_id=DID,
        target="t",
        remote_head=old[0].hash,
        remote_has=kept,
        remote_holds_head=False,
    )
    assert plan.relation == "ahead"
    assert paths(plan.send) == [o.path for o in objects if o.path not in kept]
    assert plan.new_blocks == sum(1 for o in plan.send if o.kind == "block") > 2


def test_behind_is_refused_unless_forced(grown) -> None:
    old, new = grown
    with pytest.raises(ConflictError, match="roll the name back") as err:
        plan_publish(old, dataset_id=DID, target="t", remote_head=new[0].hash, remote_ahead=True)
    assert multihash_to_str(new[0].hash) in str(err.value) and "--force" in str(err.value)
    plan = plan_publish(
        old, dataset_id=DID, target="t", remote_head=new[0].hash, remote_ahead=True, force=True
    )
    assert plan.relation == "behind" and plan.forced
    assert plan.send == plan.objects  # nothing is known to be there: send all of ours


def test_diverged_is_refused_unless_forced(grown, tmp_path: Path) -> None:
    old, _ = grown
    other = create_root_dataset(tmp_path / "other", blocks=2, seed=9, fsync=False).path
    theirs = chain(other)[0].hash
    with pytest.raises(ConflictError, match="diverged"):
        plan_publish(old, dataset_id=DID, target="t", remote_head=theirs)
    plan = plan_publish(old, dataset_id=DID, target="t", remote_head=theirs, force=True)
    assert plan.relation == "diverged" and plan.forced


def test_forced_publish_still_skips_content_the_target_holds(grown) -> None:
    # Content addressing: what the target holds stays valid even when the name is forced.
    old, new = grown
    have = {o.path for o in iter_objects(old)}
    plan = plan_publish(
        old,
        dataset_id=DID,
        target="t",
        remote_head=new[0].hash,
        remote_ahead=True,
        remote_has=have,
        force=True,
    )
    assert plan.forced and plan.send == ()


def test_diverged_from_a_fork_sends_only_the_fork(grown, tmp_path: Path) -> None:
    # Two histories sharing a prefix: remote_has from state covers the shared part.
    old, _ = grown
    src = Path(DatasetReader.open(tmp_path / "ds").root)
    fork = tmp_path / "fork"
    shutil.copytree(src, fork)
    # Rewind the copy to the old head and grow it differently.
    (fork / "refs" / "head").write_text(multihash_to_str(old[0].hash))
    append_blocks(fork, 1, data_bytes=500, seed=77, fsync=False)
    forked = chain(fork)
    shared = {o.path for o in iter_objects(old)}
    plan = plan_publish(
        forked,
        dataset_id=DID,
        target="t",
        remote_head=chain(src)[0].hash,
        remote_has=shared,
        force=True,
    )
    assert plan.relation == "diverged"
    assert all(o.path not in shared for o in plan.send)
    assert plan.new_blocks == 1


def test_plan_prints_and_serialises_what_it_sends(grown) -> None:
    old, new = grown
    plan = plan_publish(new, dataset_id=DID, target="car:/out", remote_head=old[0].hash)
    text = str(plan)
    assert f"publish {DID} -> car:/out" in text
    # The target is the subject, as in verify: it is behind the local head.
    assert multihash_to_str(new[0].hash) in text and "(behind by 2 blocks)" in text
    assert f"send         {len(plan.send)} of {len(plan.objects)} objects" in text
    data = plan.to_json()
    assert data["relation"] == "ahead" and data["forced"] is False
    assert data["remoteHead"] == multihash_to_str(old[0].hash)
    assert data["send"] == paths(plan.send)
    assert data["newBlocks"] == 2 and data["sendBytes"] == plan.send_bytes
    forced = plan_publish(
        old, dataset_id=DID, target="t", remote_head=new[0].hash, remote_ahead=True, force=True
    )
    assert "(ahead: it has blocks the local dataset lacks, FORCED)" in str(forced)
    assert (
        plan_publish(new, dataset_id=DID, target="t", remote_head=None).to_json()["remoteHead"]
        is None
    )


def test_the_plan_keeps_the_record_only_when_nothing_would_change(grown) -> None:
    # The target reports its record as facts (RemoteRecord); the plan
    # decides whether a no-op publish leaves it as it is or re-signs it.
    old, new = grown
    everything = frozenset(paths(iter_objects(new)))
    same = plan_publish(
        new, dataset_id=DID, target="t", remote_head=new[0].hash, remote_has=everything
    )
    fresh = RemoteRecord(renewal_due=False, inputs={"did:odf:a": "ipns://k51a"})
    assert same.is_noop and not same.keep_record  # before the record is planned
    assert plan_record(same, fresh).keep_record
    assert plan_record(same, fresh, {"inputs": {"did:odf:a": "ipns://k51a"}}).keep_record
    # Renewal due, no record to keep, or another inputs map: the record is written.
    assert not plan_record(same, RemoteRecord(renewal_due=True)).keep_record
    assert not plan_record(same, None).keep_record
    other = plan_record(same, fresh, {"inputs": {"did:odf:b": "ipns://k51b"}})
    assert not other.keep_record and other.record_extra == {"inputs": {"did:odf:b": "ipns://k51b"}}
    assert not plan_record(
        same, RemoteRecord(renewal_due=False), {"inputs": {"x": "y"}}
    ).keep_record
    # Something to send: never kept, however fresh the record.
    ahead = plan_publish(new, dataset_id=DID, target="t", remote_head=old[0].hash)
    assert not plan_record(ahead, fresh).keep_record
