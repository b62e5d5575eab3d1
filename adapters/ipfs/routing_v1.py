"""Delegated routing over HTTP for IPNS records (IPIP-379, Routing V1 HTTP API).

An offline publisher (``publish --to car:DIR``) holds a signed IPNS record but no node. A
delegated routing endpoint takes that record as is and makes the name resolvable::

    PUT /routing/v1/ipns/{name}     Content-Type: application/vnd.ipfs.ipns-record
    GET /routing/v1/ipns/{name}     Accept: application/vnd.ipfs.ipns-record

``{name}`` is the name as a CIDv1 ``libp2p-key`` (``k51…``). Kubo serves this API on its
gateway port when ``Gateway.ExposeRoutingAPI`` is true (its default): boxo's server checks
the record against the name and puts it into the node's routing (``PutValue``); ``someguy``
does the same for a standalone router.

Every answer is hostile: a PUT answer is read only up to :data:`MAX_ERROR_BODY` bytes for its
message; a GET answer must be ``200`` with the record media type and at most
:data:`.ipns.MAX_RECORD_SIZE` bytes, and the caller verifies its signature before using it.
"""

from __future__ import annotations

from typing import Final

import httpx

from odfweb3.errors import BackendRejected, BackendUnavailable, UsageError

from .ipns import MAX_RECORD_SIZE
from .libp2p_keys import IpnsName

__all__ = [
    "IPNS_RECORD_TYPE",
    "MAX_ERROR_BODY",
    "get_ipns_record",
    "ipns_url",
    "put_ipns_record",
    "routing_base",
]

IPNS_RECORD_TYPE: Final = "application/vnd.ipfs.ipns-record"
MAX_ERROR_BODY: Final = 4096  # bytes of an error answer read for its message
_DETAIL: Final = 200  # characters of that message shown


def routing_base(url: str) -> str:
    """The endpoint's base URL (``http(s)://host[:port][/prefix]``), without ``/routing/v1``.

    Raises:
        UsageError: not an http(s) URL.
    """
    base = url.strip().rstrip("/")
    if not base.startswith(("http://", "https://")) or "?" in base or "#" in base:
        raise UsageError(
            f"routing endpoint {url!r}: give an http(s) URL such as http://127.0.0.1:8080 "
            "(a Kubo gateway with Gateway.ExposeRoutingAPI) or https://delegated-ipfs.dev"
        )
    return base.removesuffix("/routing/v1")


def ipns_url(url: str, name: IpnsName) -> str:
    """``{base}/routing/v1/ipns/{name as k51…}``."""
    return f"{routing_base(url)}/routing/v1/ipns/{name}"


def _read_bounded(response: httpx.Response, limit: int) -> bytes | None:
    """At most ``limit`` bytes of the body; None when it is longer."""
    data = bytearray()
    for chunk in response.iter_bytes():
        data += chunk
        if len(data) > limit:
            return None
    return bytes(data)


def _detail(response: httpx.Response) -> str:
    body = _read_bounded(response, MAX_ERROR_BODY)
    if body is None:
        return f"(an error body over {MAX_ERROR_BODY} bytes)"
    text = " ".join(body.decode("utf-8", "replace").split())
    return text[:_DETAIL] or "(no message)"


def put_ipns_record(url: str, name: IpnsName, record: bytes, *, timeout: float = 30.0) -> None:
    """PUT ``record`` (already verified by the caller) for ``name`` to the endpoint at ``url``.

    Raises:
        UsageError: ``url`` is not an http(s) URL; the record is over the size limit.
        BackendUnavailable: the endpoint cannot be reached or did not answer in time.
        BackendRejected: any answer but 200/204 (status, and the endpoint's own message).
    """
    if len(record) > MAX_RECORD_SIZE:
        raise UsageError(f"IPNS record is {len(record)} bytes, over the {MAX_RECORD_SIZE} limit")
    target = ipns_url(url, name)
    try:
        with (
            httpx.Client(timeout=timeout, follow_redirects=False) as client,
            client.stream(
                "PUT", target, content=record, headers={"Content-Type": IPNS_RECORD_TYPE}
            ) as response,
        ):
            if response.status_code in (200, 204):
                _read_bounded(response, MAX_ERROR_BODY)  # drain a small body, ignore it
                return
            detail = _detail(response)
            hint = {
                404: "the endpoint has no /routing/v1 API (Kubo: Gateway.ExposeRoutingAPI)",
                405: "the endpoint does not accept PUT of IPNS records",
                400: "the endpoint refused the record as invalid",
                406: "the endpoint did not accept the record media type",
                413: "the endpoint refused the record's size",
            }.get(response.status_code, "see the endpoint's log")
            raise BackendRejected(
                f"routing endpoint {target} refused the IPNS record: HTTP "
                f"{response.status_code}: {detail}; {hint}",
                response.status_code,
                detail,
            )
    except httpx.TransportError as exc:
        raise BackendUnavailable(
            f"routing endpoint {target}: {type(exc).__name__}; check the URL and that it runs"
        ) from None


def get_ipns_record(url: str, name: IpnsName, *, timeout: float = 30.0) -> bytes | None:
    """The raw record the endpoint serves for ``name`` (unverified!), or None on 404.

    Raises:
        BackendUnavailable: the endpoint cannot be reached.
        BackendRejected: another status, a wrong media type, or a body over the size limit.
    """
    target = ipns_url(url, name)
    try:
        with (
            httpx.Client(timeout=timeout, follow_redirects=False) as client,
            client.stream("GET", target, headers={"Accept": IPNS_RECORD_TYPE}) as response,
        ):
            if response.status_code == 404:
                return None
            if response.status_code != 200:
                detail = _detail(response)
                raise BackendRejected(
                    f"routing endpoint {target}: HTTP {response.status_code}: {detail}",
                    response.status_code,
                    detail,
                )
            media = response.headers.get("Content-Type", "").split(";")[0].strip()
            if media != IPNS_RECORD_TYPE:
                raise BackendRejected(
                    f"routing endpoint {target} answered {media or 'no Content-Type'}, "
                    f"not {IPNS_RECORD_TYPE}; is it a /routing/v1 endpoint?",
                    200,
                    "wrong media type",
                )
            body = _read_bounded(response, MAX_RECORD_SIZE)
            if body is None:
                raise BackendRejected(
                    f"routing endpoint {target} sent a record over {MAX_RECORD_SIZE} bytes",
                    200,
                    "record too large",
                )
            return body
    except httpx.TransportError as exc:
        raise BackendUnavailable(
            f"routing endpoint {target}: {type(exc).__name__}; check the URL and that it runs"
        ) from None
