"""Block files are never rewritten: every target and pull copy them byte for byte.

The dataset's blocks are encoded unlike odfweb3's own encoder (tests/support/foreign_blocks.py:
reversed field order, defaults written, padding, the Manifest's slots reversed), as other
writers such as kamu before 0.265 produced them; they decode to the same blocks but hash
differently, and every later block names its parent by that hash. A target or pull that
decoded and re-encoded a block would break the chain. Publish to car:DIR, bundle:DIR, the
Kubo node and arlocal, pull back from each network: the same bytes, the same head.
"""

from __future__ import annotations

import json
from pathlib import Path

from odfweb3.cli.main import main
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.chain import walk_chain
from odfweb3.odf.codec import block_hash, decode_block, encode_block
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.validate import validate_dataset
from odfweb3.publish.execute import publish_dataset
from odfweb3.read.pull import pull_dataset
from odfweb3.read.resolve import open_replica
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.formats.ans104 import iter_bundle
from odfweb3_arweave.publish.gateway_target import GatewayTarget
from odfweb3_arweave.wallet import generate_wallet
from tests.integration.test_resolve_pull_verify import RICH, Env, layout_files
from tests.support.foreign_blocks import rewrite_foreign


def _blocks(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (root / "blocks").iterdir()}


def test_foreign_encoded_blocks_survive_every_target_and_pull(tmp_path, ipfs_node, arlocal):
    env = Env(tmp_path, ipfs_node, arlocal)
    built = create_root_dataset(tmp_path / "ours", blocks=3, data_bytes=9_000, seed=91)
    assert built.keypair is not None
    env.keystore.store(str(built.keypair.dataset_id), built.keypair.signing_key())
    ds = tmp_path / "foreign"
    rewrite_foreign(built.path, ds)
    blocks = _blocks(ds)
    # The premise: not our encoding, yet each decodes and hashes as named, the chain valid.
    for name, data in blocks.items():
        block = decode_block(data)
        assert encode_block(block) != data
        assert "f" + block_hash(data).hex() == name
    assert validate_dataset(ds, deep=True).ok
    head = DatasetReader.open(ds).head()
    n_blocks = len(list(walk_chain(DatasetReader.open(ds))))

    # car:DIR and bundle:DIR through the CLI, as a user runs them.
    cfg = tmp_path / "odfweb3.yaml"
    cfg.write_text(json.dumps(dict(env.config.data)))
    assert main(["wallet", "new", str(tmp_path / "w.json"), "-q"]) == 0
    assert (
        main(["publish", str(ds), "--to", f"car:{tmp_path / 'car'}", "-q", "--config", str(cfg)])
        == 0
    )
    assert (
        main(
            [
                "publish",
                str(ds),
                "--to",
                f"bundle:{tmp_path / 'bundle'}",
                "--wallet",
                str(tmp_path / "w.json"),
                "-q",
                "--config",
                str(cfg),
            ]
        )
        == 0
    )
    # Every block file is a data item of the bundle, byte for byte.
    items = set()
    for bundle in (tmp_path / "bundle").glob("*.bundle"):
        with bundle.open("rb") as f:
            items |= {item.data for item in iter_bundle(f)}
    assert items, "no bundle written"
    assert set(blocks.values()) <= items

    # The Kubo node and arlocal.
    ipfs = env.publish_ipfs(ds)
    assert ipfs.plan.head == head
    wallet = generate_wallet()
    arlocal.mint(wallet.address, RICH)
    ar = publish_dataset(ds, GatewayTarget(ArweaveGateway(arlocal.url), wallet, env.states))
    name = env.name(ipfs.plan.dataset_id)

    # Pull back from each: the same block bytes, the same head, the whole layout identical.
    for ref, dest in (
        (f"car:{tmp_path / 'car'}", "from-car"),
        (f"ipns://{name}", "from-ipfs"),
        (f"ar://{ar.state.record['recordId']}", "from-ar"),
    ):
        result = pull_dataset(open_replica(ref, env.config), tmp_path / dest)
        assert result.head == head and result.new_blocks == n_blocks, ref
        assert _blocks(tmp_path / dest) == blocks, ref
        assert layout_files(tmp_path / dest) == layout_files(ds), ref
        assert validate_dataset(tmp_path / dest, deep=True).ok, ref
