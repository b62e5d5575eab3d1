"""What an encrypted publish may say in plaintext beside its ciphertext: the summary.

An encrypted dataset publishes no discovery document unless its owner allows one
(``datasets.<id>.encryptedDiscovery: summary``; docs/security.md, "What an encrypted publish
reveals"). The summary is the Dublin Core descriptor (:mod:`.build`) cut down to the
catalogue facts a person chose to reveal by allowing it: the dataset ID, the title,
description and keywords (``SetInfo``), the license (``SetLicense``), the publisher
(``publisher`` of ``odfweb3.yaml``) and the head. Everything else the descriptor says is
left out, because each would tell what the encryption hides:

- ``created`` / ``modified`` (the Seed's and the head's system times), ``byteSize`` /
  ``extent`` (the size of every object together), ``kind`` (root or derivative: lineage);
- ``hasPart`` (attachment file names);
- ``relation`` (``ipfs://`` / ``ipns://`` / ``ar://`` URLs into the ciphertext);
- the creator's fallback name, the signing key's ``ipns://`` name (a URL into the
  ciphertext too): without ``publisher.name`` no summary is published, and the publish says
  why (``descriptorSkipped``).

No Croissant or DCAT document is ever published for an encrypted dataset: both list every
data file with its hash and size, and Croissant the schema.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from odfweb3.descriptor.build import descriptor_from_facts
from odfweb3.descriptor.validate import DescriptorProblem, validate_descriptor
from odfweb3.odf.chain import ChainEntry
from odfweb3.odf.facts import facts_of_chain

__all__ = ["SUMMARY_KEYS", "summary_descriptor", "summary_of", "validate_summary"]

#: The descriptor keys a summary keeps (JSON-LD names of ``schemas/odfweb3-context.jsonld``):
#: ``identifier`` is the dataset ID again, ``subject`` the keywords, ``rights`` the license's
#: name, ``creator`` the publisher.
SUMMARY_KEYS: Final = (
    "@context",
    "id",
    "type",
    "identifier",
    "title",
    "description",
    "subject",
    "license",
    "rights",
    "creator",
    "head",
)
# The descriptor requires ``created``; a summary leaves it out on purpose.
_NOT_REQUIRED: Final = frozenset({"created"})


def summary_of(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The summary of a descriptor (:func:`~.build.descriptor_from_facts`): only the keys
    of :data:`SUMMARY_KEYS`, the same values."""
    return {k: doc[k] for k in SUMMARY_KEYS if k in doc}


def summary_descriptor(
    entries: Sequence[ChainEntry], publisher: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The summary descriptor of a dataset from its verified chain (head first, to the
    Seed), naming the configured ``publisher`` only (never the signing key)."""
    return summary_of(descriptor_from_facts(facts_of_chain(list(entries)), publisher))


def validate_summary(doc: Mapping[str, Any]) -> list[DescriptorProblem]:
    """:func:`~.validate.validate_descriptor`'s shape without ``created``, and no key
    outside :data:`SUMMARY_KEYS`; empty when it may be published."""
    out = [p for p in validate_descriptor(doc) if p.field not in _NOT_REQUIRED]
    out.extend(
        DescriptorProblem(k, f"{k} is not a summary fact; rebuild the summary")
        for k in doc
        if k not in SUMMARY_KEYS
    )
    return out
