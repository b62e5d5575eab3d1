"""A slow Arweave gateway and a long chain of delta uploads: the command's network budget.

Reading a delta upload walks ``ODF-Prev-Upload`` back to the last full manifest, about two
requests per delta (measured before the budget: 1,000 deltas took 98 s on loopback, 10,005
were refused only after 16 minutes and 20,000 requests). Each request has its deadline; the
command as a whole now has ``network.command_deadline_s`` too. Real arlocal, five real
uploads (one full, four deltas), and a loopback proxy that makes every answer slow
(tests/support/lying_proxy.py ``delay_s``): with the budget spent the command stops asking,
one line, exit 69; the same command through the honest gateway reads the dataset.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import StateStore
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.publish.gateway_target import GatewayTarget
from odfweb3_arweave.wallet import generate_wallet
from tests.support.lying_proxy import lying_proxy

RICH = 10**15


@pytest.fixture(scope="module")
def deltas(tmp_path_factory, arlocal):
    root = tmp_path_factory.mktemp("ar-budget")
    ds = create_root_dataset(root / "ds", blocks=2, data_bytes=4_000, seed=83).path
    wallet = generate_wallet()
    arlocal.mint(wallet.address, RICH)
    states = StateStore(root / "state")
    out = None
    for n in range(5):
        if n:
            append_blocks(ds, 1, data_bytes=1_000, seed=90 + n)
        out = publish_dataset(ds, GatewayTarget(ArweaveGateway(arlocal.url), wallet, states))
    assert out is not None and out.state.extra["deltaUploads"] == 4
    arlocal.mine()
    return root, out.state.record["recordId"]


def run(capsys, root: Path, gateway: str, budget: float, *argv: str) -> tuple[int, str, str]:
    cfg = root / f"odfweb3-{budget:g}.yaml"
    cfg.write_text(
        json.dumps(
            {
                "arweave": {"gateway": gateway},
                "state_dir": str(root / "reader-state"),
                "keystore": str(root / "reader-keys"),
                "network": {"command_deadline_s": budget, "retries": 0},
            }
        )
    )
    code = main([*argv, "--config", str(cfg)], env={"HOME": str(root)})
    out, err = capsys.readouterr()
    return code, out, err


def test_a_slow_gateway_over_a_delta_chain_is_cut_by_the_command_budget(
    deltas, arlocal, capsys
) -> None:
    root, record = deltas
    code, _, err = run(capsys, root, arlocal.url, 300, "pull", f"ar://{record}", str(root / "a"))
    assert code == 0, err  # honest and quick: the whole chain of uploads is read

    with lying_proxy(arlocal.url) as proxy:
        proxy.delay_s = 0.4
        code, _, err = run(capsys, root, proxy.url, 2, "pull", f"ar://{record}", str(root / "b"))
        asked = len(proxy.requests)
    assert code == 69, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "network.command_deadline_s" in err, err
    assert not (root / "b" / "refs" / "head").exists(), "a partial pull left a head"
    # 2 s of budget at 0.4 s an answer: a handful of requests, then none (the honest pull
    # makes many more: two per delta upload, then every object).
    assert asked <= 8, proxy.requests


def test_a_record_counting_more_deltas_than_readers_walk_is_refused_at_once(
    deltas, arlocal, capsys, tmp_path, monkeypatch
) -> None:
    """Before, 10,005 deltas were refused only after 16 minutes and 20,000 requests. A record
    now says how many deltas lie behind it (ODF-Delta-Uploads): one over the bound is refused
    before the walk, in a few requests."""
    from odfweb3_arweave.publish import bundle_plan

    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=2_000, seed=85).path
    wallet = generate_wallet()
    arlocal.mint(wallet.address, RICH)
    states = StateStore(tmp_path / "state")
    first = publish_dataset(ds, GatewayTarget(ArweaveGateway(arlocal.url), wallet, states))
    # A publisher with another bound and a doctored state signs "delta upload 10005".
    monkeypatch.setattr(bundle_plan, "MAX_DELTA_UPLOADS", 20_000)
    path = states.path_for(first.state.dataset_id, first.state.target)
    doc = json.loads(path.read_text())
    doc["extra"]["deltaUploads"] = 10_004
    path.write_text(json.dumps(doc))
    append_blocks(ds, 1, data_bytes=500, seed=86)
    last = publish_dataset(ds, GatewayTarget(ArweaveGateway(arlocal.url), wallet, states))
    assert last.state.extra["deltaUploads"] == 10_005
    arlocal.mine()
    with lying_proxy(arlocal.url) as proxy:
        code, _, err = run(
            capsys,
            tmp_path,
            proxy.url,
            300,
            "pull",
            f"ar://{last.state.record['recordId']}",
            str(tmp_path / "copy"),
        )
        asked = len(proxy.requests)
    assert code != 0 and err.count("\n") == 1, err
    assert "delta upload 10005" in err and "at most 10000" in err, err
    assert asked <= 4, proxy.requests
