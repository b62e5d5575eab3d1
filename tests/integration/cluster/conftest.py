"""Session fixtures for the IPFS Cluster tests: one cluster for all of them.

`ipfs_cluster`: 3 Kubo daemons + 3 cluster peers (tests/support/cluster.py), started once per
session (about 10-20 s). `publisher`: the publisher's own Kubo node, not connected to the
cluster's nodes beforehand: the cluster reaches it only through the pin's `origins`.
Tests that kill or restart a node bring it back before they return, so the next test finds
the cluster whole.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.cluster import Cluster, start_cluster
from tests.support.kubo import KuboNode, start_kubo


@pytest.fixture(scope="session")
def ipfs_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with start_cluster(tmp_path_factory.mktemp("cluster")) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def publisher(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KuboNode]:
    with start_kubo(tmp_path_factory.mktemp("publisher"), name="publisher") as node:
        yield node
