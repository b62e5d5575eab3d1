"""The node target's batch records and batch nodes (node_batches): golden vectors, the
round trip, and every record a rerun must not trust."""

from __future__ import annotations

import hashlib
import json

import pytest

from odfweb3.errors import FormatError
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.formats.dagpb import decode_pbnode
from odfweb3_ipfs.publish.dataset_dag import ObjectLink
from odfweb3_ipfs.publish.node_batches import (
    BatchRecord,
    batch_node,
    decode_batch_record,
    encode_batch_record,
)

A = Cid.sha256(hashlib.sha256(b"a").digest(), version=1, codec=0x55)
B = Cid.sha256(hashlib.sha256(b"b").digest(), version=1, codec=0x55)
LINKS = {"data/f1620aa": ObjectLink(A, 1, 1), "blocks/f1620bb": ObjectLink(B, 1, 1)}
# dag-pb, two unnamed links (Hash, empty Name, Tsize) and no Data; computed once, checked
# against Kubo by tests/integration/test_ipfs_resume.py (Kubo imports and pins such nodes)
GOLDEN_BLOCK = bytes.fromhex(
    "122a0a2401551220ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb12001801"
    "122a0a24015512203e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d12001801"
)
GOLDEN_ROOT = "bafybeibp6tqag5erportmmhlofsf2hnjod6rn5f3agjtuz6yx2kbeczv44"
GOLDEN_DOC = {
    "version": 1,
    "root": GOLDEN_ROOT,
    "cidVersion": 1,
    "cidProfile": None,
    "encrypted": False,
    "keyEpoch": None,
    "objects": [
        ["data/f1620aa", "bafkreigks6arfsq3xxfpvqrrwonchxcnu6do76auprhhfomao6c273sixm", 1, 1],
        ["blocks/f1620bb", "bafkreib6epubmabzlffdhckpmvsodmjuro6xuaei2qwevs3t52xnlhaatu", 1, 1],
    ],
}


def test_batch_node_golden() -> None:
    root, block = batch_node(LINKS.values(), 1)
    assert block == GOLDEN_BLOCK and root.encode() == GOLDEN_ROOT
    node = decode_pbnode(block)
    assert [link.cid for link in node.links] == [A, B] and node.data is None
    v0, _ = batch_node(LINKS.values(), 0)
    assert v0.version == 0 and v0.raw[-32:] == root.raw[-32:]


def test_record_round_trip_golden() -> None:
    record = BatchRecord(Cid.decode(GOLDEN_ROOT), 1, None, False, None, LINKS)
    assert encode_batch_record(record) == GOLDEN_DOC
    back = decode_batch_record(json.loads(json.dumps(GOLDEN_DOC)), "r")
    assert back == record and list(back.objects) == list(LINKS)


def _doc(**changes: object) -> dict[str, object]:
    return {**json.loads(json.dumps(GOLDEN_DOC)), **changes}


@pytest.mark.parametrize(
    "doc",
    [
        _doc(version=2),
        _doc(cidVersion=2),
        _doc(encrypted="no"),
        _doc(cidProfile=3),
        _doc(keyEpoch="1"),
        _doc(objects={}),
        _doc(objects=[]),
        _doc(objects=[["../../etc/passwd", GOLDEN_DOC["objects"][0][1], 1, 1]]),  # type: ignore[index]
        _doc(objects=[["data/../x", GOLDEN_DOC["objects"][0][1], 1, 1]]),  # type: ignore[index]
        _doc(objects=[["refs/head", GOLDEN_DOC["objects"][0][1], 1, 1]]),  # type: ignore[index]
        _doc(objects=[GOLDEN_DOC["objects"][0], GOLDEN_DOC["objects"][0]]),  # type: ignore[index]
        _doc(objects=[["data/f1620aa", GOLDEN_DOC["objects"][0][1], True, 1]]),  # type: ignore[index]
        _doc(objects=[["data/f1620aa", GOLDEN_DOC["objects"][0][1], -1, 1]]),  # type: ignore[index]
        _doc(objects=[GOLDEN_DOC["objects"][0]]),  # type: ignore[index]  # root no longer matches
        _doc(root="bafkreigks6arfsq3xxfpvqrrwonchxcnu6do76auprhhfomao6c273sixm"),
        _doc(root="not a cid"),
        [],
    ],
)
def test_a_record_that_does_not_check_out_is_refused(doc: object) -> None:
    with pytest.raises(FormatError, match="r:"):
        decode_batch_record(doc, "r")
