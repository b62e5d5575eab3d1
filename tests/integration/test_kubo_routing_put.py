"""A record without a node: `name push` PUTs the pre-signed IPNS record of an
offline publish to a delegated routing endpoint (IPIP-379, `PUT /routing/v1/ipns/{name}`).

The endpoint is Kubo's own (`Gateway.ExposeRoutingAPI`, on by default, on the gateway port):
boxo's server validates the record against the name and puts it into Kubo's routing. A GET on
the same endpoint must return our exact bytes, and the name then resolves through the node.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest

from odfweb3.cli.main import main
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.multihash import multihash_to_str
from odfweb3_ipfs.client.routing_v1 import IPNS_RECORD_TYPE
from tests.support.kubo import start_kubo


def run(capsys, env, *argv):
    code = main(list(argv), env=env)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def kubo(tmp_path_factory):
    with start_kubo(tmp_path_factory.mktemp("kubo-routing")) as node:
        yield node


@pytest.fixture
def env(tmp_path: Path):
    return {"HOME": str(tmp_path), "ODFWEB3_STATE_DIR": str(tmp_path / "state")}


def served(kubo, name: str) -> httpx.Response:
    return httpx.get(
        f"{kubo.gateway_url}/routing/v1/ipns/{name}",
        headers={"Accept": IPNS_RECORD_TYPE},
        timeout=30,
    )


def test_push_offline_record_then_get_returns_our_bytes(capsys, tmp_path, env, kubo):
    built = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=4000, seed=31)
    out_dir = tmp_path / "out"
    code, out, err = run(
        capsys, env, "--json", "publish", str(built.path), "--to", f"car:{out_dir}"
    )
    assert code == 0, err
    name = json.loads(out)["record"]["name"]
    record = (out_dir / f"{name}.ipns-record").read_bytes()

    code, out, err = run(
        capsys, env, "--json", "name", "push", f"car:{out_dir}", "--routing", kubo.gateway_url
    )
    assert code == 0, err
    pushed = json.loads(out)
    assert (pushed["name"], pushed["sequence"], pushed["served"]) == (name, 0, "ours (same bytes)")
    answer = served(kubo, name)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith(IPNS_RECORD_TYPE)
    assert answer.content == record

    # The next offline publish (sequence 1) pushed from the record file, endpoint from config.
    append_blocks(built.path, 1, data_bytes=500, seed=2)
    code, out, err = run(
        capsys, env, "--json", "publish", str(built.path), "--to", f"car:{out_dir}"
    )
    assert code == 0, err
    record1 = (out_dir / f"{name}.ipns-record").read_bytes()
    code, out, err = run(
        capsys,
        {**env, "ODFWEB3_IPFS_ROUTING": kubo.gateway_url + "/routing/v1"},
        "name",
        "push",
        str(out_dir / f"{name}.ipns-record"),
    )
    assert code == 0, err
    assert "ours (same bytes)" in out
    assert served(kubo, name).content == record1

    # The node itself now resolves the name to the new head (record -> root -> refs/head is
    # checked by resolve; the blocks come from the CAR imported into the node).
    # In publish.json's order, oldest first: a delta CAR's root links blocks of the CARs
    # before it (sorted by name, a delta whose CID sorts first would pin a root whose blocks
    # the node must then look for on the network).
    order = json.loads((out_dir / "publish.json").read_text())["import"][0].split()[3:]
    for car in (out_dir / car_name for car_name in order):
        kubo.rpc(
            "dag/import", files={"file": (car.name, car.read_bytes(), "application/vnd.ipld.car")}
        )
    code, out, err = run(
        capsys,
        {**env, "ODFWEB3_IPFS_API": kubo.api_url, "ODFWEB3_IPFS_GATEWAY": kubo.gateway_url},
        "--json",
        "resolve",
        f"ipns://{name}",
    )
    assert code == 0, err
    (found,) = json.loads(out)["results"]
    head = DatasetHead(built.path)
    assert (found["head"], found["sequence"]) == (head, 1)

    # An older record (sequence 0) from this machine, which signed sequence 1: refused
    # before any request (a rollback of the name), one line, exit 75.
    old = tmp_path / f"{name}.ipns-record"
    old.write_bytes(record)
    code, _, err = run(capsys, env, "name", "push", str(old), "--routing", kubo.gateway_url)
    assert code == 75 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "refusing to push an older record" in err and "sequence 1" in err
    # From another machine (no key, nothing seen): Kubo answers 200 but keeps the better
    # record (its IPNS validator selects by sequence); the read-back sees that: exit 75.
    elsewhere = {"HOME": str(tmp_path / "b"), "ODFWEB3_STATE_DIR": str(tmp_path / "b-state")}
    code, _, err = run(capsys, elsewhere, "name", "push", str(old), "--routing", kubo.gateway_url)
    assert code == 75 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "serves a newer record (sequence 1 > 0)" in err
    assert served(kubo, name).content == record1


def DatasetHead(path: Path) -> str:
    from odfweb3.odf.layout import DatasetReader

    return multihash_to_str(DatasetReader.open(path).head())


def test_push_refusals_are_one_line(capsys, tmp_path, env, kubo):
    built = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=100, seed=32)
    out_dir = tmp_path / "out"
    assert run(capsys, env, "publish", str(built.path), "--to", f"car:{out_dir}", "-q")[0] == 0
    (rec,) = out_dir.glob("*.ipns-record")

    # A tampered record never leaves: verified locally first.
    bad = tmp_path / rec.name
    data = bytearray(rec.read_bytes())
    data[-5] ^= 1
    bad.write_bytes(bytes(data))
    code, _, err = run(capsys, env, "name", "push", str(bad), "--routing", kubo.gateway_url)
    assert code != 0 and err.count("\n") == 1 and "Traceback" not in err, err

    fifo = tmp_path / "fifo" / rec.name
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    cases = [
        ([str(fifo), "--routing", kubo.gateway_url], 64, "not a regular file"),
        (["car:" + str(out_dir)], 64, "no routing endpoint"),  # no --routing, no config
        (["car:" + str(out_dir), "--routing", "ftp://x"], 64, "give an http(s) URL"),
        (["car:" + str(tmp_path / "nowhere"), "--routing", kubo.gateway_url], 66, "publish.json"),
        ([str(rec), "--routing", kubo.api_url], 69, "HTTP 404"),  # the RPC port has no /routing
        ([str(rec), "--routing", "http://127.0.0.1:9"], 69, "check the URL"),
    ]
    for argv, exit_code, words in cases:
        code, _, err = run(capsys, env, "name", "push", *argv)
        assert (code, err.count("\n")) == (exit_code, 1) and words in err, (argv, err)
        assert "Traceback" not in err


def test_publish_with_routing_pushes_in_one_step(capsys, tmp_path, env, kubo):
    built = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=300, seed=33)
    out_dir = tmp_path / "out"
    code, out, err = run(
        capsys, env, "--json", "publish", str(built.path), "--to", f"car:{out_dir}",
        "--routing", kubo.gateway_url,
    )  # fmt: skip
    assert code == 0, err
    done = json.loads(out)
    name = done["record"]["name"]
    assert done["pushed"]["served"] == "ours (same bytes)"
    assert served(kubo, name).content == (out_dir / f"{name}.ipns-record").read_bytes()

    # The endpoint is down: the publish stands (printed), the push failure is a warning line
    # naming the retry command, and the exit code is the push's.
    append_blocks(built.path, 1, data_bytes=100, seed=3)
    code, out, err = run(
        capsys, env, "publish", str(built.path), "--to", f"car:{out_dir}",
        "--routing", "http://127.0.0.1:9",
    )  # fmt: skip
    assert code == 69 and "root" in out and "Traceback" not in err
    assert f"odfweb3 name push car:{out_dir} --routing http://127.0.0.1:9" in err

    code, _, err = run(
        capsys, env, "publish", str(built.path), "--to", "bundle:x", "--routing", kubo.gateway_url
    )
    assert code == 64 and "--routing pushes the record of a single offline publish" in err
