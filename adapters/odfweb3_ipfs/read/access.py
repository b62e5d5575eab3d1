"""How IPFS is reached for reading: gateway, RPC API, DNS, replay memory; verified block sources."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from odfweb3.backends import DnsTxtLookup
from odfweb3.errors import (
    BackendRejected,
    BackendUnavailable,
    NotFound,
)
from odfweb3.odf.layout import MAX_BLOCK_SIZE
from odfweb3_ipfs.client.gateway import (
    IpfsGateway,
)
from odfweb3_ipfs.client.kubo import KuboClient
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.formats.unixfs_reader import BlockGetter
from odfweb3_ipfs.read.replay_memory import SequenceMemory

__all__ = ["IpfsAccess"]


def _rpc_block_getter(client: KuboClient) -> BlockGetter:
    def get(cid: Cid) -> bytes:
        try:
            # js-ipfs waits for the network for an absent block: always bound it.
            return client.call(
                "block/get", [cid.encode()], {"timeout": "10s"}, limit=MAX_BLOCK_SIZE
            )
        except BackendRejected as exc:
            if exc.status == 500:
                raise NotFound(f"IPFS node {client.api_url}: has no block {cid}") from exc
            raise

    return get


@dataclass
class IpfsAccess:
    """How IPFS is reached: a gateway, optionally the RPC API, DNS and a replay memory.

    Attributes:
        gateway: the HTTP gateway (paths, and raw blocks/records where it serves them).
        client: the RPC API (``block/get``, raw records, ``dns``), or None.
        dns: the TXT lookup for DNSLink (default: the node's ``dns`` when there is a client).
        memory: the highest record sequences seen, or None (no replay check).
        now: the clock for record expiry.
        trustless: read blocks and objects as CID-verified blocks too, not by path.
        rpc_blocks: use the RPC's ``block/get`` for raw blocks (when the gateway serves none).
        insecure_unverified_paths: with no verifiable block source, read ``refs/head`` by
            path anyway (``ipfs.insecure_unverified_paths``); the replica is then marked
            ``unverified``. Off: such a read is refused.
    """

    gateway: IpfsGateway
    client: KuboClient | None = None
    dns: DnsTxtLookup | None = None
    memory: SequenceMemory | None = None
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    trustless: bool = False
    rpc_blocks: bool = True
    insecure_unverified_paths: bool = False

    def block_getter(self, root: Cid) -> tuple[BlockGetter | None, str]:
        """The verified-block source for this root, and how blocks are got (for notes)."""
        try:
            data = self.gateway.raw_block(root)
        except (BackendUnavailable, BackendRejected, NotFound):
            data = None
        if data is not None:
            root.verify(data, where=f"{self.gateway.url}: raw block {root}")
            return _gateway_block_getter(self.gateway), "gateway raw blocks"
        try:
            data = self.gateway.car_block(root)
        except (BackendUnavailable, BackendRejected, NotFound):
            data = None
        if data is not None:
            return _gateway_car_getter(self.gateway), "gateway one-block CARs"
        if self.client is not None and self.rpc_blocks:
            try:
                self.client.node  # noqa: B018 - probes the API once (cached)
            except (BackendUnavailable, BackendRejected):
                return None, "none"
            return _rpc_block_getter(self.client), "RPC block/get"
        return None, "none"


def _gateway_car_getter(gateway: IpfsGateway) -> BlockGetter:
    def get(cid: Cid) -> bytes:
        data = gateway.car_block(cid)
        if data is None:
            raise NotFound(f"{gateway.url}: serves no CAR of block {cid}")
        return data

    return get


def _gateway_block_getter(gateway: IpfsGateway) -> BlockGetter:
    def get(cid: Cid) -> bytes:
        data = gateway.raw_block(cid)
        if data is None:
            raise NotFound(f"{gateway.url}: serves no raw block {cid}")
        return data

    return get
