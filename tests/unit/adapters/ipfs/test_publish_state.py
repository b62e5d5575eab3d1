"""Typed publish state of the IPFS targets: parse / serialize round trips
(the JSON on disk unchanged) and a wrong type as one FormatError naming the file."""

import json

import pytest

from odfweb3.crypto.keystore import Keystore
from odfweb3.errors import FormatError
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import PublishState, load_summary_file
from odfweb3_ipfs.publish.car_target import CarTarget
from odfweb3_ipfs.publish.state import (
    DagFacts,
    IpnsFacts,
    NodePending,
    parse_car_state,
    parse_dag_facts,
    parse_node_state,
    parse_pin_state,
    serialize_car_state,
    serialize_node_state,
    serialize_pin_state,
)

WHERE = "/x/publish.json"

NODE_RECORD = {
    "name": "k51qzi5uqu5dh",
    "peerId": "12D3KooW",
    "sequence": 4,
    "validity": "2027-01-01T00:00:00+00:00",
    "value": "/ipfs/bafyroot",
    "mode": "routing/put",
    "extension": True,
}
NODE_EXTRA = {
    "cidVersion": 1,
    "cidProfile": "unixfs-v1-2025",
    "dirBlocks": ["01701220aa"],
    "source": "/data/ds",
    "node": "kubo",
    "descriptor": "bafydesc",
    "inputs": {"did:odf:a": "ipns://k51a"},
    "pending": {
        "root": "bafynew",
        "head": "f1620aa",
        "objects": {"data/a": {"cid": "bafka", "tsize": 3, "size": 3}},
        "dirBlocks": [],
        "cidVersion": 1,
    },
}


def _state(record, extra):
    return PublishState(dataset_id="did:odf:x", target="t", record=record, extra=extra)


def test_a_car_publish_json_reads_and_writes_back_unchanged(tmp_path):
    ds = create_root_dataset(tmp_path / "ds", blocks=3, data_bytes=2000, seed=31).path
    out = tmp_path / "out"
    publish_dataset(ds, CarTarget(out, Keystore(tmp_path / "keys")))
    append_blocks(ds, 1, data_bytes=500, seed=3)
    publish_dataset(ds, CarTarget(out, Keystore(tmp_path / "keys")))
    state, _raw = load_summary_file(out / "publish.json")
    assert state is not None
    car = parse_car_state(state, WHERE)
    assert car.record.sequence == 1 and car.record.file == f"{car.record.name}.ipns-record"
    assert car.extra.cars is not None and len(car.extra.cars) == 2
    assert car.extra.dag.version == 1
    assert car.extra.descriptor_car == f"{car.extra.dag.descriptor}.car"
    assert serialize_car_state(car) == {"record": state.record, "extra": state.extra}


def test_node_and_pin_states_round_trip():
    node = parse_node_state(_state(NODE_RECORD, NODE_EXTRA), WHERE)
    assert node.record.extension is True and node.extra.source == "/data/ds"
    assert node.extra.pending == NodePending(
        root="bafynew",
        head="f1620aa",
        objects=NODE_EXTRA["pending"]["objects"],
        dir_blocks=(),
        cid_version=1,
    )
    assert node.extra.pending.profile.same_profile(DagFacts()) is True  # v1, no profile tag
    assert not node.extra.pending.profile.same_profile(node.extra.dag)
    assert serialize_node_state(node) == {"record": NODE_RECORD, "extra": NODE_EXTRA}
    pin_extra = {"endpoint": "https://p", "requestid": "r1", "status": "pinned", "node": "car:/o"}
    pin = parse_pin_state(_state({"name": "k51"}, pin_extra), WHERE)
    assert pin.record == IpnsFacts(name="k51") and pin.extra.requestid == "r1"
    assert serialize_pin_state(pin) == {"record": {"name": "k51"}, "extra": pin_extra}
    # Absent stays absent (the node's rebuilt view: a sequence and a value only).
    bare = parse_node_state(_state({"sequence": 0, "value": "/ipfs/x"}, {}), WHERE)
    assert serialize_node_state(bare) == {
        "record": {"sequence": 0, "value": "/ipfs/x"},
        "extra": {},
    }


@pytest.mark.parametrize(
    ("record", "extra", "field"),
    [
        ({"sequence": "3"}, {}, "record.sequence"),
        ({"sequence": True}, {}, "record.sequence"),
        ({"extension": "yes"}, {}, "record.extension"),
        ({}, {"cidVersion": "1"}, "extra.cidVersion"),
        ({}, {"dirBlocks": ["zz"]}, "extra.dirBlocks"),
        ({}, {"dirBlocks": "01"}, "extra.dirBlocks"),
        ({}, {"inputs": {"did:a": 1}}, "extra.inputs"),
        ({}, {"pending": {"objects": {}}}, "extra.pending.root"),
        ({}, {"pending": []}, "extra.pending"),
    ],
)
def test_a_field_of_the_wrong_type_is_a_format_error_naming_the_file(record, extra, field):
    with pytest.raises(FormatError, match=rf"^{WHERE}: malformed publish state \({field}: "):
        parse_node_state(_state(record, extra), WHERE)


@pytest.mark.parametrize(
    ("extra", "field"),
    [({"cars": [1]}, "extra.cars"), ({"hamtShards": []}, "extra.hamtShards")],
)
def test_car_fields_are_checked_too(extra, field):
    with pytest.raises(FormatError, match=rf"\({field}: expected"):
        parse_car_state(_state({}, extra), WHERE)


def test_a_publish_validates_the_dir_blocks_of_its_state_once(monkeypatch, tmp_path):
    # dirBlocks lists every directory block ever sent (tens of thousands of hex CIDs): the
    # state home parses publish.json where it reads it, and the publish goes on with the
    # typed state (no re-parse in inspect, build, upload, commit or save).
    from odfweb3_ipfs.publish import state as state_mod

    ds = create_root_dataset(tmp_path / "ds", blocks=3, data_bytes=1000, seed=33).path
    out = tmp_path / "out"
    keystore = Keystore(tmp_path / "keys")
    publish_dataset(ds, CarTarget(out, keystore))
    calls = []
    real = state_mod.hex_list

    def counted(raw, key, where, part):
        calls.append(key)
        return real(raw, key, where, part)

    monkeypatch.setattr(state_mod, "hex_list", counted)
    append_blocks(ds, 1, data_bytes=500, seed=5)
    publish_dataset(ds, CarTarget(out, keystore))
    assert calls.count("dirBlocks") == 1
    # A bad list is one FormatError naming the file.
    extra = {"cidVersion": 1, "dirBlocks": ["zz"]}
    bad = rf"^{WHERE}: malformed publish state \(extra\.dirBlocks"
    with pytest.raises(FormatError, match=bad):
        parse_dag_facts(extra, WHERE)


def test_car_target_refuses_a_malformed_publish_json_in_one_line(tmp_path):
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=1000, seed=32).path
    out = tmp_path / "out"
    keystore = Keystore(tmp_path / "keys")
    publish_dataset(ds, CarTarget(out, keystore))
    doc = json.loads((out / "publish.json").read_text())
    doc["extra"]["cars"] = "not-a-list.car"
    (out / "publish.json").write_text(json.dumps(doc))
    append_blocks(ds, 1, data_bytes=500, seed=4)
    with pytest.raises(FormatError, match=r"publish\.json: malformed publish state \(extra\.cars"):
        publish_dataset(ds, CarTarget(out, keystore))


def test_the_cli_sees_a_state_through_its_backend_and_typed_form():
    from odfweb3.backends import StateFacts, state_facts

    node = PublishState(
        dataset_id="did:odf:x", target="ipfs:http://127.0.0.1:5001", record=NODE_RECORD,
        extra=NODE_EXTRA,
    )  # fmt: skip
    assert state_facts(node) == StateFacts(
        name=NODE_RECORD["name"], sequence=4, validity=NODE_RECORD["validity"],
        mode="routing/put", pending=True, source="/data/ds",
        share=(("latest version", f"ipns://{NODE_RECORD['name']}"),),
    )  # fmt: skip
    car = PublishState(
        dataset_id="did:odf:x", target="car:/out", record={"name": "k51", "sequence": 0},
        extra={"encrypted": True, "keyEnvelope": "bafyenv"},
    )  # fmt: skip
    assert state_facts(car) == StateFacts(
        name="k51", sequence=0, key_envelope="bafyenv", share=(("latest version", "ipns://k51"),)
    )
    with pytest.raises(FormatError, match=r"^publish state of car:/out: malformed"):
        state_facts(car.evolve(record={"sequence": "0"}))
