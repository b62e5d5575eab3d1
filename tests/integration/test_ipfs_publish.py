"""Publishing to a live IPFS node (the session's Kubo, or another via ODFWEB3_IPFS_API).

Never skipped in CI: the `ipfs_node` fixture starts Kubo (tests/support/kubo.py). Each test uses
its own keystore (so its own IPNS name) and state directory. Checks go through the node
itself (block/stat, pin/ls, resolve, its record) and its HTTP gateway.
"""

import json
import shutil

import httpx
import pytest

from odfweb3.cli.main import main
from odfweb3.crypto.keystore import Keystore
from odfweb3.errors import ConflictError, IntegrityError
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.chain import iter_objects, walk_chain
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.execute import load_verified_chain, publish_dataset
from odfweb3.publish.plan import plan_publish
from odfweb3.publish.state import StateStore
from odfweb3_ipfs.client.kubo import KuboClient
from odfweb3_ipfs.formats.car import read_car_header
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.formats.ipns import create_record, encode_record, verify_record
from odfweb3_ipfs.formats.libp2p_keys import IpnsName, public_key_bytes
from odfweb3_ipfs.publish.car_target import CarTarget
from odfweb3_ipfs.publish.node_target import IpfsNodeTarget, read_node_record
from odfweb3_ipfs.publish.unixfs_import import import_tree


@pytest.fixture
def client(ipfs_node):
    with KuboClient(ipfs_node.api_url) as c:
        yield c


@pytest.fixture
def env(tmp_path, ipfs_node):
    """Keystore + state for one test, and a factory of fresh targets (one per publish)."""

    class Env:
        keystore = Keystore(tmp_path / "keys")
        states = StateStore(tmp_path / "state")

        def target(self, **kw):
            return IpfsNodeTarget(
                KuboClient(ipfs_node.api_url),
                self.keystore,
                self.states,
                gateway_url=ipfs_node.gateway_url,
                tmp_dir=tmp_path,
                **kw,
            )

        def name(self, dataset_id):
            return IpnsName.from_public_key(public_key_bytes(self.keystore.load(dataset_id)))

    return Env()


def make_dataset(tmp_path, blocks=4, data_bytes=700_000, seed=11):
    return create_root_dataset(
        tmp_path / "ds", blocks=blocks, data_bytes=data_bytes, seed=seed
    ).path


def gateway_get(ipfs_node, path):
    return httpx.get(f"{ipfs_node.gateway_url}{path}", timeout=30, follow_redirects=True)


def test_first_then_incremental_publish(tmp_path, env, client, ipfs_node):
    ds = make_dataset(tmp_path)
    first = publish_dataset(ds, env.target())
    assert first.plan.relation == "new"
    root1 = Cid.decode(first.upload.locator)
    assert root1 == import_tree(ds).cid  # = ipfs add -r --cid-version=1
    rec = first.state.record
    assert rec["sequence"] == 0 and rec["extension"] is True
    assert rec["mode"] == "name/put"  # Kubo >= 0.40 checks signature, size, sequence
    # The node serves our record; it verifies and carries _odf.
    seen = read_node_record(client, env.name(first.plan.dataset_id))
    assert seen.record.value_text == f"/ipfs/{root1}"
    assert seen.record.odf.head == multihash_to_str(first.plan.head)
    assert first.upload.bytes_sent >= first.plan.total_bytes

    append_blocks(ds, 1, data_bytes=3000)
    target = env.target()
    second = publish_dataset(ds, target)
    assert second.plan.relation == "ahead" and len(second.plan.send) == 3
    root2 = Cid.decode(second.upload.locator)
    assert root2 == import_tree(ds).cid and root2 != root1
    # bytes sent ≈ delta: the new files plus the changed directory nodes, no old file again,
    # and the Croissant and DCAT documents of the new block (a few KB, one block each)
    docs = sum(
        client.block_size(Cid.decode(second.upload.summary[k])) or 0 for k in ("croissant", "dcat")
    )
    assert 0 < docs < 20_000
    assert second.upload.bytes_sent < second.plan.send_bytes + 20_000 + docs
    assert second.upload.bytes_sent - docs < first.upload.bytes_sent / 50
    calls = target.client.stats.by_endpoint
    # Kubo: pin/update from the previous root walks only the new blocks; the dataset root is
    # never pin/add-ed again (the pin/adds are the side files: the discovery descriptor and
    # the Croissant and DCAT documents, each its own file).
    assert calls["dag/import"] == 1 and calls["pin/update"] == 1
    side = [k for k in ("descriptor", "croissant", "dcat") if k in second.upload.summary]
    assert {"croissant", "dcat"} <= set(side)
    assert calls.get("pin/add", 0) == len(side)
    # Both roots are on the node and pinned; unchanged files are shared by CID.
    for root in (root1, root2):
        assert client.block_size(root) is not None and client.has_pin(root)
    old_data = [p for p in first.state.objects if p.startswith("data/")]
    for path in old_data:
        assert first.state.objects[path]["cid"] == second.state.objects[path]["cid"]
        resolved = client.call_json("resolve", [f"/ipfs/{root2}/{path}"])
        assert Cid.decode(resolved["Path"].removeprefix("/ipfs/")) == Cid.decode(
            first.state.objects[path]["cid"]
        )
    seen = read_node_record(client, env.name(second.plan.dataset_id))
    assert seen.record.sequence == 1
    assert seen.record.odf.prev_head == multihash_to_str(first.plan.head)


def test_offline_car_imports_into_the_node_with_the_same_root(tmp_path, env, client):
    ds = make_dataset(tmp_path, seed=12)
    out = tmp_path / "car"
    offline = publish_dataset(ds, CarTarget(out, env.keystore))
    car = out / f"{offline.upload.locator}.car"
    with open(car, "rb") as f:
        assert [r.encode() for r in read_car_header(f)] == [offline.upload.locator]
    client.dag_import(car)
    root = Cid.decode(offline.upload.locator)
    client.pin_add(root)  # fails unless the whole DAG arrived
    head = client.cat(f"/ipfs/{root}/refs/head").decode()
    assert head == multihash_to_str(offline.plan.head)
    # The offline record file goes onto the node as is and verifies there.
    name = env.name(offline.plan.dataset_id)
    client.record_put(name, (out / offline.state.record["file"]).read_bytes())
    assert read_node_record(client, name).record.value_text == f"/ipfs/{root}"
    # A live publish of the same dataset finds the same root.
    live = publish_dataset(ds, env.target())
    assert live.upload.locator == offline.upload.locator


def test_gateway_serves_refs_head_by_root_and_by_name(tmp_path, env, client, ipfs_node):
    ds = make_dataset(tmp_path, seed=13)
    done = publish_dataset(ds, env.target())
    head = multihash_to_str(done.plan.head)
    r = gateway_get(ipfs_node, f"/ipfs/{done.upload.locator}/refs/head")
    assert r.status_code == 200 and r.text == head
    # js-ipfs 0.66 takes a k51… label for a DNSLink domain: it needs the peer-ID form.
    name = client.name_arg(env.name(done.plan.dataset_id))
    r = gateway_get(ipfs_node, f"/ipns/{name}/refs/head")
    assert r.status_code == 200 and r.text == head


def test_corrupt_new_file_fails_before_anything_is_visible(tmp_path, env, client):
    ds = make_dataset(tmp_path, seed=14)
    first = publish_dataset(ds, env.target())
    append_blocks(ds, 1, data_bytes=5000)
    entries = list(walk_chain(DatasetReader.open(ds)))
    new_data = next(o for o in iter_objects(entries[:1]) if o.kind == "data")
    path = ds / new_data.path
    path.chmod(0o644)
    path.write_bytes(b"\0" * path.stat().st_size)
    target = env.target()
    with pytest.raises(IntegrityError):
        publish_dataset(ds, target)
    assert "dag/import" not in (target.client.stats.by_endpoint or {})
    seen = read_node_record(client, env.name(first.plan.dataset_id))
    assert seen.record.sequence == 0 and seen.record.value_text == f"/ipfs/{first.upload.locator}"


def test_interrupted_publish_keeps_the_old_name_and_rerun_sends_only_what_is_missing(
    tmp_path, env, client
):
    ds = make_dataset(tmp_path, seed=15)
    first = publish_dataset(ds, env.target())
    append_blocks(ds, 2, data_bytes=400_000)
    # Steps 1-5 of the commit order, then the "process dies" before the record is put.
    target = env.target()
    entries, dataset_id = load_verified_chain(DatasetReader.open(ds))
    view = target.inspect(str(dataset_id), entries[0].hash)
    plan = plan_publish(
        entries,
        dataset_id=str(dataset_id),
        target=target.name,
        remote_head=view.head,
        remote_has=view.has,
    )
    upload = target.upload(plan, DatasetReader.open(ds), view, lambda n: None)
    assert upload.bytes_sent > 300_000
    name = env.name(str(dataset_id))
    assert read_node_record(client, name).record.value_text == f"/ipfs/{first.upload.locator}"

    rerun_target = env.target()
    rerun = publish_dataset(ds, rerun_target)
    assert any("resuming an interrupted publish" in n for n in rerun.notes)
    assert rerun.upload.locator == upload.locator
    assert rerun.upload.bytes_sent < 5_000  # only refs/head, nothing already there
    assert read_node_record(client, name).record.value_text == f"/ipfs/{upload.locator}"
    assert rerun.state.record["sequence"] == 1 and "pending" not in rerun.state.extra


def test_a_publisher_that_got_there_first_is_detected(tmp_path, env, client):
    ds = make_dataset(tmp_path, seed=16)
    publish_dataset(ds, env.target())
    other_ds = tmp_path / "other"
    shutil.copytree(ds, other_ds)
    append_blocks(ds, 1, data_bytes=1000)
    append_blocks(other_ds, 2, data_bytes=1000, seed=99)

    slow = env.target()
    entries, dataset_id = load_verified_chain(DatasetReader.open(ds))
    view = slow.inspect(str(dataset_id), entries[0].hash)
    plan = plan_publish(
        entries,
        dataset_id=str(dataset_id),
        target=slow.name,
        remote_head=view.head,
        remote_has=view.has,
    )
    upload = slow.upload(plan, DatasetReader.open(ds), view, lambda n: None)
    # Meanwhile another machine (same key, its own state) publishes a diverging head.
    fast = IpfsNodeTarget(
        KuboClient(client.api_url), env.keystore, StateStore(tmp_path / "other-state")
    )
    won = publish_dataset(other_ds, fast)
    assert won.state.record["sequence"] == 1
    with pytest.raises(ConflictError, match="another publisher"):
        slow.commit(plan, upload, view)
    name = env.name(str(dataset_id))
    assert read_node_record(client, name).record.value_text == f"/ipfs/{won.upload.locator}"
    # Running publish again now refuses: the node's head is not in our chain.
    with pytest.raises(ConflictError, match="diverged"):
        publish_dataset(ds, env.target())


def test_lost_state_is_rebuilt_from_the_node(tmp_path, env, client):
    ds = make_dataset(tmp_path, seed=17)
    first = publish_dataset(ds, env.target())
    shutil.rmtree(env.states.root)
    append_blocks(ds, 1, data_bytes=1000)
    again = publish_dataset(ds, env.target())
    assert any("rebuilt the publish state from the node" in n for n in again.notes)
    assert again.plan.relation == "ahead" and again.plan.remote_head == first.plan.head
    assert again.state.record["sequence"] == 1


def test_node_that_lost_the_root_gets_a_full_upload(tmp_path, env, client):
    ds = make_dataset(tmp_path, blocks=2, data_bytes=300_000, seed=18)
    first = publish_dataset(ds, env.target())
    client.pin_rm(Cid.decode(first.upload.locator))
    client.call("repo/gc", idempotent=False)
    assert client.block_size(Cid.decode(first.upload.locator), wait="2s") is None
    again = publish_dataset(ds, env.target())
    assert any("no longer holds the published root" in n for n in again.notes)
    assert again.upload.bytes_sent >= first.plan.total_bytes
    assert client.has_pin(Cid.decode(again.upload.locator))


def test_unpin_previous_keeps_shared_blocks(tmp_path, env, client):
    ds = make_dataset(tmp_path, seed=19)
    first = publish_dataset(ds, env.target())
    append_blocks(ds, 1, data_bytes=1000)
    second = publish_dataset(ds, env.target(unpin_previous=True))
    root1, root2 = Cid.decode(first.upload.locator), Cid.decode(second.upload.locator)
    assert not client.has_pin(root1) and client.has_pin(root2)
    shared = next(p for p in first.state.objects if p.startswith("data/"))
    assert client.block_size(Cid.decode(first.state.objects[shared]["cid"])) is not None


def test_republish_same_value_next_sequence_keeps_odf(tmp_path, env, client):
    ds = make_dataset(tmp_path, seed=20)
    done = publish_dataset(ds, env.target())
    result = env.target().republish(done.plan.dataset_id)
    assert result.sequence == 1 and result.value == f"/ipfs/{done.upload.locator}"
    seen = read_node_record(client, env.name(done.plan.dataset_id))
    assert seen.record.sequence == 1 and seen.record.odf.head == multihash_to_str(done.plan.head)
    assert env.states.load(done.plan.dataset_id, env.target().name).record["sequence"] == 1


def test_key_import_and_name_publish_fallback(tmp_path, env, client):
    # The fallback path for nodes that cannot store pre-signed records: the node signs with
    # the imported dataset key, and the record it serves verifies against our name.
    ds = make_dataset(tmp_path, blocks=2, data_bytes=1000, seed=21)
    done = publish_dataset(ds, env.target())
    target = env.target()
    key = env.keystore.load(done.plan.dataset_id)
    name = env.name(done.plan.dataset_id)
    key_name = target._ensure_key(key, name)
    assert key_name in client.key_names()
    assert target._ensure_key(key, name) == key_name  # imported once
    value = f"/ipfs/{done.upload.locator}"
    client.name_publish(value, key_name)
    raw = client.record_get(name)
    record = verify_record(raw, name)
    assert record.value_text == value and record.odf is None


def test_pre_signed_record_put_through_the_nodes_own_endpoint(tmp_path, env, client):
    # Kubo >= 0.40 stores a pre-signed record with name/put; the node then serves our bytes
    # (not a record it signed itself).
    expected = "name/put"
    key = env.keystore.load_or_generate("did:odf:test-routing-put")
    name = IpnsName.from_public_key(public_key_bytes(key))
    value = "/ipfs/bafkqaaa"
    raw = encode_record(create_record(key, value, 3))
    assert client.record_put(name, raw) == expected
    assert client.record_get(name) == raw
    assert read_node_record(client, name).record.sequence == 3


def test_cli_publish_status_republish(tmp_path, ipfs_node, capsys):
    ds = make_dataset(tmp_path, blocks=3, data_bytes=50_000, seed=22)
    environ = {
        "ODFWEB3_STATE_DIR": str(tmp_path / "state"),
        "ODFWEB3_KEYSTORE": str(tmp_path / "keys"),
        "ODFWEB3_IPFS_API": ipfs_node.api_url,
        "ODFWEB3_IPFS_GATEWAY": ipfs_node.gateway_url,
        "HOME": str(tmp_path),
    }
    assert main(["publish", str(ds), "--to", "ipfs", "--json"], env=environ) == 0
    published = json.loads(capsys.readouterr().out)
    assert published["record"]["sequence"] == 0
    # What to give others: the IPNS name, as a reference (follows every update).
    ipns = f"ipns://{published['record']['name']}"
    assert published["share"] == [{"what": "latest version", "ref": ipns}]
    assert main(["status", str(ds), "--json"], env=environ) == 0
    status = json.loads(capsys.readouterr().out)
    row = status["targets"][0]
    assert row["upToDate"] and row["root"] == published["locator"]
    assert row["node"]["sequence"] == 0 and not row["expiresSoon"]
    assert main(["republish", "--all", "--json"], env=environ) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["republished"][0]["sequence"] == 1 and again["nextExpiry"]
    # Text mode (nothing new): the line to give is printed too.
    assert main(["publish", str(ds), "--to", "ipfs"], env=environ) == 0
    out = capsys.readouterr().out.splitlines()
    at = out.index("share:")
    assert out[at + 1].split() == ["latest", "version", ipns]


def test_a_pinned_descriptor_is_not_sent_again_and_the_plan_is_the_same_either_way(
    tmp_path, env, client
):
    # Nothing new with the descriptor still pinned: the record is kept, nothing sent. The
    # node lost the descriptor's pin: the same objects plan (none), the descriptor is sent
    # again and the record re-signed; the node ends with the descriptor pinned.
    ds = make_dataset(tmp_path, blocks=2, data_bytes=20_000, seed=29)
    publisher = {"type": "Organization", "name": "Example Lab"}
    done = publish_dataset(ds, env.target(publisher=publisher))
    desc = Cid.decode(done.upload.summary["descriptor"])
    kept = publish_dataset(ds, env.target(publisher=publisher))
    assert kept.plan.is_noop and kept.plan.keep_record and "carBlocks" not in kept.upload.summary
    assert kept.state.record["sequence"] == done.state.record["sequence"]
    client.pin_rm(desc)
    resent = publish_dataset(ds, env.target(publisher=publisher))
    assert resent.plan.send == kept.plan.send == () and not resent.plan.keep_record
    assert resent.upload.summary["carBlocks"] > 0
    assert resent.upload.summary["descriptor"] == str(desc) and client.has_pin(desc)
    assert resent.state.record["sequence"] == done.state.record["sequence"] + 1


def test_descriptor_published_beside_the_dataset_and_named_in_the_record(tmp_path, env, client):
    from odfweb3.config import load_config
    from odfweb3.descriptor import decode_descriptor
    from odfweb3.read.resolve import resolve_ref

    ds = make_dataset(tmp_path, blocks=3, data_bytes=50_000, seed=23)
    publisher = {"type": "Organization", "name": "Example Lab"}
    done = publish_dataset(ds, env.target(publisher=publisher))
    # The dataset root is exactly the ODF layout: the descriptor is not inside it.
    assert Cid.decode(done.upload.locator) == import_tree(ds).cid
    desc_cid = done.upload.summary["descriptor"]
    assert done.state.extra["descriptor"] == desc_cid
    name = env.name(done.plan.dataset_id)
    seen = read_node_record(client, name)
    assert seen.record.odf.extra["descriptor"] == desc_cid
    cid = Cid.decode(desc_cid)
    assert client.has_pin(cid)
    doc = decode_descriptor(client.cat(f"/ipfs/{desc_cid}"))
    assert doc["id"] == done.plan.dataset_id
    assert doc["head"] == multihash_to_str(done.plan.head)
    assert f"ipfs://{done.upload.locator}" in doc["relation"]
    # Kept on republish.
    env.target(publisher=publisher).republish(done.plan.dataset_id)
    again = read_node_record(client, name)
    assert again.record.sequence == 1 and again.record.odf.extra["descriptor"] == desc_cid
    # odfweb3 resolve reads the title from it.
    config = load_config(
        env={
            "ODFWEB3_STATE_DIR": str(tmp_path / "resolve-state"),
            "ODFWEB3_IPFS_API": client.api_url,
            "ODFWEB3_IPFS_GATEWAY": env.target().gateway_url,
            "HOME": str(tmp_path),
        },
        cwd=tmp_path,
    )
    [(_, resolved)] = resolve_ref(f"ipns://{client.name_arg(name)}", config)
    assert resolved.title is not None and resolved.title == doc["title"]
    # Without a publisher the creator is the record's own IPNS name: the
    # descriptor is published all the same.
    append_blocks(ds, 1, data_bytes=1000)
    plain = publish_dataset(ds, env.target())
    assert plain.state.extra["descriptor"] and "descriptorSkipped" not in plain.upload.summary
