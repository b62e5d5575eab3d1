"""An encrypted publish says in plaintext only what its owner allowed.

Driven through the CLI as a user publishes the marker dataset of ``tests/support/encrypted``
to ``car:`` and ``bundle:``. By default (``encryptedDiscovery`` unset) no written byte names
the title, the publisher or a data marker. With ``encryptedDiscovery: summary`` one summary
descriptor is published beside the ciphertext: exactly the dataset ID, head, title,
description, keywords, license and publisher (a closed SHACL shape checked by pyshacl over
rdflib's reading of the JSON-LD), no file name, hash, size, time or URL; every other written
byte still leaks nothing. Without ``publisher.name`` no summary is published and the publish
says why; a mistyped value is refused in one line, nothing written.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyshacl
import pytest
import rdflib

from odfweb3.cli.main import main
from odfweb3.crypto.sealer import discovery_setting
from odfweb3.descriptor import validate_descriptor
from odfweb3.descriptor.summary import SUMMARY_KEYS, validate_summary
from odfweb3.errors import ConfigError, UsageError
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from odfweb3_arweave.formats.ans104 import decode_bundle
from odfweb3_arweave.wallet import generate_wallet, save_wallet
from odfweb3_ipfs.formats.car import iter_car
from odfweb3_ipfs.formats.cid import CODEC_RAW
from tests.support.encrypted import DATA_MARKER, INFO_MARKER, EncryptedWorld, make_encrypted_world

PUBLISHER = {"name": "Example Data Office SUMMARY-PUB-7c1", "homepage": "https://example.org/"}

# The summary's graph: a closed shape, so a triple of any other property fails it.
SUMMARY_SHAPE = """
@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix dcterms: <http://purl.org/dc/terms/> .
@prefix dcmitype: <http://purl.org/dc/dcmitype/> .
@prefix foaf: <http://xmlns.com/foaf/0.1/> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .
@prefix t: <urn:test:> .

t:Summary a sh:NodeShape ;
    sh:targetClass dcmitype:Dataset ;
    sh:closed true ;
    sh:ignoredProperties ( rdf:type ) ;
    sh:property [ sh:path dcterms:title ; sh:minCount 1 ; sh:maxCount 1 ; sh:datatype xsd:string ] ;
    sh:property [ sh:path dcterms:description ; sh:minCount 1 ; sh:maxCount 1 ] ;
    sh:property [ sh:path dcterms:subject ; sh:minCount 1 ; sh:nodeKind sh:Literal ] ;
    sh:property [ sh:path dcterms:license ; sh:minCount 1 ; sh:maxCount 1 ; sh:nodeKind sh:IRI ] ;
    sh:property [ sh:path dcterms:rights ; sh:maxCount 1 ] ;
    sh:property [ sh:path dcterms:identifier ; sh:minCount 1 ; sh:maxCount 1 ] ;
    sh:property [ sh:path dcterms:creator ; sh:minCount 1 ; sh:maxCount 1 ;
                  sh:node t:Publisher ] ;
    sh:property [ sh:path <https://odfweb3.invalid/ns#head> ; sh:minCount 1 ; sh:maxCount 1 ] .

t:Publisher a sh:NodeShape ;
    sh:closed true ;
    sh:ignoredProperties ( rdf:type ) ;
    sh:property [ sh:path foaf:name ; sh:minCount 1 ; sh:maxCount 1 ] ;
    sh:property [ sh:path foaf:homepage ; sh:maxCount 1 ; sh:nodeKind sh:IRI ] ;
    sh:property [ sh:path foaf:mbox ; sh:maxCount 1 ] .
"""


@pytest.fixture
def world(tmp_path, monkeypatch) -> EncryptedWorld:
    return make_encrypted_world(tmp_path, monkeypatch, data_bytes=60_000, seed=41)


def _config(tmp_path: Path, world: EncryptedWorld, **dataset: object) -> Path:
    cfg = tmp_path / "odfweb3.yaml"
    data: dict[str, object] = {
        "state_dir": str(tmp_path / "state"),
        "keystore": str(world.keys_dir),
        "publisher": PUBLISHER,
    }
    if dataset:
        data["datasets"] = {world.did: dataset}
    cfg.write_text(json.dumps(data))
    return cfg


def _publish(capsys, world: EncryptedWorld, kind: str, out: Path, cfg: Path) -> dict:
    more = []
    if kind == "bundle":
        wallet = out.parent / "wallet.json"
        if not wallet.exists():
            save_wallet(generate_wallet(), wallet)
        more = ["--wallet", str(wallet)]
    args = ["publish", str(world.ds), "--to", f"{kind}:{out}", "--encrypt", "--json"]
    code = main([*args, "--config", str(cfg), *more])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    world.assert_no_leak(captured.err.encode(), "publish's stderr")
    return json.loads(captured.out)


def _written(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def _file_names(world: EncryptedWorld) -> list[bytes]:
    """Every object's name (its multihash) but the head block's: the summary names the head."""
    head = multihash_to_str(DatasetReader.open(world.ds).head()).encode()
    return [
        p.name.encode()
        for p in world.ds.rglob("*")
        if p.is_file()
        and p.parent.name in ("blocks", "data", "checkpoints")
        and p.name.encode() != head
    ]


def _bundle_items(out: Path) -> list:
    return [item for p in sorted(out.glob("*.bundle")) for item in decode_bundle(p.read_bytes())]


def _car_side_file(data: bytes) -> bytes:
    roots, blocks = iter_car(io.BytesIO(data))
    ((cid, block),) = [(c, b) for c, b in blocks if c == roots[0]]
    assert cid.codec == CODEC_RAW, "a small document is one raw leaf"
    return block


@pytest.mark.parametrize("kind", ["car", "bundle"])
def test_default_encrypted_publish_leaks_nothing(tmp_path, capsys, world, kind):
    out = tmp_path / "out"
    summary = _publish(capsys, world, kind, out, _config(tmp_path, world))
    assert "descriptor" not in summary and "descriptorId" not in summary
    assert summary["descriptorSkipped"] == "encrypted dataset: a descriptor would reveal it"
    written = _written(out)
    assert written
    for name, data in written.items():
        world.assert_no_leak(data, name)
        assert PUBLISHER["name"].encode() not in data, name
    extra = json.loads((out / "publish.json").read_text())["extra"]
    assert extra["encrypted"] is True
    assert not {"descriptor", "descriptorId", "croissant", "dcat"} & set(extra)
    if kind == "bundle":  # the tags too: decoded, not only the raw bytes
        for item in _bundle_items(out):
            for tag in item.tags:
                assert INFO_MARKER.encode() not in tag.name + tag.value
                assert PUBLISHER["name"].encode() not in tag.name + tag.value


def _summary_and_rest(kind: str, out: Path, summary: dict) -> tuple[bytes, list[bytes]]:
    """The summary document's bytes, and every other byte written (per file or item)."""
    written = _written(out)
    if kind == "car":
        car = written.pop(f"{summary['descriptor']}.car")
        assert summary["descriptorCar"] == f"{summary['descriptor']}.car"
        return _car_side_file(car), list(written.values())
    items = {i.id_b64: i for i in _bundle_items(out)}
    doc = items.pop(summary["descriptorId"])
    tags = {t.name.decode(): t.value.decode() for t in doc.tags}
    assert tags["Content-Type"] == "application/ld+json"
    assert "ODF-Discovery" not in tags
    rest = [i.data + b"".join(t.name + t.value for t in i.tags) for i in items.values()]
    # the bundle files hold the summary item too: every other byte of them is checked above
    rest += [d for n, d in written.items() if not n.endswith(".bundle")]
    return doc.data, rest


@pytest.mark.parametrize("kind", ["car", "bundle"])
def test_summary_publishes_exactly_the_allowed_facts(tmp_path, capsys, world, kind):
    out = tmp_path / "out"
    cfg = _config(tmp_path, world, encryptedDiscovery="summary")
    summary = _publish(capsys, world, kind, out, cfg)
    assert "descriptorSkipped" not in summary
    assert "croissant" not in summary and "croissantId" not in summary
    raw, rest = _summary_and_rest(kind, out, summary)
    doc = json.loads(raw)
    head = multihash_to_str(DatasetReader.open(world.ds).head())
    assert set(doc) == set(SUMMARY_KEYS)
    assert doc["id"] == doc["identifier"] == world.did
    assert doc["title"] == doc["description"] == INFO_MARKER
    assert doc["subject"] == ["example", "odfweb3"]
    assert doc["license"].startswith("https://spdx.org/licenses/")
    assert doc["creator"]["name"] == PUBLISHER["name"]
    assert doc["head"] == head
    assert validate_summary(doc) == []
    assert [p.field for p in validate_descriptor(doc) if p.severity == "error"] == ["created"]
    # nothing of the data, no object's name, no locator into the ciphertext
    assert DATA_MARKER not in raw
    for name in _file_names(world):
        assert name not in raw
    for scheme in (b"ipfs://", b"ipns://", b"ar://", b"/data/", b"bytes"):
        assert scheme not in raw
    # rdflib reads it, and the graph is exactly the summary's shape
    g = rdflib.Graph().parse(data=raw.decode(), format="json-ld")
    shape = rdflib.Graph().parse(data=SUMMARY_SHAPE, format="turtle")
    conforms, _, text = pyshacl.validate(g, shacl_graph=shape)
    assert conforms, text
    # type, identifier, title, description, 2 keywords, license, rights, head, creator and
    # the creator's type, name and homepage: nothing else
    assert len(g) == 13
    # every other written byte leaks nothing, not even the allowed facts
    for data in rest:
        world.assert_no_leak(data, "a file or item beside the summary")
        assert PUBLISHER["name"].encode() not in data
    # the reader's side: the recorded descriptor is the summary
    extra = json.loads((out / "publish.json").read_text())["extra"]
    key = "descriptor" if kind == "car" else "descriptorId"
    assert extra[key] == summary[key]
    if kind == "bundle":  # an encrypted bundle:DIR is read once posted (arweave), not here
        return
    # the summary beside it changes nothing for a reader with the keys: pull decrypts and
    # verifies, validate --deep passes
    dest = tmp_path / "pulled"
    code = main(["pull", f"{kind}:{out}", str(dest), "--config", str(cfg)])
    assert code == 0, capsys.readouterr().err
    assert main(["validate", "--deep", str(dest)]) == 0
    assert (dest / "refs" / "head").read_bytes() == (world.ds / "refs" / "head").read_bytes()


@pytest.mark.parametrize("kind", ["car", "bundle"])
def test_summary_without_publisher_name_is_left_out_with_the_reason(tmp_path, capsys, world, kind):
    cfg = tmp_path / "odfweb3.yaml"
    cfg.write_text(
        json.dumps(
            {
                "state_dir": str(tmp_path / "state"),
                "keystore": str(world.keys_dir),
                "datasets": {world.did: {"encryptedDiscovery": "summary"}},
            }
        )
    )
    out = tmp_path / "out"
    summary = _publish(capsys, world, kind, out, cfg)
    assert "publisher.name" in summary["descriptorSkipped"]
    assert "descriptor" not in summary and "descriptorId" not in summary
    for name, data in _written(out).items():
        world.assert_no_leak(data, name)


def test_a_mistyped_setting_is_refused_in_one_line(tmp_path, capsys, world):
    out = tmp_path / "out"
    cfg = _config(tmp_path, world, encryptedDiscovery="everything")
    code = main(["publish", str(world.ds), "--to", f"car:{out}", "--encrypt", "--config", str(cfg)])
    err = capsys.readouterr().err
    assert code == ConfigError.exit_code, err
    assert "encryptedDiscovery" in err and "'none', 'summary'" in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err
    assert not out.exists() or not any(out.iterdir())


def test_the_setting_read_by_a_library_caller():
    assert discovery_setting({}, "ds") == "none"
    assert discovery_setting({"encryptedDiscovery": "summary"}, "ds") == "summary"
    with pytest.raises(UsageError, match="none or summary"):
        discovery_setting({"encryptedDiscovery": True}, "ds")
