"""The scripted hostile server (tests/support/hostile_server.py) does what it is told."""

from __future__ import annotations

import http.client
import socket
import time

import httpx
import pytest

from tests.support.hostile_server import Request, Rule, hostile_server


def test_serves_scripted_bytes_status_and_404() -> None:
    with hostile_server(max_life=30) as srv:
        srv.serve("/ipfs/x", b"forged", headers={"Content-Type": "text/plain"})
        srv.status("/ipfs/gone", 500)
        with httpx.Client() as c:
            r = c.get(srv.url + "/ipfs/x")
            assert (r.status_code, r.content) == (200, b"forged")
            assert r.headers["content-type"] == "text/plain"
            assert c.get(srv.url + "/ipfs/gone").status_code == 500
            assert c.get(srv.url + "/nothing").status_code == 404
        assert srv.count("/ipfs/") == 2
        assert srv.bytes_sent >= len(b"forged")


def test_query_routes_and_refuse_raw() -> None:
    with hostile_server(max_life=30) as srv:
        srv.serve("/ipfs/c", b"by path")
        srv.serve("/ipfs/c", b"car bytes", query={"format": "car"})
        srv.serve("/ipfs/c", b"raw bytes", query={"format": "raw"})
        with httpx.Client() as c:
            assert c.get(srv.url + "/ipfs/c").content == b"by path"
            assert c.get(srv.url + "/ipfs/c?format=car").content == b"car bytes"
            assert c.get(srv.url + "/ipfs/c?format=raw").content == b"raw bytes"
            srv.refuse_raw()
            assert c.get(srv.url + "/ipfs/c?format=raw").status_code == 406
            raw = {"Accept": "application/vnd.ipld.raw"}
            assert c.get(srv.url + "/ipfs/c", headers=raw).status_code == 406
            assert c.get(srv.url + "/ipfs/c?format=car").status_code == 200


def test_callable_route_sees_the_request() -> None:
    seen: list[Request] = []

    def answer(req: Request) -> Rule:
        seen.append(req)
        return Rule(body=req.body[::-1], status=201)

    with hostile_server(max_life=30) as srv:
        srv.route("/api/v0/block/get", answer)
        r = httpx.post(srv.url + "/api/v0/block/get?arg=abc", content=b"123")
        assert (r.status_code, r.content) == (201, b"321")
    assert seen[0].method == "POST" and seen[0].query == {"arg": "abc"}


def test_endless_body_is_lazy_and_the_client_can_stop_it() -> None:
    with hostile_server(max_life=30) as srv:
        srv.endless("/huge", fill=b"ab")
        with httpx.stream("GET", srv.url + "/huge") as r:
            assert "content-length" not in r.headers
            got = 0
            for chunk in r.iter_bytes():
                got += len(chunk)
                if got >= 1 << 20:
                    break
        assert got >= 1 << 20
        srv.endless("/announced", length=5 << 30, announce=True)
        with httpx.stream("GET", srv.url + "/announced") as r:
            assert r.headers["content-length"] == str(5 << 30)


def test_lying_content_length_and_cut_mid_body() -> None:
    with hostile_server(max_life=30) as srv:
        srv.cut("/cut", b"x" * 1000, after=100)
        srv.serve("/short", b"12345", content_length=10)
        for path in ("/cut", "/short"):
            with pytest.raises(httpx.HTTPError):
                httpx.get(srv.url + path)


def test_drip_and_hang_are_slow_but_stop_with_the_server() -> None:
    with hostile_server(max_life=30) as srv:
        srv.drip("/drip", b"abcd", piece=2, every=0.2)
        t = time.monotonic()
        assert httpx.get(srv.url + "/drip").content == b"abcd"
        assert time.monotonic() - t >= 0.2  # a lower bound: load only makes it longer
        srv.hang("/hang", seconds=30)
        with pytest.raises(httpx.ReadTimeout):
            httpx.get(srv.url + "/hang", timeout=0.3)
    # Stopped: the held handler woke up; the port no longer answers.
    host, port = srv.url.removeprefix("http://").split(":")
    with pytest.raises(OSError):
        conn = http.client.HTTPConnection(host, int(port), timeout=1)
        conn.request("GET", "/")
        conn.getresponse()


def test_stops_by_itself_after_max_life() -> None:
    # The client is made first (its TLS context alone took more than 0.3 s at load 18) and
    # the server's life leaves the request time to arrive: a max_life that ran out before
    # the connection was made failed the test with "Connection refused".
    with httpx.Client(timeout=50) as client, hostile_server(max_life=3.0) as srv:
        srv.hang("/hang", seconds=60, headers_first=True)
        # The read timeout (50 s) is below the 60 s hang: an empty body rather than a
        # ReadTimeout means max_life closed the connection, not the end of the hang.
        with client.stream("GET", srv.url + "/hang") as r:
            assert r.read() == b""  # no Content-Length: the close ends the (empty) body
        srv.stop()  # returns once the timer's stop has closed the socket
        assert srv.stopped
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", int(srv.url.rsplit(":", 1)[1])), timeout=1)
