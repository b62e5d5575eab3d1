"""Linked objects (ODF RFC-017) on the live targets: the Kubo node (plain and encrypted) and
Arweave (arlocal): published with the delta, served where an ODF reader looks for them
(Kubo's own gateway resolves ``/ipfs/<root>/data/<multihash>``), pulled back, re-hashed by
``verify --deep``.

The dataset is a kamu "versioned file" dataset (tests/support/linked.py): real Parquet data
files with an ObjectLink column, each AddData's linkedObjects summary.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from odfweb3.cli.main import main
from odfweb3.config import Config
from odfweb3.crypto.envelope import add_recipient, encode_envelope, x25519_recipient
from odfweb3.crypto.keyfiles import ContentKeyStore, DatasetKeys, IdentityStore
from odfweb3.crypto.keystore import Keystore
from odfweb3.crypto.sealer import Sealer
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.odf.validate import validate_dataset
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import StateStore
from odfweb3.read.pull import pull_dataset
from odfweb3.read.resolve import open_replica
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.publish.gateway_target import GatewayTarget
from odfweb3_arweave.wallet import generate_wallet
from odfweb3_ipfs.client.kubo import KuboClient
from odfweb3_ipfs.formats.libp2p_keys import IpnsName, public_key_bytes
from odfweb3_ipfs.publish.node_target import IpfsNodeTarget
from tests.support.linked import LinkedDataset, append_linked, content, create_linked_dataset

RICH = 10**15


def tree(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes()
        for p in path.rglob("*")
        if p.is_file() and p.relative_to(path).parts[0] in ("blocks", "data", "checkpoints", "refs")
    }


def config(tmp_path: Path, ipfs_node, arlocal=None) -> tuple[Config, Path]:
    data = {
        "ipfs": {"api": ipfs_node.api_url, "gateway": ipfs_node.gateway_url},
        "keystore": str(tmp_path / "keys"),
        "state_dir": str(tmp_path / "state"),
    }
    if arlocal is not None:
        data["arweave"] = {"gateway": arlocal.url}
    path = tmp_path / "odfweb3.yaml"
    path.write_text(json.dumps(data))
    return Config(data=data, home=tmp_path / "home"), path


def node_target(tmp_path: Path, ipfs_node, keystore: Keystore, sealer: Sealer | None = None):
    return IpfsNodeTarget(
        KuboClient(ipfs_node.api_url),
        keystore,
        StateStore(tmp_path / "state"),
        gateway_url=ipfs_node.gateway_url,
        tmp_dir=tmp_path,
        sealer=sealer,
    )


def linked_paths(ds: LinkedDataset, objs) -> set[str]:
    return {o.path for o in objs if o.kind == "linked"}


def test_linked_objects_on_kubo_and_arweave(tmp_path, ipfs_node, arlocal, capsys):
    cfg, cfg_path = config(tmp_path, ipfs_node, arlocal)
    ds = create_linked_dataset(tmp_path / "ds", versions=3, size=40_000, seed=11)
    keystore = Keystore(cfg.keystore_dir)
    keystore.store(ds.dataset_id, ds.keypair.signing_key())

    # --- Kubo: the linked objects go with the first publish, at data/<multihash> ----------
    first = publish_dataset(ds.path, node_target(tmp_path, ipfs_node, keystore))
    assert linked_paths(ds, first.plan.send) == {f"data/{multihash_to_str(h)}" for h in ds.linked}
    root = first.state.locator
    for h in ds.linked:  # Kubo's own UnixFS path resolution serves the bytes
        r = httpx.get(f"{ipfs_node.gateway_url}/ipfs/{root}/data/{multihash_to_str(h)}", timeout=60)
        assert r.status_code == 200 and r.content == ds.linked_path(h).read_bytes()

    # --- Arweave: the same objects in the bundle, by path in the manifest -------------------
    wallet = generate_wallet()
    arlocal.mint(wallet.address, RICH)
    states = StateStore(tmp_path / "state")
    ar = publish_dataset(ds.path, GatewayTarget(ArweaveGateway(arlocal.url), wallet, states))
    assert linked_paths(ds, ar.plan.send) == {f"data/{multihash_to_str(h)}" for h in ds.linked}
    record_id = ar.state.record["recordId"]
    arlocal.mine(1)
    gateway = ArweaveGateway(arlocal.url)
    for h in ds.linked:  # the path manifest maps data/<multihash> to the linked object's item
        served = gateway.get_data(f"{ar.state.locator}/data/{multihash_to_str(h)}")
        assert served == ds.linked_path(h).read_bytes()

    # --- pull from each network, verify --deep re-hashes the linked objects -----------------
    name = IpnsName.from_public_key(public_key_bytes(keystore.load(ds.dataset_id)))
    refs = (f"ipns://{name}", f"ar://{record_id}")
    for ref, dest in zip(refs, ("from-ipfs", "from-ar"), strict=True):
        result = pull_dataset(open_replica(ref, cfg), tmp_path / dest)
        blocks = result.new_blocks
        assert result.objects_fetched == blocks + 3 + 3  # the blocks, data files, linked
        assert tree(tmp_path / dest) == tree(ds.path)
        assert validate_dataset(tmp_path / dest, deep=True).ok
    argv = ["verify", str(ds.path), "--against", refs[0], "--against", refs[1]]
    assert main([*argv, "--deep", "--json", "--config", str(cfg_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [(r["status"], r["objectsChecked"]) for r in report["replicas"]] == [
        ("identical", blocks + 6),
        ("identical", blocks + 6),
    ]

    # --- one new version: only its linked object goes, on both; incremental pulls ----------
    new_data, (new_link,) = append_linked(ds, [content(12, 0, 50_000)])
    again = publish_dataset(ds.path, node_target(tmp_path, ipfs_node, keystore))
    expect = {f"data/{multihash_to_str(new_data)}", f"data/{multihash_to_str(new_link)}"}
    assert {o.path for o in again.plan.send if o.kind != "block"} == expect
    ar2 = publish_dataset(ds.path, GatewayTarget(ArweaveGateway(arlocal.url), wallet, states))
    assert {o.path for o in ar2.plan.send if o.kind != "block"} == expect
    refs = (f"ipns://{name}", f"ar://{ar2.state.record['recordId']}")
    for ref, dest in zip(refs, ("from-ipfs", "from-ar"), strict=True):
        result = pull_dataset(open_replica(ref, cfg), tmp_path / dest)
        assert (result.new_blocks, result.objects_fetched) == (1, 1 + 2)
        assert tree(tmp_path / dest) == tree(ds.path)
    argv = ["verify", str(ds.path), "--against", refs[0], "--against", refs[1]]
    assert main([*argv, "--deep", "--json", "--config", str(cfg_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["objectsChecked"] for r in report["replicas"]] == [blocks + 1 + 8] * 2


def test_missing_linked_object_publishes_nothing_to_kubo(tmp_path, ipfs_node, capsys):
    _, cfg_path = config(tmp_path, ipfs_node)
    ds = create_linked_dataset(tmp_path / "ds", versions=2, seed=13)
    gone = ds.linked[1]
    ds.linked_path(gone).unlink()
    code = main(["publish", str(ds.path), "--to", "ipfs", "--config", str(cfg_path)])
    err = capsys.readouterr().err
    assert code == 65 and len(err.strip().splitlines()) == 1, err
    assert multihash_to_str(gone) in err and multihash_to_str(ds.data_files[1]) in err
    # nothing published: no publish state, so status knows no target
    state = tmp_path / "state"
    assert not state.exists() or not [p for p in state.rglob("*.json") if "cache" not in p.parts]
    code = main(["status", str(ds.path), "--offline", "--json", "--config", str(cfg_path)])
    out = capsys.readouterr().out
    assert code == 0 and json.loads(out)["targets"] == []


def test_encrypted_publish_to_kubo_carries_linked_objects(tmp_path, ipfs_node, capsys):
    ds = create_linked_dataset(tmp_path / "ds", versions=2, size=30_000, seed=14)
    keys_dir = tmp_path / "keys"
    identities = IdentityStore(keys_dir)
    alice = identities.create("alice")
    store = ContentKeyStore(keys_dir)
    keys = store.load_or_create(ds.dataset_id)
    envelope = add_recipient(
        keys.envelope, keys.ring, x25519_recipient(identities.public_key("alice"))
    )
    store.save(DatasetKeys(keys.ring, envelope, keys.keks))
    sealer = Sealer(keys.ring.current_key(), encode_envelope(envelope))
    keystore = Keystore(tmp_path / "ipns-keys")
    keystore.store(ds.dataset_id, ds.keypair.signing_key())
    outcome = publish_dataset(
        ds.path, node_target(tmp_path, ipfs_node, keystore, sealer), sealer=sealer
    )
    assert linked_paths(ds, outcome.plan.send) == {f"data/{multihash_to_str(h)}" for h in ds.linked}
    root = outcome.state.locator
    for h in ds.linked:  # the node holds ciphertext at the path, never the plaintext
        r = httpx.get(f"{ipfs_node.gateway_url}/ipfs/{root}/data/{multihash_to_str(h)}", timeout=60)
        plain = ds.linked_path(h).read_bytes()
        assert r.status_code == 200 and plain[100:140] not in r.content
    # a recipient (keystore: alice's identity and the envelope) pulls and decrypts them all
    _, cfg_path = config(tmp_path, ipfs_node)  # keystore: tmp_path/keys, alice's
    name = IpnsName.from_public_key(public_key_bytes(keystore.load(ds.dataset_id)))
    dest = tmp_path / "copy"
    code = main(["pull", f"ipns://{name}", str(dest), "--config", str(cfg_path)])
    assert code == 0, capsys.readouterr().err
    assert tree(dest) == tree(ds.path)
    assert validate_dataset(dest, deep=True).ok
    assert alice is not None


def test_encrypted_publish_to_arweave_carries_linked_objects(tmp_path, arlocal, capsys):
    ds = create_linked_dataset(tmp_path / "ds", versions=2, size=20_000, seed=15)
    keys_dir = tmp_path / "keys"
    identities = IdentityStore(keys_dir)
    identities.create("alice")
    store = ContentKeyStore(keys_dir)
    keys = store.load_or_create(ds.dataset_id)
    envelope = add_recipient(
        keys.envelope, keys.ring, x25519_recipient(identities.public_key("alice"))
    )
    store.save(DatasetKeys(keys.ring, envelope, keys.keks))
    sealer = Sealer(keys.ring.current_key(), encode_envelope(envelope))
    wallet = generate_wallet()
    arlocal.mint(wallet.address, RICH)
    target = GatewayTarget(
        ArweaveGateway(arlocal.url), wallet, StateStore(tmp_path / "state"), sealer=sealer
    )
    outcome = publish_dataset(ds.path, target, sealer=sealer)
    arlocal.mine(1)
    assert linked_paths(ds, outcome.plan.send) == {f"data/{multihash_to_str(h)}" for h in ds.linked}
    gateway = ArweaveGateway(arlocal.url)
    for h in ds.linked:  # ciphertext at the path in the manifest, never the plaintext
        served = gateway.get_data(f"{outcome.state.locator}/data/{multihash_to_str(h)}")
        assert ds.linked_path(h).read_bytes()[100:140] not in served
    env = {
        "ODFWEB3_ARWEAVE_GATEWAY": arlocal.url,
        "ODFWEB3_KEYSTORE": str(keys_dir),
        "ODFWEB3_STATE_DIR": str(tmp_path / "reader-state"),
        "HOME": str(tmp_path),
    }
    dest = tmp_path / "pulled"
    code = main(["pull", f"ar://{outcome.state.record['recordId']}", str(dest)], env=env)
    assert code == 0, capsys.readouterr().err
    assert tree(dest) == tree(ds.path)
    assert validate_dataset(dest, deep=True).ok


def test_example_linked_objects_through_kubo(tmp_path, ipfs_node, capsys):
    # `odfweb3 example --linked-objects` published to the live node and pulled back by name
    cfg, cfg_path = config(tmp_path, ipfs_node)
    ds = tmp_path / "ds"
    argv = ["example", str(ds), "--blocks", "2", "--linked-objects", "3", "--seed", "17"]
    assert main([*argv, "-q", "--config", str(cfg_path)]) == 0
    code = main(["publish", str(ds), "--to", "ipfs", "--json", "--config", str(cfg_path)])
    out = capsys.readouterr().out
    assert code == 0
    result = json.loads(out)
    in_data = [p for p in result["plan"]["send"] if p.startswith("data/")]
    assert len(in_data) == 2 + 6  # two data files, six linked objects
    name = result["record"]["name"]
    dest = tmp_path / "copy"
    pull_dataset(open_replica(f"ipns://{name}", cfg), dest)
    assert tree(dest) == tree(ds)
    assert validate_dataset(dest, deep=True).ok
