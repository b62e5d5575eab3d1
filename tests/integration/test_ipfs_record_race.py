"""The record put's race checks, on the real Kubo v0.43.1 (docs/reliability.md).

``name/put`` refuses a record whose sequence is not higher than the node's: it is the node's
compare-and-set, so a publish through it reads the record back once and does not wait.
``routing/put`` (a Kubo older than 0.40, played by a proxy answering 404 for ``name/put``
and ``name/get``) takes any valid record, so after it the record is read once more after the
settle pause, and a rival put seen then is a ConflictError (exit 75).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from odfweb3.backends import state_facts
from odfweb3.crypto.keystore import Keystore
from odfweb3.errors import ConflictError
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.layout import DatasetReader
from odfweb3.publish.execute import load_verified_chain, publish_dataset
from odfweb3.publish.state import StateStore
from odfweb3_ipfs.client.kubo import KuboClient
from odfweb3_ipfs.formats.ipns import create_record, encode_record
from odfweb3_ipfs.formats.libp2p_keys import IpnsName, public_key_bytes
from odfweb3_ipfs.publish import node_target
from odfweb3_ipfs.publish.node_target import IpfsNodeTarget, read_node_record
from tests.support.lying_proxy import lying_proxy
from tests.support.nodes import IpfsNode

SETTLE = 0.05


def _setup(tmp_path: Path) -> tuple[Path, Keystore, StateStore, str]:
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=3000, seed=41).path
    did = str(load_verified_chain(DatasetReader.open(ds))[1])
    return ds, Keystore(tmp_path / "keys"), StateStore(tmp_path / "state"), did


def _rival(keystore: Keystore, did: str, sequence: int) -> tuple[IpnsName, bytes]:
    """A record for the dataset's name from another publisher holding the same key."""
    key = keystore.load(did)
    name = IpnsName.from_public_key(public_key_bytes(key))
    now = datetime.now(UTC)
    rec = create_record(key, "/ipfs/bafkqaaa", sequence, now + timedelta(hours=1), now=now)
    return name, encode_record(rec)


def test_name_put_is_the_compare_and_set_and_no_pause_follows_it(
    tmp_path: Path, ipfs_node: IpfsNode, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds, keystore, states, did = _setup(tmp_path)
    pauses: list[float] = []
    monkeypatch.setattr(node_target.time, "sleep", pauses.append)
    with KuboClient(ipfs_node.api_url) as client:
        target = IpfsNodeTarget(client, keystore, states, tmp_dir=tmp_path, settle=SETTLE)
        state = publish_dataset(ds, target).state
        assert state is not None and state_facts(state).mode == "name/put"
        assert pauses == []  # read back once, no settle pause
        # Why none is needed: a rival that read the record we replaced signs the same
        # sequence, and the node refuses it (one line, exit 75).
        seen = read_node_record(client, _rival(keystore, did, 0)[0])
        assert seen is not None
        name, raw = _rival(keystore, did, seen.record.sequence)
        with pytest.raises(ConflictError) as refused:
            client.record_put(name, raw)
        assert refused.value.exit_code == 75 and "\n" not in str(refused.value)
        after = read_node_record(client, name)
        assert after is not None and after.record.value_text == seen.record.value_text


def test_after_routing_put_a_rival_put_seen_after_the_pause_is_a_conflict(
    tmp_path: Path, ipfs_node: IpfsNode, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds, keystore, states, did = _setup(tmp_path)
    with lying_proxy(ipfs_node.api_url) as proxy:
        proxy.not_found = ("/api/v0/name/put", "/api/v0/name/get")
        with KuboClient(proxy.url) as old, KuboClient(ipfs_node.api_url) as direct:
            pauses: list[float] = []

            def rival_puts_during_the_pause(seconds: float) -> None:
                pauses.append(seconds)
                ours = read_node_record(direct, _rival(keystore, did, 0)[0])
                assert ours is not None  # our put landed; now another publisher's does
                name, raw = _rival(keystore, did, ours.record.sequence + 1)
                direct.record_put(name, raw)

            monkeypatch.setattr(node_target.time, "sleep", rival_puts_during_the_pause)
            target = IpfsNodeTarget(old, keystore, states, tmp_dir=tmp_path, settle=SETTLE)
            with pytest.raises(ConflictError) as lost:
                publish_dataset(ds, target)
            assert pauses == [SETTLE]
            text = str(lost.value)
            assert "right after us and won" in text and "\n" not in text
            assert lost.value.exit_code == 75
            assert proxy.count("/api/v0/routing/put") == 1
