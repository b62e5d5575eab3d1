"""Two publishers of one dataset, one target, at the same time: one wins, one gets a conflict.

Both are the real CLI in subprocesses sharing the dataset's key, started together, each with
a different head (the published base plus a different block). Exactly one exits 0; the other
exits 75 (ConflictError) with a one-line message. Afterwards the target holds the winner's
head, complete and verified; the loser made nothing visible.

On Arweave a post cannot be refused: both may post, and the loser is the one the readers'
rule (resolve.choose_latest) does not pick; its publish must still exit 75 and record
nothing (docs/reliability.md).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from odfweb3.crypto.keystore import Keystore
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.execute import load_verified_chain
from odfweb3.publish.state import StateStore
from odfweb3.read.pull import pull_dataset
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.read.lookup import collect_uploads, find_latest_upload
from odfweb3_arweave.read.replica import open_ar_replica
from odfweb3_arweave.wallet import generate_wallet, save_wallet
from odfweb3_ipfs.client.kubo import KuboClient
from odfweb3_ipfs.formats.libp2p_keys import IpnsName, public_key_bytes
from odfweb3_ipfs.publish.car_target import LOCK_NAME, head_of_summary
from odfweb3_ipfs.publish.node_target import read_node_record
from odfweb3_ipfs.publish.unixfs_import import import_tree
from odfweb3_ipfs.read.car_replica import check_car_dir

REPO = Path(__file__).resolve().parents[2]
ROUNDS = 3


def files_of(ds: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(ds)): p.read_bytes()
        for p in sorted(ds.rglob("*"))
        if p.is_file() and p.relative_to(ds).parts[0] in ("blocks", "refs", "data", "checkpoints")
    }


def env_for(tmp: Path, name: str, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ODFWEB3_")}
    env.update(
        HOME=str(tmp / "home"),
        ODFWEB3_KEYSTORE=str(tmp / "keys"),  # both hold the dataset's key
        ODFWEB3_STATE_DIR=str(tmp / f"state-{name}"),  # as on two machines
        **extra,
    )
    return env


def race(
    tmp: Path, target: list[str], extra: dict[str, str], round_: int, size=1_000_000
) -> dict[str, object]:
    """Publish the base, then two diverging heads at once; return what happened."""
    base = tmp / "base"
    if not base.exists():
        create_root_dataset(base, blocks=3, data_bytes=size, seed=71)
        first = subprocess.run(
            [sys.executable, "-m", "odfweb3.cli.main", "publish", str(base), "--to", *target],
            env=env_for(tmp, "a", extra),
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        assert first.returncode == 0, first.stderr
    heads: dict[str, str] = {}
    files: dict[str, dict[str, bytes]] = {}
    procs = {}
    for who, seed in (("a", 1), ("b", 2)):
        ds = tmp / f"{who}-{round_}"
        shutil.copytree(base, ds)
        append_blocks(ds, 1, data_bytes=size // 2, seed=round_ * 10 + seed)
        heads[who] = multihash_to_str(DatasetReader.open(ds).head())
        files[who] = files_of(ds)
    for who in ("a", "b"):
        cmd = [sys.executable, "-m", "odfweb3.cli.main", "publish", str(tmp / f"{who}-{round_}")]
        procs[who] = subprocess.Popen(
            [*cmd, "--to", *target],
            env=env_for(tmp, who, extra),
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    results = {who: (p.wait(300), p.communicate()[1]) for who, p in procs.items()}
    codes = sorted(code for code, _ in results.values())
    assert codes == [0, 75], results
    winner = next(w for w, (code, _) in results.items() if code == 0)
    loser = "b" if winner == "a" else "a"
    # One error line (progress lines such as Arweave's price may precede it).
    errors = [ln for ln in results[loser][1].splitlines() if ln.startswith("odfweb3: error:")]
    assert len(errors) == 1, results[loser][1]
    message = errors[0]
    # The next round builds on the winner.
    shutil.rmtree(base)
    shutil.copytree(tmp / f"{winner}-{round_}", base)
    return {
        "head": heads[winner],
        "files": files[winner],
        "loser": heads[loser],
        "loser_name": loser,
        "loser_dir": tmp / f"{loser}-{round_}",
        "message": message,
    }


def test_two_car_publishers(tmp_path: Path) -> None:
    out = tmp_path / "out"
    for round_ in range(ROUNDS):
        won = race(tmp_path, [f"car:{out}"], {}, round_)
        head = head_of_summary(out / "publish.json")
        assert head is not None and multihash_to_str(head) == won["head"]
        assert not (out / LOCK_NAME).exists()
        # Every CAR and the record verify; the record names the winner's root.
        check = check_car_dir(out)
        assert multihash_to_str(check.head) == won["head"]
        assert check.root == import_tree(tmp_path / "base").cid


def test_two_ipfs_publishers(tmp_path: Path, ipfs_node) -> None:
    client = KuboClient(ipfs_node.api_url)
    extra = {"ODFWEB3_IPFS_API": ipfs_node.api_url, "ODFWEB3_IPFS_GATEWAY": ipfs_node.gateway_url}
    for round_ in range(ROUNDS):
        won = race(tmp_path, ["ipfs"], extra, round_)
        did = str(load_verified_chain(DatasetReader.open(tmp_path / "base"))[1])
        key = Keystore(tmp_path / "keys").load(did)
        seen = read_node_record(client, IpnsName.from_public_key(public_key_bytes(key)))
        assert seen is not None and seen.record.odf is not None and seen.root is not None
        assert seen.record.odf.head == won["head"]
        assert seen.root.raw == import_tree(tmp_path / "base").cid.raw
        assert client.has_pin(seen.root)
        for path, data in won["files"].items():
            assert client.cat(f"/ipfs/{seen.root}/{path}", max_size=len(data) + 1) == data


@pytest.fixture
def miner(arlocal) -> Iterator[None]:
    """Mine arlocal every half second while the test runs, as a real network would."""
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(0.5):
            arlocal.mine()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join()


@pytest.mark.parametrize("rounds", [ROUNDS])
def test_two_arweave_publishers(tmp_path: Path, arlocal, miner, rounds: int) -> None:
    """Same wallet, two machines (two state dirs): exactly one 0 and one 75 per round."""
    wallet = generate_wallet()
    arlocal.mint(wallet.address, 10**15)
    save_wallet(wallet, tmp_path / "wallet.json")
    # The post-check waits (bounded) for the upload to be mined, then applies the
    # readers' rule; arlocal is mined by the `miner` fixture.
    xdg = tmp_path / "xdg"
    (xdg / "odfweb3").mkdir(parents=True)
    (xdg / "odfweb3" / "odfweb3.yaml").write_text("arweave:\n  confirm_timeout_s: 120\n")
    extra = {
        "ODFWEB3_ARWEAVE_GATEWAY": arlocal.url,
        "ODFWEB3_ARWEAVE_WALLET": str(tmp_path / "wallet.json"),
        "XDG_CONFIG_HOME": str(xdg),
    }
    gw = ArweaveGateway(arlocal.url)
    target_name = f"arweave:{arlocal.url}"

    for round_ in range(rounds):
        # inline bundles (< 256 KiB): arlocal cannot mine some chunked ones (docs/arweave.md)
        won = race(tmp_path, ["arweave"], extra, round_, size=40_000)
        did = str(load_verified_chain(DatasetReader.open(tmp_path / "base"))[1])
        latest = find_latest_upload(gw, wallet.address, did)
        assert latest is not None and latest.facts.head == won["head"]
        # The loser either was refused before posting or posted and lost the post-check:
        # either way the readers do not pick its upload ...
        lost = [u for u in collect_uploads(gw, wallet.address, did) if u.facts.head == won["loser"]]
        assert len(lost) <= 1 and latest not in lost
        if lost:
            assert lost[0].id in str(won["message"]) and latest.id in str(won["message"])
        # ... and its publish state does not record it as the latest.
        state = StateStore(tmp_path / f"state-{won['loser_name']}").load(did, target_name)
        assert state is None or multihash_to_str(state.head or b"") != won["loser"]
        dest = tmp_path / f"pulled-{round_}"
        pull_dataset(open_ar_replica(gw, f"ar://{latest.id}"), dest)
        assert files_of(dest) == won["files"]
    # A re-run of the last loser rebuilds its state from the network, finds the winner's
    # head does not descend from its own and refuses (75) without posting.
    cmd = [sys.executable, "-m", "odfweb3.cli.main", "publish", str(won["loser_dir"])]
    again = subprocess.run(
        [*cmd, "--to", "arweave"],
        env=env_for(tmp_path, str(won["loser_name"]), extra),
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert again.returncode == 75, again.stderr
    assert find_latest_upload(gw, wallet.address, did) == latest


def test_a_visible_arweave_race_is_settled_with_the_default_config(tmp_path: Path, arlocal) -> None:
    """confirm_timeout 0 (the default) and a rival in sight: the post-check still waits.

    Deterministic interleaving: b passes its pre-post check, then (from its price callback,
    just before it posts) a publishes completely; a looks once, sees no rival and returns.
    b posts, sees a's competing upload and waits (its ``sleep`` mines arlocal); a was
    stamped earlier (injected clocks), so by the readers' rule a wins and b gets
    ConflictError.
    """
    from datetime import UTC, datetime

    from odfweb3.errors import ConflictError
    from odfweb3.publish.execute import publish_dataset
    from odfweb3_arweave.publish.gateway_target import GatewayTarget

    wallet = generate_wallet()
    arlocal.mint(wallet.address, 10**15)
    base = tmp_path / "base"
    create_root_dataset(base, blocks=2, data_bytes=20_000, seed=81)
    dirs = {}
    for who, seed in (("a", 1), ("b", 2)):
        dirs[who] = tmp_path / who
        shutil.copytree(base, dirs[who])
        append_blocks(dirs[who], 1, data_bytes=10_000, seed=seed)
    gw = ArweaveGateway(arlocal.url)
    mines: list[int] = []

    def mine_and_count(_seconds: float) -> None:
        mines.append(1)
        arlocal.mine()

    def target(who: str, second: int, **kw) -> GatewayTarget:
        return GatewayTarget(
            gw,
            wallet,
            StateStore(tmp_path / f"state-{who}"),
            clock=lambda: datetime.fromtimestamp(1_800_000_000 + second, UTC),
            sleep=mine_and_count,
            poll_interval=0.0,
            race_timeout=60.0,
            **kw,
        )

    a_done = []
    a = target("a", 0)

    def a_publishes_now(_winston: int, _size: int) -> None:
        if not a_done:
            a_done.append(publish_dataset(dirs["a"], a))

    b = target("b", 10, on_price=a_publishes_now)
    with pytest.raises(ConflictError) as lost:
        publish_dataset(dirs["b"], b)
    assert a_done and a_done[0].state.extra["raceCheck"] == "unsettled"  # a saw no rival
    assert mines, "b waited for the race to settle although confirm_timeout is 0"
    did = str(load_verified_chain(DatasetReader.open(base))[1])
    latest = find_latest_upload(gw, wallet.address, did)
    a_head = multihash_to_str(DatasetReader.open(dirs["a"]).head())
    assert latest is not None and latest.facts.head == a_head
    assert latest.id in str(lost.value)
    assert StateStore(tmp_path / "state-b").load(did, f"arweave:{arlocal.url}") is None
