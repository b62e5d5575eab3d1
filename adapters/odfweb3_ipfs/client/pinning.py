"""IPFS Pinning Service API client (spec v1.0.0: ``ipfs-pinning-service.yaml`` of
ipfs/pinning-services-api-spec).

Endpoints used (all with ``Authorization: Bearer <token>``):

- ``GET /pins?limit=1``: the token check done before anything is uploaded;
- ``POST /pins`` (a ``Pin``: ``cid``, ``name`` <= 255 chars, ``origins`` <= 20 multiaddrs,
  ``meta`` string map) -> ``PinStatus`` (spec: 202; IPFS Cluster answers 200);
- ``GET /pins/{requestid}`` -> ``PinStatus``; 404 -> gone;
- ``POST /pins/{requestid}`` (replace: remove + add in one call) -> ``PinStatus``;
- ``DELETE /pins/{requestid}`` -> 202 (404 is taken as already gone).

A ``PinStatus`` is ``requestid``, ``status`` (``queued`` | ``pinning`` | ``pinned`` | ``failed``),
``created``, ``pin`` (the ``Pin``), ``delegates`` (spec: 1-20 multiaddrs; IPFS Cluster sends
``[]``) and ``info`` (string map; ``info.status_details`` carries the reason of a failure).
Errors are a ``Failure``: ``{"error": {"reason": ..., "details": ...}}``.

Every answer is hostile until checked: at most :data:`MAX_ANSWER` bytes are read, the JSON must
have the spec's shape, the ``pin.cid`` of every answer about a pin must be the CID we asked for
or recorded (an add, a replace, a status asked while waiting or by ``status``), a
``requestid`` must be 1-256 URL-safe characters and a CID must parse before either goes into a
URL path (each path segment percent-encoded as well). A service that echoes the token gets it
back as ``<token>``: every string of a decoded answer (keys and values) and every raw text is
redacted before anything reads it, so the token cannot reach a message, a progress line or a
saved state; a ``requestid`` that was the token no longer parses and is refused. Texts from the
service (reasons) are cut to one line of 200 characters. Each call is bounded by ``timeout``;
:meth:`PinningClient.wait` by its deadline. The token is never logged, never in a message,
never in a ``repr``.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

import httpx

from odfweb3.errors import BackendAuthError, BackendRejected, BackendUnavailable, FormatError
from odfweb3.foreign_json import load_foreign_json
from odfweb3.transport.http import Answer, HttpClient
from odfweb3.transport.settings import NetworkSettings
from odfweb3_ipfs.formats.cid import Cid

__all__ = [
    "MAX_ANSWER",
    "STATUSES",
    "PinFailed",
    "PinStatus",
    "PinningAuthError",
    "PinningClient",
    "cid_segment",
    "decode_pin_status",
    "encode_pin",
    "redact",
]

MAX_ANSWER: Final = 1 << 20  # bytes of one answer
_ANY_STATUS: Final = frozenset(range(100, 600))
STATUSES: Final = ("queued", "pinning", "pinned", "failed")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._~:=+-]{1,256}$")
_MAX_MAP = 1000  # PinMeta / StatusInfo: maxProperties 1000
_MAX_ORIGINS = 20  # Origins: maxItems 20
_MAX_NAME = 255  # Pin.name: maxLength 255


class PinningAuthError(BackendAuthError):
    """The service refused the token (401/403): exit 77 (EX_NOPERM)."""


class PinFailed(BackendRejected):
    """The service reported the pin ``failed`` (its reason in the message)."""


@dataclass(frozen=True)
class PinStatus:
    """A checked ``PinStatus``."""

    requestid: str
    status: str
    cid: str
    name: str | None = None
    created: str = ""
    meta: Mapping[str, str] = field(default_factory=dict)
    origins: tuple[str, ...] = ()
    delegates: tuple[str, ...] = ()
    info: Mapping[str, str] = field(default_factory=dict)

    @property
    def reason(self) -> str:
        """Why the service says it is in this state (``info.status_details``), if it says."""
        return self.info.get("status_details", "")


def _one_line(text: str, limit: int = 200) -> str:
    cleaned = "".join(ch if ch.isprintable() else " " for ch in text)
    cleaned = " ".join(cleaned.split())
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 1] + "…"


def redact(value: Any, secret: str) -> Any:
    """``value`` (decoded JSON) with every occurrence of ``secret`` in its strings, keys
    included, replaced by ``<token>`` (pure). Applied to each answer before it is read."""
    if not secret:
        return value
    if isinstance(value, str):
        return value.replace(secret, "<token>")
    if isinstance(value, list):
        return [redact(v, secret) for v in value]
    if isinstance(value, dict):
        return {redact(k, secret): redact(v, secret) for k, v in value.items()}
    return value


def cid_segment(value: str, where: str) -> str:
    """``value`` as a URL path segment, once it parses as a CID (a service-chosen string
    never chooses the path of an authenticated request)."""
    if not isinstance(value, str) or len(value) > 256:
        raise FormatError(f"{where}: not a CID; refusing to put it into a URL")
    try:
        Cid.decode(value, where=where)
    except (FormatError, ValueError):
        raise FormatError(
            f"{where}: {_one_line(repr(value), 60)} is not a CID; refusing to put it into a URL"
        ) from None
    return quote(value, safe="")


def _string_map(value: Any, what: str, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > _MAX_MAP:
        raise FormatError(f"{where}: {what} is not a map of at most {_MAX_MAP} strings")
    out: dict[str, str] = {}
    for k, v in value.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise FormatError(f"{where}: {what} has a non-string key or value")
        out[k] = v
    return out


def _string_list(value: Any, what: str, where: str, limit: int) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > limit:
        raise FormatError(f"{where}: {what} is not a list of at most {limit} strings")
    if not all(isinstance(v, str) for v in value):
        raise FormatError(f"{where}: {what} holds a non-string")
    return tuple(value)


def decode_pin_status(data: Any, where: str) -> PinStatus:
    """Check a decoded ``PinStatus`` JSON object against the spec's schema (pure).

    Raises:
        FormatError: a missing or mistyped field, an unknown status, an unusable requestid.
    """
    if not isinstance(data, dict):
        raise FormatError(f"{where}: answer is not a PinStatus object")
    rid = data.get("requestid")
    if not isinstance(rid, str) or not _REQUEST_ID.match(rid):
        raise FormatError(f"{where}: PinStatus.requestid missing or not 1-256 URL-safe characters")
    status = data.get("status")
    if status not in STATUSES:
        raise FormatError(
            f"{where}: PinStatus.status {_one_line(repr(status), 40)} is not one of "
            + ", ".join(STATUSES)
        )
    pin = data.get("pin")
    if not isinstance(pin, dict) or not isinstance(pin.get("cid"), str):
        raise FormatError(f"{where}: PinStatus.pin.cid missing")
    name = pin.get("name")
    if name is not None and not isinstance(name, str):
        raise FormatError(f"{where}: PinStatus.pin.name is not a string")
    created = data.get("created", "")
    if not isinstance(created, str):
        raise FormatError(f"{where}: PinStatus.created is not a string")
    return PinStatus(
        requestid=rid,
        status=str(status),
        cid=str(pin["cid"]),
        name=name,
        created=created,
        meta=_string_map(pin.get("meta"), "pin.meta", where),
        origins=_string_list(pin.get("origins"), "pin.origins", where, _MAX_ORIGINS),
        delegates=_string_list(data.get("delegates"), "delegates", where, _MAX_ORIGINS),
        info=_string_map(data.get("info"), "info", where),
    )


def _cluster_params(name: str | None, meta: Mapping[str, str]) -> dict[str, str]:
    """IPFS Cluster's pin options as query parameters: ``name``, ``meta-KEY``."""
    params = {"name": name} if name else {}
    params.update({f"meta-{k}": v for k, v in meta.items()})
    return params


def encode_pin(
    cid: str,
    *,
    name: str | None = None,
    origins: Sequence[str] = (),
    meta: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The ``Pin`` request body (pure); refuses what the spec forbids."""
    body: dict[str, Any] = {"cid": cid}
    if name is not None:
        if len(name) > _MAX_NAME:
            raise ValueError(f"pin name longer than {_MAX_NAME} characters")
        body["name"] = name
    if origins:
        body["origins"] = list(dict.fromkeys(origins))[:_MAX_ORIGINS]
    if meta:
        if len(meta) > _MAX_MAP:
            raise ValueError(f"more than {_MAX_MAP} meta entries")
        body["meta"] = dict(meta)
    return body


class PinningClient:
    """One Pinning Service API endpoint with its access token.

    Args:
        service: the service's name in the configuration (for messages).
        endpoint: the API base, e.g. ``https://api.pinata.cloud/psa``.
        token: the access token (never shown).
        timeout: seconds for connect and for each read of one call.
        transport: an httpx transport (tests of faults only).
        clock, sleep: time functions (tests).
        settings: network budgets (default: ``timeout`` per read, no retries: a POST of a pin
            is not idempotent, and the caller decides what to repeat).
    """

    def __init__(
        self,
        service: str,
        endpoint: str,
        token: str,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        settings: NetworkSettings | None = None,
    ) -> None:
        self.service = service
        self.endpoint = endpoint.rstrip("/")
        self._token = token
        self.timeout = timeout
        self._clock = clock
        self._sleep = sleep
        self._transport = transport
        # The shared HTTP layer (odfweb3.transport.http): each call's reads are bounded in
        # size and its whole exchange in time; the Authorization header never reaches a message.
        self._http = HttpClient(
            self.endpoint,
            service=f"pinning service {service} ({self.endpoint})",
            hint="check the endpoint",
            settings=settings or NetworkSettings(timeout_s=timeout, retries=0),
            transport=transport,
            sleep=sleep,
        )
        self._auth = {"Authorization": f"Bearer {token}"}

    def __repr__(self) -> str:
        return f"PinningClient({self.service!r}, {self.endpoint!r})"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> PinningClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -------------------------------------------------------------- transport

    def _where(self, method: str, path: str) -> str:
        return f"pinning service {self.service} ({method} {self.endpoint}{path})"

    def _clean(self, text: str) -> str:
        line = _one_line(text)
        return line.replace(self._token, "<token>") if self._token else line

    def _request(
        self,
        method: str,
        path: str,
        *,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> tuple[int, Any]:
        """One call: (status, decoded JSON or None). Raises on transport errors and 4xx/5xx
        other than 404."""
        where = self._where(method, path)
        t = self.timeout if timeout is None else max(0.05, min(timeout, self.timeout))
        content = None
        headers = dict(self._auth)
        if body is not None:
            content = json.dumps(body, separators=(",", ":")).encode("utf-8")
            headers["Content-Type"] = "application/json"
        try:
            with self._http.request(
                method,
                path,
                endpoint=f"{method} {path}",
                params=list(params.items()) if params is not None else None,
                headers=headers,
                content=content,
                idempotent=method in ("GET", "DELETE"),
                ok=_ANY_STATUS,
                timeout_s=t,
                deadline_s=t,
            ) as answer:
                status = answer.status
                raw = _read_bounded(answer, where, "; not a Pinning Service API answer")
        except BackendUnavailable as exc:
            raise _unreachable(
                exc,
                where,
                t,
                wait_hint="; check the endpoint or raise the service's timeout_s",
                what="the service",
                check="the endpoint",
            ) from None
        data: Any = None
        unreadable: FormatError | None = None
        if raw.strip():
            try:
                data = load_foreign_json(raw, what=f"{where}: the answer", max_bytes=MAX_ANSWER)
                data = redact(data, self._token)
            except FormatError as exc:
                unreadable = exc  # an error status says more than why its body is unreadable
        if status in (401, 403):
            raise PinningAuthError(
                f"{where}: the service refused the access token (HTTP {status}"
                f"{self._reason_suffix(data)}); check the token file or ODFWEB3_PINNING_* "
                "variable",
                status,
                self._reason(data),
            )
        if unreadable is not None and status < 300:
            raise unreadable
        if status == 404 or status < 300:
            return status, data
        raise BackendRejected(
            f"{where}: HTTP {status}{self._reason_suffix(data)}", status, self._reason(data)
        )

    def _reason(self, data: Any) -> str:
        """``Failure.error.reason`` (+ ``details``), cleaned."""
        if isinstance(data, dict) and isinstance(data.get("error"), dict):
            err = data["error"]
            parts = [err.get("reason"), err.get("details")]
            return self._clean(": ".join(p for p in parts if isinstance(p, str) and p))
        return ""

    def _reason_suffix(self, data: Any) -> str:
        reason = self._reason(data)
        return f": {reason}" if reason else ""

    def _status(self, method: str, path: str, data: Any, cid: str | None) -> PinStatus:
        where = self._where(method, path)
        st = decode_pin_status(data, where)
        if cid is not None and st.cid != cid:
            raise FormatError(
                f"{where}: the service answered for CID {self._clean(st.cid)}, not {cid}; "
                "refusing its answer"
            )
        return st

    # -------------------------------------------------------------- operations

    def check_auth(self, timeout: float | None = None) -> None:
        """``GET /pins?limit=1``: raises PinningAuthError for a refused token."""
        status, data = self._request("GET", "/pins", params={"limit": "1"}, timeout=timeout)
        if status == 404 or not isinstance(data, dict) or "results" not in data:
            raise FormatError(
                f"{self._where('GET', '/pins')}: not a Pinning Service API (no PinResults); "
                "check the endpoint"
            )

    def add(self, body: Mapping[str, Any], timeout: float | None = None) -> PinStatus:
        """``POST /pins``."""
        status, data = self._request("POST", "/pins", body=body, timeout=timeout)
        if status == 404:
            raise BackendRejected(f"{self._where('POST', '/pins')}: HTTP 404", 404)
        return self._status("POST", "/pins", data, str(body["cid"]))

    def replace(
        self, requestid: str, body: Mapping[str, Any], timeout: float | None = None
    ) -> PinStatus:
        """``POST /pins/{requestid}``: the new pin replaces the old one in one call."""
        path = self._path(requestid)
        status, data = self._request("POST", path, body=body, timeout=timeout)
        if status == 404:
            raise BackendRejected(f"{self._where('POST', path)}: HTTP 404 (no such pin)", 404)
        return self._status("POST", path, data, str(body["cid"]))

    def get(
        self, requestid: str, cid: str | None = None, timeout: float | None = None
    ) -> PinStatus | None:
        """``GET /pins/{requestid}``; None when the service does not know it (404).

        ``cid``: the CID this pin is known to be for (asked, or recorded by the publish that
        made it); an answer naming another one is refused (FormatError)."""
        path = self._path(requestid)
        status, data = self._request("GET", path, timeout=timeout)
        if status == 404:
            return None
        return self._status("GET", path, data, cid)

    def remove(self, requestid: str, timeout: float | None = None) -> bool:
        """``DELETE /pins/{requestid}``; False when it was already gone (404)."""
        status, _ = self._request("DELETE", self._path(requestid), timeout=timeout)
        return status != 404

    def _cluster_call(
        self, method: str, url: str, params: Mapping[str, str], timeout: float | None
    ) -> Any:
        """One IPFS Cluster REST API call through the shared HTTP layer (bounded in time and
        size; a refused token is exit 77); its decoded JSON."""
        base, _, path = url.partition("://")
        host, _, rest = path.partition("/")
        origin, path = f"{base}://{host}", f"/{rest}"
        where = f"pinning service {self.service} ({method} {url})"
        t = self.timeout if timeout is None else max(0.05, min(timeout, self.timeout))
        client = HttpClient(
            origin,
            service=f"pinning service {self.service} ({origin})",
            hint="check cluster_api",
            settings=NetworkSettings(timeout_s=t, retries=0, command=self._http.settings.command),
            transport=self._transport,
        )
        try:
            with client.request(
                method,
                path,
                params=list(params.items()),
                headers=dict(self._auth),
                idempotent=method == "GET",
                ok=_ANY_STATUS,
                timeout_s=t,
                deadline_s=t,
            ) as answer:
                code = answer.status
                raw = _read_bounded(answer, where)
        except BackendUnavailable as exc:
            raise _unreachable(exc, where, t, what="it", check="cluster_api") from None
        finally:
            client.close()
        if code in (401, 403):
            raise PinningAuthError(
                f"{where}: the service refused the access token (HTTP {code})", code
            )
        if code >= 300:
            raise BackendRejected(
                f"{where}: HTTP {code}: {self._clean(raw.decode('utf-8', 'replace'))}", code
            )
        if not raw.strip():
            return None
        try:
            data = load_foreign_json(raw, what=f"{where}: the answer", max_bytes=len(raw))
        except FormatError as exc:
            raise FormatError(f"{exc}; is this a cluster REST API?") from None
        return redact(data, self._token)

    def cluster_error(self, url: str, cid: str, timeout: float | None = None) -> str:
        """The first peer error IPFS Cluster records for ``cid`` (REST ``GET /pins/{cid}``,
        ``peer_map.*.error``), cleaned to one line; empty when none."""
        seg = cid_segment(cid, f"pinning service {self.service}: cluster_api /pins/{{cid}}")
        data = self._cluster_call("GET", f"{url.rstrip('/')}/pins/{seg}", {}, timeout)
        peers = data.get("peer_map") if isinstance(data, dict) else None
        for pid, info in sorted((peers or {}).items()) if isinstance(peers, dict) else []:
            err = info.get("error") if isinstance(info, dict) else None
            if isinstance(err, str) and err:
                return self._clean(f"peer {info.get('peername') or pid}: {err}")
        return ""

    def cluster_allocations(self, url: str, cid: str, timeout: float | None = None) -> list[str]:
        """The peers IPFS Cluster allocated ``cid`` to (REST ``GET /allocations/{cid}``)."""
        seg = cid_segment(cid, f"pinning service {self.service}: cluster_api /allocations/{{cid}}")
        data = self._cluster_call("GET", f"{url.rstrip('/')}/allocations/{seg}", {}, timeout)
        allocs = data.get("allocations") if isinstance(data, dict) else None
        if not isinstance(allocs, list) or not all(isinstance(a, str) for a in allocs):
            raise FormatError(f"pinning service {self.service}: /allocations/{seg}: no peer list")
        return [a for a in allocs if re.fullmatch(r"[1-9A-HJ-NP-Za-km-z]{20,80}", a)]

    def cluster_pin(
        self,
        url: str,
        cid: str,
        *,
        name: str | None,
        meta: Mapping[str, str],
        origins: Sequence[str],
        allocations: Sequence[str],
        timeout: float | None = None,
    ) -> None:
        """Pin ``cid`` through IPFS Cluster's REST API (``POST /pins/{cid}``) on the given
        peers first (``user-allocations``): where the previous root lives, so only the new
        blocks move. The answer must name ``cid``."""
        params = _cluster_params(name, meta)
        if origins:
            params["origins"] = ",".join(origins)
        if allocations:
            params["user-allocations"] = ",".join(allocations)
        seg = cid_segment(cid, f"pinning service {self.service}: cluster_api /pins/{{cid}}")
        data = self._cluster_call("POST", f"{url.rstrip('/')}/pins/{seg}", params, timeout)
        got = data.get("cid") if isinstance(data, dict) else None
        if isinstance(got, dict):
            got = got.get("/")
        if got != cid:
            raise FormatError(
                f"pinning service {self.service}: POST /pins/{cid} answered for another CID"
            )

    def add_car(
        self,
        url: str,
        car: Path,
        root: str,
        *,
        name: str | None = None,
        meta: Mapping[str, str] | None = None,
        allocations: Sequence[str] = (),
        timeout: float | None = None,
    ) -> None:
        """Upload a CAR to IPFS Cluster's REST API (``POST {url}/add?format=car``): the cluster
        imports its blocks on the allocated peers and pins its root. The answer (JSON lines of
        ``AddedOutput``, at most :data:`MAX_ANSWER` bytes) must name ``root``.

        Raises:
            PinningAuthError / BackendRejected / BackendUnavailable: as for the other calls.
            FormatError: the answer does not name ``root``.
        """
        base = url.rstrip("/")
        where = f"pinning service {self.service} (POST {base}/add?format=car)"
        params = {"format": "car", "stream-channels": "false", "local": "false"}
        params |= _cluster_params(name, meta or {})
        if allocations:
            params["user-allocations"] = ",".join(allocations)
        t = self.timeout if timeout is None else max(0.05, min(timeout, self.timeout))
        settings = NetworkSettings(timeout_s=t, retries=0, command=self._http.settings.command)
        # The upload earns time at the minimum rate, like a download: t + size / min_rate.
        deadline = t + car.stat().st_size / settings.min_rate
        client = HttpClient(
            base,
            service=f"pinning service {self.service} ({base})",
            hint="check cluster_api",
            settings=settings,
            transport=self._transport,
        )
        try:
            with client.request(
                "POST",
                "/add",
                endpoint="POST /add?format=car",
                params=list(params.items()),
                headers=dict(self._auth),
                upload=lambda: car.open("rb"),
                upload_name=car.name,
                upload_type="application/vnd.ipld.car",
                idempotent=False,
                ok=_ANY_STATUS,
                deadline_s=deadline,
            ) as answer:
                status = answer.status
                raw = _read_bounded(answer, where)
        except BackendUnavailable as exc:
            raise _unreachable(exc, where, deadline, what="it", check="cluster_api") from None
        finally:
            client.close()
        data: Any = None
        with contextlib.suppress(FormatError):
            if raw.strip().startswith(b"["):
                data = load_foreign_json(raw, what=where, max_bytes=len(raw))
        if status in (401, 403):
            raise PinningAuthError(
                f"{where}: the service refused the access token (HTTP {status})",
                status,
            )
        if status >= 300:
            raise BackendRejected(
                f"{where}: HTTP {status}: {self._clean(raw.decode('utf-8', 'replace'))}",
                status,
            )
        lines = data if isinstance(data, list) else []
        if not lines:
            for line in raw.splitlines():
                with contextlib.suppress(FormatError):
                    lines.append(load_foreign_json(line, what=where, max_bytes=len(line)))
        lines = redact(lines, self._token)
        cids = set()
        for item in lines:
            c = item.get("cid") if isinstance(item, dict) else None
            if isinstance(c, dict):
                c = c.get("/")
            if isinstance(c, str):
                cids.add(c)
        if root not in cids:
            raise FormatError(f"{where}: the answer does not name the CAR's root {root}")

    def _path(self, requestid: str) -> str:
        if not _REQUEST_ID.match(requestid):
            raise FormatError(
                f"pinning service {self.service}: requestid "
                f"{self._clean(_one_line(requestid, 40))!r} is not URL-safe"
            )
        return f"/pins/{quote(requestid, safe='')}"

    def wait(
        self,
        requestid: str,
        cid: str,
        *,
        deadline: float,
        on_status: Callable[[PinStatus], None] = lambda st: None,
        first: PinStatus | None = None,
    ) -> PinStatus:
        """Poll ``GET /pins/{requestid}`` until ``pinned`` or ``failed`` (returned), or the
        deadline (``clock()`` value) passes.

        Raises:
            BackendUnavailable: the deadline passed (the pin may still complete later).
            BackendRejected: the pin vanished (404) while waiting.
        """
        if first is not None and first.cid != cid:
            raise FormatError(
                f"pinning service {self.service}: pin request {first.requestid} names CID "
                f"{self._clean(first.cid)}, not {cid}; refusing its answer"
            )
        delay = 0.2
        st = first
        last = None
        while True:
            if st is not None:
                if st.status != last:
                    on_status(st)
                    last = st.status
                if st.status in ("pinned", "failed"):
                    return st
            left = deadline - self._clock()
            if left <= 0:
                seen = st.status if st is not None else "no answer"
                raise BackendUnavailable(
                    f"pinning service {self.service}: {cid} not pinned before the deadline "
                    f"(last status: {seen}); the service may still finish it: run "
                    "odfweb3 status later, or raise deadline_s"
                )
            self._sleep(min(delay, left))
            delay = min(delay * 1.5, 5.0)
            left = deadline - self._clock()
            if left <= 0:
                continue
            got = self.get(requestid, cid, timeout=left)
            if got is None:
                raise BackendRejected(
                    f"pinning service {self.service}: pin request {requestid} for {cid} "
                    "disappeared while waiting (404)",
                    404,
                )
            st = got


def _read_bounded(answer: Answer, where: str, note: str = "") -> bytes:
    """The whole answer, at most :data:`MAX_ANSWER` bytes (larger: FormatError naming ``where``)."""
    try:
        return answer.read(MAX_ANSWER)
    except BackendRejected as exc:
        if exc.detail != "answer too large":
            raise
        raise FormatError(f"{where}: answer larger than {MAX_ANSWER} bytes{note}") from None


def _unreachable(
    exc: BackendUnavailable,
    where: str,
    seconds: float,
    *,
    what: str,
    check: str,
    wait_hint: str = "",
) -> BackendUnavailable:
    """One line for a call that got no answer: timed out (no httpx cause: the deadline passed
    mid-answer) or could not connect."""
    cause = exc.__cause__  # the httpx error
    if cause is None or isinstance(cause, httpx.TimeoutException):
        return BackendUnavailable(f"{where}: no answer within {seconds:.0f} s{wait_hint}")
    return BackendUnavailable(
        f"{where}: cannot reach {what} ({type(cause).__name__}); check {check}"
    )
