"""Lineage verification over local and car:DIR replicas: complete, missing, unresolvable."""

import json
import shutil

import pytest

from odfweb3.cli.main import main
from odfweb3.crypto.keystore import Keystore
from odfweb3.odf.builder import append_blocks, example_keypair
from odfweb3.odf.derivative import create_derivative_dataset, derivative_keypair
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.execute import publish_dataset
from odfweb3.read.lineage_check import (
    chain_resolvers,
    replica_dataset_id,
    resolver_from_replicas,
    verify_lineage,
)
from odfweb3.read.replica import LocalReplica
from odfweb3_ipfs.publish.car_target import CarTarget
from odfweb3_ipfs.read.car_replica import CarDirReplica, check_car_dir

from .odf.lineage_helpers import chain_of, make_lineage

A, B = str(example_keypair(1).dataset_id), str(example_keypair(2).dataset_id)
X, Y = str(derivative_keypair(0).dataset_id), str(derivative_keypair(1).dataset_id)


def local(path):
    return LocalReplica(DatasetReader.open(path))


def car(out):
    return CarDirReplica(check_car_dir(out), f"car:{out}")


@pytest.fixture(scope="module")
def lineage(tmp_path_factory):
    return make_lineage(tmp_path_factory.mktemp("lin"))


@pytest.fixture(scope="module")
def cars(lineage, tmp_path_factory):
    root = tmp_path_factory.mktemp("cars")
    keystore = Keystore(root / "keys")
    outs = {}
    for path in lineage:
        outs[path.name] = root / f"car-{path.name}"
        publish_dataset(path, CarTarget(outs[path.name], keystore))
    return outs


def statuses(report):
    return [(i.depth, i.consumer, i.dataset_id, i.status) for i in report.inputs]


def test_two_level_lineage_over_local_replicas(lineage):
    a, b, x, y = lineage
    resolve = resolver_from_replicas([local(p) for p in (a, b, x)])
    report = verify_lineage(local(y), resolve)
    assert report.ok and report.dataset_id == Y
    # y consumes (x, a); x consumes (a, b): depth first.
    assert statuses(report) == [
        (1, Y, X, "present"),
        (2, X, A, "present"),
        (2, X, B, "present"),
        (1, Y, A, "present"),
    ]
    x_report = report.inputs[0]
    assert x_report.consumed == chain_of(x)[-1].hash and x_report.blocks_consumed == 2
    assert "lineage complete" in report.describe()
    deep = verify_lineage(local(y), resolve, deep=True)
    assert deep.ok, [i.problems for i in deep.inputs]


def test_root_dataset_has_nothing_to_check(lineage):
    report = verify_lineage(local(lineage[0]), lambda did: None)
    assert report.ok and report.inputs == () and "root dataset" in report.describe()


def test_two_level_lineage_over_car_replicas(lineage, cars):
    replicas = {name: car(out) for name, out in cars.items()}
    assert replica_dataset_id(replicas["x"]) == X
    report = verify_lineage(replicas["y"], {A: replicas["a"], B: replicas["b"], X: replicas["x"]})
    assert report.ok
    assert [i.replica for i in report.inputs] == [f"car:{cars[n]}" for n in ("x", "a", "b", "a")]
    assert verify_lineage(replicas["y"], resolver_from_replicas(replicas.values()), deep=True).ok


def test_input_not_given_is_unresolvable(lineage):
    a, _b, x, y = lineage
    report = verify_lineage(local(y), resolver_from_replicas([local(x), local(a)]))
    assert not report.ok
    assert statuses(report)[2] == (2, X, B, "unresolvable")
    assert [i.status for i in report.inputs].count("present") == 3


def test_input_published_at_an_older_head_is_missing_with_the_block_named(lineage, tmp_path):
    a0, b, _, _ = lineage
    a, a_old = tmp_path / "a", tmp_path / "a-old"
    shutil.copytree(a0, a)
    shutil.copytree(a0, a_old)
    append_blocks(a, 2, data_bytes=2000, seed=3, fsync=False)
    d = create_derivative_dataset(tmp_path / "d", [a, b], transactions=2, fsync=False).path
    out = tmp_path / "car-a-old"
    publish_dataset(a_old, CarTarget(out, Keystore(tmp_path / "keys")))
    report = verify_lineage(local(d), resolver_from_replicas([car(out), local(b)]))
    ra, rb = report.inputs
    assert rb.status == "present" and ra.status == "missing"
    head_a = chain_of(a)[-1].hash
    assert ra.missing_block == head_a and ra.consumed == head_a
    assert ra.head == chain_of(a_old)[-1].hash
    assert multihash_to_str(head_a) in report.describe()
    # The same replica published up to date: present.
    publish_dataset(a, CarTarget(out, Keystore(tmp_path / "keys")))
    assert verify_lineage(local(d), resolver_from_replicas([car(out), local(b)])).ok


def test_replica_of_another_dataset_is_diverged(lineage):
    _a, b, x, _ = lineage
    report = verify_lineage(local(x), {A: local(b), B: local(b)})
    assert [i.status for i in report.inputs] == ["diverged", "present"]
    assert f"serves dataset {B}" in report.inputs[0].error


def test_deep_finds_a_damaged_input_object(lineage, tmp_path):
    a0, b, x, _ = lineage
    a = tmp_path / "a"
    shutil.copytree(a0, a)
    victim = next((a / "data").iterdir())
    victim.write_bytes(b"\x00" + victim.read_bytes()[1:])
    resolve = chain_resolvers(resolver_from_replicas([local(a)]), {B: local(b)}.get)
    assert verify_lineage(local(x), resolve).ok  # blocks are all there
    report = verify_lineage(local(x), resolve, deep=True)
    assert not report.ok
    assert report.inputs[0].problems and "hash" in report.inputs[0].problems[0].lower()


def run(capsys, tmp_path, *argv):
    code = main(list(argv), env={"ODFWEB3_KEYSTORE": str(tmp_path / "keys"), "HOME": str(tmp_path)})
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_exit_codes(capsys, tmp_path, lineage, cars):
    c = {n: f"car:{out}" for n, out in cars.items()}
    code, out, _ = run(
        capsys, tmp_path, "verify", c["y"], "--lineage", "--inputs-from", c["x"], c["a"], c["b"]
    )
    assert code == 0 and "lineage complete" in out

    code, out, _ = run(
        capsys, tmp_path, "verify", c["y"], "--lineage", "--json", "--inputs-from", c["x"], c["a"]
    )
    rep = json.loads(out)
    assert code == 1 and rep["complete"] is False
    assert [i["status"] for i in rep["inputs"]] == ["present", "present", "unresolvable", "present"]

    code, out, _ = run(
        capsys,
        tmp_path,
        "verify",
        str(lineage[2]),
        "--lineage",
        "--input",
        f"{A}={c['a']}",
        "--input",
        f"{B}={lineage[1]}",
        "--deep",
    )
    assert code == 0, out

    code, _, err = run(capsys, tmp_path, "verify", c["y"], "--lineage", "--input", "nonsense")
    assert code == 64 and "DID=REF" not in err and "expected did:odf" in err
    code, _, err = run(capsys, tmp_path, "verify", c["y"])
    assert code == 64 and "--against" in err


def test_a_corrupt_input_is_corrupt_not_unreachable(capsys, tmp_path, lineage):
    """An input replica serving a damaged block is ``corrupt`` (exit 65,
    as ``pull`` of it exits), not ``unreachable`` (2)."""
    a0, b, x, _ = lineage
    a = tmp_path / "a"
    shutil.copytree(a0, a)
    head = DatasetReader.open(a).head()
    block = a / "blocks" / multihash_to_str(head)
    block.write_bytes(block.read_bytes() + b"\x00")
    resolve = chain_resolvers({A: local(a), B: local(b)}.get)
    report = verify_lineage(local(x), resolve)
    by_id = {i.dataset_id: i for i in report.inputs}
    assert by_id[A].status == "corrupt" and "hash" in (by_id[A].error or "")
    code, out, _ = run(
        capsys,
        tmp_path,
        "verify",
        str(x),
        "--lineage",
        "--input",
        f"{A}={a}",
        "--input",
        f"{B}={b}",
    )
    assert code == 65 and "CORRUPT" in out
    code, _, err = run(capsys, tmp_path, "pull", str(a), str(tmp_path / "dest"))
    assert code == 65 and "hash mismatch" in err
