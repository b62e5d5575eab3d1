"""Publishing to Arweave through a real gateway: the session's arlocal 1.1.66.

Never skipped: the `arlocal` fixture starts the gateway. Each test uses its own wallet(s) and
state directory. What is checked goes through arlocal itself: GraphQL (owners + tags),
`GET /{id}`, `GET /{manifest}/{path}`, `/tx/{id}/status`, balances.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from pathlib import Path

import pytest

from odfweb3.errors import BackendRejected, ConflictError, NotFound, ResolutionError, UsageError
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.chain import iter_objects, walk_chain
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import StateStore
from odfweb3.read.replica import read_object_verified
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.formats.ans104 import BUNDLE_TAGS, create_data_item, encode_bundle
from odfweb3_arweave.formats.tags import Tag
from odfweb3_arweave.formats.tx import new_transaction, sign_transaction
from odfweb3_arweave.publish.gateway_target import GatewayTarget, upload_statuses
from odfweb3_arweave.read.lookup import find_latest_upload, walk_to_full_manifest, walk_uploads
from odfweb3_arweave.read.replica import open_ar_replica
from odfweb3_arweave.wallet import Wallet, generate_wallet

RICH = 10**15  # winston: plenty for every test publish


@pytest.fixture(scope="module")
def wallet() -> Wallet:
    return generate_wallet()


@pytest.fixture(scope="module")
def other_wallet() -> Wallet:
    return generate_wallet()


def make_target(arlocal, wallet: Wallet, state_dir: Path, **kw) -> GatewayTarget:
    inline_limit = kw.pop("inline_limit", None)
    gw = ArweaveGateway(arlocal.url, **({"inline_limit": inline_limit} if inline_limit else {}))
    return GatewayTarget(gw, wallet, StateStore(state_dir), **kw)


def dataset_files(ds: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(ds)): p.read_bytes()
        for p in ds.rglob("*")
        if p.is_file() and p.relative_to(ds).parts[0] in ("blocks", "refs", "data", "checkpoints")
    }


def check_read_back(arlocal, state, ds: Path, full_paths: set[str]) -> None:
    """Every file of the dataset, byte for byte, as a plain gateway serves it:
    the paths the latest upload added under its manifest, the paths of the last full
    manifest under it, and every path by its data item id."""
    gw = ArweaveGateway(arlocal.url)
    added = json.loads(gw.get_data(state.record["recordId"]))["added"]
    full = state.extra["fullManifestId"]
    for path, data in dataset_files(ds).items():
        if path in added:
            assert gw.get_data(f"{state.locator}/{path}") == data, path
        if path in full_paths and path != "refs/head":
            assert gw.get_data(f"{full}/{path}") == data, path
        assert gw.get_data(state.objects[path]["dataItemId"]) == data, path


def test_publish_three_times_read_back_and_walk(arlocal, wallet, tmp_path) -> None:
    arlocal.mint(wallet.address, RICH)
    ds = create_root_dataset(tmp_path / "ds", blocks=3, data_bytes=20_000, seed=61).path
    state_dir = tmp_path / "state"
    prices: list[tuple[int, int]] = []

    first = publish_dataset(
        ds, make_target(arlocal, wallet, state_dir, on_price=lambda w, n: prices.append((w, n)))
    )
    assert first.view.head is None
    assert first.state.record["status"] == "pending"
    # priced before posting, with the gateway's own price for the bundle's size
    assert prices and prices[0][1] == first.upload.summary["bundleBytes"]
    assert prices[0][0] == ArweaveGateway(arlocal.url).price(prices[0][1])
    check_read_back(arlocal, first.state, ds, set(dataset_files(ds)))
    assert first.state.extra["fullManifestId"] == first.state.locator  # the first is full
    first_paths = set(dataset_files(ds))

    heads = [multihash_to_str(DatasetReader.open(ds).head())]
    sent = []
    for n in range(2):
        append_blocks(ds, 1, data_bytes=5_000, seed=70 + n)
        heads.append(multihash_to_str(DatasetReader.open(ds).head()))
        out = publish_dataset(ds, make_target(arlocal, wallet, state_dir))
        assert out.view.head is not None and multihash_to_str(out.view.head) == heads[-2]
        sent.append(len(out.plan.send))
        check_read_back(arlocal, out.state, ds, first_paths)
        # a delta manifest: the paths this upload added, naming the first (full) one
        assert out.state.extra["fullManifestId"] == first.state.locator
        assert out.state.extra["deltaUploads"] == n + 1
    assert all(0 < s < len(first.plan.objects) for s in sent)  # incremental

    gw = ArweaveGateway(arlocal.url)
    state = StateStore(state_dir).load(first.state.dataset_id, f"arweave:{arlocal.url}")
    # one L1 transaction per publish, each known to the gateway
    tx_ids = [u["bundleTxId"] for u in state.extra["uploads"]]
    assert len(set(tx_ids)) == 3
    assert all(gw.tx_status(t).state == "pending" for t in tx_ids)

    latest = find_latest_upload(gw, wallet.address, first.state.dataset_id)
    assert latest is not None and latest.id == state.record["recordId"]
    chain = walk_uploads(gw, latest)
    assert [u.facts.head for u in chain] == heads
    assert [u.id for u in chain] == [u["recordId"] for u in state.extra["uploads"]]

    # ar://<record> as a replica: head checked against the record, every byte verified
    replica = open_ar_replica(gw, f"ar://{latest.id}")
    assert replica.head() == DatasetReader.open(ds).head()
    reader = DatasetReader.open(ds)
    for entry in walk_chain(reader):
        assert replica.read_block(entry.hash) == reader.read_block_bytes(entry.hash)
    for obj in iter_objects(list(walk_chain(reader))):
        if obj.kind != "block":
            assert read_object_verified(replica, obj) > 0

    # state rebuilt from the network (a new state directory) continues the delta chain
    append_blocks(ds, 1, data_bytes=2_000, seed=79)
    rebuilt = publish_dataset(ds, make_target(arlocal, wallet, tmp_path / "state2"))
    assert rebuilt.state.extra["fullManifestId"] == first.state.locator
    assert rebuilt.state.extra["deltaUploads"] == 3
    replica = open_ar_replica(gw, f"ar://{rebuilt.state.record['recordId']}")
    # the walk back to the full manifest, bounded: delta 3 spans itself and jumps to delta 2,
    # which spans 1-2 (its tier lists delta 1's objects) and jumps to the full upload
    assert replica.record is not None
    tip = find_latest_upload(gw, wallet.address, first.state.dataset_id)
    assert tip is not None and tip.id == rebuilt.state.record["recordId"]
    walked = walk_to_full_manifest(gw, tip, replica.record)
    assert walked[0].manifest_id == first.state.locator and len(walked) == 3
    assert [r.delta_uploads for r in walked] == [None, 2, 3]
    assert walked[1].span_uploads == 2 and walked[1].earlier
    # The record counts its deltas (ODF-Delta-Uploads): over the bound, refused before the walk.
    with pytest.raises(ResolutionError, match=r"says it is delta upload 3 .* at most 2"):
        walk_to_full_manifest(gw, tip, replica.record, limit=2)
    # A record without the count (an older publisher): the walk stops at the bound.
    uncounted = dataclasses.replace(
        replica.record, delta_uploads=None, span_uploads=None, earlier={}, skip_chain=()
    )
    with pytest.raises(ResolutionError, match="more than 2 delta manifests"):
        walk_to_full_manifest(gw, tip, uncounted, limit=2)
    for entry in walk_chain(DatasetReader.open(ds)):
        assert replica.read_block(entry.hash) == DatasetReader.open(ds).read_block_bytes(entry.hash)

    # confirmations: mine, then status per upload
    arlocal.mine(2)
    rows = upload_statuses(gw, state)
    assert [r["state"] for r in rows] == ["confirmed"] * 3
    assert all(r["height"] is not None for r in rows)
    assert rows[0]["confirmations"] >= 1


def test_bundle_items_are_served_by_id(arlocal, wallet, tmp_path) -> None:
    arlocal.mint(wallet.address, RICH)
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=4_000, seed=62).path
    out = publish_dataset(ds, make_target(arlocal, wallet, tmp_path / "state"))
    gw = ArweaveGateway(arlocal.url)
    files = dataset_files(ds)
    for path, ref in out.state.objects.items():
        assert gw.get_data(ref["dataItemId"]) == files[path], path
        meta = json.loads(gw.get_data(ref["metaItemId"]))
        assert meta["dataTxId"] == ref["dataItemId"]
    record = json.loads(gw.get_data(out.state.record["recordId"]))
    assert record["manifestId"] == out.state.locator
    assert gw.get_data(f"{out.state.locator}/refs/head") == files["refs/head"]
    assert gw.get_data(out.state.locator) == files["refs/head"]  # the manifest's index


def test_spoofed_record_from_another_wallet_is_ignored(
    arlocal, wallet, other_wallet, tmp_path
) -> None:
    arlocal.mint(wallet.address, RICH)
    arlocal.mint(other_wallet.address, RICH)
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=4_000, seed=63).path
    out = publish_dataset(ds, make_target(arlocal, wallet, tmp_path / "state"))
    gw = ArweaveGateway(arlocal.url)
    genuine = find_latest_upload(gw, wallet.address, out.state.dataset_id)
    assert genuine is not None
    # another wallet posts a record with the same tags (but a later time): a bundle with one item
    forged_tags = [t for t in genuine.tags if t.name != b"Unix-Time"]
    forged_tags.append(Tag.of("Unix-Time", str(genuine.facts.unix_time + 1000)))
    item = create_data_item(other_wallet, b'{"forged":true}', forged_tags)
    bundle = encode_bundle([item])
    tx = sign_transaction(
        new_transaction(
            owner=other_wallet.owner,
            reward=gw.price(len(bundle)),
            last_tx=gw.tx_anchor(),
            tags=BUNDLE_TAGS,
            data=bundle,
        ),
        other_wallet,
    )
    gw.post_tx(tx, inline=True)
    # the forged item is indexed under the other owner (verify=False: its body is no record,
    # so a reader verifying it refuses it outright)...
    spoof = find_latest_upload(gw, other_wallet.address, out.state.dataset_id, verify=False)
    assert spoof is not None and spoof.id == item.id_b64
    with pytest.raises(ResolutionError, match="not an odfweb3/upload-record/1 document"):
        find_latest_upload(gw, other_wallet.address, out.state.dataset_id)
    # ...and ignored for ours; a publish with lost state still rebuilds from ours only
    assert find_latest_upload(gw, wallet.address, out.state.dataset_id).id == genuine.id
    again = publish_dataset(ds, make_target(arlocal, wallet, tmp_path / "fresh-state"))
    assert any("rebuilt" in n for n in again.view.notes)
    assert again.view.state.record.record_id == genuine.id
    assert again.plan.is_noop


def test_insufficient_balance_is_clear_and_changes_nothing(arlocal, tmp_path) -> None:
    poor = generate_wallet()
    arlocal.mint(poor.address, 1)
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=4_000, seed=64).path
    state_dir = tmp_path / "state"
    with pytest.raises(BackendRejected) as err:
        publish_dataset(ds, make_target(arlocal, poor, state_dir))
    assert err.value.status == 410
    assert "insufficient balance" in str(err.value) and poor.address in str(err.value)
    assert "winston" in str(err.value) and "AR)" in str(err.value)
    assert not list(state_dir.rglob("*.json"))  # no state, no checkpoint
    assert not list(state_dir.rglob("*.bundle"))  # spooled bundle removed
    assert find_latest_upload(ArweaveGateway(arlocal.url), poor.address, "did:odf:x") is None


def test_gateway_410_is_translated(arlocal, tmp_path) -> None:
    """Posting past our own balance check: arlocal's 410 names the balance problem."""
    poor = generate_wallet()
    gw = ArweaveGateway(arlocal.url)
    tx = sign_transaction(
        new_transaction(owner=poor.owner, reward=1, last_tx=gw.tx_anchor(), data=b"x" * 5000),
        poor,
    )
    with pytest.raises(BackendRejected) as err:
        gw.post_tx(tx, inline=True)
    assert err.value.status == 410
    assert "insufficient balance" in str(err.value) and "/tx" in str(err.value)
    assert arlocal.url in str(err.value)


def test_max_cost_refuses_before_posting(arlocal, wallet, tmp_path) -> None:
    arlocal.mint(wallet.address, RICH)
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=4_000, seed=65).path
    before = arlocal.balance(wallet.address)
    with pytest.raises(UsageError, match="--max-cost"):
        publish_dataset(ds, make_target(arlocal, wallet, tmp_path / "state", max_cost=1))
    assert arlocal.balance(wallet.address) == before
    assert not list((tmp_path / "state").rglob("*.json"))


def test_chunked_upload_and_resume(arlocal, wallet, tmp_path) -> None:
    """A bundle above the inline limit goes by /chunk; an interrupted upload resumes."""
    arlocal.mint(wallet.address, RICH)
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=700_000, seed=66).path
    state_dir = tmp_path / "state"
    target = make_target(arlocal, wallet, state_dir, inline_limit=1024)
    real_post = target.gateway.post_chunk
    posted = []

    def failing_post(chunk):
        if len(posted) == 1:
            raise BackendRejected("simulated interruption", 0, "interrupted")
        real_post(chunk)
        posted.append(chunk)

    target.gateway.post_chunk = failing_post  # type: ignore[method-assign]
    with pytest.raises(BackendRejected, match="simulated"):
        publish_dataset(ds, target)
    (checkpoint,) = state_dir.rglob("*.upload.json")  # checkpoint kept
    # Written by the one atomic writer (fsync, rename): whole, private, no temp file beside it.
    assert json.loads(checkpoint.read_text("utf-8"))["target"] == target.name
    assert checkpoint.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in checkpoint.parent.iterdir() if p.name.startswith(".tmp-")] == []
    resumed_target = make_target(arlocal, wallet, state_dir, inline_limit=1024)
    out = publish_dataset(ds, resumed_target)
    assert out.upload.summary["resumed"].endswith("from chunk 1")  # chunk 0 was accepted
    assert not list(state_dir.rglob("*.upload.json"))
    # arlocal reassembles a chunked bundle in the background after the last chunk; wait for
    # the record item to be served (bounded), then every byte must read back. (Polled by its
    # data: arlocal's /tx/{id}/status knows the bundle, never an item inside it, so a loop on
    # the item's status only ever ran out its whole deadline.)
    gw = ArweaveGateway(arlocal.url)
    deadline = time.monotonic() + 300.0
    while time.monotonic() < deadline:
        try:
            gw.get_data(out.state.record["recordId"])
            break
        except NotFound:
            time.sleep(0.2)
    check_read_back(arlocal, out.state, ds, set(dataset_files(ds)))
    assert (
        find_latest_upload(gw, wallet.address, out.state.dataset_id).id
        == (out.state.record["recordId"])
    )


def test_status_during_an_interrupted_upload(arlocal, wallet, tmp_path, capsys) -> None:
    """A real interrupted upload to arlocal leaves its checkpoint beside the states:
    ``status`` (for every dataset, or another one) shows it as an upload in progress and
    still reports the other datasets, also beside a damaged state; the rerun resumes."""
    from odfweb3.cli.main import main

    arlocal.mint(wallet.address, RICH)
    state_dir = tmp_path / "state"
    done = create_root_dataset(tmp_path / "done", blocks=2, data_bytes=2_000, seed=80).path
    published = publish_dataset(done, make_target(arlocal, wallet, state_dir)).state
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=700_000, seed=81).path
    target = make_target(arlocal, wallet, state_dir, inline_limit=1024)
    real_post = target.gateway.post_chunk
    posted = []

    def interrupted(chunk):
        if len(posted) == 1:
            raise KeyboardInterrupt  # Ctrl-C after the first chunk
        real_post(chunk)
        posted.append(chunk)

    target.gateway.post_chunk = interrupted  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        publish_dataset(ds, target)
    (checkpoint,) = state_dir.rglob("*.upload.json")
    damaged = StateStore(state_dir).path_for("did:odf:fed01dead", f"arweave:{arlocal.url}")
    damaged.parent.mkdir(parents=True)
    damaged.write_text('{"version": 1, "datasetId": "did')  # half written
    env = {"HOME": str(tmp_path / "home"), "ODFWEB3_STATE_DIR": str(state_dir)}

    def status(*args: str) -> tuple[int, str, str]:
        code = main(["status", *args], env=env)
        out, err = capsys.readouterr()
        return code, out, err

    code, out, err = status()
    assert code == 0, err
    assert published.dataset_id in out
    assert "upload in progress — run `publish` to resume" in out
    assert err.count("\n") == 1 and str(damaged) in err and "Traceback" not in err
    code, out, err = status("--json")
    rows = {r["datasetId"]: r for r in json.loads(out)["targets"]}
    assert rows[published.dataset_id]["recordId"] == published.record["recordId"]
    (mine,) = [r for r in rows.values() if r.get("uploadInProgress")]
    assert mine["uploadInProgress"] == str(checkpoint) and mine["publishedHead"] is None
    code, out, err = status(str(done))  # another dataset: its own row, no failure
    assert code == 0 and published.dataset_id in out
    assert status("--strict")[0] == 65  # the damaged state, asked for

    out = publish_dataset(ds, make_target(arlocal, wallet, state_dir, inline_limit=1024))
    assert out.upload.summary["resumed"].endswith("from chunk 1")
    damaged.unlink()
    code, text, err = status("--json")
    assert code == 0 and err == ""
    assert not [r for r in json.loads(text)["targets"] if r.get("uploadInProgress")]


def test_non_descending_head_is_refused(arlocal, wallet, tmp_path) -> None:
    arlocal.mint(wallet.address, RICH)
    base = create_root_dataset(tmp_path / "a", blocks=2, data_bytes=4_000, seed=67).path
    fork = tmp_path / "b"
    shutil.copytree(base, fork)
    append_blocks(base, 1, data_bytes=1_000, seed=1)
    append_blocks(fork, 1, data_bytes=1_000, seed=2)
    publish_dataset(base, make_target(arlocal, wallet, tmp_path / "s1"))
    with pytest.raises(ConflictError):
        publish_dataset(fork, make_target(arlocal, wallet, tmp_path / "s2"))
    forced = publish_dataset(fork, make_target(arlocal, wallet, tmp_path / "s2"), force=True)
    assert forced.plan.forced


def test_cli_publish_status_and_wallet_from_env(arlocal, wallet, tmp_path, capsys) -> None:
    from odfweb3.cli.main import main
    from odfweb3_arweave.wallet import save_wallet

    arlocal.mint(wallet.address, RICH)
    wallet_path = tmp_path / "wallet.json"
    save_wallet(wallet, wallet_path)
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=4_000, seed=68).path
    env = {
        "HOME": str(tmp_path),
        "ODFWEB3_STATE_DIR": str(tmp_path / "state"),
        "ODFWEB3_ARWEAVE_GATEWAY": arlocal.url,
        "ODFWEB3_ARWEAVE_WALLET": str(wallet_path),
    }
    assert main(["publish", str(ds), "--to", "arweave", "--max-cost", "1AR", "--json"], env) == 0
    published = json.loads(capsys.readouterr().out)  # (--json: the price is in the result)
    # Every number is a number: the cost is an integer of winston (text mode adds the AR).
    assert isinstance(published["cost"], int) and published["cost"] > 0
    assert published["transaction"] and published["record"]["status"] == "pending"
    assert main(["status", str(ds), "--json"], env) == 0
    rows = json.loads(capsys.readouterr().out)["targets"]
    (row,) = [r for r in rows if r["target"] == f"arweave:{arlocal.url}"]
    assert [u["state"] for u in row["uploads"]] == ["pending"]
    arlocal.mine(1)
    assert main(["status", str(ds), "--json"], env) == 0
    rows = json.loads(capsys.readouterr().out)["targets"]
    (row,) = [r for r in rows if r["target"] == f"arweave:{arlocal.url}"]
    assert row["uploads"][0]["state"] == "confirmed" and row["uploads"][0]["height"] >= 1
    append_blocks(ds, 1, data_bytes=1_000, seed=3)
    assert main(["publish", str(ds), "--to", "arweave"], env) == 0  # human mode: price on stderr
    err = capsys.readouterr().err
    assert "price:" in err and "winston" in err and " AR)" in err
    # --batch queues two updates without posting; --flush posts both as one upload.
    assert main(["status", str(ds), "--json"], env) == 0
    rows = json.loads(capsys.readouterr().out)["targets"]
    (row,) = [r for r in rows if r["target"] == f"arweave:{arlocal.url}"]
    uploads_before = len(row["uploads"])
    for seed in (4, 5):
        append_blocks(ds, 1, data_bytes=500, seed=seed)
        assert main(["publish", str(ds), "--to", "arweave", "--batch", "-q"], env) == 0
    capsys.readouterr()
    assert main(["publish", "--flush", "--to", "arweave", "--json"], env) == 0
    flushed = json.loads(capsys.readouterr().out)["flushed"]
    assert len(flushed) == 1 and len(flushed[0]["heads"]) == 2
    assert main(["status", str(ds), "--json"], env) == 0
    rows = json.loads(capsys.readouterr().out)["targets"]
    (row,) = [r for r in rows if r["target"] == f"arweave:{arlocal.url}"]
    assert len(row["uploads"]) == uploads_before + 1  # one L1 transaction for both updates
    assert row["publishedHead"] == row["localHead"]
    # The last two uploads stored delta manifests; pull, verify and resolve walk
    # back to the full one and read every path.
    saved = StateStore(tmp_path / "state").load(row["datasetId"], f"arweave:{arlocal.url}")
    assert saved is not None and saved.extra["deltaUploads"] == 2
    ref = f"ar://{saved.record['recordId']}"
    assert main(["pull", ref, str(tmp_path / "copy")], env) == 0
    assert dataset_files(tmp_path / "copy") == dataset_files(ds)
    assert main(["verify", str(ds), "--against", ref, "--deep"], env) == 0
    assert "identical" in capsys.readouterr().out
    owner = ["--owner", wallet.address, "--json"]
    assert main(["resolve", row["datasetId"], *owner], env) == 0
    assert [r["head"] for r in json.loads(capsys.readouterr().out)["results"]] == [row["localHead"]]


def test_newest_of_many_pending_uploads_is_found_across_pages(arlocal, tmp_path) -> None:
    # More pending uploads than a GraphQL page holds must not hide the newest one.
    wallet = generate_wallet()
    arlocal.mint(wallet.address, RICH)
    ds = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=1_000, seed=71).path
    state_dir = tmp_path / "state"
    records = []
    for i in range(4):  # never mined: every record stays pending
        if i:
            append_blocks(ds, 1, data_bytes=300, seed=i)
        records.append(publish_dataset(ds, make_target(arlocal, wallet, state_dir)))
    did = records[-1].plan.dataset_id
    latest = find_latest_upload(ArweaveGateway(arlocal.url), wallet.address, did, page_size=2)
    assert latest is not None
    assert latest.id == records[-1].state.record["recordId"]
    assert latest.facts.head == multihash_to_str(records[-1].plan.head)
