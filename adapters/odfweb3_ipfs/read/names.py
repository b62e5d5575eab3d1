"""Opening IPFS names: ``ipfs://<cid>[/path]``, ``ipns://<name>`` (a verified record), ``ipns://<domain>``.

What each step checks is told in :mod:`odfweb3_ipfs.read.replica`."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any, Final

from odfweb3.descriptor import decode_descriptor
from odfweb3.errors import (
    BackendRejected,
    BackendUnavailable,
    FormatError,
    NotFound,
    ResolutionError,
)
from odfweb3.odf.multihash import multihash_from_str
from odfweb3.read.claims import NameClaims
from odfweb3_ipfs.formats.cid import CODEC_RAW, Cid
from odfweb3_ipfs.formats.dnslink import parse_dnslink
from odfweb3_ipfs.formats.ipns import verify_record
from odfweb3_ipfs.formats.libp2p_keys import IpnsName, parse_ipns_name
from odfweb3_ipfs.formats.unixfs_reader import read_file, resolve_path
from odfweb3_ipfs.read.access import IpfsAccess
from odfweb3_ipfs.read.dns_lookup import MAX_DNSLINK_HOPS, node_dns_lookup
from odfweb3_ipfs.read.replica import IpfsReplica

__all__ = ["open_ipfs_ref", "open_ipns_name", "read_ipfs_file"]

MAX_DESCRIPTOR_SIZE: Final = 1 << 20


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
    :func:`odfweb3.read.claims.resolve_dataset`).

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
