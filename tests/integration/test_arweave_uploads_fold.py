"""The publish state's uploads list stays bounded, and `status` asks only about what is not final.

Against the session's arlocal: one-block updates published one after another. When the
gateway shows the last upload in a block, the next publish folds the list (`extra.uploads`
holds only the new upload, `extra.folded` counts the ones before: the tiered records name
them); uploads not mined yet stay listed until one after them is seen mined. `status`
(`upload_statuses`) then sends the same number of gateway requests after 2 updates as after
6: about the uploads listed only.
"""

from __future__ import annotations

import json
from pathlib import Path

from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import StateStore
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.publish.gateway_target import GatewayTarget, upload_statuses
from odfweb3_arweave.wallet import generate_wallet


def _publish(arlocal, wallet, state_dir: Path, ds: Path):
    target = GatewayTarget(ArweaveGateway(arlocal.url), wallet, StateStore(state_dir))
    return publish_dataset(ds, target).state


def _status_calls(arlocal, state) -> tuple[int, list[dict]]:
    with ArweaveGateway(arlocal.url) as gw:
        rows = upload_statuses(gw, state)
        return gw.calls, rows


def test_uploads_fold_once_final_and_status_asks_about_the_rest(arlocal, tmp_path) -> None:
    wallet = generate_wallet()
    arlocal.mint(wallet.address, 10**15)
    ds = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=1_000, seed=4401).path
    state_dir = tmp_path / "state"

    state = _publish(arlocal, wallet, state_dir, ds)
    assert [u["recordId"] for u in state.extra["uploads"]] == [state.record["recordId"]]
    sizes: list[int] = []
    calls: list[int] = []
    for n in range(6):
        arlocal.mine(1)  # the last upload is in a block: the next publish folds it
        append_blocks(ds, 1, data_bytes=500, seed=4410 + n)
        state = _publish(arlocal, wallet, state_dir, ds)
        (only,) = state.extra["uploads"]
        assert only["recordId"] == state.record["recordId"]
        assert state.extra["folded"] == n + 1
        sizes.append(len(json.dumps(state.extra["uploads"])) + len(str(state.extra["folded"])))
        got, rows = _status_calls(arlocal, state)
        calls.append(got)
        assert [r["recordId"] for r in rows] == [only["recordId"]]
    assert len(set(sizes)) == 1  # the list's bytes do not grow with the uploads
    assert len(set(calls)) == 1  # nor do status's requests

    # Not mined: nothing is known final, nothing folds; then one mined upload folds them all.
    for n in range(2):
        append_blocks(ds, 1, data_bytes=500, seed=4420 + n)
        state = _publish(arlocal, wallet, state_dir, ds)
    assert len(state.extra["uploads"]) == 3 and state.extra["folded"] == 6
    got, rows = _status_calls(arlocal, state)
    assert [r["state"] for r in rows] == ["pending", "pending", "pending"]
    assert got > calls[0]  # three uploads asked about, not one
    arlocal.mine(1)
    append_blocks(ds, 1, data_bytes=500, seed=4430)
    state = _publish(arlocal, wallet, state_dir, ds)
    assert len(state.extra["uploads"]) == 1 and state.extra["folded"] == 9
