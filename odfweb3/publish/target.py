"""What a publish target must do: the protocol adapters implement.

The executor calls these in docs/design.md's "Commit order"; a target never
decides the order itself. Kept to a handful of methods; everything else is a free
function over them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, runtime_checkable

from odfweb3.odf.layout import DatasetReader
from odfweb3.publish.plan import PublishPlan, RemoteRecord
from odfweb3.publish.state import E, PublishState, R, RawState

if TYPE_CHECKING:
    from odfweb3.crypto.sealer import Sealer

__all__ = [
    "AnyTarget",
    "NoPhases",
    "PartOutcome",
    "Phases",
    "Price",
    "PricingTarget",
    "PublishTarget",
    "RemoteView",
    "SealingTarget",
    "SessionTarget",
    "SigningTarget",
    "UploadResult",
    "parts_exit_code",
]

ProgressFn = Callable[[int], None]


class Phases(Protocol):
    """A publish's progress in phases (an Arweave upload signs, then sends, then waits for
    confirmation): each :meth:`phase` replaces the one before on the caller's display.

    ``done`` is where the phase starts (a resumed upload starts at the bytes already sent,
    not at 0 %); ``unit`` is ``"bytes"``, a word counted as is (``"items"``), or
    ``"time"``: a wait with no total, shown with its elapsed time, redrawn by
    ``advance(0)``.
    """

    def phase(self, label: str, total: int | None, *, unit: str = "bytes", done: int = 0) -> None:
        """Start the phase ``label`` (``total`` None: not known)."""
        ...

    def advance(self, n: int) -> None:
        """``n`` more of the current phase done."""
        ...


class NoPhases:
    """:class:`Phases` that show nothing (a library caller without a display)."""

    def phase(self, label: str, total: int | None, *, unit: str = "bytes", done: int = 0) -> None:
        return None

    def advance(self, n: int) -> None:
        return None


@dataclass(frozen=True)
class RemoteView(Generic[R, E]):
    """What the target holds now for a dataset, checked against the network.

    Attributes:
        head: the head its name points at (None: nothing published).
        has: object paths known to be stored there.
        ahead: the target's chain contains our head (it is ahead of us).
        state: the publish state to build on (verified, or rebuilt), if any: the target's
            typed state, for its own ``upload`` and ``commit`` (the core reads none of its
            adapter fields).
        notes: human notes (e.g. "state was stale: rebuilt from the node").
        holds_head: the target holds every object of ``head`` as this publish would make
            it (False: only those in ``has``; e.g. a node that lost the published root,
            or objects made with another CID profile or encryption): the plan sends the
            rest again.
        record: the name record it serves, when it could be kept as it is (None: a
            publish writes one; :func:`~odfweb3.publish.plan.plan_record` decides).
        encrypted: the target holds ciphertext of the dataset: its state, its
            ``publish.json`` or the record it serves says so (a key envelope); the
            encryption policy refuses a plain publish over it
            (:func:`odfweb3.crypto.policy.decide_encryption`).
    """

    head: bytes | None
    has: Collection[str] = frozenset()
    ahead: bool = False
    state: PublishState[R, E] | None = None
    notes: tuple[str, ...] = ()
    holds_head: bool = True
    record: RemoteRecord | None = None
    encrypted: bool = False


_R = TypeVar("_R")


def _empty() -> Any:
    return {}  # the default ``extra`` of an untyped upload: an empty JSON object


@dataclass(frozen=True)
class PartOutcome:
    """A part of an upload done beside the upload itself (a pinning service asked to pin
    the new root): shown on its own line; a failed part does not undo the upload, but the
    publish exits with its code (:func:`parts_exit_code`).

    Attributes:
        label: its key in the publish's report (``pin NAME``).
        subject: what it is, in a sentence (``pinning service NAME``).
        text: what it did (``pinned (add, 1.2 s, request ID)``), or why it failed.
        exit_code: None when it succeeded; else its error's exit code (docs/cli.md).
    """

    label: str
    subject: str
    text: str
    exit_code: int | None = None


def parts_exit_code(parts: Collection[PartOutcome]) -> int:
    """The publish's exit code from its parts: 0 when none failed; 77 when every failure
    was a refusal (77: a service refused the token); else 69 (a service unreachable)."""
    codes = [p.exit_code for p in parts if p.exit_code is not None]
    if not codes:
        return 0
    return 77 if all(c == 77 for c in codes) else 69


@dataclass(frozen=True)
class UploadResult(Generic[E]):
    """What steps 3-5 produced: the new locator and facts for the state.

    Attributes:
        locator: where the whole dataset now is (root CID, manifest id).
        objects: object path -> the adapter's locator facts, for the state.
        extra: the target's typed extra for the state (its dataclass), which its
            ``commit`` puts in the state.
        bytes_sent: bytes sent to the network (or written to the directory).
        summary: the adapter's facts for the report (``--json``), JSON values.
        record_kept: nothing was new: the name record stays as it is (the report says
            "record unchanged").
        parts: what the parts done beside the upload did (:class:`PartOutcome`).
    """

    locator: str
    objects: Mapping[str, Mapping[str, Any]]
    extra: E = field(default_factory=_empty)
    bytes_sent: int = 0
    summary: dict[str, Any] = field(default_factory=dict)
    record_kept: bool = False
    parts: tuple[PartOutcome, ...] = ()

    @classmethod
    def kept(cls, state: PublishState[_R, E], **summary: Any) -> UploadResult[E]:
        """An upload that sent nothing: the saved state's locator, objects and extra as they
        are, the record kept (``summary`` says why, e.g. ``note="nothing new: ..."``)."""
        return UploadResult(
            locator=str(state.locator),
            objects=state.objects,
            extra=state.extra,
            summary=dict(summary),
            record_kept=True,
        )


class PublishTarget(Protocol[R, E]):
    """A place datasets are published to (IPFS node, CAR directory, Arweave gateway),
    generic over its typed state (``R``: its ``record``, ``E``: its ``extra``), which it
    holds from ``inspect`` to ``save``; the executor only passes it back."""

    name: str

    def inspect(self, dataset_id: str, local_head: bytes) -> RemoteView[R, E]:
        """Step 2: what the target holds now (never trusting saved state blindly)."""
        ...

    def upload(
        self,
        plan: PublishPlan,
        reader: DatasetReader,
        view: RemoteView[R, E],
        progress: ProgressFn,
    ) -> UploadResult[E]:
        """Steps 3-5: upload the plan's objects, the new directory/manifest, and pin."""
        ...

    def commit(
        self, plan: PublishPlan, upload: UploadResult[E], view: RemoteView[R, E]
    ) -> PublishState[R, E]:
        """Step 6: publish the name record; returns the state to save."""
        ...

    def save(self, state: PublishState[R, E]) -> RawState:
        """Step 7: save the publish state atomically; returns it in the file's form (what
        ``status`` and ``history`` read back), serialized once, where it is written."""
        ...


AnyTarget = PublishTarget[Any, Any]
"""A target of whichever backend the registry opened (its ``open_target``'s type): each
target is typed over its own state, which only it reads; the registry's callers publish
through it (:func:`~odfweb3.publish.execute.publish_dataset`) and get the saved state in the
file's form (``PublishOutcome.state``), never a target's typed fields."""


@dataclass(frozen=True)
class Price:
    """What an upload would cost, as the service that charges it said.

    Attributes:
        amount: an integer in the unit's smallest denomination (never a float).
        unit: ``winston`` (an Arweave L1 fee) or ``winc`` (Turbo credits), for example.
        size: the bytes priced (the whole upload as it would be sent).
        items: how many items the upload is (one L1 transaction may carry many).
        source: the service asked (its URL), for the user to check.
        bound: True when ``amount`` is an upper bound, not the exact price.
    """

    amount: int
    unit: str
    size: int
    items: int
    source: str
    bound: bool = False

    def to_json(self) -> dict[str, Any]:
        """JSON form: the amount under its unit's name, as an integer."""
        return {
            self.unit: self.amount,
            "bytes": self.size,
            "items": self.items,
            "source": self.source,
            "upperBound": self.bound,
        }


@runtime_checkable
class PricingTarget(Protocol[R, E]):
    """A target that charges for an upload: ``--dry-run`` asks it the price of the plan."""

    def quote(
        self, plan: PublishPlan, reader: DatasetReader, view: RemoteView[R, E]
    ) -> Price | None:
        """The price of what :meth:`PublishTarget.upload` would send for ``plan`` (None:
        the service's price cannot be asked, e.g. no price service is configured). Sends
        nothing and writes nothing that lasts.
        """
        ...


@runtime_checkable
class SealingTarget(Protocol):
    """A target opened to encrypt: the sealer it encrypts every object with (or None)."""

    @property
    def sealer(self) -> Sealer | None:
        """The sealer given when the target was opened."""
        ...


@runtime_checkable
class SigningTarget(Protocol):
    """A target whose name is a key (IPNS): ``inspect`` found the name the dataset is
    published under there; the executor asks before anything is sent, in a dry run too."""

    def check_signing(self, dataset_id: str) -> None:
        """Refuse when that name's key is not in the keystore.

        Raises:
            SigningKeyMissing: nothing may be sent (exit 77).
        """
        ...


@runtime_checkable
class SessionTarget(Protocol):
    """A target written by one publisher at a time: the executor opens its session.

    :func:`odfweb3.publish.execute.publish_dataset` holds the session around steps 4-6
    (``upload``, ``commit``, ``save``) and closes it however they end, so the target
    never takes or drops the exclusion itself: the offline targets hold
    ``OUT_DIR/.publish.lock`` (:class:`~odfweb3.publish.out_dir.OutDirHome`), the network
    targets ``<state dir>/<dataset>/<target>.lock``
    (:class:`~odfweb3.publish.state_home.StateHome`).
    """

    def session(self) -> AbstractContextManager[None]:
        """Exclusive use of the target until the context ends.

        Raises:
            ConflictError: another live publisher holds it.
        """
        ...
