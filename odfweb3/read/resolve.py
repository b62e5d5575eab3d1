"""Resolving a reference to checked replicas, through the backend registry.

References: ``car:DIR``, ``ar://<record-or-manifest-id>`` (through the configured gateway),
``ipfs://<cid>``, ``ipns://<name>``, ``ipns://<domain>`` (DNSLink), ``did:odf:…`` (looked up
by every backend that can find datasets, in rank order: the IPNS name derived from the
dataset key, then Arweave uploads by the owner known from publish state or given), or a
dataset directory. The scheme chooses the backend once (:mod:`odfweb3.backends`); what a
name's record claims is checked here against the data (:mod:`odfweb3.read.claims`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from odfweb3.backends import (
    Backend,
    DatasetFinder,
    DnsTxtLookup,
    KeyEnvelopeReader,
    ReadAccess,
    all_backends,
    backend_for_ref,
)
from odfweb3.errors import BackendError, DecryptionError, NotFound, ResolutionError, UsageError
from odfweb3.odf.layout import DatasetReader
from odfweb3.read.claims import NameClaims, ResolvedDataset, resolve_dataset, resolve_sealed
from odfweb3.read.replica import LocalReplica, Replica
from odfweb3.read.sealed_replica import EncryptedReplica

if TYPE_CHECKING:
    from odfweb3.config import Config

__all__ = ["key_envelope_for", "open_replica", "read_key_envelope", "resolve_ref"]


def read_key_envelope(src: str, config: Config) -> bytes:
    """The bytes of a key envelope given as ``--key-envelope SRC``.

    ``SRC`` is a local file, ``ipfs://<cid>`` (read through the configured gateway / RPC
    API, verified against the CID) or ``ar://<id>`` (the envelope item through the
    configured Arweave gateway). The bytes are only decoded later; a forged envelope
    cannot make ciphertext decrypt (AES-GCM), so it can only fail.

    Raises:
        NotFound: the file or item is not there.
        UsageError: ``SRC`` is none of those forms.
    """
    # here, not at the top: a read without --key-envelope loads no envelope code
    from odfweb3.crypto.envelope import MAX_ENVELOPE_SIZE

    if "://" in src:
        backend = backend_for_ref(src)
        if backend is None or not isinstance(backend, KeyEnvelopeReader):
            raise UsageError(f"--key-envelope {src}: give a file, ipfs://CID or ar://ID")
        return backend.read_key_envelope(src, config, MAX_ENVELOPE_SIZE)
    path = Path(src).expanduser()
    try:
        with path.open("rb") as f:
            return f.read(MAX_ENVELOPE_SIZE + 1)
    except OSError as exc:
        raise NotFound(f"--key-envelope {src}: cannot read it ({exc.strerror})") from exc


def key_envelope_for(src: str, refs: Sequence[str], config: Config) -> bytes:
    """:func:`read_key_envelope` of ``src`` for reading ``refs``, refused when none of them
    can use one (their records name their own envelope: the backend says,
    :meth:`odfweb3.backends.KeyEnvelopeReader.takes_key_envelope`).

    Raises:
        UsageError: no reference in ``refs`` takes a key envelope.
    """

    def takes(ref: str) -> bool:
        backend = backend_for_ref(ref)
        return isinstance(backend, KeyEnvelopeReader) and backend.takes_key_envelope(ref)

    if refs and not any(takes(r) for r in refs):
        raise UsageError(
            f"--key-envelope is for ipfs:// and ipns:// references; {refs[0]} names its own "
            "key envelope: drop the option"
        )
    return read_key_envelope(src, config)


def _checked(
    where: str,
    replica: Replica,
    claims: NameClaims,
    unseal: Callable[[Replica], Replica] | None,
    expect_dataset_id: str | None = None,
) -> tuple[Replica, ResolvedDataset]:
    """Check what ``where`` leads to; an encrypted replica is decrypted first if it can be.

    Without keys (no ``unseal``, or it raises DecryptionError because no key opens the
    envelope) an encrypted replica yields the record's claims only (resolve_sealed).
    """
    from odfweb3.crypto.envelope import decode_envelope

    if not (isinstance(replica, EncryptedReplica) and replica.encrypted):
        return replica, resolve_dataset(where, replica, claims, expect_dataset_id=expect_dataset_id)
    raw = replica.key_envelope()
    envelope_did = decode_envelope(raw).dataset_id if isinstance(raw, bytes) else None
    if claims.dataset_id is None and envelope_did is not None:
        # ipfs://CID --key-envelope: the Seed must be the envelope's dataset
        expect_dataset_id = expect_dataset_id or envelope_did
    reason = "no keys offered"
    if unseal is not None:
        try:
            opened = unseal(replica)
        except DecryptionError as exc:
            reason = f"no key opens its key envelope: {exc}"
        else:
            return opened, resolve_dataset(
                where, opened, claims, expect_dataset_id=expect_dataset_id, encrypted=True
            )
    return replica, resolve_sealed(
        where,
        claims,
        envelope_dataset_id=envelope_did,
        reason=reason,
        expect_dataset_id=expect_dataset_id,
    )


def _name_backend(ref: str) -> Backend:
    backend = backend_for_ref(ref) if "://" in ref else None
    if backend is None:
        raise UsageError(f"cannot resolve {ref!r}: use ipns://, ipfs://, ar:// or did:odf:")
    return backend


def resolve_ref(
    ref: str,
    config: Config,
    *,
    dns: DnsTxtLookup | None = None,
    now: Callable[[], datetime] | None = None,
    owner: str | None = None,
    trustless: bool = False,
    unseal: Callable[[Replica], Replica] | None = None,
    key_envelope: bytes | None = None,
    key_envelope_source: str = "--key-envelope",
    wallet: Path | None = None,
    drive_password: str | None = None,
) -> list[tuple[Replica, ResolvedDataset]]:
    """Resolve ``ref`` (see the module docstring) and check it (:mod:`odfweb3.read.claims`).

    A ``did:odf`` may be found in several places: one entry each, the IPNS name first.
    An encrypted publish is decrypted with ``unseal`` (callers pass
    :func:`odfweb3.read.unseal.decrypting_replica`) and then checked in full; the
    replica returned is then the decrypted one. Without keys the result holds the signed
    record's claims only (``content_checked`` False). ``key_envelope`` (the bytes of
    ``--key-envelope``) is used for IPFS replicas, where ``ipfs://CID`` has no record.
    An ``ar://RECORD`` of an ArFS private drive needs ``wallet`` and ``drive_password``.

    Raises:
        UsageError: an unknown reference form.
        ResolutionError / ReplicaMismatch / IntegrityError / BackendError: what failed.
    """
    access = ReadAccess(
        dns=dns,
        now=now,
        trustless=trustless,
        owner=owner,
        key_envelope=key_envelope,
        key_envelope_source=key_envelope_source,
        wallet=wallet,
        drive_password=drive_password,
    )
    if ref.startswith("did:odf:"):
        candidates: list[tuple[str, Callable[[], tuple[Replica, NameClaims]]]] = []
        problems: list[str] = []
        for backend in all_backends():
            if isinstance(backend, DatasetFinder):
                found_here, skipped = backend.find_dataset(ref, config, access)
                candidates += found_here
                problems += skipped
        found: list[tuple[Replica, ResolvedDataset]] = []
        for where, opener in candidates:
            try:
                replica, claims = opener()
                found.append(_checked(where, replica, claims, unseal, ref))
            except (ResolutionError, NotFound, BackendError) as exc:
                problems.append(f"{where}: {exc}")
        if not found:
            raise ResolutionError(f"{ref}: found on no configured target: {'; '.join(problems)}")
        return found
    replica, claims = _name_backend(ref).resolve(ref, config, access)
    return [_checked(ref, replica, claims, unseal)]


def open_replica(
    ref: str,
    config: Config,
    *,
    dns: DnsTxtLookup | None = None,
    now: Callable[[], datetime] | None = None,
    key_envelope: bytes | None = None,
    wallet: Path | None = None,
    drive_password: str | None = None,
) -> Replica:
    """A read-only replica for ``ref`` (see the module docstring).

    Names (``ipfs://``, ``ipns://``, ``did:odf:``) are resolved and checked first; the
    replica returned is the first found. An encrypted one is returned still encrypted (the
    CLI decrypts it); ``key_envelope`` (``--key-envelope``) gives IPFS replicas the envelope
    ``ipfs://CID`` lacks. An ``ar://RECORD`` of an ArFS private drive is opened with
    ``wallet`` (default: config ``arweave.wallet``) and ``drive_password``.

    Raises:
        UsageError: an unknown reference form; a private drive without wallet or password.
        DecryptionError: a private drive with a wrong wallet or password.
    """
    if ref.startswith("did:odf:"):
        return resolve_ref(ref, config, dns=dns, now=now, key_envelope=key_envelope)[0][0]
    backend = backend_for_ref(ref)
    if backend is not None and ref.partition(":")[2]:
        access = ReadAccess(
            dns=dns,
            now=now,
            key_envelope=key_envelope,
            wallet=wallet,
            drive_password=drive_password,
        )
        return backend.open_replica(ref, config, access)
    if "://" not in ref and Path(ref).is_dir():
        return LocalReplica(DatasetReader.open(ref))
    raise UsageError(
        f"cannot open replica {ref!r}: use car:DIR, ar://ID, ipfs://CID, ipns://NAME, "
        "ipns://DOMAIN, did:odf:… or a dataset directory"
    )
