"""Pure parts of the IPFS gateway replica: DNSLink TXT parsing, the IPNS replay memory."""

from datetime import UTC, datetime, timedelta

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from odfweb3.errors import ReplicaMismatch, ResolutionError
from odfweb3_ipfs.formats.dnslink import parse_dnslink
from odfweb3_ipfs.formats.ipns import create_record
from odfweb3_ipfs.read.replay_memory import SequenceMemory

NOW = datetime(2030, 1, 1, tzinfo=UTC)


def test_dnslink_first_valid_sorted():
    # dnslink-std: only "dnslink=" entries with a /namespace/identifier count; lexicographic first
    txt = [
        "v=spf1 -all",
        "dnslink=/ipns/k51qzi5uqu5dlvj2baxnqndepeb86cbk3ng7n3i46uzyxzyqj2xjonzllnv0v8",
        "dnslink=/ipfs/bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi",
        "dnslink=junk",
        "dnslink=/ipfs/",
    ]
    assert parse_dnslink("example.org", txt).startswith("/ipfs/bafybei")
    assert parse_dnslink("x", [" dnslink=/ipns/example.net "]) == "/ipns/example.net"
    with pytest.raises(ResolutionError, match=r"_dnslink\.example\.org"):
        parse_dnslink("example.org", ["dnslink=junk", "other"])


def test_memory_refuses_replay_and_equivocation(tmp_path):
    key = Ed25519PrivateKey.generate()
    memory = SequenceMemory(tmp_path / "seen.json")
    r0 = create_record(key, "/ipfs/bafkqaaa", 0, timedelta(hours=1), now=NOW)
    r1 = create_record(key, "/ipfs/bafkqaab", 1, timedelta(hours=1), now=NOW)
    memory.check("k51name", r0)
    memory.remember("k51name", r1)
    memory.remember("k51name", r0)  # older: not stored over the newer
    memory.check("k51name", r1)
    with pytest.raises(ReplicaMismatch, match=r"served sequence 0 .*sequence 1 was seen"):
        memory.check("k51name", r0)
    fork = create_record(key, "/ipfs/bafkqaac", 1, timedelta(hours=1), now=NOW)
    with pytest.raises(ReplicaMismatch, match="two different records with sequence 1"):
        memory.check("k51name", fork)
    memory.check("another", r0)  # per name
    assert SequenceMemory(tmp_path / "seen.json")._load()["k51name"]["sequence"] == 1
