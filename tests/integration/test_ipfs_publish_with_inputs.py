"""``publish --to ipfs --with-inputs`` on the session's IPFS node (issue 11), then
``verify ipns://NAME --lineage`` with nothing but the derivative's name."""

import json

from odfweb3.adapters.ipfs.kubo import KuboClient
from odfweb3.adapters.ipfs.libp2p_keys import parse_ipns_name
from odfweb3.adapters.ipfs.node_target import read_node_record
from odfweb3.cli.main import main
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.derivative import create_derivative_dataset


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
