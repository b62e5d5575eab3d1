"""Checking a discovery descriptor like a SHACL shape: each problem with its fix."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from odfweb3.descriptor.build import (
    _AGENT_TYPES,
    _IRI_FORBIDDEN,
    DATASET_TYPE,
    _context_file,
    _is_web_iri,
)
from odfweb3.errors import FormatError
from odfweb3.odf.identity import DatasetId
from odfweb3.odf.multihash import multihash_from_str
from odfweb3.odf.timestamp import Timestamp

__all__ = ["DescriptorProblem", "validate_descriptor"]

_ARWEAVE_ID = re.compile(r"^[A-Za-z0-9_-]{43}$")


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
