"""Encryption is the dataset's, on the live targets: the suite's Kubo node and arlocal.

The workflow of tests/unit/cli/test_sticky_encrypt.py (encrypted publish, the flag
forgotten, ``--no-encrypt`` unconfirmed, a second machine, ``--no-encrypt --yes``), with
what the node and the gateway stored scanned for the plaintext of every object: Kubo's
blockstore files (every block it holds, raw) and arlocal's database directory. The last,
confirmed plaintext publish shows the scan finds plaintext where there is some.
"""

from __future__ import annotations

import base64
import json
import secrets
import shutil
from pathlib import Path

import httpx

from odfweb3.crypto.keystore import Keystore
from odfweb3.crypto.segments import MAGIC
from odfweb3_arweave.wallet import generate_wallet, save_wallet
from tests.support.sticky import append_marked, home_env, leaks, make_marked_dataset, run

RICH = 10**15


def fresh_seed() -> int:
    """A seed no other test uses: the session's Kubo node and arlocal are shared, and a fixed
    seed gives a fixed dataset key and first blocks, so another test's plaintext publish of
    the same seed's dataset (or its IPNS record) would be found by this test's scans."""
    return secrets.randbelow(1 << 31)


def _kubo_blocks(ipfs_node, tmp_path: Path) -> Path:
    """Every block the node holds, as files: its flatfs blockstore (or, for a node we did
    not start, each block of ``refs/local`` fetched into a directory)."""
    if ipfs_node.repo_path is not None and (ipfs_node.repo_path / "blocks").is_dir():
        return Path(ipfs_node.repo_path / "blocks")
    out = tmp_path / "node-blocks"
    out.mkdir(exist_ok=True)
    refs = ipfs_node.rpc("refs/local").text.split()
    for line in refs:
        cid = json.loads(line)["Ref"] if line.startswith("{") else line
        (out / cid).write_bytes(ipfs_node.rpc("block/get", cid).content)
    return out


def _served_head(ipfs_node, root: str) -> bytes:
    return ipfs_node.rpc("cat", f"/ipfs/{root}/refs/head").content


def test_ipfs_node_encrypted_stays_encrypted(ipfs_node, tmp_path, monkeypatch, capsys):
    ds = tmp_path / "sec"
    built = make_marked_dataset(ds, monkeypatch, seed=fresh_seed())
    did = str(built.keypair.dataset_id)
    env = home_env(tmp_path / "laptop", ODFWEB3_IPFS_API=ipfs_node.api_url)

    code, out, err = run(capsys, env, "--json", "publish", str(ds), "--to", "ipfs", "--encrypt")
    assert code == 0, err
    assert _served_head(ipfs_node, json.loads(out)["locator"]).startswith(MAGIC)

    # the flag forgotten: encrypted all the same
    append_marked(ds, monkeypatch, seed=82)
    code, out, err = run(capsys, env, "--json", "publish", str(ds), "--to", "ipfs")
    assert code == 0, err
    root = json.loads(out)["locator"]
    assert _served_head(ipfs_node, root).startswith(MAGIC)
    assert leaks(ds, _kubo_blocks(ipfs_node, tmp_path)) == []

    # --no-encrypt, no --yes, no terminal: refused, nothing sent
    code, _, err = run(capsys, env, "publish", str(ds), "--to", "ipfs", "--no-encrypt")
    assert code == 64 and err.count("\n") == 1 and "--yes" in err

    # a second machine holding the name's key (copied, as a key import would) but no
    # record of the encryption and no content keys: the node's record names a key
    # envelope, so the plain publish is refused
    desktop = tmp_path / "desktop"
    other = home_env(desktop, ODFWEB3_IPFS_API=ipfs_node.api_url)
    src = Keystore(tmp_path / "laptop" / "keys").path_for(did)
    dst = Keystore(desktop / "keys").path_for(did)
    dst.parent.mkdir(parents=True, mode=0o700)
    shutil.copy2(src, dst)
    append_marked(ds, monkeypatch, seed=83)
    code, _, err = run(capsys, other, "publish", str(ds), "--to", "ipfs")
    assert code == 64, err
    assert err.count("\n") == 1 and f"holds ciphertext of {did}" in err
    assert leaks(ds, _kubo_blocks(ipfs_node, tmp_path)) == []

    # --no-encrypt --yes: plaintext, confirmed; the same scan finds it now
    code, out, err = run(
        capsys, env, "--json", "publish", str(ds), "--to", "ipfs", "--no-encrypt", "--yes"
    )
    assert code == 0, err
    root = json.loads(out)["locator"]
    assert not _served_head(ipfs_node, root).startswith(MAGIC)
    found = leaks(ds, _kubo_blocks(ipfs_node, tmp_path))
    assert any(f.endswith(": marker") for f in found) and any(": data/" in f for f in found)


def _arlocal_files(arlocal, tmp_path: Path) -> Path:
    """What arlocal stored, readable: its working directory (the sqlite database) and
    each ``data-<id>`` file it keeps per transaction and data item, whose text is the data
    in base64url (arlocal bin/db/data.js), decoded."""
    assert arlocal.log_path is not None
    out = tmp_path / "arlocal-stored"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    # numbered by a counter: listing `out` for each file was quadratic in what every other
    # test had stored on the session's arlocal (252 s in a full run)
    n = 0
    for p in sorted(Path(arlocal.log_path).parent.rglob("*")):
        if not p.is_file():
            continue
        raw = p.read_bytes()
        (out / f"{n}-{p.name}").write_bytes(raw)
        n += 1
        if p.name.startswith("data-"):
            text = raw.strip()
            try:
                decoded = base64.urlsafe_b64decode(text + b"=" * (-len(text) % 4))
            except ValueError:
                continue
            (out / f"{n}-{p.name}.bin").write_bytes(decoded)
            n += 1
    return out


def test_arweave_encrypted_stays_encrypted(arlocal, tmp_path, monkeypatch, capsys):
    wallet = generate_wallet()
    arlocal.mint(wallet.address, RICH)
    wallet_path = tmp_path / "wallet.json"
    save_wallet(wallet, wallet_path)
    ds = tmp_path / "sec"
    built = make_marked_dataset(ds, monkeypatch, seed=fresh_seed())
    did = str(built.keypair.dataset_id)
    gw = {"ODFWEB3_ARWEAVE_GATEWAY": arlocal.url, "ODFWEB3_ARWEAVE_WALLET": str(wallet_path)}
    env = home_env(tmp_path / "laptop", **gw)

    code, _, err = run(capsys, env, "publish", str(ds), "--to", "arweave", "--encrypt")
    assert code == 0, err
    arlocal.mine(1)
    append_marked(ds, monkeypatch, seed=92)
    code, out, err = run(capsys, env, "--json", "publish", str(ds), "--to", "arweave")
    assert code == 0, err
    record_id = json.loads(out)["record"]["recordId"]
    arlocal.mine(1)
    # the record the gateway serves names the key envelope
    record = httpx.get(f"{arlocal.url}/{record_id}", timeout=30).json()
    assert record.get("keyEnvelope")
    assert leaks(ds, _arlocal_files(arlocal, tmp_path)) == []

    code, _, err = run(capsys, env, "publish", str(ds), "--to", "arweave", "--no-encrypt")
    assert code == 64 and err.count("\n") == 1 and "--yes" in err

    # a second machine with the wallet but no state, no record, no keys: the uploads on
    # the gateway say ciphertext
    other = home_env(tmp_path / "desktop", **gw)
    append_marked(ds, monkeypatch, seed=93)
    code, _, err = run(capsys, other, "publish", str(ds), "--to", "arweave")
    assert code == 64, err
    assert err.count("\n") == 1 and f"holds ciphertext of {did}" in err
    assert leaks(ds, _arlocal_files(arlocal, tmp_path)) == []

    code, _, err = run(capsys, env, "publish", str(ds), "--to", "arweave", "--no-encrypt", "--yes")
    assert code == 0, err
    arlocal.mine(1)
    found = leaks(ds, _arlocal_files(arlocal, tmp_path))
    assert any(f.endswith(": marker") for f in found) and any(": data/" in f for f in found)
