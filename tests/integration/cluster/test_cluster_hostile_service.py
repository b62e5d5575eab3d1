"""A pinning service that lies, with the real IPFS Cluster behind it.

The cluster is honest; a loopback proxy (tests/support/lying_proxy.py) in front of its
Pinning Service API (and of its REST API, to see what reaches it) plays the service that
answers for another CID, names a path of its choosing as a CID, or echoes the access token.
docs/security.md, "Pinning services", has the rows these tests prove:

- a ``PinStatus`` for another CID than ours is refused (publish: one line, nothing recorded as
  pinned; status: the row's error, never "pinned" on the service's word);
- a CID the service chose never goes into a cluster_api URL (the old pin must be for the root
  this machine recorded; a CID must parse before it goes into a path);
- the token a service echoes never reaches stdout, stderr, progress lines or a state file, and
  a request id that was the token is refused.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from odfweb3.odf.builder import append_blocks, create_root_dataset
from tests.integration.cluster.test_cluster_pinning import cluster_service, make_config, run
from tests.support.cluster import Cluster
from tests.support.kubo import KuboNode
from tests.support.lying_proxy import LyingProxy, lying_proxy

OTHER = "bafkreibpmsjuqdvcgjat6job2dyepgswvawrnlda6vlolommnivog6v5ky"


@pytest.fixture
def pinsvc(ipfs_cluster: Cluster) -> Iterator[LyingProxy]:
    with lying_proxy(ipfs_cluster.pinsvc_url) as proxy:
        yield proxy


@pytest.fixture
def rest(ipfs_cluster: Cluster) -> Iterator[LyingProxy]:
    with lying_proxy(ipfs_cluster.rest_url) as proxy:
        yield proxy


def fresh_dataset(tmp_path: Path, name: str = "ds") -> Path:
    seed = int.from_bytes(os.urandom(4), "big")
    return create_root_dataset(
        tmp_path / name, blocks=2, data_bytes=100_000, seed=seed, fsync=False
    ).path


def edit_pin_status(
    change: Callable[[str, str, dict[str, Any]], None],
) -> Callable[[str, str, bytes], bytes]:
    """An answer editor for the Pinning Service API: ``change(method, path, PinStatus)`` on
    every PinStatus answered (the results of a listing included)."""

    def edit(method: str, path: str, data: bytes) -> bytes:
        if not path.startswith("/pins"):
            return data
        try:
            doc = json.loads(data)
        except ValueError:
            return data
        items = doc.get("results") if isinstance(doc, dict) and "results" in doc else [doc]
        for item in items or []:
            if isinstance(item, dict) and "requestid" in item:
                change(method, path, item)
        return json.dumps(doc).encode()

    return edit


def error_lines(err: str) -> list[str]:
    """stderr without its warnings (a first publish says where it created the IPNS key)."""
    return [line for line in err.strip().splitlines() if not line.startswith("warning:")]


def state_bytes(tmp_path: Path) -> bytes:
    return b"".join(f.read_bytes() for f in (tmp_path / "state").rglob("*") if f.is_file())


def test_a_pin_status_for_another_cid_is_refused_by_publish_and_status(
    tmp_path: Path,
    ipfs_cluster: Cluster,
    publisher: KuboNode,
    pinsvc: LyingProxy,
    capsys: pytest.CaptureFixture[str],
) -> None:
    dataset = fresh_dataset(tmp_path)
    service = cluster_service(ipfs_cluster, tmp_path, cluster_api=ipfs_cluster.rest_url)
    service["endpoint"] = pinsvc.url

    def other_cid(method: str, path: str, st: dict[str, Any]) -> None:
        if method == "GET":
            st["pin"]["cid"] = OTHER
            st["status"] = "pinned"

    # Without a node the CAR goes to cluster_api and the pin is then asked by its CID
    # (GET /pins/{root}): the answer is the service's, and names another CID.
    cfg = tmp_path / "odfweb3.yaml"
    cfg.write_text(
        json.dumps(
            {
                "keystore": str(tmp_path / "keys"),
                "state_dir": str(tmp_path / "state"),
                "ipfs": {"api": "http://127.0.0.1:9", "gateway": "http://127.0.0.1:9"},
                "pinning": {"services": {"cluster": service}, "via": "car"},
            }
        )
    )
    pinsvc.edit = edit_pin_status(other_cid)
    code, out, err = run(
        capsys, "publish", str(dataset), "--to", "pinning:cluster", "--config", str(cfg)
    )
    assert code == 65, err
    assert len(error_lines(err)) == 1, err
    assert OTHER in err and "refusing its answer" in err, err
    assert OTHER.encode() not in state_bytes(tmp_path), "the service's CID was recorded"

    # Honest now: another dataset pins; then status meets the lie.
    pinsvc.honest()
    other = fresh_dataset(tmp_path, "other")
    code, out, err = run(
        capsys, "publish", str(other), "--to", "pinning:cluster", "--config", str(cfg)
    )
    assert code == 0, err
    root = out["locator"]
    pinsvc.edit = edit_pin_status(other_cid)
    code, status, err = run(capsys, "status", str(other), "--config", str(cfg))
    assert code == 0, err
    row = next(r for r in status["targets"] if r["target"] == "pinning:cluster")
    assert row["root"] == root
    assert not row["pin"]["live"], row["pin"]
    assert "refusing" in row["pin"]["error"] and row["pin"].get("cid") != OTHER, row["pin"]


def test_a_cid_the_service_chose_never_reaches_a_cluster_api_url(
    tmp_path: Path,
    ipfs_cluster: Cluster,
    publisher: KuboNode,
    pinsvc: LyingProxy,
    rest: LyingProxy,
    capsys: pytest.CaptureFixture[str],
) -> None:
    dataset = fresh_dataset(tmp_path)
    service = cluster_service(ipfs_cluster, tmp_path, cluster_api=rest.url)
    service["endpoint"] = pinsvc.url
    cfg = make_config(tmp_path, publisher, {"cluster": service})
    code, out, err = run(
        capsys, "publish", str(dataset), "--to", "pinning:cluster", "--config", str(cfg)
    )
    assert code == 0, err
    root = out["locator"]

    # The update asks the old pin (GET /pins/{requestid}); the service says it is for a
    # "CID" that is a path: before, that string went into GET {cluster_api}/allocations/...
    evil = "../../../admin/secrets?x="

    def path_as_cid(method: str, path: str, st: dict[str, Any]) -> None:
        if method == "GET" and st["pin"]["cid"] == root:
            st["pin"]["cid"] = evil

    append_blocks(dataset, 1, data_bytes=20_000, fsync=False)
    rest.requests.clear()
    pinsvc.edit = edit_pin_status(path_as_cid)
    code, _, err = run(
        capsys, "publish", str(dataset), "--to", "pinning:cluster", "--config", str(cfg)
    )
    assert code == 65, err
    assert len(error_lines(err)) == 1 and "refusing its answer" in err, err
    assert ipfs_cluster.token not in err
    assert not [p for p in rest.requests if "admin" in p or ".." in p], rest.requests
    # Nothing was unpinned on the service's word: the old root is still pinned.
    assert root in ipfs_cluster.pinset()


def test_the_token_a_service_echoes_is_never_printed_logged_or_saved(
    tmp_path: Path,
    ipfs_cluster: Cluster,
    publisher: KuboNode,
    pinsvc: LyingProxy,
    capsys: pytest.CaptureFixture[str],
) -> None:
    token = ipfs_cluster.token
    dataset = fresh_dataset(tmp_path)
    service = cluster_service(ipfs_cluster, tmp_path, cluster_api=ipfs_cluster.rest_url)
    service["endpoint"] = pinsvc.url
    cfg = make_config(tmp_path, publisher, {"cluster": service})

    def echo(method: str, path: str, st: dict[str, Any]) -> None:
        st.setdefault("info", {})["status_details"] = f"queued for {token}"
        st["info"][token] = token
        st["pin"]["name"] = token
        st["pin"].setdefault("meta", {})["echo"] = f"Bearer {token}"

    pinsvc.edit = edit_pin_status(echo)
    code, out, err = run(
        capsys, "publish", str(dataset), "--to", "pinning:cluster", "--config", str(cfg), "-v"
    )
    assert code == 0, err
    assert out["pins"]["cluster"]["status"] == "pinned"
    assert token not in json.dumps(out) and token not in err
    assert token.encode() not in state_bytes(tmp_path)
    code, status, err = run(capsys, "status", str(dataset), "--config", str(cfg))
    assert code == 0, err
    assert token not in json.dumps(status) and token not in err

    # A request id that is the token (URL-safe, as a JWT is) would go into every later URL
    # and into the saved state: refused, and the line does not show it.
    def token_as_requestid(method: str, path: str, st: dict[str, Any]) -> None:
        st["requestid"] = token

    other = fresh_dataset(tmp_path, "other")
    pinsvc.edit = edit_pin_status(token_as_requestid)
    code, out, err = run(
        capsys, "publish", str(other), "--to", "pinning:cluster", "--config", str(cfg)
    )
    assert code == 65, err
    assert len(error_lines(err)) == 1 and "requestid" in err, err
    assert token not in err and token.encode() not in state_bytes(tmp_path)
