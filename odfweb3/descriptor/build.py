"""Building the discovery descriptor: JSON-LD about a dataset, readable without odfweb3.

Datasets archived for decades must be found and understood by tools that know nothing of ODF
("Discovery descriptor"). The descriptor says what the dataset is in Dublin Core terms
(``dcterms:``, DCMI Type ``dcmitype:``) and FOAF (``foaf:``), built from the chain's ``Seed``,
``SetInfo``, ``SetLicense`` and ``SetAttachments`` events, the head, and the publisher named in
``odfweb3.yaml``. Its ``@context`` (``schemas/odfweb3-context.jsonld``) is embedded in every
document rather than referenced by URL: a reader decades from now needs no network fetch to
expand it.

Choices this module makes, each visible in the document:

- ``type`` is ``dcmitype:Dataset``: the DCMI *Type Vocabulary* class (``purl.org/dc/dcmitype/``).
  The issue says ``dcterms:Dataset``, but the ``dcterms:`` namespace defines no such class.
- ``title``: ODF's ``SetInfo`` has no title field (only ``description``, "brief single-sentence
  summary", and ``keywords``), so the title is the description's first sentence without its
  final period, cut at a word boundary after 120 characters; callers may pass one explicitly.
- ``format`` is the IRI of the ODF specification. ODF has no registered media type, and an
  unregistered ``application/vnd.…`` name would mean nothing to a later reader; the spec does.
- ``extent`` is ``"<N> bytes"`` (DCMI usage: a free-text size) and ``byteSize`` the same number
  as ``dcat:byteSize``; N counts every object the chain names (blocks, data files, checkpoints).
- ``head`` (``odfweb3:head``) is the head block's multihash in multibase base16: the Merkle root
  of the whole dataset, so the descriptor pins exactly one state.
- ``hasPart`` lists the paths of embedded attachments (``SetAttachments``, e.g. a README).
- ``relation`` holds the ``ipfs://``, ``ipns://`` and ``ar://`` locators where given.
- ``creator`` is the ``publisher`` of ``odfweb3.yaml``; without ``publisher.name`` it is the
  publisher's own identity as a ``foaf:Agent`` named ``ipns://NAME`` (the key signing the
  IPNS record) or ``Arweave address ADDRESS`` (the wallet signing the upload), so every
  publish carries a descriptor.

:func:`validate_descriptor` checks the document like a SHACL shape and says how to fix each
problem; :func:`to_turtle` writes the same graph as Turtle with a small serializer driven by the
context (tested against rdflib's JSON-LD and Turtle parsers, see docs/dependencies.md).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any, Final

from odfweb3.odf.chain import ChainEntry
from odfweb3.odf.facts import ChainFacts, facts_of_chain
from odfweb3.odf.identity import DatasetId
from odfweb3.odf.model_gen import SetLicense
from odfweb3.odf.multihash import multihash_to_str

__all__ = [
    "CONTEXT_RESOURCE",
    "DATASET_TYPE",
    "LOCATOR_SCHEMES",
    "MEDIA_TYPE",
    "ODF_SPEC_URL",
    "build_descriptor",
    "derive_title",
    "descriptor_context",
    "descriptor_from_facts",
    "with_locators",
]

CONTEXT_RESOURCE: Final = "odfweb3-context.jsonld"
MEDIA_TYPE: Final = "application/ld+json"
DATASET_TYPE: Final = "dcmitype:Dataset"
ODF_SPEC_URL: Final = (
    "https://github.com/open-data-fabric/open-data-fabric/blob/master/open-data-fabric.md"
)
#: Locator keys accepted by :func:`build_descriptor`, in the order they appear in ``relation``.
LOCATOR_SCHEMES: Final = ("ipfs", "ipns", "ar")
_TITLE_MAX: Final = 120
_AGENT_TYPES: Final = {"Person": "foaf:Person", "Organization": "foaf:Organization"}
_SPDX_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+-]*$")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
# Turtle IRIREF excludes these (Turtle 1.1, production [18]).
_IRI_FORBIDDEN = re.compile(r'[\x00-\x20<>"{}|^`\\]')
_IRI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$")


@cache
def _context_file() -> dict[str, Any]:
    from importlib import resources  # tempfile, zipfile machinery: once, when first read

    text = resources.files("odfweb3.schemas").joinpath(CONTEXT_RESOURCE).read_text("utf-8")
    ctx: dict[str, Any] = json.loads(text)["@context"]
    return ctx


def descriptor_context() -> dict[str, Any]:
    """The JSON-LD ``@context`` object of ``schemas/odfweb3-context.jsonld`` (a fresh copy)."""
    return copy.deepcopy(_context_file())


def derive_title(description: str | None) -> str | None:
    """A title from a ``SetInfo`` description: its first sentence, without the final period.

    Cut at a word boundary with an ellipsis when longer than 120 characters; None when the
    description is empty.
    """
    text = " ".join((description or "").split())
    if not text:
        return None
    end = _SENTENCE_END.search(text)
    if end is not None:
        text = text[: end.end()]
    if text.endswith(".") and not text.endswith(".."):
        text = text[:-1]
    if len(text) > _TITLE_MAX:
        cut = text[:_TITLE_MAX].rsplit(" ", 1)[0] or text[:_TITLE_MAX]
        text = cut.rstrip(" ,;:") + "…"
    return text or None


def _license_fields(lic: SetLicense) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if lic.spdx_id and _SPDX_ID.match(lic.spdx_id):
        out["license"] = f"https://spdx.org/licenses/{lic.spdx_id}.html"
    elif lic.website_url and _is_web_iri(lic.website_url):
        out["license"] = lic.website_url
    rights = lic.name or lic.short_name or lic.spdx_id
    if rights:
        out["rights"] = rights
    return out


def _agent(publisher: Mapping[str, Any]) -> dict[str, Any]:
    agent: dict[str, Any] = {"type": _AGENT_TYPES.get(str(publisher.get("type")), "foaf:Agent")}
    if publisher.get("name"):
        agent["name"] = str(publisher["name"])
    mbox = publisher.get("mbox")
    if mbox:
        mbox = str(mbox)
        agent["mbox"] = mbox if mbox.startswith("mailto:") else "mailto:" + mbox
    if publisher.get("homepage"):
        agent["homepage"] = str(publisher["homepage"])
    return agent


def _relations(locators: Mapping[str, str]) -> list[str]:
    unknown = set(locators) - set(LOCATOR_SCHEMES)
    if unknown:
        raise ValueError(f"unknown locator kinds {sorted(unknown)}: use {list(LOCATOR_SCHEMES)}")
    out = []
    for scheme in LOCATOR_SCHEMES:
        value = locators.get(scheme)
        if value:
            prefix = scheme + "://"
            out.append(value if value.startswith(prefix) else prefix + value.strip("/"))
    return out


def build_descriptor(
    entries: Sequence[ChainEntry],
    publisher: Mapping[str, Any] | None,
    locators: Mapping[str, str] | None = None,
    *,
    title: str | None = None,
    identity: str | None = None,
) -> dict[str, Any]:
    """Build the descriptor of a dataset from its verified chain.

    Args:
        entries: the whole chain, head first (as :func:`~odfweb3.odf.chain.walk_chain` yields it).
        publisher: the ``publisher`` settings of ``odfweb3.yaml`` (``type``, ``name``, ``mbox``,
            ``homepage``), or None.
        locators: where the dataset is published, by scheme: ``ipfs`` (root CID), ``ipns``
            (name) and ``ar`` (path manifest id); bare ids or full ``scheme://`` URIs.
        title: overrides the title derived from the ``SetInfo`` description.
        identity: the publisher's own identity (``ipns://NAME`` of the key that signs the
            record, or ``Arweave address ADDRESS`` of the wallet that signs the upload);
            the creator's name when ``publisher.name`` is not set, so a descriptor is
            always complete.

    Returns:
        The JSON-LD document (fields left out when the chain does not say them; see
        :func:`validate_descriptor` for which are required).

    Raises:
        ValueError: the chain does not end at a Seed, or an unknown locator kind is given.
    """
    return descriptor_from_facts(
        facts_of_chain(list(entries)), publisher, locators, title=title, identity=identity
    )


def descriptor_from_facts(
    facts: ChainFacts,
    publisher: Mapping[str, Any] | None,
    locators: Mapping[str, str] | None = None,
    *,
    title: str | None = None,
    identity: str | None = None,
) -> dict[str, Any]:
    """:func:`build_descriptor` from the chain's facts (:mod:`odfweb3.odf.facts`): the same
    document, without the chain (a publish keeps the facts of verified heads).

    Raises:
        ValueError: an unknown locator kind is given.
    """
    dataset_id = DatasetId.from_bytes(facts.dataset_id)
    doc: dict[str, Any] = {
        "@context": descriptor_context(),
        "id": str(dataset_id),
        "type": DATASET_TYPE,
        "identifier": str(dataset_id),
    }
    description = facts.info.description if facts.info is not None else None
    derived = title if title is not None else derive_title(description)
    if derived:
        doc["title"] = derived
    if description:
        doc["description"] = description
    keywords = list(facts.info.keywords or ()) if facts.info is not None else []
    if keywords:
        doc["subject"] = keywords
    if facts.license is not None:
        doc.update(_license_fields(facts.license))
    creator = _agent(publisher) if publisher else None
    if identity and (creator is None or not creator.get("name")):
        creator = {**(creator or {"type": "foaf:Agent"}), "name": identity}
    if creator is not None:
        doc["creator"] = creator
    doc["created"] = facts.created.isoformat()
    doc["modified"] = facts.modified.isoformat()
    doc["format"] = ODF_SPEC_URL
    doc["extent"] = f"{facts.object_bytes} bytes"
    doc["byteSize"] = facts.object_bytes
    doc["head"] = multihash_to_str(facts.head)
    doc["kind"] = facts.kind.name.capitalize()
    if facts.attachments:
        doc["hasPart"] = [{"title": p} for p in facts.attachments]
    relation = _relations(locators or {})
    if relation:
        doc["relation"] = relation
    return doc


def with_locators(doc: Mapping[str, Any], locators: Mapping[str, str]) -> dict[str, Any]:
    """``doc`` (from :func:`build_descriptor`) with ``relation`` set from ``locators``.

    The same document ``build_descriptor(..., locators)`` returns, without walking the
    chain again (a publish learns its locator only after building the descriptor once).
    """
    out = dict(doc)
    relation = _relations(locators)
    if relation:
        out["relation"] = relation
    else:
        out.pop("relation", None)
    return out


def _is_web_iri(value: object) -> bool:
    return (
        isinstance(value, str)
        and value.startswith(("http://", "https://"))
        and _IRI.match(value) is not None
        and not _IRI_FORBIDDEN.search(value)
    )
