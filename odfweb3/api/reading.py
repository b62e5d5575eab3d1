"""Read published datasets trusting no node (``odfweb3 resolve``, ``pull``, ``verify``).

Every reference goes through the backend registry (:mod:`odfweb3.read.resolve`); an
encrypted publish is decrypted with this keystore's keys (:mod:`odfweb3.read.unseal`).
A reference may also be the name of a remote of this machine (``odfweb3 remote add``):
an offline target's directory is read as it is, a node target through the record this
machine published there.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from odfweb3.api.hooks import QUIET, Hooks
from odfweb3.config import Config
from odfweb3.read.claims import ResolvedDataset
from odfweb3.read.pull import PullResult
from odfweb3.read.replica import RecordSigner, Replica

if TYPE_CHECKING:
    # Named in annotations only; loaded by verify and verify_lineage, not by a pull (which
    # compiles every module it loads where bytecode is not written).
    from odfweb3.read.compare import ReplicaReport
    from odfweb3.read.lineage_check import LineageReport

__all__ = [
    "PullReport",
    "ReadOptions",
    "VerifyReport",
    "open_decrypted",
    "pull",
    "resolve",
    "verify",
    "verify_lineage",
]


@dataclass(frozen=True)
class ReadOptions:
    """How references are read.

    Attributes:
        owner: the Arweave address a ``did:odf`` lookup trusts.
        trustless: resolve without asking a node to resolve names for us.
        key_envelope: the bytes of a key envelope for ``ipfs://CID`` (it has no record).
        key_envelope_source: where those bytes came from, as errors name it.
        wallet: the Arweave wallet opening an ArFS private drive (default: config's).
        drive_password: that drive's password (never in a repr).
        key_envelope_from: where to read a key envelope (a file, ``ipfs://CID``, ``ar://ID``)
            when ``key_envelope`` is not given: read by the call, and refused when no
            reference read can use one (their records name their own).
        passphrase: asked for an envelope's passphrase (given the dataset ID) when no local
            key opens it; None: no passphrase can be given.
        passphrase_tries: how many times ``passphrase`` may be asked after a wrong one (a
            prompt on a terminal can be answered again; a file cannot).
    """

    owner: str | None = None
    trustless: bool = False
    key_envelope: bytes | None = field(default=None, repr=False)
    key_envelope_source: str = "--key-envelope"
    key_envelope_from: str | None = None
    wallet: Path | None = None
    drive_password: str | None = field(default=None, repr=False)
    passphrase: Callable[[str], str] | None = field(default=None, repr=False)
    passphrase_tries: int = 1


def _unseal(config: Config, options: ReadOptions, hooks: Hooks) -> Callable[[Replica], Replica]:
    from odfweb3.read.unseal import decrypting_replica

    return lambda replica: decrypting_replica(
        replica,
        config.keystore_dir,
        passphrase=options.passphrase,
        debug=hooks.debug,
        tries=options.passphrase_tries,
        retry=hooks.warn,
    )


def _with_envelope(options: ReadOptions, config: Config, *refs: str) -> ReadOptions:
    """``options`` with the bytes of ``key_envelope_from`` read (for reading ``refs``)."""
    if options.key_envelope is not None or not options.key_envelope_from:
        return options
    from odfweb3.read.resolve import key_envelope_for

    src = options.key_envelope_from
    return replace(
        options,
        key_envelope=key_envelope_for(src, refs, config),
        key_envelope_source=f"--key-envelope {src}",
    )


def open_decrypted(
    ref: str, *, config: Config, options: ReadOptions = ReadOptions(), hooks: Hooks = QUIET
) -> Replica:
    """The replica ``ref`` names, its name checked, decrypted when it is encrypted."""
    from odfweb3.read.resolve import open_replica

    replica = open_replica(
        ref,
        config,
        key_envelope=options.key_envelope,
        wallet=options.wallet,
        drive_password=options.drive_password,
    )
    return _unseal(config, options, hooks)(replica)


def resolve(
    ref: str, *, config: Config, options: ReadOptions = ReadOptions(), hooks: Hooks = QUIET
) -> tuple[ResolvedDataset, ...]:
    """What ``ref`` (``ipns://``, ``ipfs://``, ``ar://``, ``did:odf:``) names, checked: one
    result per place a ``did:odf`` was found. Without keys to an encrypted publish a result
    holds the signed record's claims only (``content_checked`` False), said through
    ``hooks.warn``: the signed record was still verified."""
    from odfweb3.read.resolve import resolve_ref

    options = _with_envelope(options, config, ref)
    found = resolve_ref(
        ref,
        config,
        owner=options.owner,
        trustless=options.trustless,
        unseal=_unseal(config, options, hooks),
        key_envelope=options.key_envelope,
        key_envelope_source=options.key_envelope_source,
        wallet=options.wallet,
        drive_password=options.drive_password,
    )
    results = tuple(r for _, r in found)
    for r in results:
        if not r.content_checked:
            hooks.warn(f"{r.ref}: encrypted and no key here; content not checked")
    return results


@dataclass(frozen=True)
class PullReport:
    """:func:`pull`'s answer.

    Attributes:
        ref: the reference read (a remote's directory when a remote was named).
        result: what the pull did (:class:`odfweb3.read.pull.PullResult`).
        signer: who signed the record the replica was read through, when it has one.
        seconds: how long the pull took, reading included.
    """

    ref: str
    result: PullResult
    signer: RecordSigner | None = None
    seconds: float = 0.0

    @property
    def up_to_date(self) -> bool:
        """The destination held the replica's head already: nothing fetched."""
        return self.result.new_blocks == 0 and self.result.objects_fetched == 0

    def to_json(self) -> dict[str, Any]:
        """The CLI's ``--json`` form."""
        signed = {"signedBy": _signer_json(self.signer)} if self.signer is not None else {}
        return self.result.to_json() | {"upToDate": self.up_to_date} | signed


def _remote_ref(config: Config, ref: str) -> tuple[str, bool]:
    """The reference a pull reads for ``ref``: an offline remote's directory, with True
    (read through a directory this machine publishes to), else ``ref`` itself."""
    from odfweb3.backends import target_traits
    from odfweb3.publish.remotes import Remotes

    remote = Remotes(config.state_dir).resolve(ref)
    if remote != ref and target_traits(remote).offline:
        return remote, True
    return ref, False


def pull(
    ref: str,
    dest: str | Path,
    *,
    config: Config,
    options: ReadOptions = ReadOptions(),
    hooks: Hooks = QUIET,
    parallel: int = 8,
    force: bool = False,
    expect_name: str | None = None,
) -> PullReport:
    """Pull the dataset ``ref`` names into the directory ``dest``: every block and object
    verified before it is written, the head moved last (only what ``dest`` lacks).

    ``ref`` may name a remote of an offline directory. Who signed the record read is said
    (``hooks.debug``; ``hooks.warn`` when it is neither the dataset's key nor one of this
    machine's); with ``expect_name`` a record signed by another name is refused.

    Raises:
        ReplicaMismatch: the record is signed by another name than ``expect_name``, or, in a
            remote's directory, by a key neither the dataset's nor this machine's.
        UsageError: ``expect_name`` for a replica read through no record.
    """
    from odfweb3.read.pull import pull_dataset

    started = time.monotonic()
    ref, via_remote = _remote_ref(config, ref)
    options = _with_envelope(options, config, ref)
    replica = open_decrypted(ref, config=config, options=options, hooks=hooks)
    signer = _check_signer(ref, replica, expect_name, hooks, ours=via_remote)
    with hooks.progress("pulling") as bar:
        result = pull_dataset(
            replica,
            dest,
            parallel=parallel,
            force=force,
            progress=bar.advance,
            on_total=bar.set_total,
        )
    return PullReport(ref, result, signer, time.monotonic() - started)


def _signer_of(replica: Replica) -> RecordSigner | None:
    from odfweb3.read.replica import SignedRecordSource
    from odfweb3.read.sealed_replica import DecryptingReplica

    if isinstance(replica, SignedRecordSource):
        return replica.signed_by()
    if isinstance(replica, DecryptingReplica):
        return replica.signer()
    return None


def _signer_json(signer: RecordSigner) -> dict[str, Any]:
    return {"name": signer.name, "datasetKey": signer.dataset_key, "localKey": signer.local_key}


def _check_signer(
    ref: str, replica: Replica, expected: str | None, hooks: Hooks, *, ours: bool = False
) -> RecordSigner | None:
    """Say who signed the record ``ref`` was read through; refuse another than ``expected``,
    or, for a remote of this machine's (``ours``) without ``expected``, one that is neither
    the dataset's key nor a key this machine holds.

    A directory anyone may write can hold the dataset's chain under a record signed by any
    key: the chain checks out (content addressed), the name vouching for it is the signer's.
    """
    from odfweb3.errors import ReplicaMismatch, UsageError

    signer = _signer_of(replica)
    if signer is None:
        if expected is not None:
            raise UsageError(f"--expect-name: {ref} is not read through an IPNS record (car:DIR)")
        return None
    if expected is not None and signer.name != expected.strip().removeprefix("/ipns/"):
        raise ReplicaMismatch(
            f"{ref}: the record is signed by {signer.name}, not --expect-name {expected}; "
            "nothing pulled: get the directory from that name's publisher"
        )
    if ours and expected is None and not signer.dataset_key and signer.local_key is None:
        raise ReplicaMismatch(
            f"{ref}: the record is signed by {signer.name}, neither the dataset's key nor one "
            "of this machine's, in a directory this machine publishes to (a remote); nothing "
            f"pulled: pass --expect-name {signer.name} if that is its publisher"
        )
    if signer.dataset_key:
        hooks.debug(f"{ref}: record signed by {signer.name}, the dataset's own key")
    elif signer.local_key is not None:
        hooks.debug(
            f"{ref}: record signed by {signer.name}, this machine's key {signer.local_key} "
            "(not the dataset's own key)"
        )
    else:
        hooks.warn(
            f"{ref}: record signed by {signer.name}: not the dataset's own key, and not a key "
            "this machine knows; pass --expect-name NAME to accept only its publisher's"
        )
    return signer


@dataclass(frozen=True)
class VerifyReport:
    """:func:`verify`'s answer: the reference's head and one report per replica.

    Attributes:
        reference: what the replicas were compared with (the local dataset, or the first
            replica when no dataset was given).
        head: the reference's head.
        replicas: one report per replica, in the order given.
        refs: per replica, the reference read (a remote's directory or record locator).
        seconds: per replica, how long its comparison took (None: it could not be read).
    """

    reference: str
    head: bytes
    replicas: tuple[ReplicaReport, ...]
    refs: tuple[str, ...] = ()
    seconds: tuple[float | None, ...] = ()

    @property
    def exit_code(self) -> int:
        """The CLI's exit status: 0 when every replica holds the reference's head, intact."""
        from odfweb3.read.compare import exit_status

        return exit_status(self.replicas)

    @property
    def ok(self) -> bool:
        """Every replica is identical to the reference."""
        return self.exit_code == 0

    def to_json(self) -> dict[str, Any]:
        """The CLI's ``--json`` form."""
        from odfweb3.odf.multihash import multihash_to_str

        return {
            "reference": self.reference,
            "head": multihash_to_str(self.head),
            "replicas": [r.to_json() for r in self.replicas],
            "ok": self.ok,
        }


def replica_ref(config: Config, name: str, dataset_id: str | None) -> str:
    """What ``verify --against NAME`` reads: a remote's directory, or the record locator of
    this machine's publish of ``dataset_id`` to the remote's node; else ``name`` itself.

    Raises:
        UsageError: a node remote without a dataset, or never published to from here.
    """
    from odfweb3.backends import backend_for_target, opened_name, target_traits
    from odfweb3.errors import UsageError
    from odfweb3.publish.offline import known_states
    from odfweb3.publish.remotes import Remotes

    target = Remotes(config.state_dir).resolve(name)
    if target == name:
        return name  # not a remote: a reference as given
    if target_traits(target).offline:
        return target
    if dataset_id is None:
        raise UsageError(f"--against {name}: give the local DATASET, to know which record to read")
    wanted = opened_name(target, config)
    for state in known_states(config.state_dir, dataset_id):
        backend = backend_for_target(state.target)
        locator = backend.record_locator(state) if backend is not None else None
        if state.target == wanted and locator:
            return locator
    raise UsageError(
        f"--against {name}: {dataset_id} was never published to {target} from here; give its "
        "reference instead (ipns://NAME or ar://ID)"
    )


def verify(
    dataset: str | Path | None,
    against: Sequence[str],
    *,
    config: Config,
    options: ReadOptions = ReadOptions(),
    hooks: Hooks = QUIET,
    deep: bool = False,
    sample: int | None = None,
) -> VerifyReport:
    """Compare each replica in ``against`` with the local dataset ``dataset`` by head hash
    (with ``deep``, every object re-hashed; ``sample``: that many). Without ``dataset`` the
    first replica is the reference the others are compared with. A replica may be named by
    a remote (:func:`replica_ref`). A replica that cannot be read is reported
    (``unreachable`` / ``corrupt``), not raised.

    Raises:
        UsageError: no replica to compare; no ``dataset`` and fewer than two replicas.
    """
    from odfweb3.errors import OdfWeb3Error, UsageError
    from odfweb3.odf.chain import walk_chain
    from odfweb3.odf.layout import DatasetReader
    from odfweb3.read.compare import compare_replica, failed
    from odfweb3.read.replica import LocalReplica

    if not against:
        raise UsageError("verify: give --against REF (or --lineage to check a dataset's inputs)")
    local_id = _local_dataset_id(dataset) if dataset is not None else None
    refs = [replica_ref(config, ref, local_id) for ref in against]
    options = _with_envelope(options, config, *refs)
    reference: Replica
    if dataset is not None:
        reference = LocalReplica(DatasetReader.open(dataset))
    else:
        if len(refs) < 2:
            raise UsageError("verify: give a local DATASET or at least two --against replicas")
        reference = open_decrypted(refs.pop(0), config=config, options=options, hooks=hooks)
    # Only the hashes: what the replicas are compared by (the decoded chain of 100,000
    # blocks was hundreds of MB).
    hashes = [e.hash for e in walk_chain(reference.read_block, reference.head())]
    reports: list[ReplicaReport] = []
    seconds: list[float | None] = []
    for ref in refs:
        try:
            replica = open_decrypted(ref, config=config, options=options, hooks=hooks)
        except UsageError:
            raise
        except OdfWeb3Error as exc:
            reports.append(failed(ref, exc))
            seconds.append(None)
            continue
        started = time.monotonic()
        with hooks.progress(f"verifying {ref}") as bar:
            reports.append(
                compare_replica(
                    hashes,
                    replica,
                    deep=deep,
                    sample=sample,
                    progress=bar.advance,
                    on_total=bar.set_total,
                )
            )
        seconds.append(time.monotonic() - started)
    return VerifyReport(reference.name, hashes[0], tuple(reports), tuple(refs), tuple(seconds))


def _local_dataset_id(path: str | Path) -> str:
    """The dataset ID in a local dataset's Seed."""
    from odfweb3.odf.chain import walk_chain
    from odfweb3.odf.identity import DatasetId
    from odfweb3.odf.layout import DatasetReader
    from odfweb3.odf.model_gen import Seed

    seed = None
    for e in walk_chain(DatasetReader.open(path)):  # to the Seed, holding one block
        seed = e.block.event
    return str(DatasetId.from_bytes((seed.dataset_id if isinstance(seed, Seed) else None) or b""))


def verify_lineage(
    ref: str,
    *,
    config: Config,
    options: ReadOptions = ReadOptions(),
    hooks: Hooks = QUIET,
    inputs: Mapping[str, str] | None = None,
    inputs_from: Sequence[str] = (),
    deep: bool = False,
) -> LineageReport:
    """Check that every input block the ExecuteTransforms of ``ref``'s dataset consumed is
    held by an input replica, down to the root datasets. Inputs are found through
    ``inputs`` (``did:odf`` -> reference), then ``inputs_from`` (matched by the dataset ID
    in their Seed), then the inputs map of each record (``publish --with-inputs``). An
    encrypted replica is decrypted with this keystore's keys first; ``options``' wallet and
    drive password open ``ref`` only."""
    from odfweb3.odf.identity import DatasetId
    from odfweb3.read.lineage_check import (
        chain_resolvers,
        resolver_from_records,
        resolver_from_replicas,
    )
    from odfweb3.read.lineage_check import verify_lineage as check
    from odfweb3.read.resolve import open_replica

    unseal = _unseal(config, options, hooks)

    def open_(target: str, **access: Any) -> Replica:
        return unseal(open_replica(target, config, **access))

    explicit: dict[str, Replica] = {}
    for did, input_ref in (inputs or {}).items():
        explicit[str(DatasetId.parse(did))] = open_(input_ref)
    given = [open_(r) for r in inputs_from]
    replica = open_(ref, wallet=options.wallet, drive_password=options.drive_password)
    resolve_input = chain_resolvers(
        lambda did: explicit.get(str(DatasetId.parse(did))),
        resolver_from_replicas(given),
        # The records' inputs maps (_odf.inputs / the upload record's inputs).
        resolver_from_records(replica, open_),
    )
    return check(replica, resolve_input, deep=deep)
