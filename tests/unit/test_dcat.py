"""DCAT 3 from the chain: parsed by rdflib's JSON-LD parser, checked by pyshacl against
``schemas/dcat-shapes.ttl`` (shapes written from the DCAT 3 Recommendation's ranges)."""

import copy
import hashlib
import json
from importlib import resources

import pyshacl
import pytest
import rdflib
from rdflib.namespace import DCAT, DCTERMS, RDF

from odfweb3.cli.main import main
from odfweb3.descriptor.croissant import data_file_urls, local_sha256
from odfweb3.descriptor.dcat import PARQUET_MEDIA_TYPE, SHAPES_RESOURCE, build_dcat, dcat_problems
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.chain import walk_chain
from odfweb3.odf.derivative import create_derivative_dataset
from odfweb3.odf.example_schema import PAYLOAD_SCHEMA, set_data_schema
from odfweb3.odf.identity import DatasetId
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str

from .test_descriptor import SEED, chain_of

SPDX = rdflib.Namespace("http://spdx.org/rdf/terms#")
ROOT_CID = "bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi"


@pytest.fixture(scope="module")
def shapes():
    text = resources.files("odfweb3.schemas").joinpath(SHAPES_RESOURCE).read_text("utf-8")
    return rdflib.Graph().parse(data=text, format="turtle")


def check(doc, shapes):
    """(conforms, [(severity, message)]) of pyshacl on the document's graph."""
    g = rdflib.Graph().parse(data=json.dumps(doc), format="json-ld")
    conforms, report, _ = pyshacl.validate(g, shacl_graph=shapes, allow_warnings=True)
    sh = rdflib.Namespace("http://www.w3.org/ns/shacl#")
    results = [
        (
            str(report.value(r, sh.resultSeverity)).rsplit("#", 1)[-1],
            str(report.value(r, sh.resultMessage)),
        )
        for r in report.subjects(RDF.type, sh.ValidationResult)
    ]
    return conforms, g, results


def dcat_of(path):
    reader = DatasetReader.open(path)
    entries = list(walk_chain(reader))
    doc = build_dcat(
        entries,
        {"name": "Ada Lovelace"},
        url_of=data_file_urls(ipfs=ROOT_CID, gateway="http://127.0.0.1:8080"),
        sha256_of=local_sha256(reader),
    )
    return reader, entries, doc


def test_root_example_conforms_with_a_distribution_per_data_file(tmp_path, shapes):
    built = create_root_dataset(tmp_path / "ds", blocks=3, data_bytes=6000, seed=21, fsync=False)
    reader, entries, doc = dcat_of(built.path)
    conforms, g, results = check(doc, shapes)
    assert conforms and results == []
    series = rdflib.URIRef(str(DatasetId.from_bytes(entries[-1].block.event.dataset_id)))
    version = rdflib.URIRef(f"{series}#{multihash_to_str(entries[0].hash)}")
    assert (series, RDF.type, DCAT.DatasetSeries) in g
    assert (version, RDF.type, DCAT.Dataset) in g
    assert (version, DCAT.inSeries, series) in g and (series, DCAT.last, version) in g
    dists = list(g.objects(version, DCAT.distribution))
    assert len(dists) == 3
    for d in dists:
        mh = str(g.value(d, DCTERMS.identifier))
        data = (reader.root / "data" / mh).read_bytes()
        assert str(g.value(d, DCAT.accessURL)) == f"http://127.0.0.1:8080/ipfs/{ROOT_CID}/data/{mh}"
        assert g.value(d, DCAT.mediaType) == rdflib.URIRef(PARQUET_MEDIA_TYPE)
        assert g.value(d, DCAT.byteSize).toPython() == len(data)
        checksum = g.value(d, SPDX.checksum)
        assert g.value(checksum, SPDX.algorithm) == SPDX.checksumAlgorithm_sha256
        assert str(g.value(checksum, SPDX.checksumValue)) == hashlib.sha256(data).hexdigest()
    assert dcat_problems(doc) == []


def test_derivative_is_derived_from_its_input_series(tmp_path, shapes):
    root = create_root_dataset(tmp_path / "in", blocks=2, data_bytes=3000, seed=22, fsync=False)
    deriv = create_derivative_dataset(tmp_path / "d", [root.path], transactions=2, seed=23)
    _, _, doc = dcat_of(deriv.path)
    conforms, g, _ = check(doc, shapes)
    assert conforms
    in_entries = list(walk_chain(DatasetReader.open(root.path)))
    in_id = str(DatasetId.from_bytes(in_entries[-1].block.event.dataset_id))
    prov = rdflib.Namespace("http://www.w3.org/ns/prov#")
    assert set(g.objects(None, prov.wasDerivedFrom)) == {rdflib.URIRef(in_id)}


def test_missing_fields_are_warnings_one_line_each(shapes):
    doc = build_dcat(chain_of(SEED, set_data_schema(PAYLOAD_SCHEMA)), None)
    conforms, _, results = check(doc, shapes)
    assert conforms  # warnings only: the document is still DCAT
    lines = dcat_problems(doc)
    assert lines == [
        "title missing: add a SetInfo event with a description",
        "description missing: add a SetInfo event with a description",
        "license missing: add a SetLicense event (with an SPDX id)",
        "publisher missing: set publisher.name in odfweb3.yaml",
    ]
    # the shapes say the same, for the version and for the series
    assert {m for sev, m in results} == set(lines)
    assert {sev for sev, _ in results} == {"Warning"}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("dcat:mediaType", "application/vnd.apache.parquet"),  # not an IANA IRI
        ("dcat:byteSize", -1),
        ("dcat:accessURL", None),
    ],
)
def test_the_shapes_refuse_what_dcat_does_not_allow(tmp_path, shapes, key, value):
    built = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=2000, seed=24, fsync=False)
    _, _, doc = dcat_of(built.path)
    bad = copy.deepcopy(doc)
    dist = bad["@graph"][1]["dcat:distribution"][0]
    if value is None:
        del dist[key]
    elif key == "dcat:byteSize":
        dist[key] = {"@value": str(value), "@type": "xsd:integer"}
    else:
        bad["@context"][key] = {"@type": "@vocab"}
        dist[key] = value
    conforms, _, results = check(bad, shapes)
    assert not conforms and any(sev == "Violation" for sev, _ in results)


def test_cli_describe_dcat_local_files_are_file_iris(tmp_path, capsys, shapes):
    built = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=2000, seed=25, fsync=False)
    env = {"HOME": str(tmp_path), "ODFWEB3_KEYSTORE": str(tmp_path / "keys")}
    assert main(["describe", str(built.path), "--format", "dcat", "--json"], env=env) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["format"] == "dcat" and data["missing"] == []
    doc = data["dcat"]
    conforms, g, _ = check(doc, shapes)
    assert conforms
    urls = [str(u) for u in g.objects(None, DCAT.accessURL)]
    assert urls and all(u.startswith(built.path.resolve().as_uri() + "/data/") for u in urls)
