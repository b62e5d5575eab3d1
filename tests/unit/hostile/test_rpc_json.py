"""Deep or non-UTF-8 JSON answers from a node or gateway are one line.

A hostile server on loopback answers the Kubo RPC (``/api/v0/id``) and the Arweave
gateway (``/info``, ``/graphql``, ``/tx/{id}/status``) with ``[[[[…`` a million deep
or with bytes that are not UTF-8: each is an ``OdfWeb3Error`` of one line naming the
endpoint, never a ``RecursionError`` or ``UnicodeDecodeError``.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from odfweb3.errors import OdfWeb3Error
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_ipfs.client.kubo import KuboClient
from tests.support.hostile_server import hostile_server

DEEP = b"[" * 1_000_000
NOT_UTF8 = b'{"height": "\xff\xfe"}'
TX = "a" * 43

CALLS: dict[str, tuple[str, Callable[[str], object]]] = {
    "kubo-id": ("/api/v0/id", lambda url: KuboClient(url, retries=0).call_json("id")),
    "arweave-info": ("/info", lambda url: ArweaveGateway(url, retries=0).info()),
    "arweave-graphql": (
        "/graphql",
        lambda url: ArweaveGateway(url, retries=0).graphql("{ x }", {}),
    ),
    "arweave-status": (
        f"/tx/{TX}/status",
        lambda url: ArweaveGateway(url, retries=0).tx_status(TX),
    ),
}


@pytest.mark.parametrize("body", [DEEP, NOT_UTF8], ids=["deep", "not-utf8"])
@pytest.mark.parametrize("call", sorted(CALLS))
def test_hostile_json_answer_is_one_line(call: str, body: bytes) -> None:
    path, run = CALLS[call]
    with hostile_server(max_life=60) as server:
        server.serve(path, body, headers={"Content-Type": "application/json"})
        with pytest.raises(OdfWeb3Error) as info:
            run(server.url)
    message = str(info.value)
    assert "\n" not in message and len(message) < 600, message
