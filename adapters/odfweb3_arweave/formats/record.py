"""The upload record: the last item of every odfweb3 bundle, naming what the upload made.

One record per publish. Its tags let a reader find the latest upload of a dataset with
one GraphQL query (owner + ``ODF-Dataset-Id``, newest first) and walk back through
earlier uploads by ``ODF-Prev-Upload``; items from other owners are ignored (docs/design.md,
"Arweave mapping"). Tags, in this order:

==================  ==========================================================
``App-Name``        ``odfweb3``
``App-Version``     the odfweb3 version that wrote it
``Content-Type``    ``application/json``
``ODF-Dataset-Id``  ``did:odf:…``
``ODF-Head``        the head block hash (multibase, as in ``refs/head``)
``ODF-Prev-Head``   the head of the previous upload (absent on the first)
``ODF-Prev-Upload`` the previous upload's record item id (absent on the first)
``ODF-Manifest``    the path manifest item id (see ``ODF-Full-Manifest`` below)
``Unix-Time``       seconds since the epoch
==================  ==========================================================

``ODF-Full-Manifest`` (between ``ODF-Manifest`` and ``Unix-Time``) is on an upload whose
manifest is a *delta* only: the id of the last full manifest. Without it,
``ODF-Manifest`` maps every path of the dataset at ``ODF-Head``. After it, a delta upload
written since the command network budget existed carries ``ODF-Delta-Uploads``: how many
delta uploads there are since that full manifest, this one included (1 for the first delta).
A reader knows from the latest record alone how far back it must walk, refuses a count over
:data:`~odfweb3_arweave.formats.manifest.MAX_DELTA_UPLOADS` before asking for anything else,
and checks the count at every link (:func:`check_delta_link`), so a record cannot make the
walk longer than it says.
A delta upload's manifest maps only the paths it added (its ``added`` keys); a reader
finds older paths in the manifests of earlier uploads (``ODF-Prev-Upload``) back to the
first one without ``ODF-Full-Manifest``, whose manifest maps every path up to it
(docs/arweave.md, section 9). Old uploads have no such tag: their manifests are full.

The body (JSON, sorted keys) repeats these and lists what the upload added: for each
path its data item, ArFS metadata item and ArFS ``File-Id``; and the drive's ids, so
publish state can be rebuilt from the network alone. :func:`decode_record` checks that
tags and body agree. An encrypted upload's body also names its key envelope item
(``keyEnvelope``: a data item of the same bundle tagged ``ODF-Key-Envelope: 1``; docs/design.md,
"Encryption"); plain uploads' bodies have no such key.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from odfweb3.errors import FormatError, ResolutionError
from odfweb3.foreign_json import load_foreign_json
from odfweb3.odf.identity import DatasetId
from odfweb3.odf.multihash import multihash_from_str
from odfweb3_arweave.formats.arfs import (
    APP_NAME,
    JSON_CONTENT_TYPE,
    DriveLayout,
    is_uuid,
    tag_value,
)
from odfweb3_arweave.formats.manifest import FULL_MANIFEST_TAG, check_manifest_path, in_path_order
from odfweb3_arweave.formats.tags import Tag

__all__ = [
    "DELTA_UPLOADS_TAG",
    "MAX_SKIP_CHAIN",
    "RECORD_FORMAT",
    "AddedFile",
    "RecordTags",
    "SkipLink",
    "UploadRecord",
    "check_delta_link",
    "decode_record",
    "encode_record",
    "encode_record_chunks",
    "inputs_to_record",
    "parse_added_files",
    "parse_record_tags",
    "record_tags",
]

RECORD_FORMAT: Final = "odfweb3/upload-record/1"
DELTA_UPLOADS_TAG: Final = "ODF-Delta-Uploads"
# What decode_record parses at most (readers fetch at most this much too).
MAX_RECORD_BODY: Final = 64 << 20
_ID = re.compile(r"[A-Za-z0-9_-]{43}")
# The longest skipChain read: a binary counter of 10,000 uploads has at most 14 set bits, and
# a chain continued from records without tiers adds one; anything longer is not ours.
MAX_SKIP_CHAIN: Final = 64


def _item_id(value: object, where: str) -> str:
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise FormatError(f"{where}: not a 43-character base64url item id")
    return value


def _head(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise FormatError(f"{where}: not a multibase hash")
    try:
        multihash_from_str(value)
    except FormatError as exc:
        raise FormatError(f"{where}: {exc}") from None
    return value


def _dataset_id(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise FormatError(f"{where}: not a did:odf dataset id")
    try:
        DatasetId.parse(value)
    except (FormatError, ValueError) as exc:
        raise FormatError(f"{where}: {exc}") from None
    return value


@dataclass(frozen=True)
class RecordTags:
    """What a record's tags say (all a GraphQL query returns without fetching data)."""

    dataset_id: str
    head: str
    prev_head: str | None
    prev_upload: str | None
    manifest_id: str
    unix_time: int
    app_version: str
    full_manifest: str | None = None
    delta_uploads: int | None = None

    @property
    def delta(self) -> bool:
        """Whether the upload's manifest holds only the paths it added."""
        return self.full_manifest is not None


@dataclass(frozen=True, slots=True)
class AddedFile:
    """One file entity revision an upload added.

    Attributes:
        data_item_id: the data item holding the object's bytes.
        meta_item_id: its ArFS metadata item.
        file_id: the ArFS ``File-Id`` (stable across revisions).
    """

    data_item_id: str
    meta_item_id: str
    file_id: str

    def to_json(self) -> dict[str, str]:
        """JSON form."""
        return {
            "dataItemId": self.data_item_id,
            "fileId": self.file_id,
            "metaItemId": self.meta_item_id,
        }


@dataclass(frozen=True)
class SkipLink:
    """One ``skipChain`` entry: an earlier upload a reader jumps to (module docstring).

    Attributes:
        record_id: that upload's record item id.
        head: its ``ODF-Head``.
        deltas: its delta uploads since the full manifest (0: the full upload itself).
    """

    record_id: str
    head: str
    deltas: int

    def to_json(self) -> list[Any]:
        """JSON form: ``[recordId, head, deltas]``."""
        return [self.record_id, self.head, self.deltas]


@dataclass(frozen=True)
class UploadRecord:
    """An upload record (see the module docstring).

    Attributes:
        dataset_id: ``did:odf:…``.
        head: the published head (multibase text).
        prev_head: the previous upload's head, if any.
        prev_upload: the previous upload's record item id, if any.
        manifest_id: the path manifest item id.
        drive: the ArFS drive's ids.
        added: path -> the file revision this upload added (new objects and ``refs/head``).
        unix_time: seconds since the epoch.
        app_version: odfweb3 version.
        key_envelope: the key envelope item id of an encrypted upload.
        inputs: where each input of a derivative lives (dataset ID -> ``ar://RECORD``),
            written by ``publish --with-inputs``; absent from plain records.
        full_manifest: on a delta upload (its manifest maps only ``added``), the id of the
            last full manifest; None: ``manifest_id`` maps every path.
        delta_uploads: on a delta upload, the delta uploads since that full manifest, this
            one included (None: a full upload, or a delta written before the count existed).
        span_uploads: a tiered delta upload's ``spanUploads`` (None: no tier).
        earlier: what the ``span_uploads - 1`` uploads before it added (empty without a tier).
        skip_chain: where a reader jumps next, and after that (empty without a tier).
    """

    dataset_id: str
    head: str
    prev_head: str | None
    prev_upload: str | None
    manifest_id: str
    drive: DriveLayout
    added: Mapping[str, AddedFile]
    unix_time: int
    app_version: str
    key_envelope: str | None = None
    inputs: Mapping[str, str] | None = None
    full_manifest: str | None = None
    delta_uploads: int | None = None
    span_uploads: int | None = None
    earlier: Mapping[str, AddedFile] = field(default_factory=dict)
    skip_chain: tuple[SkipLink, ...] = ()

    @property
    def delta(self) -> bool:
        """Whether the upload's manifest holds only the paths it added."""
        return self.full_manifest is not None

    @property
    def tags_view(self) -> RecordTags:
        """The facts carried by the tags."""
        return RecordTags(
            self.dataset_id,
            self.head,
            self.prev_head,
            self.prev_upload,
            self.manifest_id,
            self.unix_time,
            self.app_version,
            self.full_manifest,
            self.delta_uploads,
        )


def record_tags(record: UploadRecord) -> tuple[Tag, ...]:
    """The record item's tags, in the documented order."""
    tags = [
        Tag.of("App-Name", APP_NAME),
        Tag.of("App-Version", record.app_version),
        Tag.of("Content-Type", JSON_CONTENT_TYPE),
        Tag.of("ODF-Dataset-Id", record.dataset_id),
        Tag.of("ODF-Head", record.head),
    ]
    if record.prev_head is not None:
        tags.append(Tag.of("ODF-Prev-Head", record.prev_head))
    if record.prev_upload is not None:
        tags.append(Tag.of("ODF-Prev-Upload", record.prev_upload))
    tags.append(Tag.of("ODF-Manifest", record.manifest_id))
    if record.full_manifest is not None:
        tags.append(Tag.of(FULL_MANIFEST_TAG, record.full_manifest))
        if record.delta_uploads is not None:
            tags.append(Tag.of(DELTA_UPLOADS_TAG, str(record.delta_uploads)))
    tags.append(Tag.of("Unix-Time", str(record.unix_time)))
    return tuple(tags)


def encode_record(record: UploadRecord) -> bytes:
    """The record item's JSON body (deterministic: sorted keys, compact, ASCII)."""
    return b"".join(encode_record_chunks(record))


# Pieces of about this many bytes from encode_record_chunks.
_PIECE_BYTES: Final = 1 << 20


def encode_record_chunks(record: UploadRecord) -> Iterator[bytes]:
    """:func:`encode_record`'s bytes in pieces of about 1 MiB, ``added`` (a first upload's
    lists every path: ~0.5 KB an object as text, more as the dicts ``json`` is given)
    encoded an entry at a time: the same bytes (an object under these separators is ``{``
    + its sorted ``"key":value`` pairs joined by ``,`` + ``}``)."""
    # "added" is written as a token string no record holds, then replaced by its entries.
    token = secrets.token_hex(16)
    head, tail = _record_text(record, token).split(f'"{token}"')
    piece = [head, "{"]
    size = len(head)
    # The sorted paths, each entry made as it is encoded: no list of every (path, entry).
    for n, path in enumerate(in_path_order(record.added)):
        entry = json.dumps(path) + ":" + json.dumps(record.added[path].to_json(), **_COMPACT)
        piece.append("," + entry if n else entry)
        size += len(entry) + 1
        if size >= _PIECE_BYTES:
            yield "".join(piece).encode("ascii")
            piece, size = [], 0
    piece += ["}", tail]
    yield "".join(piece).encode("ascii")


_COMPACT: Final[dict[str, Any]] = {"sort_keys": True, "separators": (",", ":")}


def _record_text(record: UploadRecord, added: str) -> str:
    doc: dict[str, Any] = {
        "format": RECORD_FORMAT,
        "datasetId": record.dataset_id,
        "head": record.head,
        "prevHead": record.prev_head,
        "prevUpload": record.prev_upload,
        "manifestId": record.manifest_id,
        "drive": record.drive.to_json(),
        "added": added,
        "unixTime": record.unix_time,
    }
    if record.key_envelope is not None:
        doc["keyEnvelope"] = record.key_envelope
    if record.inputs is not None:
        doc["inputs"] = dict(sorted(record.inputs.items()))
    if record.full_manifest is not None:
        doc["fullManifestId"] = record.full_manifest
        if record.delta_uploads is not None:
            doc["deltaUploads"] = record.delta_uploads
        if record.span_uploads is not None:
            doc["spanUploads"] = record.span_uploads
            doc["earlier"] = {p: a.to_json() for p, a in sorted(record.earlier.items())}
            doc["skipChain"] = [link.to_json() for link in record.skip_chain]
    return json.dumps(doc, **_COMPACT)


def parse_record_tags(tags: Sequence[Tag], where: str = "upload record") -> RecordTags:
    """Read and check a record's tags (e.g. from a GraphQL result).

    Raises:
        FormatError: not an odfweb3 record, or a tag missing or malformed.
    """
    if tag_value(tags, "App-Name") != APP_NAME:
        raise FormatError(f"{where}: App-Name is not {APP_NAME}")
    dataset_id = _dataset_id(tag_value(tags, "ODF-Dataset-Id"), f"{where}: ODF-Dataset-Id")
    head = _head(tag_value(tags, "ODF-Head"), f"{where}: ODF-Head")
    raw_prev_head = tag_value(tags, "ODF-Prev-Head")
    prev_head = _head(raw_prev_head, f"{where}: ODF-Prev-Head") if raw_prev_head else None
    raw_prev = tag_value(tags, "ODF-Prev-Upload")
    prev_upload = _item_id(raw_prev, f"{where}: ODF-Prev-Upload") if raw_prev else None
    manifest_id = _item_id(tag_value(tags, "ODF-Manifest"), f"{where}: ODF-Manifest")
    raw_full = tag_value(tags, FULL_MANIFEST_TAG)
    full = _item_id(raw_full, f"{where}: {FULL_MANIFEST_TAG}") if raw_full is not None else None
    raw_count = tag_value(tags, DELTA_UPLOADS_TAG)
    count = None
    if raw_count is not None:
        if full is None or not raw_count.isdigit() or len(raw_count) > 9 or int(raw_count) < 1:
            raise FormatError(
                f"{where}: {DELTA_UPLOADS_TAG} is not a count of delta uploads (1 or more, on "
                f"a record with {FULL_MANIFEST_TAG})"
            )
        count = int(raw_count)
    unix = tag_value(tags, "Unix-Time") or ""
    if not unix.isdigit() or len(unix) > 12:
        raise FormatError(f"{where}: Unix-Time is not a number of seconds")
    return RecordTags(
        dataset_id,
        head,
        prev_head,
        prev_upload,
        manifest_id,
        int(unix),
        tag_value(tags, "App-Version") or "",
        full,
        count,
    )


def decode_record(tags: Sequence[Tag], body: bytes, where: str = "upload record") -> UploadRecord:
    """Parse a record item (tags + body) and check that they agree.

    Raises:
        FormatError: malformed tags or body, or the body contradicts the tags.
    """
    facts = parse_record_tags(tags, where)
    doc = load_foreign_json(body, what=f"{where}: body", max_bytes=MAX_RECORD_BODY)
    if not isinstance(doc, dict) or doc.get("format") != RECORD_FORMAT:
        raise FormatError(f"{where}: body is not an {RECORD_FORMAT} document")
    said = (
        doc.get("datasetId"),
        doc.get("head"),
        doc.get("prevHead"),
        doc.get("prevUpload"),
        doc.get("manifestId"),
        doc.get("unixTime"),
        doc.get("fullManifestId"),
        doc.get("deltaUploads"),
    )
    told = (
        facts.dataset_id,
        facts.head,
        facts.prev_head,
        facts.prev_upload,
        facts.manifest_id,
        facts.unix_time,
        facts.full_manifest,
        facts.delta_uploads,
    )
    if said != told:
        raise FormatError(f"{where}: body and tags disagree (dataset, heads, ids or time)")
    added = _files(doc.get("added"), "added", where)
    span, earlier, chain = _tier(doc, facts, added, where)
    return UploadRecord(
        dataset_id=facts.dataset_id,
        head=facts.head,
        prev_head=facts.prev_head,
        prev_upload=facts.prev_upload,
        manifest_id=facts.manifest_id,
        drive=DriveLayout.from_json(doc.get("drive"), f"{where}: drive"),
        added=added,
        unix_time=facts.unix_time,
        app_version=facts.app_version,
        key_envelope=_item_id(doc["keyEnvelope"], f"{where}: keyEnvelope")
        if "keyEnvelope" in doc
        else None,
        inputs=_inputs(doc["inputs"], where) if "inputs" in doc else None,
        full_manifest=facts.full_manifest,
        delta_uploads=facts.delta_uploads,
        span_uploads=span,
        earlier=earlier,
        skip_chain=chain,
    )


def parse_added_files(raw: object, key: str, where: str) -> dict[str, AddedFile]:
    """A map of path -> :class:`AddedFile` JSON as a record's body holds it (``added``,
    ``earlier``; the publisher's tier files too), each path and id checked.

    Raises:
        FormatError: not such a map.
    """
    return _files(raw, key, where)


def _files(raw: object, key: str, where: str) -> dict[str, AddedFile]:
    """The body's ``added`` (or ``earlier``) map: path -> :class:`AddedFile`."""
    if not isinstance(raw, dict):
        raise FormatError(f"{where}: {key!r} is not an object")
    files: dict[str, AddedFile] = {}
    for path, entry in raw.items():
        check_manifest_path(path, where)
        if not isinstance(entry, dict) or not is_uuid(entry.get("fileId")):
            raise FormatError(f"{where}: entry of {path[:80]!r} lacks a UUID fileId")
        files[path] = AddedFile(
            _item_id(entry.get("dataItemId"), f"{where}: {path[:80]} dataItemId"),
            _item_id(entry.get("metaItemId"), f"{where}: {path[:80]} metaItemId"),
            str(entry["fileId"]),
        )
    return files


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _tier(
    doc: Mapping[str, Any], facts: RecordTags, added: Mapping[str, AddedFile], where: str
) -> tuple[int | None, dict[str, AddedFile], tuple[SkipLink, ...]]:
    """The body's tier (``spanUploads``, ``earlier``, ``skipChain``), checked against the
    record's own counts: a tier cannot make a reader walk further than the record says."""
    keys = ("spanUploads", "earlier", "skipChain")
    if not any(k in doc for k in keys):
        return None, {}, ()
    if not all(k in doc for k in keys):
        raise FormatError(f"{where}: a tier needs spanUploads, earlier and skipChain together")
    n = facts.delta_uploads
    span = _count(doc["spanUploads"])
    if n is None or span is None or not 1 <= span <= n:
        raise FormatError(
            f"{where}: spanUploads is not a count between 1 and the record's "
            f"{DELTA_UPLOADS_TAG}; refusing the tier"
        )
    earlier = _files(doc["earlier"], "earlier", where)
    if "refs/head" in earlier or any(p in added for p in earlier):
        raise FormatError(f"{where}: 'earlier' repeats a path the upload itself added")
    raw = doc["skipChain"]
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_SKIP_CHAIN:
        raise FormatError(f"{where}: skipChain is not a list of 1 to {MAX_SKIP_CHAIN} uploads")
    chain: list[SkipLink] = []
    below = n - span
    for i, entry in enumerate(raw):
        at = f"{where}: skipChain[{i}]"
        if not isinstance(entry, list) or len(entry) != 3:
            raise FormatError(f"{at}: not [record id, head, delta uploads]")
        deltas = _count(entry[2])
        if deltas is None or deltas < 0 or (deltas != below if i == 0 else deltas >= below):
            raise FormatError(
                f"{at}: counts {entry[2]!r} delta uploads; the chain must count down from "
                f"{n - span} (this record's {n} minus its span of {span})"
            )
        chain.append(SkipLink(_item_id(entry[0], f"{at}: record id"), _head(entry[1], at), deltas))
        below = deltas
        if deltas == 0 and i != len(raw) - 1:
            raise FormatError(f"{at}: the full upload is not the end of the chain")
    first = chain[0]
    if span == 1 and (first.record_id != facts.prev_upload or first.head != facts.prev_head):
        raise FormatError(f"{where}: a span of 1 upload must jump to ODF-Prev-Upload")
    if span == 1 and earlier:
        raise FormatError(f"{where}: a span of 1 upload lists no earlier uploads' files")
    return span, earlier, tuple(chain)


def inputs_to_record(
    asked: Mapping[str, object] | None, last: object, where: str
) -> dict[str, str] | None:
    """The inputs map the next upload record of a dataset carries.

    The map a ``publish --with-inputs`` asks for wins. Otherwise the map the last upload
    recorded is kept: republishing a derivative plainly (for instance as the input of
    another derivative, or after appending blocks) must not cut its lineage.

    Args:
        asked: the publish's ``record_extra["inputs"]`` (dataset ID -> ``ar://RECORD``), or
            None / empty for a plain publish.
        last: the map kept in publish state from the last upload (read from disk or
            rebuilt from the last record), or None.
        where: the state's location, for messages.

    Returns:
        The map to record, or None for a plain record.

    Raises:
        FormatError: ``last`` is not a map of strings to strings.
    """
    if asked:
        return {str(k): str(v) for k, v in asked.items()}
    if last is None:
        return None
    return _inputs(last, f"{where}: inputs") or None


def _inputs(raw: object, where: str) -> dict[str, str]:
    """The body's ``inputs`` map: dataset ID -> locator strings."""
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in raw.items()
    ):
        raise FormatError(f"{where}: 'inputs' is not a map of dataset IDs to locators")
    return dict(raw)


def check_delta_link(later: RecordTags, earlier: RecordTags, where: str) -> None:
    """The count of delta uploads holds across one ``ODF-Prev-Upload`` link (pure): after a
    record counting ``n`` deltas comes one counting ``n - 1``, or the full upload after the
    first delta. Records without the count (older publishers) are not checked here; the
    walk's own limit bounds them.

    Raises:
        ResolutionError: the chain is longer or shorter than its records say.
    """
    n = later.delta_uploads
    if n is None:
        return
    if n == 1 and earlier.delta:
        raise ResolutionError(
            f"{where}: the first delta upload since the full manifest follows another delta; "
            "the chain of uploads is longer than its records say: refusing it"
        )
    if n > 1 and not earlier.delta:
        raise ResolutionError(
            f"{where}: {n - 1} more delta uploads were announced, but this one is full; the "
            "chain of uploads is broken"
        )
    if n > 1 and earlier.delta_uploads is not None and earlier.delta_uploads != n - 1:
        raise ResolutionError(
            f"{where}: counts {earlier.delta_uploads} delta uploads after one counting {n}; "
            "the chain of uploads is broken"
        )
