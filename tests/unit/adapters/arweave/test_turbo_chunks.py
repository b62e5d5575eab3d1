"""The chunked upload's planner (pure) and a bundler that lies about a chunked upload.

The real service is driven in tests/integration/test_turbo_chunked.py (a large item in
chunks, a stop mid-chunks and the rerun). Here, through tests/support/hostile_server.py, the
answers it cannot be made to give: an upload id that is not an id, chunk lists for another
upload or naming chunks we never sent, a finalize that never completes, a receipt for
another item, a failed assembly. Each is one error with its exit code, and the checkpoint
entry says only what happened (no receipt is ever kept from a lie).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from odfweb3.errors import BackendRejected, FormatError, NotYetConfirmed, SignatureError
from odfweb3_arweave.client.turbo import TurboClient
from odfweb3_arweave.formats.ans104 import create_data_item, encode_data_item
from odfweb3_arweave.formats.b64 import b64url_encode
from odfweb3_arweave.formats.receipt import Receipt, encode_receipt, receipt_message
from odfweb3_arweave.publish.turbo_chunks import (
    MIN_CHUNK_BYTES,
    chunks_to_send,
    plan_chunks,
    resumed_bytes,
    send_chunked,
)
from odfweb3_arweave.wallet import Wallet
from tests.support.hostile_server import HostileServer, Request, Rule, hostile_server

C = MIN_CHUNK_BYTES


# -- the planner ---------------------------------------------------------------------------


def test_plan_chunks_cuts_at_the_chunk_size() -> None:
    assert plan_chunks(2 * C + 7, C) == ((0, C), (C, C), (2 * C, 7))
    assert plan_chunks(2 * C, C) == ((0, C), (C, C))
    assert plan_chunks(1, C) == ((0, 1),)


@pytest.mark.parametrize("chunk", [C - 1, 501 << 20])
def test_plan_chunks_refuses_a_size_the_bundler_does_not_take(chunk: int) -> None:
    with pytest.raises(FormatError, match="turbo_chunk_bytes"):
        plan_chunks(3 * C, chunk)


def test_plan_chunks_refuses_more_parts_than_s3_takes() -> None:
    with pytest.raises(FormatError, match="10000 chunks"):
        plan_chunks(10_001 * C, C)


def test_chunks_to_send_skips_what_the_bundler_holds_of_ours() -> None:
    planned = plan_chunks(3 * C - 5, C)
    held, rest = chunks_to_send(planned, ((C, C),), frozenset({0, C}), where="w")
    assert held == ((C, C),) and rest == ((0, C), (2 * C, C - 5))
    # nothing held: everything goes, even what we sent before (the bundler lost it)
    assert chunks_to_send(planned, (), frozenset({0, C}), where="w") == ((), planned)


@pytest.mark.parametrize(
    "listed",
    [
        ((2 * C, C - 5),),  # planned, but never attempted
        ((0, C - 1),),  # attempted offset, another size
        ((7, C),),  # not one of our offsets
        ((3 * C, 10),),  # past the end
    ],
)
def test_chunks_to_send_refuses_a_chunk_we_never_sent(listed: tuple[tuple[int, int]]) -> None:
    planned = plan_chunks(3 * C - 5, C)
    with pytest.raises(BackendRejected, match="never sent") as err:
        chunks_to_send(planned, listed, frozenset({0, C}), where="Turbo bundler X upload U")
    assert err.value.exit_code == 69 and "\n" not in str(err.value)


def test_resumed_bytes_counts_the_confirmed_chunks() -> None:
    entry = {"itemId": "I", "size": 2 * C + 3, "chunkSize": C, "sent": [0, 2 * C]}
    assert resumed_bytes(entry, "I") == C + 3
    assert resumed_bytes(entry, "other") == 0
    assert resumed_bytes(None, "I") == 0
    assert resumed_bytes({**entry, "sent": "x"}, "I") == 0


# -- a lying bundler ---------------------------------------------------------------------


class _Clock:
    """A test clock: ``sleep`` moves it, nothing waits."""

    def __init__(self) -> None:
        self.now = 0.0

    def sleep(self, s: float) -> None:
        self.now += max(s, 0.5)

    def monotonic(self) -> float:
        return self.now


def _receipt(bundler: Wallet, item_id: str) -> dict[str, Any]:
    base = Receipt(item_id, "0.2.0", 500, 1764600000000, bundler.owner, b"")
    doc = encode_receipt(base)
    doc["signature"] = b64url_encode(bundler.sign(receipt_message(base), salt_length=0))
    return doc | {"winc": "0", "dataCaches": ["arweave.net"], "owner": "x"}


class _Bundler:
    """A scripted /chunks service: honest by default, each lie switched on by a test."""

    def __init__(self, server: HostileServer, bundler: Wallet, item_id: str) -> None:
        self.server, self.bundler, self.item_id = server, bundler, item_id
        self.upload_id = "Up1oad.id_-9"
        self.chunks: dict[int, int] = {}
        self.status = "FINALIZED"
        self.receipt_for = item_id
        self.listed_extra: list[list[int]] = []
        self.listed_id: str | None = None
        info = {"version": "0.2.0", "addresses": {"arweave": bundler.address}}
        server.serve("/v1/info", json.dumps(info).encode())
        server.route("/v1/chunks/arweave/-1/-1", self._create)
        base = f"/v1/chunks/arweave/{self.upload_id}"
        server.route(f"{base}/-1", self._info)
        server.route(f"{base}/finalize", lambda r: Rule("bytes", 202, b""))
        server.route(f"{base}/status", self._status)
        for offset in range(0, 20 * C, C):
            server.route(f"{base}/{offset}", self._chunk)

    def _json(self, doc: object, status: int = 200) -> Rule:
        return Rule("bytes", status, json.dumps(doc).encode(), {"content-type": "application/json"})

    def _create(self, req: Request) -> Rule:
        return self._json({"id": self.upload_id, "min": C, "max": 500 << 20, "chunkSize": C})

    def _info(self, req: Request) -> Rule:
        chunks = [[o, n] for o, n in sorted(self.chunks.items())] + self.listed_extra
        return self._json({"id": self.listed_id or self.upload_id, "size": C, "chunks": chunks})

    def _chunk(self, req: Request) -> Rule:
        offset = int(req.path.rsplit("/", 1)[1])
        self.chunks[offset] = len(req.body)
        return Rule("bytes", 200, b"")

    def _status(self, req: Request) -> Rule:
        if self.status != "FINALIZED":
            return self._json({"status": self.status, "timestamp": 1})
        receipt = _receipt(self.bundler, self.receipt_for)
        return self._json({"status": "FINALIZED", "timestamp": 1, "receipt": receipt})

    def posted(self) -> list[str]:
        return [
            r.path
            for r in self.server.requests
            if r.method == "POST" and re.search(r"/\d+$", r.path)
        ]


@pytest.fixture
def item(tmp_path, fixed_wallet: Wallet):
    """A signed item of two chunks and a bit, spooled in a file at offset 32."""
    data_item = create_data_item(fixed_wallet, b"\x01" * (2 * C + 100))
    raw = encode_data_item(data_item)
    path = tmp_path / "spool.bundle"
    path.write_bytes(b"\0" * 32 + raw)
    return data_item.id_b64, path, len(raw)


def _send(
    client: TurboClient, item: Any, saved: Any, kept: list[Any] | None = None, timeout: float = 60
) -> Any:
    """send_chunked with a test clock; ``kept`` gets every checkpoint entry it saves."""
    item_id, path, size = item
    clock = _Clock()
    out = kept if kept is not None else []
    with open(path, "rb") as f:
        return send_chunked(
            client,
            f,
            (item_id, 32, size),
            saved,
            out.append,
            chunk_size=C,
            timeout=timeout,
            sleep=clock.sleep,
            monotonic=clock.monotonic,
            poll_interval=2.0,
            advance=lambda n: None,
        )


def _last(kept: list[Any]) -> Any:
    return json.loads(json.dumps(kept[-1])) if kept else None


def test_an_honest_chunked_upload(item, session_wallet: Wallet) -> None:
    with hostile_server() as server, TurboClient(server.url) as client:
        bundler = _Bundler(server, session_wallet, item[0])
        kept: list[Any] = []
        receipt = _send(client, item, None, kept)
        assert receipt.id == item[0] and receipt.signer == session_wallet.address
        assert sorted(bundler.chunks) == [0, C, 2 * C]
        assert sum(bundler.chunks.values()) == item[2]
        entry = _last(kept)
        assert entry["finalizing"] and entry["sent"] == [0, C, 2 * C]


def test_a_rerun_sends_only_what_the_bundler_lacks(item, session_wallet: Wallet) -> None:
    with hostile_server() as server, TurboClient(server.url) as client:
        bundler = _Bundler(server, session_wallet, item[0])
        bundler.chunks = {0: C, C: C}  # the second was being sent when the run stopped
        saved = {
            "itemId": item[0],
            "size": item[2],
            "uploadId": bundler.upload_id,
            "chunkSize": C,
            "sent": [0],
            "sending": C,
            "finalizing": False,
        }
        _send(client, item, saved)
        assert bundler.posted() == [f"/v1/chunks/arweave/{bundler.upload_id}/{2 * C}"]
        assert server.count("/-1/-1") == 0  # no new upload


def test_an_upload_id_that_is_no_id_is_refused_before_a_chunk(item, session_wallet: Wallet) -> None:
    with hostile_server() as server, TurboClient(server.url) as client:
        bundler = _Bundler(server, session_wallet, item[0])
        bundler.upload_id = "../../v1/tx"
        with pytest.raises(BackendRejected, match="no upload id") as err:
            _send(client, item, None)
        assert err.value.exit_code == 69 and bundler.posted() == []


def test_a_chunk_list_for_another_upload_is_refused(item, session_wallet: Wallet) -> None:
    with hostile_server() as server, TurboClient(server.url) as client:
        bundler = _Bundler(server, session_wallet, item[0])
        bundler.listed_id = "someone-else"
        saved = {"itemId": item[0], "size": item[2], "uploadId": bundler.upload_id}
        saved |= {"chunkSize": C, "sent": [0], "sending": None}
        with pytest.raises(BackendRejected, match="not ours") as err:
            _send(client, item, saved)
        assert err.value.exit_code == 69 and "\n" not in str(err.value)
        assert bundler.posted() == []


def test_a_chunk_list_claiming_a_chunk_never_sent_is_refused(item, session_wallet: Wallet) -> None:
    with hostile_server() as server, TurboClient(server.url) as client:
        bundler = _Bundler(server, session_wallet, item[0])
        bundler.chunks = {0: C}
        bundler.listed_extra = [[C, C]]  # we never sent it
        saved = {"itemId": item[0], "size": item[2], "uploadId": bundler.upload_id}
        saved |= {"chunkSize": C, "sent": [0], "sending": None}
        with pytest.raises(BackendRejected, match="never sent") as err:
            _send(client, item, saved)
        assert err.value.exit_code == 69 and bundler.posted() == []


def test_an_unknown_upload_on_resume_starts_a_new_one(item, session_wallet: Wallet) -> None:
    with hostile_server() as server, TurboClient(server.url) as client:
        bundler = _Bundler(server, session_wallet, item[0])
        saved = {"itemId": item[0], "size": item[2], "uploadId": "forgotten-id"}
        saved |= {"chunkSize": C, "sent": [0, C], "sending": None}
        _send(client, item, saved)  # 404 for forgotten-id: a new upload, every chunk
        assert server.count("/-1/-1") == 1 and len(bundler.posted()) == 3


def test_a_finalize_that_never_completes_stops_at_the_deadline(
    item, session_wallet: Wallet
) -> None:
    with hostile_server() as server, TurboClient(server.url) as client:
        bundler = _Bundler(server, session_wallet, item[0])
        bundler.status = "VALIDATING"
        kept: list[Any] = []
        with pytest.raises(NotYetConfirmed, match="within 30 s") as err:
            _send(client, item, None, kept, timeout=30.0)
        assert err.value.exit_code == 75 and "\n" not in str(err.value)
        entry = _last(kept)
        assert entry["finalizing"] is True  # the rerun asks again, sends nothing
        asked = server.count("/status")
        assert 2 <= asked <= 20  # bounded: about timeout / poll interval

        # The rerun asks; now it is done: no chunk is sent again.
        bundler.status = "FINALIZED"
        before = len(bundler.posted())
        receipt = _send(client, item, entry)
        assert receipt.id == item[0] and len(bundler.posted()) == before


def test_a_receipt_for_another_item_is_refused(item, session_wallet: Wallet) -> None:
    with hostile_server() as server, TurboClient(server.url) as client:
        bundler = _Bundler(server, session_wallet, item[0])
        bundler.receipt_for = "B" * 43
        with pytest.raises(SignatureError, match="is for item") as err:
            _send(client, item, None)
        assert err.value.exit_code == 65 and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("state", "words"), [("UNDERFUNDED", "no Turbo credits"), ("INVALID", "refused")]
)
def test_a_failed_assembly_is_one_line_and_forgotten(
    item, session_wallet: Wallet, state: str, words: str
) -> None:
    with hostile_server() as server, TurboClient(server.url) as client:
        bundler = _Bundler(server, session_wallet, item[0])
        bundler.status = state
        kept: list[Any] = []
        with pytest.raises(BackendRejected, match=words) as err:
            _send(client, item, None, kept)
        assert err.value.exit_code == 69 and "\n" not in str(err.value)
        assert kept[-1] is None  # forgotten: the rerun starts a new upload
