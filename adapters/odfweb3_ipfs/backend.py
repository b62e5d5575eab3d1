"""The IPFS backend: ``car:DIR`` and ``ipfs[:URL]`` targets; ``car:``, ``ipfs://``, ``ipns://``.

Declared to the core's registry by :mod:`odfweb3_ipfs.declaration` (schemes, traits,
options), which imports this module on first use. Targets:

- ``car:DIR``: offline publish (CAR files + IPNS record), the embedded default;
- ``ipfs`` or ``ipfs:http://HOST:PORT``: a live Kubo/js-ipfs node (API from config /
  ``ODFWEB3_IPFS_API`` unless given);
- ``pinning:NAME[,NAME...]`` or ``pinning`` (``pinning.publish_to``): the ``ipfs`` node, then
  the Pinning Service API services configured under ``pinning.services``.

IPFS is read through the gateway ``ipfs.gateway`` / ``ODFWEB3_IPFS_GATEWAY`` and, for raw
blocks, records and DNS, the RPC API ``ipfs.api`` / ``ODFWEB3_IPFS_API``. A ``did:odf`` is
looked up as the IPNS name derived from the dataset key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from odfweb3.backends import (
    Backend,
    DnsTxtLookup,
    NextSteps,
    ReadAccess,
    StateFacts,
    TargetOptions,
    TargetStatus,
)
from odfweb3.config import Config
from odfweb3.crypto.keystore import Keystore
from odfweb3.errors import BackendError, FormatError, OdfWeb3Error, UsageError
from odfweb3.odf.identity import DatasetId
from odfweb3.read.replica import Replica
from odfweb3_ipfs.declaration import DECLARATION, IpfsOptions
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.formats.libp2p_keys import IpnsName, parse_ipns_name, public_key_bytes
from odfweb3_ipfs.read.replay_memory import SEEN_FILE, SequenceMemory

# The publish side (targets, CID profiles, publish states) is imported where it is used: a
# pull or verify from car:DIR loads this module too, and the publish modules were some
# 60 of the 120 modules a pull loads beyond validate's, each compiled at every run where
# no bytecode is cached.
if TYPE_CHECKING:
    from odfweb3.publish.state import PublishState
    from odfweb3.publish.target import AnyTarget
    from odfweb3.read.claims import NameClaims
    from odfweb3_ipfs.formats.dnslink import DnsLinkRecord
    from odfweb3_ipfs.publish.cid_profile import CidProfile
    from odfweb3_ipfs.publish.node_target import IpfsNodeTarget
    from odfweb3_ipfs.publish.signing_key import KnownName
    from odfweb3_ipfs.publish.state import CarState
    from odfweb3_ipfs.read.access import IpfsAccess

__all__ = ["IpfsBackend", "ipfs_access", "open_ipfs_target"]

# The node target that re-signs a record or reads the node's (republish, status) publishes
# no data: the CID profile and --unpin-previous of a publish are not its to know.
_NO_PUBLISH: Final = TargetOptions(own=IpfsOptions())


def _record_ttl_ns(config: Config) -> int:
    """The records' TTL: ``ipfs.record_ttl`` seconds (default 300, Kubo's). How long a
    resolver (Kubo's name cache) may keep serving the previous version after an update;
    shorter means fresher reads and more lookups."""
    return int(float(config.get("ipfs", "record_ttl", default=300)) * 1_000_000_000)


def _record_lifetime(config: Config) -> timedelta:
    """IPNS record validity: ``ipfs.record_lifetime_hours`` (default 48 h)."""
    return timedelta(hours=float(config.get("ipfs", "record_lifetime_hours", default=48)))


def _cid_profile(options: TargetOptions[IpfsOptions]) -> CidProfile:
    """The UnixFS import profile of an IPFS publish (``--cid-profile``, ``--cid-version``)."""
    from odfweb3_ipfs.publish.cid_profile import profile_for

    return profile_for(options.own.cid_profile, options.own.cid_version)


def open_ipfs_target(
    config: Config, options: TargetOptions[IpfsOptions], *, api: str | None = None
) -> IpfsNodeTarget:
    """The live IPFS target: the node at ``api`` (default ``config.ipfs_api``)."""
    from odfweb3.publish.state import StateStore
    from odfweb3_ipfs.client.kubo import KuboClient
    from odfweb3_ipfs.publish.node_target import IpfsNodeTarget

    url = api or config.ipfs_api
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"--to ipfs:{url}: give the node's RPC API as http://HOST:PORT")
    timeout = float(config.get("ipfs", "timeout", default=60.0))
    client = KuboClient(url, settings=config.network, timeout=timeout)
    return IpfsNodeTarget(
        client,
        Keystore(config.keystore_dir),
        StateStore(config.state_dir),
        gateway_url=config.ipfs_gateway,
        profile=_cid_profile(options),
        lifetime=_record_lifetime(config),
        ttl_ns=_record_ttl_ns(config),
        unpin_previous=options.own.unpin_previous,
        sealer=options.sealer,
        publisher=config.get("publisher"),
        announce=options.announce,
        other_names=_names_outside(config, f"ipfs:{client.api_url}"),
    )


def _names_outside(config: Config, target: str) -> Callable[[str], list[KnownName]]:
    """The dataset's names this machine knows outside ``target`` (:mod:`.signing_key`)."""
    from odfweb3_ipfs.publish.signing_key import other_names

    return lambda dataset_id: other_names(config.state_dir, dataset_id, exclude=target)


def ipfs_access(
    config: Config,
    *,
    dns: DnsTxtLookup | None = None,
    now: Callable[[], datetime] | None = None,
    trustless: bool = False,
) -> IpfsAccess:
    """How IPFS names are read: the configured gateway and RPC API, and the replay memory."""
    from odfweb3_ipfs.client.gateway import IpfsGateway
    from odfweb3_ipfs.client.kubo import KuboClient
    from odfweb3_ipfs.read.access import IpfsAccess

    access = IpfsAccess(
        IpfsGateway(config.ipfs_gateway, settings=config.network),
        KuboClient(config.ipfs_api, settings=config.network, retries=1),
        dns=dns,
        memory=SequenceMemory(config.state_dir / "ipns-seen.json"),
        trustless=trustless,
        # Off unless the user opts in, by this name, in odfweb3.yaml
        insecure_unverified_paths=config.get("ipfs", "insecure_unverified_paths") is True,
    )
    if now is not None:
        access.now = now
    return access


def _local_key(config: Config) -> Callable[[str], str | None]:
    """IPNS name -> the first keystore label holding its key, if any."""

    def find(name: str) -> str | None:
        pub = parse_ipns_name(name).inlined_public_key()
        labels = Keystore(config.keystore_dir).labels_with(pub) if pub is not None else []
        return labels[0] if labels else None

    return find


class IpfsBackend:
    """IPFS for the core's registry (:class:`odfweb3.backends.Backend`)."""

    name: Final = DECLARATION.name
    rank: Final = DECLARATION.rank
    target_schemes: Final = DECLARATION.target_schemes
    ref_prefixes: Final = DECLARATION.ref_prefixes

    def open_target(
        self, spec: str, config: Config, options: TargetOptions[IpfsOptions]
    ) -> AnyTarget:
        from odfweb3.publish.outdir_seal import OutDirSeal
        from odfweb3_ipfs.publish.car_target import CarTarget

        kind, _, arg = spec.partition(":")
        if kind == "car":
            if not arg:
                raise UsageError("--to car:OUT_DIR needs a directory, e.g. --to car:./out")
            out = Path(arg).expanduser().absolute()
            return CarTarget(
                out,
                Keystore(config.keystore_dir),
                profile=_cid_profile(options),
                lifetime=_record_lifetime(config),
                ttl_ns=_record_ttl_ns(config),
                publisher=config.get("publisher"),
                sealer=options.sealer,
                seen=SequenceMemory(config.state_dir / SEEN_FILE),
                seal=OutDirSeal(config.state_dir, f"car:{out}"),
                announce=options.announce,
                other_names=_names_outside(config, f"car:{out}"),
            )
        if kind == "pinning":
            from odfweb3_ipfs.publish.pinning_config import open_pinning_target

            via_car = config.get("pinning", "via") == "car"
            node = None if via_car else open_ipfs_target(config, options)
            return open_pinning_target(config, options, arg, node)
        return open_ipfs_target(config, options, api=arg or None)

    def open_replica(self, ref: str, config: Config, access: ReadAccess) -> Replica:
        if ref.startswith("car:"):
            out_dir = Path(ref.removeprefix("car:")).expanduser()
            # The replay memory is the one IPNS names read online use: an
            # offline copy of an older record is refused once a newer one has been seen.
            from odfweb3_ipfs.read.car_replica import CarDirReplica, check_car_dir

            memory = SequenceMemory(config.state_dir / "ipns-seen.json")
            check = check_car_dir(out_dir, memory=memory)
            return CarDirReplica(check, ref, out_dir, _local_key(config))
        from odfweb3_ipfs.read.names import open_ipfs_ref

        replica, claims = open_ipfs_ref(ref, ipfs_access(config, dns=access.dns, now=access.now))
        if access.key_envelope is not None:
            replica.use_envelope(access.key_envelope, "--key-envelope")
        if replica.encrypted:
            # Ciphertext blocks: the chain is walked (and the Seed's ID checked against
            # the envelope's) only once decrypted (odfweb3.read.unseal.decrypting_replica).
            return replica
        from odfweb3.read.claims import resolve_dataset  # the read side: not for a publish

        resolve_dataset(ref, replica, claims)
        return replica

    def resolve(self, ref: str, config: Config, access: ReadAccess) -> tuple[Replica, NameClaims]:
        if not ref.startswith(("ipfs://", "ipns://")):
            raise UsageError(f"cannot resolve {ref!r}: use ipns://, ipfs://, ar:// or did:odf:")
        from odfweb3_ipfs.read.names import open_ipfs_ref

        replica, claims = open_ipfs_ref(
            ref, ipfs_access(config, dns=access.dns, now=access.now, trustless=access.trustless)
        )
        if access.key_envelope is not None:
            replica.use_envelope(access.key_envelope, access.key_envelope_source)
        return replica, claims

    def find_dataset(
        self, did: str, config: Config, access: ReadAccess
    ) -> tuple[list[tuple[str, Callable[[], tuple[Replica, NameClaims]]]], list[str]]:
        """The dataset's own IPNS name (derived from its key)."""
        from odfweb3_ipfs.read.names import open_ipns_name

        ipfs = ipfs_access(config, dns=access.dns, now=access.now, trustless=access.trustless)
        name = IpnsName.from_public_key(DatasetId.parse(did).public_key)

        def opener() -> tuple[Replica, NameClaims]:
            replica, claims = open_ipns_name(f"ipns://{name}", ipfs, name)
            if access.key_envelope is not None:
                replica.use_envelope(access.key_envelope, access.key_envelope_source)
            return replica, claims

        return [(f"ipns://{name}", opener)], []

    def takes_key_envelope(self, ref: str) -> bool:
        """``ipfs://CID`` has no record to name its envelope; an IPNS record may name none
        (a publish from before envelopes were recorded). ``car:DIR`` names its own."""
        return ref.startswith(("ipfs://", "ipns://"))

    def read_key_envelope(self, src: str, config: Config, limit: int) -> bytes:
        if not src.startswith("ipfs://"):
            raise UsageError(f"--key-envelope {src}: give a file, ipfs://CID or ar://ID")
        from odfweb3_ipfs.read.names import read_ipfs_file

        cid = Cid.decode(src.removeprefix("ipfs://").strip("/"), where=f"--key-envelope {src}")
        return read_ipfs_file(ipfs_access(config), cid, limit=limit, what="key envelope")

    def republisher(self, target: str, config: Config) -> IpfsNodeTarget | None:
        """The node's target for ``ipfs:URL``; ``car:`` records are re-signed by publishing."""
        if not target.startswith("ipfs:"):
            return None
        return open_ipfs_target(config, _NO_PUBLISH, api=target.removeprefix("ipfs:"))

    def query_status(
        self, states: Sequence[PublishState], config: Config
    ) -> list[TargetStatus | None]:
        """Per live-node state: the record the node holds for the name (car: has no node)."""
        from odfweb3_ipfs.publish.node_target import read_node_record

        opened: dict[str, IpfsNodeTarget] = {}
        out: list[TargetStatus | None] = []
        for state in states:
            name = _ipns_name(state)
            if not state.target.startswith("ipfs:"):
                out.append(None)
                continue
            api = state.target[len("ipfs:") :]
            if api not in opened:
                opened[api] = open_ipfs_target(config, _NO_PUBLISH, api=api)
            if not name:
                out.append(None)
                continue
            try:
                seen = read_node_record(opened[api].client, parse_ipns_name(name))
            except (BackendError, OdfWeb3Error) as exc:
                out.append(TargetStatus(node={"error": str(exc)}))
                continue
            if seen is None:
                out.append(TargetStatus(node={"record": None}))
                continue
            out.append(
                TargetStatus(
                    node={
                        "sequence": seen.record.sequence,
                        "value": seen.record.value_text,
                        "validity": seen.record.expires_at.isoformat(),
                        "expired": seen.expired,
                    },
                    validity=seen.record.expires_at.isoformat(),
                )
            )
        return out

    def check_dnslink_domain(self, domain: str) -> str:
        from odfweb3_ipfs.formats.dnslink import check_domain

        return check_domain(domain)

    def dnslink_record(self, domain: str, state: PublishState) -> DnsLinkRecord | None:
        """``_dnslink.DOMAIN TXT "dnslink=/ipns/NAME"`` for the publish's IPNS name."""
        from odfweb3_ipfs.formats.dnslink import dnslink_record

        name = _ipns_name(state)
        if not name:
            return None
        return dnslink_record(domain, name)

    def state_facts(self, state: PublishState) -> StateFacts:
        """The shown facts of a ``car:``, ``ipfs:`` or ``pinning:`` state, from its typed form."""
        from odfweb3_ipfs.publish.state import (
            CarState,
            DagFacts,
            parse_car_extra,
            parse_ipns_facts,
            parse_node_extra,
        )

        where = f"publish state of {state.target}"
        record = parse_ipns_facts(state.record, where)
        pending, source, dag, steps = False, None, DagFacts(), None
        if state.target.startswith("ipfs:"):
            node = parse_node_extra(state.extra, where)
            pending, source, dag = node.pending is not None, node.source, node.dag
        elif state.target.startswith("car:"):
            car = CarState(record, parse_car_extra(state.extra, where))
            dag, steps = car.extra.dag, _car_import_steps(state.target, car)
        return StateFacts(
            name=record.name,
            sequence=record.sequence,
            validity=record.validity,
            mode=record.mode,
            pending=pending,
            key_envelope=dag.key_envelope,
            source=source,
            # The signed record follows every later publish: the name is what to give.
            share=(("latest version", f"ipns://{record.name}"),) if record.name else (),
            cache_ttl=record.ttl,
            next_steps=steps,
        )

    def record_locator(self, state: PublishState) -> str | None:
        name = _ipns_name(state)
        return f"ipns://{name}" if name else None

    def record_file(self, source: str) -> tuple[Path, str]:
        from odfweb3_ipfs.publish.name_push import record_file

        return record_file(source)

    def push_record(
        self, config: Config, path: Path, name: str, url: str, *, check: bool = True
    ) -> dict[str, Any]:
        from odfweb3_ipfs.publish.name_push import push_record_file

        return push_record_file(config, path, name, url, check=check)

    def key_name(self, public_key: bytes) -> str:
        """The IPNS name (``k51…``) of a raw Ed25519 public key."""
        return str(IpnsName.from_public_key(public_key))

    def named_key(self, text: str) -> bytes | None:
        """The Ed25519 key inlined in the IPNS name ``text`` (``k51…``, ``12D3Koo…``,
        ``/ipns/…``), or None when ``text`` is not such a name."""
        try:
            return parse_ipns_name(text).inlined_public_key()
        except FormatError:
            return None

    def signing_identity(self, dataset_id: str, config: Config) -> str:
        """``ipns://NAME`` of this keystore's key for the dataset, else of the dataset ID's key
        (the one ``publish --to car:DIR`` / ``ipfs`` signs with)."""
        keystore = Keystore(config.keystore_dir)
        if keystore.has(dataset_id):
            raw = public_key_bytes(keystore.load(dataset_id))
        else:
            raw = DatasetId.parse(dataset_id).public_key
        return f"ipns://{IpnsName.from_public_key(raw)}"

    def pin_status(
        self,
        states: Sequence[PublishState],
        config: Config,
        env: Mapping[str, str],
        *,
        online: bool,
    ) -> list[dict[str, Any] | None]:
        """Per pinning service (target ``pinning:NAME``): the pin's status, asked of the
        service (``GET /pins/{requestid}``) unless offline; the saved status otherwise."""
        return [_pin_status(state, config, env, online) for state in states]


def _ipns_name(state: PublishState) -> str | None:
    """The IPNS name in the ``record`` of an IPFS target's state (car:, ipfs:, pinning:)."""
    from odfweb3_ipfs.publish.state import parse_ipns_facts

    return parse_ipns_facts(state.record, f"publish state of {state.target}").name


def _pin_status(
    state: PublishState, config: Config, env: Mapping[str, str], online: bool
) -> dict[str, Any] | None:
    from odfweb3_ipfs.publish.state import parse_pin_state

    if not state.target.startswith("pinning:"):
        return None
    service = state.target[len("pinning:") :]
    saved = parse_pin_state(state, f"publish state of {state.target}").extra
    pin: dict[str, Any] = {
        "service": service,
        "requestid": saved.requestid,
        "status": saved.status,
        "endpoint": saved.endpoint,
        "live": False,
    }
    if not online or not pin["requestid"]:
        return pin
    try:
        if service not in (config.get("pinning", "services", default={}) or {}):
            pin["error"] = f"service {service} is no longer in the configuration"
            return pin
        from odfweb3_ipfs.publish.pinning_config import load_service

        svc = load_service(config, service, env)
        with svc.client:
            # The pin is for the root this machine asked for: an answer about another CID
            # is refused (reported as this row's error), never shown as "pinned".
            got = svc.client.get(
                str(pin["requestid"]), state.locator or None, timeout=svc.client.timeout
            )
    except OdfWeb3Error as exc:
        pin["error"] = str(exc)
        return pin
    if got is None:
        pin.update(status="gone", live=True)
    else:
        pin.update(status=got.status, live=True, cid=got.cid, reason=got.reason or None)
    return pin


def _conforms() -> Backend:
    """mypy checks that the class is a registry Backend."""
    return IpfsBackend()


def _car_import_steps(target: str, car: CarState) -> NextSteps | None:
    """``car:DIR``: the commands that load it into a node (none before a record exists)."""
    from odfweb3_ipfs.publish.car_target import import_commands

    if not car.record.name or not car.record.file:
        return None
    return NextSteps(
        why="every CAR is needed, oldest first (each holds only what the ones before it lack; "
        "importing only the newest hangs, the node looking for the rest)",
        what="import into a node",
        directory=target.partition(":")[2],
        commands=import_commands(car),
    )
