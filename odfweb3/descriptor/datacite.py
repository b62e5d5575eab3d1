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

from odfweb3.descriptor.build import _SPDX_ID, _is_web_iri
from odfweb3.descriptor.discovery_facts import DiscoveryFacts, Presentation, discovery_facts
from odfweb3.odf.chain import ChainEntry
from odfweb3.odf.model_gen import SetLicense

__all__ = ["UNAVAILABLE", "build_datacite", "datacite_from_facts", "datacite_problems"]

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
    shown = Presentation(publisher, identity, title, landing)
    return datacite_from_facts(discovery_facts(entries), shown, which=which)


def datacite_from_facts(
    facts: DiscoveryFacts,
    shown: Presentation,
    *,
    which: Literal["version", "concept"] = "version",
) -> dict[str, Any]:
    """:func:`build_datacite` from the chain's :class:`~.discovery_facts.DiscoveryFacts`."""
    did, version_id = facts.dataset_id, facts.version_id
    created, modified = facts.created, facts.modified
    name = facts.title(shown.title)
    pub = shown.publisher or {}
    creator_name = shown.creator_name
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
    if shown.landing:
        doc["url"] = shown.landing
    if facts.keywords:
        doc["subjects"] = [{"subject": k} for k in dict.fromkeys(facts.keywords)]
    if facts.description:
        doc["descriptions"] = [{"description": facts.description, "descriptionType": "Abstract"}]
    rights = _rights(facts.license)
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
        doc["publicationYear"] = str(modified.to_datetime().year)
        doc["version"] = str(facts.sequence)
        doc["alternateIdentifiers"] = [
            {"alternateIdentifier": version_id, "alternateIdentifierType": "did:odf"}
        ]
        doc["dates"] = [
            {"date": created.isoformat(), "dateType": "Created"},
            {"date": modified.isoformat(), "dateType": "Updated"},
        ]
        doc["sizes"] = [f"{facts.data_bytes} bytes"]
        doc["formats"] = ["application/vnd.apache.parquet"]
        related.append(_related(did, "IsVersionOf"))
    related += [_related(i, "IsDerivedFrom") for i in facts.inputs]
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
