"""Network adapters for odfweb3, installed as ``odfweb3.adapters``.

This module is the composition root: it alone chooses an implementation for a
target name (together with the CLI). The pure format modules inside each adapter
never import network code, and adapters never import each other.

Target names:

- ``car:DIR``: offline IPFS publish (CAR files + IPNS record), the embedded default;
- ``ipfs`` or ``ipfs:http://HOST:PORT``: a live Kubo/js-ipfs node (API from config /
  ``ODFWEB3_IPFS_API`` unless given);
- ``pinning:NAME[,NAME...]`` or ``pinning`` (``pinning.publish_to``): the ``ipfs`` node, then
  the Pinning Service API services configured under ``pinning.services``;
- ``bundle:DIR``: offline Arweave publish (a signed ANS-104 bundle);
- ``arweave`` or ``arweave:http(s)://HOST``: an Arweave gateway (config /
  ``ODFWEB3_ARWEAVE_GATEWAY`` unless given) with a wallet.

Replicas: ``car:DIR``, ``ar://<record-or-manifest-id>`` (through the configured gateway),
``ipfs://<cid>``, ``ipns://<name>``, ``ipns://<domain>`` (DNSLink), ``did:odf:…`` (looked up
on the configured targets: the IPNS name derived from the dataset key, then Arweave uploads
by the owner known from publish state or given), or a dataset directory. IPFS is read through
the gateway ``ipfs.gateway`` / ``ODFWEB3_IPFS_GATEWAY`` and, for raw blocks, records and DNS,
the RPC API ``ipfs.api`` / ``ODFWEB3_IPFS_API``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, cast

from odfweb3.config import Config
from odfweb3.crypto.keystore import Keystore
from odfweb3.crypto.sealer import Sealer
from odfweb3.errors import (
    BackendError,
    DecryptionError,
    NotFound,
    ResolutionError,
    UsageError,
)
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_from_str
from odfweb3.publish.target import PublishTarget
from odfweb3.replica import LocalReplica, Replica
from odfweb3.resolve import NameClaims, ResolvedDataset, resolve_dataset, resolve_sealed

if TYPE_CHECKING:
    from .arweave.gateway_target import GatewayTarget
    from .arweave.replica import ArweaveReplica
    from .ipfs.cid_profile import CidProfile
    from .ipfs.gateway_replica import DnsTxtLookup, IpfsAccess
    from .ipfs.node_target import IpfsNodeTarget

__all__ = [
    "TargetOptions",
    "ipfs_access",
    "open_arweave_target",
    "open_ipfs_target",
    "open_replica",
    "open_target",
    "read_key_envelope",
    "resolve_ref",
]


@dataclass(frozen=True)
class TargetOptions:
    """Options a publish passes to whatever target it opens."""

    cid_version: int = 1
    cid_profile: str | None = None  # a Kubo UnixFS profile name (ipfs/cid_profile.py)
    wallet: Path | None = None
    unpin_previous: bool = False
    sealer: Sealer | None = None  # encrypt (DESIGN.md section 6)
    max_cost: int | None = None  # arweave: refuse an upload above this many winston
    on_price: Callable[[int, int], None] | None = None  # arweave: (winston, bytes) before posting
    # arweave/bundle: an ArFS private drive with this password (never in a repr)
    drive_password: str | None = field(default=None, repr=False)
    # pinning: where ODFWEB3_PINNING_<NAME>_TOKEN is read (the CLI passes os.environ)
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    notify: Callable[[str], None] | None = None  # pinning: status changes, one line each


def open_target(spec: str, config: Config, options: TargetOptions | None = None) -> PublishTarget:
    """The publish target for ``spec`` (see the module docstring).

    Raises:
        UsageError: an unknown or incomplete target name.
    """
    options = options or TargetOptions()
    kind, _, arg = spec.partition(":")
    if kind == "car":
        if not arg:
            raise UsageError("--to car:OUT_DIR needs a directory, e.g. --to car:./out")
        from .ipfs.car_target import CarTarget

        return CarTarget(
            Path(arg).expanduser().absolute(),
            Keystore(config.keystore_dir),
            profile=_cid_profile(options),
            lifetime=_record_lifetime(config),
            publisher=config.get("publisher"),
            sealer=options.sealer,
        )
    if kind == "bundle":
        if not arg:
            raise UsageError("--to bundle:OUT_DIR needs a directory, e.g. --to bundle:./out")
        if options.wallet is None:
            raise UsageError(
                "--to bundle:OUT_DIR needs an Arweave wallet to sign with: pass --wallet "
                "WALLET.json (create one with odfweb3 wallet new WALLET.json)"
            )
        from .arweave.bundle_target import BundleTarget
        from .arweave.wallet import load_wallet

        return BundleTarget(
            Path(arg).expanduser().absolute(),
            load_wallet(options.wallet),
            publisher=config.get("publisher"),
            sealer=options.sealer,
            drive_password=options.drive_password,
        )
    if kind == "ipfs":
        return open_ipfs_target(config, options, api=arg or None)
    if kind == "arweave":
        return open_arweave_target(config, options, gateway=arg or None)
    if kind == "pinning":
        from .ipfs.pinning_config import open_pinning_target

        node = None if config.get("pinning", "via") == "car" else open_ipfs_target(config, options)
        return open_pinning_target(config, options, arg, node)
    raise UsageError(
        f"unknown target {spec!r}: use car:DIR, ipfs, pinning:NAME, bundle:DIR or arweave "
        "(see odfweb3 publish -h)"
    )


def _cid_profile(options: TargetOptions) -> CidProfile:
    """The UnixFS import profile of an IPFS publish (``--cid-profile``, ``--cid-version``)."""
    from .ipfs.cid_profile import profile_for

    return profile_for(options.cid_profile, options.cid_version)


def _record_lifetime(config: Config) -> timedelta:
    """IPNS record validity: ``ipfs.record_lifetime_hours`` (default 48 h)."""
    return timedelta(hours=float(config.get("ipfs", "record_lifetime_hours", default=48)))


def open_ipfs_target(
    config: Config, options: TargetOptions | None = None, *, api: str | None = None
) -> IpfsNodeTarget:
    """The live IPFS target: the node at ``api`` (default ``config.ipfs_api``)."""
    from odfweb3.publish.state import StateStore

    from .ipfs.kubo import KuboClient
    from .ipfs.node_target import IpfsNodeTarget

    options = options or TargetOptions()
    url = api or config.ipfs_api
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"--to ipfs:{url}: give the node's RPC API as http://HOST:PORT")
    timeout = float(config.get("ipfs", "timeout", default=60.0))
    return IpfsNodeTarget(
        KuboClient(url, settings=config.network, timeout=timeout),
        Keystore(config.keystore_dir),
        StateStore(config.state_dir),
        gateway_url=config.ipfs_gateway,
        profile=_cid_profile(options),
        lifetime=_record_lifetime(config),
        unpin_previous=options.unpin_previous,
        sealer=options.sealer,
        publisher=config.get("publisher"),
    )


def open_arweave_target(
    config: Config, options: TargetOptions | None = None, *, gateway: str | None = None
) -> GatewayTarget:
    """The live Arweave target: ``gateway`` (default ``config.arweave_gateway``) + a wallet.

    The wallet is ``options.wallet`` (``--wallet``, else config ``arweave.wallet`` /
    ``ODFWEB3_ARWEAVE_WALLET``, which the CLI resolves).

    Raises:
        UsageError: no wallet, or a gateway that is not an http(s) URL.
    """
    from odfweb3.publish.state import StateStore

    from .arweave.gateway import ArweaveGateway
    from .arweave.gateway_target import GatewayTarget
    from .arweave.wallet import load_wallet

    options = options or TargetOptions()
    url = gateway or config.arweave_gateway
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"--to arweave:{url}: give the gateway as http(s)://HOST[:PORT]")
    wallet = options.wallet or config.arweave_wallet
    if wallet is None:
        raise UsageError(
            "--to arweave needs a wallet: pass --wallet WALLET.json or set arweave.wallet / "
            "ODFWEB3_ARWEAVE_WALLET (create one with odfweb3 wallet new WALLET.json)"
        )
    max_cost = options.max_cost
    if max_cost is None:
        max_cost = config.get("arweave", "max_cost_winston")
    return GatewayTarget(
        ArweaveGateway(url, settings=config.network),
        load_wallet(wallet),
        StateStore(config.state_dir),
        max_cost=max_cost,
        publisher=config.get("publisher"),
        on_price=options.on_price or (lambda winston, size: None),
        sealer=options.sealer,
        drive_password=options.drive_password,
        # issue 10: how long the post-check waits for the upload to be mined
        confirm_timeout=float(config.get("arweave", "confirm_timeout_s", default=0)),
        race_timeout=float(config.get("arweave", "race_timeout_s", default=1800)),
    )


def ipfs_access(
    config: Config,
    *,
    dns: DnsTxtLookup | None = None,
    now: Callable[[], datetime] | None = None,
    trustless: bool = False,
) -> IpfsAccess:
    """How IPFS names are read: the configured gateway and RPC API, and the replay memory."""
    from .ipfs.gateway_replica import IpfsAccess, IpfsGateway, SequenceMemory
    from .ipfs.kubo import KuboClient

    access = IpfsAccess(
        IpfsGateway(config.ipfs_gateway, settings=config.network),
        KuboClient(config.ipfs_api, settings=config.network, retries=1),
        dns=dns,
        memory=SequenceMemory(config.state_dir / "ipns-seen.json"),
        trustless=trustless,
        # issue 16 item 1: off unless the user opts in, by this name, in odfweb3.yaml
        insecure_unverified_paths=config.get("ipfs", "insecure_unverified_paths") is True,
    )
    if now is not None:
        access.now = now
    return access


def _arweave_claims(
    ref: str, config: Config, owner: str | None = None
) -> tuple[Replica, NameClaims]:
    from .arweave.gateway import ArweaveGateway
    from .arweave.replica import open_ar_replica

    gateway = ArweaveGateway(config.arweave_gateway, settings=config.network)
    # The record's signature is checked there: its dataset ID and head are the signer's.
    replica = open_ar_replica(gateway, ref, expected_owner=owner)
    head = replica.expected_head
    return replica, NameClaims(
        locator=f"ar://{replica.manifest_id}",
        dataset_id=replica.dataset_id,
        head=multihash_from_str(head) if head else None,
        notes=(
            f"read through {gateway.url}; every block and object re-hashed",
            *(
                (f"upload record signed by {replica.owner} (signature and id checked)",)
                if replica.record is not None
                else (
                    "opened by its path manifest: no signed record binds the head; prefer "
                    "ar://RECORD or did:odf with --owner",
                )
            ),
        ),
    )


def _did_candidates(
    did: str, config: Config, access: IpfsAccess, owner: str | None
) -> tuple[list[tuple[str, Callable[[], tuple[Replica, NameClaims]]]], list[str]]:
    """Where a dataset ID may be found: its own IPNS name, and Arweave uploads by a known owner."""
    from odfweb3.odf.identity import DatasetId
    from odfweb3.publish.state import StateStore

    from .arweave.gateway import ArweaveGateway
    from .ipfs.gateway_replica import open_ipns_name
    from .ipfs.libp2p_keys import IpnsName

    name = IpnsName.from_public_key(DatasetId.parse(did).public_key)
    out: list[tuple[str, Callable[[], tuple[Replica, NameClaims]]]] = [
        (f"ipns://{name}", lambda: open_ipns_name(f"ipns://{name}", access, name))
    ]
    skipped: list[str] = []
    gateway = ArweaveGateway(config.arweave_gateway, settings=config.network)
    if owner is None:
        state = StateStore(config.state_dir).load(did, f"arweave:{gateway.url}")
        known = state.extra.get("owner") if state is not None else None
        owner = str(known) if known else None
    if owner is None:
        skipped.append(
            "Arweave not searched: no owner known for this dataset (anyone can post its tags); "
            "pass --owner ADDRESS"
        )
    else:
        from .arweave.resolve import find_latest_upload

        try:
            latest = find_latest_upload(gateway, owner, did)
        except (BackendError, ResolutionError) as exc:
            skipped.append(f"Arweave {gateway.url}: {exc}")
            latest = None
        if latest is None:
            skipped.append(f"Arweave {gateway.url}: no upload of {did} by {owner}")
        else:
            ref = f"ar://{latest.id}"
            out.append((ref, lambda: _arweave_claims(ref, config, owner)))
    return out, skipped


def read_key_envelope(src: str, config: Config) -> bytes:
    """The bytes of a key envelope given as ``--key-envelope SRC`` (issue 7).

    ``SRC`` is a local file, ``ipfs://<cid>`` (read through the configured gateway / RPC
    API, verified against the CID) or ``ar://<id>`` (the envelope item through the
    configured Arweave gateway). The bytes are only decoded later; a forged envelope
    cannot make ciphertext decrypt (AES-GCM), so it can only fail.

    Raises:
        NotFound: the file or item is not there.
        UsageError: ``SRC`` is none of those forms.
    """
    from .ipfs.gateway_replica import MAX_ENVELOPE_SIZE

    if src.startswith("ipfs://"):
        from .ipfs.cid import Cid
        from .ipfs.gateway_replica import read_ipfs_file

        cid = Cid.decode(src.removeprefix("ipfs://").strip("/"), where=f"--key-envelope {src}")
        access = ipfs_access(config)
        return read_ipfs_file(access, cid, limit=MAX_ENVELOPE_SIZE, what="key envelope")
    if src.startswith("ar://"):
        from .arweave.gateway import ArweaveGateway

        item = src.removeprefix("ar://").strip("/")
        return ArweaveGateway(config.arweave_gateway, settings=config.network).get_data(
            item, limit=MAX_ENVELOPE_SIZE
        )
    if "://" in src:
        raise UsageError(f"--key-envelope {src}: give a file, ipfs://CID or ar://ID")
    path = Path(src).expanduser()
    try:
        with path.open("rb") as f:
            return f.read(MAX_ENVELOPE_SIZE + 1)
    except OSError as exc:
        raise NotFound(f"--key-envelope {src}: cannot read it ({exc.strerror})") from exc


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

    if not getattr(replica, "encrypted", False):
        return replica, resolve_dataset(where, replica, claims, expect_dataset_id=expect_dataset_id)
    key_envelope = getattr(replica, "key_envelope", None)
    raw = key_envelope() if callable(key_envelope) else None
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
    """Resolve ``ref`` (see the module docstring) and check it (:mod:`odfweb3.resolve`).

    A ``did:odf`` may be found in several places: one entry each, the IPNS name first.
    An encrypted publish (issue 7) is decrypted with ``unseal`` (the CLI passes
    :func:`odfweb3.cli.keys_cmds.decrypting_replica`) and then checked in full; the
    replica returned is then the decrypted one. Without keys the result holds the signed
    record's claims only (``content_checked`` False). ``key_envelope`` (the bytes of
    ``--key-envelope``) is used for IPFS replicas, where ``ipfs://CID`` has no record.
    An ``ar://RECORD`` of an ArFS private drive needs ``wallet`` and ``drive_password``.

    Raises:
        UsageError: an unknown reference form.
        ResolutionError / ReplicaMismatch / IntegrityError / BackendError: what failed.
    """
    if ref.startswith(("ipfs://", "ipns://")):
        from .ipfs.gateway_replica import open_ipfs_ref

        ipfs_replica, claims = open_ipfs_ref(
            ref, ipfs_access(config, dns=dns, now=now, trustless=trustless)
        )
        if key_envelope is not None:
            ipfs_replica.use_envelope(key_envelope, key_envelope_source)
        return [_checked(ref, ipfs_replica, claims, unseal)]
    if ref.startswith("ar://"):
        replica, claims = _arweave_claims(ref, config)
        if getattr(replica, "arfs_private", False):
            # An ArFS private drive (issue 7): opened with the publisher's wallet and the
            # drive password, then checked like any replica (it serves plaintext).
            private = _open_private_drive(
                cast("ArweaveReplica", replica), config, wallet, drive_password
            )
            return [(private, resolve_dataset(ref, private, claims))]
        return [_checked(ref, replica, claims, unseal)]
    if ref.startswith("did:odf:"):
        access = ipfs_access(config, dns=dns, now=now, trustless=trustless)
        from .ipfs.gateway_replica import IpfsReplica

        candidates, problems = _did_candidates(ref, config, access, owner)
        found: list[tuple[Replica, ResolvedDataset]] = []
        for where, opener in candidates:
            try:
                replica, claims = opener()
                if key_envelope is not None and isinstance(replica, IpfsReplica):
                    replica.use_envelope(key_envelope, key_envelope_source)
                found.append(_checked(where, replica, claims, unseal, ref))
            except (ResolutionError, NotFound, BackendError) as exc:
                problems.append(f"{where}: {exc}")
        if not found:
            raise ResolutionError(f"{ref}: found on no configured target: {'; '.join(problems)}")
        return found
    raise UsageError(f"cannot resolve {ref!r}: use ipns://, ipfs://, ar:// or did:odf:")


def _open_private_drive(
    replica: ArweaveReplica, config: Config, wallet: Path | None, password: str | None
) -> Replica:
    """An ArFS private drive's replica (issue 7), or a UsageError naming what to pass."""
    from .arweave.private_replica import open_private_replica
    from .arweave.wallet import load_wallet

    wallet = wallet or config.arweave_wallet
    if wallet is None or not password:
        raise UsageError(
            f"{replica.name} is an ArFS private drive: pass the publisher's --wallet "
            "WALLET.json and --drive-password-file FILE (or set ODFWEB3_DRIVE_PASSWORD)"
        )
    assert replica.record is not None and replica.record_id is not None
    return open_private_replica(
        replica.gateway,
        replica.name,
        replica.record_id,
        replica.record,
        replica.owner or "",
        load_wallet(wallet),
        password,
    )


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

    Names (``ipfs://``, ``ipns://``, ``did:odf:``) are resolved and checked first
    (:func:`resolve_ref`); the replica returned is the first found. An encrypted one is
    returned still encrypted (the CLI decrypts it); ``key_envelope`` (``--key-envelope``)
    gives IPFS replicas the envelope ``ipfs://CID`` lacks. An ``ar://RECORD`` of an ArFS
    private drive is opened with ``wallet`` (default: config ``arweave.wallet``) and
    ``drive_password`` (:mod:`.arweave.private_replica`).

    Raises:
        UsageError: an unknown reference form; a private drive without wallet or password.
        DecryptionError: a private drive with a wrong wallet or password.
    """
    kind, _, arg = ref.partition(":")
    if kind == "car" and arg:
        from .ipfs.car_check import CarDirReplica, check_car_dir
        from .ipfs.gateway_replica import SequenceMemory

        out_dir = Path(arg).expanduser()
        # The replay memory is the one IPNS names read online use (issue 16 item 13): an
        # offline copy of an older record is refused once a newer one has been seen.
        memory = SequenceMemory(config.state_dir / "ipns-seen.json")
        return CarDirReplica(check_car_dir(out_dir, memory=memory), ref, out_dir)
    if kind == "ar" and arg.startswith("//"):
        from .arweave.gateway import ArweaveGateway
        from .arweave.replica import open_ar_replica

        ar_replica = open_ar_replica(
            ArweaveGateway(config.arweave_gateway, settings=config.network), ref
        )
        if ar_replica.arfs_private:
            return _open_private_drive(ar_replica, config, wallet, drive_password)
        return ar_replica
    if ref.startswith(("ipfs://", "ipns://")):
        from .ipfs.gateway_replica import open_ipfs_ref

        ipfs_replica, claims = open_ipfs_ref(ref, ipfs_access(config, dns=dns, now=now))
        if key_envelope is not None:
            ipfs_replica.use_envelope(key_envelope, "--key-envelope")
        if ipfs_replica.encrypted:
            # Ciphertext blocks: the chain is walked (and the Seed's ID checked against
            # the envelope's) only once decrypted (odfweb3.cli.keys_cmds.decrypting_replica).
            return ipfs_replica
        resolve_dataset(ref, ipfs_replica, claims)
        return ipfs_replica
    if ref.startswith("did:odf:"):
        return resolve_ref(ref, config, dns=dns, now=now, key_envelope=key_envelope)[0][0]
    if "://" not in ref and Path(ref).is_dir():
        return LocalReplica(DatasetReader.open(ref))
    raise UsageError(
        f"cannot open replica {ref!r}: use car:DIR, ar://ID, ipfs://CID, ipns://NAME, "
        "ipns://DOMAIN, did:odf:… or a dataset directory"
    )
