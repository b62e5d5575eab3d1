"""The real test nodes and the npm oracles are installed and answer (docs/design.md, "Layers")."""

from __future__ import annotations

import hashlib
import io
import secrets
import subprocess

import pytest
from multiformats import CID

from tests.support.kubo import KUBO_VERSION
from tests.support.nodes import ArlocalNode, IpfsNode
from tests.support.oracles import OracleError, require_oracles, run_oracle

PAYLOAD = b"odfweb3 test node smoke\n"


def test_ipfs_node_reports_its_version(ipfs_node: IpfsNode) -> None:
    version = ipfs_node.version()
    assert version["Version"]
    if ipfs_node.repo_path is not None:  # started by the suite (not ODFWEB3_IPFS_API)
        assert ipfs_node.kind == "kubo"
        assert version["Version"] == KUBO_VERSION
        assert "Golang" in version


def test_block_put_returns_the_cid_we_compute_and_the_gateway_serves_it(
    ipfs_node: IpfsNode,
) -> None:
    digest = hashlib.sha256(PAYLOAD).digest()
    expected = CID("base32", 1, "raw", ("sha2-256", digest))
    key = ipfs_node.block_put(PAYLOAD, cid_codec="raw", mhtype="sha2-256")
    assert bytes(CID.decode(key)) == bytes(expected)

    stat = ipfs_node.rpc_json("block/stat", str(expected))
    assert bytes(CID.decode(stat["Key"])) == bytes(expected)
    assert stat["Size"] == len(PAYLOAD)

    r = ipfs_node.gateway_get(f"/ipfs/{expected}")
    assert r.status_code == 200
    assert r.content == PAYLOAD


def test_arlocal_info_mint_and_mine(arlocal: ArlocalNode) -> None:
    info = arlocal.info()
    assert info["network"].startswith("arlocal")
    height = int(info["height"])
    assert height >= 0

    address = "smoke-" + hashlib.sha256(b"arlocal smoke").hexdigest()[:37]
    before = arlocal.balance(address)
    arlocal.mint(address, 123_456_789)
    assert arlocal.balance(address) == before + 123_456_789

    arlocal.mine(2)
    assert arlocal.height() == height + 2


def test_mine_confirms_bundles_posted_in_chunks_and_unbundles_each_item_once(
    arlocal: ArlocalNode,
) -> None:
    # The turbo bundler's way: a bundle's header, its chunks, then a mine at once. That is
    # where arlocal's two unbundlers race and /mine can answer 404 (ArlocalNode.mine).
    from odfweb3_arweave.client.gateway import ArweaveGateway
    from odfweb3_arweave.formats.ans104 import create_data_item, encode_bundle
    from odfweb3_arweave.formats.merkle import build_tree_from_stream
    from odfweb3_arweave.formats.tags import Tag
    from odfweb3_arweave.formats.tx import iter_chunk_uploads, new_transaction, sign_transaction
    from odfweb3_arweave.wallet import generate_wallet

    wallet = generate_wallet()
    arlocal.mint(wallet.address, 10**15)
    gateway = ArweaveGateway(arlocal.url)
    for round_ in range(3):
        items = [
            create_data_item(wallet, secrets.token_bytes(150_000), [Tag(b"n", b"%d" % i)])
            for i in range(4)
        ]
        bundle = encode_bundle(items)
        tree = build_tree_from_stream(io.BytesIO(bundle), len(bundle))
        tx = new_transaction(
            owner=wallet.owner,
            reward=gateway.price(len(bundle)),
            last_tx=gateway.tx_anchor(),
            tags=[Tag(b"Bundle-Format", b"binary"), Tag(b"Bundle-Version", b"2.0.0")],
            data_size=len(bundle),
            data_root=tree.data_root,
        )
        tx = sign_transaction(tx, wallet)
        gateway.post_tx(tx, inline=False)
        for chunk in iter_chunk_uploads(tree, io.BytesIO(bundle)):
            gateway.post_chunk(chunk)
        arlocal.mine()

        assert gateway.tx_status(tx.id_b64).state == "confirmed", round_
        found = gateway.graphql(
            "query($ids:[ID!]){transactions(ids:$ids){edges{node{id tags{name value}}}}}",
            {"ids": [item.header.id_b64 for item in items]},
        )
        # Each item once, with its own tag once (arlocal's GraphQL leaves bundledIn empty).
        tags = {e["node"]["id"]: e["node"]["tags"] for e in found["transactions"]["edges"]}
        assert tags == {
            item.header.id_b64: [{"name": "n", "value": str(i)}] for i, item in enumerate(items)
        }


def test_oracle_packages_import() -> None:
    cwd = require_oracles()
    script = (
        "const ipns = await import('ipns');"
        "const keys = await import('@libp2p/crypto/keys');"
        "const pid = await import('@libp2p/peer-id');"
        "const { createRequire } = await import('node:module');"
        "const req = createRequire(process.cwd() + '/');"
        "const Arweave = req('arweave'); const bundles = req('arbundles');"
        "console.log(JSON.stringify({"
        " ipns: typeof ipns.createIPNSRecord, keys: typeof keys.generateKeyPair,"
        " peerId: typeof pid.peerIdFromPrivateKey, arweave: typeof Arweave.init,"
        " arbundles: typeof bundles.createData }));"
    )
    out = subprocess.run(
        ["node", "--input-type=module", "-e", script],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (
        '{"ipns":"function","keys":"function","peerId":"function",'
        '"arweave":"function","arbundles":"function"}'
    )


def test_run_oracle_names_a_missing_script() -> None:
    with pytest.raises(OracleError, match=r"no_such_oracle\.mjs does not exist"):
        run_oracle("no_such_oracle.mjs", "x", input=b"")
