"""The target contract (``tests/integration/test_target_contract.py``) for ``pinning:NAME``.

``PinningTarget``: the publisher's own Kubo node target (the ``publisher`` fixture, not
connected to the cluster beforehand) plus the suite's IPFS Cluster as a Pinning Service API
service, which fetches the root from the pin's ``origins``. The same three sequences as every
other target, run on the contract's own functions: nothing new writes nothing (not on the
node, not at the service: its old pin of the same root is kept, asked with one ``GET``),
Ctrl-C before commit leaves a whole head named and the rerun sends none of the old head's
objects, a rival publishing after our plan is a ConflictError (the node target's
compare-and-set; the commit is the node's), a rival on this machine is refused by the
state home before anything is sent, and a live holder of the node target's lock refuses
us. The cluster pins each root on two of its peers.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from odfweb3.transport.settings import NetworkSettings
from odfweb3_ipfs.client.kubo import KuboClient
from odfweb3_ipfs.client.pinning import PinningClient
from odfweb3_ipfs.publish.node_target import IpfsNodeTarget
from odfweb3_ipfs.publish.pinning_target import PinningService, PinningTarget
from tests.integration import test_target_contract as contract
from tests.support.lying_proxy import LyingProxy, lying_proxy


class _Requests(list[str]):
    """The node proxy's request list; clearing it clears the service's calls too (the
    contract clears what the first publish asked before the re-publish)."""

    def __init__(self, also: list[tuple[str, str]]) -> None:
        super().__init__()
        self.also = also

    def clear(self) -> None:
        super().clear()
        self.also.clear()


class _MethodProxy(LyingProxy):
    """A counting proxy that also records each request's method (a pin's ``GET`` reads,
    its ``POST`` creates or replaces, its ``DELETE`` removes)."""

    def __init__(self, upstream: str) -> None:
        super().__init__(upstream)
        self.calls: list[tuple[str, str]] = []

    def _handle(self, h: Any, method: str) -> None:
        self.calls.append((method, h.path))
        super()._handle(h, method)


@dataclass
class PinningEnv(contract.Env):
    cluster: Any = None  # tests/support/cluster.py Cluster
    service_proxy: _MethodProxy | None = None
    service_calls: list[tuple[str, str]] | None = None

    def target(self, via: str | None = None) -> PinningTarget:
        node = IpfsNodeTarget(
            KuboClient(via or self.ipfs_node.api_url),
            self.keystore,
            self.states,
            gateway_url=self.ipfs_node.gateway_url,
            tmp_dir=self.tmp,
        )
        endpoint = self.service_proxy.url if self.service_proxy else self.cluster.pinsvc_url
        client = PinningClient(
            "cluster",
            endpoint,
            self.cluster.token,
            timeout=60.0,
            settings=NetworkSettings(timeout_s=60.0, retries=0),
        )
        return PinningTarget(node, [PinningService("cluster", client, deadline=300.0)], self.states)

    @contextmanager
    def watched(self) -> Iterator[LyingProxy | None]:
        """Counting proxies in front of the node and of the pinning service."""
        service = _MethodProxy(self.cluster.pinsvc_url)
        service.start()
        try:
            self.service_proxy = service
            with lying_proxy(self.ipfs_node.api_url) as proxy:
                proxy.requests = _Requests(service.calls)
                yield proxy
        finally:
            self.service_proxy = None
            self.service_calls = list(service.calls)  # the re-publish's, once cleared
            service.stop()

    def writes(self, proxy: LyingProxy) -> list[str]:
        node = contract.Env.writes(self, proxy)
        assert self.service_proxy is not None
        pins = [f"{m} {p}" for m, p in self.service_proxy.calls if m != "GET"]
        return node + pins


@pytest.fixture
def env(request, tmp_path, publisher, arlocal, ipfs_cluster) -> PinningEnv:
    seed = 10**6 + zlib.crc32(request.node.nodeid.encode()) % 10**6
    # The kind of the node under the services: its writes, its record, its commit order.
    return PinningEnv("ipfs", tmp_path, publisher, arlocal, seed, cluster=ipfs_cluster)


def test_nothing_new_sends_nothing(env: PinningEnv) -> None:
    contract.test_nothing_new_sends_nothing(env)
    # The service was asked about its pin (the old one, same root: kept), and only asked.
    assert env.service_calls and {m for m, _ in env.service_calls} == {"GET"}


def test_an_interrupted_publish_leaves_a_whole_head_named_and_the_rerun_publishes(
    env: PinningEnv,
) -> None:
    contract.test_an_interrupted_publish_leaves_a_whole_head_named_and_the_rerun_publishes(env)


def test_a_rival_publish_after_our_plan_is_a_conflict(env: PinningEnv) -> None:
    contract.test_a_rival_publish_after_our_plan_is_a_conflict(env)


def test_a_rival_on_this_machine_is_refused_before_anything_is_sent(env: PinningEnv) -> None:
    contract.test_a_rival_on_this_machine_is_refused_before_anything_is_sent(env)


def test_a_live_publisher_holds_the_target(env: PinningEnv) -> None:
    contract.test_a_live_publisher_holds_the_target(env)
