"""Session fixtures for the real test nodes, usable by tests anywhere under tests/.

`ipfs_node`: js-ipfs 0.66.1 started by the session (or the external node named by
ODFWEB3_IPFS_API / ODFWEB3_IPFS_GATEWAY, e.g. a Kubo from kubo-docker). `arlocal`: a fresh arlocal
gateway. Both need `make nodes`; a missing install fails the tests that use them (never a skip).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support.nodes import ArlocalNode, IpfsNode, external_ipfs, start_arlocal, start_js_ipfs


@pytest.fixture(scope="session")
def ipfs_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IpfsNode]:
    """A running IPFS node: `api_url`, `gateway_url`, `kind` ("js-ipfs" / "kubo"), `repo_path`."""
    api = os.environ.get("ODFWEB3_IPFS_API")
    if api:
        gateway = os.environ.get("ODFWEB3_IPFS_GATEWAY")
        if not gateway:
            raise pytest.UsageError("ODFWEB3_IPFS_API is set: set ODFWEB3_IPFS_GATEWAY too")
        yield external_ipfs(api, gateway)
        return
    with start_js_ipfs(tmp_path_factory.mktemp("jsipfs")) as node:
        yield node


@pytest.fixture(scope="session")
def arlocal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ArlocalNode]:
    """A fresh arlocal gateway: `url`, `mint(address, winston)`, `mine(blocks=1)`, ..."""
    with start_arlocal(tmp_path_factory.mktemp("arlocal")) as node:
        yield node
