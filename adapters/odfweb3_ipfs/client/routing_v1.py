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

from dataclasses import replace
from typing import Final

from odfweb3.errors import BackendRejected, UsageError
from odfweb3.transport.http import Answer, HttpClient
from odfweb3.transport.settings import NetworkSettings
from odfweb3_ipfs.formats.ipns import MAX_RECORD_SIZE
from odfweb3_ipfs.formats.libp2p_keys import IpnsName

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
_ANY_STATUS: Final = frozenset(range(100, 600))


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


def _client(url: str, settings: NetworkSettings | None, timeout: float | None) -> HttpClient:
    base = routing_base(url)
    chosen = settings or NetworkSettings()
    if timeout is not None:
        chosen = replace(chosen, timeout_s=timeout)
    return HttpClient(
        base,
        service=f"routing endpoint {base}",
        hint="check the URL and that it runs",
        settings=chosen,
        retry=lambda status, body: status in (429, 502, 503, 504),
    )


def _detail(answer: Answer) -> str:
    try:
        body = answer.read(MAX_ERROR_BODY)
    except BackendRejected:
        return f"(an error body over {MAX_ERROR_BODY} bytes)"
    text = " ".join(body.decode("utf-8", "replace").split())
    return text[:_DETAIL] or "(no message)"


def put_ipns_record(
    url: str,
    name: IpnsName,
    record: bytes,
    *,
    timeout: float | None = None,
    settings: NetworkSettings | None = None,
) -> None:
    """PUT ``record`` (already verified by the caller) for ``name`` to the endpoint at ``url``.

    Sent through the shared HTTP layer (:mod:`odfweb3.transport.http`: deadline, bounded
    reads; a PUT of the same record is idempotent, so it is retried).

    Raises:
        UsageError: ``url`` is not an http(s) URL; the record is over the size limit.
        BackendUnavailable: the endpoint cannot be reached or did not answer in time.
        BackendRejected: any answer but 200/204 (status, and the endpoint's own message).
    """
    if len(record) > MAX_RECORD_SIZE:
        raise UsageError(f"IPNS record is {len(record)} bytes, over the {MAX_RECORD_SIZE} limit")
    target = ipns_url(url, name)
    client = _client(url, settings, timeout)
    try:
        with client.request(
            "PUT",
            f"/routing/v1/ipns/{name}",
            content=record,
            headers={"Content-Type": IPNS_RECORD_TYPE},
            ok=_ANY_STATUS,
        ) as answer:
            if answer.status in (200, 204):
                _detail(answer)  # drain a small body, ignore it
                return
            detail = _detail(answer)
            hint = {
                404: "the endpoint has no /routing/v1 API (Kubo: Gateway.ExposeRoutingAPI)",
                405: "the endpoint does not accept PUT of IPNS records",
                400: "the endpoint refused the record as invalid",
                406: "the endpoint did not accept the record media type",
                413: "the endpoint refused the record's size",
            }.get(answer.status, "see the endpoint's log")
            raise BackendRejected(
                f"routing endpoint {target} refused the IPNS record: HTTP "
                f"{answer.status}: {detail}; {hint}",
                answer.status,
                detail,
            )
    finally:
        client.close()


def get_ipns_record(
    url: str,
    name: IpnsName,
    *,
    timeout: float | None = None,
    settings: NetworkSettings | None = None,
) -> bytes | None:
    """The raw record the endpoint serves for ``name`` (unverified!), or None on 404.

    Raises:
        BackendUnavailable: the endpoint cannot be reached or did not answer in time.
        BackendRejected: another status, a wrong media type, or a body over the size limit.
    """
    target = ipns_url(url, name)
    client = _client(url, settings, timeout)
    try:
        with client.request(
            "GET",
            f"/routing/v1/ipns/{name}",
            headers={"Accept": IPNS_RECORD_TYPE},
            ok=_ANY_STATUS,
        ) as answer:
            if answer.status == 404:
                return None
            if answer.status != 200:
                detail = _detail(answer)
                raise BackendRejected(
                    f"routing endpoint {target}: HTTP {answer.status}: {detail}",
                    answer.status,
                    detail,
                )
            media = answer.content_type()
            if media != IPNS_RECORD_TYPE:
                raise BackendRejected(
                    f"routing endpoint {target} answered {media or 'no Content-Type'}, "
                    f"not {IPNS_RECORD_TYPE}; is it a /routing/v1 endpoint?",
                    200,
                    "wrong media type",
                )
            try:
                return answer.read(MAX_RECORD_SIZE)
            except BackendRejected as exc:
                if exc.detail != "answer too large":
                    raise
                raise BackendRejected(
                    f"routing endpoint {target} sent a record over {MAX_RECORD_SIZE} bytes",
                    200,
                    "record too large",
                ) from None
    finally:
        client.close()
