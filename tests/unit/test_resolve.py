"""odfweb3.read.claims: claims checked against what a replica serves (local datasets)."""

import pytest

from odfweb3.descriptor import build_descriptor
from odfweb3.errors import ChainBroken, ReplicaMismatch
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.chain import walk_chain
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.read.claims import (
    NameClaims,
    check_claims,
    describe_chain,
    descriptor_facts,
    resolve_dataset,
    seed_dataset_id,
)
from odfweb3.read.replica import LocalReplica


@pytest.fixture
def two(tmp_path):
    a = create_root_dataset(tmp_path / "a", blocks=3, data_bytes=2000, seed=1)
    b = create_root_dataset(tmp_path / "b", blocks=3, data_bytes=2000, seed=2)
    return a, b


def test_resolve_checks_head_and_seed(two):
    a, b = two
    reader = DatasetReader.open(a.path)
    did = str(a.keypair.dataset_id)
    chain = list(walk_chain(reader))
    claims = NameClaims(locator="/ipfs/x", dataset_id=did, head=reader.head(), sequence=4)
    got = resolve_dataset("ipns://x", LocalReplica(reader), claims, expect_dataset_id=did)
    assert (got.dataset_id, got.head, got.blocks, got.sequence) == (
        did,
        reader.head(),
        len(chain),
        4,
    )
    assert got.to_json()["head"] == multihash_to_str(reader.head())
    assert got.title == describe_chain(chain)[0] and got.title
    assert "sequence: 4" in got.describe()

    other = DatasetReader.open(b.path)
    with pytest.raises(ReplicaMismatch, match="the record says head"):
        resolve_dataset("ipns://x", LocalReplica(other), claims)
    wrong_id = NameClaims(locator="/ipfs/x", dataset_id=str(b.keypair.dataset_id))
    with pytest.raises(ReplicaMismatch, match="the chain's Seed is " + did):
        resolve_dataset("ipns://x", LocalReplica(reader), wrong_id)
    with pytest.raises(ReplicaMismatch, match="asked for dataset"):
        resolve_dataset(
            "did",
            LocalReplica(reader),
            NameClaims("/x"),
            expect_dataset_id=str(b.keypair.dataset_id),
        )


def test_dataset_ids_compare_across_multibase(two):
    a, _ = two
    did = a.keypair.dataset_id
    b58 = "did:odf:z" + __import__("multiformats").multibase.encode(did.to_bytes(), "base58btc")[1:]
    head = DatasetReader.open(a.path).head()
    check_claims("r", NameClaims("/x", dataset_id=b58, head=head), head, str(did))


def test_seed_required():
    with pytest.raises(ChainBroken):
        seed_dataset_id([])


def test_descriptor_facts_only_for_the_same_dataset(two):
    a, b = two
    chain = list(walk_chain(DatasetReader.open(a.path)))
    doc = build_descriptor(chain, {"type": "Person", "name": "A"})
    title, _ = descriptor_facts(doc, str(a.keypair.dataset_id))
    assert title == doc["title"]
    assert descriptor_facts(doc, str(b.keypair.dataset_id)) == (None, None)
    reader = DatasetReader.open(a.path)
    doc = dict(doc, title="Custom title")
    claims = NameClaims("/x", descriptor=doc)
    assert resolve_dataset("r", LocalReplica(reader), claims).title == "Custom title"
    other = dict(doc, id=str(b.keypair.dataset_id))
    got = resolve_dataset("r", LocalReplica(reader), NameClaims("/x", descriptor=other))
    assert "describes another dataset" in got.notes[-1]
