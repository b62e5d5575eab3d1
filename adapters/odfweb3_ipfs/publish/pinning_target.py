"""The target ``pinning:NAME[,NAME...]``: publish to the local node, then have pinning services
keep the dataset online.

Commit order (docs/design.md, "Commit order"), around the ``ipfs`` target (:mod:`.node_target`):

- ``inspect``: each service's token is checked first (``GET /pins?limit=1``): a refused token
  stops that service before anything is uploaded; when every service is refused, the publish
  stops (exit 77) with nothing sent. Then the node's view, as for ``--to ipfs``.
- ``upload``: the delta goes to the configured Kubo node exactly as for ``--to ipfs``; then,
  per service, the new root is pinned with ``name`` = ``odf:<dataset ID>``, ``meta`` =
  ``{"odf_dataset_id", "odf_head"}`` and ``origins`` = the node's swarm addresses (so the
  service fetches from it directly), and its status is followed (queued -> pinning -> pinned
  or failed) until the service's deadline. A later publish updates the service's pin:

  * ``update: replace``: ``POST /pins/{requestid}`` (the spec's replace: one call, the service
    keeps the blocks both roots share and fetches only the new ones);
  * ``update: add-then-remove``: ``POST /pins`` for the new root, wait until ``pinned``, only
    then ``DELETE`` the old pin: the old root stays pinned until the new one is. On IPFS
    Cluster with ``cluster_api`` (its REST API) the new root is pinned through it on the
    peers that hold the old root (``user-allocations``), so only the new blocks move (the
    allocator alone would pick the emptiest peers and refetch everything);
  * ``update: auto`` (default): ``replace``, except for IPFS Cluster (its ``PinStatus.info``
    says ``"source": "IPFS cluster API"``), whose replace (v1.1.6) unpins the old root at once
    and then fails the new pin (Kubo ``pin/update``: "datastore: key not found"); see
    docs/online.md.

  A service that fails is reported, the others go on; if none pinned, the publish stops here
  (the name record is not moved; the node keeps the data; re-running retries).
- ``commit``: the IPNS record, exactly as for ``--to ipfs``.
- ``save``: the node's state, then one state per service (target ``pinning:NAME``: root,
  head, ``requestid``, status; never the token), each through its state home
  (:class:`~odfweb3.publish.state_home.StateHome`: read once by ``inspect``, compared at
  ``upload``, locked with the node's (or ``car:``'s) own by the executor's session).

**Without a local node** (``pinning.via: car``): the base target is a ``car:DIR`` in the
state directory instead of the node. ``upload`` writes the delta CAR there as ``car:DIR``
does, then sends that CAR to each service's ``cluster_api`` (IPFS Cluster's REST API
``POST /add?format=car``, same bearer token, ``name`` and ``meta-*`` as query parameters; the
answer must name our root), and follows the pin through the Pinning Service API (for IPFS
Cluster the ``requestid`` is the root CID). The previous root is removed only after the new
one is pinned. ``commit`` writes the signed IPNS record into that directory (no node to put it
on: ``odfweb3 name push`` sends it to a delegated routing endpoint).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol

from odfweb3.errors import BackendError, BackendRejected, FormatError, OdfWeb3Error, UsageError
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.plan import PublishPlan
from odfweb3.publish.state import RawState, StateStore
from odfweb3.publish.state_home import StateHome
from odfweb3.publish.target import PartOutcome, PublishTarget, UploadResult
from odfweb3_ipfs.client.pinning import (
    PinFailed,
    PinningAuthError,
    PinningClient,
    PinStatus,
    encode_pin,
)
from odfweb3_ipfs.publish.car_target import CarTarget
from odfweb3_ipfs.publish.node_target import IpfsNodeTarget
from odfweb3_ipfs.publish.state import (
    PIN_CODEC,
    IpfsTyped,
    IpfsView,
    IpnsFacts,
    PinExtra,
    PinTyped,
    X,
)

if TYPE_CHECKING:
    from odfweb3.crypto.sealer import Sealer

__all__ = [
    "UPDATE_MODES",
    "PinningService",
    "PinningTarget",
    "describe_failures",
    "exit_code_of",
    "service_state_target",
]

UPDATE_MODES = ("auto", "replace", "add-then-remove")
CLUSTER_SOURCE = "IPFS cluster API"  # PinStatus.info.source of IPFS Cluster's pinsvcapi


def service_state_target(name: str) -> str:
    """The publish-state key of a service's pins."""
    return f"pinning:{name}"


@dataclass(frozen=True)
class PinningService:
    """A configured service: its client and limits."""

    name: str
    client: PinningClient
    deadline: float = 3600.0  # seconds from the start of its pin until pinned
    update: str = "auto"
    cluster_api: str | None = None  # pinning.via car: where the CAR is uploaded


@dataclass
class _Outcome:
    status: PinStatus | None = None
    error: OdfWeb3Error | None = None
    replaced: str | None = None  # requestid of the pin this one replaced
    mode: str = "add"
    seconds: float = 0.0
    seen: list[str] = field(default_factory=list)  # the statuses followed, in order
    kept_peers: int = 0  # IPFS Cluster: the new root asked on this many of the old peers

    def to_json(self) -> dict[str, Any]:
        if self.error is not None:
            return {"error": str(self.error), "exitCode": self.error.exit_code}
        assert self.status is not None
        out: dict[str, Any] = {
            "status": self.status.status,
            "requestid": self.status.requestid,
            "cid": self.status.cid,
            "update": self.mode,
            "seconds": round(self.seconds, 2),
            "statuses": self.seen,
        }
        if self.replaced:
            out["replaced"] = self.replaced
        if self.kept_peers:
            out["keptPeers"] = self.kept_peers
        return out

    def to_part(self, service: str) -> PartOutcome:
        """This pin as a line of the publish's report."""
        label, subject = f"pin {service}", f"pinning service {service}"
        if self.error is not None:
            return PartOutcome(label, subject, str(self.error), self.error.exit_code)
        assert self.status is not None
        return PartOutcome(
            label,
            subject,
            f"{self.status.status} ({self.mode}, {round(self.seconds, 2)} s, "
            f"request {self.status.requestid})",
        )


class PinnedTarget(PublishTarget[IpnsFacts, X], Protocol[X]):
    """What publishes the roots a pinning target pins: a Kubo node target or ``car:DIR``
    (:class:`~.node_target.IpfsNodeTarget`, :class:`~.car_target.CarTarget`), whose typed
    state the pinning target passes through as it is."""

    @property
    def sealer(self) -> Sealer | None: ...

    def session(self) -> AbstractContextManager[None]: ...

    def check_signing(self, dataset_id: str) -> None: ...


@dataclass
class PinningTarget(Generic[X]):
    """``pinning:NAME,...`` (see the module docstring)."""

    node: PinnedTarget[X]
    services: list[PinningService]
    states: StateStore
    notify: Callable[[str], None] = lambda text: None
    clock: Callable[[], float] = time.monotonic
    outcomes: dict[str, _Outcome] = field(default_factory=dict)
    name: str = ""
    _car: Path | None = None
    # Each service's pin state (target pinning:NAME): read once, compared, written last.
    _homes: dict[str, StateHome[IpnsFacts, PinExtra]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.name = "pinning:" + ",".join(s.name for s in self.services)
        self._homes = {
            s.name: StateHome(self.states, service_state_target(s.name), PIN_CODEC)
            for s in self.services
        }

    @property
    def sealer(self) -> Sealer | None:
        return self.node.sealer

    # -------------------------------------------------------------- steps

    def inspect(self, dataset_id: str, local_head: bytes) -> IpfsView[X]:
        for svc in self.services:
            try:
                svc.client.check_auth(timeout=min(svc.deadline, svc.client.timeout))
            except (BackendError, FormatError) as exc:
                self.outcomes[svc.name] = _Outcome(error=exc)
        self._stop_if_none_left()
        for home in self._homes.values():
            home.inspect(dataset_id)  # the pin this machine made last, read once
        return self.node.inspect(dataset_id, local_head)

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        """The node's (or ``car:``'s) session and each service's state lock, held by the
        executor around upload, commit and save."""
        with contextlib.ExitStack() as stack:
            stack.enter_context(self.node.session())
            for home in self._homes.values():
                stack.enter_context(home.session())
            yield

    def check_signing(self, dataset_id: str) -> None:
        """The node's (or car:'s) refusal of a name whose key is not here (exit 77)."""
        self.node.check_signing(dataset_id)

    def upload(
        self,
        plan: PublishPlan,
        reader: DatasetReader,
        view: IpfsView[X],
        progress: Callable[[int], None],
    ) -> UploadResult[X]:
        for home in self._homes.values():
            home.check_unchanged()  # another publish moved a service's pin meanwhile
        up = self.node.upload(plan, reader, view, progress)
        self._car = None
        if isinstance(self.node, CarTarget):
            car = up.summary.get("car")
            self._car = self.node.out_dir / str(car) if car else None
        origins = self._origins()
        head = multihash_to_str(plan.head)
        for svc in self.services:
            if svc.name in self.outcomes:  # refused at inspect
                continue
            started = self.clock()
            try:
                outcome = self._pin(svc, plan.dataset_id, head, up.locator, origins)
            except (BackendError, FormatError, UsageError) as exc:
                outcome = _Outcome(error=exc)
            outcome.seconds = self.clock() - started
            self.outcomes[svc.name] = outcome
        self._stop_if_none_left()
        pins = {name: o.to_json() for name, o in self.outcomes.items()}
        parts = tuple(o.to_part(name) for name, o in self.outcomes.items())
        return dataclasses.replace(up, summary={**up.summary, "pins": pins}, parts=parts)

    def commit(self, plan: PublishPlan, upload: UploadResult[X], view: IpfsView[X]) -> IpfsTyped[X]:
        return self.node.commit(plan, upload, view)

    def save(self, state: IpfsTyped[X]) -> RawState:
        saved = self.node.save(state)
        # The IPNS name the node (or car:) target's record stands under, named by the pins.
        name = state.record.name
        for svc in self.services:
            o = self.outcomes.get(svc.name)
            if o is None or o.status is None:
                continue
            self._homes[svc.name].write(
                PinTyped(
                    dataset_id=state.dataset_id,
                    target=service_state_target(svc.name),
                    head=state.head,
                    locator=o.status.cid,
                    record=IpnsFacts(name=name or None),
                    extra=PinExtra(
                        endpoint=svc.client.endpoint,
                        requestid=o.status.requestid,
                        status=o.status.status,
                        node=self.node.name,
                    ),
                )
            )
        return saved

    # -------------------------------------------------------------- helpers

    def failures(self) -> dict[str, OdfWeb3Error]:
        """Services that failed in this publish, with their errors."""
        return {n: o.error for n, o in self.outcomes.items() if o.error is not None}

    def _stop_if_none_left(self) -> None:
        failed = self.failures()
        if len(failed) == len(self.services):
            errors = list(failed.values())
            # One line: the first service's error (all are in the outcomes).
            raise errors[0]

    def _origins(self) -> list[str]:
        """The node's swarm addresses with its peer ID (``Pin.origins``), at most 20."""
        if not isinstance(self.node, IpfsNodeTarget):
            return []
        try:
            ident = self.node.client.call_json("id")
        except OdfWeb3Error:
            return []
        if not isinstance(ident, dict):
            return []
        peer = ident.get("ID")
        addrs = ident.get("Addresses") or []
        out: list[str] = []
        for a in addrs if isinstance(addrs, list) else []:
            if not isinstance(a, str) or not a.startswith("/"):
                continue
            if "/p2p/" not in a and isinstance(peer, str):
                a = f"{a}/p2p/{peer}"
            out.append(a)
        return out[:20]

    def _pin(
        self, svc: PinningService, dataset_id: str, head: str, root: str, origins: list[str]
    ) -> _Outcome:
        client = svc.client
        deadline = self.clock() + svc.deadline
        body = encode_pin(
            root,
            name=f"odf:{dataset_id}"[:255],
            origins=origins,
            meta={"odf_dataset_id": dataset_id, "odf_head": head},
        )
        home = self._homes[svc.name]
        prev, where = home.seen, str(home.path(dataset_id))
        prev_rid = (prev.extra.requestid or "") if prev else ""
        old = client.get(prev_rid) if prev_rid else None
        if old is not None and prev is not None and old.cid not in (prev.locator, root):
            # The pin this machine made under that request id was for prev.locator: a
            # service now naming another CID is not to be believed, nor its CID put into a
            # cluster_api URL or unpinned on its word.
            raise FormatError(
                f"pinning service {svc.name}: pin request {old.requestid} was made for "
                f"{prev.locator}, but the service now says it is for another CID; refusing "
                f"its answer (check the service; {where} records the pin)"
            )
        seen: list[str] = []
        notify = self._notifier(svc, root, seen)
        if old is not None and old.cid == root and old.status in ("queued", "pinning", "pinned"):
            st = client.wait(old.requestid, root, deadline=deadline, on_status=notify, first=old)
            return self._finish(svc, root, st, _Outcome(mode="kept", seen=seen))
        if old is None or old.cid == root:
            st = self._create(svc, body, root)
            st = client.wait(st.requestid, root, deadline=deadline, on_status=notify, first=st)
            return self._finish(svc, root, st, _Outcome(mode="add", seen=seen))
        # Without a node there is nothing to replace from: a new CAR, then the old pin goes.
        mode = "add-then-remove" if isinstance(self.node, CarTarget) else svc.update
        if mode == "auto":
            mode = "add-then-remove" if old.info.get("source") == CLUSTER_SOURCE else "replace"
        keep: list[str] = []
        if (
            mode == "add-then-remove"
            and svc.cluster_api
            and old.info.get("source") == CLUSTER_SOURCE
        ):
            # Same peers as the previous root: they hold every shared block already.
            keep = client.cluster_allocations(svc.cluster_api, old.cid)
        if mode == "replace":
            st = client.replace(old.requestid, body)
            st = client.wait(st.requestid, root, deadline=deadline, on_status=notify, first=st)
            return self._finish(
                svc, root, st, _Outcome(mode="replace", replaced=old.requestid, seen=seen)
            )
        st = self._create(svc, body, root, keep)
        st = client.wait(st.requestid, root, deadline=deadline, on_status=notify, first=st)
        outcome = self._finish(svc, root, st, _Outcome(mode="add-then-remove", seen=seen))
        outcome.kept_peers = len(keep)
        # Only now, with the new root pinned, may the old one go.
        if st.requestid != old.requestid:
            client.remove(old.requestid, timeout=max(1.0, deadline - self.clock()))
            outcome.replaced = old.requestid
            self.notify(f"{svc.name}: unpinned the previous root {old.cid}")
        return outcome

    def _create(
        self, svc: PinningService, body: Mapping[str, Any], root: str, keep: Sequence[str] = ()
    ) -> PinStatus:
        """A new pin: ``POST /pins`` (with a node; through the cluster API on ``keep`` peers
        when given), or the CAR to ``cluster_api`` (without a node)."""
        if not isinstance(self.node, CarTarget):
            if not keep or svc.cluster_api is None:
                return svc.client.add(body)
            svc.client.cluster_pin(
                svc.cluster_api,
                root,
                name=body.get("name"),
                meta=body.get("meta") or {},
                origins=body.get("origins") or [],
                allocations=keep,
            )
            return self._known(svc, root, "pinning through cluster_api")
        if svc.cluster_api is None:
            raise UsageError(
                f"pinning service {svc.name}: pinning.via is car but the service has no "
                "cluster_api (IPFS Cluster: its REST API, e.g. http://HOST:9094)"
            )
        if self._car is None:
            raise UsageError(
                f"pinning service {svc.name} has no pin for {root} and this publish wrote no "
                "new CAR (nothing new); publish to it from a node, or after the next update"
            )
        meta = body.get("meta") or {}
        svc.client.add_car(
            svc.cluster_api, self._car, root, name=body.get("name"), meta=meta, allocations=keep
        )
        return self._known(svc, root, "the CAR upload")

    def _known(self, svc: PinningService, root: str, after: str) -> PinStatus:
        """The Pinning Service API's status of a pin just made through the cluster's REST API.

        IPFS Cluster's pinning API answers 404 for a pin its peers have not started tracking
        yet (status "undefined"): asked again for up to 30 s (bounded by the deadline)."""
        until = self.clock() + min(30.0, svc.deadline)
        delay = 0.1
        while True:
            got = svc.client.get(root, root)
            if got is not None:
                return got
            if self.clock() >= until:
                raise BackendRejected(
                    f"pinning service {svc.name}: 30 s after {after} its Pinning Service API "
                    f"still does not know {root} (404); is cluster_api the same cluster?",
                    404,
                )
            time.sleep(delay)
            delay = min(delay * 2, 2.0)

    def _notifier(
        self, svc: PinningService, root: str, seen: list[str]
    ) -> Callable[[PinStatus], None]:
        def notify(st: PinStatus) -> None:
            seen.append(st.status)
            detail = f" ({st.reason})" if st.reason and st.status != "pinned" else ""
            self.notify(f"{svc.name}: {root} {st.status}{detail}")

        return notify

    @staticmethod
    def _finish(svc: PinningService, root: str, st: PinStatus, outcome: _Outcome) -> _Outcome:
        if st.status == "failed":
            reason = st.reason
            if not reason and svc.cluster_api and st.info.get("source") == CLUSTER_SOURCE:
                # IPFS Cluster's pinning API gives no reason; its REST API has each peer's.
                with contextlib.suppress(OdfWeb3Error):
                    reason = svc.client.cluster_error(svc.cluster_api, root)
            reason = reason or "the service gave no reason (see its own logs)"
            raise PinFailed(
                f"pinning service {svc.name}: pinning {root} failed: {reason}", 0, reason
            )
        outcome.status = st
        return outcome


def describe_failures(failures: Mapping[str, OdfWeb3Error]) -> list[str]:
    """One line per failed service."""
    return [str(err) for err in failures.values()]


def exit_code_of(failures: Mapping[str, OdfWeb3Error]) -> int:
    """77 when every failure is a refused token, else 69."""
    errs = list(failures.values())
    if errs and all(isinstance(e, PinningAuthError) for e in errs):
        return PinningAuthError.exit_code
    return 69
