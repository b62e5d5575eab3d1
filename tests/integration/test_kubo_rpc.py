"""Every Kubo RPC endpoint and gateway answer odfweb3 uses, on the real Kubo v0.43.1, and
Kubo's own refusals on those paths: each one line (what failed, where, what to do) with its
exit code (odfweb3/errors.py). The full endpoint -> test list is in docs/kubo-notes.md.

The session node (`ipfs_node`) is online with no peers; an older Kubo (no `name/put`,
`name/get`) is played by a proxy answering 404 for those commands, as such a Kubo does.
"""

from __future__ import annotations

import io
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from odfweb3.errors import BackendRejected, ConflictError, OdfWeb3Error
from odfweb3_ipfs.client.gateway import IpfsGateway
from odfweb3_ipfs.client.kubo import KuboClient
from odfweb3_ipfs.formats.car import CarWriter, iter_car
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.formats.ipns import create_record, encode_record, verify_record
from odfweb3_ipfs.formats.libp2p_keys import IpnsName, public_key_bytes
from odfweb3_ipfs.publish.unixfs_import import import_bytes
from tests.support.lying_proxy import lying_proxy
from tests.support.nodes import IpfsNode

NOW = datetime.now(UTC)


@pytest.fixture
def client(ipfs_node: IpfsNode):
    with KuboClient(ipfs_node.api_url, timeout=30.0) as c:
        yield c


def fresh_name() -> tuple[Ed25519PrivateKey, IpnsName]:
    key = Ed25519PrivateKey.generate()
    return key, IpnsName.from_public_key(public_key_bytes(key))


def record(key: Ed25519PrivateKey, value: str, sequence: int) -> bytes:
    return encode_record(create_record(key, value, sequence, timedelta(hours=48), now=NOW))


def one_line(exc: OdfWeb3Error, *needles: str) -> str:
    """The CLI prints `odfweb3: error: {exc}`: it must be one line naming where and what."""
    text = str(exc)
    assert "\n" not in text and "Traceback" not in text
    for needle in needles:
        assert needle in text, (needle, text)
    return text


def car_of(tmp_path: Path, payload: bytes) -> tuple[Path, Cid]:
    path = tmp_path / "x.car"
    with path.open("w+b") as f:
        writer = CarWriter.with_root_later(f)
        node = import_bytes(payload, sink=writer)
        writer.set_root(node.cid)
    return path, node.cid


def missing_cid() -> Cid:
    node = import_bytes(os.urandom(64))  # never stored anywhere
    return node.cid


# ---------------------------------------------------------------- endpoints


def test_version_tells_kubo_and_its_version(client: KuboClient) -> None:
    assert client.node.kind == "kubo"
    assert client.node.version == "0.43.1"


def test_dag_import_block_stat_pin_add_ls_update_rm_cat(tmp_path: Path, client: KuboClient) -> None:
    payload = os.urandom(3000)
    car, root = car_of(tmp_path, payload)
    # pin-roots=false: imported, not pinned; Kubo then reports no Root lines (stats only).
    assert client.dag_import(car) == []
    assert client.block_size(root) is not None
    assert not client.has_pin(root)
    client.pin_add(root)
    assert client.has_pin(root)
    assert client.cat(f"/ipfs/{root}") == payload
    car2, root2 = car_of(tmp_path, payload + b"more")
    client.dag_import(car2)
    client.pin_update(root, root2)  # unpin=false: both stay pinned
    assert client.has_pin(root) and client.has_pin(root2)
    client.pin_rm(root)
    assert not client.has_pin(root) and client.has_pin(root2)
    assert client.stats.by_endpoint is not None
    for endpoint in ("dag/import", "block/stat", "pin/ls", "pin/add", "pin/update", "pin/rm"):
        assert client.stats.by_endpoint[endpoint] >= 1, endpoint


def test_block_stat_answers_absent_at_once_offline_and_block_get_times_out(
    client: KuboClient,
) -> None:
    absent = missing_cid()
    assert client.block_size(absent, wait="2s") is None  # offline=true: no network lookup
    with pytest.raises(BackendRejected) as info:
        client.call("block/get", [absent.encode()], {"timeout": "1s"})
    one_line(info.value, "/api/v0/block/get", "HTTP 500", "did not find it in time")
    assert info.value.exit_code == 69


def test_name_put_then_name_get_give_back_our_exact_bytes(client: KuboClient) -> None:
    key, name = fresh_name()
    raw = record(key, "/ipfs/bafkqaaa", 4)
    assert client.record_put(name, raw) == "name/put"
    assert client.record_get(name) == raw
    assert client.record_put(name, raw) == "name/put"  # the identical record: accepted again
    assert client.stats.by_endpoint is not None and client.stats.by_endpoint["name/get"] == 1


def test_older_kubo_without_name_put_gets_routing_put_and_routing_get(
    ipfs_node: IpfsNode,
) -> None:
    key, name = fresh_name()
    raw = record(key, "/ipfs/bafkqaaa", 1)
    with lying_proxy(ipfs_node.api_url) as proxy:
        proxy.not_found = ("/api/v0/name/put", "/api/v0/name/get")
        with KuboClient(proxy.url) as old:
            assert old.record_put(name, raw) == "routing/put"
            assert old.record_get(name) == raw
            assert proxy.count("/api/v0/routing/put") == 1
            assert proxy.count("/api/v0/routing/get") == 1
            assert old.record_put(name, record(key, "/ipfs/bafkqaaa", 2)) == "routing/put"
            assert proxy.count("/api/v0/name/put") == 1  # the 404 is remembered


def test_key_import_protobuf_then_name_publish_signs_with_it(client: KuboClient) -> None:
    key, name = fresh_name()
    key_name = f"odfweb3-test-{name.peer_id}"
    client.key_import(key_name, key)  # format=libp2p-protobuf-cleartext
    assert client.key_names()[key_name] in (str(name), name.peer_id)
    client.name_publish("/ipfs/bafkqaaa", key_name, lifetime="1h")
    raw = client.record_get(name)
    assert raw is not None
    assert verify_record(raw, name).value_text == "/ipfs/bafkqaaa"


def test_gateway_serves_raw_blocks_cars_and_ipns_records(
    tmp_path: Path, ipfs_node: IpfsNode, client: KuboClient
) -> None:
    payload = os.urandom(300_000)  # two chunks: a dag-pb root over raw leaves
    car, root = car_of(tmp_path, payload)
    client.dag_import(car)
    gateway = IpfsGateway(ipfs_node.gateway_url)
    block = gateway.raw_block(root)  # ?format=raw
    assert block is not None and root.verify(block, where="test") is None
    # ?format=car: a CAR whose every block our reader verifies against its CID.
    r = ipfs_node.gateway_get(f"/ipfs/{root}?format=car")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/vnd.ipld.car")
    roots, blocks = iter_car(io.BytesIO(r.content))
    assert roots == [root]
    got = dict(blocks)
    assert root in got and len(got) == 3
    # ?format=car&dag-scope=block (the reader's fallback when a gateway serves no raw
    # blocks): one block, verified against its CID, for the dag-pb root and a raw leaf.
    assert gateway.car_block(root) == got[root]
    leaf = next(c for c in got if c != root)
    assert gateway.car_block(leaf) == got[leaf]
    key, name = fresh_name()
    raw = record(key, f"/ipfs/{root}", 0)
    client.record_put(name, raw)
    assert gateway.ipns_record(name) == raw  # ?format=ipns-record: our exact bytes


# ---------------------------------------------------------------- Kubo's refusals


def test_a_sequence_not_higher_than_the_nodes_is_a_conflict(client: KuboClient) -> None:
    key, name = fresh_name()
    client.record_put(name, record(key, "/ipfs/bafkqaaa", 5))
    with pytest.raises(ConflictError) as info:
        client.record_put(name, record(key, "/ipfs/bafkqaaa", 3))
    one_line(info.value, "/api/v0/name/put", "sequence 5", "ours is 3", "publish again")
    assert info.value.exit_code == 75
    # Same sequence, other value: refused too (only the identical record is accepted).
    with pytest.raises(ConflictError):
        client.record_put(name, record(key, "/ipfs/bafkqaae", 5))


def test_an_oversized_record_is_refused_by_the_node(client: KuboClient) -> None:
    key, name = fresh_name()
    raw = record(key, "/ipfs/bafkqaaa", 1) + b"\x00" * 11_000  # over 10 KiB
    with pytest.raises(BackendRejected) as info:
        client.record_put(name, raw)
    one_line(info.value, "/api/v0/name/put", "HTTP 500", "maximum size", "10 KiB limit")
    assert info.value.exit_code == 69


def test_a_missing_block_and_a_missing_pin_say_what_to_do(client: KuboClient) -> None:
    absent = missing_cid()
    with pytest.raises(BackendRejected) as info:
        client.call("block/stat", [absent.encode()], {"offline": True})
    one_line(info.value, "/api/v0/block/stat", "HTTP 500", "not found locally", "re-sends")
    assert info.value.exit_code == 69
    with pytest.raises(BackendRejected) as info:
        client.call("pin/ls", [absent.encode()], {"type": "recursive"})
    one_line(info.value, "/api/v0/pin/ls", "is not pinned", "publish again")
    with pytest.raises(BackendRejected) as info:
        client.pin_update(absent, missing_cid())
    one_line(info.value, "/api/v0/pin/update", "not recursively pinned", "publish again")
    with pytest.raises(BackendRejected) as info:
        client.pin_rm(absent)
    one_line(info.value, "/api/v0/pin/rm", "HTTP 500")


def test_name_publish_with_an_unknown_key(client: KuboClient) -> None:
    with pytest.raises(BackendRejected) as info:
        client.name_publish("/ipfs/bafkqaaa", "no-such-key-odfweb3")
    one_line(info.value, "/api/v0/name/publish", "no key by the given name", "publish again")


def test_an_offline_node_cannot_read_records_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from odfweb3.cli.main import main
    from odfweb3.odf.builder import create_root_dataset
    from tests.support.kubo import start_kubo

    key, name = fresh_name()
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=2_000, seed=173).path
    with start_kubo(tmp_path / "offline", offline=True) as node, KuboClient(node.api_url) as c:
        assert c.record_put(name, record(key, "/ipfs/bafkqaaa", 0)) == "name/put"
        with pytest.raises(BackendRejected) as info:
            c.record_get(name)
        one_line(info.value, "/api/v0/name/get", "online mode", "ipfs daemon")
        # The same refusal met by `odfweb3 publish`: one line on stderr, exit 69.
        environ = {
            "ODFWEB3_STATE_DIR": str(tmp_path / "state"),
            "ODFWEB3_KEYSTORE": str(tmp_path / "keys"),
            "ODFWEB3_IPFS_API": node.api_url,
            "ODFWEB3_IPFS_GATEWAY": node.gateway_url,
            "HOME": str(tmp_path),
        }
        code = main(["publish", str(ds), "--to", "ipfs"], env=environ)
    err = capsys.readouterr().err
    assert code == 69
    # one error line (a first publish also warns where it created the IPNS key)
    err = "".join(line for line in err.splitlines(True) if not line.startswith("warning:"))
    assert err.count("\n") == 1 and err.startswith("odfweb3: error: ")
    assert "online mode" in err and "ipfs daemon" in err and "Traceback" not in err
