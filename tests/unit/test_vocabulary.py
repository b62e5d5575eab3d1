"""odfweb3's own terms: every one the descriptor uses is defined in schemas/odfweb3-ns.ttl
(read by rdflib), its values are the ODF specification's names, and the Croissant, DCAT and
DataCite documents use none of them."""

import json
from importlib import resources

import pytest
import rdflib
from rdflib.namespace import OWL, RDF, RDFS

from odfweb3.descriptor import build_descriptor, descriptor_context
from odfweb3.descriptor.croissant import build_croissant, data_file_urls
from odfweb3.descriptor.datacite import build_datacite
from odfweb3.descriptor.dcat import build_dcat
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.chain import walk_chain
from odfweb3.odf.derivative import create_derivative_dataset
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.model_gen import DatasetKind

NS = "https://odfweb3.invalid/ns#"
PUBLISHER = {"name": "Ada Lovelace", "type": "Person"}


@pytest.fixture(scope="module")
def vocabulary():
    text = resources.files("odfweb3.schemas").joinpath("odfweb3-ns.ttl").read_text("utf-8")
    return rdflib.Graph().parse(data=text, format="turtle")


@pytest.fixture(scope="module")
def chains(tmp_path_factory):
    base = tmp_path_factory.mktemp("vocab")
    root = create_root_dataset(base / "r", blocks=2, data_bytes=2000, seed=5511, fsync=False)
    deriv = create_derivative_dataset(base / "d", [root.path], transactions=2, seed=5512)
    return [list(walk_chain(DatasetReader.open(p))) for p in (root.path, deriv.path)]


def our_terms(graph):
    return {p for p in graph.predicates() if str(p).startswith(NS)}


def test_every_term_of_the_context_is_defined(vocabulary):
    ontology = rdflib.URIRef(NS.removesuffix("#"))
    assert (ontology, RDF.type, OWL.Ontology) in vocabulary
    ctx = descriptor_context()
    assert ctx["odfweb3"] == NS
    terms = {v for v in ctx.values() if isinstance(v, str) and v.startswith("odfweb3:")}
    assert terms == {"odfweb3:head", "odfweb3:kind"}
    for term in terms:
        iri = rdflib.URIRef(NS + term.removeprefix("odfweb3:"))
        assert (iri, RDF.type, OWL.DatatypeProperty) in vocabulary
        assert (iri, RDFS.isDefinedBy, ontology) in vocabulary
        assert vocabulary.value(iri, RDFS.label) and vocabulary.value(iri, RDFS.comment)


def test_the_descriptor_uses_only_defined_terms_with_the_specs_values(vocabulary, chains):
    defined = {s for s in vocabulary.subjects(RDFS.isDefinedBy, None)}
    for entries, kind in zip(chains, ("Root", "Derivative"), strict=True):
        doc = build_descriptor(entries, PUBLISHER, {"ipfs": "bafyexample"})
        g = rdflib.Graph().parse(data=json.dumps(doc), format="json-ld")
        used = our_terms(g)
        assert used == {rdflib.URIRef(NS + "head"), rdflib.URIRef(NS + "kind")}
        assert used <= defined
        assert [str(o) for o in g.objects(None, rdflib.URIRef(NS + "kind"))] == [kind]
        assert kind.upper() in DatasetKind.__members__


def test_the_other_formats_use_no_term_of_ours(chains):
    url_of = data_file_urls(ipfs="bafyexample")
    for entries in chains:
        for build in (build_croissant, build_dcat):
            doc = build(entries, PUBLISHER, url_of=url_of, landing="ipns://k51")
            g = rdflib.Graph().parse(data=json.dumps(doc), format="json-ld")
            assert len(g) > 20 and not our_terms(g)
            assert "odfweb3.invalid" not in json.dumps(doc)
        for which in ("version", "concept"):
            assert "odfweb3.invalid" not in json.dumps(
                build_datacite(entries, PUBLISHER, which=which)
            )
