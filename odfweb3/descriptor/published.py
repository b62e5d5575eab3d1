"""The Croissant and DCAT documents a publish puts beside the dataset: one per publish.

``odfweb3 describe`` writes a document of the whole chain (every data file); published on
each update, such a document grows with the chain (24.1 MB of Croissant and 7.3 MB of DCAT
at 10,000 blocks, for a one-block update whose own delta is about 6 KB), and on Arweave
every copy is kept forever. So a publish writes a document of what it adds, linked to the
document of the publish before it on the same target (docs/design.md, "Discovery documents
per publish"; ``bench/bench_discovery_publish.py`` measures the candidates):

- **DCAT 3**: the ODF dataset is the ``dcat:DatasetSeries`` (``did:odf:…``); each publish is
  one member ``dcat:Dataset`` (``did:odf:…#<head>``) whose distributions are the data files
  of the blocks this publish added, ``dcat:prev`` the member of the publish before (DCAT 3,
  "Dataset series": ``dcat:prev`` orders a series' members) and that member's document its
  ``rdfs:seeAlso``; the series' ``dcat:last`` is this member. A harvester walks ``dcat:prev``
  to the first member and has every file; the union of the graphs is the whole dataset.
- **Croissant 1.1**: no term links one Croissant document to another; the spec's answer for a
  dataset that grows by new files is ``isLiveDataset`` ("Live datasets"), and PROV-O, which
  Croissant 1.1 uses for provenance, has ``prov:wasRevisionOf`` for the version before. So
  each document is a live dataset's version (``version`` = head) listing the
  ``cr:FileObject``s and record sets of the data files this publish added, and
  ``prov:wasRevisionOf`` the previous document's URL. Every document has the same ``@id``
  (the dataset ID): merged as RDF, their distributions and record sets are the whole list.

Which blocks are new is the target's fact (the head it held); :func:`facts_since` walks
from the head down to it only, and the rest of what the documents say comes from the
verified chain's cached facts (:class:`~odfweb3.odf.facts.ChainFacts`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from odfweb3.descriptor.croissant import croissant_from_facts
from odfweb3.descriptor.dcat import dcat_from_facts
from odfweb3.descriptor.discovery_facts import (
    DataFiles,
    DiscoveryFacts,
    Presentation,
    discovery_facts,
    discovery_facts_walked,
)
from odfweb3.odf.chain import ChainEntry, walk_chain
from odfweb3.odf.facts import ChainFacts
from odfweb3.odf.identity import DatasetId
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.lineage import InputState
from odfweb3.odf.model_gen import SetDataSchema
from odfweb3.odf.multihash import multihash_to_str

__all__ = [
    "CROISSANT_MEDIA_TYPE",
    "DCAT_MEDIA_TYPE",
    "Earlier",
    "facts_since",
    "published_croissant",
    "published_dcat",
]

#: Croissant's media type (spec 1.1, "Namespaces": JSON-LD with the Croissant profile).
CROISSANT_MEDIA_TYPE: Final = 'application/ld+json; profile="http://mlcommons.org/croissant/1.1"'
DCAT_MEDIA_TYPE: Final = "application/ld+json"


@dataclass(frozen=True)
class Earlier:
    """What the target held before this publish: its head and the URLs of the documents
    published with it (None when it has none: a first publish, or one before these
    documents were published)."""

    head: bytes | None = None
    croissant: str | None = None
    dcat: str | None = None


def facts_since(
    reader: DatasetReader,
    head: bytes,
    since: bytes | None,
    cached: ChainFacts | None,
    chain: Sequence[ChainEntry] | None = None,
    whole: DiscoveryFacts | None = None,
) -> DiscoveryFacts:
    """The discovery facts at ``head`` whose ``files`` are only the data files of the blocks
    above ``since`` (every data file when ``since`` is None or not an ancestor).

    Reads the blocks from ``head`` down to ``since`` (verified by the walk, each ``prev``
    checked), and below it only when those blocks change the schema (to find the schema in
    force for the files before the change); the dataset's identity, title, license and
    lineage come from ``cached``, the verified chain's facts at ``head``. Without them, or
    when ``since`` is not met, the whole chain is read: ``chain`` when the caller holds
    the verified entries already (head first), else walked again holding no block
    (:func:`discovery_facts_walked`: a first publish of a long chain renders every data
    file, and the decoded chain would be most of its memory). ``whole``: the whole chain's
    facts at ``head`` when the caller has them already (the verified load of a first
    publish gathers them: then no walk at all).
    """
    if since is None and whole is not None and whole.head == head:
        return whole
    if since is None:  # every file: the entries held, else one walk that holds no block
        return discovery_facts(chain) if chain else discovery_facts_walked(walk_chain(reader, head))
    above: list[ChainEntry] = []
    below: list[ChainEntry] = []  # ``since`` and what was read under it
    walk = walk_chain(reader, head)
    for e in walk:
        if e.hash == since:
            below.append(e)
            break
        above.append(e)
    met = bool(below)
    if not met or cached is None:
        if chain:
            whole = discovery_facts(chain)
        else:  # ``above`` is the whole chain when ``since`` was not met
            whole = discovery_facts_walked(itertools.chain(above, below, walk))
        if not met:
            return whole
        cut = below[0].block.sequence_number
        return replace(whole, files=DataFiles(f for f in whole.files if f.sequence > cut))
    rules = cached.rules
    schema_event = rules.schema_event
    if any(isinstance(e.block.event, SetDataSchema) for e in above):
        # The schema in force at ``since``: the newest SetDataSchema at or below it.
        schema_event = None
        for e in [*below, *walk]:
            if isinstance(e.block.event, SetDataSchema) and e.block.event.schema is not None:
                schema_event = e.block.event
                break
    ids = [str(DatasetId.from_bytes(d)) if d else None for d in rules.transform_inputs or ()]
    states: dict[str, InputState] = {}
    for did, end in zip(ids, rules.exec_inputs or (), strict=False):
        if did is not None:
            states[did] = InputState(end[0], end[1])
    base = DiscoveryFacts(
        dataset_id=str(DatasetId.from_bytes(cached.dataset_id)),
        head=below[0].hash,
        sequence=below[0].block.sequence_number,
        created=cached.created,
        modified=cached.modified,
        info=cached.info,
        license=cached.license,
        inputs=tuple(d for d in ids if d is not None),
        input_states=states,
        schema=schema_event.schema if isinstance(schema_event, SetDataSchema) else None,
    )
    return base.extended(reversed(above))


def published_croissant(
    facts: DiscoveryFacts, shown: Presentation, earlier: Earlier, *, streamed: bool = False
) -> dict[str, Any]:
    """The Croissant 1.1 document of one publish: the data files ``facts`` lists (those the
    publish added, :func:`facts_since`), a live dataset, ``prov:wasRevisionOf`` the document
    published before it on the target (``streamed``: its lists made while it is encoded,
    :func:`~odfweb3.descriptor.codec.encode_descriptor_chunks`)."""
    doc = croissant_from_facts(facts, shown, streamed=streamed)
    doc["isLiveDataset"] = True
    if earlier.croissant:
        doc["prov:wasRevisionOf"] = {"@id": earlier.croissant}
    # Record sets are named by block (slice-<sequence>): their ids stay unique across the
    # documents of one dataset.
    return doc


def published_dcat(
    facts: DiscoveryFacts, shown: Presentation, earlier: Earlier, *, streamed: bool = False
) -> dict[str, Any]:
    """The DCAT 3 graph of one publish: the series and this publish's member dataset with
    the distributions of the data files ``facts`` lists, ``dcat:prev`` the member published
    before it on the target (``rdfs:seeAlso`` its document; ``streamed`` as
    :func:`published_croissant`)."""
    doc = dcat_from_facts(facts, shown, streamed=streamed)
    context = {
        **doc["@context"],
        "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
        "dcat:prev": {"@type": "@id"},
        "rdfs:seeAlso": {"@type": "@id"},
    }
    graph = list(doc["@graph"])
    if earlier.head is not None:
        prev_id = f"{facts.dataset_id}#{multihash_to_str(earlier.head)}"
        member = dict(graph[1])
        member["dcat:prev"] = prev_id
        graph[1] = member
        if earlier.dcat:
            graph.append({"@id": prev_id, "rdfs:seeAlso": earlier.dcat})
    return {"@context": context, "@graph": graph}
