"""tests/support/doh.py (the loopback DNS-over-HTTP responder Kubo's DNS.Resolvers points at)
and the DNSLink record formatting (adapters/odfweb3_ipfs/formats/dnslink.py)."""

import struct

import httpx
import pytest

from odfweb3.errors import UsageError
from odfweb3_ipfs.formats.dnslink import check_domain, dnslink_record
from tests.support.doh import TYPE_TXT, doh_server, encode_txt_answer, parse_question


def query(name: str, qtype: int = TYPE_TXT, qid: int = 0x1234) -> bytes:
    labels = b"".join(bytes([len(p)]) + p.encode() for p in name.rstrip(".").split("."))
    return (
        struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
        + labels
        + b"\0"
        + struct.pack(">HH", qtype, 1)
    )


def test_wire_answer():
    q = query("_dnslink.Example.TEST")
    assert parse_question(q)[:4] == (0x1234, "_dnslink.example.test.", TYPE_TXT, 1)
    long = "dnslink=/ipns/" + "k" * 300  # > 255 bytes: split into character-strings
    a = encode_txt_answer(q, [long])
    qid, flags, qd, an = struct.unpack(">HHHH", a[:8])
    assert (qid, flags & 0x800F, qd, an) == (0x1234, 0x8000, 1, 1)
    rdata = a[len(q) + 12 :]
    assert rdata[0] == 255 and rdata[1:256] == long.encode()[:255]
    assert rdata[256] == len(long) - 255 and rdata[257:] == long.encode()[255:]
    nx = encode_txt_answer(q, None)
    assert struct.unpack(">H", nx[2:4])[0] & 0xF == 3  # NXDOMAIN
    with pytest.raises(ValueError):
        parse_question(b"\0" * 5)


def test_server_answers_post_and_records_queries():
    with doh_server({"_dnslink.a.test": ["dnslink=/ipns/x"]}) as dns:
        post = lambda body: httpx.post(  # noqa: E731
            dns.url, content=body, headers={"Content-Type": "application/dns-message"}
        )
        r = post(query("_dnslink.a.test"))
        assert r.status_code == 200 and r.headers["content-type"] == "application/dns-message"
        assert r.content.endswith(b"\x0fdnslink=/ipns/x")
        assert post(b"\0" * 3).status_code == 400
        assert httpx.post(dns.url, content=query("x.test")).status_code == 415
        assert dns.queries == ["_dnslink.a.test."]


def test_dnslink_record_and_domain_checks():
    rec = dnslink_record("Data.Example.ORG.", "k51qzi5uqu5d")
    assert rec.zone_line() == '_dnslink.data.example.org TXT "dnslink=/ipns/k51qzi5uqu5d"'
    assert rec.to_json()["value"] == "dnslink=/ipns/k51qzi5uqu5d"
    for bad in ("localhost", "a..b", "-a.org", "a-.org", "a b.org", "x" * 64 + ".org", "é.org"):
        with pytest.raises(UsageError, match="not a domain name"):
            check_domain(bad)
    assert check_domain("xn--bcher-kva.example") == "xn--bcher-kva.example"
