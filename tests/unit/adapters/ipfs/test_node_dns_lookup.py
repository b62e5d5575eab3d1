"""node_dns_lookup: RPC `resolve /ipns/DOMAIN` (Kubo >= 0.26), `dns` on nodes without it.

Kubo itself is exercised in tests/integration/test_kubo_dnslink.py; here a scripted node
answers, to cover the fallback (no Kubo has `dns` any more) and hostile answers.
"""

import json

import pytest

from odfweb3.errors import ResolutionError
from odfweb3_ipfs.client.kubo import KuboClient
from odfweb3_ipfs.read.dns_lookup import node_dns_lookup
from tests.support.hostile_server import hostile_server

PATH = "/ipns/k51qzi5uqu5dlvj2baxnqndepeb86cbk3ng7n3i46uzyxzyqj2xjonzllnv0v8"


def answer(path: str) -> bytes:
    return json.dumps({"Path": path}).encode()


def test_resolve_first_then_dns_on_404():
    with hostile_server() as node:
        node.serve("/api/v0/resolve", answer(PATH), headers={"Content-Type": "application/json"})
        with KuboClient(node.url) as client:
            assert node_dns_lookup(client)("_dnslink.a.example") == [f"dnslink={PATH}"]
        (req,) = node.requests
        assert req.query == {"arg": "/ipns/a.example", "recursive": "false"}

    with hostile_server() as node:  # an older node: no `resolve` for domains, `dns` answers
        node.status("/api/v0/resolve", 404)
        node.serve("/api/v0/dns", answer(PATH), headers={"Content-Type": "application/json"})
        with KuboClient(node.url) as client:
            assert node_dns_lookup(client)("_dnslink.a.example") == [f"dnslink={PATH}"]
        assert [r.path for r in node.requests] == ["/api/v0/resolve", "/api/v0/dns"]


def test_refusal_is_a_resolution_error_and_odd_answers_are_no_record():
    with hostile_server() as node:
        node.serve(
            "/api/v0/resolve",
            b'{"Message":"could not resolve name","Code":0,"Type":"error"}',
            status=500,
            headers={"Content-Type": "application/json"},
        )
        with KuboClient(node.url) as client, pytest.raises(ResolutionError, match="_dnslink"):
            node_dns_lookup(client)("_dnslink.a.example")
    for body in (answer("/ipns/" + "k" * 5000), b'{"Path": 7}', b"[]"):
        with hostile_server() as node:
            node.serve("/api/v0/resolve", body, headers={"Content-Type": "application/json"})
            with KuboClient(node.url) as client:
                assert node_dns_lookup(client)("_dnslink.a.example") == []
