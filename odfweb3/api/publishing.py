"""Publish a local dataset (``odfweb3 publish``): to one target, or to every target it was
published to from here.

The library's part of the command: options are resolved against the configuration (the
CID version and profile, the wallet), the encryption decision is settled (flags, settings,
this machine's record, then the target's facts), the target is opened through the backend
registry and :func:`odfweb3.publish.execute.publish_dataset` runs the commit order. What is
printed, and how, is the caller's (:class:`odfweb3.api.hooks.Hooks`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from odfweb3.api.hooks import QUIET, Hooks
from odfweb3.config import Config
from odfweb3.errors import OdfWeb3Error, UsageError
from odfweb3.publish.execute import PublishOutcome
from odfweb3.publish.plan import PublishPlan
from odfweb3.publish.target import Price

__all__ = ["PublishOptions", "TargetResult", "publish", "publish_everywhere"]


@dataclass(frozen=True)
class PublishOptions:
    """How to publish; the defaults are ``odfweb3 publish``'s without flags.

    Attributes:
        force: publish even if the target holds a head that is not an ancestor of ours.
        dry_run: plan only; nothing is sent or written.
        queue: plan only, as ``dry_run``, but record the encryption decision (``--batch``:
            the update is queued and sent by a later flush).
        encrypt: encrypt every object (docs/security.md, "Encryption").
        no_encrypt: publish plaintext although the dataset was published encrypted before;
            needs ``confirm_plaintext`` or a yes from :attr:`Hooks.ask`.
        confirm_plaintext: ``--yes``: confirm ``no_encrypt`` without asking.
        drive_password: an ArFS private drive with this password (never in a repr).
        env: where pinning service tokens are read (``ODFWEB3_PINNING_<NAME>_TOKEN``).
        backends: each backend's own options, one object of its options type each
            (``odfweb3_ipfs.declaration.IpfsOptions``: the CID version and profile,
            ``--unpin-previous``; ``odfweb3_arweave.declaration.ArweaveOptions``: the wallet,
            ``--max-cost``); a backend not given takes its defaults, each completed from the
            configuration (``ipfs.cid_profile``, ``arweave.wallet``) and checked whatever
            the target. An object of no backend's type is refused.
    """

    force: bool = False
    dry_run: bool = False
    queue: bool = False
    encrypt: bool = False
    no_encrypt: bool = False
    confirm_plaintext: bool = False
    drive_password: str | None = field(default=None, repr=False)
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    backends: tuple[object, ...] = ()


def publish(
    dataset: str | Path,
    to: str,
    *,
    config: Config,
    options: PublishOptions = PublishOptions(),
    hooks: Hooks = QUIET,
    cwd: Path | None = None,
    on_plan: Callable[[PublishPlan], None] | None = None,
    on_price: Callable[[int, int], None] | None = None,
    record_extra: Mapping[str, Any] | None = None,
    approve: Callable[[Price | None], bool] | None = None,
) -> PublishOutcome:
    """Publish the local dataset ``dataset`` to the target ``to`` (``car:DIR``, ``ipfs``,
    ``bundle:DIR``, ``arweave``, ...; a remote's name is the caller's to resolve).

    Only what the target lacks is sent; the name record is written last. ``on_plan`` sees
    the plan before anything is sent, ``on_price`` an Arweave upload's price (winston,
    bytes) before it is posted; ``approve`` the price of an Arweave or Turbo upload
    (:class:`~odfweb3.publish.target.Price`; None: not known) before anything is paid:
    False sends nothing. A dry run (not ``queue``) asks a target that charges the price
    of what it would send (``outcome.price``).

    Returns:
        What was planned, sent and saved (``state`` None for a dry run).

    Raises:
        OdfWeb3Error: a subclass naming what failed (docs/cli.md, exit codes).
    """
    from odfweb3.api.encryption import before_sending, encryption_facts, sealer_for
    from odfweb3.backends import (
        TargetOptions,
        backend_options,
        open_target,
        own_options,
        state_facts,
        target_traits,
    )
    from odfweb3.crypto.policy import settle_encryption
    from odfweb3.publish.dataset_id import chain_cache
    from odfweb3.publish.execute import publish_dataset
    from odfweb3.publish.offline import OfflineIndex

    dataset = str(dataset)
    # Each backend's own options, completed from the configuration and checked whatever the
    # target (a contradictory CID profile is refused everywhere).
    completed = backend_options(options.backends, config)
    password = options.drive_password
    if password is not None and not target_traits(to).private_drives:
        raise UsageError("--arfs-private needs an Arweave target: --to bundle:DIR or arweave")
    # Encryption is the dataset's (docs/security.md, "Encryption"): decided from the flags,
    # the settings and this machine's record now, and again once the target said whether it
    # holds ciphertext. An ArFS private drive is encrypted end to end (its own scheme).
    facts, decided = settle_encryption(
        encryption_facts(
            config,
            dataset,
            cwd=cwd if cwd is not None else Path.cwd(),
            encrypt=options.encrypt,
            no_encrypt=options.no_encrypt,
            confirmed=options.confirm_plaintext,
            other_scheme=password is not None,
        ),
        hooks.ask,
    )
    if decided.note is not None:
        hooks.debug(decided.note)
    sealer, new_keys = (
        sealer_for(config, facts.dataset_id, hooks, discovery=facts.discovery)
        if decided.encrypt
        else (None, None)
    )
    # The bar is open before the target: an Arweave target draws its phases on it.
    with hooks.progress("publishing") as bar:
        target = open_target(
            to,
            config,
            TargetOptions(
                own=own_options(to, completed),
                sealer=sealer,
                drive_password=password,
                env=options.env,
                notify=hooks.info,
                announce=hooks.warn,
                progress=bar,
                on_price=on_price,
                approve=approve,
            ),
        )
        # A queued update (--batch) is planned like a dry run, but its encryption decision is
        # recorded: the later flush must encrypt as this publish would have.
        plan_only = options.dry_run or options.queue
        # Not for encrypted publishes: the cache holds the chain's metadata in the clear
        # (docs/design.md, "State files").
        cache = (
            None if sealer is not None or password is not None else chain_cache(config.state_dir)
        )

        def planned(plan: PublishPlan) -> None:
            # The target was inspected and the decision stands: record it (a dry run of a
            # queued update too: its later flush must encrypt) and store a new content key,
            # before anything is sent.
            before_sending(
                config,
                plan.dataset_id,
                target.name,
                decided,
                new_keys,
                remember=not options.dry_run,
                dry_run=plan_only,
                hooks=hooks,
            )
            if on_plan is not None:
                on_plan(plan)
            if plan.send_bytes and not plan_only:
                bar.set_total(plan.send_bytes)

        outcome = publish_dataset(
            dataset,
            target,
            force=options.force,
            dry_run=plan_only,
            progress=bar.advance,
            sealer=sealer,
            record_extra=record_extra,
            on_plan=planned,
            chain_cache=cache,
            encryption=facts,
            ask=hooks.ask,
            quote=options.dry_run and not options.queue,
        )
    if outcome.state is not None:  # status finds offline publishes through this index
        OfflineIndex(config.state_dir).remember(
            outcome.plan.dataset_id, outcome.plan.target, str(Path(dataset).absolute())
        )
    for note in outcome.notes:
        hooks.warn(note)
    if outcome.plan.forced:
        hooks.warn(f"--force: {target.name} held a head that is not an ancestor of ours")
    if outcome.state is not None and state_facts(outcome.state).mode == "name/publish":
        hooks.warn(
            f"{target.name} cannot store pre-signed records: the node signed a plain record "
            "with name/publish (no _odf fields; resolvers read refs/head)"
        )
    return outcome


@dataclass(frozen=True)
class TargetResult:
    """One target of :func:`publish_everywhere`: its outcome, or the error that stopped it."""

    target: str
    outcome: PublishOutcome | None = None
    error: OdfWeb3Error | None = None


def publish_everywhere(
    dataset: str | Path,
    *,
    config: Config,
    options: PublishOptions = PublishOptions(),
    hooks: Hooks = QUIET,
    cwd: Path | None = None,
    on_plan: Callable[[PublishPlan], None] | None = None,
    on_price: Callable[[int, int], None] | None = None,
    on_result: Callable[[TargetResult], None] | None = None,
    approve: Callable[[Price | None], bool] | None = None,
) -> tuple[TargetResult, ...]:
    """Publish ``dataset`` to every target it was published to from here (``publish DATASET``
    without ``--to``), each in turn; a failure does not stop the others. ``on_result`` sees
    each target's result as soon as it is known.

    Raises:
        UsageError: the dataset was never published from here.
    """
    from odfweb3.publish.dataset_id import chain_cache, dataset_id_of
    from odfweb3.publish.offline import known_states

    dataset_id, _ = dataset_id_of(dataset, chain_cache(config.state_dir))
    targets = list(dict.fromkeys(s.target for s in known_states(config.state_dir, dataset_id)))
    if not targets:
        raise UsageError(f"publish: {dataset} was never published from here; give --to TARGET")
    results: list[TargetResult] = []
    for target in targets:
        try:
            outcome = publish(
                dataset,
                target,
                config=config,
                options=options,
                hooks=hooks,
                cwd=cwd,
                on_plan=on_plan,
                on_price=on_price,
                approve=approve,
            )
        except OdfWeb3Error as exc:
            result = TargetResult(target, error=exc)
        else:
            result = TargetResult(target, outcome=outcome)
        if on_result is not None:
            on_result(result)
        results.append(result)
    return tuple(results)
