"""The delegated routing client (IPIP-379) against hostile endpoints: bounded, one-line errors.

The happy path and Kubo's own answers are in tests/integration/test_kubo_routing_put.py.
"""

import pytest

from odfweb3.errors import BackendRejected, UsageError
from odfweb3_ipfs.client.routing_v1 import (
    IPNS_RECORD_TYPE,
    MAX_ERROR_BODY,
    get_ipns_record,
    ipns_url,
    put_ipns_record,
    routing_base,
)
from odfweb3_ipfs.formats.ipns import MAX_RECORD_SIZE
from odfweb3_ipfs.formats.libp2p_keys import parse_ipns_name
from tests.support.hostile_server import Rule, hostile_server

NAME = parse_ipns_name("k51qzi5uqu5dlvj2baxnqndepeb86cbk3ng7n3i46uzyxzyqj2xjonzllnv0v8")
PATH = f"/routing/v1/ipns/{NAME}"


def test_urls():
    assert routing_base("http://h:1/routing/v1/") == "http://h:1"
    assert ipns_url("https://r.example/prefix", NAME) == f"https://r.example/prefix{PATH}"
    for bad in ("ftp://h", "h:8080", "http://h/?q=1"):
        with pytest.raises(UsageError):
            routing_base(bad)


def test_put_sends_the_record_as_is_with_the_media_type():
    with hostile_server() as srv:
        srv.serve(PATH, b"", status=200)
        put_ipns_record(srv.url, NAME, b"record-bytes")
        (req,) = srv.requests
    assert (req.method, req.body) == ("PUT", b"record-bytes")
    assert req.headers["content-type"] == IPNS_RECORD_TYPE


def test_put_refusal_reads_a_bounded_message():
    with hostile_server() as srv:
        srv.route(PATH, Rule("endless", 500, fill=b"e"))  # an error body that never ends
        with pytest.raises(BackendRejected) as info:
            put_ipns_record(srv.url, NAME, b"r")
        # the client stopped after MAX_ERROR_BODY bytes; the rest is loopback socket buffers
        assert srv.bytes_sent < 32 << 20
    assert info.value.status == 500 and f"over {MAX_ERROR_BODY} bytes" in str(info.value)
    with pytest.raises(UsageError, match="over the"):
        put_ipns_record("http://127.0.0.1:9", NAME, bytes(MAX_RECORD_SIZE + 1))


def test_get_refuses_wrong_type_oversize_and_maps_404():
    with hostile_server() as srv:
        srv.status(PATH, 404)
        assert get_ipns_record(srv.url, NAME) is None
    with hostile_server() as srv:
        srv.serve(PATH, b"<html>", headers={"Content-Type": "text/html"})
        with pytest.raises(BackendRejected, match=r"not application/vnd\.ipfs\.ipns-record"):
            get_ipns_record(srv.url, NAME)
    with hostile_server() as srv:
        srv.serve(PATH, bytes(MAX_RECORD_SIZE + 1), headers={"Content-Type": IPNS_RECORD_TYPE})
        with pytest.raises(BackendRejected, match="over 10240 bytes"):
            get_ipns_record(srv.url, NAME)
