"""Executing a publish in the commit order of docs/design.md, "Commit order".

1. validate the local dataset (refuse an invalid one before any upload);
2. ask the target what it holds (checked against the network); a plain publish over a
   target holding ciphertext of the dataset is refused here, before anything is sent
   (:func:`odfweb3.crypto.policy.decide_encryption`, given what the target said);
3. plan: the new head must descend from the target's (else refuse; ``force``);
Steps 4-6 run inside the target's session when it has one (:class:`SessionTarget`:
one publisher at a time), opened here and closed however they end.

4. upload objects (each read once through ``source.open_verified``: size and hash
   checked as it streams, so nothing corrupt is made visible), then the directory
   or manifest, then pin (``target.upload``);
5. publish the name record — only now is the update visible (``target.commit``);
6. save publish state (temp file + rename).

An interruption anywhere before 5 leaves the name on the old head; re-running
sends only what is missing (content addressing makes repeats harmless).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Generic

from odfweb3.crypto.policy import EncryptionFacts, settle_encryption
from odfweb3.crypto.sealer import Sealer
from odfweb3.errors import IntegrityError, UsageError
from odfweb3.odf.chain import ChainEntry, walk_chain
from odfweb3.odf.identity import DatasetId
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.model_gen import Seed
from odfweb3.odf.validate import check_chain_rules
from odfweb3.publish.chain_cache import ChainCache, VerifiedChain, load_chain
from odfweb3.publish.plan import PublishPlan, plan_publish, plan_record
from odfweb3.publish.state import E, R, RawState
from odfweb3.publish.target import (
    Price,
    PricingTarget,
    PublishTarget,
    RemoteView,
    SealingTarget,
    SessionTarget,
    SigningTarget,
    UploadResult,
)

__all__ = ["PublishOutcome", "load_verified_chain", "publish_dataset"]

ProgressFn = Callable[[int], None]


@dataclass(frozen=True)
class PublishOutcome(Generic[R, E]):
    """What a publish did (``state`` is None for a dry run; ``price``: a dry run's price
    of what would be sent, when the target charges and could be asked). ``view`` and
    ``upload`` hold the target's typed state; ``state`` is the saved state in the file's
    form, as ``status`` reads it back."""

    plan: PublishPlan
    view: RemoteView[R, E]
    upload: UploadResult[E] | None = None
    state: RawState | None = None
    notes: tuple[str, ...] = field(default=())
    price: Price | None = None


def load_verified_chain(reader: DatasetReader) -> tuple[list[ChainEntry], DatasetId]:
    """Walk and check the whole chain (every block hash and chain rule).

    Raises:
        IntegrityError / FormatError / NotFound: the dataset is invalid; nothing is sent.
    """
    entries = list(walk_chain(reader))
    violations = check_chain_rules(list(reversed(entries)))
    if violations:
        raise IntegrityError(
            f"{reader.root}: invalid dataset: {violations[0]}; "
            "run odfweb3 validate for every problem (nothing was published)"
        )
    seed = entries[-1].block.event
    assert isinstance(seed, Seed)
    return entries, DatasetId.from_bytes(seed.dataset_id or b"")


def publish_dataset(
    path: str | os.PathLike[str],
    target: PublishTarget[R, E],
    *,
    force: bool = False,
    dry_run: bool = False,
    progress: ProgressFn | None = None,
    sealer: Sealer | None = None,
    record_extra: Mapping[str, Any] | None = None,
    on_plan: Callable[[PublishPlan], None] | None = None,
    chain_cache: ChainCache | None = None,
    encryption: EncryptionFacts | None = None,
    ask: Callable[[str], bool] | None = None,
    quote: bool = False,
) -> PublishOutcome[R, E]:
    """Publish the dataset at ``path`` to ``target`` in commit order.

    Args:
        path: the local dataset directory.
        target: where to publish.
        force: publish even if the target's head does not descend from ours.
        dry_run: stop after planning; nothing is sent or written.
        progress: called with bytes read and sent.
        sealer: the publish must be encrypted with it (docs/design.md, "Encryption"): refused before
            anything is sent unless ``target`` was opened with this same sealer (its
            ``sealer`` attribute) and the key belongs to this dataset.
        record_extra: extra facts for the name record (``inputs``: dataset ID -> locator of
            each input), carried in the plan (``plan.record_extra``).
        on_plan: called with the plan before anything is sent (progress totals, ``-v``).
        chain_cache: heads verified before (:mod:`odfweb3.publish.chain_cache`): only the
            blocks above the newest cached ancestor are read and checked.
            Ignored with ``sealer`` (the cache holds the chain's metadata in the clear).
        encryption: the facts the caller decided ``sealer`` from
            (:func:`odfweb3.crypto.policy.decide_encryption`); decided again with what the
            target says it holds, so a plain publish over its ciphertext is refused before
            anything is sent.
        ask: puts the decision's question (plaintext over ciphertext) to the user: True
            to go on; None: no one to ask (refused).
        quote: with ``dry_run``, ask a :class:`PricingTarget` the price of the plan
            (``outcome.price``): the bundle is signed in memory and priced, nothing sent.
    """
    reader = DatasetReader.open(path)
    # An encrypted publish keeps no plaintext metadata in the clear: no cache.
    chain = load_chain(reader, chain_cache if sealer is None else None)  # 1
    dataset_id = chain.dataset_id
    if sealer is not None:
        if sealer.dataset_id != str(dataset_id):
            raise UsageError(
                f"the content key is for {sealer.dataset_id}, not {dataset_id}; nothing was sent"
            )
        if not (isinstance(target, SealingTarget) and target.sealer is sealer):
            raise UsageError(f"{target.name} was not opened to encrypt; nothing was sent")
    notes = tuple(_orphan_notes(chain))
    view = target.inspect(str(dataset_id), chain.head)  # 2
    if encryption is not None:
        facts = replace(
            encryption,
            dataset_id=encryption.dataset_id or str(dataset_id),
            target=target.name,
            target_encrypted=view.encrypted,
        )
        _, decided = settle_encryption(facts, ask or (lambda question: False))
        if decided.encrypt != (sealer is not None):  # the policy never turns it around
            raise UsageError(f"{target.name}: the encryption decision changed; nothing was sent")
    if isinstance(target, SigningTarget):  # 2: a name whose key is not here (exit 77)
        target.check_signing(str(dataset_id))
    plan = plan_publish(  # 3
        chain,
        dataset_id=str(dataset_id),
        target=target.name,
        remote_head=view.head,
        remote_has=view.has,
        remote_ahead=view.ahead,
        force=force,
        remote_holds_head=view.holds_head,
    )
    plan = plan_record(plan, view.record, record_extra)  # 3: the record too
    if on_plan is not None:
        on_plan(plan)
    if dry_run:
        # The price first: a target that charges says what this plan would cost.
        price = None
        if quote and isinstance(target, PricingTarget) and not plan.is_noop:
            price = target.quote(plan, reader, view)
        return PublishOutcome(plan, view, notes=(*notes, *view.notes), price=price)
    session = target.session() if isinstance(target, SessionTarget) else contextlib.nullcontext()
    with session:
        upload = target.upload(plan, reader, view, progress or (lambda n: None))  # 4
        state = target.commit(plan, upload, view)  # 5
        saved = target.save(state)  # 6
    return PublishOutcome(plan, view, upload, saved, (*notes, *view.notes))


def _orphan_notes(chain: VerifiedChain) -> list[str]:
    """One line for files in ``data/`` that no block and no ``ObjectLink`` names: the
    publish leaves them out, and says so (never a silent drop)."""
    orphans = chain.orphans()
    if not orphans:
        return []
    shown = ", ".join(orphans[:3]) + (", ..." if len(orphans) > 3 else "")
    files = "file" if len(orphans) == 1 else "files"
    return [
        f"{chain.reader.root}: {len(orphans)} {files} in data/ that no block and no ObjectLink "
        f"names, not published: {shown}; remove them, or run odfweb3 validate --deep"
    ]
