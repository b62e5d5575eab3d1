"""DataCite Metadata Schema 4.5 of a dataset, as JSON, built from its verified chain.

A DOI registration takes these documents (the JSON form of the DataCite REST API's
``attributes``, which DataCite renders as its kernel-4.5 XML). Two of them:

- the **concept** (the dataset across its versions): identified by the dataset ID,
  ``publicationYear`` the Seed's year, ``relatedIdentifiers`` ``HasVersion`` the head;
- a **version** (one head): ``version`` the head's sequence number, identified by
  ``did:odf:…#<head>``, ``IsVersionOf`` the concept, dates ``Created`` (Seed) and ``Updated``
  (head), ``sizes``, ``formats``.

Both carry ``IsDerivedFrom`` each input of a derivative (lineage, SetTransform), titles,
descriptions (``Abstract``), subjects, rights (SPDX), creators and publisher. DataCite lists no
identifier type for a DID: a ``did:odf`` is given as ``URL`` in ``relatedIdentifiers``
(DataCite's closest: an identifier that is a URI) and as ``alternateIdentifierType``
``did:odf`` (free text there). No DOI is set: the registrant adds it (``doi``) when minting.
Fields the chain does not say are DataCite's standard ``(:unav)`` ("value unavailable"),
listed by :func:`datacite_problems`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from odfweb3.descriptor.build import _SPDX_ID, _is_web_iri, derive_title
from odfweb3.odf.chain import ChainEntry
from odfweb3.odf.identity import DatasetId
from odfweb3.odf.lineage import declared_inputs
from odfweb3.odf.model_gen import AddData, ExecuteTransform, Seed, SetInfo, SetLicense, SetTransform
from odfweb3.odf.multihash import multihash_to_str

__all__ = ["UNAVAILABLE", "build_datacite", "datacite_problems"]

#: DataCite's standard value for "value unavailable, possibly unknown".
UNAVAILABLE: Final = "(:unav)"
_SCHEMA_VERSION: Final = "http://datacite.org/schema/kernel-4"


def build_datacite(
    entries: Sequence[ChainEntry],
    publisher: Mapping[str, Any] | None,
    *,
    which: Literal["version", "concept"] = "version",
    landing: str | None = None,
    title: str | None = None,
    identity: str | None = None,
) -> dict[str, Any]:
    """The DataCite 4.5 JSON of a verified chain (head first) for the head or the concept.

    Raises:
        ValueError: the chain does not end at a Seed.
    """
    if not entries or not isinstance(entries[-1].block.event, Seed):
        raise ValueError("DataCite metadata needs a whole chain ending at its Seed")
    seed = entries[-1].block.event
    did = str(DatasetId.from_bytes(seed.dataset_id or b""))
    info: SetInfo | None = None
    lic: SetLicense | None = None
    inputs: list[str] = []
    data_bytes = 0
    for e in reversed(entries):
        ev = e.block.event
        if isinstance(ev, SetInfo):
            info = ev
        elif isinstance(ev, SetLicense):
            lic = ev
        elif isinstance(ev, SetTransform):
            inputs = [str(DatasetId.from_bytes(d)) for d, _ in declared_inputs(ev) if d]
        elif isinstance(ev, AddData | ExecuteTransform) and ev.new_data is not None:
            data_bytes += ev.new_data.size
    head, created = entries[0], entries[-1].block.system_time
    version_id = f"{did}#{multihash_to_str(head.hash)}"
    description = info.description if info is not None else None
    name = title if title is not None else derive_title(description)
    pub = publisher or {}
    creator_name = pub.get("name") or identity
    creator: dict[str, Any] = {"name": creator_name or UNAVAILABLE}
    if creator_name:
        creator["nameType"] = "Personal" if pub.get("type") == "Person" else "Organizational"
    doc: dict[str, Any] = {
        "types": {"resourceTypeGeneral": "Dataset", "resourceType": "Open Data Fabric dataset"},
        "creators": [creator],
        "titles": [{"title": name or UNAVAILABLE}],
        "publisher": {"name": pub.get("name") or UNAVAILABLE},
        "schemaVersion": _SCHEMA_VERSION,
    }
    if landing:
        doc["url"] = landing
    if info is not None and info.keywords:
        doc["subjects"] = [{"subject": k} for k in dict.fromkeys(info.keywords)]
    if description:
        doc["descriptions"] = [{"description": description, "descriptionType": "Abstract"}]
    rights = _rights(lic)
    if rights:
        doc["rightsList"] = [rights]
    related: list[dict[str, str]] = []
    if which == "concept":
        doc["publicationYear"] = str(created.to_datetime().year)
        doc["alternateIdentifiers"] = [
            {"alternateIdentifier": did, "alternateIdentifierType": "did:odf"}
        ]
        related.append(_related(version_id, "HasVersion"))
    else:
        modified = head.block.system_time
        doc["publicationYear"] = str(modified.to_datetime().year)
        doc["version"] = str(head.block.sequence_number)
        doc["alternateIdentifiers"] = [
            {"alternateIdentifier": version_id, "alternateIdentifierType": "did:odf"}
        ]
        doc["dates"] = [
            {"date": created.isoformat(), "dateType": "Created"},
            {"date": modified.isoformat(), "dateType": "Updated"},
        ]
        doc["sizes"] = [f"{data_bytes} bytes"]
        doc["formats"] = ["application/vnd.apache.parquet"]
        related.append(_related(did, "IsVersionOf"))
    related += [_related(i, "IsDerivedFrom") for i in inputs]
    doc["relatedIdentifiers"] = related
    return doc


def _related(identifier: str, relation: str) -> dict[str, str]:
    return {
        "relatedIdentifier": identifier,
        "relatedIdentifierType": "URL",
        "relationType": relation,
        "resourceTypeGeneral": "Dataset",
    }


def _rights(lic: SetLicense | None) -> dict[str, str]:
    if lic is None:
        return {}
    out: dict[str, str] = {}
    label = lic.name or lic.short_name or lic.spdx_id
    if label:
        out["rights"] = label
    if lic.spdx_id and _SPDX_ID.match(lic.spdx_id):
        out |= {
            "rightsUri": f"https://spdx.org/licenses/{lic.spdx_id}.html",
            "rightsIdentifier": lic.spdx_id,
            "rightsIdentifierScheme": "SPDX",
            "schemeUri": "https://spdx.org/licenses/",
        }
    elif lic.website_url and _is_web_iri(lic.website_url):
        out["rightsUri"] = lic.website_url
    return out


def datacite_problems(doc: Mapping[str, Any]) -> list[str]:
    """One line per field the document holds as ``(:unav)`` or lacks, with the fix."""
    out: list[str] = []
    if doc["titles"][0]["title"] == UNAVAILABLE:
        out.append("title unavailable: add a SetInfo event with a description")
    if doc["creators"][0]["name"] == UNAVAILABLE:
        out.append("creator unavailable: set publisher.name in odfweb3.yaml")
    if doc["publisher"]["name"] == UNAVAILABLE:
        out.append("publisher unavailable: set publisher.name in odfweb3.yaml")
    if not doc.get("descriptions"):
        out.append("description missing: add a SetInfo event with a description")
    if not doc.get("rightsList"):
        out.append("rights missing: add a SetLicense event (with an SPDX id) to the dataset")
    return out
