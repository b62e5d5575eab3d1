"""Croissant 1.1 (MLCommons) metadata of a dataset, built from its verified chain.

Croissant is what ML dataset catalogues read (a schema.org ``Dataset`` with ``cr:``
terms). The document says:

- ``distribution``: one ``cr:FileObject`` per data file (``AddData`` / ``ExecuteTransform``
  ``newData``): ``contentUrl`` where the file is reachable (``<gateway>/ipfs/<root>/data/<mh>``,
  ``ipfs://<root>/data/<mh>``, ``ar://<manifest>/data/<mh>``, else the path ``data/<mh>``
  relative to the dataset directory), ``contentSize`` from the block, ``sha256`` when the
  caller can hash the file, and the ODF physical hash as a schema.org ``identifier``
  (``PropertyValue`` with ``propertyID`` ``multihash``: no extra vocabulary needed).
- ``encodingFormat``: ``application/vnd.apache.parquet`` (the IANA registration, 2024)
  then ``application/x-parquet``, the only Parquet name mlcroissant 1.1 reads
  (``EncodingFormat.PARQUET``); it tries the formats in order and takes the first it reads.
- ``recordSet``: one per data file (a Croissant field's ``source`` names a single
  FileObject or FileSet, and a FileSet needs an archive or a repository to glob in), with
  the ODF schema (``SetDataSchema``) in force for that file: types mapped by
  :data:`_SCALAR`, ``Option`` unwrapped, ``List`` as ``isArray``, ``Struct`` as
  ``subField``; the ODF system columns (``offset``, ``op``, ``system_time``,
  ``event_time``) say so in their description, and ``offset`` is the record set's ``key``.
- ``version``: ``<sequence>.0.0+<head>``: semver, whose build metadata carries the head
  hash and is ignored for precedence, so versions order as the chain does.
- ``license``, ``citeAs`` (BibTeX), ``creator``, ``keywords``, ``dateCreated`` /
  ``dateModified`` / ``datePublished``, and ``prov:wasDerivedFrom`` for each input of a
  derivative (the input's dataset ID, and the last input block consumed).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final

from odfweb3.descriptor.build import _is_web_iri
from odfweb3.descriptor.codec import StreamedList
from odfweb3.descriptor.discovery_facts import (
    DataFile,
    DiscoveryFacts,
    Presentation,
    discovery_facts,
)
from odfweb3.errors import FormatError, NotFound
from odfweb3.odf.chain import ChainEntry
from odfweb3.odf.digest_map import DigestMap
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.model_gen import (
    DataField,
    DataSchema,
    DataTypeBinary,
    DataTypeBool,
    DataTypeDate,
    DataTypeDecimal,
    DataTypeDuration,
    DataTypeFloat16,
    DataTypeFloat32,
    DataTypeFloat64,
    DataTypeInt8,
    DataTypeInt16,
    DataTypeInt32,
    DataTypeInt64,
    DataTypeList,
    DataTypeMap,
    DataTypeNull,
    DataTypeOption,
    DataTypeString,
    DataTypeStruct,
    DataTypeTime,
    DataTypeTimestamp,
    DataTypeUInt8,
    DataTypeUInt16,
    DataTypeUInt32,
    DataTypeUInt64,
)
from odfweb3.odf.multihash import SHA2_256, multihash_to_str, new_hasher, split_multihash

__all__ = [
    "CROISSANT_CONFORMS_TO",
    "PARQUET_FORMATS",
    "SYSTEM_COLUMNS",
    "build_croissant",
    "croissant_from_facts",
    "data_file_urls",
    "local_sha256",
]

CROISSANT_CONFORMS_TO: Final = "http://mlcommons.org/croissant/1.1"
PARQUET_FORMATS: Final = ("application/vnd.apache.parquet", "application/x-parquet")
#: ODF's system columns (spec "Common Data Schema"), default names.
SYSTEM_COLUMNS: Final = {
    "offset": "ODF system column: the record's offset, unique and increasing in the dataset",
    "op": "ODF system column: the operation (0 append, 1 retract, 2 correct-from, 3 correct-to)",
    "system_time": "ODF system column: when the record entered the dataset",
    "event_time": "ODF system column: when the event the record tells of happened",
}

# The context mlcroissant writes for 1.1 (``rdf.make_context``), with prov: for lineage.
_CONTEXT: Final = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "arrayShape": "cr:arrayShape",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "containedIn": "cr:containedIn",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isArray": "cr:isArray",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "prov": "http://www.w3.org/ns/prov#",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}

_SCALAR: Final[dict[type, str]] = {
    DataTypeBool: "sc:Boolean",
    DataTypeInt8: "cr:Int8",
    DataTypeInt16: "cr:Int16",
    DataTypeInt32: "cr:Int32",
    DataTypeInt64: "cr:Int64",
    DataTypeUInt8: "cr:UInt8",
    DataTypeUInt16: "cr:UInt16",
    DataTypeUInt32: "cr:UInt32",
    DataTypeUInt64: "cr:UInt64",
    DataTypeFloat16: "cr:Float16",
    DataTypeFloat32: "cr:Float32",
    DataTypeFloat64: "cr:Float64",
    # Croissant has no decimal; sc:Float loses precision past 15 digits, said in the field.
    DataTypeDecimal: "sc:Float",
    DataTypeString: "sc:Text",
    # Neither schema.org nor Croissant has a bytes type; mlcroissant reads sc:Text as bytes.
    DataTypeBinary: "sc:Text",
    DataTypeDate: "sc:Date",
    DataTypeTimestamp: "sc:DateTime",
    DataTypeTime: "sc:Time",
    # No duration type either: the Parquet value (an integer count of its unit) as text.
    DataTypeDuration: "sc:Text",
    DataTypeMap: "sc:Text",
    DataTypeNull: "sc:Text",
}


def data_file_urls(
    *, ipfs: str | None = None, ar: str | None = None, gateway: str | None = None
) -> Callable[[str], str]:
    """Where a data file named ``data/<mh>`` is read: through ``gateway`` (an http(s) URL of
    an IPFS gateway) with ``ipfs``, else ``ipfs://``, else ``ar://``, else the local path."""
    root = (ipfs or "").removeprefix("ipfs://").strip("/")
    manifest = (ar or "").removeprefix("ar://").strip("/")
    if gateway and root:
        base = gateway.rstrip("/")
        return lambda rel: f"{base}/ipfs/{root}/{rel}"
    if root:
        return lambda rel: f"ipfs://{root}/{rel}"
    if manifest:
        return lambda rel: f"ar://{manifest}/{rel}"
    return lambda rel: rel


def local_sha256(reader: DatasetReader) -> Callable[[bytes], str | None]:
    """A data file's hex SHA-256 read from the dataset directory, the file verified against
    its physical hash in the same read (None when absent or when it does not match); each
    file is read once however often it is asked (the Croissant and the DCAT document of one
    publish both list it)."""
    # Remembered packed (a flag byte and the raw digest in a DigestMap: ~70 bytes a file,
    # where a dict of multihash bytes to hex text was ~230; 100,000 at 100,000 blocks).
    seen = DigestMap(1 + 32)
    unknown = bytes(33)

    def sha256_of(mh: bytes) -> str | None:
        got = seen.get(mh)
        if got is None:
            digest = _read_sha256(mh)
            got = b"\x01" + digest if digest is not None else unknown
            seen.put(mh, got)
        return got[1:].hex() if got[0] else None

    def _read_sha256(mh: bytes) -> bytes | None:
        try:
            code, digest = split_multihash(mh)
            odf, sha = new_hasher(code), new_hasher(SHA2_256)
            fd, info = reader.open_fd("data", mh)
        except (NotFound, FormatError, OSError):
            return None
        # Reads of the file's size (at most 1 MiB): a read of 1 MiB for a 2 KB file allocates
        # that buffer each time, which glibc then serves from the heap between what the
        # publish holds, and the process keeps the pages.
        block = min(max(info.st_size, 4096), 1 << 20)
        with open(fd, "rb", closefd=True) as f:
            while chunk := f.read(block):
                odf.update(chunk)
                sha.update(chunk)
        return sha.digest() if odf.digest() == digest else None

    return sha256_of


def _field_type(dtype: object) -> tuple[str, bool, list[DataField] | None, str]:
    """(dataType, isArray, subfields, note) of an ODF type."""
    if isinstance(dtype, DataTypeOption):
        return _field_type(dtype.inner)
    if isinstance(dtype, DataTypeList):
        inner, _, sub, note = _field_type(dtype.item_type)
        return inner, True, sub, note
    if isinstance(dtype, DataTypeStruct):
        return "cr:RecordSet", False, list(dtype.fields or ()), ""
    name = type(dtype).__name__.removeprefix("DataType")
    return _SCALAR.get(type(dtype), "sc:Text"), False, None, name


# One field of a schema as every record set renders it: its path under the record set
# (``prefix`` + name), name, description, dataType, isArray, subfields (None: a leaf) and
# the column a leaf is extracted from. A schema's fields are the same for each of its
# data files: a first publish renders them once per schema, not once per file.
_FieldSpec = tuple[str, str, str, str, bool, "tuple[_FieldSpec, ...] | None", str]


def _field_specs(schema: DataSchema, prefix: str = "", column: str = "") -> tuple[_FieldSpec, ...]:
    out: list[_FieldSpec] = []
    for f in schema.fields or ():
        name = f.name or ""
        dtype, is_array, sub, odf_type = _field_type(f.type)
        col = f"{column}.{name}" if column else name
        desc = SYSTEM_COLUMNS.get(name) if not prefix else None
        own = _field_description(f)
        text = "; ".join(t for t in (desc, own, f"ODF type {odf_type}" if odf_type else "") if t)
        subs = None
        if sub is not None:
            subs = _field_specs(DataSchema(fields=tuple(sub)), f"{prefix}{name}/", col)
        out.append((f"{prefix}{name}", name, text, dtype, is_array, subs, col))
    return tuple(out)


def _fields(specs: tuple[_FieldSpec, ...], rs_id: str, file_id: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path, name, text, dtype, is_array, subs, col in specs:
        field: dict[str, Any] = {"@type": "cr:Field", "@id": f"{rs_id}/{path}", "name": name}
        if text:
            field["description"] = text
        field["dataType"] = dtype
        if is_array:
            field["isArray"] = True
        if subs is not None:
            field["subField"] = _fields(subs, rs_id, file_id)
        else:
            field["source"] = {"fileObject": {"@id": file_id}, "extract": {"column": col}}
        out.append(field)
    return out


def _field_description(f: DataField) -> str:
    if f.extra is None or not f.extra.entries:
        return ""
    try:
        extra = json.loads(f.extra.entries)
    except ValueError:
        return ""
    text = extra.get("opendatafabric.org/description") if isinstance(extra, dict) else None
    return text if isinstance(text, str) else ""


def _cite_as(did: str, title: str | None, creator: str | None, year: int, head: str) -> str:
    key = did.rsplit(":", 1)[-1][-12:]

    def esc(text: str) -> str:
        return text.replace("\\", "").replace("{", "").replace("}", "")

    parts = [f"title = {{{esc(title or did)}}}"]
    if creator:
        parts.append(f"author = {{{esc(creator)}}}")
    parts += [
        f"year = {{{year}}}",
        f"howpublished = {{{did}}}",
        f"note = {{Open Data Fabric dataset, head {head}}}",
    ]
    return f"@misc{{odf-{key},\n  " + ",\n  ".join(parts) + "\n}"


def build_croissant(
    entries: Sequence[ChainEntry],
    publisher: Mapping[str, Any] | None,
    *,
    url_of: Callable[[str], str] | None = None,
    sha256_of: Callable[[bytes], str | None] | None = None,
    landing: str | None = None,
    title: str | None = None,
    identity: str | None = None,
) -> dict[str, Any]:
    """The Croissant 1.1 JSON-LD of a verified chain (head first, as ``walk_chain`` gives).

    Args:
        entries: the whole chain, head first.
        publisher: ``publisher`` of ``odfweb3.yaml`` (its ``name`` is the creator).
        url_of: ``data/<mh>`` to the URL a reader fetches (:func:`data_file_urls`).
        sha256_of: a data file's hex SHA-256 from its physical hash, or None when unknown.
        landing: the dataset's own URL (``url``), e.g. ``ipns://NAME`` or a gateway URL.
        title: overrides the title derived from SetInfo.
        identity: the creator's name when ``publisher.name`` is not set.

    Raises:
        ValueError: the chain does not end at a Seed.
    """
    shown = Presentation(publisher, identity, title, landing, url_of or data_file_urls(), sha256_of)
    return croissant_from_facts(discovery_facts(entries), shown)


def croissant_from_facts(
    facts: DiscoveryFacts, shown: Presentation, *, streamed: bool = False
) -> dict[str, Any]:
    """:func:`build_croissant` from the chain's :class:`~.discovery_facts.DiscoveryFacts`.

    ``streamed``: ``distribution`` and ``recordSet`` are
    :class:`~odfweb3.descriptor.codec.StreamedList`\\ s, made item by item while the document
    is encoded (:func:`~odfweb3.descriptor.codec.encode_descriptor_chunks`): the same bytes,
    in memory one data file at a time."""

    def file_objects() -> Iterator[dict[str, Any]]:
        return (_file_object(df, shown) for df in facts.files)

    specs: dict[int, tuple[_FieldSpec, ...]] = {}  # by id(): the files hold the schemas

    def specs_of(schema: DataSchema) -> tuple[_FieldSpec, ...]:
        got = specs.get(id(schema))
        if got is None:
            got = specs[id(schema)] = _field_specs(schema)
        return got

    def record_sets() -> Iterator[dict[str, Any]]:
        return (_record_set(df, specs_of) for df in facts.files if df.schema is not None)

    files: Sequence[Any]
    sets: Sequence[Any]
    if streamed:
        files = StreamedList(len(facts.files), file_objects)
        sets = StreamedList(sum(1 for f in facts.files if f.schema is not None), record_sets)
    else:
        files, sets = list(file_objects()), list(record_sets())
    did, head_mh = facts.dataset_id, facts.head_multihash
    name = facts.title(shown.title)
    creator_name = shown.creator_name
    doc: dict[str, Any] = {
        "@context": dict(_CONTEXT),
        "@type": "sc:Dataset",
        "@id": did,
        "conformsTo": CROISSANT_CONFORMS_TO,
        "name": name or did,
        "identifier": did,
    }
    if facts.description:
        doc["description"] = facts.description
    if facts.keywords:
        doc["keywords"] = facts.keywords
    if facts.license_url:
        doc["license"] = facts.license_url
    if creator_name:
        # A key standing in for the name is nobody's person: an Organization, as FOAF's
        # Agent has no schema.org twin.
        publisher = shown.publisher or {}
        person = publisher.get("type") == "Person"
        doc["creator"] = {"@type": "sc:Person" if person else "sc:Organization"}
        doc["creator"]["name"] = creator_name
        homepage = publisher.get("homepage")
        if _is_web_iri(homepage):
            doc["creator"]["url"] = homepage
    if shown.landing:
        doc["url"] = shown.landing
    doc["dateCreated"] = facts.created.isoformat()
    doc["dateModified"] = facts.modified.isoformat()
    doc["datePublished"] = facts.modified.isoformat()
    doc["version"] = f"{facts.sequence}.0.0+{head_mh}"
    doc["citeAs"] = _cite_as(did, name, creator_name, facts.modified.to_datetime().year, head_mh)
    derived = _derivation(facts)
    if derived:
        doc["prov:wasDerivedFrom"] = derived
    doc["distribution"] = files
    doc["recordSet"] = sets
    return doc


def _file_object(df: DataFile, shown: Presentation) -> dict[str, Any]:
    mh, fid = df.multihash, df.path
    fo: dict[str, Any] = {
        "@type": "cr:FileObject",
        "@id": fid,
        "name": f"{mh}.parquet",
        "contentUrl": shown.url_of(fid),
        "contentSize": f"{df.size} B",
        "encodingFormat": list(PARQUET_FORMATS),
        "identifier": {"@type": "sc:PropertyValue", "propertyID": "multihash", "value": mh},
    }
    sha = shown.sha256(df)
    if sha:
        fo["sha256"] = sha
    return fo


def _record_set(
    df: DataFile, specs_of: Callable[[DataSchema], tuple[_FieldSpec, ...]]
) -> dict[str, Any]:
    assert df.schema is not None
    rs_id = f"slice-{df.sequence}"
    return {
        "@type": "cr:RecordSet",
        "@id": rs_id,
        "name": rs_id,
        "description": f"The records of block {df.sequence} (data file {df.multihash})",
        "key": {"@id": f"{rs_id}/offset"},
        "field": _fields(specs_of(df.schema), rs_id, df.path),
    }


def _derivation(facts: DiscoveryFacts) -> list[dict[str, Any]]:
    """``prov:wasDerivedFrom`` per input: its dataset ID and the last input block consumed."""
    out: list[dict[str, Any]] = []
    for did in facts.inputs:
        node: dict[str, Any] = {"@id": did}
        st = facts.input_states.get(did)
        if st is not None and st.last_block is not None:
            node["sc:version"] = multihash_to_str(st.last_block)
        out.append(node)
    return out
