"""The Croissant and DCAT documents of one publish: what it adds, linked to the one before.

``facts_since`` must say exactly what the whole chain says, with only the newer data
files, at every split of a root, a derivative and a chain whose schema changes above the
split; the documents must load in mlcroissant (and its records be read) and conform to
the DCAT shapes with pyshacl, and a harvester that follows ``dcat:prev`` / the Croissant
``prov:wasRevisionOf`` chain must find every data file once.
"""

import dataclasses
import json
from datetime import UTC, datetime
from importlib import resources

import mlcroissant as mlc
import pyshacl
import pytest
import rdflib
from rdflib.namespace import RDF, RDFS

from odfweb3.descriptor.croissant import local_sha256
from odfweb3.descriptor.dcat import SHAPES_RESOURCE
from odfweb3.descriptor.discovery_facts import Presentation, discovery_facts
from odfweb3.descriptor.published import (
    Earlier,
    facts_since,
    published_croissant,
    published_dcat,
)
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.chain import walk_chain
from odfweb3.odf.codec import encode_block
from odfweb3.odf.derivative import create_derivative_dataset
from odfweb3.odf.example_schema import PAYLOAD_SCHEMA, set_data_schema
from odfweb3.odf.facts import facts_of_chain
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.model_gen import (
    AddData,
    DataField,
    DataSchema,
    DataSlice,
    DataTypeInt64,
    OffsetInterval,
    SetInfo,
)
from odfweb3.odf.multihash import hash_bytes, multihash_to_str
from tests.support.croissant import sandbox_croissant

from .test_descriptor import SEED, chain_of

# DCAT 3 (rdflib names DCAT 2, without dcat:last or dcat:prev)
DCAT = rdflib.Namespace("http://www.w3.org/ns/dcat#")


@pytest.fixture(autouse=True)
def croissant_cache(tmp_path, monkeypatch):
    sandbox_croissant(monkeypatch, tmp_path / "cr")


@pytest.fixture(scope="module")
def shapes():
    text = resources.files("odfweb3.schemas").joinpath(SHAPES_RESOURCE).read_text("utf-8")
    return rdflib.Graph().parse(data=text, format="turtle")


def _expected(entries, since_index):
    """The whole chain's facts with only the data files above ``entries[since_index]``."""
    whole = discovery_facts(entries)
    cut = entries[since_index].block.sequence_number
    return dataclasses.replace(whole, files=tuple(f for f in whole.files if f.sequence > cut))


def _check_every_split(path):
    reader = DatasetReader.open(path)
    entries = list(walk_chain(reader))
    cached = facts_of_chain(entries)
    for i in range(len(entries)):
        got = facts_since(reader, entries[0].hash, entries[i].hash, cached)
        assert got == _expected(entries, i), f"split at block {i} from the head"
    # no earlier head, or one not in the chain: every data file
    assert facts_since(reader, entries[0].hash, None, cached) == discovery_facts(entries)
    assert facts_since(reader, entries[0].hash, b"\x16\x20" + bytes(32), cached) == (
        discovery_facts(entries)
    )
    # without cached facts the chain is read, with the same answer
    assert facts_since(reader, entries[0].hash, entries[1].hash, None) == _expected(entries, 1)


def test_facts_since_is_the_whole_chain_at_every_split_of_a_root(tmp_path):
    built = create_root_dataset(tmp_path / "ds", blocks=4, data_bytes=4000, seed=21, fsync=False)
    _check_every_split(built.path)


def test_facts_since_is_the_whole_chain_at_every_split_of_a_derivative(tmp_path):
    root = create_root_dataset(tmp_path / "in", blocks=2, data_bytes=3000, seed=22, fsync=False)
    deriv = create_derivative_dataset(tmp_path / "d", [root.path], transactions=3, seed=23)
    _check_every_split(deriv.path)


def _write_chain(root, entries):
    """A dataset directory holding the blocks of an in-memory chain (head first)."""
    for d in ("blocks", "data", "checkpoints", "refs"):
        (root / d).mkdir(parents=True, exist_ok=True)
    for e in entries:
        data = encode_block(e.block)
        assert hash_bytes(data) == e.hash
        (root / "blocks" / multihash_to_str(e.hash)).write_bytes(data)
    (root / "refs" / "head").write_text(multihash_to_str(entries[0].hash))


def test_a_schema_change_above_the_split_keeps_each_file_its_own_schema(tmp_path):
    other = DataSchema(fields=(DataField(name="offset", type=DataTypeInt64()),))

    def add(n):
        return AddData(
            new_data=DataSlice(
                logical_hash=hash_bytes(b"l%d" % n),
                physical_hash=hash_bytes(b"p%d" % n),
                offset_interval=OffsetInterval(start=n, end=n),
                size=10 + n,
            ),
            prev_offset=n - 1 if n else None,
        )

    entries = chain_of(
        SEED,
        SetInfo(description="Changing schemas."),
        set_data_schema(PAYLOAD_SCHEMA),
        add(0),
        add(1),
        add(2),
        set_data_schema(other),
        add(3),
        start=datetime(2031, 5, 6, tzinfo=UTC),
    )
    _write_chain(tmp_path / "ds", entries)
    reader = DatasetReader.open(tmp_path / "ds")
    cached = facts_of_chain(entries)
    for i in range(len(entries)):
        assert facts_since(reader, entries[0].hash, entries[i].hash, cached) == (
            _expected(entries, i)
        )
    got = facts_since(reader, entries[0].hash, entries[3].hash, cached)  # above add(1)
    assert [(f.sequence, f.schema) for f in got.files] == [(5, PAYLOAD_SCHEMA), (7, other)]


def _documents(reader, facts, earlier, name="ipfs://bafyroot"):
    shown = Presentation(
        {"name": "Ada Lovelace", "type": "Person"},
        landing="ipns://k51example",
        url_of=lambda rel: str(reader.root / rel),
        sha256_of=local_sha256(reader),
    )
    return published_croissant(facts, shown, earlier), published_dcat(facts, shown, earlier)


def _load(doc, path):
    path.write_text(json.dumps(doc))
    ds = mlc.Dataset(jsonld=str(path))
    assert not ds.metadata.ctx.issues.errors
    return ds


def _conforms(doc, shapes):
    g = rdflib.Graph().parse(data=json.dumps(doc), format="json-ld")
    conforms, _report, text = pyshacl.validate(g, shacl_graph=shapes, allow_warnings=True)
    assert conforms, text
    return g


def test_a_chain_of_publishes_lists_each_file_once_and_each_document_validates(tmp_path, shapes):
    path = tmp_path / "ds"
    create_root_dataset(path, blocks=3, data_bytes=3000, seed=24, fsync=False)
    heads, docs = [], []
    earlier = Earlier()
    for k in range(3):
        if k:
            append_blocks(path, k, data_bytes=1000 * k, seed=30 + k, fsync=False)
        reader = DatasetReader.open(path)
        entries = list(walk_chain(reader))
        facts = facts_since(reader, entries[0].hash, earlier.head, facts_of_chain(entries))
        croissant, dcat = _documents(reader, facts, earlier)
        docs.append((croissant, dcat))
        heads.append(entries[0].hash)
        earlier = Earlier(entries[0].hash, f"ipfs://croissant-{k}", f"ipfs://dcat-{k}")
    reader = DatasetReader.open(path)
    all_files = [f.path for f in discovery_facts(list(walk_chain(reader))).files]

    # Croissant: each document loads; its records are read from the files it lists
    listed = []
    for k, (croissant, _) in enumerate(docs):
        assert croissant["isLiveDataset"] is True
        if k == 0:
            assert "prov:wasRevisionOf" not in croissant
        else:
            assert croissant["prov:wasRevisionOf"] == {"@id": f"ipfs://croissant-{k - 1}"}
        ds = _load(croissant, tmp_path / f"croissant-{k}.json")
        offsets = [
            int(rec[f"{rs.uuid}/offset"])
            for rs in ds.metadata.record_sets
            for rec in ds.records(rs.uuid)
        ]
        assert offsets and offsets == sorted(offsets)
        listed += [fo["@id"] for fo in croissant["distribution"]]
        assert all(fo["sha256"] for fo in croissant["distribution"])
    assert listed == all_files  # every data file once, oldest first, across the documents
    assert [len(c["distribution"]) for c, _ in docs] == [3, 1, 2]

    # DCAT: each graph conforms; dcat:prev chains the members; the union holds every file
    union = rdflib.Graph()
    for k, (_, dcat) in enumerate(docs):
        g = _conforms(dcat, shapes)
        union += g
        member = rdflib.URIRef(f"{dcat['@graph'][0]['@id']}#{multihash_to_str(heads[k])}")
        assert (None, DCAT.last, member) in g
        prev = list(g.objects(member, DCAT.prev))
        if k == 0:
            assert prev == []
        else:
            want = rdflib.URIRef(f"{dcat['@graph'][0]['@id']}#{multihash_to_str(heads[k - 1])}")
            assert prev == [want]
            assert (want, RDFS.seeAlso, rdflib.URIRef(f"ipfs://dcat-{k - 1}")) in g
    dists = set(union.subjects(RDF.type, DCAT.Distribution))
    assert len(dists) == len(all_files) == 6
    assert len(set(union.subjects(RDF.type, DCAT.Dataset))) == 3


def test_nothing_new_gives_documents_with_no_file(tmp_path, shapes):
    built = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=2000, seed=25, fsync=False)
    reader = DatasetReader.open(built.path)
    entries = list(walk_chain(reader))
    facts = facts_since(reader, entries[0].hash, entries[0].hash, facts_of_chain(entries))
    assert facts.files == ()
    croissant, dcat = _documents(reader, facts, Earlier(entries[0].hash, "ipfs://c", "ipfs://d"))
    assert croissant["distribution"] == [] and croissant["recordSet"] == []
    _conforms(dcat, shapes)


def test_the_facts_walked_holding_no_block_are_the_whole_chain_facts(tmp_path):
    # A first publish renders every data file from a walk that keeps no decoded block.
    from odfweb3.descriptor.discovery_facts import discovery_facts_walked

    root = create_root_dataset(tmp_path / "in", blocks=3, data_bytes=2000, seed=41, fsync=False)
    deriv = create_derivative_dataset(tmp_path / "d", [root.path], transactions=4, seed=42)
    for path in (root.path, deriv.path, _schema_changing(tmp_path / "s")):
        reader = DatasetReader.open(path)
        entries = list(walk_chain(reader))
        walked = discovery_facts_walked(walk_chain(reader))
        assert walked == discovery_facts(entries)
        assert list(walked.input_states) == list(discovery_facts(entries).input_states)
        assert discovery_facts_walked(entries[-1:]) == discovery_facts(entries[-1:])
        with pytest.raises(ValueError, match="ending at its Seed"):
            discovery_facts_walked(entries[:-1])
    assert deriv_has_inputs(deriv.path)


def deriv_has_inputs(path):
    facts = discovery_facts(list(walk_chain(DatasetReader.open(path))))
    return bool(facts.inputs) and bool(facts.input_states)


def _schema_changing(path):
    """A chain with a data file before any schema and a schema change between files."""
    other = DataSchema(fields=(DataField(name="offset", type=DataTypeInt64()),))

    def add(n):
        return AddData(
            new_data=DataSlice(
                logical_hash=hash_bytes(b"l%d" % n),
                physical_hash=hash_bytes(b"p%d" % n),
                offset_interval=OffsetInterval(start=n, end=n),
                size=10 + n,
            ),
            prev_offset=n - 1 if n else None,
        )

    entries = chain_of(
        SEED,
        add(0),
        SetInfo(description="Changing schemas."),
        set_data_schema(PAYLOAD_SCHEMA),
        add(1),
        add(2),
        set_data_schema(other),
        SetInfo(description="Changed."),
        add(3),
        start=datetime(2031, 5, 6, tzinfo=UTC),
    )
    _write_chain(path, entries)
    files = discovery_facts(entries).files
    assert [f.schema for f in files] == [None, PAYLOAD_SCHEMA, PAYLOAD_SCHEMA, other]
    return path


def test_streamed_documents_are_the_bytes_of_the_whole_documents(tmp_path):
    # The publish encodes its documents a data file at a time: byte for byte what the
    # whole documents encode to (the same CIDs and data items).
    from odfweb3.descriptor.codec import encode_descriptor, encode_descriptor_chunks

    path = _schema_changing(tmp_path / "ds")
    reader = DatasetReader.open(path)
    entries = list(walk_chain(reader))
    shown = Presentation(
        {"name": "Ada Lovelace", "type": "Person"},
        landing="ipns://k51example",
        url_of=lambda rel: f"ipfs://bafyroot/{rel}",
        sha256_of=local_sha256(reader),
    )
    for since, earlier in (
        (None, Earlier()),
        (entries[2].hash, Earlier(entries[2].hash, "ipfs://c0", "ipfs://d0")),
    ):
        facts = facts_since(reader, entries[0].hash, since, facts_of_chain(entries))
        for render in (published_croissant, published_dcat):
            whole = render(facts, shown, earlier)
            streamed = render(facts, shown, earlier, streamed=True)
            assert b"".join(encode_descriptor_chunks(streamed)) == encode_descriptor(whole)
            assert encode_descriptor(streamed) == encode_descriptor(whole)
            assert streamed == whole  # its lists compare as the items they make


def test_a_streamed_list_longer_than_a_chunk_is_encoded_in_pieces_as_one_document():
    from odfweb3.descriptor.codec import (
        StreamedList,
        encode_descriptor,
        encode_descriptor_chunks,
    )
    from odfweb3.errors import FormatError

    items = [{"z": i, "a": "é" * 300, "n": None} for i in range(4000)]  # ~2.4 MB
    doc = {
        "b": StreamedList(len(items), lambda: iter(items)),
        "a": {"empty": StreamedList(0, lambda: iter(())), "k": [1, "\u0000"]},
    }
    chunks = list(encode_descriptor_chunks(doc))
    assert len(chunks) >= 2
    plain = {"b": items, "a": {"empty": [], "k": [1, "\u0000"]}}
    assert b"".join(chunks) == encode_descriptor(plain)
    assert json.loads(b"".join(chunks)) == plain
    bad = {"x": StreamedList(1, lambda: iter([{"v": float("nan")}]))}
    with pytest.raises(FormatError, match="not JSON-serializable"):
        b"".join(encode_descriptor_chunks(bad))


@pytest.mark.parametrize("count", [1, 2, 63, 64, 65, 128, 129])
def test_streamed_items_encoded_in_batches_are_the_whole_list_text(count):
    from odfweb3.descriptor.codec import StreamedList, encode_descriptor_chunks

    items = [{"i": i, "s": [i, {"t": "x"}]} for i in range(count)]
    doc = {"l": StreamedList(count, lambda: iter(items)), "m": 1}
    want = json.dumps(
        {"l": items, "m": 1}, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    assert b"".join(encode_descriptor_chunks(doc)) == want.encode()


def test_a_first_publishs_load_gathers_the_walked_discovery_facts(tmp_path, monkeypatch):
    # The verified load of a long chain with nothing cached (a first publish) walks it
    # holding no block; it gathers the documents' facts on the way, so no second walk.
    from odfweb3.descriptor.discovery_facts import discovery_facts_walked
    from odfweb3.descriptor.published import facts_since
    from odfweb3.publish import chain_cache

    monkeypatch.setattr(chain_cache, "HELD", 2)  # the streamed load from the third block
    root = create_root_dataset(tmp_path / "in", blocks=3, data_bytes=2000, seed=43, fsync=False)
    deriv = create_derivative_dataset(tmp_path / "d", [root.path], transactions=4, seed=44)
    for path in (root.path, deriv.path):  # (the schema-changing fixture breaks rule 21)
        reader = DatasetReader.open(path)
        chain = chain_cache.load_chain(reader)
        assert chain.discovery is not None
        assert chain.discovery == discovery_facts_walked(walk_chain(reader))
        got = facts_since(reader, chain.head, None, chain.facts, None, chain.discovery)
        assert got is chain.discovery
        assert list(got.input_states) == list(
            discovery_facts_walked(walk_chain(reader)).input_states
        )
