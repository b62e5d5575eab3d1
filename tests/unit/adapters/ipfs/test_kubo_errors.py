"""Kubo RPC client: error translation and retries for faults a real node cannot be made to produce.

httpx.MockTransport stands in for the wire here ONLY to inject 5xx, timeouts and garbage;
everything a real node does is tested against Kubo in tests/integration (test_kubo_rpc.py lists
each endpoint); js-ipfs, no longer a test node, keeps its dialect checked here only.
"""

import base64
import json
import socket

import httpx
import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

from odfweb3.errors import BackendRejected, BackendUnavailable
from odfweb3_ipfs.client.kubo import KuboClient, jsipfs_key_blob
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.formats.libp2p_keys import private_key_to_protobuf

ROOT = "bafybeigwssxabrtsbla3j4f427dndqlty67gl3ldqseofmsai3i4tz7ety"
ROOT_B58 = "zdj7WjsXpUuudGkZ3hMhWTSBiWodiYrdxHXtXGAfkkqRhXjcR"  # the same CID as js-ipfs prints it
KUBO_VERSION = {
    "Version": "0.32.1",
    "Commit": "",
    "Repo": "16",
    "System": "amd64/linux",
    "Golang": "go1.23.3",
}
JS_VERSION = {"Version": "0.18.1", "Commit": "", "Repo": "12", "ipfs-core": "0.18.1"}


class Script:
    """Answers requests from a list of handlers, one per request, recording them."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.requests = []

    def __call__(self, request):
        self.requests.append(request)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer(request) if callable(answer) else answer


def client(script, **kw):
    sleeps = []
    c = KuboClient(
        "http://127.0.0.1:5001",
        transport=httpx.MockTransport(script),
        sleep=sleeps.append,
        backoff=0.1,
        **kw,
    )
    return c, sleeps


def node_error(status, message):
    return httpx.Response(status, json={"Message": message, "Code": 0, "Type": "error"})


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_connection_refused_is_backend_unavailable_after_retries():
    # A real refused connection: nothing listens on the port.
    sleeps = []
    c = KuboClient(f"http://127.0.0.1:{free_port()}", retries=2, backoff=0.01, sleep=sleeps.append)
    with pytest.raises(BackendUnavailable) as info:
        c.call_json("version")
    assert "/api/v0/version" in str(info.value) and "ODFWEB3_IPFS_API" in str(info.value)
    assert c.stats.calls == 3 and c.stats.retries == 2 and len(sleeps) == 2


def test_backoff_is_exponential_with_full_jitter():
    script = Script(httpx.ConnectError("refused"))
    c, sleeps = client(script, retries=4)
    with pytest.raises(BackendUnavailable):
        c.call("block/stat", [ROOT])
    assert len(sleeps) == 4
    for attempt, delay in enumerate(sleeps):
        assert 0 <= delay <= 0.1 * 2**attempt


def test_503_then_success_is_retried():
    script = Script(httpx.Response(503, text="busy"), httpx.Response(200, json={"Size": 209}))
    c, sleeps = client(script)
    assert c.call_json("block/stat", [ROOT]) == {"Size": 209}
    assert len(script.requests) == 2 and len(sleeps) == 1


def test_node_error_500_is_final_and_names_endpoint_status_message():
    script = Script(node_error(500, "path 'x' is not pinned"))
    c, sleeps = client(script)
    with pytest.raises(BackendRejected) as info:
        c.call("pin/rm", ["x"])
    err = info.value
    assert err.status == 500 and err.detail == "path 'x' is not pinned"
    assert "/api/v0/pin/rm" in str(err) and "HTTP 500" in str(err) and "not pinned" in str(err)
    assert len(script.requests) == 1 and sleeps == []


def test_500_garbage_is_retried_then_rejected_with_a_short_one_line_detail():
    html = "<html>\n<body>" + "proxy error " * 100 + "</body></html>"
    script = Script(httpx.Response(500, text=html))
    c, sleeps = client(script, retries=2)
    with pytest.raises(BackendRejected) as info:
        c.call_json("version")
    assert len(script.requests) == 3 and len(sleeps) == 2
    assert "\n" not in str(info.value) and len(info.value.detail) <= 301
    assert info.value.detail.startswith("<html> <body>proxy error")


def test_non_idempotent_calls_are_never_retried():
    script = Script(httpx.Response(503, text="busy"))
    c, sleeps = client(script)
    with pytest.raises(BackendRejected) as info:
        c.name_publish("/ipfs/" + ROOT, "k")
    assert info.value.status == 503 and sleeps == []
    assert [r.url.path for r in script.requests] == ["/api/v0/name/publish"]


def test_read_timeout_is_backend_unavailable_saying_timed_out():
    script = Script(httpx.ReadTimeout("slow"))
    c, _ = client(script, retries=1)
    with pytest.raises(BackendUnavailable) as info:
        c.call("cat", ["/ipfs/" + ROOT])
    assert "timed out" in str(info.value) and "/api/v0/cat" in str(info.value)


def test_404_says_the_node_lacks_the_endpoint():
    script = Script(node_error(404, "Not Found"))
    c, _ = client(script)
    with pytest.raises(BackendRejected) as info:
        c.call("routing/put", ["/ipns/x"])
    assert info.value.status == 404 and "does not support the endpoint" in str(info.value)


def test_200_garbage_where_json_is_expected():
    script = Script(httpx.Response(200, text="<!doctype html>hello"))
    c, _ = client(script)
    with pytest.raises(BackendRejected) as info:
        c.call_json("version")
    assert "not JSON" in str(info.value) and "Kubo RPC API" in str(info.value)


def test_error_line_inside_a_streamed_200_answer():
    body = '{"Ref":"bafkqaaa"}\n{"Message":"context canceled","Type":"error"}\n'
    script = Script(httpx.Response(200, text=body, headers={"X-Chunked-Output": "1"}))
    c, _ = client(script)
    with pytest.raises(BackendRejected) as info:
        list(c.stream_json("refs", [ROOT]))
    assert "context canceled" in str(info.value) and "/api/v0/refs" in str(info.value)


def test_query_args_and_booleans_are_sent_as_kubo_expects():
    script = Script(httpx.Response(200, json={"Size": 1}))
    c, _ = client(script)
    c.call("block/stat", [ROOT], {"offline": True, "timeout": "5s", "skip": None})
    params = list(script.requests[0].url.params.multi_items())
    assert params == [("arg", ROOT), ("offline", "true"), ("timeout", "5s")]
    assert script.requests[0].method == "POST"


@pytest.mark.parametrize(
    ("version", "kind", "listing"),
    [(KUBO_VERSION, "kubo", "key/ls"), (JS_VERSION, "js-ipfs", "key/list")],
)
def test_node_detection_and_key_listing_endpoint(version, kind, listing):
    keys = {
        "Keys": [{"Name": "self", "Id": "12D3KooWPpe1UcdAcurminUnR5FcsgsR9trxr71P3VYXSvz2s6hi"}]
    }
    script = Script(httpx.Response(200, json=version), httpx.Response(200, json=keys))
    c, _ = client(script)
    assert c.node.kind == kind
    assert c.key_names() == {"self": "12D3KooWPpe1UcdAcurminUnR5FcsgsR9trxr71P3VYXSvz2s6hi"}
    assert script.requests[-1].url.path == f"/api/v0/{listing}"


def test_cids_in_answers_are_compared_as_bytes():
    # js-ipfs lists pins in base58btc; the CID we asked about is base32.
    answer = {"Keys": {ROOT_B58: {"Type": "recursive"}}}
    script = Script(httpx.Response(200, json=answer))
    c, _ = client(script)
    assert c.has_pin(Cid.decode(ROOT))


def test_key_import_failure_never_shows_key_material():
    key = Ed25519PrivateKey.generate()
    script = Script(
        httpx.Response(200, json=JS_VERSION),
        node_error(500, "Cannot read the key, most likely the password is wrong"),
    )
    c, _ = client(script)
    with pytest.raises(BackendRejected) as info:
        c.key_import("odfweb3-x", key)
    sent = dict(script.requests[-1].url.params)
    assert sent["pem"] not in str(info.value) and sent["password"] not in str(info.value)
    assert "?" not in str(info.value)


def test_jsipfs_key_blob_decrypts_to_the_libp2p_protobuf_key():
    # Format of @libp2p/crypto's exporter: base64 multibase of salt|nonce|AES-128-GCM|tag,
    # key = PBKDF2-HMAC-SHA256(password, salt, 32767 iterations, 16 bytes).
    key = Ed25519PrivateKey.generate()
    blob = jsipfs_key_blob(key, "pw")
    assert blob.startswith("m")
    raw = base64.b64decode(blob[1:] + "=" * (-len(blob[1:]) % 4))
    salt, nonce, sealed = raw[:16], raw[16:28], raw[28:]
    aes_key = PBKDF2HMAC(hashes.SHA256(), 16, salt, 32767).derive(b"pw")
    assert AESGCM(aes_key).decrypt(nonce, sealed, None) == private_key_to_protobuf(key)


def test_record_get_reads_base64_extra_and_none_when_missing():
    # A Kubo older than 0.40: no name/get (404), routing/get from then on.
    record = b"\x0a\x03abc"
    line = json.dumps({"ID": "", "Type": 5, "Extra": base64.b64encode(record).decode()})
    script = Script(
        httpx.Response(200, json=KUBO_VERSION),
        httpx.Response(404, text="404 page not found"),
        httpx.Response(200, text=line + "\n"),
        node_error(500, "routing: not found"),
    )
    c, _ = client(script)
    from odfweb3_ipfs.formats.libp2p_keys import IpnsName, public_key_bytes

    name = IpnsName.from_public_key(public_key_bytes(Ed25519PrivateKey.generate()))
    assert c.record_get(name) == record
    assert script.requests[-1].url.path == "/api/v0/routing/get"
    assert c.record_get(name) is None


def test_record_put_falls_back_to_routing_put_on_a_kubo_without_name_put():
    from odfweb3_ipfs.formats.libp2p_keys import IpnsName, public_key_bytes

    script = Script(
        httpx.Response(200, json=KUBO_VERSION),
        httpx.Response(404, text="404 page not found"),
        httpx.Response(200, json={"ID": "", "Type": 5, "Extra": ""}),
    )
    c, _ = client(script)
    name = IpnsName.from_public_key(public_key_bytes(Ed25519PrivateKey.generate()))
    assert c.record_put(name, b"record") == "routing/put"
    assert [r.url.path for r in script.requests[1:]] == ["/api/v0/name/put", "/api/v0/routing/put"]
    assert c.record_put(name, b"record") == "routing/put"  # 404 remembered: no second try
    assert script.requests[-1].url.path == "/api/v0/routing/put"
    assert script.requests[-1].url.params["allow-offline"] == "true"


def test_record_get_bounds_the_answer_and_refuses_an_offline_node():
    from odfweb3_ipfs.formats.libp2p_keys import IpnsName, public_key_bytes

    name = IpnsName.from_public_key(public_key_bytes(Ed25519PrivateKey.generate()))
    script = Script(
        httpx.Response(200, json=KUBO_VERSION), httpx.Response(200, content=b"x" * 20000)
    )
    c, _ = client(script)
    with pytest.raises(BackendRejected, match="more than 10240 bytes"):
        c.record_get(name)
    offline = "this action must be run in online mode, try running 'ipfs daemon' first"
    script = Script(httpx.Response(200, json=KUBO_VERSION), node_error(500, offline))
    c, _ = client(script)
    with pytest.raises(BackendRejected, match="restart it with `ipfs daemon`") as info:
        c.record_get(name)
    assert "\n" not in str(info.value)
