"""The Pinning Service API client: answers checked, bounded, tokens never shown.

The live behaviour (pins, replication, restarts, a refused token, a failed pin) is tested on
a real IPFS Cluster in tests/integration/cluster. Here: what a real service cannot be made to
do on purpose — answers of the wrong shape or size, another CID, a replace that works
(IPFS Cluster's does not: docs/online.md) — through httpx.MockTransport.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from odfweb3.config import Config
from odfweb3.errors import BackendRejected, BackendUnavailable, FormatError, UsageError
from odfweb3_ipfs.client.pinning import (
    MAX_ANSWER,
    PinningAuthError,
    PinningClient,
    cid_segment,
    decode_pin_status,
    encode_pin,
    redact,
)
from odfweb3_ipfs.publish.pinning_config import service_names, token_env_name

ROOT = Path(__file__).resolve().parents[4]
CID = "bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi"
OTHER = "bafkreibpmsjuqdvcgjat6job2dyepgswvawrnlda6vlolommnivog6v5ky"
TOKEN = "s3cret-t0ken-value"


def status(cid: str = CID, st: str = "queued", rid: str = "r1", **extra: Any) -> dict[str, Any]:
    return {
        "requestid": rid,
        "status": st,
        "created": "2026-12-01T10:00:00Z",
        "pin": {"cid": cid, "name": "odf:x", "meta": {"odf_head": "h"}},
        "delegates": ["/ip4/127.0.0.1/tcp/4001/p2p/12D3KooW"],
        **extra,
    }


def client(handler: Any, **kw: Any) -> PinningClient:
    return PinningClient(
        "svc",
        "http://pins.test/psa",
        TOKEN,
        transport=httpx.MockTransport(handler),
        sleep=lambda s: None,
        **kw,
    )


def test_decode_pin_status_checks_the_schema() -> None:
    ok = decode_pin_status(status(info={"status_details": "queue 3 of 9"}), "here")
    assert ok.cid == CID and ok.status == "queued" and ok.reason == "queue 3 of 9"
    bad = [
        [],
        status(st="done"),
        status(rid=""),
        status(rid="../../etc"),
        status(rid="x" * 300),
        {**status(), "pin": {}},
        {**status(), "info": {"a": 1}},
        {**status(), "delegates": ["x"] * 21},
        {**status(), "pin": {"cid": CID, "meta": ["not", "a", "map"]}},
    ]
    for data in bad:
        with pytest.raises(FormatError):
            decode_pin_status(data, "here")


def test_encode_pin_refuses_what_the_spec_forbids() -> None:
    body = encode_pin(CID, name="n", origins=["/a", "/a", "/b"], meta={"k": "v"})
    assert body == {"cid": CID, "name": "n", "origins": ["/a", "/b"], "meta": {"k": "v"}}
    assert len(encode_pin(CID, origins=[f"/o{i}" for i in range(30)])["origins"]) == 20
    with pytest.raises(ValueError):
        encode_pin(CID, name="x" * 256)


def test_add_sends_bearer_token_and_refuses_an_answer_for_another_cid() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(202, json=status(cid=OTHER))

    with pytest.raises(FormatError, match="not " + CID) as err:
        client(handler).add(encode_pin(CID))
    assert seen[0].headers["authorization"] == f"Bearer {TOKEN}"
    assert json.loads(seen[0].content) == {"cid": CID}
    assert TOKEN not in str(err.value)


def test_refused_token_is_exit_77_and_the_token_never_echoed() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json={"error": {"reason": "UNAUTHORIZED", "details": TOKEN}})

    c = client(handler)
    with pytest.raises(PinningAuthError) as err:
        c.check_auth()
    assert err.value.exit_code == 77
    assert TOKEN not in str(err.value) and "<token>" in str(err.value)
    assert TOKEN not in repr(c)


def test_oversized_answer_is_refused() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=b"{" + b" " * (MAX_ANSWER + 10) + b"}")

    with pytest.raises(FormatError, match="larger than"):
        client(handler).get("r1")


def test_service_error_reason_is_one_line_and_short() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            409, json={"error": {"reason": "INSUFFICIENT_FUNDS", "details": "a\nb" + "x" * 500}}
        )

    with pytest.raises(BackendRejected) as err:
        client(handler).add(encode_pin(CID))
    text = str(err.value)
    assert "\n" not in text and "INSUFFICIENT_FUNDS" in text and len(text) < 400


def test_replace_posts_to_the_request_and_wait_follows_to_pinned() -> None:
    calls: list[tuple[str, str]] = []
    states = iter(["queued", "pinning", "pinned"])

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append((request.method, request.url.path))
        if request.method == "POST":
            return httpx.Response(202, json=status(rid="new", st="queued"))
        return httpx.Response(200, json=status(rid="new", st=next(states)))

    c = client(handler)
    first = c.replace("old", encode_pin(CID))
    seen: list[str] = []
    done = c.wait(first.requestid, CID, deadline=1e18, on_status=lambda s: seen.append(s.status))
    assert calls[0] == ("POST", "/psa/pins/old")
    assert done.status == "pinned" and seen[-1] == "pinned" and "pinning" in seen


def test_failed_status_carries_the_service_reason() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=status(st="failed", info={"status_details": "DAG too big"}))

    st = client(handler).wait("r1", CID, deadline=1e18)
    assert st.status == "failed" and st.reason == "DAG too big"


def test_wait_is_bounded_by_its_deadline() -> None:
    now = [0.0]

    def handler(request: httpx.Request) -> httpx.Response:
        now[0] += 1.0
        return httpx.Response(200, json=status(st="queued"))

    c = PinningClient(
        "svc",
        "http://pins.test",
        TOKEN,
        transport=httpx.MockTransport(handler),
        clock=lambda: now[0],
        sleep=lambda s: now.__setitem__(0, now[0] + s),
    )
    with pytest.raises(BackendUnavailable, match="deadline"):
        c.wait("r1", CID, deadline=10.0)
    assert now[0] < 20


def test_a_request_id_that_is_not_url_safe_is_never_put_in_a_path() -> None:
    with pytest.raises(FormatError):
        client(lambda r: httpx.Response(200)).get("../admin")


def test_service_names_and_token_variable() -> None:
    cfg = Config(
        data={"pinning": {"services": {"a": {"endpoint": "http://x"}}, "publish_to": ["a"]}}
    )
    assert service_names(cfg, "") == ["a"] and service_names(cfg, "a") == ["a"]
    with pytest.raises(UsageError, match="no service 'b'"):
        service_names(cfg, "b")
    assert token_env_name("my-pins") == "ODFWEB3_PINNING_MY_PINS_TOKEN"


def test_cluster_version_is_the_same_in_the_build_script_and_the_test_support() -> None:
    from tests.support.cluster import CLUSTER_VERSION

    script = (ROOT / "tools" / "go_nodes.sh").read_text("utf-8")
    built = re.search(r"^CLUSTER_VERSION=v(\S+)$", script, re.M)
    assert built and built.group(1) == CLUSTER_VERSION


def test_a_dripping_service_is_cut_at_the_call_timeout() -> None:
    # One byte every 0.3 s keeps each read alive; the shared HTTP layer's deadline ends the
    # call, with one line naming the service and its timeout.
    from tests.support.hostile_server import hostile_server

    with hostile_server() as srv:
        srv.drip("/psa/pins", b'{"count":0,"results":[]}' * 100, every=0.3)
        c = PinningClient("slow", f"{srv.url}/psa", TOKEN, timeout=1.0)
        with pytest.raises(BackendUnavailable, match="no answer within 1 s") as err:
            c.check_auth()
        # Cut mid-drip (the whole answer takes 12 min) after one call, not retried.
        assert srv.bytes_sent < 2400 and srv.count("/psa/pins") == 1
        assert TOKEN not in str(err.value) and "\n" not in str(err.value)


def _config(service: dict[str, Any]) -> Config:
    return Config(data={"pinning": {"services": {"my-pins": {"endpoint": "http://x", **service}}}})


def test_token_file_readable_by_others_is_refused(tmp_path: Path) -> None:
    from odfweb3_ipfs.publish.pinning_config import load_service

    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    path.chmod(0o644)
    with pytest.raises(UsageError, match="chmod 600") as err:
        load_service(_config({"token_file": str(path)}), "my-pins", {})
    assert TOKEN not in str(err.value)
    path.chmod(0o600)
    svc = load_service(_config({"token_file": str(path)}), "my-pins", {})
    assert TOKEN not in repr(svc) and TOKEN not in repr(svc.client)
    path.write_text("\n")
    with pytest.raises(UsageError, match="empty"):
        load_service(_config({"token_file": str(path)}), "my-pins", {})


def test_token_from_the_environment_or_a_one_line_error() -> None:
    from odfweb3_ipfs.publish.pinning_config import load_service

    svc = load_service(_config({}), "my-pins", {"ODFWEB3_PINNING_MY_PINS_TOKEN": TOKEN})
    assert svc.client.endpoint == "http://x" and TOKEN not in repr(svc)
    with pytest.raises(UsageError, match="ODFWEB3_PINNING_MY_PINS_TOKEN"):
        load_service(_config({}), "my-pins", {})


def test_redact_replaces_the_token_in_every_string_keys_included() -> None:
    doc = {"a": [TOKEN, {"x": f"Bearer {TOKEN}"}], TOKEN: 1, "n": 2}
    assert redact(doc, TOKEN) == {"a": ["<token>", {"x": "Bearer <token>"}], "<token>": 1, "n": 2}
    assert redact(doc, "") is doc


def test_a_cid_must_parse_before_it_goes_into_a_url_path() -> None:
    assert cid_segment(CID, "here") == CID
    for bad in ("../../admin", "bafy?x=1", "", "x" * 300, f"{CID}/../x"):
        with pytest.raises(FormatError, match="not a CID"):
            cid_segment(bad, "here")

    def handler(request: httpx.Request) -> httpx.Response:
        raise AssertionError(f"a request was sent: {request.url}")

    c = client(handler)
    with pytest.raises(FormatError):
        c.cluster_allocations("http://cluster.test", "../../admin?x=")
    with pytest.raises(FormatError):
        c.cluster_error("http://cluster.test", "../pins")


def test_every_answer_about_a_pin_must_name_our_cid() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=status(cid=OTHER, st="pinned"))

    c = client(handler)
    with pytest.raises(FormatError, match="not " + CID):
        c.get("r1", CID)
    assert c.get("r1") is not None  # asked without a known CID: the caller checks
    first = decode_pin_status(status(cid=OTHER, st="pinned"), "here")
    with pytest.raises(FormatError, match="not " + CID):
        c.wait("r1", CID, deadline=1e12, first=first)


def test_an_echoed_token_is_redacted_and_as_requestid_refused() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            202, json=status(info={"status_details": f"queued behind {TOKEN}"}, rid=TOKEN)
        )

    with pytest.raises(FormatError, match="requestid") as err:
        client(handler).add(encode_pin(CID))
    assert TOKEN not in str(err.value)

    def echo(request: httpx.Request) -> httpx.Response:
        return httpx.Response(202, json=status(info={"status_details": f"behind {TOKEN}"}))

    st = client(echo).add(encode_pin(CID))
    assert st.reason == "behind <token>"
