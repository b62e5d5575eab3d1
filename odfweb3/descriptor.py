"""The discovery descriptor: a JSON-LD description of a dataset, readable without odfweb3.

Datasets archived for decades must be found and understood by tools that know nothing of ODF
(issue 9, "Discovery descriptor"). The descriptor says what the dataset is in Dublin Core terms
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
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Final, Literal

from odfweb3.errors import FormatError
from odfweb3.foreign_json import load_foreign_json
from odfweb3.odf.chain import ChainEntry, iter_objects
from odfweb3.odf.identity import DatasetId
from odfweb3.odf.model import SetAttachments, SetLicense
from odfweb3.odf.multihash import multihash_from_str, multihash_to_str, verify_bytes
from odfweb3.odf.summary import summarize
from odfweb3.odf.timestamp import Timestamp

__all__ = [
    "CONTEXT_RESOURCE",
    "DATASET_TYPE",
    "LOCATOR_SCHEMES",
    "MEDIA_TYPE",
    "ODF_SPEC_URL",
    "DescriptorProblem",
    "build_descriptor",
    "decode_descriptor",
    "derive_title",
    "descriptor_context",
    "descriptor_tags",
    "encode_descriptor",
    "to_turtle",
    "validate_descriptor",
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
# What a reader parses at most (every reader also bounds its fetch; issue 16 item 11).
MAX_DESCRIPTOR_BYTES: Final = 4 << 20
_AGENT_TYPES: Final = {"Person": "foaf:Person", "Organization": "foaf:Organization"}
# ANS-104: a tag value holds at most 3072 bytes (names 1024).
_TAG_VALUE_MAX: Final = 3072
_SPDX_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+-]*$")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
# Turtle IRIREF excludes these (Turtle 1.1, production [18]).
_IRI_FORBIDDEN = re.compile(r'[\x00-\x20<>"{}|^`\\]')
_IRI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$")
_ARWEAVE_ID = re.compile(r"^[A-Za-z0-9_-]{43}$")


@cache
def _context_file() -> dict[str, Any]:
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
            always complete (issue 20).

    Returns:
        The JSON-LD document (fields left out when the chain does not say them; see
        :func:`validate_descriptor` for which are required).

    Raises:
        ValueError: the chain does not end at a Seed, or an unknown locator kind is given.
    """
    chain = list(entries)
    summary = summarize(chain)
    doc: dict[str, Any] = {
        "@context": descriptor_context(),
        "id": str(summary.dataset_id),
        "type": DATASET_TYPE,
        "identifier": str(summary.dataset_id),
    }
    description = summary.info.description if summary.info is not None else None
    derived = title if title is not None else derive_title(description)
    if derived:
        doc["title"] = derived
    if description:
        doc["description"] = description
    keywords = list(summary.info.keywords or ()) if summary.info is not None else []
    if keywords:
        doc["subject"] = keywords
    if summary.license is not None:
        doc.update(_license_fields(summary.license))
    creator = _agent(publisher) if publisher else None
    if identity and (creator is None or not creator.get("name")):
        creator = {**(creator or {"type": "foaf:Agent"}), "name": identity}
    if creator is not None:
        doc["creator"] = creator
    doc["created"] = summary.created.isoformat()
    doc["modified"] = summary.modified.isoformat()
    doc["format"] = ODF_SPEC_URL
    total = sum(o.size or 0 for o in iter_objects(chain))
    doc["extent"] = f"{total} bytes"
    doc["byteSize"] = total
    doc["head"] = multihash_to_str(summary.head)
    doc["kind"] = summary.kind.name.capitalize()
    attachments = _attachment_paths(chain)
    if attachments:
        doc["hasPart"] = [{"title": p} for p in attachments]
    relation = _relations(locators or {})
    if relation:
        doc["relation"] = relation
    return doc


def _attachment_paths(chain: Sequence[ChainEntry]) -> list[str]:
    # Head first: the first SetAttachments seen replaces all earlier ones (ODF SetAttachments).
    for e in chain:
        ev = e.block.event
        if isinstance(ev, SetAttachments):
            items = ev.attachments.items if ev.attachments is not None else None
            return [i.path for i in items or () if i.path]
    return []


# --- validation ------------------------------------------------------------------------------


@dataclass(frozen=True)
class DescriptorProblem:
    """One way a descriptor fails its shape, with the fix.

    Attributes:
        field: the descriptor key concerned (``title``, ``creator.name``, …).
        message: what is wrong and how to set it right (one line).
        severity: ``error`` (refuse to publish) or ``warning`` (publish, but say so).
    """

    field: str
    message: str
    severity: Literal["error", "warning"] = "error"

    def __str__(self) -> str:
        return f"{self.severity}: {self.message}"

    def to_json(self) -> dict[str, str]:
        """JSON form for ``--json`` output."""
        return {"field": self.field, "severity": self.severity, "message": self.message}


_HOW: Final = {
    "id": "build the descriptor from a chain whose Seed carries a dataset ID",
    "title": "add a SetInfo event with a description to the dataset (its first sentence "
    "becomes the title)",
    "creator": "set publisher.name in odfweb3.yaml",
    "created": "build the descriptor from the whole chain down to its Seed",
    "head": "build the descriptor from the dataset's chain (refs/head)",
    "description": "add a SetInfo event with a description",
    "license": "add a SetLicense event (with an SPDX id) to the dataset",
}


def _is_web_iri(value: object) -> bool:
    return (
        isinstance(value, str)
        and value.startswith(("http://", "https://"))
        and _IRI.match(value) is not None
        and not _IRI_FORBIDDEN.search(value)
    )


def _parse_time(value: object) -> Timestamp | None:
    if not isinstance(value, str):
        return None
    try:
        return Timestamp.parse(value)
    except ValueError:
        return None


def _check_times(doc: Mapping[str, Any], out: list[DescriptorProblem]) -> None:
    if "created" not in doc:
        out.append(DescriptorProblem("created", f"created missing: {_HOW['created']}"))
    parsed: dict[str, Timestamp] = {}
    for key in ("created", "modified"):
        if key not in doc:
            continue
        t = _parse_time(doc[key])
        if t is None:
            out.append(
                DescriptorProblem(
                    key,
                    f"{key} is not an ISO 8601 date-time with a time zone: {str(doc[key])[:40]!r}; "
                    "rebuild the descriptor",
                )
            )
        else:
            parsed[key] = t
    if len(parsed) == 2 and parsed["modified"] < parsed["created"]:
        out.append(DescriptorProblem("modified", "modified is before created; check the chain"))


def _check_agent(agent: object, out: list[DescriptorProblem]) -> None:
    if not isinstance(agent, Mapping):
        out.append(
            DescriptorProblem("creator", f"creator is not an agent object; {_HOW['creator']}")
        )
        return
    if agent.get("type") not in (*_AGENT_TYPES.values(), "foaf:Agent"):
        out.append(
            DescriptorProblem(
                "creator.type",
                "creator.type must be foaf:Person or foaf:Organization; "
                "set publisher.type in odfweb3.yaml",
            )
        )
    name = agent.get("name")
    if not isinstance(name, str) or not name.strip():
        out.append(DescriptorProblem("creator.name", f"creator.name missing: {_HOW['creator']}"))
    mbox = agent.get("mbox")
    if mbox is not None and not (
        isinstance(mbox, str) and re.match(r"^mailto:[^@\s]+@[^@\s]+$", mbox)
    ):
        out.append(
            DescriptorProblem(
                "creator.mbox", "creator.mbox is not a mailto: address; fix publisher.mbox"
            )
        )
    if agent.get("homepage") is not None and not _is_web_iri(agent.get("homepage")):
        out.append(
            DescriptorProblem(
                "creator.homepage", "creator.homepage is not an http(s) URL; fix publisher.homepage"
            )
        )


def _check_relation(value: object) -> bool:
    if not isinstance(value, str) or _IRI_FORBIDDEN.search(value):
        return False
    scheme, sep, rest = value.partition("://")
    if not sep or not rest:
        return False
    if scheme == "ipfs":
        from multiformats import CID  # local: only relation checks need CID parsing

        try:
            CID.decode(rest.split("/", 1)[0])
        except Exception:  # multiformats raises several unrelated types
            return False
        return True
    if scheme == "ar":
        return _ARWEAVE_ID.match(rest.split("/", 1)[0]) is not None
    return scheme in ("ipns", "http", "https")


def validate_descriptor(doc: Mapping[str, Any]) -> list[DescriptorProblem]:
    """Check a descriptor against the odfweb3 shape; empty when it may be published.

    Rules (a SHACL-like shape over the JSON form): ``@context`` is odfweb3's; ``id`` is a
    ``did:odf``; ``type`` is ``dcmitype:Dataset``; ``title``, ``creator`` (with a name),
    ``created`` and ``head`` are required; ``created``/``modified`` are ISO 8601 date-times
    with a time zone and ``modified`` is not before ``created``; ``head`` is a well-formed
    multibase multihash; ``license`` and creator URLs are http(s) IRIs; ``relation`` entries
    are ``ipfs://<CID>``, ``ipns://<name>``, ``ar://<43-char id>`` or http(s); ``byteSize`` is a
    non-negative integer. A missing ``description`` or ``license`` is a warning.
    """
    out: list[DescriptorProblem] = []
    if doc.get("@context") != _context_file():
        out.append(
            DescriptorProblem("@context", "@context is not odfweb3's; rebuild the descriptor")
        )
    did = doc.get("id")
    try:
        DatasetId.parse(did) if isinstance(did, str) else None
    except FormatError:
        did = None
    if not isinstance(did, str):
        out.append(DescriptorProblem("id", f"id missing or not a did:odf: {_HOW['id']}"))
    types = doc.get("type")
    if DATASET_TYPE not in (types if isinstance(types, list) else [types]):
        out.append(DescriptorProblem("type", f"type must be {DATASET_TYPE}; rebuild it"))
    for key in ("title", "description"):
        value = doc.get(key)
        if value is not None and not isinstance(value, str):
            out.append(DescriptorProblem(key, f"{key} must be a string"))
        elif not (value or "").strip():
            sev: Literal["error", "warning"] = "error" if key == "title" else "warning"
            out.append(DescriptorProblem(key, f"{key} missing: {_HOW[key]}", sev))
    subject = doc.get("subject", [])
    if not isinstance(subject, list) or not all(isinstance(s, str) for s in subject):
        out.append(DescriptorProblem("subject", "subject must be a list of keywords"))
    if "license" not in doc:
        out.append(DescriptorProblem("license", f"license missing: {_HOW['license']}", "warning"))
    elif not _is_web_iri(doc["license"]):
        out.append(DescriptorProblem("license", "license is not an http(s) URL; fix SetLicense"))
    if "creator" not in doc:
        out.append(DescriptorProblem("creator", f"creator missing: {_HOW['creator']}"))
    else:
        _check_agent(doc["creator"], out)
    _check_times(doc, out)
    head = doc.get("head")
    if head is None:
        out.append(DescriptorProblem("head", f"head hash missing: {_HOW['head']}"))
    else:
        try:
            multihash_from_str(head) if isinstance(head, str) else None
        except FormatError:
            head = None
        if not isinstance(head, str):
            out.append(
                DescriptorProblem("head", "head is not a multibase SHA3-256/SHA2-256 multihash")
            )
    size = doc.get("byteSize")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
        out.append(DescriptorProblem("byteSize", "byteSize must be a non-negative integer"))
    relation = doc.get("relation", [])
    for r in relation if isinstance(relation, list) else [relation]:
        if not _check_relation(r):
            out.append(
                DescriptorProblem(
                    "relation",
                    f"relation {str(r)[:80]!r} is not ipfs://<CID>, ipns://<name>, "
                    "ar://<id> or an http(s) URL",
                )
            )
    return out


# --- encoding --------------------------------------------------------------------------------


def encode_descriptor(doc: Mapping[str, Any]) -> bytes:
    """Canonical bytes: UTF-8 JSON, keys sorted, no insignificant whitespace.

    The same document always gives the same bytes, hence the same CID or data item hash.
    (The only number that is not an integer is the context's ``"@version": 1.1``, which
    Python writes as ``1.1`` as every JSON writer does.)

    Raises:
        FormatError: the document holds a value JSON cannot represent (NaN, a set, …).
    """
    try:
        text = json.dumps(
            doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError) as exc:
        raise FormatError(f"descriptor is not JSON-serializable: {exc}") from None
    return text.encode("utf-8")


def decode_descriptor(data: bytes, expected: bytes | None = None) -> dict[str, Any]:
    """Parse descriptor bytes; with ``expected`` (a multihash), verify them first.

    Raises:
        HashMismatch: the bytes do not hash to ``expected``.
        FormatError: not UTF-8 JSON, not an object, or without an ``@context``.
    """
    if expected is not None:
        verify_bytes(data, expected, "descriptor")
    doc = load_foreign_json(data, what="descriptor", max_bytes=MAX_DESCRIPTOR_BYTES)
    if not isinstance(doc, dict) or "@context" not in doc:
        raise FormatError("descriptor is not a JSON-LD object with an @context")
    return doc


def _truncate_utf8(text: str, limit: int) -> str:
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    ellipsis = "…"
    cut = data[: limit - len(ellipsis.encode("utf-8"))].decode("utf-8", errors="ignore")
    return cut + ellipsis


def descriptor_tags(doc: Mapping[str, Any], max_total: int = 3584) -> list[tuple[str, str]]:
    """Arweave tags for the descriptor's data item: content type, dataset, head, title, text.

    ANS-104 limits each value to 3072 bytes, and bundlers (arbundles ``MAX_TAG_BYTES``) all
    tags of an item to 4096 bytes once Avro-encoded. So each value is cut to 3072 bytes and
    names plus values together to ``max_total`` bytes (the default leaves room for the
    caller's ``App-Name``/``App-Version`` and the encoding), title before description; cuts
    fall on a character boundary and end with an ellipsis. Absent fields give no tag.
    """
    tags = [("Content-Type", MEDIA_TYPE)]
    left = max_total - len("Content-Type") - len(MEDIA_TYPE)
    for name, key in (
        ("ODF-Dataset-Id", "id"),
        ("ODF-Head", "head"),
        ("Title", "title"),
        ("Description", "description"),
    ):
        value = doc.get(key)
        room = min(_TAG_VALUE_MAX, left - len(name))
        if isinstance(value, str) and value and room > len("…".encode()):
            value = _truncate_utf8(value, room)
            tags.append((name, value))
            left -= len(name) + len(value.encode("utf-8"))
    return tags


# --- Turtle ----------------------------------------------------------------------------------

_PN_LOCAL = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_XSD = "http://www.w3.org/2001/XMLSchema#"


class _Turtle:
    """Writes a JSON-LD node tree of the descriptor's shape as Turtle, using its own context."""

    def __init__(self, context: Mapping[str, Any]) -> None:
        # Prefixes are the context's plain absolute IRIs; terms map to compact IRIs.
        self.prefixes = {k: v for k, v in context.items() if isinstance(v, str) and "://" in v}
        self.terms: dict[str, dict[str, Any]] = {}
        for k, v in context.items():
            if k.startswith("@") or k in self.prefixes or v in ("@id", "@type"):
                continue
            self.terms[k] = {"@id": v} if isinstance(v, str) else dict(v)
        self.aliases = {k: v for k, v in context.items() if v in ("@id", "@type")}

    def expand(self, value: str) -> str:
        prefix, sep, local = value.partition(":")
        if sep and prefix in self.prefixes and not local.startswith("//"):
            return self.prefixes[prefix] + local
        return value

    def iri(self, value: str) -> str:
        full = self.expand(value)
        for prefix, ns in self.prefixes.items():
            local = full[len(ns) :]
            if full.startswith(ns) and _PN_LOCAL.match(local):
                return f"{prefix}:{local}"
        if _IRI_FORBIDDEN.search(full) or not _IRI.match(full):
            raise FormatError(f"to_turtle: {full[:80]!r} is not an absolute IRI")
        return f"<{full}>"

    @staticmethod
    def literal(text: str) -> str:
        out = []
        for ch in text:
            if ch in '"\\':
                out.append("\\" + ch)
            elif ch == "\n":
                out.append("\\n")
            elif ch == "\r":
                out.append("\\r")
            elif ch == "\t":
                out.append("\\t")
            elif ord(ch) < 0x20 or ord(ch) == 0x7F:
                out.append(f"\\u{ord(ch):04X}")
            else:
                out.append(ch)
        return '"' + "".join(out) + '"'

    def value(self, term: Mapping[str, Any], v: object, indent: int) -> str:
        coerce = term.get("@type")
        if isinstance(v, Mapping):
            return self.node(v, indent)
        if isinstance(v, bool):
            lex = "true" if v else "false"
            return lex if coerce is None else f'"{lex}"^^{self.iri(coerce)}'
        if isinstance(v, int):
            return str(v) if coerce is None else f'"{v}"^^{self.iri(coerce)}'
        if not isinstance(v, str):
            raise FormatError(f"to_turtle: unsupported value {type(v).__name__}")
        if coerce == "@id":
            return self.iri(v)
        if coerce is not None:
            dt = self.iri(coerce)
            return self.literal(v) + ("" if dt == "xsd:string" else f"^^{dt}")
        return self.literal(v)

    def predicates(self, node: Mapping[str, Any], indent: int) -> list[str]:
        pad = " " * (indent + 4)
        lines: list[str] = []
        for key, v in node.items():
            if key == "@context" or self.aliases.get(key) == "@id" or v is None:
                continue
            values = v if isinstance(v, list) else [v]
            if not values:
                continue
            if self.aliases.get(key) == "@type":
                objs = [self.iri(t) for t in values]
                lines.append(f"{pad}a {', '.join(objs)}")
                continue
            if key in self.terms:
                term = self.terms[key]
            elif ":" in key and not key.startswith("@"):
                term = {"@id": key}
            else:
                raise FormatError(f"to_turtle: {key!r} is not a term of the odfweb3 context")
            objs = [self.value(term, x, indent + 4) for x in values]
            lines.append(f"{pad}{self.iri(term['@id'])} {', '.join(objs)}")
        return lines

    def node(self, node: Mapping[str, Any], indent: int) -> str:
        if any(self.aliases.get(k) == "@id" for k in node):
            raise FormatError("to_turtle: nested nodes with an id are not in the descriptor shape")
        lines = self.predicates(node, indent)
        if not lines:
            return "[]"
        return "[\n" + " ;\n".join(lines) + "\n" + " " * indent + "]"


def to_turtle(doc: Mapping[str, Any]) -> str:
    """Turtle 1.1 for a descriptor: the same triples as its JSON-LD expansion.

    A small serializer for exactly the descriptor's shape (one subject, nested blank nodes,
    terms of the odfweb3 context, IRIs, strings, integers and typed literals); anything else
    raises.

    Raises:
        FormatError: a key outside the context, a value outside the shape, or a bad IRI.
    """
    ctx = doc.get("@context")
    if not isinstance(ctx, Mapping):
        raise FormatError("to_turtle: the descriptor has no inline @context object")
    w = _Turtle(ctx)
    subject_key = next((k for k, v in w.aliases.items() if v == "@id"), "@id")
    subject = doc.get(subject_key)
    head = "[]" if not isinstance(subject, str) else w.iri(subject)
    lines = [f"@prefix {p}: <{ns}> ." for p, ns in sorted(w.prefixes.items())]
    body = w.predicates(doc, 0)
    if body:
        lines += ["", head + "\n" + " ;\n".join(body) + " ."]
    return "\n".join(lines) + "\n"
