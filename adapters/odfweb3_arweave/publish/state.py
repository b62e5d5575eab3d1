"""Typed publish state of the Arweave targets: pure parse / serialize pairs.

``bundle:DIR`` (its ``publish.json``) and the gateway target (``arweave:…``, its state file)
keep one kind of state, since both publish through :mod:`.publish_bundle`:

- :class:`UploadFacts`: ``record``, the last upload (record item id, manifest, previous
  upload, time; the bundle file or the L1 transaction); ``extra`` repeats the upload part
  under the same keys (:attr:`ArweaveExtra.upload`);
- :class:`ArweaveExtra`: the drive ids, the owner, the bundles written (``bundle:``) or the
  uploads posted (gateway, :class:`UploadEntry`), the manifest chain (:class:`ManifestChain`),
  encryption, the descriptor item and the inputs map;
- :class:`ArweaveState`: both, read from one file.

A field of the wrong type is one :class:`~odfweb3.errors.FormatError` naming the file; a
field absent on disk is ``None`` and stays absent when written, except ``prevUpload``,
written with ``recordId`` (null for a first upload), ``keyEnvelope``, written with
``encrypted``, and the manifest chain, whose
``fullManifestId`` is null when rebuilt state found no full manifest. ``serialize(parse(x))
== x`` for every state odfweb3 writes: the JSON is byte-identical to what the
``dict[str, Any]`` code wrote. ``objects`` stays the core's map (path ->
:class:`.bundle_plan.FileRef` JSON, parsed by :func:`.publish_bundle.previous_from_state`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from odfweb3.publish.state import JSONMap, PublishState, StateCodec
from odfweb3.publish.state_fields import (
    json_object,
    malformed,
    opt_field,
    present,
    str_list,
    str_map,
)
from odfweb3_arweave.formats.arfs import DriveLayout
from odfweb3_arweave.formats.record import MAX_SKIP_CHAIN, AddedFile, SkipLink
from odfweb3_arweave.publish.bundle_plan import Tier

__all__ = [
    "ARWEAVE_CODEC",
    "ArweaveExtra",
    "ArweaveState",
    "ArweaveTyped",
    "ManifestChain",
    "StateParts",
    "UploadEntry",
    "UploadFacts",
    "parse_arweave_extra",
    "parse_arweave_state",
    "parse_upload_facts",
    "serialize_arweave_extra",
    "serialize_arweave_state",
    "serialize_upload_facts",
]


_DIGEST = re.compile(r"[0-9a-f]{64}")


class StateParts(TypedDict):
    """The ``record`` and ``extra`` maps of a :class:`PublishState` (``PublishState(**parts)``
    or ``state.evolve(**parts)``)."""

    record: dict[str, Any]
    extra: dict[str, Any]


@dataclass(frozen=True)
class UploadFacts:
    """One upload: ``record`` of the state (and the upload part of ``extra``).

    Attributes:
        record_id: ``recordId``, the upload record's data item id (``ar://RECORD``).
        prev_upload: ``prevUpload``, the record it replaces (None: the first upload).
        unix_time: ``unixTime``, the upload's time.
        manifest_id: ``manifestId``, its path manifest (``record`` only).
        bundle: ``bundle``, the bundle file in ``OUT_DIR`` (``bundle:``).
        bundle_bytes: ``bundleBytes``, its size.
        bundle_items: ``bundleItems``, its data items (``extra`` only).
        bundle_tx_id: ``bundleTxId``, the L1 transaction carrying it (gateway).
        reward: ``reward``, the fee paid, in winston (gateway).
        status: ``status``, ``pending`` or ``confirmed`` (gateway ``record``).
    """

    record_id: str
    prev_upload: str | None = None
    unix_time: int | None = None
    manifest_id: str | None = None
    bundle: str | None = None
    bundle_bytes: int | None = None
    bundle_items: int | None = None
    bundle_tx_id: str | None = None
    reward: int | None = None
    status: str | None = None


def parse_upload_facts(raw: Mapping[str, Any], where: str, part: str) -> UploadFacts | None:
    """The :class:`UploadFacts` in ``raw`` (``record`` or ``extra``); None without
    ``recordId``."""
    record_id = opt_field(raw, "recordId", str, where, part)
    if record_id is None:
        return None
    return UploadFacts(
        record_id=record_id,
        prev_upload=opt_field(raw, "prevUpload", str, where, part),
        unix_time=opt_field(raw, "unixTime", int, where, part),
        manifest_id=opt_field(raw, "manifestId", str, where, part),
        bundle=opt_field(raw, "bundle", str, where, part),
        bundle_bytes=opt_field(raw, "bundleBytes", int, where, part),
        bundle_items=opt_field(raw, "bundleItems", int, where, part),
        bundle_tx_id=opt_field(raw, "bundleTxId", str, where, part),
        reward=opt_field(raw, "reward", int, where, part),
        status=opt_field(raw, "status", str, where, part),
    )


def serialize_upload_facts(facts: UploadFacts | None) -> dict[str, Any]:
    """JSON form of :class:`UploadFacts` (``prevUpload`` always, null for a first upload)."""
    if facts is None:
        return {}
    return {"recordId": facts.record_id, "prevUpload": facts.prev_upload} | present(
        {
            "unixTime": facts.unix_time,
            "manifestId": facts.manifest_id,
            "bundle": facts.bundle,
            "bundleBytes": facts.bundle_bytes,
            "bundleItems": facts.bundle_items,
            "bundleTxId": facts.bundle_tx_id,
            "reward": facts.reward,
            "status": facts.status,
        }
    )


@dataclass(frozen=True)
class UploadEntry:
    """One entry of ``extra.uploads`` (gateway): an upload of this dataset by this wallet.

    Attributes:
        record_id: ``recordId``.
        head: ``head``, the head it published.
        manifest_id: ``manifestId``.
        bundle_tx_id: ``bundleTxId``, the L1 transaction (uploads posted from here).
    """

    record_id: str
    head: str | None = None
    manifest_id: str | None = None
    bundle_tx_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        """JSON form (absent fields stay absent)."""
        return present(
            {
                "recordId": self.record_id,
                "head": self.head,
                "manifestId": self.manifest_id,
                "bundleTxId": self.bundle_tx_id,
            }
        )


@dataclass(frozen=True)
class ManifestChain:
    """``fullManifestId`` and ``deltaUploads``: the last full path manifest
    (None: none known, the next manifest is full) and the delta uploads since it; ``tiers``:
    the records' binary counter after the last upload, newest first (None: unknown, state
    written before tiers or rebuilt from records without them; :func:`.bundle_plan.plan_tier`),
    each tier's files in its tier file (:mod:`.tier_files`)."""

    full_manifest_id: str | None
    deltas: int
    tiers: tuple[Tier, ...] | None = None


@dataclass(frozen=True)
class ArweaveExtra:
    """``extra`` of an Arweave target's state.

    Attributes:
        upload: the last upload's facts (the keys of :class:`UploadFacts`; None in state
            rebuilt from the network).
        drive: ``drive``, the drive's stable ids.
        owner: ``owner``, the wallet address that signed the uploads.
        bundles: ``bundles``, the bundle files in ``OUT_DIR``, oldest first (``bundle:``).
        uploads: ``uploads``, the uploads not known final yet, oldest first (gateway): an
            upload is folded away once the gateway shows the last one in a block or the
            bundler said FINALIZED (the tiered records name every earlier one).
        folded: ``folded``, how many uploads were folded away so far.
        rebuilt: ``rebuilt``, true when the state was rebuilt from the network.
        manifests: the manifest chain (None in state written before delta manifests: the
            locator is then a full manifest).
        encrypted: ``encrypted`` (written only as true).
        key_epoch: ``keyEpoch`` of the sealer.
        key_envelope: ``keyEnvelope``, the key envelope's data item id.
        descriptor_id: ``descriptorId``, the discovery descriptor's data item id.
        croissant_id / dcat_id: ``croissantId`` / ``dcatId``, the data items of the Croissant
            and DCAT documents of the last upload that wrote them
            (:mod:`odfweb3.descriptor.published`).
        inputs: ``inputs``, dataset ID -> ``ar://RECORD``.
        race_check: ``raceCheck``, ``won`` or ``unsettled`` (gateway).
        object_index: ``objectIndex``, where the per-path file revisions are
            (``bundle:``, :class:`.file_index.FileIndex`; absent: the core's ``objects``
            map, as written before the file index and by the gateway target).
        bundler: ``bundler``, the Arweave address a Turbo bundler signed the receipts with
            (``turbo:``; pinned: the next upload refuses another key).
        receipts: ``receipts``, data item id -> the bundler's signed receipt of the last
            upload's items (``turbo:``; :mod:`odfweb3_arweave.formats.receipt`): the proof
            of upload, checked on every load.
    """

    upload: UploadFacts | None = None
    drive: DriveLayout | None = None
    owner: str | None = None
    bundles: tuple[str, ...] | None = None
    uploads: tuple[UploadEntry, ...] | None = None
    folded: int | None = None
    rebuilt: bool | None = None
    manifests: ManifestChain | None = None
    encrypted: bool | None = None
    key_epoch: int | None = None
    key_envelope: str | None = None
    descriptor_id: str | None = None
    inputs: Mapping[str, str] | None = None
    race_check: str | None = None
    object_index: Mapping[str, Any] | None = None
    bundler: str | None = None
    receipts: Mapping[str, Mapping[str, Any]] | None = None
    croissant_id: str | None = None
    dcat_id: str | None = None


@dataclass(frozen=True)
class ArweaveState:
    """What an Arweave target's state says beyond the core's head, locator and objects."""

    record: UploadFacts | None
    extra: ArweaveExtra


def _uploads(raw: Mapping[str, Any], where: str) -> tuple[UploadEntry, ...] | None:
    value = raw.get("uploads")
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(u, dict) for u in value):
        raise malformed(where, "extra", "uploads", "a list of JSON objects")
    out = []
    for u in value:
        record_id = opt_field(u, "recordId", str, where, "extra.uploads")
        if record_id is None:
            raise malformed(where, "extra.uploads", "recordId", "a data item id")
        out.append(
            UploadEntry(
                record_id=record_id,
                head=opt_field(u, "head", str, where, "extra.uploads"),
                manifest_id=opt_field(u, "manifestId", str, where, "extra.uploads"),
                bundle_tx_id=opt_field(u, "bundleTxId", str, where, "extra.uploads"),
            )
        )
    return tuple(out)


def _manifests(raw: Mapping[str, Any], where: str) -> ManifestChain | None:
    if "fullManifestId" not in raw and "deltaUploads" not in raw:
        return None
    full = opt_field(raw, "fullManifestId", str, where, "extra")
    deltas = opt_field(raw, "deltaUploads", int, where, "extra")
    if deltas is not None and deltas < 0:
        raise malformed(where, "extra", "deltaUploads", "a count")
    return ManifestChain(full, deltas or 0, _tiers(raw.get("tiers"), where))


def _tiers(raw: object, where: str) -> tuple[Tier, ...] | None:
    """``extra.tiers``: ``[[recordId, head, deltaUploads, spanUploads, files], ...]``, where
    files is the SHA-256 of the tier's file (:mod:`.tier_files`) or, written before tier
    files and in a state not saved yet, ``{path: added}`` (as in an upload record's body)."""
    if raw is None:
        return None
    what = "a list of [record id, head, delta uploads, span uploads, files]"
    if not isinstance(raw, list) or len(raw) > MAX_SKIP_CHAIN + 1:
        raise malformed(where, "extra", "tiers", what)
    out: list[Tier] = []
    for entry in raw:
        if not (
            isinstance(entry, list)
            and len(entry) == 5
            and isinstance(entry[0], str)
            and isinstance(entry[1], str)
            and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in entry[2:4])
            and (
                (isinstance(entry[4], str) and _DIGEST.fullmatch(entry[4]) is not None)
                or (
                    isinstance(entry[4], dict)
                    and all(
                        isinstance(v, dict)
                        and all(
                            isinstance(v.get(k), str)
                            for k in ("dataItemId", "metaItemId", "fileId")
                        )
                        for v in entry[4].values()
                    )
                )
            )
        ):
            raise malformed(where, "extra", "tiers", what)
        link = SkipLink(entry[0], entry[1], entry[2])
        if isinstance(entry[4], str):
            out.append(Tier(link, entry[3], None, entry[4]))
            continue
        files = tuple(
            (str(path), AddedFile(v["dataItemId"], v["metaItemId"], v["fileId"]))
            for path, v in entry[4].items()
        )
        out.append(Tier(link, entry[3], files))
    return tuple(out)


def _tiers_json(tiers: tuple[Tier, ...] | None) -> dict[str, Any]:
    if tiers is None:
        return {}
    return {
        "tiers": [
            [
                t.link.record_id,
                t.link.head,
                t.link.deltas,
                t.uploads,
                t.digest if t.digest is not None else {p: a.to_json() for p, a in t.files or ()},
            ]
            for t in tiers
        ]
    }


def _receipts(raw: Mapping[str, Any], where: str) -> dict[str, Mapping[str, Any]] | None:
    value = raw.get("receipts")
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, dict) for k, v in value.items()
    ):
        raise malformed(where, "extra", "receipts", "a map of item id to receipt")
    return dict(value)


def parse_arweave_extra(raw: Mapping[str, Any], where: str) -> ArweaveExtra:
    """``extra`` of an Arweave target as :class:`ArweaveExtra`."""
    p = "extra"
    drive = raw.get("drive")
    return ArweaveExtra(
        upload=parse_upload_facts(raw, where, p),
        drive=DriveLayout.from_json(drive, f"{where}: drive") if drive is not None else None,
        owner=opt_field(raw, "owner", str, where, p),
        bundles=str_list(raw, "bundles", where, p),
        uploads=_uploads(raw, where),
        folded=opt_field(raw, "folded", int, where, p),
        rebuilt=opt_field(raw, "rebuilt", bool, where, p),
        manifests=_manifests(raw, where),
        encrypted=opt_field(raw, "encrypted", bool, where, p),
        key_epoch=opt_field(raw, "keyEpoch", int, where, p),
        key_envelope=opt_field(raw, "keyEnvelope", str, where, p),
        descriptor_id=opt_field(raw, "descriptorId", str, where, p),
        inputs=str_map(raw, "inputs", where, p),
        race_check=opt_field(raw, "raceCheck", str, where, p),
        object_index=json_object(raw, "objectIndex", where, p),
        bundler=opt_field(raw, "bundler", str, where, p),
        receipts=_receipts(raw, where),
        croissant_id=opt_field(raw, "croissantId", str, where, p),
        dcat_id=opt_field(raw, "dcatId", str, where, p),
    )


def serialize_arweave_extra(extra: ArweaveExtra) -> dict[str, Any]:
    """JSON form of :class:`ArweaveExtra`."""
    chain = extra.manifests
    return (
        serialize_upload_facts(extra.upload)
        | present(
            {
                "drive": extra.drive.to_json() if extra.drive is not None else None,
                "owner": extra.owner,
                "bundles": list(extra.bundles) if extra.bundles is not None else None,
                "uploads": [u.to_json() for u in extra.uploads]
                if extra.uploads is not None
                else None,
                "folded": extra.folded,
                "rebuilt": extra.rebuilt,
                "encrypted": extra.encrypted,
                "keyEpoch": extra.key_epoch,
                "descriptorId": extra.descriptor_id,
                "croissantId": extra.croissant_id,
                "dcatId": extra.dcat_id,
                "inputs": dict(extra.inputs) if extra.inputs is not None else None,
                "raceCheck": extra.race_check,
                "objectIndex": extra.object_index,
                "bundler": extra.bundler,
                "receipts": {k: dict(v) for k, v in extra.receipts.items()}
                if extra.receipts is not None
                else None,
            }
        )
        # An encrypted upload names its key envelope (null when unknown).
        | ({"keyEnvelope": extra.key_envelope} if extra.encrypted else {})
        | present({"keyEnvelope": extra.key_envelope})
        | (
            {"fullManifestId": chain.full_manifest_id, "deltaUploads": chain.deltas}
            | _tiers_json(chain.tiers)
            if chain is not None
            else {}
        )
    )


def parse_arweave_state(state: PublishState, where: str) -> ArweaveState:
    """The typed ``record`` and ``extra`` of an Arweave state read from ``where``."""
    return ArweaveState(
        parse_upload_facts(state.record, where, "record"), parse_arweave_extra(state.extra, where)
    )


def serialize_arweave_state(typed: ArweaveState) -> StateParts:
    """``record`` and ``extra`` of :class:`ArweaveState` for a :class:`PublishState`."""
    return StateParts(
        record=serialize_upload_facts(typed.record), extra=serialize_arweave_extra(typed.extra)
    )


def _parse_parts(
    record: Mapping[str, Any], extra: Mapping[str, Any], where: str
) -> tuple[UploadFacts | None, ArweaveExtra]:
    return parse_upload_facts(record, where, "record"), parse_arweave_extra(extra, where)


def _serialize_parts(record: UploadFacts | None, extra: ArweaveExtra) -> tuple[JSONMap, JSONMap]:
    return serialize_upload_facts(record), serialize_arweave_extra(extra)


ARWEAVE_CODEC: StateCodec[UploadFacts | None, ArweaveExtra] = StateCodec(
    _parse_parts, _serialize_parts
)
"""The Arweave targets' typed state (``bundle:DIR``, the gateway, Turbo): parsed once where
their state home reads the file, serialized once where it writes it."""

ArweaveTyped = PublishState[UploadFacts | None, ArweaveExtra]
"""An Arweave target's state as it holds it from ``inspect`` to ``save``."""
