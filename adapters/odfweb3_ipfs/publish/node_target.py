"""The live IPFS target ``ipfs``: publish to a Kubo (or js-ipfs) node over its RPC API.

docs/design.md, "Commit order" and "IPFS mapping", in commit order:

- ``inspect``: the saved publish state is checked against the node, never trusted
  blindly: ``block/stat`` and ``pin/ls`` of the previous root (a node that lost it
  gets a full upload), and the node's IPNS record for the dataset's name, verified
  locally (a record with a higher sequence than ours is another publisher's: the
  view is rebuilt from it and the planner refuses a head that does not descend).
  Without state, the view is rebuilt from the node's record (root, then ``_odf.head``
  or ``refs/head`` read through the node).
- ``upload``: the delta (new files, changed directory nodes; unchanged files are neither
  read nor hashed) is sent as CARs of about 8 MiB cut between objects, each written to a
  temp file (bounded memory) and sent with one streamed ``dag/import`` as soon as it is
  cut; once the node has a batch and its objects passed their checks, it is recorded
  locally and pinned under a small batch node, so a re-run of an interrupted upload
  sends only the batches the node does not have (:mod:`.node_batches`). The last CAR
  carries the root, which is checked with ``block/stat`` and pinned with ``pin/add``
  (recursive: the node proves the whole DAG is there). A checkpoint (``extra.pending``)
  is saved next, so an interrupted publish re-run sends only what is missing. As
  ``car:DIR``, the per-object links are in an object index
  (:mod:`.object_index`: content-named packs in ``<state file>.index/``, the new pack
  written before the checkpoint that names it) and the top directories' HAMT shard
  tables in the state, so an update reads only the index parts of its new objects and
  rebuilds only their shard path; the checkpoint names the packs, the shard tables and
  the directory blocks this publish made, not every object. A state written by older
  versions (every object in ``objects``) is read as before and converted by the next
  publish.
- ``commit``: the node's record is read again (a publisher that got there
  meanwhile is a ConflictError), then our pre-signed record (sequence + 1, ``_odf``
  extension) is put with ``name/put`` (Kubo >= 0.40), ``routing/put`` (older Kubo) or
  ``dht/put`` (js-ipfs); where the node has none, the key is imported and
  ``name/publish`` signs a plain record (no extension: resolvers read ``refs/head``).
  The record read back must be ours, and still ours after a settle pause (no endpoint
  is a compare-and-set; see ``IpfsNodeTarget``'s ``settle``).
- ``save``: the state written last through the target's state home
  (:class:`~odfweb3.publish.state_home.StateHome`: read once by ``inspect``, the lock the
  executor's session holds, compare-and-set at ``upload`` and ``commit``, the checkpoint,
  the packs); then, only with ``unpin_previous``, the previous root is unpinned (shared
  blocks stay pinned).

Encrypted publishes (``sealer``, docs/design.md, "Encryption") use the scheme of ``car:DIR``: every
object and ``refs/head`` under the root is ciphertext at the same path; the key envelope
is its own UnixFS file, sent in the same ``dag/import`` and pinned on its own; its CID is
in the state (``extra.keyEnvelope``) and in the record's ``_odf`` map as ``keyEnvelope``.
No discovery descriptor, Croissant or DCAT document is published (they would reveal the
dataset's metadata), but for the summary descriptor the owner may allow
(:mod:`odfweb3.descriptor.summary`), sent and pinned as the descriptor is.

Plain publishes also send the discovery descriptor (JSON-LD, :mod:`odfweb3.descriptor`) as
its own UnixFS file in the same ``dag/import``, pinned on its own, never inside the dataset
root: its CID is in the publish output and state (``descriptor``) and in the
record's ``_odf`` map as ``descriptor`` (kept on republish). A descriptor that fails
validation (e.g. no ``publisher.name`` configured) is left out, the reason in the summary
as ``descriptorSkipped``. So are the Croissant and DCAT documents of the data files the
publish added (:mod:`odfweb3.descriptor.published`; state and ``_odf``: ``croissant``,
``dcat``; a publish that adds no block keeps the last ones).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from odfweb3.crypto.keystore import Keystore
from odfweb3.crypto.sealer import Sealer
from odfweb3.crypto.segments import MAGIC
from odfweb3.errors import BackendRejected, ConflictError, FormatError, NotFound
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_from_str, multihash_to_str
from odfweb3.publish.plan import PublishPlan, RemoteRecord
from odfweb3.publish.state import RawState, StateStore
from odfweb3.publish.state_home import StateHome
from odfweb3.publish.target import UploadResult
from odfweb3_ipfs.client.kubo import KuboClient
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.formats.ipns import (
    DEFAULT_LIFETIME,
    DEFAULT_TTL_NS,
    IpnsRecord,
    OdfExtension,
    RecordExpired,
    create_record,
    decode_record,
    encode_record,
    verify_record,
)
from odfweb3_ipfs.formats.libp2p_keys import IpnsName, parse_ipns_name, public_key_bytes
from odfweb3_ipfs.publish.cid_profile import CidProfile, profile_for
from odfweb3_ipfs.publish.dataset_dag import DatasetDag, shards_json, write_dag_index
from odfweb3_ipfs.publish.node_batches import BATCH_BYTES, BATCH_OBJECTS, BatchLog, BatchSender
from odfweb3_ipfs.publish.object_index import ObjectIndex
from odfweb3_ipfs.publish.pipeline import (
    BuildSettings,
    build_delta,
    odf_extra,
    record_extension,
    reusable_state,
    side_files,
)
from odfweb3_ipfs.publish.signing_key import KeyChooser, KnownName, dataset_name
from odfweb3_ipfs.publish.state import (
    NODE_CODEC,
    DagFacts,
    IpnsFacts,
    NodeExtra,
    NodePending,
    NodeTyped,
    NodeView,
)
from odfweb3_ipfs.read.replay_memory import sequence_floor

__all__ = [
    "IpfsNodeTarget",
    "NodeObjectIndex",
    "NodeRecord",
    "RepublishResult",
    "read_node_record",
    "republish",
]

Clock = Callable[[], datetime]


@dataclass(frozen=True)
class NodeRecord:
    """The node's current record for a name, verified (signature; expiry noted)."""

    record: IpnsRecord
    expired: bool

    @property
    def root(self) -> Cid | None:
        """The root CID of an ``/ipfs/<cid>`` value."""
        value = self.record.value_text
        if not value.startswith("/ipfs/"):
            return None
        try:
            return Cid.decode(value[len("/ipfs/") :].split("/", 1)[0])
        except FormatError:
            return None


def read_node_record(client: KuboClient, name: IpnsName) -> NodeRecord | None:
    """The node's record for ``name``, verified locally (never trusted raw), or None.

    Raises:
        SignatureError / FormatError: the node returned a forged or malformed record.
    """
    raw = client.record_get(name)
    if raw is None:
        return None
    try:
        return NodeRecord(verify_record(raw, name), expired=False)
    except RecordExpired:
        # verify_record checks the signature (steps 2-7) before expiry (step 8).
        return NodeRecord(decode_record(raw), expired=True)


class NodeObjectIndex(ObjectIndex):
    """The node target's object index: its packs are in ``<state file>.index/``."""

    remedy: ClassVar[str] = (
        "delete the publish state file beside this .index directory to rebuild it from the node"
    )


def _names_envelope(seen: NodeRecord | None) -> bool:
    """The record's ``_odf`` names a key envelope: an encrypted publish's record."""
    odf = seen.record.odf if seen is not None else None
    return odf is not None and bool(odf.extra.get("keyEnvelope"))


def _state_key(
    target: IpfsNodeTarget, dataset_id: str, typed: NodeTyped | None
) -> Ed25519PrivateKey | None:
    """The key of the name a saved state says the dataset is published under (republish).

    Raises:
        SigningKeyMissing: that name's key is not in the keystore.
    """
    if typed is None or not typed.record.name:
        keystore = target.keystore
        return keystore.load(dataset_id) if keystore.has(dataset_id) else None
    name = parse_ipns_name(typed.record.name)
    target.keys.decide(dataset_id, [KnownName(name, "its publish state")])
    return target.keys.key(dataset_id)


def _side_files_of(seen: NodeRecord) -> dict[str, str]:
    """The side files our own record names (descriptor, Croissant, DCAT CIDs), for the
    state of an interrupted publish whose record was put: the checkpoint does not name
    them, and without them the re-run would publish whole-chain documents again."""
    odf = seen.record.odf
    extra = odf.extra if odf is not None else {}
    out: dict[str, str] = {}
    for key in ("descriptor", "croissant", "dcat"):
        value = extra.get(key)
        if not isinstance(value, str):
            continue
        try:
            Cid.decode(value, where=f"the record's _odf {key}")
        except FormatError:
            continue
        out[key] = value
    return out


def _head_of(client: KuboClient, node_record: NodeRecord, root: Cid) -> bytes:
    """The head a record points at: ``_odf.head``, checked against ``refs/head`` on the node."""
    served = client.cat(f"/ipfs/{root.encode()}/refs/head", max_size=256)
    odf = node_record.record.odf
    if served.startswith(MAGIC) and odf is not None:
        # An encrypted dataset: refs/head is ciphertext; the record's head is all we have
        # without the key (pull decrypts refs/head and checks it against the chain).
        return multihash_from_str(odf.head)
    try:
        head = multihash_from_str(served.decode("ascii").strip())
    except (UnicodeDecodeError, FormatError, ValueError):
        raise FormatError(
            f"/ipfs/{root}/refs/head on the node is not a multihash; the name does not point "
            "at an ODF dataset"
        ) from None
    if odf is not None and multihash_from_str(odf.head) != head:
        raise FormatError(
            f"IPNS record says head {odf.head} but /ipfs/{root}/refs/head is "
            f"{multihash_to_str(head)}; the record is inconsistent"
        )
    return head


class IpfsNodeTarget:
    """Publish target for a live node (see the module docstring).

    Args:
        client: the node's RPC client.
        keystore: the datasets' keys (the IPNS key is the dataset's key).
        states: where publish state is kept.
        gateway_url: the node's HTTP gateway (for messages and links).
        cid_version: 1 (raw leaves, default) or 0.
        profile: the UnixFS import parameters (a Kubo profile, see :mod:`.cid_profile`);
            overrides ``cid_version``.
        lifetime: record validity from now.
        unpin_previous: unpin the previous root after the name moved.
        settle: the least time to wait before reading the record once more after putting
            it: a concurrent publisher whose put landed just after ours is then seen (the
            later put wins, the earlier one gets a ConflictError). No endpoint is a
            compare-and-set: ``name/put`` (Kubo >= 0.40) refuses a sequence not higher than
            the node's, but its handler reads the node's record and then puts, unlocked, so
            two puts of one sequence in flight together both pass the check. The wait is
            at least twice what our own put took, which bounds how long a rival's put can
            still be inside that window (a loaded machine makes both slower alike).
        tmp_dir: where the delta CAR is written (default: the system temp dir).
        clock: current time (tests).
        sealer: encrypt every object, ``refs/head``, and publish the key envelope.
        publisher: the FOAF agent (``name``, ``mbox``, ``homepage``) named as the
            descriptor's creator; without a name the descriptor is left out.
    """

    def __init__(
        self,
        client: KuboClient,
        keystore: Keystore,
        states: StateStore,
        *,
        gateway_url: str | None = None,
        cid_version: int = 1,
        profile: CidProfile | None = None,
        lifetime: timedelta = DEFAULT_LIFETIME,
        ttl_ns: int = DEFAULT_TTL_NS,
        unpin_previous: bool = False,
        settle: float = 0.2,
        tmp_dir: Path | None = None,
        clock: Clock = lambda: datetime.now(UTC),
        sealer: Sealer | None = None,
        publisher: Mapping[str, Any] | None = None,
        announce: Callable[[str], None] | None = None,
        other_names: Callable[[str], Sequence[KnownName]] | None = None,
    ) -> None:
        self.client = client
        self.sealer = sealer
        self.publisher = publisher
        self.keystore = keystore
        self.states = states
        self.gateway_url = gateway_url.rstrip("/") if gateway_url else None
        self.name = f"ipfs:{client.api_url}"
        # The state file: read once, locked, compared, written last (odfweb3.publish.state_home)
        # The state, typed from its read to its write (NODE_CODEC)
        self.home = StateHome(states, self.name, NODE_CODEC)
        # One name per dataset and target (:mod:`.signing_key`): decided in inspect.
        self.keys = KeyChooser(keystore, self.name, announce=announce, others=other_names)
        self.profile = profile or profile_for(None, cid_version)
        self.cid_version = self.profile.cid_version
        self.lifetime = lifetime
        self.ttl_ns = ttl_ns
        self.unpin_previous = unpin_previous
        self.settle = settle
        self.tmp_dir = tmp_dir
        self.clock = clock
        self._seen: NodeRecord | None = None  # the node's record at inspect time
        self._unchanged = False  # upload found nothing new: commit and save do nothing
        self._previous_root: str | None = None
        # Where the upload is cut into batches (node_batches' defaults; tests make it small).
        self.batch_bytes = BATCH_BYTES
        self.batch_objects = BATCH_OBJECTS

    # -- the state file and its object index ---------------------------------

    def index_dir(self, dataset_id: str) -> Path:
        """Where this target keeps the dataset's object index packs: beside its state
        file, ``<state>.index/``."""
        return self.home.index_dir(dataset_id)

    def _index(self, dataset_id: str, raw: Mapping[str, Any]) -> NodeObjectIndex:
        """An ``objectIndex`` of this target's state as an :class:`ObjectIndex`."""
        where = str(self.home.path(dataset_id))
        return NodeObjectIndex.from_json(self.index_dir(dataset_id), raw, where)

    def _load(self, dataset_id: str) -> NodeTyped | None:
        """The saved state, read and parsed once per publish (:meth:`StateHome.inspect`):
        its ``objects`` are the object index (read part by part) when the state has one."""
        state = self.home.inspect(dataset_id)
        if state is None:
            return None
        index = state.extra.object_index
        if index is not None:
            state = state.evolve(objects=self._index(dataset_id, index))
        return state

    def session(self) -> AbstractContextManager[None]:
        """The state home's lock of (dataset, this node), held by the executor around
        upload, commit and save (:class:`~odfweb3.publish.target.SessionTarget`)."""
        return self.home.session()

    # -- step 2 -------------------------------------------------------------------------

    def _root_complete(self, root: str) -> bool:
        cid = Cid.decode(root)
        if self.client.block_size(cid) is None:
            return False
        return self.client.has_pin(cid)

    @property
    def build_settings(self) -> BuildSettings:
        """How this target builds what it publishes (:mod:`.pipeline`)."""
        return BuildSettings(self.keys.key, self.profile, self.sealer, self.publisher)

    def inspect(self, dataset_id: str, local_head: bytes) -> NodeView:
        """What the node holds for the dataset (state checked against the node)."""
        notes: list[str] = []
        state = self._load(dataset_id)
        seen = self._record_of_name(dataset_id, state)
        self._seen = seen
        if seen is not None and seen.expired:
            notes.append("the node's IPNS record has expired; this publish renews it")

        typed = state
        last = typed.record.sequence if typed is not None else None
        our_seq = -1 if last is None else last
        if (
            seen is not None
            and seen.record.sequence > our_seq
            and (typed is None or seen.record.value_text != typed.record.value)
        ):
            if state is not None:
                notes.append(
                    f"the node's record has sequence {seen.record.sequence} > ours ({our_seq}): "
                    "another publisher moved the name; building on its head"
                )
            return self._view_from_record(dataset_id, seen, state, notes)
        if state is None or typed is None:
            # A first publish: what an interrupted one left whole on the node is linked.
            return self._resumed(dataset_id, NodeView(head=None, notes=tuple(notes)))

        # The committed state, checked against the node.
        has: Collection[str] = frozenset()
        objects: Mapping[str, Mapping[str, Any]] = state.objects
        dag = typed.extra.dag
        dir_blocks: tuple[str, ...] = dag.dir_blocks or ()
        shards, index = typed.extra.hamt_shards, typed.extra.object_index
        # Objects made another way (CID profile, encryption) cannot be linked: sent again.
        usable = reusable_state(dag, self.profile, encrypted=self.sealer is not None)
        holds_head = usable
        if state.locator is not None:
            if self._root_complete(state.locator):
                self._previous_root = state.locator
                if usable:
                    # The object index answers `in` part by part; no copy.
                    has = objects
            else:
                notes.append(
                    f"the node no longer holds the published root {state.locator}: "
                    "sending the whole dataset again"
                )
                objects, dir_blocks, holds_head = {}, (), False
                shards = index = None
        pending = typed.extra.pending
        if (
            usable
            and pending is not None
            and pending.profile.same_profile(dag)
            and self._root_complete(pending.root)
        ):
            notes.append(f"resuming an interrupted publish: {pending.root} is already on the node")
            if pending.object_index is not None:
                # The pinned root's whole layout: its index and shard tables.
                objects = has = self._index(dataset_id, pending.object_index)
                shards, index = pending.hamt_shards, pending.object_index
            else:  # a checkpoint of an older version: every object listed
                objects = {**objects, **(pending.objects or {})}
                has = {*has, *(pending.objects or {})}
                shards = index = None
            if pending.dir_blocks:  # older versions: the directory blocks it sent
                dir_blocks = tuple(sorted(set(dir_blocks) | set(pending.dir_blocks)))
        extra = replace(
            typed.extra,
            dag=replace(dag, dir_blocks=dir_blocks or None),
            pending=None,
            hamt_shards=shards,
            object_index=index,
        )
        if seen is None and state.head is not None:
            notes.append("the node has no record for the name; this publish puts it back")
        checked = state.evolve(objects=objects, extra=extra)
        whole = holds_head and bool(has) and pending is None
        view = NodeView(
            head=state.head,
            has=has,
            state=checked,
            notes=tuple(notes),
            holds_head=holds_head,
            encrypted=bool(dag.encrypted or dag.key_envelope) or _names_envelope(seen),
            record=self._served(seen, typed, state.locator) if whole else None,
        )
        if usable and not has:  # the node lost the root: everything is sent, resumably
            return self._resumed(dataset_id, view)
        return view

    def _served(
        self, seen: NodeRecord | None, typed: NodeTyped, root: str | None
    ) -> RemoteRecord | None:
        """The node's record as facts for the plan (:func:`.plan_record`), when it is the one
        our state names (same sequence, same root) and could be kept; None otherwise: no
        record, another one, expired, or an encrypted publish (its key envelope is not
        compared, so it is always re-signed)."""
        if seen is None or seen.expired or self.sealer is not None or root is None:
            return None
        if seen.record.sequence != typed.record.sequence:
            return None
        if seen.record.value_text != f"/ipfs/{root}":
            return None
        dag = typed.extra.dag
        # The side files the record names (descriptor, discovery documents) still pinned:
        # one the node lost is sent again under a new record, as before.
        for side in (dag.descriptor, dag.croissant, dag.dcat):
            if side is not None and not self.client.has_pin(Cid.decode(side)):
                return None
        # A record past half its lifetime is renewed (sequence + 1), as car:DIR's is.
        due = seen.record.expires_at - self.clock() < self.lifetime / 2
        return RemoteRecord(renewal_due=due, inputs=dag.inputs)

    def _batches(self, dataset_id: str) -> BatchLog:
        """The batch records of an unfinished upload (:mod:`.node_batches`)."""
        return BatchLog(self.index_dir(dataset_id), self.client, self.home.checkpoint(dataset_id))

    def _resumed(self, dataset_id: str, view: NodeView) -> NodeView:
        """``view`` (nothing on the node to link), with the objects an interrupted upload
        left whole on the node (its batch nodes still pinned) linked instead of sent."""
        facts = self._profile_facts()
        objects, batches = self._batches(dataset_id).resume(
            cid_version=self.cid_version,
            cid_profile=facts.cid_profile,
            key_epoch=self.sealer.epoch if self.sealer is not None else None,
        )
        if not objects:
            return view
        if self.sealer is not None:
            facts = replace(facts, encrypted=True, key_epoch=self.sealer.epoch)
        base = view.state or NodeTyped(
            dataset_id=dataset_id,
            target=self.name,
            record=IpnsFacts(),
            extra=NodeExtra(dag=facts),
        )
        note = (
            f"resuming an interrupted upload: {len(objects)} objects ({batches} batches) "
            "are whole on the node already"
        )
        return replace(
            view,
            has=frozenset(objects),
            state=base.evolve(objects=objects),
            notes=(*view.notes, note),
            # ciphertext batches are resumed only under the same key (key_epoch above)
            encrypted=view.encrypted or self.sealer is not None,
        )

    def _record_of_name(self, dataset_id: str, state: NodeTyped | None) -> NodeRecord | None:
        """Decide which key signs (:mod:`.signing_key`) from the records the node holds,
        and return the node's record for that name. Asked, in order, until the node holds
        a record of a name whose key is here: the name of our state, the keystore's names
        for the dataset; when none has a record, the dataset's own name (its identity key)
        and the names known outside this target, so a second machine finds the name the
        first one published (a record of another dataset does not count).

        A name whose key is not here makes ``upload`` refuse (``SigningKeyMissing``),
        before anything is sent.
        """
        held = self.keys.held(dataset_id)
        typed = state
        first = [parse_ipns_name(typed.record.name)] if typed and typed.record.name else []
        found: list[KnownName] = []
        records: dict[IpnsName, NodeRecord] = {}

        def ask(names: Iterable[IpnsName]) -> None:
            for name in dict.fromkeys(names):
                if name in records or (found and found[0].name in held):
                    continue
                try:
                    seen = read_node_record(self.client, name)
                except BackendRejected as exc:
                    # A node started with --offline reads no records at all ("must be run
                    # in online mode"): it can name no existing record, so nothing is
                    # found here and the keystore and this machine's states decide.
                    if "online mode" not in str(exc.detail or ""):
                        raise
                    return
                odf = seen.record.odf if seen is not None else None
                if seen is not None and (odf is None or odf.dataset_id == dataset_id):
                    records[name] = seen
                    found.append(KnownName(name, f"the record {self.name} holds"))
                    found.sort(key=lambda k: k.name not in held)

        ask([*first, *held])
        if not found:
            own = dataset_name(dataset_id)
            ask(
                [
                    *([own] if own is not None else []),
                    *(k.name for k in self.keys.others(dataset_id)),
                ]
            )
        plan = self.keys.decide(dataset_id, found)
        return records.get(plan.name) if plan.name is not None else None

    def _view_from_record(
        self, dataset_id: str, seen: NodeRecord, state: NodeTyped | None, notes: list[str]
    ) -> NodeView:
        """Rebuild the view from the node's record (no or stale state)."""
        view = self._rebuilt_view(dataset_id, seen, state, notes)
        # The record names a key envelope: the name serves ciphertext (a new machine too).
        return replace(view, encrypted=_names_envelope(seen))

    def _rebuilt_view(
        self, dataset_id: str, seen: NodeRecord, state: NodeTyped | None, notes: list[str]
    ) -> NodeView:
        root = seen.root
        record_facts = IpnsFacts(sequence=seen.record.sequence, value=seen.record.value_text)
        base = NodeTyped(
            dataset_id=dataset_id, target=self.name, record=record_facts, extra=NodeExtra()
        )
        if root is None:
            notes.append(f"the node's record points at {seen.record.value_text}, not /ipfs/<cid>")
            return NodeView(head=None, state=base, notes=tuple(notes))
        if self.client.block_size(root) is None:
            notes.append(
                f"the node's record points at {root}, which the node does not hold: "
                "sending the whole dataset"
            )
            return NodeView(head=None, state=base, notes=tuple(notes))
        head = _head_of(self.client, seen, root)
        notes.append(
            f"rebuilt the publish state from the node's record (sequence "
            f"{seen.record.sequence}, root {root})"
        )
        base = base.evolve(head=head, locator=root.encode())
        typed = state
        pending = typed.extra.pending if typed is not None else None
        if (
            typed is not None
            and pending is not None
            and Cid.decode(pending.root).raw == root.raw
            and self.client.has_pin(root)
        ):
            # Our own publish was interrupted after the record was put, before the state
            # was saved: its checkpoint says what the (pinned, so complete) root holds: its
            # object index and shard tables (older versions: every object and directory
            # block).
            objects: Mapping[str, Mapping[str, Any]]
            if pending.object_index is not None:
                objects = self._index(dataset_id, pending.object_index)
            else:
                objects = dict(pending.objects or {})
            named = _side_files_of(seen)
            dag = replace(
                pending.profile,
                dir_blocks=pending.dir_blocks,
                descriptor=named.get("descriptor"),
                croissant=named.get("croissant"),
                dcat=named.get("dcat"),
            )
            extra = NodeExtra(
                dag=dag, hamt_shards=pending.hamt_shards, object_index=pending.object_index
            )
            base = base.evolve(objects=objects, extra=extra)
            self._previous_root = root.encode()
            notes.append("the record names the root of our interrupted publish: reusing it")
            if reusable_state(dag, self.profile, encrypted=self.sealer is not None):
                return NodeView(head=head, has=objects, state=base, notes=tuple(notes))
        # No links for the root's objects: the plan sends them all.
        return NodeView(head=head, state=base, notes=tuple(notes), holds_head=False)

    # -- steps 3-5 ----------------------------------------------------------------------

    def check_signing(self, dataset_id: str) -> None:
        """Refuse when the dataset is published under a name whose key is not here
        (:mod:`.signing_key`; decided by ``inspect``). Called by the executor once its own
        refusals passed, in a dry run too, and by ``upload`` first."""
        self.keys.check(dataset_id)

    def upload(
        self,
        plan: PublishPlan,
        reader: DatasetReader,
        view: NodeView,
        progress: Callable[[int], None],
    ) -> UploadResult[NodeExtra]:
        """Build the delta CAR in a temp file, ``dag/import`` it, pin the new root."""
        self.check_signing(plan.dataset_id)  # a name whose key is not here: nothing sent
        self.home.check_unchanged()  # another publish on this machine moved it: nothing sent
        self._unchanged = False
        if plan.keep_record and view.state is not None:
            # The plan keeps the record (same head, the node serves our record, not due for
            # renewal): nothing to send, pin or sign, and no state to write.
            self._unchanged = True
            return UploadResult.kept(view.state, note="nothing new: nothing sent, record unchanged")
        prev = view.state
        sent_before = self.client.stats.bytes_sent
        # Sent in batches of whole, checked objects, each recorded and pinned once the node
        # has it, so an interruption costs about one batch (:mod:`.node_batches`).
        sender = BatchSender(
            self.client,
            self._batches(plan.dataset_id),
            self.tmp_dir,
            cid_version=self.cid_version,
            cid_profile=self._profile_facts().cid_profile,
            key_epoch=self.sealer.epoch if self.sealer is not None else None,
            batch_bytes=self.batch_bytes,
            batch_objects=self.batch_objects,
        )
        try:
            dag = build_delta(
                plan,
                reader,
                view,
                self.build_settings,
                sink=sender,
                progress=progress,
                observer=sender,
            )
            # Side files (descriptor or key envelope) in the last CAR, outside the root;
            # the same descriptor already pinned (a re-publish with nothing new, a re-run
            # after an interruption) is not sent again.
            side = side_files(
                plan, reader, dag.root.cid.encode(), self.build_settings, view, dag.data_sha256
            )
            sender.finish(
                dag.root.cid,
                (
                    block
                    for file in side.files
                    if not (file.kind != "keyEnvelope" and self.client.has_pin(file.cid))
                    for block in file.blocks
                ),
            )
        finally:
            sender.close()
        car_blocks, car_bytes = sender.blocks, sender.bytes
        root = dag.root.cid
        if self.client.block_size(root) is None:
            raise BackendRejected(
                f"{self.name}: the root {root} is missing after dag/import; "
                "the node did not store the CAR (see its log)",
                0,
                "root missing after import",
            )
        self._pin(root)
        found: dict[str, str] = {}
        for file in side.files:
            self.client.pin_add(file.cid)
            found[file.kind] = file.cid.encode()
        # The key envelope of an encrypted publish (pinned above, as a side file).
        envelope = found.get("keyEnvelope") if self.sealer is not None else None
        desc = {
            **side.skipped,
            **side.kept,
            **{k: v for k, v in found.items() if k != "keyEnvelope"},
        }
        index = self._write_index(plan.dataset_id, dag, prev)
        shards = shards_json(dag.shards) if dag.shards else None
        self._checkpoint(plan, root.encode(), index, shards)
        # The pinned root holds every object now: the batch pins and records go.
        self._batches(plan.dataset_id).clear()
        facts = replace(
            self._profile_facts(),
            # No dirBlocks: as car:DIR, the next build knows from the layout
            # which directory blocks are new (build_dataset_dag_indexed); an older
            # state's list still filters its first update.
            dir_blocks=None,
            descriptor=desc.get("descriptor"),
            croissant=desc.get("croissant"),
            dcat=desc.get("dcat"),
            encrypted=True if envelope else None,
            key_epoch=self.sealer.epoch if envelope and self.sealer is not None else None,
            key_envelope=envelope,
        )
        return UploadResult(
            locator=root.encode(),
            objects=index,
            extra=NodeExtra(
                dag=facts,
                source=str(reader.root),
                node=self.client.node.kind,
                # The next publish rebuilds only the shards its new entries fall under
                # and reads only the index parts they fall in.
                hamt_shards=shards,
                object_index=index.to_json(),
            ),
            bytes_sent=self.client.stats.bytes_sent - sent_before,
            summary={
                "carBlocks": car_blocks,
                "carBytes": car_bytes if car_blocks else 0,
                "pinned": root.encode(),
                **({"keyEnvelope": envelope} if envelope else {}),
                **desc,
            },
        )

    def _pin(self, root: Cid) -> None:
        """Pin the new root: ``pin/update`` from the previous root where the node has it
        (Kubo: walks only the difference), else ``pin/add`` (walks the whole DAG)."""
        previous = self._previous_root
        if previous and previous != root.encode() and self.client.node.kind == "kubo":
            try:
                self.client.pin_update(Cid.decode(previous), root)
                return
            except BackendRejected as exc:
                if exc.status not in (404, 405):
                    # Kubo refuses pin/update when the new root is already pinned ("'to' cid
                    # was already recursively pinned": a resumed publish pinned it before it
                    # was interrupted). Pinned is what we want; anything else is an error.
                    if exc.status == 500 and self.client.has_pin(root):
                        return
                    raise
        self.client.pin_add(root)

    def _write_index(self, dataset_id: str, dag: DatasetDag, prev: NodeTyped | None) -> ObjectIndex:
        """The object index of the new root, its new pack written before any state names
        it (:func:`.dataset_dag.write_dag_index`)."""
        fresh = partial(NodeObjectIndex.write_fresh, self.index_dir(dataset_id))
        return write_dag_index(dag, prev, fresh, public=False)

    def _checkpoint(
        self,
        plan: PublishPlan,
        root: str,
        index: ObjectIndex,
        shards: Mapping[str, Any] | None,
    ) -> None:
        """Remember what is on the node before the name moves (resumes an interruption).

        The checkpoint names the root's object index (its packs already written) and shard
        tables, so it stays small; it is added to the state inspect read (the state home's
        compare-and-set at upload, and its lock, keep any other publisher's off it).
        """
        saved = self.home.seen
        if saved is None:
            saved = NodeTyped(plan.dataset_id, self.name, record=IpnsFacts(), extra=NodeExtra())
        profile = self._profile_facts()
        pending = NodePending(
            root=root,
            head=multihash_to_str(plan.head),
            cid_version=profile.cid_version,
            cid_profile=profile.cid_profile,
            object_index=index.to_json(),
            hamt_shards=shards,
        )
        self.home.write(saved.evolve(extra=replace(saved.extra, pending=pending)))

    def _profile_facts(self) -> DagFacts:
        """How this target's CIDs are made, as publish state records it."""
        return DagFacts(cid_version=self.cid_version, cid_profile=self.profile.state_tag or None)

    # -- step 6 -------------------------------------------------------------------------

    def commit(
        self, plan: PublishPlan, upload: UploadResult[NodeExtra], view: NodeView
    ) -> NodeTyped:
        """Put the signed record (sequence + 1) for the new root; detect a lost race."""
        if self._unchanged and view.state is not None:
            return view.state
        self.home.check_unchanged()  # the state is still ours: the name may move
        key = self.keys.key(plan.dataset_id)
        name = IpnsName.from_public_key(public_key_bytes(key))
        now_seen = read_node_record(self.client, name)
        before = self._seen
        if now_seen is not None and (
            before is None or now_seen.record.sequence != before.record.sequence
        ):
            raise ConflictError(
                f"{self.name}: another publisher put sequence {now_seen.record.sequence} "
                f"({now_seen.record.value_text}) for {name} while we published; "
                "our objects are stored and pinned, the name was not changed: run publish again"
            )
        prev = view.state
        last = prev.record.sequence if prev is not None else None
        sequences = [-1 if last is None else last]
        if now_seen is not None:
            sequences.append(now_seen.record.sequence)
        # Above all this key signed for the name on any target (a car:DIR publish signs with
        # the same key): a second record at a sequence already signed is an equivocation
        # (IPNS spec "Record Verification") that resolvers refuse.
        floor = sequence_floor(name, self.keystore, None, plan.dataset_id)
        if floor is not None:
            sequences.append(floor)
        sequence = max(sequences) + 1
        value = f"/ipfs/{upload.locator}"
        # The inputs map is kept in the state too, so republish re-signs the same
        # map and a plain publish keeps the map the last --with-inputs publish recorded.
        sent = upload.extra
        ext, dag = record_extension(plan, sent.dag, prev.extra.dag if prev is not None else None)
        mode, record = self._put_record(plan.dataset_id, key, name, value, sequence, ext)
        return NodeTyped(
            dataset_id=plan.dataset_id,
            target=self.name,
            head=plan.head,
            locator=upload.locator,
            record=_record_facts(name, record, mode),
            objects=upload.objects,
            extra=replace(sent, dag=dag),
        )

    def _put_record(
        self,
        dataset_id: str,
        key: Ed25519PrivateKey,
        name: IpnsName,
        value: str,
        sequence: int,
        ext: OdfExtension | None,
    ) -> tuple[str, IpnsRecord]:
        """Put a pre-signed record, else fall back to ``name/publish``; verify the read-back."""
        now = self.clock()
        record = create_record(
            key,
            value,
            sequence,
            validity=now + self.lifetime,
            ttl_ns=self.ttl_ns,
            extensions={"_odf": ext} if ext is not None else None,
            now=now,
        )
        # Remembered before the record leaves the process (the keystore entry's memory).
        self.keystore.note_signed(dataset_id, public_key_bytes(key), sequence)
        started = time.monotonic()
        try:
            mode = self.client.record_put(name, encode_record(record))
        except BackendRejected as exc:
            if exc.status not in (404, 405):
                # A rival's put of our sequence may have landed between the node's check
                # and its put, and its routing kept the rival's (better) record.
                raise self._rival_won(name, value, sequence) or exc from None
            mode = "name/publish"
            key_name = self._ensure_key(key, name)
            hours = max(1, int(self.lifetime.total_seconds() // 3600))
            self.client.name_publish(value, key_name, lifetime=f"{hours}h")
        back = read_node_record(self.client, name)
        if back is None or back.record.value_text != value:
            raise ConflictError(
                f"{self.name}: after {mode} the node serves "
                f"{back.record.value_text if back else 'no record'} for {name}, not {value}; "
                "another publisher may have won: run odfweb3 status"
            )
        if mode != "name/publish" and back.record.sequence != sequence:
            raise ConflictError(
                f"{self.name}: the node kept sequence {back.record.sequence} for {name}, "
                f"not ours ({sequence}); another publisher may have won"
            )
        # A second look after every put: name/put's sequence check is not atomic with its
        # put (see ``settle``), and routing/put and name/publish have none.
        took = time.monotonic() - started
        if self.settle > 0:
            time.sleep(max(self.settle, 2 * took))
            again = read_node_record(self.client, name)
            if again is None or again.record.value_text != value:
                raise ConflictError(
                    f"{self.name}: another publisher put "
                    f"{again.record.value_text if again else 'no record'} for {name} right "
                    "after us and won; our objects are stored and pinned: run odfweb3 status"
                )
        return mode, back.record

    def _rival_won(self, name: IpnsName, value: str, sequence: int) -> ConflictError | None:
        """A ConflictError when the node now serves another publisher's record of at least
        our sequence (our put was refused because of it); else None."""
        try:
            now_seen = read_node_record(self.client, name)
        except BackendRejected:
            return None
        if (
            now_seen is None
            or now_seen.record.value_text == value
            or now_seen.record.sequence < sequence
        ):
            return None
        return ConflictError(
            f"{self.name}: another publisher put sequence {now_seen.record.sequence} "
            f"({now_seen.record.value_text}) for {name} as we put ours, and the node kept "
            "it; our objects are stored and pinned: run odfweb3 status"
        )

    def _ensure_key(self, key: Ed25519PrivateKey, name: IpnsName) -> str:
        """Import the dataset key into the node (once) for ``name/publish``."""
        key_name = f"odfweb3-{name.peer_id}"
        if key_name not in self.client.key_names():
            self.client.key_import(key_name, key)
        return key_name

    # -- step 7 -------------------------------------------------------------------------

    def save(self, state: NodeTyped) -> RawState:
        """Save the state (serialized once, by the state home, which drops the index packs
        it no longer names), then unpin the previous root if asked (the name has moved).
        Nothing new: nothing written."""
        if self._unchanged:
            return NODE_CODEC.serialize(state)  # as the state file holds it
        saved = self.home.write(state)
        old = self._previous_root
        if self.unpin_previous and old and old != state.locator:
            self.client.pin_rm(Cid.decode(old))
        return saved

    def republish(self, dataset_id: str) -> RepublishResult:
        """Re-sign the current record: same value and extension, sequence + 1."""
        return republish(self, dataset_id)


@dataclass(frozen=True)
class RepublishResult:
    """What a republish did."""

    dataset_id: str
    name: str
    value: str
    sequence: int
    expires: datetime
    mode: str


def _record_facts(name: IpnsName, record: IpnsRecord, mode: str) -> IpnsFacts:
    return IpnsFacts(
        name=str(name),
        peer_id=name.peer_id,
        sequence=record.sequence,
        validity=record.expires_at.isoformat(),
        value=record.value_text,
        mode=mode,
        extension=record.odf is not None,
        ttl=record.ttl_ns // 1_000_000_000,
    )


def republish(target: IpfsNodeTarget, dataset_id: str) -> RepublishResult:
    """Re-put the dataset's record with the same value, sequence + 1 and a new validity.

    The base is the node's record when it verifies and is at least as new as our state
    (its ``_odf`` extension is kept), else the saved state.

    Raises:
        NotFound: nothing was published for this dataset on this node.
    """
    state = target.home.inspect(dataset_id)
    typed = state
    key = _state_key(target, dataset_id, typed)
    if key is None or state is None or typed is None or typed.record.value is None:
        raise NotFound(
            f"{target.name}: nothing published for {dataset_id} (no key or state); "
            "run odfweb3 publish first"
        )
    name = IpnsName.from_public_key(public_key_bytes(key))
    seen = read_node_record(target.client, name)
    target._seen = seen
    value = typed.record.value
    sequence = -1 if typed.record.sequence is None else typed.record.sequence
    ext: OdfExtension | None = None
    if state.head is not None and typed.record.extension is not False:
        ext = OdfExtension(
            dataset_id=dataset_id,
            head=multihash_to_str(state.head),
            extra=odf_extra(typed.extra.dag),
        )
    if seen is not None and seen.record.sequence >= sequence:
        value, sequence, ext = seen.record.value_text, seen.record.sequence, seen.record.odf
    # One publisher of (dataset, node) at a time, and the state still the one read above.
    with target.home.session():
        target.home.check_unchanged()
        mode, record = target._put_record(dataset_id, key, name, value, sequence + 1, ext)
        facts = _record_facts(name, record, mode)
        target.home.write(state.evolve(record=facts))
    return RepublishResult(dataset_id, str(name), value, record.sequence, record.expires_at, mode)
