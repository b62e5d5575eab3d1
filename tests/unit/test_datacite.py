"""DataCite 4.5 JSON from the chain, checked against the DataCite 4.5 JSON Schema that the
``datacite`` package (inveniosoftware) ships, and rendered by it as kernel-4.5 XML."""

import json

import pytest
from datacite import schema45
from lxml import etree

from odfweb3.cli.main import main
from odfweb3.descriptor.datacite import UNAVAILABLE, build_datacite, datacite_problems
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.chain import walk_chain
from odfweb3.odf.derivative import create_derivative_dataset
from odfweb3.odf.example_schema import PAYLOAD_SCHEMA, set_data_schema
from odfweb3.odf.identity import DatasetId
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str

from .test_descriptor import SEED, chain_of

PUBLISHER = {"name": "Ada Lovelace", "type": "Person"}
KERNEL = "{http://datacite.org/schema/kernel-4}"


def valid(doc):
    """Valid against the 4.5 JSON Schema (every error listed on failure); its XML."""
    errors = [e.message for e in schema45.validator.iter_errors(doc)]
    assert errors == []
    return etree.fromstring(schema45.tostring(doc).encode())


def chain(path):
    return list(walk_chain(DatasetReader.open(path)))


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    base = tmp_path_factory.mktemp("dc")
    root = create_root_dataset(base / "in", blocks=2, data_bytes=3000, seed=41, fsync=False)
    deriv = create_derivative_dataset(base / "d", [root.path], transactions=2, seed=42)
    return chain(root.path), chain(deriv.path)


def did_of(entries):
    return str(DatasetId.from_bytes(entries[-1].block.event.dataset_id))


def test_version_and_concept_of_a_root_dataset(datasets):
    entries, _ = datasets
    did, head = did_of(entries), multihash_to_str(entries[0].hash)
    version = build_datacite(entries, PUBLISHER, landing="ipns://k51q")
    xml = valid(version)
    assert version["version"] == str(entries[0].block.sequence_number)
    assert version["relatedIdentifiers"] == [
        {
            "relatedIdentifier": did,
            "relatedIdentifierType": "URL",
            "relationType": "IsVersionOf",
            "resourceTypeGeneral": "Dataset",
        }
    ]
    assert version["alternateIdentifiers"][0]["alternateIdentifier"] == f"{did}#{head}"
    assert version["rightsList"][0]["rightsIdentifier"] == "CC0-1.0"
    assert xml.tag == f"{KERNEL}resource"
    rel = xml.find(f"{KERNEL}relatedIdentifiers/{KERNEL}relatedIdentifier")
    assert rel.get("relationType") == "IsVersionOf" and rel.text == did
    concept = build_datacite(entries, PUBLISHER, which="concept")
    valid(concept)
    assert "version" not in concept
    assert [(r["relationType"], r["relatedIdentifier"]) for r in concept["relatedIdentifiers"]] == [
        ("HasVersion", f"{did}#{head}")
    ]
    assert datacite_problems(version) == [] == datacite_problems(concept)


def test_derivative_is_derived_from_its_input(datasets):
    root, deriv = datasets
    for which in ("version", "concept"):
        doc = build_datacite(deriv, PUBLISHER, which=which)
        valid(doc)
        derived = [r for r in doc["relatedIdentifiers"] if r["relationType"] == "IsDerivedFrom"]
        assert [r["relatedIdentifier"] for r in derived] == [did_of(root)]


def test_missing_fields_are_unavailable_and_listed_one_line_each():
    doc = build_datacite(chain_of(SEED, set_data_schema(PAYLOAD_SCHEMA)), None)
    valid(doc)
    assert doc["titles"] == [{"title": UNAVAILABLE}]
    assert datacite_problems(doc) == [
        "title unavailable: add a SetInfo event with a description",
        "creator unavailable: set publisher.name in odfweb3.yaml",
        "publisher unavailable: set publisher.name in odfweb3.yaml",
        "description missing: add a SetInfo event with a description",
        "rights missing: add a SetLicense event (with an SPDX id) to the dataset",
    ]


def test_the_schema_refuses_a_broken_document(datasets):
    doc = build_datacite(datasets[0], PUBLISHER)
    doc["relatedIdentifiers"][0]["relationType"] = "IsCousinOf"
    assert not schema45.validate(doc)
    del doc["relatedIdentifiers"]
    doc.pop("titles")
    assert not schema45.validate(doc)


def test_cli_describe_datacite(tmp_path, capsys):
    built = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=2000, seed=43, fsync=False)
    env = {"HOME": str(tmp_path), "ODFWEB3_KEYSTORE": str(tmp_path / "keys")}
    args = ["describe", str(built.path), "--format", "datacite", "--json"]
    assert main([*args, "--concept"], env=env) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)
    valid(data["datacite"])
    # no publisher.name configured: the signing key names the creator, the publisher is unknown
    assert data["datacite"]["creators"][0]["name"].startswith("ipns://")
    assert data["missing"] == ["publisher unavailable: set publisher.name in odfweb3.yaml"]
    assert err.count("datacite: publisher unavailable") == 1
