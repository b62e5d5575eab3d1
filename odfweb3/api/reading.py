"""Read published datasets trusting no node (``odfweb3 resolve``, ``pull``, ``verify``).

Every reference goes through the backend registry (:mod:`odfweb3.read.resolve`); an
encrypted publish is decrypted with this keystore's keys (:mod:`odfweb3.read.unseal`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from odfweb3.api.hooks import QUIET, Hooks
from odfweb3.config import Config
from odfweb3.read.claims import ResolvedDataset
from odfweb3.read.compare import ReplicaReport
from odfweb3.read.pull import PullResult
from odfweb3.read.replica import Replica

__all__ = ["ReadOptions", "VerifyReport", "open_decrypted", "pull", "resolve", "verify"]


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
        passphrase: asked for an envelope's passphrase (given the dataset ID) when no local
            key opens it; None: no passphrase can be given.
    """

    owner: str | None = None
    trustless: bool = False
    key_envelope: bytes | None = field(default=None, repr=False)
    key_envelope_source: str = "--key-envelope"
    wallet: Path | None = None
    drive_password: str | None = field(default=None, repr=False)
    passphrase: Callable[[str], str] | None = field(default=None, repr=False)


def _unseal(config: Config, options: ReadOptions, hooks: Hooks) -> Callable[[Replica], Replica]:
    from odfweb3.read.unseal import decrypting_replica

    return lambda replica: decrypting_replica(
        replica, config.keystore_dir, passphrase=options.passphrase, debug=hooks.debug
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
    holds the signed record's claims only (``content_checked`` False)."""
    from odfweb3.read.resolve import resolve_ref

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
    return tuple(r for _, r in found)


def pull(
    ref: str,
    dest: str | Path,
    *,
    config: Config,
    options: ReadOptions = ReadOptions(),
    hooks: Hooks = QUIET,
    parallel: int = 8,
    force: bool = False,
) -> PullResult:
    """Pull the dataset ``ref`` names into the directory ``dest``: every block and object
    verified before it is written, the head moved last (only what ``dest`` lacks)."""
    from odfweb3.read.pull import pull_dataset

    replica = open_decrypted(ref, config=config, options=options, hooks=hooks)
    with hooks.progress("pulling") as bar:
        return pull_dataset(
            replica,
            dest,
            parallel=parallel,
            force=force,
            progress=bar.advance,
            on_total=bar.set_total,
        )


@dataclass(frozen=True)
class VerifyReport:
    """:func:`verify`'s answer: the reference's head and one report per replica."""

    reference: str
    head: bytes
    replicas: tuple[ReplicaReport, ...]

    @property
    def exit_code(self) -> int:
        """The CLI's exit status: 0 when every replica holds the reference's head, intact."""
        from odfweb3.read.compare import exit_status

        return exit_status(self.replicas)

    @property
    def ok(self) -> bool:
        """Every replica is identical to the reference."""
        return self.exit_code == 0


def verify(
    dataset: str | Path,
    against: Sequence[str],
    *,
    config: Config,
    options: ReadOptions = ReadOptions(),
    hooks: Hooks = QUIET,
    deep: bool = False,
    sample: int | None = None,
) -> VerifyReport:
    """Compare each replica in ``against`` with the local dataset ``dataset`` by head hash
    (with ``deep``, every object re-hashed; ``sample``: that many). A replica that cannot be
    read is reported (``unreachable`` / ``corrupt``), not raised."""
    from odfweb3.errors import OdfWeb3Error, UsageError
    from odfweb3.odf.chain import walk_chain
    from odfweb3.odf.layout import DatasetReader
    from odfweb3.read.compare import compare_replica, failed
    from odfweb3.read.replica import LocalReplica

    reference = LocalReplica(DatasetReader.open(dataset))
    entries = list(walk_chain(reference.read_block, reference.head()))
    reports: list[ReplicaReport] = []
    for ref in against:
        try:
            replica = open_decrypted(ref, config=config, options=options, hooks=hooks)
        except UsageError:
            raise
        except OdfWeb3Error as exc:
            reports.append(failed(ref, exc))
            continue
        with hooks.progress(f"verifying {ref}") as bar:
            reports.append(
                compare_replica(
                    entries,
                    replica,
                    deep=deep,
                    sample=sample,
                    progress=bar.advance,
                    on_total=bar.set_total,
                )
            )
    return VerifyReport(reference.name, entries[0].hash, tuple(reports))
