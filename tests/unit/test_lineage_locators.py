"""A signed record's inputs map may only name network references.

The attack: a publisher signs a record whose ``_odf.inputs`` names ``car:/abs/path`` (here a
perfectly valid replica of the input, so nothing else would catch it). ``verify --lineage``
used to open that local path. Now the locator is refused with one line naming it, the input
is reported unreachable (exit 2), and the path is never read.
"""

from __future__ import annotations

import json

import pytest

from odfweb3.cli.main import main
from odfweb3.crypto.keystore import Keystore
from odfweb3.errors import ResolutionError
from odfweb3.odf.builder import example_keypair
from odfweb3.publish.execute import publish_dataset
from odfweb3.read.lineage_check import is_network_locator, resolver_from_records
from odfweb3_ipfs.publish.car_target import CarTarget
from odfweb3_ipfs.read.car_replica import CarDirReplica, check_car_dir

from .odf.lineage_helpers import make_lineage

A, B = str(example_keypair(1).dataset_id), str(example_keypair(2).dataset_id)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("loc")
    a, b, x, _ = make_lineage(root / "lin")
    keystore = Keystore(root / "keys")
    out_a, out_b, out_x = root / "car-a", root / "car-b", root / "car-x"
    publish_dataset(a, CarTarget(out_a, keystore))
    publish_dataset(b, CarTarget(out_b, keystore))
    # The hostile record: its author points the verifier at local paths.
    publish_dataset(
        x, CarTarget(out_x, keystore), record_extra={"inputs": {A: f"car:{out_a}", B: str(out_b)}}
    )
    return root, out_a, out_b, out_x


def test_a_record_naming_a_local_path_is_refused_in_one_line(capsys, world) -> None:
    root, _, _, out_x = world
    code = main(
        ["verify", f"car:{out_x}", "--lineage", "--json"],
        env={"ODFWEB3_KEYSTORE": str(root / "keys"), "HOME": str(root)},
    )
    out, err = capsys.readouterr()
    rep = json.loads(out)
    assert code == 2, out + err
    assert {i["status"] for i in rep["inputs"]} == {"unreachable"}
    for i in rep["inputs"]:
        assert "may only name ipns://, ipfs://, ar:// or did:odf:" in i["error"]
        assert "\n" not in i["error"]
    assert all(i.get("replica") in (None, "") for i in rep["inputs"])


def test_the_resolver_never_calls_open_for_a_local_locator(world) -> None:
    _, _, _, out_x = world
    opened: list[str] = []
    replica = CarDirReplica(check_car_dir(out_x), f"car:{out_x}")
    resolve = resolver_from_records(replica, lambda ref: opened.append(ref))  # type: ignore[arg-type,func-returns-value]
    for did in (A, B):
        with pytest.raises(ResolutionError, match="--input DID=REF"):
            resolve(did)
    assert opened == []


@pytest.mark.parametrize(
    ("locator", "network"),
    [
        ("ipns://k51qzi5uqu5d", True),
        ("ipfs://bafy", True),
        ("ar://" + "a" * 43, True),
        ("did:odf:fed01", True),
        ("car:/etc", False),
        ("/etc/passwd", False),
        ("bundle:/tmp/x", False),
        ("file:///etc/passwd", False),
        ("IPNS://upper", False),
        ("", False),
    ],
)
def test_network_locators(locator: str, network: bool) -> None:
    assert is_network_locator(locator) is network
