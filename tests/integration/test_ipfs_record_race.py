"""The record put's race checks, on the real Kubo v0.43.1 (docs/reliability.md).

``name/put`` refuses a record whose sequence is not higher than the node's, but it is no
compare-and-set: its handler reads the node's record, compares, then puts, with no lock
between, so two puts of one sequence in flight together both pass. After every put the record
is read back, then once more after the settle pause (at least twice as long as our put took).
``routing/put`` (a Kubo older than 0.40, played by a proxy answering 404 for ``name/put``
and ``name/get``) takes any valid record, so after it the record is read once more after the
settle pause, and a rival put seen then is a ConflictError (exit 75).
"""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from odfweb3.backends import state_facts
from odfweb3.crypto.keystore import Keystore
from odfweb3.errors import BackendRejected, ConflictError
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


def _rival(
    keystore: Keystore, did: str, sequence: int, valid: timedelta = timedelta(hours=1)
) -> tuple[IpnsName, bytes]:
    """A record for the dataset's name from another publisher holding the same key (a
    long ``valid`` makes it the better of two records of one sequence, IPNS's tie-break)."""
    key = keystore.load(did)
    name = IpnsName.from_public_key(public_key_bytes(key))
    now = datetime.now(UTC)
    rec = create_record(key, "/ipfs/bafkqaaa", sequence, now + valid, now=now)
    return name, encode_record(rec)


def _force_put(client: KuboClient, name: IpnsName, raw: bytes) -> None:
    """Put ``raw`` past name/put's sequence check, as a rival's put that passed the check
    before ours landed does (Kubo's handler checks, then puts, with no lock between)."""
    client.call(
        "name/put",
        [str(name)],
        {"allow-offline": True, "force": True},
        body=lambda: io.BytesIO(raw),
    )


def test_after_name_put_a_rival_of_the_same_sequence_seen_after_the_pause_is_a_conflict(
    tmp_path: Path, ipfs_node: IpfsNode, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds, keystore, states, did = _setup(tmp_path)
    with KuboClient(ipfs_node.api_url) as client:
        pauses: list[float] = []

        def rival_lands_during_the_pause(seconds: float) -> None:
            pauses.append(seconds)
            ours = read_node_record(client, _rival(keystore, did, 0)[0])
            assert ours is not None  # our put landed; a rival's of the same sequence now does
            name, raw = _rival(keystore, did, ours.record.sequence, timedelta(days=3650))
            _force_put(client, name, raw)

        monkeypatch.setattr(node_target.time, "sleep", rival_lands_during_the_pause)
        target = IpfsNodeTarget(client, keystore, states, tmp_dir=tmp_path, settle=SETTLE)
        with pytest.raises(ConflictError) as lost:
            publish_dataset(ds, target)
        # One pause, at least the configured one (longer when our own put was slow).
        assert len(pauses) == 1 and pauses[0] >= SETTLE
        text = str(lost.value)
        assert "right after us and won" in text and "\n" not in text
        assert lost.value.exit_code == 75
        kept = states.load(did, target.name)  # the upload's checkpoint, no published head
        assert kept is None or kept.head is None


def test_name_put_refuses_a_sequence_not_higher_in_one_line(
    tmp_path: Path, ipfs_node: IpfsNode
) -> None:
    ds, keystore, states, did = _setup(tmp_path)
    with KuboClient(ipfs_node.api_url) as client:
        target = IpfsNodeTarget(client, keystore, states, tmp_dir=tmp_path, settle=SETTLE)
        state = publish_dataset(ds, target).state
        assert state is not None and state_facts(state).mode == "name/put"
        # A rival that read the record before ours was put signs the sequence we used:
        # once our put has landed, the node refuses it (one line, exit 75).
        seen = read_node_record(client, _rival(keystore, did, 0)[0])
        assert seen is not None
        name, raw = _rival(keystore, did, seen.record.sequence)
        with pytest.raises(ConflictError) as refused:
            client.record_put(name, raw)
        assert refused.value.exit_code == 75 and "\n" not in str(refused.value)
        after = read_node_record(client, name)
        assert after is not None and after.record.value_text == seen.record.value_text


def test_a_put_refused_because_a_rival_landed_inside_the_check_is_a_conflict(
    tmp_path: Path, ipfs_node: IpfsNode, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rival's put lands between the node's sequence check and its put, and the
    node's routing keeps the rival's record (refusing ours with a 500): exit 75, not 69.
    The refusal is played (a real node gives it only to a put that loses that window)."""
    ds, keystore, states, did = _setup(tmp_path)
    with KuboClient(ipfs_node.api_url) as client:

        def rival_inside_the_window(name: IpnsName, raw: bytes) -> str:
            current = read_node_record(client, name)
            sequence = current.record.sequence + 1 if current is not None else 0
            _force_put(client, *_rival(keystore, did, sequence))
            raise BackendRejected(
                "routing/put: 500",
                status=500,
                detail="can't replace a newer value with an older value",
            )

        monkeypatch.setattr(client, "record_put", rival_inside_the_window)
        target = IpfsNodeTarget(client, keystore, states, tmp_dir=tmp_path, settle=SETTLE)
        with pytest.raises(ConflictError) as lost:
            publish_dataset(ds, target)
        assert lost.value.exit_code == 75 and "\n" not in str(lost.value)
        assert "the node kept it" in str(lost.value)
        kept = states.load(did, target.name)
        assert kept is None or kept.head is None


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
            assert len(pauses) == 1 and pauses[0] >= SETTLE
            text = str(lost.value)
            assert "right after us and won" in text and "\n" not in text
            assert lost.value.exit_code == 75
            assert proxy.count("/api/v0/routing/put") == 1
