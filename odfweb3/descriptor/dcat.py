"""DCAT 3 (W3C Recommendation, 2024) of a dataset, as JSON-LD, built from its verified chain.

Portals harvest DCAT. The graph holds:

- a ``dcat:DatasetSeries`` per dataset ID (``did:odf:…``): the dataset across its versions,
  with title, description, keywords, license and publisher, and ``dcat:last`` naming the head;
- a ``dcat:Dataset`` for the head (``did:odf:…#<head multihash>``): ``dcat:inSeries`` the
  series, ``dcat:version`` the head's sequence number, ``dcterms:identifier`` the head hash,
  ``dcterms:issued`` / ``dcterms:modified`` the Seed's and head's system times,
  ``prov:wasDerivedFrom`` each input's series (lineage, SetTransform);
- a ``dcat:Distribution`` per data file: ``dcat:accessURL`` and ``dcat:downloadURL`` (where
  the file is read: see :func:`~.croissant.data_file_urls`), ``dcat:mediaType`` the IANA
  ``application/vnd.apache.parquet``, ``dcat:byteSize``, and ``spdx:checksum`` (SHA-256,
  hex, when the caller can hash the file: SPDX's algorithm list has no SHA3-256 multihash, so
  the ODF hash goes in ``dcterms:identifier``).

The shapes the suite checks it against (pyshacl) are ``schemas/dcat-shapes.ttl``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final

from odfweb3.descriptor.build import _is_web_iri
from odfweb3.descriptor.codec import StreamedList
from odfweb3.descriptor.croissant import data_file_urls
from odfweb3.descriptor.discovery_facts import (
    DataFile,
    DiscoveryFacts,
    Presentation,
    discovery_facts,
)
from odfweb3.odf.chain import ChainEntry

__all__ = [
    "DCAT_CONTEXT",
    "PARQUET_MEDIA_TYPE",
    "SHAPES_RESOURCE",
    "build_dcat",
    "dcat_from_facts",
    "dcat_problems",
]

SHAPES_RESOURCE: Final = "dcat-shapes.ttl"
PARQUET_MEDIA_TYPE: Final = (
    "https://www.iana.org/assignments/media-types/application/vnd.apache.parquet"
)
DCAT_CONTEXT: Final = {
    "dcat": "http://www.w3.org/ns/dcat#",
    "dcterms": "http://purl.org/dc/terms/",
    "foaf": "http://xmlns.com/foaf/0.1/",
    "prov": "http://www.w3.org/ns/prov#",
    "spdx": "http://spdx.org/rdf/terms#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
    "dcat:accessURL": {"@type": "@id"},
    "dcat:downloadURL": {"@type": "@id"},
    "dcat:mediaType": {"@type": "@id"},
    "dcat:inSeries": {"@type": "@id"},
    "dcat:last": {"@type": "@id"},
    "dcat:landingPage": {"@type": "@id"},
    "dcterms:license": {"@type": "@id"},
    "prov:wasDerivedFrom": {"@type": "@id"},
    "spdx:algorithm": {"@type": "@id"},
    "dcat:byteSize": {"@type": "xsd:nonNegativeInteger"},
    "dcterms:issued": {"@type": "xsd:dateTime"},
    "dcterms:modified": {"@type": "xsd:dateTime"},
    "spdx:checksumValue": {"@type": "xsd:hexBinary"},
}


def build_dcat(
    entries: Sequence[ChainEntry],
    publisher: Mapping[str, Any] | None,
    *,
    url_of: Callable[[str], str] | None = None,
    sha256_of: Callable[[bytes], str | None] | None = None,
    landing: str | None = None,
    title: str | None = None,
    identity: str | None = None,
) -> dict[str, Any]:
    """The DCAT 3 JSON-LD (``@graph``) of a verified chain, head first (arguments as
    :func:`~.croissant.build_croissant`; ``url_of`` must give absolute URLs: a relative
    path is made a ``file:`` IRI by the reader, so give a locator).

    Raises:
        ValueError: the chain does not end at a Seed.
    """
    shown = Presentation(publisher, identity, title, landing, url_of or data_file_urls(), sha256_of)
    return dcat_from_facts(discovery_facts(entries), shown)


def dcat_from_facts(
    facts: DiscoveryFacts, shown: Presentation, *, streamed: bool = False
) -> dict[str, Any]:
    """:func:`build_dcat` from the chain's :class:`~.discovery_facts.DiscoveryFacts`
    (``streamed``: the distributions a :class:`~odfweb3.descriptor.codec.StreamedList`, as
    :func:`~.croissant.croissant_from_facts`)."""
    did, version_id = facts.dataset_id, facts.version_id

    def made() -> Iterator[dict[str, Any]]:
        return (_distribution(df, version_id, shown) for df in facts.files)

    dists: Sequence[Any] = StreamedList(len(facts.files), made) if streamed else list(made())
    about: dict[str, Any] = {}
    name = facts.title(shown.title)
    if name:
        about["dcterms:title"] = name
    if facts.description:
        about["dcterms:description"] = facts.description
    if facts.keywords:
        about["dcat:keyword"] = facts.keywords
    if facts.license_url:
        about["dcterms:license"] = facts.license_url
    creator_name = shown.creator_name
    if creator_name:
        agent: dict[str, Any] = {"@type": "foaf:Agent", "foaf:name": creator_name}
        homepage = (shown.publisher or {}).get("homepage")
        if _is_web_iri(homepage):
            agent["foaf:homepage"] = {"@id": homepage}
        about["dcterms:publisher"] = agent
    series: dict[str, Any] = {
        "@id": did,
        "@type": "dcat:DatasetSeries",
        "dcterms:identifier": did,
        **about,
        "dcat:last": version_id,
    }
    version: dict[str, Any] = {
        "@id": version_id,
        "@type": "dcat:Dataset",
        "dcterms:identifier": facts.head_multihash,
        **about,
        "dcat:inSeries": did,
        "dcat:version": str(facts.sequence),
        "dcterms:issued": facts.created.isoformat(),
        "dcterms:modified": facts.modified.isoformat(),
    }
    if shown.landing:
        version["dcat:landingPage"] = shown.landing
    if facts.inputs:
        version["prov:wasDerivedFrom"] = list(facts.inputs)
    if facts.files:
        version["dcat:distribution"] = dists
    return {"@context": dict(DCAT_CONTEXT), "@graph": [series, version]}


def _distribution(df: DataFile, version_id: str, shown: Presentation) -> dict[str, Any]:
    url = shown.url_of(df.path)
    dist: dict[str, Any] = {
        "@id": f"{version_id}/{df.path}",
        "@type": "dcat:Distribution",
        "dcterms:identifier": df.multihash,
        "dcterms:title": f"Data file of block {df.sequence}",
        "dcat:accessURL": url,
        "dcat:downloadURL": url,
        "dcat:mediaType": PARQUET_MEDIA_TYPE,
        "dcat:byteSize": df.size,
    }
    sha = shown.sha256(df)
    if sha:
        dist["spdx:checksum"] = {
            "@type": "spdx:Checksum",
            "spdx:algorithm": "spdx:checksumAlgorithm_sha256",
            "spdx:checksumValue": sha,
        }
    return dist


_MISSING: Final = (
    ("dcterms:title", "title missing: add a SetInfo event with a description"),
    ("dcterms:description", "description missing: add a SetInfo event with a description"),
    ("dcterms:license", "license missing: add a SetLicense event (with an SPDX id)"),
    ("dcterms:publisher", "publisher missing: set publisher.name in odfweb3.yaml"),
)


def dcat_problems(doc: Mapping[str, Any]) -> list[str]:
    """One line per field catalogues look for and the document lacks (the warnings of
    ``schemas/dcat-shapes.ttl``, in the same words)."""
    graph = doc.get("@graph") or []
    version: Mapping[str, Any] = next((n for n in graph if n.get("@type") == "dcat:Dataset"), {})
    out = [line for key, line in _MISSING if not version.get(key)]
    dists = version.get("dcat:distribution") or []
    unhashed = sum(1 for d in dists if "spdx:checksum" not in d)
    if unhashed:
        out.append(
            f"checksum missing for {unhashed} of {len(dists)} data files: describe a dataset "
            "directory that holds them"
        )
    return out
