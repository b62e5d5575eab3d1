"""The Arweave backend: ``bundle:DIR`` and ``arweave[:URL]`` targets; ``ar://`` references.

Declared to the core's registry by :mod:`odfweb3_arweave.declaration` (schemes, traits,
options), which imports this module on first use. Targets:

- ``bundle:DIR``: offline publish (a signed ANS-104 bundle);
- ``arweave`` or ``arweave:http(s)://HOST``: an Arweave gateway (config /
  ``ODFWEB3_ARWEAVE_GATEWAY`` unless given) with a wallet;
- ``turbo`` or ``turbo:http(s)://HOST``: a Turbo bundler (config ``arweave.turbo`` unless
  given) with a wallet that signs the items; readers (and publish's own look at the latest
  upload) read through the gateway.

``ar://<record-or-manifest-id>`` is read through the configured gateway. A ``did:odf`` is
looked up among the uploads of the owner known from publish state or given (anyone can
post its tags, so nobody else's uploads count).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from odfweb3.backends import (
    Backend,
    ReadAccess,
    StateFacts,
    TargetOptions,
    TargetStatus,
)
from odfweb3.config import Config
from odfweb3.errors import BackendError, ConfigError, OdfWeb3Error, ResolutionError, UsageError
from odfweb3.odf.multihash import multihash_from_str
from odfweb3.publish.outdir_seal import OutDirSeal
from odfweb3.publish.state import PublishState, StateStore
from odfweb3.publish.target import AnyTarget
from odfweb3.read.claims import NameClaims
from odfweb3.read.replica import Replica
from odfweb3_arweave.declaration import DECLARATION, ArweaveOptions

if TYPE_CHECKING:
    from odfweb3_arweave.formats.arfs import DriveLayout
    from odfweb3_arweave.publish.bundle_plan import ManifestKind
    from odfweb3_arweave.publish.gateway_target import GatewayTarget
    from odfweb3_arweave.publish.turbo_target import TurboTarget
    from odfweb3_arweave.read.replica import ArweaveReplica

__all__ = ["ArweaveBackend", "open_arweave_target"]


def open_arweave_target(
    config: Config, options: TargetOptions[ArweaveOptions], *, gateway: str | None = None
) -> GatewayTarget:
    """The live Arweave target: ``gateway`` (default ``config.arweave_gateway``) + a wallet.

    The wallet is ``options.wallet`` (``--wallet``, else config ``arweave.wallet`` /
    ``ODFWEB3_ARWEAVE_WALLET``, which the CLI resolves).

    Raises:
        UsageError: no wallet, or a gateway that is not an http(s) URL.
    """
    from odfweb3_arweave.client.gateway import ArweaveGateway
    from odfweb3_arweave.publish.gateway_target import GatewayTarget
    from odfweb3_arweave.wallet import load_wallet

    url = gateway or config.arweave_gateway
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"--to arweave:{url}: give the gateway as http(s)://HOST[:PORT]")
    own = options.own
    wallet = own.wallet or config.arweave_wallet
    if wallet is None:
        raise UsageError(
            "--to arweave needs a wallet: pass --wallet WALLET.json or set arweave.wallet / "
            "ODFWEB3_ARWEAVE_WALLET (create one with odfweb3 wallet new WALLET.json)"
        )
    max_cost = own.max_cost
    if max_cost is None:
        max_cost = config.get("arweave", "max_cost_winston")
    return GatewayTarget(
        ArweaveGateway(url, settings=config.network),
        load_wallet(wallet),
        StateStore(config.state_dir),
        max_cost=max_cost,
        publisher=config.get("publisher"),
        on_price=options.on_price or (lambda winston, size: None),
        approve=options.approve,
        sealer=options.sealer,
        drive_password=options.drive_password,
        # How long the post-check waits for the upload to be mined
        confirm_timeout=float(config.get("arweave", "confirm_timeout_s", default=0)),
        race_timeout=float(config.get("arweave", "race_timeout_s", default=1800)),
        manifest=_manifest_kind(config),
        progress=options.progress,
    )


def open_turbo_target(
    config: Config, options: TargetOptions[ArweaveOptions], *, url: str | None = None
) -> TurboTarget:
    """``--to turbo[:URL]``: the bundler ``url`` (default config ``arweave.turbo``), the
    wallet that signs the items, the gateway readers use; the bundler's key pinned by
    ``arweave.turbo_address`` when set.

    Raises:
        UsageError: no wallet, no bundler URL, one that is not http(s), or ``--max-cost``
            without ``arweave.turbo_payment`` (the price could not be known).
    """
    from odfweb3_arweave.client.gateway import ArweaveGateway
    from odfweb3_arweave.client.turbo import TurboClient, TurboPayment
    from odfweb3_arweave.publish.turbo_target import TurboTarget
    from odfweb3_arweave.wallet import load_wallet

    url = url or config.get("arweave", "turbo")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise UsageError(
            "--to turbo needs the bundler's URL: --to turbo:https://HOST or set arweave.turbo"
        )
    own = options.own
    wallet = own.wallet or config.arweave_wallet
    if wallet is None:
        raise UsageError(
            "--to turbo needs a wallet to sign the items: pass --wallet WALLET.json or set "
            "arweave.wallet / ODFWEB3_ARWEAVE_WALLET (create one with odfweb3 wallet new "
            "WALLET.json)"
        )
    payment = config.get("arweave", "turbo_payment")
    if payment is not None and not (
        isinstance(payment, str) and payment.startswith(("http://", "https://"))
    ):
        raise UsageError("arweave.turbo_payment: give the payment service as http(s)://HOST")
    max_cost = own.max_cost
    if max_cost is None:
        max_cost = config.get("arweave", "max_cost_winston")
    if max_cost is not None and payment is None:
        # Turbo charges credits at its payment service's price: a cap it cannot check is
        # refused rather than silently ignored.
        raise UsageError(
            "--max-cost with --to turbo needs the price: set arweave.turbo_payment to the Turbo "
            "payment service (e.g. https://payment.ardrive.io), or use --to arweave"
        )
    signer = config.get("arweave", "turbo_address")
    chunked_above, chunk_bytes, chunked_timeout = _turbo_chunking(config)
    return TurboTarget(
        ArweaveGateway(config.arweave_gateway, settings=config.network),
        TurboClient(url, settings=config.network, signer=signer if signer else None),
        load_wallet(wallet),
        StateStore(config.state_dir),
        payment=TurboPayment(payment, settings=config.network) if payment else None,
        max_cost=max_cost,
        approve=options.approve,
        publisher=config.get("publisher"),
        sealer=options.sealer,
        drive_password=options.drive_password,
        confirm_timeout=float(config.get("arweave", "confirm_timeout_s", default=0)),
        race_timeout=float(config.get("arweave", "race_timeout_s", default=1800)),
        manifest=_manifest_kind(config),
        progress=options.progress,
        finalize_timeout=_finalize_timeout(config),
        chunked_above=chunked_above,
        chunk_bytes=chunk_bytes,
        chunked_timeout=chunked_timeout,
    )


def _turbo_chunking(config: Config) -> tuple[int, int, float]:
    """``arweave.turbo_chunked_above`` (bytes; items from this size go through the
    bundler's multipart upload, default 10 MiB), ``arweave.turbo_chunk_bytes`` (the chunk
    size, 5 MiB to 500 MiB, default 5 MiB, the smallest the bundler takes) and
    ``arweave.turbo_chunked_timeout_s`` (how long to wait for the bundler to assemble a
    chunked item and answer its receipt, default 600).

    Raises:
        ConfigError: not a number, or a chunk size the bundler does not take.
    """
    from odfweb3_arweave.publish.turbo_chunks import (
        DEFAULT_CHUNK_BYTES,
        DEFAULT_CHUNKED_ABOVE,
        MAX_CHUNK_BYTES,
        MIN_CHUNK_BYTES,
    )

    values: list[float] = []
    for key, default in (
        ("turbo_chunked_above", DEFAULT_CHUNKED_ABOVE),
        ("turbo_chunk_bytes", DEFAULT_CHUNK_BYTES),
        ("turbo_chunked_timeout_s", 600),
    ):
        value = config.get("arweave", key, default=default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ConfigError(f"arweave.{key} is {str(value)[:40]!r}; give a number >= 0")
        values.append(value)
    above, chunk, timeout = int(values[0]), int(values[1]), float(values[2])
    if not MIN_CHUNK_BYTES <= chunk <= MAX_CHUNK_BYTES:
        raise ConfigError(
            f"arweave.turbo_chunk_bytes is {chunk}; the bundler takes chunks of "
            f"{MIN_CHUNK_BYTES} to {MAX_CHUNK_BYTES} bytes"
        )
    return above, chunk, timeout


def _finalize_timeout(config: Config) -> float:
    """``arweave.finalize_timeout_s``: how long ``publish --to turbo`` and ``status`` wait
    for the bundler's FINALIZED of the upload record (default 0: one look, no wait); at the
    deadline both say so in one line and exit 75 (try again later)."""
    return float(config.get("arweave", "finalize_timeout_s", default=0))


def _manifest_kind(config: Config) -> ManifestKind:
    """``arweave.manifest``: ``delta`` (default: each upload's manifest maps what it adds) or
    ``full`` (every path: a consolidation, docs/arweave.md section 9).

    Raises:
        ConfigError: another value.
    """
    value = config.get("arweave", "manifest", default="delta")
    if value == "delta":
        return "delta"
    if value == "full":
        return "full"
    raise ConfigError(f"arweave.manifest is {str(value)[:40]!r}; use delta or full")


def _insecure(config: Config) -> bool:
    """``arweave.insecure_unverified_manifests``: read ``ar://MANIFEST`` unverified."""
    return config.get("arweave", "insecure_unverified_manifests") is True


def _trust_note(replica: ArweaveReplica) -> str:
    """What binds the head: a signed record, a signed manifest, or nothing (opt-in)."""
    if replica.record is not None:
        return f"upload record signed by {replica.owner} (signature and id checked)"
    if not replica.unverified:
        return (
            f"path manifest and its refs/head signed by {replica.owner} (raw bytes from "
            "GET /raw/{id}; signatures and ids checked); no upload record: no dataset ID claim"
        )
    return (
        "opened by its path manifest (arweave.insecure_unverified_manifests): no signature "
        "checked, no signed record binds the head: UNVERIFIED; use ar://RECORD or did:odf "
        "with --owner"
    )


def _arweave_claims(
    ref: str, config: Config, owner: str | None = None
) -> tuple[ArweaveReplica, NameClaims]:
    from odfweb3_arweave.client.gateway import ArweaveGateway
    from odfweb3_arweave.read.replica import open_ar_replica

    gateway = ArweaveGateway(config.arweave_gateway, settings=config.network)
    # The record's signature is checked there: its dataset ID and head are the signer's.
    replica = open_ar_replica(
        gateway, ref, expected_owner=owner, insecure_unverified_manifests=_insecure(config)
    )
    head = replica.expected_head
    return replica, NameClaims(
        locator=f"ar://{replica.manifest_id}",
        dataset_id=replica.dataset_id,
        head=multihash_from_str(head) if head else None,
        notes=(
            f"read through {gateway.url}; every block and object re-hashed",
            _trust_note(replica),
        ),
    )


def _open_private_drive(
    replica: ArweaveReplica, config: Config, wallet: Path | None, password: str | None
) -> Replica:
    """An ArFS private drive's replica, or a UsageError naming what to pass."""
    from odfweb3_arweave.read.private_replica import open_private_replica
    from odfweb3_arweave.wallet import load_wallet

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


class ArweaveBackend:
    """Arweave for the core's registry (:class:`odfweb3.backends.Backend`)."""

    name: Final = DECLARATION.name
    rank: Final = DECLARATION.rank
    target_schemes: Final = DECLARATION.target_schemes
    ref_prefixes: Final = DECLARATION.ref_prefixes

    def open_target(
        self, spec: str, config: Config, options: TargetOptions[ArweaveOptions]
    ) -> AnyTarget:
        from odfweb3_arweave.publish.bundle_target import BundleTarget
        from odfweb3_arweave.wallet import load_wallet

        kind, _, arg = spec.partition(":")
        if kind == "bundle":
            if not arg:
                raise UsageError("--to bundle:OUT_DIR needs a directory, e.g. --to bundle:./out")
            wallet = options.own.wallet
            if wallet is None:
                raise UsageError(
                    "--to bundle:OUT_DIR needs an Arweave wallet to sign with: pass --wallet "
                    "WALLET.json (create one with odfweb3 wallet new WALLET.json)"
                )
            out = Path(arg).expanduser().absolute()
            return BundleTarget(
                out,
                load_wallet(wallet),
                publisher=config.get("publisher"),
                sealer=options.sealer,
                drive_password=options.drive_password,
                manifest=_manifest_kind(config),
                seal=OutDirSeal(config.state_dir, f"bundle:{out}"),
            )
        if kind == "turbo":
            return open_turbo_target(config, options, url=arg or None)
        return open_arweave_target(config, options, gateway=arg or None)

    def open_replica(self, ref: str, config: Config, access: ReadAccess) -> Replica:
        from odfweb3_arweave.client.gateway import ArweaveGateway
        from odfweb3_arweave.read.bundle_replica import open_bundle_dir
        from odfweb3_arweave.read.replica import open_ar_replica

        if ref.startswith("bundle:"):  # the offline output, checked like car:DIR
            return open_bundle_dir(ref)
        replica = open_ar_replica(
            ArweaveGateway(config.arweave_gateway, settings=config.network),
            ref,
            insecure_unverified_manifests=_insecure(config),
        )
        if replica.arfs_private:
            return _open_private_drive(replica, config, access.wallet, access.drive_password)
        return replica

    def resolve(self, ref: str, config: Config, access: ReadAccess) -> tuple[Replica, NameClaims]:
        from odfweb3_arweave.read.bundle_replica import open_bundle_dir

        if ref.startswith("bundle:"):
            bundle = open_bundle_dir(ref)
            claims = NameClaims(
                f"{ref} (ar://{bundle.record_id})",
                dataset_id=bundle.dataset_id,
                head=bundle.head(),
            )
            return bundle, claims
        replica, claims = _arweave_claims(ref, config)
        if replica.arfs_private:
            # An ArFS private drive: opened with the publisher's wallet and the
            # drive password, then checked like any replica (it serves plaintext).
            private = _open_private_drive(replica, config, access.wallet, access.drive_password)
            return private, claims
        return replica, claims

    def find_dataset(
        self, did: str, config: Config, access: ReadAccess
    ) -> tuple[list[tuple[str, Callable[[], tuple[Replica, NameClaims]]]], list[str]]:
        """The latest upload of ``did`` by its known owner (publish state or ``--owner``)."""
        from odfweb3_arweave.client.gateway import ArweaveGateway
        from odfweb3_arweave.publish.state import parse_arweave_extra
        from odfweb3_arweave.read.lookup import find_latest_upload

        gateway = ArweaveGateway(config.arweave_gateway, settings=config.network)
        owner = access.owner
        if owner is None:
            states = StateStore(config.state_dir)
            target = f"arweave:{gateway.url}"
            state = states.load(did, target)
            where = str(states.path_for(did, target))
            owner = parse_arweave_extra(state.extra, where).owner if state is not None else None
            turbo = config.get("arweave", "turbo")
            if owner is None and isinstance(turbo, str):
                # Uploads sent through the bundler are read through the same gateway.
                target = f"turbo:{turbo.rstrip('/')}"
                state = states.load(did, target)
                where = str(states.path_for(did, target))
                owner = parse_arweave_extra(state.extra, where).owner if state else None
            owner = owner or None
        if owner is None:
            return [], [
                "Arweave not searched: no owner known for this dataset (anyone can post its "
                "tags); pass --owner ADDRESS"
            ]
        try:
            latest = find_latest_upload(gateway, owner, did)
        except (BackendError, ResolutionError) as exc:
            return [], [
                f"Arweave {gateway.url}: {exc}",
                f"Arweave {gateway.url}: no upload of {did} by {owner}",
            ]
        if latest is None:
            return [], [f"Arweave {gateway.url}: no upload of {did} by {owner}"]
        ref = f"ar://{latest.id}"

        def opener() -> tuple[Replica, NameClaims]:
            return _arweave_claims(ref, config, owner)

        return [(ref, opener)], []

    def takes_key_envelope(self, ref: str) -> bool:
        """An upload record (and ``bundle:DIR``'s) always names its envelope."""
        return False

    def read_key_envelope(self, src: str, config: Config, limit: int) -> bytes:
        from odfweb3_arweave.client.gateway import ArweaveGateway

        item = src.removeprefix("ar://").strip("/")
        gateway = ArweaveGateway(config.arweave_gateway, settings=config.network)
        return gateway.get_data(item, limit=limit)

    def query_status(
        self, states: Sequence[PublishState], config: Config
    ) -> list[TargetStatus | None]:
        """Per gateway upload: pending / confirmed (block height) and confirmations."""
        from odfweb3_arweave.client.gateway import ArweaveGateway
        from odfweb3_arweave.client.turbo import TurboClient
        from odfweb3_arweave.publish.gateway_target import upload_statuses
        from odfweb3_arweave.publish.turbo_target import turbo_statuses

        out: list[TargetStatus | None] = []
        for state in states:
            if state.target.startswith("turbo:"):
                try:
                    url = state.target[len("turbo:") :]
                    with TurboClient(url, settings=config.network) as turbo:
                        rows = turbo_statuses(
                            turbo,
                            state,
                            StateStore(config.state_dir),
                            wait=_finalize_timeout(config),
                        )
                        out.append(TargetStatus(uploads=rows))
                except OdfWeb3Error as exc:
                    out.append(TargetStatus(node={"error": str(exc)}))
                continue
            if not state.target.startswith("arweave:"):
                out.append(None)
                continue
            try:
                url = state.target[len("arweave:") :]
                with ArweaveGateway(url, settings=config.network) as gateway:
                    out.append(TargetStatus(uploads=upload_statuses(gateway, state)))
            except OdfWeb3Error as exc:
                out.append(TargetStatus(node={"error": str(exc)}))
        return out

    def state_facts(self, state: PublishState) -> StateFacts:
        """The shown facts of an ``arweave:`` or ``bundle:`` state, from its typed form."""
        from odfweb3_arweave.publish.state import parse_arweave_state

        typed = parse_arweave_state(state, f"publish state of {state.target}")
        record_id = typed.record.record_id if typed.record is not None else None
        return StateFacts(
            record_id=record_id,
            key_envelope=typed.extra.key_envelope,
            share=_share(state.dataset_id, record_id, typed.extra.owner, typed.extra.drive),
        )

    def record_locator(self, state: PublishState) -> str | None:
        from odfweb3_arweave.publish.state import parse_upload_facts

        record = parse_upload_facts(state.record, f"publish state of {state.target}", "record")
        return f"ar://{record.record_id}" if record is not None and record.record_id else None

    def new_wallet(self, path: Path) -> str:
        """An RSA-4096 wallet written as a JWK file with mode 0600 (``odfweb3 wallet new``)."""
        from odfweb3_arweave.wallet import generate_wallet, save_wallet

        wallet = generate_wallet()
        save_wallet(wallet, path)
        return wallet.address

    def wallet_address(self, path: Path) -> str:
        from odfweb3_arweave.wallet import load_wallet

        address: str = load_wallet(path).address
        return address

    def balance(self, address: str, gateway: str) -> int:
        """Winston held by ``address`` (``odfweb3 wallet balance``)."""
        from odfweb3_arweave.client.gateway import ArweaveGateway

        with ArweaveGateway(gateway, timeout=30.0) as client:
            return int(client.balance(address))


def _share(
    dataset_id: str, record_id: str | None, owner: str | None, drive: DriveLayout | None
) -> tuple[tuple[str, str], ...]:
    """What to give a reader after a publish: the reference that follows every later
    publish (the dataset ID with its owner: anyone can post its tags, so readers need the
    owner), the one fixed version (``ar://RECORD``), and the ArFS drive (what ``ardrive
    list-drive -d`` takes)."""
    out: list[tuple[str, str]] = []
    if owner:
        out.append(("latest version", f"{dataset_id} --owner {owner}"))
    if record_id:
        out.append(("this version only", f"ar://{record_id}"))
    if drive is not None:
        out.append(
            (
                "ArFS drive",
                f"{drive.drive_id} (root folder {drive.root_folder_id}; "
                f"ardrive list-drive -d {drive.drive_id})",
            )
        )
    return tuple(out)


def _conforms() -> Backend:
    """mypy checks that the class is a registry Backend."""
    return ArweaveBackend()
