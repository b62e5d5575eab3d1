"""DNSLink lookups: the path a domain's ``_dnslink`` TXT records name (DNS is not authenticated)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from odfweb3.backends import DnsTxtLookup
from odfweb3.errors import (
    BackendRejected,
    ResolutionError,
)
from odfweb3_ipfs.client.kubo import KuboClient

__all__ = ["MAX_DNSLINK_HOPS", "node_dns_lookup"]

MAX_DNSLINK_HOPS: Final = 32  # DNSLink: recursion limit
_MAX_DNSLINK_PATH: Final = 1024  # a node's answer to resolve/dns: a path, never more


def node_dns_lookup(client: KuboClient) -> DnsTxtLookup:
    """A DNSLink TXT lookup through the node (no resolver of our own).

    The node resolves one step: RPC ``resolve /ipns/<domain>`` with ``recursive=false``
    (Kubo: ``ipfs dns`` was removed in 0.26, ``ipfs resolve`` replaces it and uses the node's
    ``DNS.Resolvers``); a node without that answer for domains (404/405, e.g. older js-ipfs)
    is asked with the old RPC ``dns``. The node answers the *path* the domain's DNSLink names;
    it is returned as the one TXT string ``dnslink=<path>`` so that :func:`parse_dnslink`
    treats every lookup alike (and checks it: the node's answer is not trusted more than DNS).
    """

    def lookup(name: str) -> Sequence[str]:
        domain = name.removeprefix("_dnslink.")
        try:
            try:
                data = client.call_json("resolve", [f"/ipns/{domain}"], {"recursive": False})
            except BackendRejected as exc:
                if exc.status not in (404, 405):
                    raise
                data = client.call_json("dns", [domain], {"recursive": False})
        except BackendRejected as exc:
            raise ResolutionError(
                f"DNSLink {domain}: the node could not resolve it ({exc.detail}); check the "
                f"TXT record at _dnslink.{domain} and the node's DNS settings"
            ) from exc
        path = data.get("Path") if isinstance(data, dict) else None
        if not isinstance(path, str) or len(path) > _MAX_DNSLINK_PATH:
            return []
        return [f"dnslink={path}"] if path else []

    return lookup
