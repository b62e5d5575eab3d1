"""Two publishers of one dataset, one target, at the same time: one wins, one gets a conflict.

Both are the real CLI in subprocesses sharing the dataset's key, started together, each with
a different head (the published base plus a different block). Exactly one exits 0; the other
exits 75 (ConflictError) with a one-line message. Afterwards the target holds the winner's
head, complete and verified; the loser made nothing visible.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from odfweb3.adapters.arweave.gateway import ArweaveGateway
from odfweb3.adapters.arweave.replica import open_ar_replica
from odfweb3.adapters.arweave.resolve import find_latest_upload
from odfweb3.adapters.arweave.wallet import generate_wallet, save_wallet
from odfweb3.adapters.ipfs.car_check import check_car_dir
from odfweb3.adapters.ipfs.car_target import LOCK_NAME, head_of_summary
from odfweb3.adapters.ipfs.kubo import KuboClient
from odfweb3.adapters.ipfs.libp2p_keys import IpnsName, public_key_bytes
from odfweb3.adapters.ipfs.node_target import read_node_record
from odfweb3.adapters.ipfs.unixfs import import_tree
from odfweb3.crypto.keystore import Keystore
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.execute import load_verified_chain
from odfweb3.pull import pull_dataset

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
    tmp: Path, target: list[str], extra: dict[str, str], round_: int, pick=None, size=1_000_000
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
    if codes == [0, 0] and pick is not None:
        # Arweave only: both posted past the pre-post check at the same moment (a fork);
        # readers pick one deterministically (see docs/reliability.md).
        chosen = pick()
        winner = next(w for w in heads if heads[w] == chosen)
    else:
        assert codes == [0, 75], results
        winner = next(w for w, (code, _) in results.items() if code == 0)
        message = results["b" if winner == "a" else "a"][1].strip()
        assert message.startswith("odfweb3: error:") and "\n" not in message, message
    loser = "b" if winner == "a" else "a"
    # The next round builds on the winner.
    shutil.rmtree(base)
    shutil.copytree(tmp / f"{winner}-{round_}", base)
    return {"head": heads[winner], "files": files[winner], "loser": heads[loser]}


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


@pytest.mark.parametrize("rounds", [ROUNDS])
def test_two_arweave_publishers(tmp_path: Path, arlocal, rounds: int) -> None:
    wallet = generate_wallet()
    arlocal.mint(wallet.address, 10**15)
    save_wallet(wallet, tmp_path / "wallet.json")
    extra = {
        "ODFWEB3_ARWEAVE_GATEWAY": arlocal.url,
        "ODFWEB3_ARWEAVE_WALLET": str(tmp_path / "wallet.json"),
    }
    gw = ArweaveGateway(arlocal.url)

    def pick() -> str:
        arlocal.mine()
        did = str(load_verified_chain(DatasetReader.open(tmp_path / "base"))[1])
        latest = find_latest_upload(gw, wallet.address, did)
        assert latest is not None
        return latest.facts.head

    for round_ in range(rounds):
        # inline bundles (< 256 KiB): arlocal cannot mine some chunked ones (docs/arweave.md)
        won = race(tmp_path, ["arweave"], extra, round_, pick, size=40_000)
        arlocal.mine()
        did = str(load_verified_chain(DatasetReader.open(tmp_path / "base"))[1])
        latest = find_latest_upload(gw, wallet.address, did)
        assert latest is not None and latest.facts.head == won["head"]
        dest = tmp_path / f"pulled-{round_}"
        pull_dataset(open_ar_replica(gw, f"ar://{latest.id}"), dest)
        assert files_of(dest) == won["files"]
