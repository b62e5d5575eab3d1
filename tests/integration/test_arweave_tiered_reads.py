"""Reads in a handful of requests: tiered upload records (docs/arweave.md, section 9).

Real arlocal. A publisher's own uploads (``publish_dataset`` through ``GatewayTarget``,
state saved and read back between publishes) carry the binary counter's tiers, and ``pull``
of the latest reads the whole dataset, every object verified. A chain of 300 one-block
updates (records made as the publisher makes them, ``tests/support/ar_chains.py``) is read
in a bounded number of gateway requests, counted through a loopback proxy: before tiers the
walk asked two per update. Hostile answers through the proxy (``tests/support/lying_proxy.py``):
a skip-chain record by another owner, a record whose body was altered, a GraphQL that pages
without end or answers more than a page: each refused with one line.

The same walk serves the two readers that need every path's file revision, not a manifest:
an ArFS private drive (pulled with the wallet and the drive password) and a publisher with no
saved state (a second machine), which rebuilds its state, the records' counter included,
from the 300-update chain in a bounded number of requests and publishes on from it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3.errors import ResolutionError, SignatureError
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import hash_bytes
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import StateStore
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.publish.gateway_target import GatewayTarget
from odfweb3_arweave.publish.state import ARWEAVE_CODEC
from odfweb3_arweave.read.lookup import fetch_record, find_latest_upload, walk_to_full_manifest
from odfweb3_arweave.wallet import Wallet, generate_wallet, save_wallet
from tests.support.ar_chains import Chain, build_chain, post_chain
from tests.support.lying_proxy import LyingProxy, lying_proxy

RICH = 10**15
UPDATES = 300
# Search (1 page), the latest record (1), the skip chain's lookup (1), one GET per record
# on it: 300 = 256 + 32 + 8 + 4 is 4 records and the full upload: 8. Allow a little more.
MAX_REQUESTS = 12


@pytest.fixture(scope="module")
def chain_wallet() -> Wallet:
    return generate_wallet()


@pytest.fixture(scope="module")
def chain(arlocal, chain_wallet) -> Chain:
    built = build_chain(
        UPDATES, tiered=True, seed=f"tiered-reads-{time.time_ns()}", wallet=chain_wallet
    )
    post_chain(ArweaveGateway(arlocal.url), built, arlocal)
    return built


def run(capsys, root: Path, gateway: str, *argv: str) -> tuple[int, str, str]:
    cfg = root / f"odfweb3-{time.monotonic_ns()}.yaml"
    cfg.write_text(
        json.dumps(
            {
                "arweave": {"gateway": gateway},
                "network": {"retries": 0, "deadline_s": 120},
                "state_dir": str(root / "reader-state"),
                "keystore": str(root / "reader-keys"),
            }
        )
    )
    code = main([*argv, "--config", str(cfg)], env={"HOME": str(root)})
    out, err = capsys.readouterr()
    return code, out, err


def read_chain(url: str, chain: Chain) -> list:
    gateway = ArweaveGateway(url)
    latest = find_latest_upload(gateway, chain.owner, chain.dataset_id)
    assert latest is not None and latest.id == chain.latest
    return walk_to_full_manifest(gateway, latest, fetch_record(gateway, latest))


def test_the_publishers_uploads_are_tiered_and_pull_reads_them(capsys, arlocal, tmp_path) -> None:
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=3_000, seed=2811).path
    wallet = generate_wallet()
    arlocal.mint(wallet.address, RICH)
    states = StateStore(tmp_path / "state")
    out = None
    for n in range(8):  # a full upload, then 7 deltas: spans 1, 2, 1, 4, 1, 2, 1
        if n:
            append_blocks(ds, 1, data_bytes=800, seed=2820 + n)
        # a new target each time: the counter comes from the saved state, not memory
        out = publish_dataset(ds, GatewayTarget(ArweaveGateway(arlocal.url), wallet, states))
    assert out is not None and out.state.extra["deltaUploads"] == 7
    tiers = out.state.extra["tiers"]
    assert [t[3] for t in tiers] == [1, 2, 4, 0]  # 7 = 1 + 2 + 4, then the full upload
    arlocal.mine()
    gateway = ArweaveGateway(arlocal.url)
    latest = find_latest_upload(gateway, wallet.address, out.state.dataset_id)
    assert latest is not None
    records = walk_to_full_manifest(gateway, latest, fetch_record(gateway, latest))
    assert [r.delta_uploads for r in records] == [None, 4, 6, 7]
    # upload 4 lists what uploads 1-3 added (a block and its objects each), not itself
    assert len(records[1].earlier) >= 3 and not set(records[1].earlier) & set(records[1].added)
    dest = tmp_path / "dest"
    code, _, err = run(capsys, tmp_path, arlocal.url, "pull", f"ar://{latest.id}", str(dest))
    assert code == 0, err
    assert DatasetReader.open(dest).head() == DatasetReader.open(ds).head()
    code, _, err = run(
        capsys, tmp_path, arlocal.url, "verify", str(dest), "--against", f"ar://{latest.id}"
    )
    assert code == 0, err


def test_a_long_chain_is_read_in_a_bounded_number_of_requests(arlocal, chain) -> None:
    with lying_proxy(arlocal.url) as proxy:
        records = read_chain(proxy.url, chain)
        asked = len(proxy.requests)
    assert asked <= MAX_REQUESTS, proxy.requests
    assert [r.delta_uploads for r in records] == [None, 256, 288, 296, 300]
    files = {p for r in records[1:] for p in (*r.earlier, *r.added)} - {"refs/head"}
    assert len(files) == 3 * UPDATES  # every update's objects, from 4 delta records


def test_a_skip_chain_record_by_another_owner_is_refused(arlocal, chain) -> None:
    # Another wallet's validly signed record, served under the id our latest record jumps to.
    other = build_chain(3, tiered=True, seed=f"tiered-other-{time.time_ns()}")
    post_chain(ArweaveGateway(arlocal.url), other, arlocal)
    latest = read_chain(arlocal.url, chain)[-1]
    ours = next(link.record_id for link in latest.skip_chain if link.deltas == 256)
    with lying_proxy(arlocal.url) as proxy:
        proxy.swaps = [(ours, other.latest)]
        with pytest.raises(ResolutionError) as err:
            read_chain(proxy.url, chain)
    line = str(err.value)
    assert "\n" not in line and ours in line and f"owned by {other.owner}" in line, line


def test_an_altered_record_body_fails_its_signature(arlocal, chain) -> None:
    honest = read_chain(arlocal.url, chain)
    target = next(link.record_id for link in honest[-1].skip_chain if link.deltas == 288)

    def alter(method: str, path: str, data: bytes) -> bytes:
        if method == "GET" and path.strip("/") == target:
            return data.replace(b'"unixTime"', b'"unixTime" ', 1)
        return data

    with lying_proxy(arlocal.url) as proxy:
        proxy.edit = alter
        with pytest.raises(SignatureError) as err:
            read_chain(proxy.url, chain)
    assert target in str(err.value) and "\n" not in str(err.value)


def test_endless_or_oversized_graphql_pages_are_refused(capsys, arlocal, chain, tmp_path) -> None:
    first: list = []

    def endless(method: str, path: str, data: bytes) -> bytes:
        # Every page of the search by dataset (not the lookups by id, which have no
        # pageInfo): pending records, and more to come; past the real ones, the first again.
        if "graphql" not in path:
            return data
        doc = json.loads(data)
        conn = doc["data"]["transactions"]
        if "pageInfo" in conn:
            conn["pageInfo"]["hasNextPage"] = True
            edges = conn["edges"] or first
            first[:] = first or edges
            conn["edges"] = [dict(e, node=dict(e["node"], block=None)) for e in edges]
        return json.dumps(doc).encode()

    with lying_proxy(arlocal.url) as proxy:
        proxy.edit = endless
        with pytest.raises(ResolutionError, match="paging without end"):
            read_chain(proxy.url, chain)
        asked = proxy.count("graphql")
        code, out, err = run(
            capsys, tmp_path, proxy.url, "resolve", chain.dataset_id, "--owner", chain.owner
        )
    assert asked <= 25  # the page bound, not the gateway, ended it
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert "Traceback" not in err and any("paging without end" in ln for ln in lines), err
    assert code != 0 or "no upload" in out + err

    def oversized(method: str, path: str, data: bytes) -> bytes:
        if "graphql" not in path:
            return data
        doc = json.loads(data)
        conn = doc["data"]["transactions"]
        if "pageInfo" in conn and conn["edges"]:
            conn["edges"] = conn["edges"][:1] * 101
        return json.dumps(doc).encode()

    with lying_proxy(arlocal.url) as proxy:
        proxy.edit = oversized
        with pytest.raises(ResolutionError, match="more than the 100 items a page"):
            read_chain(proxy.url, chain)


def endless_pages(first: list) -> Callable[[str, str, bytes], bytes]:
    """Every page of the search by dataset (not the lookups by id, which have no pageInfo):
    pending records, and more to come; past the real ones, the first again."""

    def edit(method: str, path: str, data: bytes) -> bytes:
        if "graphql" not in path:
            return data
        doc = json.loads(data)
        conn = doc["data"]["transactions"]
        if "pageInfo" in conn:
            conn["pageInfo"]["hasNextPage"] = True
            edges = conn["edges"] or first
            first[:] = first or edges
            conn["edges"] = [dict(e, node=dict(e["node"], block=None)) for e in edges]
        return json.dumps(doc).encode()

    return edit


def oversized_pages(method: str, path: str, data: bytes) -> bytes:
    if "graphql" not in path:
        return data
    doc = json.loads(data)
    conn = doc["data"]["transactions"]
    if "pageInfo" in conn and conn["edges"]:
        conn["edges"] = conn["edges"][:1] * 101
    return json.dumps(doc).encode()


def altered_body(record_id: str) -> Callable[[str, str, bytes], bytes]:
    def edit(method: str, path: str, data: bytes) -> bytes:
        if method == "GET" and path.strip("/") == record_id:
            return data.replace(b'"unixTime"', b'"unixTime" ', 1)
        return data

    return edit


def test_a_second_machine_rebuilds_its_state_from_the_tiers(
    arlocal, chain, chain_wallet, tmp_path
) -> None:
    # No saved state: the publisher reads the 300 updates back as a reader does (the
    # latest record, its skip chain in one lookup, one GET per record) plus one lookup per
    # 100 data items (which the gateway holds); before tiers, two requests per update.
    with lying_proxy(arlocal.url) as proxy:
        target = GatewayTarget(ArweaveGateway(proxy.url), chain_wallet, StateStore(tmp_path))
        view = target.inspect(chain.dataset_id, hash_bytes(b"a head the gateway never saw"))
        asked = len(proxy.requests)
    paths = 3 * (UPDATES + 1) + 1  # the records' objects and refs/head
    assert asked <= MAX_REQUESTS + paths // 100 + 1, proxy.requests
    assert view.state is not None and any("rebuilt" in n for n in view.notes)
    extra = ARWEAVE_CODEC.serialize(view.state).extra  # as the state file would hold it
    assert extra["rebuilt"] is True and extra["deltaUploads"] == UPDATES
    assert extra["fullManifestId"] == chain.full_manifest
    # The publisher's counter after upload 300 = 256 + 32 + 8 + 4: the next record jumps on.
    assert [(t[2], t[3]) for t in extra["tiers"]] == [
        (300, 4),
        (296, 8),
        (288, 32),
        (256, 256),
        (0, 0),
    ]
    assert len(extra["uploads"]) == 5  # the records the walk verified
    assert sum(len(t[4]) for t in extra["tiers"]) == 3 * UPDATES


@pytest.mark.parametrize("lie", ["another owner", "altered body", "endless", "oversized"])
def test_a_rebuild_refuses_what_readers_refuse(arlocal, chain, chain_wallet, tmp_path, lie) -> None:
    honest = read_chain(arlocal.url, chain)
    jumped = next(link.record_id for link in honest[-1].skip_chain if link.deltas == 288)
    expect: type[Exception] = ResolutionError
    with lying_proxy(arlocal.url) as proxy:
        if lie == "another owner":
            other = build_chain(2, tiered=True, seed=f"tiered-rebuild-other-{time.time_ns()}")
            post_chain(ArweaveGateway(arlocal.url), other, arlocal)
            proxy.swaps = [(jumped, other.latest)]
            words = f"owned by {other.owner}"
        elif lie == "altered body":
            proxy.edit = altered_body(jumped)
            expect, words = SignatureError, jumped
        elif lie == "endless":
            proxy.edit = endless_pages([])
            words = "paging without end"
        else:
            proxy.edit = oversized_pages
            words = "more than the 100 items a page"
        target = GatewayTarget(ArweaveGateway(proxy.url), chain_wallet, StateStore(tmp_path))
        with pytest.raises(expect) as err:
            target.inspect(chain.dataset_id, hash_bytes(b"local head"))
    line = str(err.value)
    assert "\n" not in line and words in line, line
    assert not list(tmp_path.rglob("*.json"))  # nothing saved


def test_a_second_machine_publishes_on_the_rebuilt_counter(capsys, arlocal, tmp_path) -> None:
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=3_000, seed=2851).path
    wallet = generate_wallet()
    arlocal.mint(wallet.address, RICH)
    first = StateStore(tmp_path / "first-machine")
    for n in range(4):  # a full upload, then 3 deltas: the counter holds spans 1, 2
        if n:
            append_blocks(ds, 1, data_bytes=800, seed=2852 + n)
        publish_dataset(ds, GatewayTarget(ArweaveGateway(arlocal.url), wallet, first))
    arlocal.mine()
    append_blocks(ds, 1, data_bytes=800, seed=2859)
    second = StateStore(tmp_path / "second-machine")
    out = publish_dataset(ds, GatewayTarget(ArweaveGateway(arlocal.url), wallet, second))
    # Upload 4 spans 1-4 from the rebuilt counter (it would span itself only without it),
    # and sends only the new block's objects: the rebuilt state knew the rest.
    assert out.state.extra["deltaUploads"] == 4
    assert [t[3] for t in out.state.extra["tiers"]] == [4, 0]
    arlocal.mine()
    gateway = ArweaveGateway(arlocal.url)
    latest = find_latest_upload(gateway, wallet.address, out.state.dataset_id)
    assert latest is not None
    records = walk_to_full_manifest(gateway, latest, fetch_record(gateway, latest))
    assert [(r.delta_uploads, r.span_uploads) for r in records] == [(None, None), (4, 4)]
    dest = tmp_path / "dest"
    code, _, err = run(capsys, tmp_path, arlocal.url, "pull", f"ar://{latest.id}", str(dest))
    assert code == 0, err
    assert DatasetReader.open(dest).head() == DatasetReader.open(ds).head()


def _private_publish(ds: Path, env: dict[str, str], creds: list[str], arlocal, capsys) -> str:
    code = main(
        ["--json", "publish", str(ds), "--to", "arweave", "--arfs-private", *creds], env=env
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    arlocal.mine(1)
    return str(json.loads(out)["record"]["recordId"])


def test_a_private_drive_is_read_through_its_tiers(capsys, arlocal, chain, tmp_path) -> None:
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=6_000, seed=2871).path
    wallet = generate_wallet()
    arlocal.mint(wallet.address, RICH)
    save_wallet(wallet, tmp_path / "wallet.json")
    password = tmp_path / "drive-password.txt"
    password.write_text(f"TEST-ONLY tiered private drive {time.time_ns()}\n", "utf-8")
    creds = ["--wallet", str(tmp_path / "wallet.json"), "--drive-password-file", str(password)]
    env = {
        "ODFWEB3_ARWEAVE_GATEWAY": arlocal.url,
        "ODFWEB3_STATE_DIR": str(tmp_path / "state"),
        "ODFWEB3_KEYSTORE": str(tmp_path / "keys"),
        "HOME": str(tmp_path),
    }
    ids = [_private_publish(ds, env, creds, arlocal, capsys)]
    for n in range(3):
        append_blocks(ds, 1, data_bytes=900, seed=2872 + n)
        ids.append(_private_publish(ds, env, creds, arlocal, capsys))
    latest, spans_two, skipped = ids[3], ids[2], ids[1]

    def pull(proxy: LyingProxy, dest: Path) -> tuple[int, str]:
        code = main(
            ["pull", f"ar://{latest}", str(dest), *creds],
            env=dict(env, ODFWEB3_ARWEAVE_GATEWAY=proxy.url),
        )
        return code, capsys.readouterr().err

    with lying_proxy(arlocal.url) as proxy:
        code, err = pull(proxy, tmp_path / "pulled")
        asked = list(proxy.requests)
    assert code == 0, err
    assert DatasetReader.open(tmp_path / "pulled").head() == DatasetReader.open(ds).head()
    # Delta 3 jumps to delta 2, which lists what delta 1 added: record 1 is never read.
    assert any(spans_two in r for r in asked) and not any(skipped in r for r in asked)

    other = chain.latest  # another owner's validly signed record
    for lie in ("another owner", "altered body"):
        with lying_proxy(arlocal.url) as proxy:
            if lie == "another owner":
                proxy.swaps = [(spans_two, other)]
            else:
                proxy.edit = altered_body(spans_two)
            dest = tmp_path / f"refused-{lie.replace(' ', '-')}"
            code, err = pull(proxy, dest)
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert code != 0 and len(lines) == 1 and spans_two in lines[0], (lie, err)
        assert "Traceback" not in err and not dest.exists()
