"""Typed publish state of the IPFS targets: pure parse / serialize pairs.

The core keeps one :class:`odfweb3.publish.state.PublishState` per (dataset, target) with
JSON maps ``record`` and ``extra`` (docs/design.md, "State files"); what those maps hold is
this adapter's business. Each target reads them here once, into frozen dataclasses whose
fields mypy checks, and writes them back through the matching ``serialize_*``:

- :class:`IpnsFacts`: ``record`` of every IPFS target (the IPNS name and the last record);
- :class:`DagFacts`: the part of ``extra`` the ``car:`` and node targets share (how the
  objects' CIDs were made, the directory blocks sent, the side files, the inputs map);
- :class:`CarState` (``car:DIR``'s ``publish.json``), :class:`NodeState` (a Kubo node's
  state, with its interrupted-publish checkpoint :class:`NodePending`) and
  :class:`PinState` (one ``pinning:NAME`` service).

A field of the wrong type is a :class:`~odfweb3.errors.FormatError` naming the file. A field
absent on disk is ``None`` here and stays absent when written: ``serialize(parse(x)) == x``
for every state odfweb3 writes, so the JSON on disk is byte-identical to what the
``dict[str, Any]`` code wrote. ``objects`` stays the core's map (path -> JSON object): it is
read lazily, entry by entry, by :class:`.dataset_dag.ObjectLink` (100,000 entries).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypedDict, TypeVar

from odfweb3.publish.state import JSONMap, PublishState, StateCodec
from odfweb3.publish.state_fields import (
    hex_list,
    json_object,
    malformed,
    opt_field,
    present,
    str_list,
    str_map,
)
from odfweb3.publish.target import RemoteView

__all__ = [
    "CAR_CODEC",
    "NODE_CODEC",
    "PIN_CODEC",
    "CarExtra",
    "CarState",
    "CarTyped",
    "CarView",
    "DagExtra",
    "DagFacts",
    "IpfsTyped",
    "IpfsView",
    "IpnsFacts",
    "NodeExtra",
    "NodePending",
    "NodeState",
    "NodeTyped",
    "NodeView",
    "PinExtra",
    "PinState",
    "PinTyped",
    "StateParts",
    "parse_car_extra",
    "parse_car_state",
    "parse_dag_facts",
    "parse_ipns_facts",
    "parse_node_extra",
    "parse_node_state",
    "parse_pin_state",
    "serialize_car_extra",
    "serialize_car_state",
    "serialize_dag_facts",
    "serialize_ipns_facts",
    "serialize_node_extra",
    "serialize_node_state",
    "serialize_pin_state",
]


class StateParts(TypedDict):
    """The ``record`` and ``extra`` maps of a :class:`PublishState` (``PublishState(**parts)``
    or ``state.evolve(**parts)``)."""

    record: dict[str, Any]
    extra: dict[str, Any]


# -- record: the IPNS name and the last record ---------------------------------------------


@dataclass(frozen=True)
class IpnsFacts:
    """``record``: the dataset's IPNS name and the last record put under it.

    Attributes:
        name: the IPNS name (``k51…``).
        peer_id: the name's peer ID (node target).
        sequence: the last record's sequence.
        validity: when it expires (ISO 8601).
        value: what it points at (``/ipfs/<root>``).
        file: the record file in ``OUT_DIR`` (``car:`` target).
        mode: how the node took it (``routing/put`` or ``name/publish``; node target).
        extension: whether the record carries the ``_odf`` extension (node target).
        ttl: the record's TTL in seconds (``ipfs.record_ttl``): how long a resolver may
            serve the record it cached before this one (absent in states written before).
    """

    name: str | None = None
    peer_id: str | None = None
    sequence: int | None = None
    validity: str | None = None
    value: str | None = None
    file: str | None = None
    mode: str | None = None
    extension: bool | None = None
    ttl: int | None = None


def parse_ipns_facts(raw: Mapping[str, Any], where: str) -> IpnsFacts:
    """``record`` as :class:`IpnsFacts` (FormatError naming ``where`` on a wrong type)."""
    p = "record"
    return IpnsFacts(
        name=opt_field(raw, "name", str, where, p),
        peer_id=opt_field(raw, "peerId", str, where, p),
        sequence=opt_field(raw, "sequence", int, where, p),
        validity=opt_field(raw, "validity", str, where, p),
        value=opt_field(raw, "value", str, where, p),
        file=opt_field(raw, "file", str, where, p),
        mode=opt_field(raw, "mode", str, where, p),
        extension=opt_field(raw, "extension", bool, where, p),
        ttl=opt_field(raw, "ttl", int, where, p),
    )


def serialize_ipns_facts(facts: IpnsFacts) -> dict[str, Any]:
    """JSON form of :class:`IpnsFacts` (absent fields stay absent)."""
    return present(
        {
            "name": facts.name,
            "peerId": facts.peer_id,
            "sequence": facts.sequence,
            "validity": facts.validity,
            "value": facts.value,
            "file": facts.file,
            "mode": facts.mode,
            "extension": facts.extension,
            "ttl": facts.ttl,
        }
    )


# -- extra: what the car: and node targets share ---------------------------------------------


@dataclass(frozen=True)
class DagFacts:
    """The dataset DAG's facts in ``extra`` (``car:`` and node targets).

    Attributes:
        cid_version: ``cidVersion`` (absent: 1, :attr:`version`).
        cid_profile: ``cidProfile``, the UnixFS import profile's tag (absent: the
            parameters ``cidVersion`` alone names).
        encrypted: ``encrypted`` (written only as true).
        key_epoch: ``keyEpoch`` of the sealer (encrypted publishes).
        dir_blocks: ``dirBlocks``, hex CIDs of the directory blocks sent before (the node
            target; ``car:DIR`` wrote them before its object index and now reads them only from an
            older ``publish.json``: its builds know which blocks are new from the layout).
        descriptor: ``descriptor``, the discovery descriptor's CID.
        croissant / dcat: ``croissant`` / ``dcat``, the CIDs of the Croissant and DCAT
            documents of the last publish that wrote them (:mod:`odfweb3.descriptor.published`).
        key_envelope: ``keyEnvelope``, the key envelope's CID (encrypted publishes).
        inputs: ``inputs``, dataset ID -> where the input lives.
    """

    cid_version: int | None = None
    cid_profile: str | None = None
    encrypted: bool | None = None
    key_epoch: int | None = None
    dir_blocks: tuple[str, ...] | None = None
    descriptor: str | None = None
    key_envelope: str | None = None
    inputs: Mapping[str, str] | None = None
    croissant: str | None = None
    dcat: str | None = None

    @property
    def version(self) -> int:
        """The CID version (1 when the state does not say)."""
        return 1 if self.cid_version is None else self.cid_version

    def same_profile(self, other: DagFacts) -> bool:
        """Both made their CIDs the same way (``cidVersion``, ``cidProfile``)."""
        return self.version == other.version and self.cid_profile == other.cid_profile


def parse_dag_facts(raw: Mapping[str, Any], where: str) -> DagFacts:
    """The :class:`DagFacts` of ``extra`` (FormatError naming ``where`` on a wrong type).

    Parsed once per read of the state file: the state home parses the file where it reads
    it and hands the typed state on (``dirBlocks`` lists every directory block ever sent,
    90,000 hex CIDs at 100,000 blocks)."""
    p = "extra"
    return DagFacts(
        cid_version=opt_field(raw, "cidVersion", int, where, p),
        cid_profile=opt_field(raw, "cidProfile", str, where, p),
        encrypted=opt_field(raw, "encrypted", bool, where, p),
        key_epoch=opt_field(raw, "keyEpoch", int, where, p),
        dir_blocks=hex_list(raw, "dirBlocks", where, p),
        descriptor=opt_field(raw, "descriptor", str, where, p),
        key_envelope=opt_field(raw, "keyEnvelope", str, where, p),
        inputs=str_map(raw, "inputs", where, p),
        croissant=opt_field(raw, "croissant", str, where, p),
        dcat=opt_field(raw, "dcat", str, where, p),
    )


def serialize_dag_facts(facts: DagFacts) -> dict[str, Any]:
    """JSON form of :class:`DagFacts` (absent fields stay absent)."""
    return present(
        {
            "cidVersion": facts.cid_version,
            "cidProfile": facts.cid_profile,
            "encrypted": facts.encrypted,
            "keyEpoch": facts.key_epoch,
            "dirBlocks": list(facts.dir_blocks) if facts.dir_blocks is not None else None,
            "descriptor": facts.descriptor,
            "keyEnvelope": facts.key_envelope,
            "inputs": dict(facts.inputs) if facts.inputs is not None else None,
            "croissant": facts.croissant,
            "dcat": facts.dcat,
        }
    )


# -- car:DIR ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CarExtra:
    """``extra`` of ``car:DIR``'s ``publish.json``.

    Attributes:
        dag: the DAG facts.
        cars: ``cars``, the dataset CARs in ``OUT_DIR``, oldest first.
        hamt_shards: ``hamtShards``, the HAMT shard tables of the top directories (read by
            :func:`.dataset_dag.reusable_shards`; a damaged table costs a rebuild).
        descriptor_car: ``descriptorCar``, the descriptor's CAR file.
        key_envelope_car: ``keyEnvelopeCar``, the key envelope's CAR file.
        discovery_cars: ``discoveryCars``, the CARs of every Croissant and DCAT document
            published to the directory, oldest first (each document names the one before).
        object_index: ``objectIndex``, where the per-object links are
            (:class:`.object_index.ObjectIndex`; absent: the core's ``objects`` map).
    """

    dag: DagFacts = DagFacts()
    cars: tuple[str, ...] | None = None
    hamt_shards: Mapping[str, Any] | None = None
    descriptor_car: str | None = None
    key_envelope_car: str | None = None
    object_index: Mapping[str, Any] | None = None
    discovery_cars: tuple[str, ...] | None = None

    @property
    def side_cars(self) -> list[str]:
        """The CARs beside the dataset's: the descriptor's, the key envelope's and the
        discovery documents'."""
        one = [c for c in (self.descriptor_car, self.key_envelope_car) if c]
        return [*one, *(self.discovery_cars or ())]


@dataclass(frozen=True)
class CarState:
    """What ``car:DIR``'s ``publish.json`` says beyond the core's head, locator and objects."""

    record: IpnsFacts
    extra: CarExtra


def parse_car_extra(raw: Mapping[str, Any], where: str) -> CarExtra:
    """``extra`` of ``car:DIR`` as :class:`CarExtra`."""
    p = "extra"
    return CarExtra(
        dag=parse_dag_facts(raw, where),
        cars=str_list(raw, "cars", where, p),
        hamt_shards=json_object(raw, "hamtShards", where, p),
        descriptor_car=opt_field(raw, "descriptorCar", str, where, p),
        key_envelope_car=opt_field(raw, "keyEnvelopeCar", str, where, p),
        object_index=json_object(raw, "objectIndex", where, p),
        discovery_cars=str_list(raw, "discoveryCars", where, p),
    )


def serialize_car_extra(extra: CarExtra) -> dict[str, Any]:
    """JSON form of :class:`CarExtra`."""
    out = serialize_dag_facts(extra.dag) | present(
        {
            "cars": list(extra.cars) if extra.cars is not None else None,
            "hamtShards": extra.hamt_shards,
            "descriptorCar": extra.descriptor_car,
            "keyEnvelopeCar": extra.key_envelope_car,
            "objectIndex": extra.object_index,
            "discoveryCars": list(extra.discovery_cars)
            if extra.discovery_cars is not None
            else None,
        }
    )
    return out


def parse_car_state(state: PublishState, where: str) -> CarState:
    """The typed ``record`` and ``extra`` of a ``car:`` state read from ``where``."""
    return CarState(parse_ipns_facts(state.record, where), parse_car_extra(state.extra, where))


def serialize_car_state(car: CarState) -> StateParts:
    """``record`` and ``extra`` of :class:`CarState` for a :class:`PublishState`."""
    return StateParts(record=serialize_ipns_facts(car.record), extra=serialize_car_extra(car.extra))


# -- a Kubo node -----------------------------------------------------------------------------


@dataclass(frozen=True)
class NodePending:
    """``extra.pending``: a publish whose root is on the node but whose name may not have
    moved yet (written before the record is put; resumes an interruption).

    Since the object index, the checkpoint names the root's object index (its packs are written
    before it) and shard tables instead of listing every object and directory block; a
    checkpoint written by older versions (``objects``, ``dirBlocks``) is still read.

    Attributes:
        root: the new root CID.
        head: the head it holds (multibase text).
        objects: path -> object link JSON, as the core's ``objects`` (older versions).
        dir_blocks: hex CIDs of its directory blocks (older versions only).
        cid_version: how its CIDs were made (absent: 1).
        cid_profile: the import profile's tag.
        object_index: ``objectIndex``, the root's object index
            (:class:`.object_index.ObjectIndex`).
        hamt_shards: ``hamtShards``, the root's HAMT shard tables.
    """

    root: str
    head: str | None = None
    objects: Mapping[str, Any] | None = None
    dir_blocks: tuple[str, ...] | None = None
    cid_version: int | None = None
    cid_profile: str | None = None
    object_index: Mapping[str, Any] | None = None
    hamt_shards: Mapping[str, Any] | None = None

    @property
    def profile(self) -> DagFacts:
        """Its CID version and profile, to compare with the state's."""
        return DagFacts(cid_version=self.cid_version, cid_profile=self.cid_profile)


@dataclass(frozen=True)
class NodeExtra:
    """``extra`` of a node target's state.

    Attributes:
        dag: the DAG facts.
        source: ``source``, the local dataset directory published (``status``).
        node: ``node``, the node's kind (``kubo``...).
        pending: ``pending``, the checkpoint of an unfinished publish.
        hamt_shards: ``hamtShards``, the HAMT shard tables of the top directories (as
            ``car:``'s; read by :func:`.dataset_dag.reusable_shards`).
        object_index: ``objectIndex``, where the per-object links are: packs in the
            state's ``<state>.index`` directory (:class:`.object_index.ObjectIndex`;
            absent, as written by older versions: the core's ``objects`` map).
    """

    dag: DagFacts = DagFacts()
    source: str | None = None
    node: str | None = None
    pending: NodePending | None = None
    hamt_shards: Mapping[str, Any] | None = None
    object_index: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class NodeState:
    """What a node target's state says beyond the core's head, locator and objects."""

    record: IpnsFacts
    extra: NodeExtra


def _parse_pending(raw: Mapping[str, Any], where: str) -> NodePending | None:
    pending = json_object(raw, "pending", where, "extra")
    if pending is None:
        return None
    p = "extra.pending"
    root = opt_field(pending, "root", str, where, p)
    if not root:
        raise malformed(where, p, "root", "a CID")
    return NodePending(
        root=root,
        head=opt_field(pending, "head", str, where, p),
        objects=json_object(pending, "objects", where, p),
        dir_blocks=hex_list(pending, "dirBlocks", where, p),
        cid_version=opt_field(pending, "cidVersion", int, where, p),
        cid_profile=opt_field(pending, "cidProfile", str, where, p),
        object_index=json_object(pending, "objectIndex", where, p),
        hamt_shards=json_object(pending, "hamtShards", where, p),
    )


def _serialize_pending(pending: NodePending) -> dict[str, Any]:
    return present(
        {
            "root": pending.root,
            "head": pending.head,
            "objects": pending.objects,
            "dirBlocks": list(pending.dir_blocks) if pending.dir_blocks is not None else None,
            "cidVersion": pending.cid_version,
            "cidProfile": pending.cid_profile,
            "objectIndex": pending.object_index,
            "hamtShards": pending.hamt_shards,
        }
    )


def parse_node_extra(raw: Mapping[str, Any], where: str) -> NodeExtra:
    """``extra`` of a node target as :class:`NodeExtra`."""
    p = "extra"
    return NodeExtra(
        dag=parse_dag_facts(raw, where),
        source=opt_field(raw, "source", str, where, p),
        node=opt_field(raw, "node", str, where, p),
        pending=_parse_pending(raw, where),
        hamt_shards=json_object(raw, "hamtShards", where, p),
        object_index=json_object(raw, "objectIndex", where, p),
    )


def serialize_node_extra(extra: NodeExtra) -> dict[str, Any]:
    """JSON form of :class:`NodeExtra`."""
    pending = _serialize_pending(extra.pending) if extra.pending is not None else None
    out = serialize_dag_facts(extra.dag) | present(
        {
            "source": extra.source,
            "node": extra.node,
            "pending": pending,
            "hamtShards": extra.hamt_shards,
            "objectIndex": extra.object_index,
        }
    )
    return out


def parse_node_state(state: PublishState, where: str) -> NodeState:
    """The typed ``record`` and ``extra`` of a node target's state read from ``where``."""
    return NodeState(parse_ipns_facts(state.record, where), parse_node_extra(state.extra, where))


def serialize_node_state(node: NodeState) -> StateParts:
    """``record`` and ``extra`` of :class:`NodeState` for a :class:`PublishState`."""
    return StateParts(
        record=serialize_ipns_facts(node.record), extra=serialize_node_extra(node.extra)
    )


# -- a pinning service -----------------------------------------------------------------------


@dataclass(frozen=True)
class PinExtra:
    """``extra`` of a ``pinning:NAME`` state: the service's pin of the last root.

    Attributes:
        endpoint: the service's endpoint URL.
        requestid: the pin's request ID at the service.
        status: its last status (``queued``, ``pinning``, ``pinned``, ``failed``).
        node: the target that published the root (``ipfs:…`` or ``car:…``).
    """

    endpoint: str | None = None
    requestid: str | None = None
    status: str | None = None
    node: str | None = None


@dataclass(frozen=True)
class PinState:
    """A pinning service's state: the IPNS name (``record.name``) and the pin."""

    record: IpnsFacts
    extra: PinExtra


def parse_pin_state(state: PublishState, where: str) -> PinState:
    """The typed ``record`` and ``extra`` of a ``pinning:NAME`` state."""
    p = "extra"
    raw = state.extra
    return PinState(
        parse_ipns_facts(state.record, where),
        PinExtra(
            endpoint=opt_field(raw, "endpoint", str, where, p),
            requestid=opt_field(raw, "requestid", str, where, p),
            status=opt_field(raw, "status", str, where, p),
            node=opt_field(raw, "node", str, where, p),
        ),
    )


def serialize_pin_state(pin: PinState) -> StateParts:
    """``record`` and ``extra`` of :class:`PinState` for a :class:`PublishState`."""
    x = pin.extra
    return StateParts(
        record=serialize_ipns_facts(pin.record),
        extra=present(
            {"endpoint": x.endpoint, "requestid": x.requestid, "status": x.status, "node": x.node}
        ),
    )


# -- the typed states the targets hold from inspect to save --------------------------------


class DagExtra(Protocol):
    """What the IPFS builds read of a ``car:`` or node target's ``extra``
    (:class:`CarExtra`, :class:`NodeExtra`): how its CIDs were made, its HAMT shard tables."""

    @property
    def dag(self) -> DagFacts: ...

    @property
    def hamt_shards(self) -> Mapping[str, Any] | None: ...


X = TypeVar("X", bound=DagExtra)
IpfsTyped = PublishState[IpnsFacts, X]
"""A ``car:`` or node target's typed state (its ``extra``: :class:`CarExtra` or
:class:`NodeExtra`)."""
IpfsView = RemoteView[IpnsFacts, X]

CarTyped = PublishState[IpnsFacts, CarExtra]
CarView = RemoteView[IpnsFacts, CarExtra]
NodeTyped = PublishState[IpnsFacts, NodeExtra]
NodeView = RemoteView[IpnsFacts, NodeExtra]
PinTyped = PublishState[IpnsFacts, PinExtra]


def _car_parts(
    record: Mapping[str, Any], extra: Mapping[str, Any], where: str
) -> tuple[IpnsFacts, CarExtra]:
    return parse_ipns_facts(record, where), parse_car_extra(extra, where)


def _car_json(record: IpnsFacts, extra: CarExtra) -> tuple[JSONMap, JSONMap]:
    return serialize_ipns_facts(record), serialize_car_extra(extra)


def _node_parts(
    record: Mapping[str, Any], extra: Mapping[str, Any], where: str
) -> tuple[IpnsFacts, NodeExtra]:
    return parse_ipns_facts(record, where), parse_node_extra(extra, where)


def _node_json(record: IpnsFacts, extra: NodeExtra) -> tuple[JSONMap, JSONMap]:
    return serialize_ipns_facts(record), serialize_node_extra(extra)


def _pin_parts(
    record: Mapping[str, Any], extra: Mapping[str, Any], where: str
) -> tuple[IpnsFacts, PinExtra]:
    typed = parse_pin_state(PublishState("", "", record=dict(record), extra=dict(extra)), where)
    return typed.record, typed.extra


def _pin_json(record: IpnsFacts, extra: PinExtra) -> tuple[JSONMap, JSONMap]:
    parts = serialize_pin_state(PinState(record, extra))
    return parts["record"], parts["extra"]


CAR_CODEC: StateCodec[IpnsFacts, CarExtra] = StateCodec(_car_parts, _car_json)
"""``car:DIR``'s typed state: parsed once where ``publish.json`` is read, serialized once
where it is written."""
NODE_CODEC: StateCodec[IpnsFacts, NodeExtra] = StateCodec(_node_parts, _node_json)
"""A Kubo node target's typed state, likewise for its private state file."""
PIN_CODEC: StateCodec[IpnsFacts, PinExtra] = StateCodec(_pin_parts, _pin_json)
"""A pinning service's typed state (``pinning:NAME``)."""
