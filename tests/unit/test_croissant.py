"""Croissant 1.1 from the chain, loaded and read by MLCommons' own mlcroissant.

mlcroissant is the independent check: it must load each document with no error and read the
records of every record set from the Parquet data files the document points at (here on
disk; through a Kubo gateway in tests/integration/test_croissant_gateway.py).
"""

import hashlib
import json
import logging

import mlcroissant as mlc
import pytest

from odfweb3.cli.main import main
from odfweb3.descriptor.croissant import (
    PARQUET_FORMATS,
    SYSTEM_COLUMNS,
    build_croissant,
    data_file_urls,
    local_sha256,
)
from odfweb3.descriptor.croissant_check import croissant_problems
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.chain import walk_chain
from odfweb3.odf.derivative import create_derivative_dataset
from odfweb3.odf.example_schema import PAYLOAD_SCHEMA, set_data_schema
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from tests.support.croissant import sandbox_croissant

from .test_descriptor import SEED, chain_of


@pytest.fixture(autouse=True)
def croissant_cache(tmp_path, monkeypatch):
    sandbox_croissant(monkeypatch, tmp_path / "cr")


def croissant_of(path, **kw):
    reader = DatasetReader.open(path)
    entries = list(walk_chain(reader))
    doc = build_croissant(
        entries,
        {"name": "Ada Lovelace", "type": "Person"},
        url_of=lambda rel: str(reader.root / rel),
        sha256_of=local_sha256(reader),
        landing="ipns://k51qzi5uqu5dlvj2baxnqndepeb86cbk3ng7n3i46uzyxzyqj2xjonzllnv0v8",
        **kw,
    )
    return reader, entries, doc


def load(doc, tmp_path):
    """mlcroissant's Dataset of ``doc`` (written to a file, as a catalogue would fetch it)."""
    f = tmp_path / "croissant.json"
    f.write_text(json.dumps(doc))
    ds = mlc.Dataset(jsonld=str(f))
    assert not ds.metadata.ctx.issues.errors
    return ds


def test_root_example_loads_and_every_record_is_read(tmp_path, caplog):
    built = create_root_dataset(tmp_path / "ds", blocks=3, data_bytes=6000, seed=7, fsync=False)
    reader, entries, doc = croissant_of(built.path)
    with caplog.at_level(logging.WARNING):
        ds = load(doc, tmp_path)
    # no warning either: not the context, nor the version, nor a missing field
    assert not ds.metadata.ctx.issues.warnings
    assert not [r for r in caplog.records if "context" in r.getMessage()]
    files = doc["distribution"]
    assert len(files) == 3 == len(doc["recordSet"])
    for fo in files:
        mh = fo["identifier"]["value"]
        data = (reader.root / "data" / mh).read_bytes()
        assert fo["sha256"] == hashlib.sha256(data).hexdigest()
        assert fo["encodingFormat"] == list(PARQUET_FORMATS)
        assert fo["contentSize"] == f"{len(data)} B"
    offsets = []
    for rs in ds.metadata.record_sets:
        for rec in ds.records(rs.uuid):
            offsets.append(int(rec[f"{rs.uuid}/offset"]))
            assert isinstance(rec[f"{rs.uuid}/payload"], bytes)
    # every record of the dataset, each once, in offset order across the slices
    assert offsets == list(range(len(offsets))) and offsets
    head = entries[0]
    assert doc["version"] == f"{head.block.sequence_number}.0.0+{multihash_to_str(head.hash)}"
    assert doc["license"] == "https://spdx.org/licenses/CC0-1.0.html"
    assert doc["citeAs"].startswith("@misc{") and doc["@id"] in doc["citeAs"]
    assert croissant_problems(doc) == []
    assert "prov:wasDerivedFrom" not in doc


def test_system_columns_are_marked_and_offset_is_the_key(tmp_path):
    built = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=2000, seed=8, fsync=False)
    _, _, doc = croissant_of(built.path)
    rs = doc["recordSet"][0]
    assert rs["key"] == {"@id": f"{rs['@id']}/offset"}
    by_name = {f["name"]: f for f in rs["field"]}
    assert [f.name for f in PAYLOAD_SCHEMA.fields] == list(by_name)
    for name, text in SYSTEM_COLUMNS.items():
        assert by_name[name]["description"].startswith(text)
    assert by_name["offset"]["dataType"] == "cr:Int64"
    assert by_name["op"]["dataType"] == "cr:Int32"
    assert by_name["system_time"]["dataType"] == "sc:DateTime"
    assert by_name["payload"]["dataType"] == "sc:Text"
    assert "ODF system column" not in by_name["payload"]["description"]


def test_derivative_names_its_input_and_the_block_it_consumed(tmp_path):
    root = create_root_dataset(tmp_path / "in", blocks=2, data_bytes=3000, seed=9, fsync=False)
    deriv = create_derivative_dataset(tmp_path / "d", [root.path], transactions=2, seed=10)
    _, _, doc = croissant_of(deriv.path)
    load(doc, tmp_path)
    in_entries = list(walk_chain(DatasetReader.open(root.path)))
    from odfweb3.odf.identity import DatasetId

    in_id = str(DatasetId.from_bytes(in_entries[-1].block.event.dataset_id))
    assert doc["prov:wasDerivedFrom"] == [
        {"@id": in_id, "sc:version": multihash_to_str(in_entries[0].hash)}
    ]
    assert doc["distribution"], "the derivative's ExecuteTransform data files are listed"


def test_linked_objects_example_loads_with_its_link_column(tmp_path):
    built = create_root_dataset(
        tmp_path / "ds", blocks=2, data_bytes=4000, seed=11, fsync=False, linked_objects=2
    )
    _, _, doc = croissant_of(built.path)
    ds = load(doc, tmp_path)
    fields = {f["name"]: f for f in doc["recordSet"][0]["field"]}
    assert "externally-stored" in fields["content_hash"]["description"]
    assert fields["content_type"]["dataType"] == "sc:Text"  # Option<String> unwrapped
    rs = ds.metadata.record_sets[0].uuid
    hashes = [r[f"{rs}/content_hash"].decode() for r in ds.records(rs)]
    assert hashes and all((built.path / "data" / h).is_file() for h in hashes)


def test_a_chain_without_info_license_or_schema_still_loads_and_says_what_is_missing(
    tmp_path,
):
    entries = chain_of(SEED, set_data_schema(PAYLOAD_SCHEMA))
    doc = build_croissant(entries, None)
    load(doc, tmp_path)
    assert croissant_problems(doc) == [
        "name missing (the dataset ID stands in): add a SetInfo event with a description",
        "description missing: add a SetInfo event with a description",
        "license missing: add a SetLicense event (with an SPDX id) to the dataset",
        "creator missing: set publisher.name in odfweb3.yaml",
        "url missing: give where the dataset is published (--ipns, --ipfs or --ar)",
    ]


def test_data_file_urls():
    rel = "data/f1620ab"
    assert data_file_urls()(rel) == rel
    assert data_file_urls(ipfs="bafyroot")(rel) == "ipfs://bafyroot/data/f1620ab"
    assert data_file_urls(ipfs="ipfs://bafyroot/", gateway="http://127.0.0.1:8080/")(rel) == (
        "http://127.0.0.1:8080/ipfs/bafyroot/data/f1620ab"
    )
    assert data_file_urls(ar="ar://MANIFEST")(rel) == "ar://MANIFEST/data/f1620ab"


def test_cli_describe_croissant_warns_once_per_missing_field(tmp_path, capsys):
    built = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=2000, seed=12, fsync=False)
    env = {"HOME": str(tmp_path), "ODFWEB3_KEYSTORE": str(tmp_path / "keys")}
    assert main(["describe", str(built.path), "--format", "croissant", "--json"], env=env) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert data["format"] == "croissant"
    assert data["missing"] == [
        "url missing: give where the dataset is published (--ipns, --ipfs or --ar)"
    ]
    assert err.count("croissant: url missing") == 1
    doc = data["croissant"]
    # the key signing the dataset's IPNS record stands in for the creator's name
    assert doc["creator"]["name"].startswith("ipns://")
    assert all(fo["contentUrl"].startswith("data/") for fo in doc["distribution"])
    assert all(len(fo["sha256"]) == 64 for fo in doc["distribution"])


def test_a_data_file_that_does_not_match_its_hash_gets_no_sha256(tmp_path):
    # verify on read: the SHA-256 is read in the same pass that checks the ODF hash, and a
    # file whose bytes are not the ones the block names is not vouched for
    built = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=3000, seed=13, fsync=False)
    reader = DatasetReader.open(built.path)
    entries = list(walk_chain(reader))
    first = next(iter(sorted((built.path / "data").iterdir())))
    first.write_bytes(first.read_bytes()[:-1] + b"\0")
    doc = build_croissant(entries, None, sha256_of=local_sha256(reader))
    hashed = {fo["identifier"]["value"]: fo.get("sha256") for fo in doc["distribution"]}
    assert hashed[first.name] is None
    assert all(v for k, v in hashed.items() if k != first.name)
    assert f"sha256 missing for 1 of {len(hashed)} data files" in " ".join(croissant_problems(doc))


def test_struct_and_list_fields_render_their_paths_and_columns():
    # A schema's fields are rendered once and reused for each record set: the ids and the
    # columns still name the record set, the file and the nesting.
    from odfweb3.descriptor.croissant import _field_specs, _fields
    from odfweb3.odf.model_gen import (
        DataField,
        DataSchema,
        DataTypeInt64,
        DataTypeList,
        DataTypeString,
        DataTypeStruct,
    )

    inner = DataTypeStruct(fields=(DataField("x", DataTypeInt64()),))
    schema = DataSchema(
        fields=(
            DataField("offset", DataTypeInt64()),
            DataField("tags", DataTypeList(item_type=DataTypeString())),
            DataField("point", inner),
        )
    )
    specs = _field_specs(schema)
    for rs, fid in (("slice-1", "data/f1"), ("slice-2", "data/f2")):
        got = _fields(specs, rs, fid)
        assert [f["@id"] for f in got] == [f"{rs}/offset", f"{rs}/tags", f"{rs}/point"]
        assert got[1]["isArray"] is True and got[1]["dataType"] == "sc:Text"
        assert got[1]["source"] == {"fileObject": {"@id": fid}, "extract": {"column": "tags"}}
        (sub,) = got[2]["subField"]
        assert sub["@id"] == f"{rs}/point/x" and "description" in sub
        assert sub["source"] == {"fileObject": {"@id": fid}, "extract": {"column": "point.x"}}
        assert got[2]["dataType"] == "cr:RecordSet" and "source" not in got[2]


def test_local_sha256_reads_each_file_once_and_remembers_a_mismatch(tmp_path):
    import hashlib

    from odfweb3.odf.multihash import multihash_from_str

    built = create_root_dataset(
        tmp_path / "ds", blocks=3, data_bytes=7_000_000, seed=5, fsync=False
    )
    reader = DatasetReader.open(built.path)
    files = sorted((built.path / "data").iterdir())
    sha256_of = local_sha256(reader)
    want = {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in files}
    got = {f.name: sha256_of(multihash_from_str(f.name)) for f in files}
    assert got == want  # files over one read (1 MiB) hashed whole
    files[0].write_bytes(b"changed")  # remembered: not read again
    assert sha256_of(multihash_from_str(files[0].name)) == want[files[0].name]
    again = local_sha256(reader)
    assert again(multihash_from_str(files[0].name)) is None
    files[0].unlink()
    assert again(multihash_from_str(files[0].name)) is None  # the mismatch remembered
    assert again(multihash_from_str("f1220" + "00" * 32)) is None  # absent
