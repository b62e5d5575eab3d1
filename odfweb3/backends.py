"""The backend registry: which network package handles a target name or a reference.

Each network (IPFS, Arweave) is an ordinary package under ``adapters/`` (``odfweb3_ipfs``,
``odfweb3_arweave``) with a small declaration module (``odfweb3_ipfs.declaration``) listed in
:data:`DECLARATIONS`. A :class:`Declaration` says, without importing any network code, what
the backend is: its target schemes and reference prefixes, what each scheme is
(:class:`TargetTraits`), its ``publish`` command-line options (:class:`CliOption`), how it
completes publish options, and where its :class:`Backend` lives; that module (and with it
httpx, cryptography and the formats) is imported the first time a target or reference of the
backend is used. So building the command line (every ``--help``) reads only the
declarations, and a ``car:`` publish loads no Arweave code. The list is here, not in Python
entry points: reading the installed distributions' metadata costs about 50 ms on every start.

The core never imports an adapter: it asks this registry and dispatches on the scheme (the
text before the first ``:``) of a target name (``car:DIR``, ``ipfs``, ``bundle:DIR``,
``arweave``) or a reference (``car:DIR``, ``ipfs://``, ``ipns://``, ``ar://``). A backend's
optional abilities are Protocols checked with ``isinstance`` (:class:`DatasetFinder`,
:class:`KeyEnvelopeReader`, :class:`RepublishingBackend`, :class:`WalletMaker`,
:class:`DnsLinker`, :class:`PinReporter`, :class:`NamePusher`, :class:`SigningIdentity`), never
probed by attribute name.

The layers and this registry are described in docs/design.md ("Layers", "Backends").
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, runtime_checkable

from odfweb3.errors import OdfWeb3Error, UsageError

if TYPE_CHECKING:
    from odfweb3.config import Config
    from odfweb3.crypto.sealer import Sealer
    from odfweb3.publish.state import PublishState
    from odfweb3.publish.target import AnyTarget, Phases, Price
    from odfweb3.read.claims import NameClaims
    from odfweb3.read.replica import Replica

__all__ = [
    "DECLARATIONS",
    "Backend",
    "CliOption",
    "DatasetFinder",
    "Declaration",
    "DnsLinker",
    "DnsTxtLookup",
    "KeyEnvelopeReader",
    "KeyNamer",
    "NamePusher",
    "NextSteps",
    "NoOptions",
    "PinReporter",
    "ReadAccess",
    "Republisher",
    "RepublishingBackend",
    "SigningIdentity",
    "StateDescriber",
    "StateFacts",
    "TargetOptions",
    "TargetStatus",
    "TargetTraits",
    "WalletMaker",
    "all_backends",
    "backend_for_ref",
    "backend_for_target",
    "backend_options",
    "declarations",
    "key_namer",
    "open_target",
    "opened_name",
    "own_options",
    "parse_options",
    "state_facts",
    "target_forms",
    "target_kinds",
    "target_traits",
]

_O = TypeVar("_O")

#: The declaration module of every backend, one per network package (each defines
#: ``DECLARATION``); backends are ranked by :attr:`Declaration.rank`, not by this order.
DECLARATIONS: tuple[str, ...] = ("odfweb3_ipfs.declaration", "odfweb3_arweave.declaration")

#: The TXT strings of a DNS name (``_dnslink.example.org``); tests pass their own answers.
DnsTxtLookup = Callable[[str], Sequence[str]]


@dataclass(frozen=True)
class NoOptions:
    """The options of a backend that adds none to ``publish`` (:attr:`Declaration.options_type`)."""


@dataclass(frozen=True)
class TargetOptions(Generic[_O]):
    """What a publish opens a target with: its backend's own options (:attr:`own`, of its
    :attr:`Declaration.options_type`: the IPFS CID profile, the Arweave wallet...), and what
    every network's target takes: the sealer, a private drive's password, the hooks.

    Typed by the backend's options: ``TargetOptions[IpfsOptions]``. :func:`open_target` refuses
    options of another backend's type, so a target never reads defaults in place of options
    it was not given.
    """

    own: _O  # its backend's options, completed (backend_options / complete_options)
    sealer: Sealer | None = None  # encrypt (docs/design.md, "Encryption")
    # a target with TargetTraits.private_drives: an ArFS private drive with this password
    # (never in a repr)
    drive_password: str | None = field(default=None, repr=False)
    # where a target reads its tokens (ODFWEB3_PINNING_<NAME>_TOKEN; the CLI passes os.environ)
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    notify: Callable[[str], None] | None = None  # status changes, one line each
    # a signing key created for a dataset's first publish: said once, with how to back it up
    announce: Callable[[str], None] | None = None
    # the publish's progress display, phase by phase (signing, sending, confirming); None:
    # nothing shown
    progress: Phases | None = None
    on_price: Callable[[int, int], None] | None = None  # (amount, bytes) before posting
    # the price (None: not known) before anything is paid; False: send nothing
    approve: Callable[[Price | None], bool] | None = None


@dataclass(frozen=True)
class ReadAccess:
    """How a reference is read: injected DNS and clock, and what the reader was given.

    ``key_envelope`` (the bytes of ``--key-envelope``) is for replicas that have no record
    naming their envelope (``ipfs://CID``); ``wallet`` and ``drive_password`` open an ArFS
    private drive; ``owner`` is the Arweave address a ``did:odf`` lookup trusts.
    """

    dns: DnsTxtLookup | None = None
    now: Callable[[], datetime] | None = None
    trustless: bool = False
    owner: str | None = None
    key_envelope: bytes | None = None
    key_envelope_source: str = "--key-envelope"
    wallet: Path | None = None
    drive_password: str | None = field(default=None, repr=False)


@dataclass
class TargetStatus:
    """What a backend's node or gateway says about one publish state (``odfweb3 status``).

    ``node`` is the node's view (``{"error": ...}`` when it did not answer, ``{"record":
    None}`` when it has no record); ``validity`` replaces the saved expiry when the node
    reported a newer one; ``uploads`` lists uploads with their confirmation state.
    """

    node: dict[str, Any] | None = None
    validity: str | None = None
    uploads: list[dict[str, Any]] | None = None


@dataclass(frozen=True)
class StateFacts:
    """What the CLI shows of a publish state (``status``, ``publish``), read by the
    target's backend from its own typed state: the core knows no
    adapter's keys.

    Attributes:
        name: the IPNS name (IPFS targets).
        record_id: the upload record's id (Arweave targets).
        sequence: the name record's sequence.
        validity: when the name record expires (ISO 8601).
        mode: how the node took the record (``routing/put``, ``name/publish``).
        pending: an unfinished publish is checkpointed (resumed by the next one).
        key_envelope: the key envelope's locator (encrypted publishes).
        source: the local dataset directory the publish came from, when the state says.
        share: what to give a reader, ``(what, reference)`` pairs in the order shown after a
            publish (e.g. the reference that follows every later publish, the one fixed
            version, the drive ids another client opens).
        cache_ttl: seconds readers' caches may keep showing the previous version after an
            update (an IPNS record's TTL: Kubo caches a resolved name that long and a new
            record put to it does not refresh that cache); None when the network says none.
        next_steps: the commands to run next, shown after a publish (an offline target's
            directory loaded into a node); None: none.
    """

    name: str | None = None
    record_id: str | None = None
    sequence: int | None = None
    validity: str | None = None
    mode: str | None = None
    pending: bool = False
    key_envelope: str | None = None
    source: str | None = None
    share: tuple[tuple[str, str], ...] = ()
    cache_ttl: int | None = None
    next_steps: NextSteps | None = None


@dataclass(frozen=True)
class NextSteps:
    """Commands a user runs next, in order, in one directory (:attr:`StateFacts.next_steps`).

    Attributes:
        why: why they are needed as they are (one sentence).
        what: what they do (``import into a node``).
        directory: the local directory they run in.
        commands: the shell commands, each quoted for a shell, in order.
    """

    why: str
    what: str
    directory: str
    commands: tuple[str, ...]


@dataclass(frozen=True)
class TargetTraits:
    """What a target scheme is, for the core to decide without naming it.

    Attributes:
        offline: it writes a local directory (``car:DIR``, ``bundle:DIR``): no node, no
            network; the directory is also a reference a replica reads.
        private_drives: it can publish an ArFS private drive (``--arfs-private``).
        combines: several targets of the scheme are one (``--to pinning:a --to pinning:b``
            is ``pinning:a,b``: one node upload, a pin per service).
    """

    offline: bool = False
    private_drives: bool = False
    combines: bool = False


def _own_name(spec: str, config: Config) -> str:
    return spec.rstrip("/")


@dataclass(frozen=True)
class CliOption:
    """One ``publish`` command-line option a backend adds: ``argparse`` arguments as data.

    Its value sets the field of the same name as its destination (``--max-cost`` ->
    ``max_cost``) in its backend's options (:attr:`Declaration.options_type`), which the CLI
    builds from the parsed values (:func:`parse_options`).

    Attributes:
        flags: the option strings (``("--wallet",)``).
        kwargs: the keyword arguments of ``add_argument`` (``help``, ``type``, ``choices``…).
        order: where it sits among the command's options in ``--help`` (the command's own
            are numbered 10, 20, 30…), so the help reads in the order users learn the options
            rather than grouped by network.
    """

    flags: tuple[str, ...]
    kwargs: Mapping[str, Any]
    order: int

    @property
    def dest(self) -> str:
        """The attribute the parsed value lands in (argparse's rule: the first long flag)."""
        long = next(f for f in self.flags if f.startswith("--"))
        return long.removeprefix("--").replace("-", "_")


@dataclass(frozen=True)
class Declaration:
    """What a backend is, said without importing its network code: the ``DECLARATION`` of
    each module in :data:`DECLARATIONS` (such a module imports nothing heavy).

    Attributes:
        name: short name (``ipfs``, ``arweave``).
        rank: order where several backends are tried (``did:odf`` lookups): low first.
        target_schemes: the target schemes it publishes to (``car``, ``ipfs``).
        ref_prefixes: how the references it reads begin (``car:``, ``ipfs://``).
        backend: ``module:attribute`` of the factory of its :class:`Backend`, imported when
            the backend is first used.
        target_forms: how its targets are written after ``--to``, for help and errors
            (``car:DIR``, ``ipfs``, ``ipfs:URL``).
        traits: what each of its target schemes is (a scheme not listed: nothing special).
        opened_name: the name the target ``spec`` gets once opened (``ipfs`` ->
            ``ipfs:<ipfs.api>``): the name its publish state is saved under.
        publish_options: the options it adds to ``odfweb3 publish``; each one's destination
            is a field of :attr:`options_type`.
        options_type: its own options (a frozen dataclass whose fields all have defaults:
            ``publish`` without flags), given in the library's publish options
            (:attr:`odfweb3.api.PublishOptions.backends`), read by its targets as
            :attr:`TargetOptions.own`.
        complete_options: its options with the configuration's defaults filled in and made
            consistent (the CID version a profile implies), before any target is opened and
            whatever the target; UsageError for options that contradict each other.
    """

    name: str
    rank: int
    target_schemes: tuple[str, ...]
    ref_prefixes: tuple[str, ...]
    backend: str
    target_forms: tuple[str, ...] = ()
    traits: Mapping[str, TargetTraits] = field(default_factory=dict)
    opened_name: Callable[[str, Config], str] = _own_name
    publish_options: tuple[CliOption, ...] = ()
    options_type: type[Any] = NoOptions
    complete_options: Callable[[Any, Config], Any] | None = None


def opened_name(spec: str, config: Config) -> str:
    """The name the target ``spec`` gets once opened (its backend's, else ``spec``)."""
    declared = _declaration_for_target(spec)
    return (declared.opened_name if declared is not None else _own_name)(spec, config)


def target_traits(spec: str) -> TargetTraits:
    """:class:`TargetTraits` of the target named ``spec`` (unknown, or not said: none)."""
    declared = _declaration_for_target(spec)
    if declared is None:
        return TargetTraits()
    return declared.traits.get(_scheme(spec), TargetTraits())


class Backend(Protocol):
    """One network: its schemes, targets, replicas, status query and record locator."""

    @property
    def name(self) -> str:
        """Short name (``ipfs``, ``arweave``), its declaration's."""
        ...

    @property
    def rank(self) -> int:
        """Order among backends where several are tried (``did:odf`` lookups): low first."""
        ...

    @property
    def target_schemes(self) -> Sequence[str]:
        """Target name schemes it publishes to (``car``, ``ipfs``)."""
        ...

    @property
    def ref_prefixes(self) -> Sequence[str]:
        """How the references it reads begin (``car:``, ``ipfs://``, ``ipns://``)."""
        ...

    def open_target(self, spec: str, config: Config, options: TargetOptions[Any]) -> AnyTarget:
        """The publish target named ``spec`` (one of :attr:`target_schemes`), with this
        backend's options (``options.own``, of its declared options type, completed).

        Raises:
            UsageError: an incomplete target name, or a missing wallet.
        """
        ...

    def open_replica(self, ref: str, config: Config, access: ReadAccess) -> Replica:
        """A read-only replica for ``ref``; names are checked as far as the data allows."""
        ...

    def resolve(self, ref: str, config: Config, access: ReadAccess) -> tuple[Replica, NameClaims]:
        """``ref``'s replica and what its record claims, not yet checked against the data."""
        ...

    def query_status(
        self, states: Sequence[PublishState], config: Config
    ) -> list[TargetStatus | None]:
        """The node's view of each of ``states`` (its own targets), in order; None: nothing."""
        ...

    def record_locator(self, state: PublishState) -> str | None:
        """Where a reader finds this publish (``ipns://NAME``, ``ar://RECORD``), if anywhere."""
        ...


@runtime_checkable
class StateDescriber(Protocol):
    """A backend that says what its targets' publish states hold (:class:`StateFacts`)."""

    def state_facts(self, state: PublishState) -> StateFacts:
        """The shown facts of ``state`` (one of its targets').

        Raises:
            FormatError: a field of the wrong type (naming the state).
        """
        ...


def state_facts(state: PublishState) -> StateFacts:
    """:class:`StateFacts` of ``state`` from its target's backend (none known: empty)."""
    backend = backend_for_target(state.target)
    return backend.state_facts(state) if isinstance(backend, StateDescriber) else StateFacts()


@runtime_checkable
class DatasetFinder(Protocol):
    """A backend that can look a ``did:odf`` up on its configured nodes."""

    def find_dataset(
        self, did: str, config: Config, access: ReadAccess
    ) -> tuple[list[tuple[str, Callable[[], tuple[Replica, NameClaims]]]], list[str]]:
        """``([(where, opener)], [why a place was not searched])`` for the dataset ``did``."""
        ...


@runtime_checkable
class KeyEnvelopeReader(Protocol):
    """A backend that can read a key envelope given as ``--key-envelope SCHEME://…``."""

    def read_key_envelope(self, src: str, config: Config, limit: int) -> bytes:
        """The envelope's bytes (at most ``limit``; verified against the reference)."""
        ...

    def takes_key_envelope(self, ref: str) -> bool:
        """Whether reading ``ref`` (one of its references) can use a ``--key-envelope``:
        a reference whose record does not name its envelope (``ipfs://CID``)."""
        ...


class Republisher(Protocol):
    """Re-signs a dataset's name record with a fresh validity (``odfweb3 republish``)."""

    def republish(self, dataset_id: str) -> Any:
        """The republished record (name, value, sequence, expires, mode)."""
        ...


@runtime_checkable
class RepublishingBackend(Protocol):
    """A backend whose names expire and can be re-signed (IPFS)."""

    def republisher(self, target: str, config: Config) -> Republisher | None:
        """The republisher for the saved publish target ``target``; None: no live names there."""
        ...


@runtime_checkable
class WalletMaker(Protocol):
    """A backend whose targets sign with a wallet file it keeps (Arweave): ``odfweb3 wallet``."""

    def new_wallet(self, path: Path) -> str:
        """Generate a wallet, write it to ``path`` (mode 0600, never over a file); its address."""
        ...

    def wallet_address(self, path: Path) -> str:
        """The address of the wallet file ``path``."""
        ...

    def balance(self, address: str, gateway: str) -> int:
        """The balance of ``address`` on the gateway at URL ``gateway``, in its smallest unit."""
        ...


@runtime_checkable
class DnsLinker(Protocol):
    """A backend whose publishes have a name a DNSLink TXT record can point at (IPNS)."""

    def check_dnslink_domain(self, domain: str) -> str:
        """``domain`` normalised, if it is a DNS host name (else UsageError)."""
        ...

    def dnslink_record(self, domain: str, state: PublishState) -> Any:
        """The TXT record pointing ``domain`` at the publish's name (``host``, ``domain``,
        ``zone_line()``, ``to_json()``), or None when the publish has no name."""
        ...


@runtime_checkable
class PinReporter(Protocol):
    """A backend whose targets include pinning services (``pinning:NAME``): pin status."""

    def pin_status(
        self,
        states: Sequence[PublishState],
        config: Config,
        env: Mapping[str, str],
        *,
        online: bool,
    ) -> list[dict[str, Any] | None]:
        """Per state, its pin (asked of the service when ``online``, else as saved); None when
        the state is not a pinning one."""
        ...


@runtime_checkable
class NamePusher(Protocol):
    """A backend whose offline publishes carry a pre-signed name record to push (IPNS)."""

    def record_file(self, source: str) -> tuple[Path, str]:
        """The record file and its name for ``car:DIR`` or a record file path."""
        ...

    def push_record(
        self, config: Config, path: Path, name: str, url: str, *, check: bool = True
    ) -> dict[str, Any]:
        """Verify the record in ``path``, send it to the routing endpoint ``url``, read it back."""
        ...


@runtime_checkable
class SigningIdentity(Protocol):
    """A backend that can name the identity its records are signed with (a descriptor's creator)."""

    def signing_identity(self, dataset_id: str, config: Config) -> str:
        """``ipns://NAME`` of the key this keystore signs ``dataset_id``'s records with."""
        ...


@runtime_checkable
class KeyNamer(Protocol):
    """A backend whose names are the keystore's Ed25519 keys (IPFS: an IPNS name is its key)."""

    def key_name(self, public_key: bytes) -> str:
        """The name a raw 32-byte Ed25519 public key signs for (``k51…``)."""
        ...

    def named_key(self, text: str) -> bytes | None:
        """The raw public key ``text`` names, or None when ``text`` is not such a name."""
        ...


def key_namer() -> KeyNamer | None:
    """The backend that names keys (None when no installed backend does)."""
    for backend in all_backends():
        if isinstance(backend, KeyNamer):
            return backend
    return None


def backend_options(given: Sequence[object], config: Config) -> tuple[object, ...]:
    """Every backend's own options (:attr:`Declaration.options_type`), by rank: the one of
    its type in ``given``, else its defaults (``publish`` without flags), each completed from
    ``config`` and checked, whatever the target (a contradictory CID profile is refused
    everywhere).

    Raises:
        UsageError: an object of no backend's options type, two of one type, or options
            that contradict each other.
    """
    kinds = {d.options_type: d for d in declarations()}
    mine: dict[type[Any], object] = {}
    for options in given:
        kind = type(options)
        if kind not in kinds:
            names = ", ".join(k.__name__ for k in kinds)
            raise UsageError(f"publish options: {kind.__name__} is no backend's (give {names})")
        if kind in mine:
            raise UsageError(f"publish options: {kind.__name__} given twice")
        mine[kind] = options
    return tuple(_completed(d, mine[k] if k in mine else k(), config) for k, d in kinds.items())


def parse_options(values: Mapping[str, Any]) -> tuple[object, ...]:
    """Every backend's own options from parsed command-line values (an ``argparse``
    namespace's ``vars``): each of its :attr:`Declaration.publish_options` sets the field
    named after its destination; not completed (:func:`backend_options` does that)."""
    return tuple(
        d.options_type(**{o.dest: values[o.dest] for o in d.publish_options})
        for d in declarations()
    )


_declared: list[Declaration] | None = None
_backends: dict[str, Backend] = {}


def target_forms() -> list[str]:
    """How every backend's targets are written after ``--to`` (``car:DIR``, ``ipfs``…), by
    backend rank."""
    return [form for declared in declarations() for form in declared.target_forms]


def declarations() -> list[Declaration]:
    """Every backend's :class:`Declaration`, by rank (imports the declaration modules only)."""
    global _declared
    if _declared is None:
        found = []
        for module in DECLARATIONS:
            try:
                found.append(importlib.import_module(module).DECLARATION)
            except (ImportError, AttributeError) as exc:
                raise OdfWeb3Error(
                    f"backend declaration {module} does not load: {exc}; reinstall odfweb3 "
                    "(make install, or pip install -e .)"
                ) from exc
        _declared = sorted(found, key=lambda d: (d.rank, d.name))
    return list(_declared)


def _backend(declared: Declaration) -> Backend:
    """The declared backend, imported and made on first use."""
    backend = _backends.get(declared.name)
    if backend is None:
        module, _, attr = declared.backend.partition(":")
        try:
            factory = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise OdfWeb3Error(
                f"backend {declared.name} ({declared.backend}) does not load: {exc}; "
                "reinstall odfweb3"
            ) from exc
        backend = _backends[declared.name] = factory()
    return backend


def all_backends() -> list[Backend]:
    """Every registered backend, by rank, each imported (to find an ability only some have)."""
    return [_backend(d) for d in declarations()]


def _scheme(text: str) -> str:
    return text.partition(":")[0]


def _declaration_for_target(spec: str) -> Declaration | None:
    kind = _scheme(spec)
    return next((d for d in declarations() if kind in d.target_schemes), None)


def backend_for_target(spec: str) -> Backend | None:
    """The backend publishing to target name ``spec``, or None."""
    declared = _declaration_for_target(spec)
    return _backend(declared) if declared is not None else None


def target_kinds() -> list[str]:
    """Every target scheme the registered backends publish to, by backend rank."""
    return [kind for d in declarations() for kind in d.target_schemes]


def backend_for_ref(ref: str) -> Backend | None:
    """The backend reading reference ``ref`` (by how it begins), or None."""
    declared = next((d for d in declarations() if ref.startswith(d.ref_prefixes)), None)
    return _backend(declared) if declared is not None else None


def own_options(spec: str, completed: Sequence[object]) -> object:
    """The options among ``completed`` (:func:`backend_options`) that the backend of the
    target named ``spec`` takes (its :attr:`Declaration.options_type`).

    Raises:
        UsageError: an unknown target name, or none of ``completed`` is of that type.
    """
    declared = _target_declaration(spec)
    mine = next((o for o in completed if type(o) is declared.options_type), None)
    if mine is None:
        raise UsageError(
            f"--to {spec}: no {declared.options_type.__name__} among the publish options"
        )
    return mine


def open_target(spec: str, config: Config, options: TargetOptions[Any] | None = None) -> AnyTarget:
    """The publish target for ``spec`` (``car:DIR``, ``ipfs``, ``bundle:DIR``, ``arweave``),
    with ``options`` (None: its backend's defaults, completed from ``config``).

    Raises:
        UsageError: an unknown or incomplete target name, or options of another backend's
            type (``options.own``).
    """
    declared = _target_declaration(spec)
    kind = declared.options_type
    if options is None:
        options = TargetOptions(own=_completed(declared, kind(), config))
    elif type(options.own) is not kind:
        raise UsageError(
            f"--to {spec}: the {declared.name} backend takes {kind.__name__}, "
            f"not {type(options.own).__name__}"
        )
    return _backend(declared).open_target(spec, config, options)


def _completed(declared: Declaration, own: object, config: Config) -> object:
    complete = declared.complete_options
    return own if complete is None else complete(own, config)


def _target_declaration(spec: str) -> Declaration:
    declared = _declaration_for_target(spec)
    if declared is None:
        raise UsageError(
            f"unknown target {spec!r}: use {' | '.join(target_forms())} (see odfweb3 publish -h)"
        )
    return declared
