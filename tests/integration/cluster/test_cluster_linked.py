"""``publish --to pinning:NAME`` of a dataset with linked objects (ODF RFC-017) against the
live IPFS Cluster: the pinned root holds them at ``data/<multihash>`` on the peers that pin it.
"""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from odfweb3.odf.multihash import multihash_to_str
from tests.integration.cluster.test_cluster_pinning import (
    cluster_service,
    kubo_pins,
    make_config,
    run,
)
from tests.support.cluster import Cluster
from tests.support.kubo import KuboNode
from tests.support.linked import append_linked, content, create_linked_dataset


def test_pinning_publish_carries_linked_objects(
    tmp_path: Path,
    ipfs_cluster: Cluster,
    publisher: KuboNode,
    capsys: pytest.CaptureFixture[str],
) -> None:
    seed = int.from_bytes(os.urandom(4), "big")
    ds = create_linked_dataset(tmp_path / "ds", versions=2, size=20_000, seed=seed)
    service = cluster_service(ipfs_cluster, tmp_path, cluster_api=ipfs_cluster.rest_url)
    cfg = make_config(tmp_path, publisher, {"cluster": service})
    code, out, err = run(
        capsys, "publish", str(ds.path), "--to", "pinning:cluster", "--config", str(cfg)
    )
    assert code == 0, err
    root = out["locator"]
    assert out["pins"]["cluster"]["status"] == "pinned"
    sent = set(out["plan"]["send"])
    assert {f"data/{multihash_to_str(h)}" for h in ds.linked} <= sent
    allocated = ipfs_cluster.pin(root)["allocations"]
    holders = [p for p in ipfs_cluster.peers if p.peer_id in allocated]
    assert len(holders) == 2
    for peer in holders:  # a pinning peer's own Kubo serves each linked object under the root
        assert peer.kubo is not None and root in kubo_pins(peer.kubo)
        for h in ds.linked:
            url = f"{peer.kubo.gateway_url}/ipfs/{root}/data/{multihash_to_str(h)}"
            r = httpx.get(url, timeout=60)
            assert r.status_code == 200 and r.content == ds.linked_path(h).read_bytes()

    # one more version: only its objects are sent, the new root pinned with it
    new_data, (new_link,) = append_linked(ds, [content(seed, 99, 30_000)])
    code, out, err = run(
        capsys, "publish", str(ds.path), "--to", "pinning:cluster", "--config", str(cfg)
    )
    assert code == 0, err
    objects = {p for p in out["plan"]["send"] if not p.startswith("blocks/")}
    assert objects == {f"data/{multihash_to_str(new_data)}", f"data/{multihash_to_str(new_link)}"}
    assert out["pins"]["cluster"]["status"] == "pinned"
