"""The discovery descriptor: built from real chains, checked like a SHACL shape, and its Turtle
compared with rdflib's own JSON-LD expansion of the same document (graph isomorphism)."""

import json
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path

import pytest
import rdflib
from hypothesis import given, settings
from hypothesis import strategies as st
from rdflib.compare import graph_diff, isomorphic, to_isomorphic

from odfweb3.descriptor import (
    DATASET_TYPE,
    MEDIA_TYPE,
    ODF_SPEC_URL,
    build_descriptor,
    decode_descriptor,
    derive_title,
    descriptor_context,
    descriptor_tags,
    encode_descriptor,
    to_turtle,
    validate_descriptor,
    with_locators,
)
from odfweb3.errors import FormatError, HashMismatch
from odfweb3.odf.builder import create_root_dataset, example_keypair
from odfweb3.odf.chain import ChainEntry, walk_chain
from odfweb3.odf.codec import block_hash, encode_block
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.model_gen import (
    AttachmentEmbedded,
    AttachmentsEmbedded,
    DatasetKind,
    MetadataBlock,
    Seed,
    SetAttachments,
    SetInfo,
    SetLicense,
)
from odfweb3.odf.multihash import hash_bytes, multihash_to_str
from odfweb3.odf.timestamp import Timestamp

# rdflib's JSON-LD parser uses its own deprecated ConjunctiveGraph internally.
pytestmark = pytest.mark.filterwarnings("ignore:ConjunctiveGraph is deprecated")

PUBLISHER = {
    "type": "Organization",
    "name": "Example Air Lab",
    "mbox": "data@example.org",
    "homepage": "https://example.org/",
}
CID = "bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi"
IPNS = "k51qzi5uqu5dlvj2baxnqndepeb86cbk3ng7n3i46uzyxzyqj2xjonzllnv0v8"
AR_ID = "bndIwac23PrgkuY9ZIgxXDYNKTzLcLOLGY5fJbP6Gqo"


def chain_of(*events, start=datetime(2031, 5, 6, 7, 8, 9, tzinfo=UTC)):
    """An in-memory chain (head first) of the given events, Seed first."""
    entries, prev = [], None
    for seq, ev in enumerate(events):
        block = MetadataBlock(
            system_time=Timestamp.from_datetime(start + timedelta(minutes=seq)),
            prev_block_hash=prev,
            sequence_number=seq,
            event=ev,
        )
        data = encode_block(block)
        prev = block_hash(data)
        entries.append(ChainEntry(prev, block, len(data)))
    return entries[::-1]


SEED = Seed(dataset_id=example_keypair(3).dataset_id.to_bytes(), dataset_kind=DatasetKind.ROOT)


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    path = tmp_path_factory.mktemp("desc") / "ds"
    built = create_root_dataset(path, blocks=3, data_bytes=3000, seed=5, fsync=False)
    entries = list(walk_chain(DatasetReader.open(path)))
    return built, entries


def on_disk_bytes(root: Path) -> int:
    return sum(
        p.stat().st_size for d in ("blocks", "data", "checkpoints") for p in (root / d).iterdir()
    )


def graphs(doc):
    from_ttl = rdflib.Graph().parse(data=to_turtle(doc), format="turtle")
    from_jsonld = rdflib.Graph().parse(data=encode_descriptor(doc), format="json-ld")
    return from_ttl, from_jsonld


def assert_same_graph(doc):
    a, b = graphs(doc)
    if not isomorphic(a, b):
        _, only_a, only_b = graph_diff(to_isomorphic(a), to_isomorphic(b))
        pytest.fail(f"turtle only: {sorted(only_a)}\njson-ld only: {sorted(only_b)}")
    return a


def test_fields_from_example_dataset(example):
    built, entries = example
    doc = build_descriptor(entries, PUBLISHER, {"ipfs": CID, "ipns": IPNS, "ar": AR_ID})
    did = str(example_keypair(5).dataset_id)
    assert doc["@context"] == descriptor_context()
    assert doc["id"] == doc["identifier"] == did
    assert doc["type"] == DATASET_TYPE == "dcmitype:Dataset"
    assert doc["title"] == "Example dataset written by odfweb3"
    assert doc["description"] == "Example dataset written by odfweb3"
    assert doc["subject"] == ["example", "odfweb3"]
    assert doc["license"] == "https://spdx.org/licenses/CC0-1.0.html"
    assert doc["rights"] == "Creative Commons Zero v1.0 Universal"
    assert doc["creator"] == {
        "type": "foaf:Organization",
        "name": "Example Air Lab",
        "mbox": "mailto:data@example.org",
        "homepage": "https://example.org/",
    }
    # The builder stamps block n at EPOCH + (n+1) s: Seed 12:00:01, head (block 6) 12:00:07.
    assert doc["created"] == "2050-01-01T12:00:01Z"
    assert doc["modified"] == "2050-01-01T12:00:07Z"
    assert doc["format"] == ODF_SPEC_URL
    size = on_disk_bytes(built.path)
    assert doc["byteSize"] == size and doc["extent"] == f"{size} bytes"
    assert doc["head"] == (built.path / "refs/head").read_text().strip()
    assert doc["kind"] == "Root"
    assert doc["relation"] == [f"ipfs://{CID}", f"ipns://{IPNS}", f"ar://{AR_ID}"]
    assert "hasPart" not in doc
    assert validate_descriptor(doc) == []


def test_turtle_is_the_jsonld_graph(example):
    _, entries = example
    doc = build_descriptor(entries, PUBLISHER, {"ipfs": CID, "ipns": IPNS, "ar": AR_ID})
    g = assert_same_graph(doc)
    dct = rdflib.Namespace("http://purl.org/dc/terms/")
    foaf = rdflib.Namespace("http://xmlns.com/foaf/0.1/")
    s = rdflib.URIRef(doc["id"])
    assert (s, rdflib.RDF.type, rdflib.URIRef("http://purl.org/dc/dcmitype/Dataset")) in g
    assert g.value(s, dct.created) == rdflib.Literal(
        "2050-01-01T12:00:01Z", datatype=rdflib.XSD.dateTime
    )
    assert g.value(s, dct.license) == rdflib.URIRef("https://spdx.org/licenses/CC0-1.0.html")
    agent = g.value(s, dct.creator)
    assert isinstance(agent, rdflib.BNode)
    assert (agent, rdflib.RDF.type, foaf.Organization) in g
    assert g.value(agent, foaf.mbox) == rdflib.URIRef("mailto:data@example.org")
    assert set(g.objects(s, dct.relation)) == {
        rdflib.URIRef(u) for u in (f"ipfs://{CID}", f"ipns://{IPNS}", f"ar://{AR_ID}")
    }
    size = g.value(s, rdflib.URIRef("http://www.w3.org/ns/dcat#byteSize"))
    assert size.datatype == rdflib.XSD.nonNegativeInteger and int(size) == doc["byteSize"]
    head = g.value(s, rdflib.URIRef("https://odfweb3.invalid/ns#head"))
    assert str(head) == doc["head"]


def test_missing_setinfo_and_publisher_name_the_fix():
    entries = chain_of(SEED, SetLicense(short_name="MIT", name="MIT License", spdx_id="MIT"))
    doc = build_descriptor(entries, None)
    assert "title" not in doc and "creator" not in doc
    problems = {p.field: p for p in validate_descriptor(doc)}
    assert problems["title"].severity == "error"
    assert "title missing" in problems["title"].message
    assert "add a SetInfo event with a description" in problems["title"].message
    assert problems["creator"].severity == "error"
    assert problems["creator"].message == "creator missing: set publisher.name in odfweb3.yaml"
    assert problems["description"].severity == "warning"
    assert "license" not in problems
    assert doc["license"] == "https://spdx.org/licenses/MIT.html"
    # An explicit title satisfies the rule without a SetInfo.
    doc = build_descriptor(entries, {"name": "A. N. Other"}, title="Sensor log")
    assert [p.field for p in validate_descriptor(doc) if p.severity == "error"] == []
    assert doc["creator"]["type"] == "foaf:Agent"
    assert_same_graph(doc)


def test_license_falls_back_to_website_and_latest_events_win():
    entries = chain_of(
        SEED,
        SetInfo(description="Old description. Ignored.", keywords=("old",)),
        SetLicense(name="Custom terms", website_url="https://example.org/terms"),
        SetInfo(description="River levels, hourly! Measured at 3 gauges.", keywords=("water",)),
    )
    doc = build_descriptor(entries, PUBLISHER)
    assert doc["title"] == "River levels, hourly!"
    assert doc["subject"] == ["water"]
    assert doc["license"] == "https://example.org/terms" and doc["rights"] == "Custom terms"
    assert doc["created"] == "2031-05-06T07:08:09Z" and doc["modified"] == "2031-05-06T07:11:09Z"
    no_license = build_descriptor(chain_of(SEED, SetInfo(description="x")), PUBLISHER)
    warnings = [p for p in validate_descriptor(no_license) if p.field == "license"]
    assert warnings[0].severity == "warning" and "SetLicense" in warnings[0].message


def test_attachments_are_listed_as_parts():
    att = SetAttachments(
        attachments=AttachmentsEmbedded(
            items=(
                AttachmentEmbedded(path="README.md", content="# Readme"),
                AttachmentEmbedded(path="docs/schema.md", content="cols"),
            )
        )
    )
    older = SetAttachments(
        attachments=AttachmentsEmbedded(items=(AttachmentEmbedded(path="OLD.md", content="x"),))
    )
    doc = build_descriptor(chain_of(SEED, older, SetInfo(description="D."), att), PUBLISHER)
    assert doc["hasPart"] == [{"title": "README.md"}, {"title": "docs/schema.md"}]
    g = assert_same_graph(doc)
    dct = rdflib.Namespace("http://purl.org/dc/terms/")
    parts = set(g.objects(rdflib.URIRef(doc["id"]), dct.hasPart))
    assert {str(g.value(p, dct.title)) for p in parts} == {"README.md", "docs/schema.md"}


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("Air quality in Lyon. Hourly PM2.5.", "Air quality in Lyon"),
        ("Version 2.5 of the data", "Version 2.5 of the data"),
        ("What is measured? Rain.", "What is measured?"),
        ("  spread\n over   lines.  ", "spread over lines"),
        ("", None),
        (None, None),
        ("word " * 40, ("word " * 24).strip() + "…"),
    ],
)
def test_derive_title(text, title):
    assert derive_title(text) == title


def test_validation_rules_name_field_and_fix(example):
    _, entries = example
    good = build_descriptor(entries, PUBLISHER, {"ipfs": CID})

    def fields(**changes):
        doc = {**good, **changes}
        doc = {k: v for k, v in doc.items() if v is not None}
        return {p.field for p in validate_descriptor(doc) if p.severity == "error"}

    assert fields() == set()
    assert fields(created="yesterday") == {"created"}
    assert fields(created="2050-01-01") == {"created"}  # a date-time is required
    assert fields(modified="2049-12-31T00:00:00Z") == {"modified"}
    assert fields(created=None) == {"created"}
    assert fields(head="f1620abcd") == {"head"}
    assert fields(head="zNotAMultihash") == {"head"}
    assert fields(head=None) == {"head"}
    # Any final multibase is accepted for the head (base32 of the same multihash).
    mh = hash_bytes(b"x")
    from multiformats import multibase

    assert fields(head=multibase.encode(mh, "base32")) == set()
    assert fields(id="did:web:example.org") == {"id"}
    assert fields(type="dcterms:Dataset") == {"type"}
    assert fields(relation=["ipfs://notacid"]) == {"relation"}
    assert fields(relation=["ar://short"]) == {"relation"}
    assert fields(relation=["ftp://x"]) == {"relation"}
    assert fields(license="CC0") == {"license"}
    assert fields(byteSize=-1) == {"byteSize"}
    assert fields(creator={**good["creator"], "mbox": "mailto:nobody"}) == {"creator.mbox"}
    assert fields(creator={"type": "foaf:Person", "name": " "}) == {"creator.name"}
    assert fields(creator={"type": "schema:Person", "name": "x"}) == {"creator.type"}
    assert fields(**{"@context": "https://example.org/ctx"}) == {"@context"}
    assert fields(title="") == {"title"}


def test_encoding_is_canonical_and_verified(example):
    _, entries = example
    doc = build_descriptor(entries, PUBLISHER)
    data = encode_descriptor(doc)
    assert data == encode_descriptor(json.loads(data))  # key order does not matter
    assert b"\n" not in data and data.startswith(b'{"@context":{"@version":1.1,')
    assert decode_descriptor(data) == doc
    assert decode_descriptor(data, expected=hash_bytes(data)) == doc
    with pytest.raises(HashMismatch):
        decode_descriptor(data + b" ", expected=hash_bytes(data))
    for garbage in (b"\xff\xfe", b"{not json", b"[1, 2]", b'{"id": "x"}', b""):
        with pytest.raises(FormatError):
            decode_descriptor(garbage)
    with pytest.raises(FormatError):
        encode_descriptor({**doc, "byteSize": float("nan")})


def test_descriptor_tags_respect_ans104_limits(example):
    _, entries = example
    doc = build_descriptor(entries, PUBLISHER)
    tags = dict(descriptor_tags(doc))
    assert tags["Content-Type"] == MEDIA_TYPE == "application/ld+json"
    assert tags["ODF-Dataset-Id"] == doc["id"] and tags["ODF-Head"] == doc["head"]
    assert tags["Title"] == doc["title"] and tags["Description"] == doc["description"]
    long = {**doc, "description": "é" * 2000}  # 4000 bytes of UTF-8
    value = dict(descriptor_tags(long))["Description"]
    raw = value.encode("utf-8")
    assert len(raw) <= 3072 and value.endswith("…") and set(value[:-1]) == {"é"}
    assert len(raw) > 3072 - 4
    assert "Title" not in dict(descriptor_tags({k: v for k, v in doc.items() if k != "title"}))
    # Title and description together stay within arbundles' 4096 bytes of encoded tags.
    both = descriptor_tags({**doc, "title": "t" * 5000, "description": "d" * 5000})
    assert sum(len(n) + len(v.encode()) for n, v in both) <= 3584
    assert dict(both)["Title"] == "t" * (3072 - 3) + "…"
    assert dict(both)["Description"].endswith("…")


def test_turtle_refuses_what_it_cannot_say(example):
    _, entries = example
    doc = build_descriptor(entries, PUBLISHER)
    with pytest.raises(FormatError, match="not a term"):
        to_turtle({**doc, "colour": "blue"})
    with pytest.raises(FormatError, match="IRI"):
        to_turtle({**doc, "license": "https://example.org/a b"})
    with pytest.raises(FormatError, match="@context"):
        to_turtle({k: v for k, v in doc.items() if k != "@context"})


def test_context_ships_as_package_data():
    text = resources.files("odfweb3.schemas").joinpath("odfweb3-context.jsonld").read_text()
    ctx = json.loads(text)["@context"]
    assert ctx == descriptor_context()
    assert ctx["dcterms"] == "http://purl.org/dc/terms/"
    assert ctx["foaf"] == "http://xmlns.com/foaf/0.1/"
    # The copy is fresh: mutating it does not change later documents.
    descriptor_context()["title"] = "x"
    assert descriptor_context()["title"] == "dcterms:title"


awkward_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), max_codepoint=0x1F9FF), max_size=40
)


@settings(max_examples=60, deadline=None)
@given(
    description=awkward_text,
    keywords=st.lists(awkward_text, max_size=4),
    name=awkward_text.filter(lambda s: s.strip()),
)
def test_turtle_matches_jsonld_for_any_text(description, keywords, name):
    entries = chain_of(SEED, SetInfo(description=description, keywords=tuple(keywords)))
    doc = build_descriptor(entries, {"type": "Person", "name": name}, {"ar": AR_ID})
    assert_same_graph(doc)
    assert decode_descriptor(encode_descriptor(doc)) == doc


def test_head_is_the_chain_head(example):
    built, entries = example
    assert build_descriptor(entries, None)["head"] == multihash_to_str(built.head)
    with pytest.raises(ValueError):
        build_descriptor(entries[:-1], None)  # not down to the Seed
    with pytest.raises(ValueError, match="locator"):
        build_descriptor(entries, None, {"web": "https://x"})


def test_with_locators_equals_building_with_them(example):
    # publish_bundle builds the descriptor once and adds its manifest id after.
    _built, entries = example
    bare = build_descriptor(entries, PUBLISHER)
    for locators in ({"ar": AR_ID}, {"ipfs": CID, "ipns": IPNS}, {}):
        full = build_descriptor(entries, PUBLISHER, locators)
        assert encode_descriptor(with_locators(bare, locators)) == encode_descriptor(full)
    assert "relation" not in with_locators(build_descriptor(entries, PUBLISHER, {"ar": AR_ID}), {})
