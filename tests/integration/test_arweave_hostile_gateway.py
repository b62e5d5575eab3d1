"""A gateway's GraphQL word is checked against the items' signatures.

Real arlocal, real items, and a loopback proxy that lies with them
(tests/support/lying_proxy.py ``swaps``): the attacker's validly signed items are served
under the victim's owner or id. Before, ``resolve did:odf:… --owner X`` and ``pull ar://ID``
accepted the forged dataset (exit 0). Now each is refused with one line, exit 65 (a forged
signature, or a replica contradicting its signed record: docs/security.md), DEST untouched,
in bounded time.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import StateStore
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.publish.gateway_target import GatewayTarget
from odfweb3_arweave.wallet import generate_wallet
from tests.support.lying_proxy import lying_proxy
from tests.support.nodes import free_port  # claimed, never listened on: refused

RICH = 10**15


@pytest.fixture(scope="module")
def world(tmp_path_factory, arlocal):
    """The honest dataset (wallet X) and a forgery of it (same did:odf, other content,
    published by wallet Y), both really on arlocal."""
    root = tmp_path_factory.mktemp("hostile-ar")
    honest = create_root_dataset(root / "honest", blocks=2, data_bytes=5_000, seed=61)
    assert honest.keypair is not None
    # The same seed gives the same dataset key (anyone can write a Seed naming any ID).
    forged = create_root_dataset(
        root / "forged", blocks=3, data_bytes=5_000, seed=61, description="forged"
    )
    assert forged.keypair is not None and forged.keypair.dataset_id == honest.keypair.dataset_id
    x, y = generate_wallet(), generate_wallet()
    for w in (x, y):
        arlocal.mint(w.address, RICH)
    h = publish_dataset(
        honest.path, GatewayTarget(ArweaveGateway(arlocal.url), x, StateStore(root / "sx"))
    )
    f = publish_dataset(
        forged.path, GatewayTarget(ArweaveGateway(arlocal.url), y, StateStore(root / "sy"))
    )
    arlocal.mine()
    return {
        "root": root,
        "did": str(honest.keypair.dataset_id),
        "x": x,
        "y": y,
        "honest_record": h.state.record["recordId"],
        "forged_record": f.state.record["recordId"],
        "honest_head": multihash_to_str(DatasetReader.open(honest.path).head()),
        "forged_head": multihash_to_str(DatasetReader.open(forged.path).head()),
    }


# What a refusal costs: the lookups and the item fetched before the lie shows (measured 2-3
# requests through the proxy); retrying until network.deadline_s would be many more.
MAX_REQUESTS = 8


def run(capsys, root: Path, gateway: str, *argv: str) -> tuple[int, str, str]:
    cfg = root / f"odfweb3-{time.monotonic_ns()}.yaml"
    dead = f"http://127.0.0.1:{free_port()}"
    cfg.write_text(
        json.dumps(
            {
                "arweave": {"gateway": gateway},
                "ipfs": {"api": dead, "gateway": dead},
                "network": {"retries": 0, "deadline_s": 60},
                "state_dir": str(root / "reader-state"),
                "keystore": str(root / "reader-keys"),
            }
        )
    )
    code = main([*argv, "--config", str(cfg)], env={"HOME": str(root)})
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_honest_flows_still_verify(capsys, world, arlocal) -> None:
    w = world
    code, out, err = run(
        capsys, w["root"], arlocal.url, "resolve", w["did"], "--owner", w["x"].address, "--json"
    )
    assert code == 0, err
    results = json.loads(out)["results"]
    assert [r["head"] for r in results] == [w["honest_head"]]
    assert f"upload record signed by {w['x'].address} (signature and id checked)" in str(results[0])
    dest = w["root"] / "dest-honest"
    code, out, err = run(
        capsys, w["root"], arlocal.url, "pull", f"ar://{w['honest_record']}", str(dest)
    )
    assert code == 0, err
    assert (dest / "refs" / "head").read_text().strip() == w["honest_head"]


def test_another_owners_records_named_as_the_publishers_are_refused(capsys, world, arlocal) -> None:
    # The gateway answers "uploads by X" with Y's validly signed forgery, its owner renamed X.
    w = world
    with lying_proxy(arlocal.url) as proxy:
        proxy.swaps = [(w["x"].address, w["y"].address)]
        code, out, err = run(
            capsys, w["root"], proxy.url, "resolve", w["did"], "--owner", w["x"].address, "--json"
        )
        asked = len(proxy.requests)
    line = one_line(err)
    assert code == 65, out + err
    assert w["forged_head"] not in out
    assert f"signed by {w['y'].address}, not by the publisher {w['x'].address}" in line
    assert asked <= MAX_REQUESTS, asked  # refused at the lie, not retried until the deadline


def test_the_owner_key_renamed_too_fails_the_signature(capsys, world, arlocal) -> None:
    w = world
    with lying_proxy(arlocal.url) as proxy:
        proxy.swaps = [(w["x"].address, w["y"].address), (w["x"].owner_b64, w["y"].owner_b64)]
        code, out, err = run(
            capsys, w["root"], proxy.url, "resolve", w["did"], "--owner", w["x"].address
        )
        asked = len(proxy.requests)
    line = one_line(err)
    assert code == 65, out + err
    assert "signature does not cover the owner, tags and data served" in line
    assert asked <= MAX_REQUESTS, asked  # refused at the lie, not retried until the deadline


def test_another_record_served_under_the_asked_id_is_refused(capsys, world, arlocal) -> None:
    # pull ar://HONEST: GraphQL and GET /{id} both answer with the forged record's item.
    w = world
    dest = w["root"] / "dest-forged"
    dest.mkdir()
    with lying_proxy(arlocal.url) as proxy:
        proxy.swaps = [(w["honest_record"], w["forged_record"])]
        code, out, err = run(
            capsys, w["root"], proxy.url, "pull", f"ar://{w['honest_record']}", str(dest)
        )
        asked = len(proxy.requests)
    line = one_line(err)
    assert code == 65, out + err
    assert "id is not SHA-256 of the signature served" in line
    assert list(dest.iterdir()) == []  # nothing written
    assert asked <= MAX_REQUESTS, asked  # refused at the lie, not retried until the deadline
