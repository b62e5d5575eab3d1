"""IPNS records: create, encode, decode and verify (IPFS spec "IPNS Record and Protocol").

A record is the protobuf ``IpnsEntry`` (fields 1-9, see the spec's "Record
Serialization Format"). Its signed part is ``data`` (field 9), a DAG-CBOR map
``{TTL, Value, Sequence, Validity, ValidityType}`` plus extension keys; odfweb3
adds ``_odf``: ``{datasetId, head, prevHead, ...}`` (docs/design.md, "IPFS mapping").
``signatureV2`` (field 8) signs ``b"ipns-signature:" + data``.

Records we create also carry the legacy V1 copies (fields 1, 3, 4, 5, 6) and a
V1 signature over ``value + validity + b"EOL"``, exactly as boxo/Kubo and js
``ipns`` still write them: boxo builds that suffix with ``fmt.Sprint`` of the
protobuf enum, which prints its name ``EOL``, not ``0``. Ed25519 keys are inlined
in the name, so ``pubKey`` (field 7) is never written. Validity is RFC 3339 in
UTC with exactly nine fractional digits (Go ``2006-01-02T15:04:05.000000000Z07:00``).

Verification (:func:`verify_record`) follows the spec's "Record Verification"
steps, numbered as there; signatureV1 is never used for verification (a
record whose V1 signature is broken but whose V2 signature holds is valid, as
the spec's test vector 5 requires). Unknown protobuf fields and unknown CBOR
keys are ignored. Errors:

- :class:`~odfweb3.errors.FormatError`: malformed, over 10 KiB, unsupported
  validity type, or a malformed ``_odf`` extension;
- :class:`~odfweb3.errors.SignatureError`: missing or bad signatureV2, a key
  that does not belong to the name, protobuf V1 fields that differ from the
  signed CBOR data;
- :class:`RecordExpired` (a :class:`~odfweb3.errors.ResolutionError`): the
  validity (EOL) has passed.

Only Ed25519 keys are supported; a record for an RSA or other name fails with
FormatError naming the key type.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Final

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from odfweb3.errors import FormatError, ResolutionError, SignatureError
from odfweb3_ipfs.formats.dagcbor import decode_dagcbor, encode_dagcbor
from odfweb3_ipfs.formats.libp2p_keys import (
    IpnsName,
    parse_ipns_name,
    public_key_bytes,
    public_key_from_protobuf,
)
from odfweb3_ipfs.formats.pbwire import (
    WIRE_LEN,
    WIRE_VARINT,
    encode_bytes_field,
    encode_varint_field,
    iter_fields,
)

__all__ = [
    "DEFAULT_LIFETIME",
    "DEFAULT_TTL_NS",
    "MAX_RECORD_SIZE",
    "ODF_EXTENSION_KEY",
    "IpnsEntry",
    "IpnsRecord",
    "OdfExtension",
    "RecordExpired",
    "create_record",
    "decode_record",
    "encode_record",
    "format_validity",
    "name_of_private_key",
    "parse_validity",
    "verify_record",
]

MAX_RECORD_SIZE: Final = 10 * 1024  # spec "Record Size Limit": 10 KiB
DEFAULT_LIFETIME: Final = timedelta(hours=48)  # spec: DHT keeps records up to 48 h
DEFAULT_TTL_NS: Final = 5 * 60 * 1_000_000_000  # spec "TTL": suggested 5 minutes
ODF_EXTENSION_KEY: Final = "_odf"
VALIDITY_EOL: Final = 0

_SIG_V2_PREFIX: Final = b"ipns-signature:"
_STANDARD_KEYS: Final = frozenset({"Value", "Validity", "ValidityType", "Sequence", "TTL"})
_INT64_LIMIT: Final = 1 << 63  # go-ipld-prime decodes CBOR ints into int64
_RFC3339: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))"
)


class RecordExpired(ResolutionError):
    """An IPNS record's validity (EOL) has passed; republish it with a new validity."""


@dataclass(frozen=True)
class OdfExtension:
    """The ``_odf`` extension map odfweb3 puts in the record's DAG-CBOR data.

    Attributes:
        dataset_id: ``did:odf:…`` of the dataset.
        head: multibase multihash of the head block this record points at.
        prev_head: the head of the previous publish, or None for the first.
        extra: any other keys found in (or to be written to) the map.
    """

    dataset_id: str
    head: str
    prev_head: str | None = None
    extra: Mapping[str, object] = field(default_factory=dict)

    def to_cbor(self) -> dict[str, object]:
        """The map as stored in the record (``prevHead`` is null when absent)."""
        out: dict[str, object] = dict(self.extra)
        out.update({"datasetId": self.dataset_id, "head": self.head, "prevHead": self.prev_head})
        return out

    @classmethod
    def from_cbor(cls, value: object) -> OdfExtension:
        """Parse and check the ``_odf`` map of a record.

        Raises:
            FormatError: not a map, or datasetId/head/prevHead missing or malformed.
        """
        if not isinstance(value, dict):
            raise FormatError("IPNS record: _odf extension is not a map")
        dataset_id = value.get("datasetId")
        head = value.get("head")
        prev_head = value.get("prevHead")
        if not isinstance(dataset_id, str) or not dataset_id.startswith("did:odf:"):
            raise FormatError("IPNS record: _odf.datasetId is not a did:odf string")
        if not isinstance(head, str):
            raise FormatError("IPNS record: _odf.head is missing or not a string")
        _check_multihash_text(head, "_odf.head")
        if prev_head is not None:
            if not isinstance(prev_head, str):
                raise FormatError("IPNS record: _odf.prevHead is not a string or null")
            _check_multihash_text(prev_head, "_odf.prevHead")
        extra = {k: v for k, v in value.items() if k not in ("datasetId", "head", "prevHead")}
        return cls(dataset_id, head, prev_head, extra)


def _check_multihash_text(text: str, where: str) -> None:
    from multiformats import multibase, multihash  # local: slow to import, used to read

    try:
        multihash.unwrap_raw(multibase.decode(text))
    except Exception as exc:  # multiformats raises several unrelated types
        raise FormatError(f"IPNS record: {where} is not a multibase multihash") from exc


@dataclass(frozen=True)
class IpnsEntry:
    """The protobuf ``IpnsEntry`` fields as they are on the wire (None = absent)."""

    value: bytes | None = None
    signature_v1: bytes | None = None
    validity_type: int | None = None
    validity: bytes | None = None
    sequence: int | None = None
    ttl: int | None = None
    pub_key: bytes | None = None
    signature_v2: bytes | None = None
    data: bytes | None = None


@dataclass(frozen=True)
class IpnsRecord:
    """A decoded IPNS record: the wire entry plus the fields of its signed CBOR data.

    ``value``, ``validity``, ``sequence`` and ``ttl_ns`` come from the signed
    DAG-CBOR ``data``, never from the legacy protobuf copies.
    """

    entry: IpnsEntry
    value: bytes
    validity: bytes
    validity_type: int
    sequence: int
    ttl_ns: int
    extensions: Mapping[str, object]
    odf: OdfExtension | None

    @property
    def value_text(self) -> str:
        """The value as text, e.g. ``/ipfs/bafy…``."""
        return self.value.decode("utf-8", errors="replace")

    @property
    def expires_at_ns(self) -> int:
        """The EOL as nanoseconds since the Unix epoch."""
        return parse_validity(self.validity)

    @property
    def expires_at(self) -> datetime:
        """The EOL as an aware UTC datetime (truncated to microseconds)."""
        return _ns_to_datetime(self.expires_at_ns)


def _ns_to_datetime(ns: int) -> datetime:
    seconds, rest = divmod(ns, 1_000_000_000)
    return datetime.fromtimestamp(seconds, UTC) + timedelta(microseconds=rest // 1000)


def _datetime_to_ns(moment: datetime) -> int:
    if moment.tzinfo is None:
        raise ValueError("IPNS validity: use a timezone-aware datetime")
    moment = moment.astimezone(UTC)
    return calendar.timegm(moment.timetuple()) * 1_000_000_000 + moment.microsecond * 1000


def format_validity(moment: datetime | int) -> bytes:
    """Format an EOL as Go's ``FormatRFC3339`` does: UTC, nine fractional digits, ``Z``.

    Args:
        moment: an aware datetime, or nanoseconds since the Unix epoch.
    """
    ns = moment if isinstance(moment, int) else _datetime_to_ns(moment)
    seconds, frac = divmod(ns, 1_000_000_000)
    stamp = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{frac:09d}Z".encode("ascii")


def parse_validity(raw: bytes) -> int:
    """Parse an RFC 3339 validity into nanoseconds since the Unix epoch.

    Raises:
        FormatError: not an RFC 3339 date-time.
    """
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError as exc:
        raise FormatError("IPNS record: Validity is not ASCII") from exc
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise FormatError(f"IPNS record: Validity {text[:40]!r} is not RFC 3339")
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    try:
        base = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError as exc:  # also leap seconds, which Go's time.Parse refuses too
        raise FormatError(f"IPNS record: Validity {text[:40]!r} is not a valid date") from exc
    seconds = calendar.timegm(base.timetuple())
    if match.group(9):
        offset = int(match.group(10)) * 3600 + int(match.group(11)) * 60
        seconds -= offset if match.group(9) == "+" else -offset
    frac = int((match.group(7) or "0").ljust(9, "0"))
    return seconds * 1_000_000_000 + frac


def _encode_entry(entry: IpnsEntry) -> bytes:
    # Ascending field numbers, as Go proto.Marshal and js protons emit them.
    out = bytearray()
    if entry.value is not None:
        out += encode_bytes_field(1, entry.value)
    if entry.signature_v1 is not None:
        out += encode_bytes_field(2, entry.signature_v1)
    if entry.validity_type is not None:
        out += encode_varint_field(3, entry.validity_type)
    if entry.validity is not None:
        out += encode_bytes_field(4, entry.validity)
    if entry.sequence is not None:
        out += encode_varint_field(5, entry.sequence)
    if entry.ttl is not None:
        out += encode_varint_field(6, entry.ttl)
    if entry.pub_key is not None:
        out += encode_bytes_field(7, entry.pub_key)
    if entry.signature_v2 is not None:
        out += encode_bytes_field(8, entry.signature_v2)
    if entry.data is not None:
        out += encode_bytes_field(9, entry.data)
    return bytes(out)


_BYTES_FIELDS: Final = {1: "value", 2: "signature_v1", 4: "validity", 7: "pub_key"}
_BYTES_FIELDS_V2: Final = {8: "signature_v2", 9: "data"}
_INT_FIELDS: Final = {3: "validity_type", 5: "sequence", 6: "ttl"}


def _decode_entry(data: bytes) -> IpnsEntry:
    found: dict[str, bytes | int] = {}
    for number, wire, value in iter_fields(data, "IPNS record"):
        name = _BYTES_FIELDS.get(number) or _BYTES_FIELDS_V2.get(number)
        if name is not None:
            if wire != WIRE_LEN:
                raise FormatError(f"IPNS record: field {name} has the wrong protobuf wire type")
            found[name] = value  # the last occurrence wins, as in every protobuf decoder
        elif number in _INT_FIELDS:
            if wire != WIRE_VARINT:
                raise FormatError(
                    f"IPNS record: field {_INT_FIELDS[number]} has the wrong protobuf wire type"
                )
            found[_INT_FIELDS[number]] = value
        # other field numbers: unknown, ignored (spec "Backward Compatibility")
    return IpnsEntry(**found)  # type: ignore[arg-type]


def encode_record(record: IpnsRecord) -> bytes:
    """Serialize a record as its protobuf ``IpnsEntry`` bytes."""
    return _encode_entry(record.entry)


def decode_record(data: bytes) -> IpnsRecord:
    """Parse a serialized record without checking signatures or expiry.

    Checks the size limit, the protobuf framing, that ``data`` is present and is
    strict DAG-CBOR with the five standard fields of the right types, and the
    shape of ``_odf`` when present. Use :func:`verify_record` before trusting it.

    Raises:
        FormatError: oversized or malformed record.
    """
    raw = bytes(data)
    if len(raw) > MAX_RECORD_SIZE:
        raise FormatError(f"IPNS record is {len(raw)} bytes, over the {MAX_RECORD_SIZE}-byte limit")
    entry = _decode_entry(raw)
    if not entry.data:
        raise FormatError("IPNS record has no DAG-CBOR data (field 9); V1-only records are invalid")
    document = decode_dagcbor(entry.data)
    if not isinstance(document, dict):
        raise FormatError("IPNS record: data is not a DAG-CBOR map")
    value = document.get("Value")
    validity = document.get("Validity")
    validity_type = document.get("ValidityType")
    sequence = document.get("Sequence")
    ttl = document.get("TTL")
    if not isinstance(value, bytes) or not isinstance(validity, bytes):
        raise FormatError("IPNS record: data.Value or data.Validity is missing or not bytes")
    for key, number in (("ValidityType", validity_type), ("Sequence", sequence), ("TTL", ttl)):
        if not isinstance(number, int) or isinstance(number, bool) or number < 0:
            raise FormatError(f"IPNS record: data.{key} is missing or not an unsigned integer")
    assert isinstance(validity_type, int) and isinstance(sequence, int) and isinstance(ttl, int)
    extensions = {k: v for k, v in document.items() if k not in _STANDARD_KEYS}
    odf = None
    if ODF_EXTENSION_KEY in extensions:
        odf = OdfExtension.from_cbor(extensions[ODF_EXTENSION_KEY])
    return IpnsRecord(
        entry=entry,
        value=value,
        validity=validity,
        validity_type=validity_type,
        sequence=sequence,
        ttl_ns=ttl,
        extensions=extensions,
        odf=odf,
    )


def create_record(
    private_key: Ed25519PrivateKey,
    value: bytes | str,
    sequence: int,
    validity: datetime | timedelta | int = DEFAULT_LIFETIME,
    ttl_ns: int = DEFAULT_TTL_NS,
    extensions: Mapping[str, object] | None = None,
    *,
    now: datetime | None = None,
    v1_compatible: bool = True,
) -> IpnsRecord:
    """Create and sign an IPNS record (spec "Record Creation", with the legacy V1 fields).

    Args:
        private_key: the Ed25519 key whose IPNS name the record is for.
        value: a content path, normally ``/ipfs/<cid>``.
        sequence: the record version; each new record for a name must increase it.
        validity: the EOL as an aware datetime or as integer nanoseconds since the
            Unix epoch, or a lifetime (timedelta) from ``now``.
        ttl_ns: cache hint in nanoseconds.
        extensions: extra keys for the signed CBOR data, e.g. ``{"_odf": OdfExtension(...)}``
            (an :class:`OdfExtension` value is stored as its map).
        now: the current time for a lifetime (default: the system clock).
        v1_compatible: also write the V1 fields and signature, as Kubo does.

    Returns:
        The signed record; :func:`encode_record` gives its bytes.

    Raises:
        ValueError: bad arguments (value not a path, numbers out of range,
            extension keys that collide with the standard fields).
        FormatError: the record would exceed 10 KiB, or its ``_odf`` map is malformed.
    """
    value_bytes = value.encode("utf-8") if isinstance(value, str) else bytes(value)
    if not value_bytes.startswith(b"/") or len(value_bytes) < 2:
        raise ValueError("IPNS value must be a content path such as /ipfs/<cid>")
    # Go decodes these CBOR integers as int64: stay below 2**63 so Kubo can read them.
    if not 0 <= sequence < _INT64_LIMIT or not 0 <= ttl_ns < _INT64_LIMIT:
        raise ValueError("IPNS sequence and TTL must be in 0 .. 2**63-1")
    if isinstance(validity, timedelta):
        start = now if now is not None else datetime.now(UTC)
        validity = start + validity
    validity_bytes = format_validity(validity)

    document: dict[str, object] = {}
    for key, extension in (extensions or {}).items():
        if key in _STANDARD_KEYS:
            raise ValueError(f"IPNS extension key {key!r} collides with a standard field")
        document[key] = extension.to_cbor() if isinstance(extension, OdfExtension) else extension
    document.update(
        {
            "Value": value_bytes,
            "Validity": validity_bytes,
            "ValidityType": VALIDITY_EOL,
            "Sequence": sequence,
            "TTL": ttl_ns,
        }
    )
    data = encode_dagcbor(document)
    signature_v2 = private_key.sign(_SIG_V2_PREFIX + data)
    if v1_compatible:
        signature_v1 = private_key.sign(value_bytes + validity_bytes + b"EOL")
        entry = IpnsEntry(
            value=value_bytes,
            signature_v1=signature_v1,
            validity_type=VALIDITY_EOL,
            validity=validity_bytes,
            sequence=sequence,
            ttl=ttl_ns,
            signature_v2=signature_v2,
            data=data,
        )
    else:
        entry = IpnsEntry(signature_v2=signature_v2, data=data)
    size = len(_encode_entry(entry))
    if size > MAX_RECORD_SIZE:
        raise FormatError(
            f"IPNS record would be {size} bytes, over the {MAX_RECORD_SIZE}-byte limit; "
            "shrink the extensions"
        )
    return decode_record(_encode_entry(entry))


def _public_key_for(entry: IpnsEntry, name: IpnsName) -> Ed25519PublicKey:
    # Step 3: the pubKey field if present (it must hash to the name), else the
    # key inlined in the name's identity multihash.
    if entry.pub_key:
        raw = public_key_from_protobuf(entry.pub_key)
        if IpnsName.from_public_key(raw) != name:
            raise SignatureError(f"IPNS record for {name}: embedded public key is not the name's")
    else:
        inlined = name.inlined_public_key()
        if inlined is None:
            raise SignatureError(f"IPNS record for {name}: no public key in the record or the name")
        raw = inlined
    return Ed25519PublicKey.from_public_bytes(raw)


def verify_record(
    data_or_record: bytes | IpnsRecord, name: str | IpnsName, now: datetime | None = None
) -> IpnsRecord:
    """Verify a record for an IPNS name (spec "Record Verification", steps 1-8).

    Args:
        data_or_record: the serialized record, or a decoded one (re-encoded first).
        name: the IPNS name the record was fetched for (``k51…``, peer ID, ``/ipns/…``).
        now: the current time (default: the system clock).

    Returns:
        The decoded record, now verified.

    Raises:
        FormatError: step 1 (over 10 KiB) or malformed record/CBOR (step 4).
        SignatureError: steps 2, 3, 6 and 7 (signature missing or bad, wrong key,
            V1 fields differing from the signed data).
        RecordExpired: step 8, the validity has passed.
    """
    ipns_name = name if isinstance(name, IpnsName) else parse_ipns_name(name)
    raw = (
        encode_record(data_or_record) if isinstance(data_or_record, IpnsRecord) else data_or_record
    )
    # Step 1: size limit, before parsing.
    if len(raw) > MAX_RECORD_SIZE:
        raise FormatError(
            f"IPNS record for {ipns_name} is {len(raw)} bytes, "
            f"over the {MAX_RECORD_SIZE}-byte limit"
        )
    entry = _decode_entry(bytes(raw))
    # Step 2: signatureV2 and data present and non-empty.
    if not entry.signature_v2:
        raise SignatureError(f"IPNS record for {ipns_name} has no signatureV2; refusing it")
    if not entry.data:
        raise FormatError(f"IPNS record for {ipns_name} has no DAG-CBOR data")
    # Step 3: the public key.
    public_key = _public_key_for(entry, ipns_name)
    # Step 4: data parses as DAG-CBOR (with the standard fields).
    record = decode_record(raw)
    # Steps 5-6: signatureV2 over the prefix + the raw CBOR bytes.
    try:
        public_key.verify(entry.signature_v2, _SIG_V2_PREFIX + entry.data)
    except InvalidSignature as exc:
        raise SignatureError(f"IPNS record for {ipns_name}: signatureV2 does not verify") from exc
    # Step 7: legacy protobuf copies must equal the signed values.
    if entry.signature_v1 is not None or entry.value is not None:
        pairs = (
            ("value", entry.value or b"", record.value),
            ("validity", entry.validity or b"", record.validity),
            ("validityType", entry.validity_type or 0, record.validity_type),
            ("sequence", entry.sequence or 0, record.sequence),
            ("ttl", entry.ttl or 0, record.ttl_ns),
        )
        for field_name, pb_value, cbor_value in pairs:
            if pb_value != cbor_value:
                raise SignatureError(
                    f"IPNS record for {ipns_name}: protobuf {field_name} differs from the "
                    "signed data"
                )
    # Step 8: validity.
    if record.validity_type != VALIDITY_EOL:
        raise FormatError(
            f"IPNS record for {ipns_name}: unsupported ValidityType {record.validity_type}"
        )
    current = _datetime_to_ns(now if now is not None else datetime.now(UTC))
    if current > record.expires_at_ns:
        raise RecordExpired(
            f"IPNS record for {ipns_name} expired at {record.validity.decode('ascii')}; "
            "publish a new record"
        )
    return record


def name_of_private_key(private_key: Ed25519PrivateKey) -> IpnsName:
    """The IPNS name a record signed with ``private_key`` must be verified against."""
    return IpnsName.from_public_key(public_key_bytes(private_key))
