"""``publish --to arweave --with-inputs`` on the session's arlocal, then
``verify ar://RECORD --lineage`` with nothing but the derivative's upload record."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from odfweb3.cli.main import main
from odfweb3.odf.builder import append_blocks, create_root_dataset, example_keypair
from odfweb3.odf.derivative import append_transform, create_derivative_dataset
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.read.replica import open_ar_replica
from odfweb3_arweave.wallet import generate_wallet, save_wallet


def test_publish_with_inputs_and_verify_the_lineage_from_the_record(
    arlocal, tmp_path: Path, capsys
) -> None:
    wallet = generate_wallet()
    arlocal.mint(wallet.address, 10**15)
    wallet_path = tmp_path / "wallet.json"
    save_wallet(wallet, wallet_path)
    a = create_root_dataset(tmp_path / "a", blocks=2, data_bytes=4_000, seed=41).path
    b = create_root_dataset(tmp_path / "b", blocks=2, data_bytes=3_000, seed=42).path
    x = create_derivative_dataset(tmp_path / "x", [a, b], transactions=2, seed=4).path
    env = {
        "HOME": str(tmp_path),
        "ODFWEB3_STATE_DIR": str(tmp_path / "state"),
        "ODFWEB3_KEYSTORE": str(tmp_path / "keys"),
        "ODFWEB3_ARWEAVE_GATEWAY": arlocal.url,
        "ODFWEB3_ARWEAVE_WALLET": str(wallet_path),
    }
    code = main(
        ["publish", str(x), "--to", "arweave", "--with-inputs", str(a), str(b), "--json"], env
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    doc = json.loads(out.out)
    a_pub, b_pub, x_pub = doc["publishes"]
    assert doc["inputs"] == {
        a_pub["plan"]["datasetId"]: f"ar://{a_pub['record']['recordId']}",
        b_pub["plan"]["datasetId"]: f"ar://{b_pub['record']['recordId']}",
    }
    arlocal.mine(1)

    ref = f"ar://{x_pub['record']['recordId']}"
    replica = open_ar_replica(ArweaveGateway(arlocal.url), ref)
    assert dict(replica.lineage_inputs()) == doc["inputs"]

    code = main(["verify", ref, "--lineage", "--json"], env)
    out = capsys.readouterr()
    report = json.loads(out.out)
    assert code == 0, out.out + out.err
    assert report["complete"] is True
    assert sorted((i["datasetId"], i["status"]) for i in report["inputs"]) == sorted(
        (did, "present") for did in doc["inputs"]
    )


def _setup(arlocal, tmp_path: Path) -> dict[str, str]:
    wallet = generate_wallet()
    arlocal.mint(wallet.address, 10**15)
    wallet_path = tmp_path / "wallet.json"
    save_wallet(wallet, wallet_path)
    return {
        "HOME": str(tmp_path),
        "ODFWEB3_STATE_DIR": str(tmp_path / "state"),
        "ODFWEB3_KEYSTORE": str(tmp_path / "keys"),
        "ODFWEB3_ARWEAVE_GATEWAY": arlocal.url,
        "ODFWEB3_ARWEAVE_WALLET": str(wallet_path),
    }


def _run(capsys, env: dict[str, str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(list(argv), env)
    out = capsys.readouterr()
    assert out.out, out.err
    doc: dict[str, Any] = json.loads(out.out)
    return code, doc


def _head(path: Path) -> str:
    return multihash_to_str(DatasetReader.open(path).head())


def test_two_level_lineage_on_arlocal_verifies_from_the_top_record(
    arlocal, tmp_path: Path, capsys
) -> None:
    env = _setup(arlocal, tmp_path)
    a = create_root_dataset(tmp_path / "a", blocks=2, data_bytes=3_000, seed=51).path
    b = create_root_dataset(tmp_path / "b", blocks=2, data_bytes=2_000, seed=52).path
    x = create_derivative_dataset(tmp_path / "x", [a, b], transactions=2, seed=5).path
    code, first = _run(
        capsys, env, "publish", str(x), "--to", "arweave", "--with-inputs", str(a), str(b), "--json"
    )
    assert code == 0
    x_map = first["inputs"]
    arlocal.mine(1)

    # a and x move on; y consumes (x, a). Publishing y with its inputs republishes a, then
    # x plainly: x's new record keeps x's inputs map, each input pointed at its latest
    # upload, since x's new block consumed a block only a's new upload holds.
    append_blocks(a, 1, data_bytes=1_000, seed=53, fsync=False)
    append_transform(x, [a, b], fsync=False)
    y = create_derivative_dataset(tmp_path / "y", [x, a], transactions=1, seed=6).path
    code, doc = _run(
        capsys, env, "publish", str(y), "--to", "arweave", "--with-inputs", str(a), str(x), "--json"
    )
    assert code == 0
    a_pub, x_pub, y_pub = doc["publishes"]
    assert x_pub["plan"]["relation"] == "ahead" and a_pub["plan"]["relation"] == "ahead"
    a_id, b_id, x_id = (p["plan"]["datasetId"] for p in first["publishes"])
    arlocal.mine(1)
    gateway = ArweaveGateway(arlocal.url)
    x_ref = f"ar://{x_pub['record']['recordId']}"
    x_replica = open_ar_replica(gateway, x_ref)
    assert multihash_to_str(x_replica.head()) == _head(x)
    assert dict(x_replica.lineage_inputs()) == {
        a_id: f"ar://{a_pub['record']['recordId']}",
        b_id: x_map[b_id],
    }
    code, report = _run(capsys, env, "verify", x_ref, "--lineage", "--json")
    assert code == 0, report
    assert [(i["datasetId"], i["status"]) for i in report["inputs"]] == [
        (a_id, "present"),
        (b_id, "present"),
    ]

    top = f"ar://{y_pub['record']['recordId']}"
    code, report = _run(capsys, env, "verify", top, "--lineage", "--json")
    assert code == 0, report
    assert report["complete"] is True and report["datasetId"] == y_pub["plan"]["datasetId"]
    y_id = y_pub["plan"]["datasetId"]
    assert [(i["depth"], i["consumer"], i["datasetId"], i["status"]) for i in report["inputs"]] == [
        (1, y_id, x_id, "present"),
        (2, x_id, a_id, "present"),
        (2, x_id, b_id, "present"),
        (1, y_id, a_id, "present"),
    ]
    by_input = {(i["consumer"], i["datasetId"]): i for i in report["inputs"]}
    assert by_input[(y_id, x_id)]["replica"] == x_ref
    assert by_input[(y_id, x_id)]["consumed"] == _head(x)
    assert by_input[(y_id, a_id)]["consumed"] == _head(a)
    # b is found only through x's carried map.
    assert by_input[(x_id, b_id)]["replica"] == x_map[b_id]

    # Publish state lost: rebuilt from the network, the last record's map is still kept.
    shutil.rmtree(tmp_path / "state")
    append_blocks(a, 1, data_bytes=1_000, seed=54, fsync=False)
    append_transform(x, [a, b], fsync=False)
    code, a_doc = _run(capsys, env, "publish", str(a), "--to", "arweave", "--json")
    assert code == 0
    arlocal.mine(1)
    code, x_doc = _run(capsys, env, "publish", str(x), "--to", "arweave", "--json")
    assert code == 0 and x_doc["record"]["prevUpload"] == x_pub["record"]["recordId"]
    arlocal.mine(1)
    x_ref = f"ar://{x_doc['record']['recordId']}"
    assert dict(open_ar_replica(gateway, x_ref).lineage_inputs()) == {
        a_id: f"ar://{a_doc['record']['recordId']}",
        b_id: x_map[b_id],
    }
    code, report = _run(capsys, env, "verify", x_ref, "--lineage", "--json")
    assert code == 0 and report["complete"] is True, report


def test_incomplete_lineage_on_arlocal_is_reported_precisely(
    arlocal, tmp_path: Path, capsys
) -> None:
    env = _setup(arlocal, tmp_path)
    a = create_root_dataset(tmp_path / "a", blocks=2, data_bytes=3_000, seed=61).path
    b = create_root_dataset(tmp_path / "b", blocks=2, data_bytes=2_000, seed=62).path
    a_old = tmp_path / "old" / "a"  # the same dataset, one block behind what d consumes
    shutil.copytree(a, a_old)
    append_blocks(a, 1, data_bytes=1_000, seed=63, fsync=False)
    d = create_derivative_dataset(tmp_path / "d", [a, b], transactions=2, seed=7).path
    head_a, head_a_old = _head(a), _head(a_old)

    # (a) an input never published: unresolvable, named by its dataset ID.
    code, doc = _run(
        capsys, env, "publish", str(d), "--to", "arweave", "--with-inputs", str(b), "--json"
    )
    assert code == 0
    b_pub, d_pub = doc["publishes"]
    a_id = str(example_keypair(61).dataset_id)
    b_id, d_id = b_pub["plan"]["datasetId"], d_pub["plan"]["datasetId"]
    arlocal.mine(1)
    ref = f"ar://{d_pub['record']['recordId']}"
    code, report = _run(capsys, env, "verify", ref, "--lineage", "--json")
    assert code == 1 and report["complete"] is False
    assert [(i["datasetId"], i["status"]) for i in report["inputs"]] == [
        (a_id, "unresolvable"),
        (b_id, "present"),
    ]
    unresolved = report["inputs"][0]
    assert unresolved["consumer"] == d_id and unresolved["replica"] is None
    assert unresolved["consumed"] == head_a and unresolved["missingBlock"] is None

    # (b) the input published at an older head than the one consumed: missing, with the
    # consumed block the replica lacks. d itself has nothing new: only a new record with
    # the new inputs map is posted.
    code, doc = _run(
        capsys,
        env,
        "publish",
        str(d),
        "--to",
        "arweave",
        "--with-inputs",
        str(a_old),
        str(b),
        "--json",
    )
    assert code == 0
    a_pub, _, d_pub2 = doc["publishes"]
    assert d_pub2["plan"]["relation"] == "same"
    assert d_pub2["record"]["recordId"] != d_pub["record"]["recordId"]
    assert d_pub2["record"]["prevUpload"] == d_pub["record"]["recordId"]
    arlocal.mine(1)
    ref = f"ar://{d_pub2['record']['recordId']}"
    code, report = _run(capsys, env, "verify", ref, "--lineage", "--json")
    assert code == 1 and report["complete"] is False
    missing, present = report["inputs"]
    assert (missing["datasetId"], missing["status"]) == (a_id, "missing")
    assert missing["missingBlock"] == head_a and missing["consumed"] == head_a
    assert missing["head"] == head_a_old
    assert missing["replica"] == f"ar://{a_pub['record']['recordId']}"
    assert (present["datasetId"], present["status"]) == (b_id, "present")

    # (c) a replica of another dataset given for a: diverged.
    b_ref = f"ar://{b_pub['record']['recordId']}"
    code, report = _run(
        capsys, env, "verify", ref, "--lineage", "--input", f"{a_id}={b_ref}", "--json"
    )
    assert code == 1
    diverged = report["inputs"][0]
    assert (diverged["datasetId"], diverged["status"]) == (a_id, "diverged")
    assert diverged["replica"] == b_ref and f"serves dataset {b_id}" in diverged["error"]
