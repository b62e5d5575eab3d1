"""Read-only replicas over IPFS: ``ipfs://<cid>``, ``ipns://<name>``, ``ipns://<domain>``.

Every node and gateway is untrusted (DESIGN.md section 2). What is checked, and against what:

- **The root and refs/head.** Where verifiable blocks can be had — a trustless gateway's
  raw blocks (``?format=raw``, ``Accept: application/vnd.ipld.raw``; Kubo's gateway serves
  them, js-ipfs 0.66.1's does not, see docs/jsipfs-notes.md), else its one-block CARs
  (``?format=car&dag-scope=block``, each block verified against its CID), else the RPC
  ``block/get`` — the path ``<root>/refs/head`` is read block by block, each block checked
  against its CID (:mod:`.unixfs_reader`). With none of these the read is refused (issue 16
  item 1: a gateway's deserialized answer is not tied to the CID, so a hostile one could
  serve any dataset under any CID), unless the loudly named opt-in
  ``ipfs.insecure_unverified_paths`` is set: then the replica is marked ``unverified`` and
  no command reports it ``identical``.
- **Blocks and objects.** By default they are read by path from the gateway
  (``/ipfs/<root>/blocks/<hash>``, ``/data/<hash>``, ...) and checked against their ODF
  hashes, which come from the verified chain (blocks here, objects by the pull /
  :func:`odfweb3.replica.read_object_verified`), never reading more than the recorded size.
  With ``trustless=True`` they too are read as CID-verified blocks.
- **IPNS records** are fetched raw — from the gateway
  (``Accept: application/vnd.ipfs.ipns-record``, Kubo) or the RPC (``routing/get`` on Kubo,
  ``dht/get`` on js-ipfs) — and verified here (:func:`.ipns.verify_record`: signature, name
  binding, expiry). A node that gives no raw record is refused: ``name/resolve`` answers
  cannot be verified. A record older than one already seen for the name (a replay) or a
  different record with the same sequence is refused when a :class:`SequenceMemory` is given.
  The record's ``_odf.head`` must equal the served ``refs/head`` and ``_odf.datasetId`` the
  Seed's ID; :func:`odfweb3.resolve.resolve_dataset` checks both.
- **DNSLink** (``ipns://example.org``): the TXT records of ``_dnslink.example.org``
  (``dnslink=/ipfs/…`` or ``dnslink=/ipns/…``, the lexicographically first valid one, up to
  32 hops) from an injectable :data:`DnsTxtLookup`; by default the node's RPC ``dns``. DNS
  is not authenticated: what it points at is verified like any other reference.
- **Encrypted publishes without a record** (issue 7): ``ipfs://<cid>`` of an encrypted
  publish has no record, hence no ``_odf.keyEnvelope``. Its ``refs/head`` starts with the
  ciphertext header (:data:`odfweb3.crypto.segments.MAGIC`), which is recognised and refused
  with one line naming ``--key-envelope``. Given the envelope (:meth:`IpfsReplica.use_envelope`,
  :func:`read_ipfs_file`), the head is whatever ``refs/head`` decrypts to
  (:meth:`IpfsReplica.bind_sealed_head`): AES-GCM authenticates it under the dataset's key,
  and the root CID binds the ciphertext when raw blocks are read.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import httpx

from odfweb3.crypto.envelope import decode_envelope
from odfweb3.crypto.keys import KeyRing
from odfweb3.crypto.segments import MAGIC, decrypt_bytes
from odfweb3.descriptor import decode_descriptor
from odfweb3.errors import (
    BackendRejected,
    BackendUnavailable,
    DecryptionError,
    FormatError,
    NotFound,
    ReplicaMismatch,
    ResolutionError,
)
from odfweb3.odf.layout import MAX_BLOCK_SIZE, ObjectKind, object_relpath
from odfweb3.odf.multihash import multihash_from_str, multihash_to_str, verify_bytes
from odfweb3.resolve import NameClaims
from odfweb3.transport.http import Answer, HttpClient
from odfweb3.transport.settings import NetworkSettings

from .car import iter_car
from .cid import CODEC_RAW, Cid
from .ipns import MAX_RECORD_SIZE, IpnsRecord, verify_record
from .kubo import KuboClient
from .libp2p_keys import IpnsName, parse_ipns_name
from .unixfs_reader import BlockGetter, list_directory, read_file, resolve_path

__all__ = [
    "RAW_BLOCK_TYPE",
    "RECORD_TYPE",
    "DnsTxtLookup",
    "IpfsAccess",
    "IpfsGateway",
    "IpfsReplica",
    "SequenceMemory",
    "node_dns_lookup",
    "open_ipfs_ref",
    "open_ipns_name",
    "parse_dnslink",
    "read_ipfs_file",
]

RAW_BLOCK_TYPE: Final = "application/vnd.ipld.raw"
CAR_TYPE: Final = "application/vnd.ipld.car"
RECORD_TYPE: Final = "application/vnd.ipfs.ipns-record"
MAX_DNSLINK_HOPS: Final = 32  # DNSLink: recursion limit
_MAX_DNSLINK_PATH: Final = 1024  # a node's answer to resolve/dns: a path, never more
MAX_HEAD_SIZE: Final = 256
MAX_DESCRIPTOR_SIZE: Final = 1 << 20
MAX_ENVELOPE_SIZE: Final = 4 << 20
_BLOCK_CACHE_BYTES: Final = 64 << 20
#: The most bytes a gateway stream reads when the caller names no size.
MAX_STREAM: Final = 64 << 30
_GATEWAY_RETRY: Final = frozenset({429, 502, 503, 504})
_ANY_STATUS: Final = frozenset(range(100, 600))

#: The TXT strings of a DNS name (``_dnslink.example.org``); tests pass their own answers.
DnsTxtLookup = Callable[[str], Sequence[str]]


class IpfsGateway:
    """An IPFS HTTP gateway, read-only (GET), its answers unverified here.

    Requests go through the shared HTTP layer (:mod:`odfweb3.transport.http`): bounded in
    size (every read names its limit) and time (``network.deadline_s``), retried on 429,
    502, 503 and 504 (not 500: js-ipfs answers 500 for a missing path).

    Args:
        url: the gateway base, e.g. ``http://127.0.0.1:8080``.
        settings: budgets (``network:`` in the config).
        timeout: seconds for connect and each read (overrides ``settings``).
        transport: an httpx transport (fault tests only).
    """

    def __init__(
        self,
        url: str,
        *,
        settings: NetworkSettings | None = None,
        timeout: float | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        base = settings or NetworkSettings()
        self.settings = base if timeout is None else replace(base, timeout_s=timeout)
        self._http = HttpClient(
            self.url,
            service=f"IPFS gateway {self.url}",
            hint="check ODFWEB3_IPFS_GATEWAY / ipfs.gateway and retry",
            settings=self.settings,
            retry=lambda status, body: status in _GATEWAY_RETRY,
            follow_redirects=True,
            max_connections=64,
            transport=transport,
        )
        self._raw: bool | None = None
        self._car: bool | None = None
        self._records: bool | None = None

    def __repr__(self) -> str:
        return f"IpfsGateway({self.url!r})"

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def _fail(self, path: str, status: int) -> NotFound | BackendRejected:
        where = f"IPFS gateway {self.url}{path}"
        if status in (404, 410):
            return NotFound(f"{where}: not found ({status})")
        # js-ipfs answers 500 for a missing path below a directory (docs/jsipfs-notes.md).
        return BackendRejected(
            f"{where}: HTTP {status}; the gateway lacks it or failed (see its log)",
            status,
            "gateway error",
        )

    @contextlib.contextmanager
    def _send(
        self, path: str, headers: dict[str, str] | None = None, *, follow: bool = True
    ) -> Iterator[Answer]:
        """``GET path``; every status is handed over (the caller decides)."""
        with self._http.request(
            "GET",
            path,
            endpoint=path.split("?")[0],
            headers=headers,
            ok=_ANY_STATUS,
            follow_redirects=follow,
        ) as answer:
            yield answer

    def fetch(self, path: str, *, limit: int) -> bytes:
        """``GET path``: at most ``limit`` bytes (more is a FormatError)."""
        with self._send(path) as r:
            if r.status != 200:
                raise self._fail(path, r.status)
            return _read_limited(r, limit, f"{self.url}{path}")

    def stream(
        self, path: str, chunk_size: int = 1 << 20, *, limit: int = MAX_STREAM
    ) -> Iterator[bytes]:
        """Stream ``GET path``, at most ``limit`` bytes (the caller hashes)."""
        with self._send(path) as r:
            if r.status != 200:
                raise self._fail(path, r.status)
            yield from r.iter_bytes(limit, chunk_size)

    def raw_block(self, cid: Cid) -> bytes | None:
        """A raw block (trustless gateway), or None when the gateway serves none."""
        if self._raw is False:
            return None
        path = f"/ipfs/{cid.encode()}?format=raw"
        with self._send(path, {"Accept": RAW_BLOCK_TYPE}, follow=False) as r:
            kind = r.content_type()
            if r.status != 200 or kind != RAW_BLOCK_TYPE:
                if self._raw is None:
                    self._raw = False  # js-ipfs: 301 to a listing, or the file itself
                    return None
                raise self._fail(path, r.status)
            self._raw = True
            return _read_limited(r, MAX_BLOCK_SIZE, f"{self.url}{path}")

    def car_block(self, cid: Cid) -> bytes | None:
        """One block from a one-block CAR (``?format=car&dag-scope=block``), verified against
        ``cid``; None when the gateway serves no CARs.

        Raises:
            HashMismatch / FormatError: the CAR holds other bytes, or not this block.
        """
        if self._car is False:
            return None
        path = f"/ipfs/{cid.encode()}?format=car&dag-scope=block"
        with self._send(path, {"Accept": CAR_TYPE}, follow=False) as r:
            kind = r.content_type()
            if r.status != 200 or kind != CAR_TYPE:
                if self._car is None:
                    self._car = False  # js-ipfs: the file itself, or a listing
                    return None
                raise self._fail(path, r.status)
            # One block plus the header and one section head.
            data = _read_limited(r, MAX_BLOCK_SIZE + 4096, f"{self.url}{path}")
        where = f"{self.url}{path}"
        _roots, sections = iter_car(io.BytesIO(data), max_section=MAX_BLOCK_SIZE + 1024)
        for got, block in sections:  # each block re-hashed against its own CID by iter_car
            if got.multihash == cid.multihash and got.codec == cid.codec:
                self._car = True
                return block
        raise FormatError(f"{where}: the CAR does not hold block {cid}")

    def ipns_record(self, name: IpnsName) -> bytes | None:
        """The raw IPNS record (Kubo's gateway), or None when the gateway gives none."""
        if self._records is False:
            return None
        path = f"/ipns/{name}?format=ipns-record"
        with self._send(path, {"Accept": RECORD_TYPE}, follow=False) as r:
            kind = r.content_type()
            if r.status != 200 or kind != RECORD_TYPE:
                if kind != RECORD_TYPE and r.status != 404:
                    self._records = False  # js-ipfs: ignores the Accept header
                return None
            self._records = True
            return _read_limited(r, MAX_RECORD_SIZE, f"{self.url}{path}")


def _read_limited(answer: Answer, limit: int, where: str) -> bytes:
    try:
        return answer.read(limit)
    except BackendRejected as exc:
        if exc.detail != "answer too large":
            raise
        raise FormatError(f"{where}: answer is longer than the {limit} bytes expected") from None


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


class SequenceMemory:
    """The highest IPNS record sequence seen per name (a small JSON file), to catch replays.

    IPNS spec "Record Verification": of two valid records the higher sequence wins. A
    resolver that has seen sequence N refuses a record with a lower one (a node or gateway
    replaying an older, still validly signed, record) and a different record with the same
    sequence.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text("utf-8"))
        except FileNotFoundError:
            return {}
        except (ValueError, UnicodeDecodeError) as exc:
            raise FormatError(f"{self.path}: not JSON ({exc}); delete it to start over") from None
        return data if isinstance(data, dict) else {}

    def check(self, name: str, record: IpnsRecord, *, source: str = "the node or gateway") -> None:
        """Refuse a record older than, or conflicting with, one seen before.

        Raises:
            ReplicaMismatch: a replayed or equivocating record (``source`` served it).
        """
        seen = self._load().get(name)
        if not isinstance(seen, dict):
            return
        seq = int(seen.get("sequence", -1))
        if record.sequence < seq:
            raise ReplicaMismatch(
                f"ipns://{name}: {source} served sequence {record.sequence} "
                f"({record.value_text}) but sequence {seq} was seen before: an older record "
                "replayed; use a newer copy (another node, gateway or directory)"
            )
        if record.sequence == seq and record.value_text != seen.get("value"):
            raise ReplicaMismatch(
                f"ipns://{name}: two different records with sequence {seq} "
                f"({seen.get('value')} and {record.value_text}); the key signed both: refusing"
            )

    def remember(self, name: str, record: IpnsRecord) -> None:
        """Store the record's sequence and value if it is the newest seen."""
        data = self._load()
        seen = data.get(name)
        if isinstance(seen, dict) and int(seen.get("sequence", -1)) >= record.sequence:
            return
        data[name] = {"sequence": record.sequence, "value": record.value_text}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".ipns-seen-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=1, sort_keys=True)
            os.replace(tmp, self.path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


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


def parse_dnslink(domain: str, txt: Sequence[str]) -> str:
    """The path a domain's ``_dnslink`` TXT strings name (the first valid, sorted).

    Raises:
        ResolutionError: no ``dnslink=/ipfs/…`` or ``dnslink=/ipns/…`` entry.
    """
    values: list[str] = []
    for entry in txt:
        text = entry.strip()
        if not text.startswith("dnslink="):
            continue
        value = text[len("dnslink=") :].strip()
        parts = value.split("/")  # "/ipfs/<id>[/...]" -> ["", "ipfs", "<id>", ...]
        if len(parts) >= 3 and parts[0] == "" and parts[1] in ("ipfs", "ipns") and parts[2]:
            values.append(value)
    values.sort()
    if not values:
        raise ResolutionError(
            f"DNSLink {domain}: no TXT record 'dnslink=/ipfs/…' or 'dnslink=/ipns/…' at "
            f"_dnslink.{domain}"
        )
    return values[0]


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


class IpfsReplica:
    """A dataset at ``/ipfs/<root>`` as a read-only replica (see the module docstring).

    An encrypted publish (DESIGN.md section 6) is recognised by the signed record's
    ``_odf.keyEnvelope`` (``key_envelope_cid``): then ``refs/head`` and every block are
    ciphertext, so :meth:`head` is the record's ``_odf.head``, :meth:`sealed_head` serves
    the encrypted ``refs/head``, and blocks are returned unchecked for
    :class:`odfweb3.sealed_replica.DecryptingReplica` to decrypt (the chain walk then
    checks the plaintext's ODF hashes). ``ipfs://<cid>`` has no record: its envelope is
    unknown here (None) and the reader supplies the keys.
    """

    def __init__(
        self,
        gateway: IpfsGateway,
        root: Cid,
        name: str,
        *,
        blocks: BlockGetter | None,
        expected_head: bytes | None = None,
        trustless: bool = False,
        key_envelope_cid: Cid | None = None,
        dataset_id: str | None = None,
        unverified: bool = False,
    ) -> None:
        if key_envelope_cid is not None and expected_head is None:
            raise ResolutionError(
                f"{name}: the record names a key envelope but no _odf.head; an encrypted "
                "refs/head cannot be read without it"
            )
        if trustless and blocks is None:
            raise ResolutionError(
                f"{name}: no raw blocks from {gateway.url} and no RPC API: cannot read "
                "trustlessly; set ipfs.api / ODFWEB3_IPFS_API"
            )
        self.gateway = gateway
        self.root = root
        self.name = name
        self.blocks = blocks
        self.expected_head = expected_head
        self.trustless = trustless
        self.key_envelope_cid = key_envelope_cid
        self.dataset_id = dataset_id
        # refs/head read by path with nothing tying it to the root CID (the opt-in
        # ipfs.insecure_unverified_paths): never reported identical (odfweb3.verify).
        self.unverified = unverified and blocks is None and expected_head is None
        self.supplied_envelope: bytes | None = None  # --key-envelope (issue 7)
        self.inputs: dict[str, str] = {}  # the signed record's _odf.inputs (issue 11)
        self._cache: dict[bytes, bytes] = {}
        self._cached = 0
        self._folders: dict[str, dict[str, Cid]] = {}

    def lineage_inputs(self) -> Mapping[str, str]:
        """Where each input lives, from the verified record's ``_odf.inputs`` (dataset ID ->
        ``ipns://NAME``, written by ``publish --with-inputs``); empty without a record."""
        return dict(self.inputs)

    def _path(self, rel: str) -> str:
        return f"/ipfs/{self.root.encode()}/{rel}"

    def _cid_of(self, rel: str) -> Cid:
        assert self.blocks is not None
        folder, _, entry = rel.partition("/")
        if folder not in self._folders:
            self._folders[folder] = list_directory(
                resolve_path(self.root, folder, self.blocks), self.blocks
            )
        try:
            return self._folders[folder][entry]
        except KeyError:
            raise NotFound(f"{self.name}: /ipfs/{self.root}/{rel} is not in the DAG") from None

    @property
    def encrypted(self) -> bool:
        """Whether the signed record names a key envelope, or one was given (encrypted)."""
        return self.key_envelope_cid is not None or self.supplied_envelope is not None

    def use_envelope(self, data: bytes, source: str) -> None:
        """Read this replica with the key envelope ``data`` (``--key-envelope SOURCE``).

        Needed for ``ipfs://<cid>`` of an encrypted publish (no record names its envelope);
        with a record it replaces the record's envelope, which must then be for the same
        dataset.

        Raises:
            FormatError: ``data`` is not a key envelope.
            ReplicaMismatch: the envelope is for another dataset than the signed record.
        """
        envelope = decode_envelope(data)  # public JSON: refuse anything else before use
        if self.dataset_id is not None and envelope.dataset_id != self.dataset_id:
            raise ReplicaMismatch(
                f"{self.name}: the key envelope {source} is for {envelope.dataset_id} but the "
                f"signed record for {self.dataset_id}; pass this dataset's envelope"
            )
        self.supplied_envelope = data

    def bind_sealed_head(self, keys: KeyRing) -> None:
        """With no signed record, take the head from the decrypted ``refs/head``.

        Does nothing when the head is already bound (a record's ``_odf.head``) or the
        replica is not encrypted.

        Raises:
            ReplicaMismatch: ``refs/head`` does not decrypt with ``keys`` (the envelope
                given is another dataset's, or the keys lack this publish's epoch).
        """
        if not self.encrypted or self.expected_head is not None:
            return
        try:
            text = decrypt_bytes(self.sealed_head(), keys, "refs/head")
        except DecryptionError:
            # Not "no key" (that is DecryptionError): keys were found but are not this
            # replica's, so the envelope and the replica disagree.
            raise ReplicaMismatch(
                f"{self.name}: refs/head does not decrypt with the keys the key envelope gave; "
                "the envelope is for another dataset or another publish: pass the keyEnvelope "
                "this publish printed (odfweb3 status shows it)"
            ) from None
        try:
            self.expected_head = multihash_from_str(text.decode("ascii").strip())
        except (UnicodeDecodeError, FormatError):
            raise FormatError(
                f"{self.name}: refs/head decrypts to something that is not a multibase hash"
            ) from None

    def _read_small(self, cid: Cid, limit: int, what: str) -> bytes:
        """A small file by CID, verified block by block (or as one raw block)."""
        if self.blocks is not None:
            return b"".join(read_file(cid, self.blocks, max_size=limit))
        if cid.codec != CODEC_RAW:
            raise ResolutionError(
                f"{self.name}: {what} {cid} cannot be verified without raw blocks; set "
                "ipfs.api / ODFWEB3_IPFS_API"
            )
        data = self.gateway.fetch(f"/ipfs/{cid.encode()}", limit=limit)
        cid.verify(data, where=f"{self.name}: {what} {cid}")
        return data

    def sealed_head(self) -> bytes:
        """The raw bytes of ``refs/head`` (ciphertext in an encrypted publish)."""
        if self.blocks is not None:
            cid = resolve_path(self.root, "refs/head", self.blocks)
            return b"".join(read_file(cid, self.blocks, max_size=MAX_HEAD_SIZE))
        return self.gateway.fetch(self._path("refs/head"), limit=MAX_HEAD_SIZE)

    def key_envelope(self) -> bytes | None:
        """The key envelope given (:meth:`use_envelope`), else the one the signed record
        names (checked against its CID), else None.

        Raises:
            FormatError: the file is not a key envelope, or one for another dataset
                than the record's ``_odf.datasetId``.
            HashMismatch: the node or gateway served other bytes than the CID.
        """
        if self.supplied_envelope is not None:
            return self.supplied_envelope
        if self.key_envelope_cid is None:
            return None
        data = self._read_small(self.key_envelope_cid, MAX_ENVELOPE_SIZE, "key envelope")
        envelope = decode_envelope(data)  # public JSON: refuse anything else before use
        if self.dataset_id is not None and envelope.dataset_id != self.dataset_id:
            raise FormatError(
                f"{self.name}: key envelope {self.key_envelope_cid} is for "
                f"{envelope.dataset_id}, the signed record for {self.dataset_id}"
            )
        return data

    def head(self) -> bytes:
        if self.encrypted:
            # Encrypted refs/head: the signed record binds the head (or, with no record,
            # bind_sealed_head() did); DecryptingReplica decrypts sealed_head() and checks
            # that it agrees.
            if self.expected_head is None:
                raise DecryptionError(
                    f"{self.name}: encrypted and read without its keys; the head is known only "
                    "once refs/head is decrypted"
                )
            return self.expected_head
        data = self.sealed_head()
        if data.startswith(MAGIC):
            # An encrypted layout served without a record naming its envelope (section 6).
            raise ResolutionError(
                f"{self.name}: refs/head is encrypted and no key envelope is known for it "
                "(ipfs://CID has no record); pass --key-envelope FILE|ipfs://CID|ar://ID "
                "(the keyEnvelope that publish and odfweb3 status print)"
            )
        try:
            head = multihash_from_str(data.decode("ascii").strip())
        except (UnicodeDecodeError, FormatError):
            raise FormatError(
                f"{self.name}: /ipfs/{self.root}/refs/head is not a multibase hash; "
                "the name does not point at an ODF dataset"
            ) from None
        if self.expected_head is not None and head != self.expected_head:
            raise ReplicaMismatch(
                f"{self.name}: the signed record says head {multihash_to_str(self.expected_head)}"
                f" but /ipfs/{self.root}/refs/head is {multihash_to_str(head)}; the node or "
                "gateway serves another dataset state"
            )
        return head

    def read_block(self, mh: bytes) -> bytes:
        cached = self._cache.get(mh)
        if cached is not None:
            return cached
        rel = object_relpath("block", mh)
        if self.trustless:
            data = b"".join(
                read_file(self._cid_of(rel), self.blocks or _no_blocks, max_size=MAX_BLOCK_SIZE)
            )
        else:
            data = self.gateway.fetch(self._path(rel), limit=MAX_BLOCK_SIZE)
        if self.encrypted:
            return data  # ciphertext: the plaintext's hash is checked after decryption
        verify_bytes(data, mh, f"{self.name}: {rel}")
        if self._cached + len(data) <= _BLOCK_CACHE_BYTES:
            self._cache[mh] = data
            self._cached += len(data)
        return data

    def stream_object(self, kind: ObjectKind, mh: bytes, size: int | None) -> Iterator[bytes]:
        rel = object_relpath(kind, mh)
        if self.trustless:
            yield from read_file(self._cid_of(rel), self.blocks or _no_blocks, max_size=size)
            return
        n = 0
        # The transport stops one read past the recorded size; the check below reports it.
        limit = MAX_STREAM if size is None else size + (2 << 20)
        for chunk in self.gateway.stream(self._path(rel), limit=limit):
            n += len(chunk)
            if size is not None and n > size:
                raise ReplicaMismatch(
                    f"{self.name}: {rel} is longer than the {size} bytes its block records"
                )
            yield chunk


def _no_blocks(cid: Cid) -> bytes:
    raise NotFound(f"no block source for {cid}")


def _root_of(path: str, ref: str) -> tuple[Cid, str]:
    """Split ``/ipfs/<cid>[/sub/path]``."""
    rest = path.removeprefix("/ipfs/")
    cid_text, _, sub = rest.partition("/")
    try:
        return Cid.decode(cid_text, where=ref), sub.strip("/")
    except FormatError as exc:
        raise ResolutionError(f"{ref}: {cid_text[:80]!r} is not a CID ({exc})") from None


def read_ipfs_file(access: IpfsAccess, cid: Cid, *, limit: int, what: str) -> bytes:
    """A small file by CID, verified block by block (or as one raw-leaf block).

    Raises:
        ResolutionError: a dag-pb file that cannot be verified (no raw blocks, no RPC).
        HashMismatch: the node or gateway served other bytes than the CID.
    """
    blocks, _ = access.block_getter(cid)
    if blocks is not None:
        return b"".join(read_file(cid, blocks, max_size=limit))
    if cid.codec != CODEC_RAW:
        raise ResolutionError(
            f"{what} {cid} cannot be verified without raw blocks; set ipfs.api / ODFWEB3_IPFS_API"
        )
    data = access.gateway.fetch(f"/ipfs/{cid.encode()}", limit=limit)
    cid.verify(data, where=f"{what} {cid}")
    return data


def _open_root(
    ref: str,
    access: IpfsAccess,
    path: str,
    *,
    expected_head: bytes | None = None,
    claims: NameClaims | None = None,
    key_envelope: Cid | None = None,
) -> tuple[IpfsReplica, NameClaims]:
    root, sub = _root_of(path, ref)
    blocks, how = access.block_getter(root)
    notes = list(claims.notes if claims else ())
    if sub:
        if blocks is None:
            raise ResolutionError(
                f"{ref}: a sub-path ({sub}) needs raw blocks to be verified; set ipfs.api"
            )
        root = resolve_path(root, sub, blocks)
    if blocks is None and expected_head is None and not access.insecure_unverified_paths:
        raise BackendUnavailable(
            f"{ref}: {access.gateway.url} serves neither raw blocks (?format=raw) nor CARs "
            "(?format=car) and no RPC API answers, so nothing read could be checked against "
            f"{root}; use a trustless gateway or set ipfs.api (ipfs.insecure_unverified_paths "
            "reads it unverified)"
        )
    if blocks is None:
        notes.append(
            f"{access.gateway.url} serves no raw blocks or CARs and no RPC API is set: "
            "refs/head is the gateway's deserialized answer"
            + (
                ", checked against the signed record"
                if expected_head is not None
                else ", NOT bound to the CID (ipfs.insecure_unverified_paths): UNVERIFIED"
            )
        )
    else:
        notes.append(
            f"root and refs/head verified against CIDs ({how})"
            + (
                "; blocks and objects too"
                if access.trustless
                else "; blocks and objects by path, verified against their ODF hashes"
            )
        )
    replica = IpfsReplica(
        access.gateway,
        root,
        ref,
        blocks=blocks,
        expected_head=expected_head,
        trustless=access.trustless,
        key_envelope_cid=key_envelope,
        dataset_id=claims.dataset_id if claims else None,
        unverified=access.insecure_unverified_paths,
    )
    base = claims or NameClaims(locator=f"/ipfs/{root.encode()}")
    return replica, NameClaims(
        locator=f"/ipfs/{root.encode()}",
        dataset_id=base.dataset_id,
        head=base.head,
        sequence=base.sequence,
        expires_at=base.expires_at,
        descriptor=base.descriptor,
        notes=tuple(notes),
    )


def _fetch_record(access: IpfsAccess, name: IpnsName) -> tuple[bytes, str]:
    raw = None
    with contextlib.suppress(BackendUnavailable, BackendRejected):
        raw = access.gateway.ipns_record(name)
    if raw is not None:
        return raw, f"{access.gateway.url} (application/vnd.ipfs.ipns-record)"
    if access.client is not None:
        raw = access.client.record_get(name)
        if raw is not None:
            return raw, f"{access.client.api_url} (RPC)"
        raise ResolutionError(f"ipns://{name}: the node {access.client.api_url} has no record")
    raise ResolutionError(
        f"ipns://{name}: {access.gateway.url} serves no raw IPNS record and no RPC API is set; "
        "a record cannot be verified otherwise: set ipfs.api / ODFWEB3_IPFS_API"
    )


def _descriptor(access: IpfsAccess, text: object, notes: list[str]) -> dict[str, Any] | None:
    if not isinstance(text, str):
        return None
    try:
        cid = Cid.decode(text, where="_odf.descriptor")
        blocks, _ = access.block_getter(cid)
        if blocks is not None:
            data = b"".join(read_file(cid, blocks, max_size=MAX_DESCRIPTOR_SIZE))
        elif cid.codec == CODEC_RAW:
            data = access.gateway.fetch(f"/ipfs/{cid.encode()}", limit=MAX_DESCRIPTOR_SIZE)
            cid.verify(data, where=f"descriptor {cid}")
        else:
            notes.append(f"descriptor {cid} not read: it cannot be verified without raw blocks")
            return None
        return decode_descriptor(data)
    except (FormatError, NotFound, BackendRejected, BackendUnavailable) as exc:
        notes.append(f"descriptor {text} not read: {exc}")
        return None


def open_ipns_name(ref: str, access: IpfsAccess, name: IpnsName) -> tuple[IpfsReplica, NameClaims]:
    """Fetch, verify and follow the IPNS record of ``name``.

    Raises:
        ResolutionError / RecordExpired: no record, or an expired one.
        SignatureError / FormatError: a forged or malformed record.
        ReplicaMismatch: a replayed older record (with a memory).
    """
    raw, source = _fetch_record(access, name)
    record = verify_record(raw, name, access.now())
    if access.memory is not None:
        access.memory.check(str(name), record)
        access.memory.remember(str(name), record)
    value = record.value_text
    if not value.startswith("/ipfs/"):
        raise ResolutionError(
            f"{ref}: the record points at {value[:100]}, not /ipfs/<cid>; odfweb3 publishes "
            "/ipfs/ values only"
        )
    notes = [f"IPNS record sequence {record.sequence} from {source}, verified locally"]
    odf = record.odf
    if odf is None:
        notes.append("the record has no _odf map (name/publish): head read from refs/head")
    descriptor = _descriptor(access, odf.extra.get("descriptor"), notes) if odf else None
    claims = NameClaims(
        locator=value,
        dataset_id=odf.dataset_id if odf else None,
        head=multihash_from_str(odf.head) if odf else None,
        sequence=record.sequence,
        expires_at=record.expires_at,
        descriptor=descriptor,
        notes=tuple(notes),
    )
    envelope = odf.extra.get("keyEnvelope") if odf else None
    envelope_cid = None
    if envelope is not None:
        if not isinstance(envelope, str):
            raise FormatError(f"{ref}: the record's _odf.keyEnvelope is not a CID string")
        envelope_cid = Cid.decode(envelope, where=f"{ref}: _odf.keyEnvelope")
    replica, opened = _open_root(
        ref, access, value, expected_head=claims.head, claims=claims, key_envelope=envelope_cid
    )
    inputs = odf.extra.get("inputs") if odf else None
    if inputs is not None:
        if not isinstance(inputs, Mapping):
            raise FormatError(f"{ref}: the record's _odf.inputs is not a map")
        replica.inputs = {str(k): str(v) for k, v in inputs.items()}
    return replica, opened


def _is_domain(text: str) -> bool:
    return "." in text and not text.startswith(("1", "Qm"))


def open_ipfs_ref(
    ref: str, access: IpfsAccess, *, _hops: int = 0
) -> tuple[IpfsReplica, NameClaims]:
    """Open ``ipfs://<cid>[/path]``, ``ipns://<name>`` or ``ipns://<domain>`` (DNSLink).

    Returns the replica and what the name claims (checked later by
    :func:`odfweb3.resolve.resolve_dataset`).

    Raises:
        ResolutionError: a name that leads nowhere; see also :func:`open_ipns_name`.
    """
    scheme, sep, rest = ref.partition("://")
    rest = rest.strip("/")
    if not sep or scheme not in ("ipfs", "ipns") or not rest:
        raise ResolutionError(f"{ref}: expected ipfs://<cid> or ipns://<name-or-domain>")
    if scheme == "ipfs":
        return _open_root(ref, access, f"/ipfs/{rest}")
    target, _, sub = rest.partition("/")
    if sub:
        raise ResolutionError(f"{ref}: give the name alone (the dataset is at its root)")
    if not _is_domain(target):
        return open_ipns_name(ref, access, parse_ipns_name(target))
    return _open_dnslink(ref, access, target, _hops)


def _open_dnslink(
    ref: str, access: IpfsAccess, domain: str, hops: int
) -> tuple[IpfsReplica, NameClaims]:
    if hops >= MAX_DNSLINK_HOPS:
        raise ResolutionError(f"{ref}: DNSLink chain longer than {MAX_DNSLINK_HOPS} hops")
    lookup = access.dns or (node_dns_lookup(access.client) if access.client else None)
    if lookup is None:
        raise ResolutionError(f"{ref}: no DNS lookup configured for DNSLink (set ipfs.api)")
    path = parse_dnslink(domain, lookup(f"_dnslink.{domain}"))
    note = f"DNSLink {domain} -> {path} (DNS is not authenticated; the target is verified)"
    if path.startswith("/ipfs/"):
        replica, claims = _open_root(ref, access, path)
    else:
        target = path.removeprefix("/ipns/").strip("/")
        if "/" in target:
            raise ResolutionError(f"{ref}: DNSLink {path} has a sub-path; not supported")
        if _is_domain(target):
            replica, claims = _open_dnslink(ref, access, target, hops + 1)
        else:
            replica, claims = open_ipns_name(ref, access, parse_ipns_name(target))
    return replica, NameClaims(
        locator=claims.locator,
        dataset_id=claims.dataset_id,
        head=claims.head,
        sequence=claims.sequence,
        expires_at=claims.expires_at,
        descriptor=claims.descriptor,
        notes=(note, *claims.notes),
    )
