"""``publish --with-inputs``: inputs first, then the derivative whose signed
record names where each input lives; ``verify --lineage`` follows that map alone."""

import json

import pytest

from odfweb3.cli.main import main
from odfweb3.odf.builder import example_keypair
from odfweb3.odf.derivative import derivative_keypair
from odfweb3.read.lineage_check import resolver_from_records, verify_lineage
from odfweb3_arweave.formats.ans104 import iter_bundle
from odfweb3_arweave.formats.record import decode_record, encode_record
from odfweb3_ipfs.read.car_replica import CarDirReplica, check_car_dir

from .adapters.arweave.conftest import FIXED_WALLET_PATH
from .odf.lineage_helpers import chain_of, make_lineage

A, B = str(example_keypair(1).dataset_id), str(example_keypair(2).dataset_id)
X = str(derivative_keypair(0).dataset_id)


@pytest.fixture(scope="module")
def lineage(tmp_path_factory):
    return make_lineage(tmp_path_factory.mktemp("lin"))


def run(capsys, tmp_path, *argv):
    code = main(list(argv), env={"ODFWEB3_KEYSTORE": str(tmp_path / "keys"), "HOME": str(tmp_path)})
    out, err = capsys.readouterr()
    return code, out, err


def test_car_dir_publish_with_inputs_then_verify_lineage_from_the_name_alone(
    capsys, tmp_path, lineage
):
    a, b, x, _ = lineage
    out = tmp_path / "out"
    code, stdout, err = run(
        capsys,
        tmp_path,
        "publish",
        str(x),
        "--to",
        f"car:{out}",
        "--with-inputs",
        str(a),
        str(b),
        "--json",
    )
    assert code == 0, err
    doc = json.loads(stdout)
    assert [p["plan"]["datasetId"] for p in doc["publishes"]] == [A, B, X]

    # Each input sits in OUT/inputs/<dir name>, published and verifiable on its own.
    names = {}
    for did, sub in ((A, "a"), (B, "b")):
        check = check_car_dir(out / "inputs" / sub)
        assert check.dataset_id == did and check.head == chain_of(a if sub == "a" else b)[-1].hash
        names[did] = f"ipns://{check.name}"

    # The derivative's signed record carries the inputs map: ID -> the inputs' own names.
    record = check_car_dir(out).record
    assert record.odf is not None and record.odf.dataset_id == X
    assert dict(record.odf.extra["inputs"]) == names == doc["inputs"]

    # Offline, the car: replica maps each ipns:// name to the input's directory (found in
    # the directory the user gave, not named by the record: issue 16 item 10).
    replica = CarDirReplica(check_car_dir(out), f"car:{out}", out)
    assert replica.lineage_inputs() == names
    assert {replica.local_inputs()[names[d]] for d in (A, B)} == {
        f"car:{out / 'inputs' / 'a'}",
        f"car:{out / 'inputs' / 'b'}",
    }

    code, stdout, err = run(capsys, tmp_path, "verify", f"car:{out}", "--lineage", "--json")
    rep = json.loads(stdout)
    assert code == 0, stdout + err
    assert rep["complete"] is True
    assert [(i["datasetId"], i["status"]) for i in rep["inputs"]] == [
        (A, "present"),
        (B, "present"),
    ]

    # Re-running is incremental: nothing new is sent for any of the three.
    code, stdout, _ = run(
        capsys,
        tmp_path,
        "publish",
        str(x),
        "--to",
        f"car:{out}",
        "--with-inputs",
        str(a),
        str(b),
        "--json",
    )
    again = json.loads(stdout)
    assert code == 0 and [p["plan"]["relation"] for p in again["publishes"]] == ["same"] * 3

    assert all(p["nothingNew"] for p in again["publishes"])
    # A plain publish of the derivative (e.g. as the input of another one) keeps the map;
    # with nothing new it leaves the record as it was (same sequence).
    assert run(capsys, tmp_path, "publish", str(x), "--to", f"car:{out}")[0] == 0
    kept = check_car_dir(out).record
    assert kept.sequence == record.sequence and dict(kept.odf.extra["inputs"]) == names


def test_a_plain_record_has_no_inputs_and_resolves_nothing(capsys, tmp_path, lineage):
    _, _, x, _ = lineage
    out = tmp_path / "plain"
    assert run(capsys, tmp_path, "publish", str(x), "--to", f"car:{out}")[0] == 0
    check = check_car_dir(out)
    assert check.record.odf is not None and "inputs" not in check.record.odf.extra
    replica = CarDirReplica(check, f"car:{out}", out)
    assert replica.lineage_inputs() == {}
    report = verify_lineage(replica, resolver_from_records(replica, pytest.fail))
    assert not report.ok and {i.status for i in report.inputs} == {"unresolvable"}


def test_an_input_the_derivative_does_not_declare_is_refused(capsys, tmp_path, lineage):
    _, b, _, y = lineage
    out = tmp_path / "wrong"
    code, _, err = run(
        capsys, tmp_path, "publish", str(y), "--to", f"car:{out}", "--with-inputs", str(b)
    )
    assert code == 64 and B in err and "not an input" in err
    assert not out.exists()  # nothing was published


def test_bundle_dir_publish_with_inputs_puts_the_map_in_the_record_body(capsys, tmp_path, lineage):
    a, b, x, _ = lineage
    out = tmp_path / "bundles"
    code, stdout, err = run(
        capsys,
        tmp_path,
        "publish",
        str(x),
        "--to",
        f"bundle:{out}",
        "--with-inputs",
        str(a),
        str(b),
        "--wallet",
        str(FIXED_WALLET_PATH),
        "--json",
    )
    assert code == 0, err
    doc = json.loads(stdout)
    a_pub, b_pub, x_pub = doc["publishes"]
    assert a_pub["to"] == f"bundle:{out / 'inputs' / 'a'}"
    assert doc["inputs"] == {
        A: f"ar://{a_pub['record']['recordId']}",
        B: f"ar://{b_pub['record']['recordId']}",
    }

    def record_of(folder, record_id):
        with open(folder / f"{record_id}.bundle", "rb") as f:
            item = list(iter_bundle(f))[-1]  # the record is the last item
        assert item.id_b64 == record_id
        return item, decode_record(item.tags, item.data)

    item, record = record_of(out, x_pub["record"]["recordId"])
    assert record.dataset_id == X and dict(record.inputs or {}) == doc["inputs"]
    assert json.loads(item.data)["inputs"] == doc["inputs"]
    # An input's own record is a plain one: no inputs key, byte for byte as before.
    item_a, record_a = record_of(out / "inputs" / "a", a_pub["record"]["recordId"])
    assert record_a.inputs is None and b'"inputs"' not in item_a.data
    assert encode_record(record_a) == item_a.data


def test_inputs_that_consume_each_other_are_published_roots_first(capsys, tmp_path, lineage):
    # y reads (x, a) and x reads a: given as "x a", a still goes first, so the record x
    # gets names a's new upload rather than one that may lack the blocks x consumed.
    a, _, x, y = lineage
    out = tmp_path / "out"
    code, stdout, err = run(
        capsys,
        tmp_path,
        "publish",
        str(y),
        "--to",
        f"car:{out}",
        "--with-inputs",
        str(x),
        str(a),
        "--json",
    )
    assert code == 0, err
    order = [p["plan"]["datasetId"] for p in json.loads(stdout)["publishes"]]
    assert order == [A, X, str(derivative_keypair(1).dataset_id)]


def test_encrypted_lineage_verifies_with_keys_and_fails_clearly_without(capsys, tmp_path, lineage):
    # Every dataset of the lineage published with --encrypt: verify --lineage decrypts
    # each replica with this keystore's keys before walking it (issue 7 + 11).
    a, b, x, _ = lineage
    out = tmp_path / "out"
    code, _, err = run(
        capsys,
        tmp_path,
        "publish",
        str(x),
        "--to",
        f"car:{out}",
        "--with-inputs",
        str(a),
        str(b),
        "--encrypt",
    )
    assert code == 0, err
    code, stdout, err = run(capsys, tmp_path, "verify", f"car:{out}", "--lineage", "--json")
    assert code == 0, stdout + err
    rep = json.loads(stdout)
    assert rep["complete"] is True
    assert sorted((i["datasetId"], i["status"]) for i in rep["inputs"]) == sorted(
        [(A, "present"), (B, "present")]
    )
    # A keystore without the keys: one clear line, not a hash mismatch of ciphertext.
    code = main(
        ["verify", f"car:{out}", "--lineage"],
        env={"ODFWEB3_KEYSTORE": str(tmp_path / "other"), "HOME": str(tmp_path)},
    )
    err = capsys.readouterr().err
    assert code != 0 and "is encrypted and no key" in err and "hash mismatch" not in err
