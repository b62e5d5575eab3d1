"""``publish --to ipfs --with-inputs`` on the session's IPFS node, then
``verify ipns://NAME --lineage`` with nothing but the derivative's name."""

import json
import shutil

from odfweb3.cli.main import main
from odfweb3.odf.builder import append_blocks, create_root_dataset, example_keypair
from odfweb3.odf.derivative import create_derivative_dataset
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from odfweb3_ipfs.client.kubo import KuboClient
from odfweb3_ipfs.formats.libp2p_keys import parse_ipns_name
from odfweb3_ipfs.publish.node_target import read_node_record


def test_publish_with_inputs_and_verify_the_lineage_from_the_name(tmp_path, ipfs_node, capsys):
    a = create_root_dataset(tmp_path / "a", blocks=3, data_bytes=20_000, seed=31).path
    b = create_root_dataset(tmp_path / "b", blocks=2, data_bytes=10_000, seed=32).path
    x = create_derivative_dataset(tmp_path / "x", [a, b], transactions=2, seed=3).path
    environ = {
        "ODFWEB3_STATE_DIR": str(tmp_path / "state"),
        "ODFWEB3_KEYSTORE": str(tmp_path / "keys"),
        "ODFWEB3_IPFS_API": ipfs_node.api_url,
        "ODFWEB3_IPFS_GATEWAY": ipfs_node.gateway_url,
        "HOME": str(tmp_path),
    }
    code = main(
        ["publish", str(x), "--to", "ipfs", "--with-inputs", str(a), str(b), "--json"], env=environ
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    doc = json.loads(out.out)
    a_pub, b_pub, x_pub = doc["publishes"]
    assert doc["inputs"] == {
        a_pub["plan"]["datasetId"]: f"ipns://{a_pub['record']['name']}",
        b_pub["plan"]["datasetId"]: f"ipns://{b_pub['record']['name']}",
    }

    # The node holds the derivative's signed record with the same map in _odf.inputs.
    name = x_pub["record"]["name"]
    with KuboClient(ipfs_node.api_url) as client:
        seen = read_node_record(client, parse_ipns_name(name))
    assert seen is not None and seen.record.odf is not None
    assert dict(seen.record.odf.extra["inputs"]) == doc["inputs"]

    code = main(["verify", f"ipns://{name}", "--lineage", "--json"], env=environ)
    out = capsys.readouterr()
    report = json.loads(out.out)
    assert code == 0, out.out + out.err
    assert report["complete"] is True
    assert sorted((i["datasetId"], i["status"]) for i in report["inputs"]) == sorted(
        (did, "present") for did in doc["inputs"]
    )

    # Two levels: y consumes (x, a). Publishing y with its inputs re-publishes x plainly,
    # which keeps x's own map, so the whole lineage resolves from y's name alone.
    y = create_derivative_dataset(tmp_path / "y", [x, a], transactions=1, seed=5).path
    code = main(
        ["publish", str(y), "--to", "ipfs", "--with-inputs", str(x), str(a), "--json"],
        env=environ,
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    y_doc = json.loads(out.out)
    assert y_doc["inputs"][x_pub["plan"]["datasetId"]] == f"ipns://{name}"
    y_name = y_doc["publishes"][-1]["record"]["name"]
    code = main(["verify", f"ipns://{y_name}", "--lineage", "--json"], env=environ)
    out = capsys.readouterr()
    report = json.loads(out.out)
    assert code == 0, out.out + out.err
    assert [(i["depth"], i["status"]) for i in report["inputs"]] == [
        (1, "present"),
        (2, "present"),
        (2, "present"),
        (1, "present"),
    ]


def test_incomplete_lineage_on_the_ipfs_node_is_reported_precisely(tmp_path, ipfs_node, capsys):
    environ = {
        "ODFWEB3_STATE_DIR": str(tmp_path / "state"),
        "ODFWEB3_KEYSTORE": str(tmp_path / "keys"),
        "ODFWEB3_IPFS_API": ipfs_node.api_url,
        "ODFWEB3_IPFS_GATEWAY": ipfs_node.gateway_url,
        "HOME": str(tmp_path),
    }

    def run(*argv):
        code = main(list(argv), env=environ)
        out = capsys.readouterr()
        assert out.out, out.err
        return code, json.loads(out.out)

    a = create_root_dataset(tmp_path / "a", blocks=2, data_bytes=8_000, seed=71).path
    b = create_root_dataset(tmp_path / "b", blocks=2, data_bytes=6_000, seed=72).path
    a_old = tmp_path / "old" / "a"  # the same dataset, one block behind what d consumes
    shutil.copytree(a, a_old)
    append_blocks(a, 1, data_bytes=2_000, seed=73, fsync=False)
    d = create_derivative_dataset(tmp_path / "d", [a, b], transactions=2, seed=8).path
    a_id = str(example_keypair(71).dataset_id)
    head_a = multihash_to_str(DatasetReader.open(a).head())
    head_a_old = multihash_to_str(DatasetReader.open(a_old).head())

    # (a) an input never published: unresolvable, named by its dataset ID.
    code, doc = run("publish", str(d), "--to", "ipfs", "--with-inputs", str(b), "--json")
    assert code == 0
    b_pub, d_pub = doc["publishes"]
    b_id, d_id = b_pub["plan"]["datasetId"], d_pub["plan"]["datasetId"]
    d_ref = f"ipns://{d_pub['record']['name']}"
    code, report = run("verify", d_ref, "--lineage", "--json")
    assert code == 1 and report["complete"] is False and report["datasetId"] == d_id
    assert [(i["datasetId"], i["status"]) for i in report["inputs"]] == [
        (a_id, "unresolvable"),
        (b_id, "present"),
    ]
    unresolved = report["inputs"][0]
    assert unresolved["consumer"] == d_id and unresolved["replica"] is None
    assert unresolved["consumed"] == head_a and unresolved["missingBlock"] is None

    # (b) the input published at an older head than the one consumed: missing, with the
    # consumed block the replica lacks named. The same name, re-signed with the new map.
    code, doc = run(
        "publish", str(d), "--to", "ipfs", "--with-inputs", str(a_old), str(b), "--json"
    )
    assert code == 0
    a_pub, _, d_pub2 = doc["publishes"]
    assert d_pub2["record"]["name"] == d_pub["record"]["name"]
    code, report = run("verify", d_ref, "--lineage", "--json")
    assert code == 1 and report["complete"] is False
    missing, present = report["inputs"]
    assert (missing["datasetId"], missing["status"]) == (a_id, "missing")
    assert missing["missingBlock"] == head_a and missing["consumed"] == head_a
    assert missing["head"] == head_a_old
    assert missing["replica"] == f"ipns://{a_pub['record']['name']}"
    assert (present["datasetId"], present["status"]) == (b_id, "present")

    # (c) a replica of another dataset given for a: diverged.
    b_ref = f"ipns://{b_pub['record']['name']}"
    code, report = run("verify", d_ref, "--lineage", "--input", f"{a_id}={b_ref}", "--json")
    assert code == 1
    diverged = report["inputs"][0]
    assert (diverged["datasetId"], diverged["status"]) == (a_id, "diverged")
    assert diverged["replica"] == b_ref and f"serves dataset {b_id}" in diverged["error"]

    # Publishing a up to date under the same name completes the lineage.
    code, doc = run("publish", str(a), "--to", "ipfs", "--json")
    assert code == 0 and doc["record"]["name"] == a_pub["record"]["name"]
    code, report = run("verify", d_ref, "--lineage", "--json")
    assert code == 0 and [i["status"] for i in report["inputs"]] == ["present", "present"]
