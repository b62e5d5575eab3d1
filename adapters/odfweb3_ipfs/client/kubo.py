"""A small client for the Kubo RPC API (``POST /api/v0/...``), also spoken by js-ipfs.

Only what odfweb3 needs (docs/design.md, "IPFS mapping"): node detection, ``dag/import`` of a
CAR streamed from disk, ``block/stat``, pins, key import, IPNS record put/get and
``name/publish``, ``cat``. Every call goes through :meth:`KuboClient.call` and the shared
HTTP layer (:mod:`odfweb3.transport.http`), which:

- sends query ``arg`` values and options (booleans as ``true``/``false``);
- streams multipart uploads from open files (never loads a CAR into memory);
- retries *idempotent* calls on connection errors, timeouts and 5xx answers that
  are not a well-formed node error, with exponential backoff and full jitter; a
  node's own error answer (``{"Message": …, "Type": "error"}``) is final;
- bounds every answer: :data:`MAX_ANSWER` bytes for an answer read whole (less where the
  caller knows better: a block, a record, ``cat``), :data:`MAX_STREAM_ANSWER` for JSON
  lines, and the operation's deadline (``network.deadline_s``);
- translates failures ONCE: :class:`~odfweb3.errors.BackendUnavailable` when
  the node cannot be reached, :class:`~odfweb3.errors.BackendRejected` naming the
  endpoint, the HTTP status and the node's message otherwise, with what to do for each
  refusal Kubo is known to give (:data:`KUBO_REFUSALS`); a ``name/put`` refused for its
  sequence is a :class:`~odfweb3.errors.ConflictError` (another publisher moved the
  name). Query strings are never put in messages (``key/import`` carries key material
  in its query on js-ipfs).

Node differences handled here (Kubo v0.43.1 is the suite's node, docs/kubo-notes.md; js-ipfs
0.66.1 was before Kubo, docs/jsipfs-notes.md, and is now covered by unit tests only):

=========================  ===========================  ==============================
need                       Kubo                         js-ipfs 0.66.1
=========================  ===========================  ==============================
detect                     ``version`` has ``Golang``   ``version`` has ``ipfs-core``
CIDs in answers            base32 CIDv1                 base58btc (``zdj7…``): compare
                                                        as bytes (:class:`.cid.Cid`)
put a pre-signed record    ``name/put`` (Kubo ≥ 0.40:   ``dht/put`` (kept in the local
                           checks signature, size,      datastore when offline)
                           sequence); older Kubo (404):
                           ``routing/put``; both with
                           ``allow-offline``
get the raw record         ``name/get`` (raw bytes);    ``dht/get`` → ``Extra``
                           404: ``routing/get`` →
                           ``Extra``
import a key               multipart protobuf           ``pem`` query: PBKDF2 + AES-GCM
                           (``libp2p-protobuf-          blob (libp2p-crypto exporter)
                           cleartext``)
list keys                  ``key/ls`` (``key/list``)    ``key/list`` only
missing block              ``block/stat`` fails fast    waits for the network: always
                           offline                      pass ``timeout``
IPNS name form             ``k51…`` or peer ID          peer ID only (``k51…`` is
                                                        taken for a DNSLink domain)
=========================  ===========================  ==============================
"""

from __future__ import annotations

import base64
import io
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO, Final, Literal

import httpx
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

from odfweb3.errors import BackendRejected, ConflictError, FormatError
from odfweb3.foreign_json import load_foreign_json
from odfweb3.transport.http import Answer, HttpClient
from odfweb3.transport.settings import NetworkSettings
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.formats.ipns import MAX_RECORD_SIZE
from odfweb3_ipfs.formats.libp2p_keys import IpnsName, private_key_to_protobuf

__all__ = [
    "KUBO_REFUSALS",
    "MAX_ANSWER",
    "MAX_STREAM_ANSWER",
    "KuboClient",
    "NodeInfo",
    "NodeKind",
    "RpcStats",
    "jsipfs_key_blob",
]

NodeKind = Literal["kubo", "js-ipfs"]
ArgValue = str | int | bool
OpenBody = Callable[[], BinaryIO]

_MAX_DETAIL: Final = 300
#: The most bytes one RPC answer read whole may have (a block, a record, a key list).
MAX_ANSWER: Final = 32 << 20
#: The most bytes of a JSON-lines answer (``dag/import`` roots and stats).
MAX_STREAM_ANSWER: Final = 256 << 20
_RETRY_STATUSES: Final = frozenset({500, 502, 503, 504})
# js-ipfs key import: libp2p-crypto's exporter (ciphers/aes-gcm.js defaults).
_JS_KEY_SALT: Final = 16
_JS_KEY_NONCE: Final = 12
_JS_KEY_ITERATIONS: Final = 32767
_JS_KEY_LENGTH: Final = 16

# Kubo's own refusals on the paths odfweb3 uses (seen on Kubo v0.43.1, docs/kubo-notes.md):
# a substring of the node's message -> what to do. The first match is used.
KUBO_REFUSALS: Final[tuple[tuple[str, str], ...]] = (
    (
        "is not pinned",
        "the node does not pin it (unpinned or garbage-collected): publish again to re-send "
        "and pin it",
    ),
    (
        "was not recursively pinned",
        "the previous root is not pinned on the node: publish again (it pins the new root)",
    ),
    (
        "not found locally",
        "the node lacks the block: publish again (it re-sends what is missing) or use the "
        "node that has it",
    ),
    (
        "context deadline exceeded",
        "the node did not find it in time: check that the node (or a peer it is connected "
        "to) has the content, then retry",
    ),
    (
        "must be run in online mode",
        "the node runs with --offline, which cannot read records: restart it with "
        "`ipfs daemon` (no bootstrap peers needed)",
    ),
    (
        "record exceeds maximum size",
        "the IPNS record is over the 10 KiB limit of the IPNS spec: publish with fewer "
        "--with-inputs entries",
    ),
    (
        "no key by the given name",
        "the key is not in the node's keystore: publish again (odfweb3 imports it)",
    ),
    (
        "routing: not found",
        "the node knows no record for this name: publish it first, or connect the node to "
        "the publisher's node",
    ),
)
_SEQUENCE_REFUSAL: Final = re.compile(
    r"existing IPNS record has sequence (\d+) (?:>=|\\u003e=) new record sequence (\d+)"
)


@dataclass(frozen=True)
class NodeInfo:
    """What ``/api/v0/version`` says about the node."""

    kind: NodeKind
    version: str
    raw: Mapping[str, Any]


@dataclass
class RpcStats:
    """Counters for one client: RPC calls made (retries included) and bytes uploaded."""

    calls: int = 0
    retries: int = 0
    bytes_sent: int = 0
    by_endpoint: dict[str, int] | None = None
    seconds: dict[str, float] | None = None

    def timed(self, endpoint: str, seconds: float) -> None:
        """Add ``seconds`` of wall time spent in ``endpoint`` (until its answer was read)."""
        if self.seconds is None:
            self.seconds = {}
        self.seconds[endpoint] = self.seconds.get(endpoint, 0.0) + seconds

    def count(self, endpoint: str) -> None:
        """Count one call to ``endpoint``."""
        self.calls += 1
        if self.by_endpoint is None:
            self.by_endpoint = {}
        self.by_endpoint[endpoint] = self.by_endpoint.get(endpoint, 0) + 1


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat[:_MAX_DETAIL] + ("…" if len(flat) > _MAX_DETAIL else "")


def _node_message(body: bytes) -> str | None:
    """The node's error message from a ``{"Message", "Type": "error"}`` body, if it is one."""
    try:
        data = load_foreign_json(body, what="node error", max_bytes=len(body))
    except FormatError:
        return None
    if isinstance(data, dict) and isinstance(data.get("Message"), str):
        return str(data["Message"])
    return None


def _retry_status(status: int, body: bytes) -> bool:
    """5xx answers are retried, except a node's own well-formed error on HTTP 500 (final)."""
    return status in _RETRY_STATUSES and (_node_message(body) is None or status != 500)


def _refusal_hint(detail: str) -> str:
    """What to do about a node's refusal (:data:`KUBO_REFUSALS`), else the node's log."""
    for needle, hint in KUBO_REFUSALS:
        if needle in detail:
            return hint
    return "see the node's log"


def _arg_text(value: ArgValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _raise_unless_missing(exc: BackendRejected) -> None:
    """Return for a 500 that means "not found" (or not found in time); raise anything else
    (a 500 "must be run in online mode" is not an absent record)."""
    if exc.status == 500 and "must be run in online mode" not in exc.detail:
        return
    raise exc


def jsipfs_key_blob(key: Ed25519PrivateKey, password: str) -> str:
    """Encrypt a key for js-ipfs ``key/import`` (libp2p-crypto ``exporter`` format).

    The blob is multibase base64 (``m…``) of ``salt(16) | nonce(12) | AES-128-GCM
    ciphertext | tag(16)`` of the libp2p protobuf private key, with the AES key from
    PBKDF2-HMAC-SHA256 (32767 iterations) of ``password`` — the defaults of
    ``@libp2p/crypto`` ``ciphers/aes-gcm.js``, which js-ipfs's importer expects.
    """
    salt = os.urandom(_JS_KEY_SALT)
    nonce = os.urandom(_JS_KEY_NONCE)
    kdf = PBKDF2HMAC(hashes.SHA256(), _JS_KEY_LENGTH, salt, _JS_KEY_ITERATIONS)
    aes = AESGCM(kdf.derive(password.encode("utf-8")))
    sealed = aes.encrypt(nonce, private_key_to_protobuf(key), None)
    return "m" + base64.b64encode(salt + nonce + sealed).decode("ascii").rstrip("=")


class KuboClient:
    """Kubo RPC client (also for js-ipfs).

    Args:
        api_url: the RPC API base, e.g. ``http://127.0.0.1:5001``.
        settings: budgets (per-read timeout, deadline, retries; ``network:`` in the config).
        timeout: seconds to wait for connect and for each read (overrides ``settings``).
        retries: extra attempts for idempotent calls (overrides ``settings``).
        backoff: first backoff in seconds (doubles each attempt, full jitter).
        transport: an httpx transport (tests of faults only).
        sleep: the sleep function (tests).
    """

    def __init__(
        self,
        api_url: str,
        *,
        settings: NetworkSettings | None = None,
        timeout: float | None = None,
        retries: int | None = None,
        backoff: float | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.api_url = api_url.rstrip("/")
        base = settings or NetworkSettings()
        self.settings = replace(
            base,
            timeout_s=base.timeout_s if timeout is None else timeout,
            retries=base.retries if retries is None else retries,
            backoff_s=base.backoff_s if backoff is None else backoff,
        )
        self.timeout = self.settings.timeout_s
        self.retries = self.settings.retries
        self.backoff = self.settings.backoff_s
        self.stats = RpcStats()
        self._http = HttpClient(
            f"{self.api_url}/api/v0/",
            service=f"IPFS node {self.api_url}",
            hint="check that the node runs and ODFWEB3_IPFS_API / ipfs.api points at it",
            settings=self.settings,
            reject=self._rejected,
            retry=_retry_status,
            transport=transport,
            sleep=sleep,
        )
        self._node: NodeInfo | None = None
        self._name_put: bool | None = None  # None: not tried yet; False: 404 (Kubo < 0.40)
        self._name_get: bool | None = None

    def __repr__(self) -> str:
        return f"KuboClient({self.api_url!r})"

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> KuboClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the one place requests are made (odfweb3.transport.http) -------------------------

    def _where(self, endpoint: str) -> str:
        return f"{self.api_url}/api/v0/{endpoint}"

    def _rejected(self, method: str, endpoint: str, status: int, raw: bytes) -> BackendRejected:
        message = _node_message(raw)
        detail = _one_line(message if message is not None else raw.decode("utf-8", "replace"))
        hint = (
            "this node does not support the endpoint"
            if status in (404, 405)
            else _refusal_hint(detail)
        )
        return BackendRejected(
            f"IPFS node rejected {self.api_url}{endpoint}: HTTP {status}: "
            f"{detail or '(no message)'}; {hint}",
            status,
            detail,
        )

    @contextmanager
    def _open(
        self,
        endpoint: str,
        params: Sequence[tuple[str, str]],
        body: OpenBody | None,
        *,
        idempotent: bool,
        timeout: float | None,
    ) -> Iterator[Answer]:
        """Send one call (with retries) and yield the streamed, successful answer."""
        started = time.perf_counter()
        retries_before = self._http.retries

        def sent(n: int) -> None:
            self.stats.bytes_sent += n

        try:
            with self._http.request(
                "POST",
                endpoint,
                endpoint=f"/api/v0/{endpoint}",
                params=params,
                upload=body,
                idempotent=idempotent,
                timeout_s=timeout,
                deadline_s=None if timeout is None else max(timeout, self.settings.deadline_s),
                on_attempt=lambda: self.stats.count(endpoint),
                on_sent=sent,
            ) as answer:
                yield answer
        finally:
            self.stats.retries += self._http.retries - retries_before
            self.stats.timed(endpoint, time.perf_counter() - started)

    def call(
        self,
        endpoint: str,
        args: Sequence[ArgValue] = (),
        options: Mapping[str, ArgValue | None] | None = None,
        *,
        body: OpenBody | None = None,
        idempotent: bool = True,
        timeout: float | None = None,
        limit: int = MAX_ANSWER,
    ) -> bytes:
        """Call an endpoint and return its whole answer, at most ``limit`` bytes."""
        params = self._params(args, options)
        with self._open(endpoint, params, body, idempotent=idempotent, timeout=timeout) as answer:
            data = answer.read(limit)
        self._check_stream_error(endpoint, data.splitlines()[-1:] if data else [])
        return data

    def call_json(
        self,
        endpoint: str,
        args: Sequence[ArgValue] = (),
        options: Mapping[str, ArgValue | None] | None = None,
        **kw: Any,
    ) -> Any:
        """Call an endpoint that answers one JSON document."""
        data = self.call(endpoint, args, options, **kw)
        if not data.strip():
            return {}
        try:
            return load_foreign_json(data, what=self._where(endpoint), max_bytes=len(data))
        except FormatError:
            raise BackendRejected(
                f"IPFS node answered {self._where(endpoint)} with something that is not JSON: "
                f"{_one_line(data[:200].decode('utf-8', 'replace'))}; is this a Kubo RPC API?",
                200,
                "not JSON",
            ) from None

    def stream_json(
        self,
        endpoint: str,
        args: Sequence[ArgValue] = (),
        options: Mapping[str, ArgValue | None] | None = None,
        *,
        body: OpenBody | None = None,
        idempotent: bool = True,
        timeout: float | None = None,
        limit: int = MAX_STREAM_ANSWER,
    ) -> Iterator[dict[str, Any]]:
        """Call an endpoint answering JSON lines; yield each object as it arrives.

        A line ``{"Message": …, "Type": "error"}`` (how both nodes report an error after
        the 200 header) raises BackendRejected. At most ``limit`` bytes in all, each line
        at most 1 MiB.
        """
        params = self._params(args, options)
        with self._open(endpoint, params, body, idempotent=idempotent, timeout=timeout) as answer:
            for raw in answer.iter_lines(limit):
                line = raw.decode("utf-8", "replace")
                if not line.strip():
                    continue
                try:
                    item = load_foreign_json(raw, what=self._where(endpoint), max_bytes=len(raw))
                except FormatError:
                    raise BackendRejected(
                        f"IPFS node answered {self._where(endpoint)} with a line that is "
                        f"not JSON: {_one_line(line[:200])}",
                        200,
                        "not JSON",
                    ) from None
                if not isinstance(item, dict):
                    continue
                self._check_stream_error(endpoint, [raw])
                yield item
            trailer = answer.headers.get("X-Stream-Error")
            if trailer:
                raise BackendRejected(
                    f"IPFS node failed during {self._where(endpoint)}: {_one_line(trailer)}",
                    200,
                    _one_line(trailer),
                )

    def _check_stream_error(self, endpoint: str, lines: Sequence[bytes]) -> None:
        for line in lines:
            if b'"Type"' not in line:
                continue
            try:
                item = load_foreign_json(line, what="node error", max_bytes=len(line))
            except FormatError:
                continue
            if isinstance(item, dict) and item.get("Type") == "error" and "Message" in item:
                detail = _one_line(str(item["Message"]))
                raise BackendRejected(
                    f"IPFS node failed during {self._where(endpoint)}: {detail}", 200, detail
                )

    @staticmethod
    def _params(
        args: Sequence[ArgValue], options: Mapping[str, ArgValue | None] | None
    ) -> list[tuple[str, str]]:
        params = [("arg", _arg_text(a)) for a in args]
        for key, value in (options or {}).items():
            if value is not None:
                params.append((key, _arg_text(value)))
        return params

    # -- node ---------------------------------------------------------------------------

    @property
    def node(self) -> NodeInfo:
        """The node's kind and version (``/api/v0/version``, asked once)."""
        if self._node is None:
            data = self.call_json("version")
            if not isinstance(data, dict) or "Version" not in data:
                raise BackendRejected(
                    f"{self._where('version')}: answer has no Version; is this an IPFS RPC API?",
                    200,
                    "no Version",
                )
            js = "ipfs-core" in data or "interface-ipfs-core" in data
            self._node = NodeInfo("js-ipfs" if js else "kubo", str(data["Version"]), data)
        return self._node

    def name_arg(self, name: IpnsName) -> str:
        """The form of an IPNS name this node accepts (js-ipfs: peer ID only)."""
        return name.peer_id if self.node.kind == "js-ipfs" else str(name)

    # -- blocks and DAGs ----------------------------------------------------------------

    def block_size(self, cid: Cid, *, wait: str = "5s") -> int | None:
        """The size of a block the node holds, or None when it does not have it.

        ``wait`` bounds how long the node may look for it (js-ipfs waits for the
        network otherwise, even with ``--offline``).
        """
        try:
            data = self.call_json("block/stat", [cid.encode()], {"offline": True, "timeout": wait})
        except BackendRejected as exc:
            if exc.status == 500:  # not found / timed out looking: the node lacks it
                return None
            raise
        return int(data.get("Size", 0))

    def has_pin(self, cid: Cid) -> bool:
        """Whether ``cid`` is pinned recursively (then its whole DAG is on the node)."""
        try:
            data = self.call_json("pin/ls", [cid.encode()], {"type": "recursive"})
        except BackendRejected as exc:
            if exc.status == 500:  # "is not pinned"
                return False
            raise
        keys = data.get("Keys") or {}
        return any(Cid.decode(k).raw == cid.raw for k in keys)

    def dag_import(self, car: Path, *, timeout: float | None = 3600.0) -> list[Cid]:
        """Import a CAR file (streamed from disk, never pinning its roots); return roots seen
        (Kubo reports none with ``pin-roots=false``: callers check the root with ``block/stat``).

        Retried on connection errors: content addressing makes a repeat harmless.
        """
        roots: list[Cid] = []
        for item in self.stream_json(
            "dag/import",
            options={"pin-roots": False, "stats": True},
            body=lambda: open(car, "rb"),  # noqa: SIM115 - closed by _open
            timeout=timeout,
        ):
            root = item.get("Root")
            if isinstance(root, dict) and isinstance(root.get("Cid"), dict):
                roots.append(Cid.decode(str(root["Cid"]["/"])))
        return roots

    def pin_add(self, cid: Cid, *, timeout: float | None = 3600.0, offline: bool = False) -> None:
        """Pin ``cid`` recursively (fails if any block under it is missing).

        ``offline``: the node does not look for missing blocks on the network (Kubo's
        global ``--offline``), so a DAG it does not hold whole fails at once.
        """
        options: dict[str, ArgValue | None] = {"recursive": True}
        if offline:
            options["offline"] = True
        data = self.call_json("pin/add", [cid.encode()], options, timeout=timeout)
        pins = [Cid.decode(str(p)) for p in data.get("Pins") or []]
        if pins and all(p.raw != cid.raw for p in pins):
            raise BackendRejected(
                f"{self._where('pin/add')}: node pinned {pins[0]}, not {cid}", 200, "wrong pin"
            )

    def pin_update(self, old: Cid, new: Cid, *, timeout: float | None = 3600.0) -> None:
        """Pin ``new`` recursively walking only what differs from pinned ``old`` (Kubo).

        ``unpin=false`` keeps ``old`` pinned. js-ipfs has no ``pin/update`` (404): callers
        fall back to :meth:`pin_add`, which walks the whole DAG.
        """
        self.call("pin/update", [old.encode(), new.encode()], {"unpin": False}, timeout=timeout)

    def pin_rm(self, cid: Cid) -> None:
        """Unpin ``cid`` (blocks shared with other pins stay)."""
        self.call("pin/rm", [cid.encode()], {"recursive": True}, idempotent=False)

    def cat(self, path: str, *, max_size: int = 1 << 20) -> bytes:
        """The bytes of a (small) file by IPFS path, at most ``max_size``."""
        data = self.call("cat", [path], {"length": max_size}, limit=max_size + 1024)
        return data[:max_size]

    # -- keys and names -----------------------------------------------------------------

    def key_names(self) -> dict[str, str]:
        """Key name -> key id (peer ID text) of the node's keystore."""
        endpoint = "key/list" if self.node.kind == "js-ipfs" else "key/ls"
        data = self.call_json(endpoint)
        return {str(k["Name"]): str(k["Id"]) for k in data.get("Keys") or []}

    def key_import(self, name: str, key: Ed25519PrivateKey) -> None:
        """Import an Ed25519 key under ``name`` (key material never reaches a message)."""
        if self.node.kind == "js-ipfs":
            password = base64.urlsafe_b64encode(os.urandom(24)).decode("ascii")
            blob = jsipfs_key_blob(key, password)
            self.call("key/import", [name], {"pem": blob, "password": password}, idempotent=False)
            return
        pb = private_key_to_protobuf(key)
        self.call(
            "key/import",
            [name],
            {"format": "libp2p-protobuf-cleartext"},
            body=lambda: io.BytesIO(pb),
            idempotent=False,
        )

    def record_put(self, name: IpnsName, record: bytes) -> str:
        """Store a pre-signed IPNS record on the node; return the endpoint used.

        Kubo ≥ 0.40: ``name/put`` (the node checks signature, size and that the sequence is
        higher than its current record's; an identical record is accepted); older Kubo
        answers 404 for it: ``routing/put``. Both with ``allow-offline`` (stored even with
        no peer to push to). js-ipfs: ``dht/put``.

        Raises:
            ConflictError: the node holds a record with a sequence >= ours.
            BackendRejected: any other refusal (404 where no endpoint exists).
        """
        if self.node.kind == "js-ipfs":
            self.call("dht/put", [f"/ipns/{name.peer_id}"], body=lambda: io.BytesIO(record))
            return "dht/put"
        if self._name_put is not False:
            try:
                self.call(
                    "name/put",
                    [str(name)],
                    {"allow-offline": True},
                    body=lambda: io.BytesIO(record),
                )
                self._name_put = True
                return "name/put"
            except BackendRejected as exc:
                if exc.status not in (404, 405):
                    raise self._sequence_conflict(exc, name) or exc from None
                self._name_put = False  # Kubo < 0.40
        self.call(
            "routing/put",
            [f"/ipns/{name}"],
            {"allow-offline": True},
            body=lambda: io.BytesIO(record),
        )
        return "routing/put"

    def _sequence_conflict(self, exc: BackendRejected, name: IpnsName) -> ConflictError | None:
        found = _SEQUENCE_REFUSAL.search(exc.detail)
        if found is None:
            return None
        return ConflictError(
            f"{self._where('name/put')}: the node holds sequence {found.group(1)} for {name}, "
            f"ours is {found.group(2)}: another publisher moved the name; run odfweb3 status, "
            "then publish again"
        )

    def record_get(self, name: IpnsName, *, wait: str = "5s") -> bytes | None:
        """The raw IPNS record the node holds for ``name`` (unverified, at most 10 KiB), or
        None when the node finds none (in ``wait``).

        Kubo ≥ 0.40: ``name/get`` (the raw record); older Kubo (404): ``routing/get``
        (base64 in ``Extra``); js-ipfs: ``dht/get``.
        """
        if self.node.kind == "kubo" and self._name_get is not False:
            try:
                data = self.call("name/get", [str(name)], {"timeout": wait}, limit=MAX_RECORD_SIZE)
                self._name_get = True
                return data or None
            except BackendRejected as exc:
                if exc.status not in (404, 405):
                    _raise_unless_missing(exc)
                    return None
                self._name_get = False
        endpoint = "dht/get" if self.node.kind == "js-ipfs" else "routing/get"
        try:
            data = self.call(
                endpoint,
                [f"/ipns/{self.name_arg(name)}"],
                {"timeout": wait},
                limit=1 << 20,  # base64 in JSON lines, maybe repeated
            )
        except BackendRejected as exc:
            _raise_unless_missing(exc)
            return None
        for line in data.splitlines():
            try:
                item = load_foreign_json(line, what="routing/get", max_bytes=len(line))
            except FormatError:
                continue
            extra = item.get("Extra") if isinstance(item, dict) else None
            if isinstance(item, dict) and isinstance(extra, str) and extra:
                try:
                    return base64.b64decode(extra + "=" * (-len(extra) % 4))
                except ValueError:
                    raise FormatError(
                        f"{self._where(endpoint)}: Extra is not base64; cannot read the record"
                    ) from None
        return None

    def name_publish(
        self, value: str, key_name: str, *, lifetime: str = "48h", ttl: str = "5m"
    ) -> str:
        """Let the node sign and publish ``value`` under ``key_name`` (no extension fields)."""
        data = self.call_json(
            "name/publish",
            [value],
            {
                "key": key_name,
                "lifetime": lifetime,
                "ttl": ttl,
                "resolve": False,
                "allow-offline": True,
            },
            idempotent=False,
        )
        return str(data.get("Value", ""))
