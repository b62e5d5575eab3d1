"""Gateway faults a real gateway cannot be made to produce on demand (httpx.MockTransport is
allowed here only): retries with backoff, and errors translated once, naming the gateway, the
endpoint, the status and the gateway's message."""

from __future__ import annotations

import httpx
import pytest

from odfweb3.errors import BackendRejected, BackendUnavailable
from odfweb3_arweave.client.gateway import ArweaveGateway, format_winston

URL = "http://gw.test:1984"


def gateway(handler, **kw) -> tuple[ArweaveGateway, list[float]]:
    sleeps: list[float] = []
    gw = ArweaveGateway(URL, transport=httpx.MockTransport(handler), sleep=sleeps.append, **kw)
    return gw, sleeps


def test_connection_errors_are_retried_then_unavailable() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        raise httpx.ConnectError("refused", request=request)

    gw, sleeps = gateway(handler, retries=3)
    with pytest.raises(BackendUnavailable) as err:
        gw.price(1000)
    assert len(calls) == 4 and len(sleeps) == 3
    assert URL in str(err.value) and "/price/{bytes}" in str(err.value)
    assert "ODFWEB3_ARWEAVE_GATEWAY" in str(err.value)


def test_5xx_then_success_is_retried() -> None:
    answers = [httpx.Response(502, text="bad gateway"), httpx.Response(200, text="12345")]
    gw, sleeps = gateway(lambda r: answers.pop(0))
    assert gw.balance("addr") == 12345
    assert len(sleeps) == 1


def test_timeout_names_the_endpoint() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    gw, _ = gateway(handler, retries=0)
    with pytest.raises(BackendUnavailable, match="timed out"):
        gw.tx_status("x" * 43)


def test_410_on_post_tx_says_insufficient_balance() -> None:
    gw, sleeps = gateway(
        lambda r: httpx.Response(410, json={"code": 410, "msg": "You don't have enough tokens"})
    )
    with pytest.raises(BackendRejected) as err:
        gw._read("POST", "/tx", "/tx", 1024, body=b"{}")
    e = err.value
    assert e.status == 410 and e.detail == "You don't have enough tokens"
    assert "insufficient balance" in str(e) and URL in str(e) and "POST /tx" in str(e)
    assert sleeps == []  # a 4xx is final


def test_persistent_503_gives_rejected_with_message() -> None:
    gw, sleeps = gateway(lambda r: httpx.Response(503, json={"error": "overloaded"}), retries=2)
    with pytest.raises(BackendRejected) as err:
        gw.info()
    assert err.value.status == 503 and "overloaded" in str(err.value)
    assert len(sleeps) == 2


def test_rate_limit_hint() -> None:
    gw, _ = gateway(lambda r: httpx.Response(429, text="slow down"), retries=0)
    with pytest.raises(BackendRejected, match="rate limited"):
        gw.tx_anchor()


def test_not_a_number_and_not_json() -> None:
    gw, _ = gateway(lambda r: httpx.Response(200, text="<html>hi</html>"))
    with pytest.raises(BackendRejected, match="not a number"):
        gw.price(1)
    with pytest.raises(BackendRejected, match="not JSON"):
        gw.info()


def test_graphql_errors_are_rejected() -> None:
    gw, _ = gateway(lambda r: httpx.Response(200, json={"errors": [{"message": "bad field"}]}))
    with pytest.raises(BackendRejected, match="bad field"):
        gw.graphql("query { x }", {})


def test_bad_anchor_is_rejected() -> None:
    gw, _ = gateway(lambda r: httpx.Response(200, text="short"))
    with pytest.raises(BackendRejected, match="anchor"):
        gw.tx_anchor()


def test_status_pending_202_and_not_found() -> None:
    answers = [httpx.Response(202, text="Pending"), httpx.Response(404, text="Not Found")]
    gw, _ = gateway(lambda r: answers.pop(0))
    assert gw.tx_status("a" * 43).state == "pending"
    assert gw.tx_status("a" * 43).state == "not_found"


def test_format_winston() -> None:
    assert format_winston(1_500_000_000_000) == "1500000000000 winston (1.500000000000 AR)"
