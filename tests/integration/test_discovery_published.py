"""Every target puts the Croissant and DCAT documents of what a publish adds beside the dataset.

Driven through the CLI as a user publishes, then one more block: on ``car:``, ``bundle:``, the
suite's Kubo node, arlocal (``--to arweave``) and the Turbo bundler, the documents are found
where the target's state and record say (a side CAR; a Kubo pin; a data item the gateway
serves), they name each other (the second's ``prov:wasRevisionOf`` / ``dcat:prev`` the
first), list exactly the data files each publish added, and their ``contentUrl``s are where a
reader gets those bytes: mlcroissant reads every record through the Kubo gateway and
through arlocal, pyshacl finds each DCAT graph conforming. An encrypted publish puts none.
"""

from __future__ import annotations

import hashlib
import io
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import httpx
import mlcroissant as mlc
import pyshacl
import pytest
import rdflib

from odfweb3.cli.main import main
from odfweb3.descriptor.dcat import SHAPES_RESOURCE
from odfweb3.descriptor.discovery_facts import discovery_facts
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.chain import walk_chain
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.state import StateStore
from odfweb3_arweave.formats.ans104 import decode_bundle
from odfweb3_arweave.formats.record import decode_record
from odfweb3_arweave.wallet import generate_wallet, save_wallet
from odfweb3_ipfs.formats.car import iter_car
from odfweb3_ipfs.formats.cid import CODEC_RAW, Cid
from tests.support.croissant import sandbox_croissant

pytestmark = pytest.mark.integration

DCAT = rdflib.Namespace("http://www.w3.org/ns/dcat#")
PUBLISHER = {"name": "Example Data Office", "homepage": "https://example.org/"}


@pytest.fixture(autouse=True)
def croissant_cache(tmp_path, monkeypatch):
    sandbox_croissant(monkeypatch, tmp_path / "cr")


@pytest.fixture(scope="module")
def shapes():
    text = resources.files("odfweb3.schemas").joinpath(SHAPES_RESOURCE).read_text("utf-8")
    return rdflib.Graph().parse(data=text, format="turtle")


def _config(tmp_path: Path, **extra: object) -> Path:
    cfg = tmp_path / "odfweb3.yaml"
    data = {
        "state_dir": str(tmp_path / "state"),
        "keystore": str(tmp_path / "keys"),
        "publisher": PUBLISHER,
        **extra,
    }
    cfg.write_text(json.dumps(data))
    return cfg


def _publish(capsys, ds: Path, to: str, cfg: Path, *more: str) -> dict:
    assert main(["publish", str(ds), "--to", to, "--json", "--config", str(cfg), *more]) == 0
    return json.loads(capsys.readouterr().out)


def _data_files(ds: Path) -> list[str]:
    return [f.path for f in discovery_facts(list(walk_chain(DatasetReader.open(ds)))).files]


def _check_pair(
    croissant: dict,
    dcat: dict,
    *,
    files: list[str],
    ds: Path,
    earlier: tuple[str, str] | None,
    earlier_head: bytes | None,
    url_of: Callable[[str], str],
    shapes: rdflib.Graph,
) -> None:
    """The documents list exactly ``files`` at ``url_of`` their path, with the right bytes'
    SHA-256, validate, and name the ``earlier`` documents (Croissant URL, DCAT URL)."""
    head = DatasetReader.open(ds).head()
    assert [fo["@id"] for fo in croissant["distribution"]] == files
    for fo in croissant["distribution"]:
        assert fo["contentUrl"] == url_of(fo["@id"])
        data = (ds / fo["@id"]).read_bytes()
        assert fo["sha256"] == hashlib.sha256(data).hexdigest()
    assert croissant["isLiveDataset"] is True
    assert croissant["version"].endswith(f"+{multihash_to_str(head)}")
    g = rdflib.Graph().parse(data=json.dumps(dcat), format="json-ld")
    conforms, _, text = pyshacl.validate(g, shacl_graph=shapes, allow_warnings=True)
    assert conforms, text
    series = rdflib.URIRef(croissant["@id"])
    member = rdflib.URIRef(f"{croissant['@id']}#{multihash_to_str(head)}")
    assert (series, DCAT.last, member) in g
    urls = {str(u) for u in g.objects(None, DCAT.accessURL)}
    assert urls == {url_of(p) for p in files}
    if earlier is None:
        assert "prov:wasRevisionOf" not in croissant
        assert list(g.objects(member, DCAT.prev)) == []
    else:
        assert croissant["prov:wasRevisionOf"] == {"@id": earlier[0]}
        prev = rdflib.URIRef(f"{croissant['@id']}#{multihash_to_str(earlier_head or b'')}")
        assert list(g.objects(member, DCAT.prev)) == [prev]
        assert (prev, rdflib.RDFS.seeAlso, rdflib.URIRef(earlier[1])) in g


def _read_records(doc: dict, tmp_path: Path, rewrite: Callable[[str], str]) -> list[int]:
    """mlcroissant reads every record of ``doc`` with its contentUrls as ``rewrite`` makes
    them (a reader's gateway for ``ipfs://`` / ``ar://``)."""
    doc = json.loads(json.dumps(doc))
    for fo in doc["distribution"]:
        fo["contentUrl"] = rewrite(fo["contentUrl"])
    f = tmp_path / f"croissant-{len(list(tmp_path.glob('croissant-*')))}.json"
    f.write_text(json.dumps(doc))
    ds = mlc.Dataset(jsonld=str(f))
    assert not ds.metadata.ctx.issues.errors
    return [
        int(rec[f"{rs.uuid}/offset"])
        for rs in ds.metadata.record_sets
        for rec in ds.records(rs.uuid)
    ]


@dataclass(frozen=True)
class Published:
    """One publish as a target shows it: its two documents (Croissant, DCAT), the URLs the
    next publish's documents name them by, where the documents say each data file is, and
    the target's own view of the publish (its JSON summary, state or record)."""

    docs: tuple[dict, dict]
    refs: tuple[str, str]
    url_of: Callable[[str], str]
    seen: dict = field(default_factory=dict)


@dataclass(frozen=True)
class TwoPublishes:
    ds: Path
    one: Published
    two: Published
    first_files: list[str]
    new_files: list[str]


def _two_publishes(tmp_path: Path, shapes: rdflib.Graph, publish: Callable[[Path], Published]):
    """A dataset of its own (a fresh seed: the session's nodes are shared, so no other test's
    dataset key or IPNS name) published by ``publish``, then one more block published: each
    publish's documents list exactly the files it added and the second names the first."""
    seed = secrets.randbelow(1 << 31)
    ds = create_root_dataset(tmp_path / "ds", blocks=3, data_bytes=6000, seed=seed, fsync=False)
    ds_path = ds.path
    first_files = _data_files(ds_path)
    head1 = DatasetReader.open(ds_path).head()
    one = publish(ds_path)
    _check_pair(
        *one.docs,
        files=first_files,
        ds=ds_path,
        earlier=None,
        earlier_head=None,
        url_of=one.url_of,
        shapes=shapes,
    )
    append_blocks(ds_path, 1, data_bytes=2000, seed=seed + 1, fsync=False)
    new_files = [p for p in _data_files(ds_path) if p not in first_files]
    two = publish(ds_path)
    _check_pair(
        *two.docs,
        files=new_files,
        ds=ds_path,
        earlier=one.refs,
        earlier_head=head1,
        url_of=two.url_of,
        shapes=shapes,
    )
    return TwoPublishes(ds_path, one, two, first_files, new_files)


def _served_by_gateway(base: str, summary: dict) -> Published:
    """An Arweave publish as the gateway at ``base`` serves it: the documents its summary
    names, and the record's added paths -> data item id."""
    ids = (summary["croissantId"], summary["dcatId"])
    record = httpx.get(f"{base}/{summary['recordId']}", timeout=60).json()
    added = {p: f["dataItemId"] for p, f in record["added"].items()}
    return Published(
        docs=(
            httpx.get(f"{base}/{ids[0]}", timeout=60).json(),
            httpx.get(f"{base}/{ids[1]}", timeout=60).json(),
        ),
        refs=(f"ar://{ids[0]}", f"ar://{ids[1]}"),
        url_of=lambda rel: f"ar://{added[rel]}",
        seen={"ids": ids, "added": added},
    )


def _car_file(out: Path, name: str) -> bytes:
    """The UnixFS bytes of a single-block side CAR (a document well under a chunk)."""
    roots, blocks = iter_car(io.BytesIO((out / name).read_bytes()))
    ((cid, block),) = [(c, b) for c, b in blocks if c == roots[0]]
    assert cid.codec == CODEC_RAW, "a small document is one raw leaf"
    return block


def test_car_dir_documents_beside_the_dataset(tmp_path, capsys, shapes):
    out = tmp_path / "out"
    cfg = _config(tmp_path)
    to = f"car:{out}"

    def publish(ds: Path) -> Published:
        summary = _publish(capsys, ds, to, cfg)
        pub = json.loads((out / "publish.json").read_text())
        cids = (pub["extra"]["croissant"], pub["extra"]["dcat"])
        assert (summary["croissant"], summary["dcat"]) == cids
        root = pub["root"]
        return Published(
            docs=(
                json.loads(_car_file(out, f"{cids[0]}.car")),
                json.loads(_car_file(out, f"{cids[1]}.car")),
            ),
            refs=(f"ipfs://{cids[0]}", f"ipfs://{cids[1]}"),
            url_of=lambda rel: f"ipfs://{root}/{rel}",
            seen={"cids": cids},
        )

    run = _two_publishes(tmp_path, shapes, publish)
    cids = (*run.one.seen["cids"], *run.two.seen["cids"])
    assert run.two.seen["cids"] != run.one.seen["cids"]
    # every document stays in the directory and in the import hint, the record names the
    # newest (its signed _odf map), and a rerun with nothing new writes nothing
    pub = json.loads((out / "publish.json").read_text())
    assert pub["extra"]["discoveryCars"] == [f"{c}.car" for c in cids]
    assert all(f"{c}.car" in pub["import"][0] for c in cids)
    before = (out / "publish.json").read_bytes()
    _publish(capsys, run.ds, to, cfg)
    assert (out / "publish.json").read_bytes() == before
    # a reader of the directory: verify still passes (side CARs are not dataset objects)
    assert main(["verify", str(run.ds), "--against", to, "--config", str(cfg)]) == 0


def test_kubo_node_pins_the_documents_and_mlcroissant_reads_through_the_gateway(
    tmp_path, capsys, shapes, ipfs_node
):
    cfg = _config(tmp_path, ipfs={"api": ipfs_node.api_url, "gateway": ipfs_node.gateway_url})
    gateway = ipfs_node.gateway_url.rstrip("/")

    def fetch(cid: str) -> dict:
        return json.loads(httpx.get(f"{gateway}/ipfs/{cid}", timeout=60).content)

    def through_gateway(url: str) -> str:
        return f"{gateway}/ipfs/{url.removeprefix('ipfs://')}"

    def publish(ds: Path) -> Published:
        _publish(capsys, ds, "ipfs", cfg)
        (state,) = StateStore(tmp_path / "state").scan().states
        cids = (state.extra["croissant"], state.extra["dcat"])
        root = state.locator
        return Published(
            docs=(fetch(cids[0]), fetch(cids[1])),
            refs=(f"ipfs://{cids[0]}", f"ipfs://{cids[1]}"),
            url_of=lambda rel: f"ipfs://{root}/{rel}",
            seen={"cids": cids},
        )

    run = _two_publishes(tmp_path, shapes, publish)
    offsets = _read_records(run.one.docs[0], tmp_path, through_gateway)
    assert offsets == list(range(len(offsets))) and offsets
    more = _read_records(run.two.docs[0], tmp_path, through_gateway)
    assert more and min(more) == max(offsets) + 1  # the records the second publish added
    pins = httpx.post(f"{ipfs_node.api_url}/api/v0/pin/ls", params={"type": "recursive"})
    pinned = set(pins.json()["Keys"])
    cids = (*run.one.seen["cids"], *run.two.seen["cids"])
    assert {Cid.decode(c).encode() for c in cids} <= pinned


def test_bundle_dir_documents_are_items_naming_each_files_data_item(tmp_path, capsys, shapes):
    wallet = tmp_path / "wallet.json"
    save_wallet(generate_wallet(), wallet)
    out = tmp_path / "out"
    cfg = _config(tmp_path)
    to = f"bundle:{out}"

    def publish(ds: Path) -> Published:
        summary = _publish(capsys, ds, to, cfg, "--wallet", str(wallet))
        all_items = decode_bundle((out / f"{summary['recordId']}.bundle").read_bytes())
        record = decode_record(all_items[-1].tags, all_items[-1].data)
        added = {p: f.data_item_id for p, f in record.added.items()}
        by_id = {i.id_b64: i.data for i in all_items}
        ids = (summary["croissantId"], summary["dcatId"])
        return Published(
            docs=(json.loads(by_id[ids[0]]), json.loads(by_id[ids[1]])),
            refs=(f"ar://{ids[0]}", f"ar://{ids[1]}"),
            url_of=lambda rel: f"ar://{added[rel]}",
            seen={"ids": ids, "added": added, "by_id": by_id},
        )

    run = _two_publishes(tmp_path, shapes, publish)
    for rel in run.first_files:  # each contentUrl's item holds that file's bytes
        item = run.one.seen["by_id"][run.one.seen["added"][rel]]
        assert item == (run.ds / rel).read_bytes()
    pub = json.loads((out / "publish.json").read_text())
    assert (pub["extra"]["croissantId"], pub["extra"]["dcatId"]) == run.two.seen["ids"]
    assert main(["verify", str(run.ds), "--against", to, "--config", str(cfg)]) == 0


def test_arweave_gateway_serves_the_documents_and_mlcroissant_reads_through_it(
    tmp_path, capsys, shapes, arlocal
):
    w = generate_wallet()
    arlocal.mint(w.address, 10**15)
    wallet = tmp_path / "wallet.json"
    save_wallet(w, wallet)
    cfg = _config(tmp_path, arweave={"gateway": arlocal.url})
    base = arlocal.url.rstrip("/")

    def through_gateway(url: str) -> str:
        return f"{base}/{url.removeprefix('ar://')}"

    def publish(ds: Path) -> Published:
        summary = _publish(capsys, ds, "arweave", cfg, "--wallet", str(wallet))
        return _served_by_gateway(base, summary)

    run = _two_publishes(tmp_path, shapes, publish)
    (state,) = StateStore(tmp_path / "state").scan().states
    assert (state.extra["croissantId"], state.extra["dcatId"]) == run.two.seen["ids"]
    offsets = _read_records(run.one.docs[0], tmp_path, through_gateway)
    assert offsets == list(range(len(offsets))) and offsets
    more = _read_records(run.two.docs[0], tmp_path, through_gateway)
    assert more and min(more) == max(offsets) + 1


def test_turbo_items_carry_the_documents(tmp_path, capsys, shapes, turbo):
    """Turbo posts the same signed items one by one: the documents are among them, with a
    signed receipt each, and the bundler's gateway serves them once seeded and mined."""
    w = generate_wallet()
    wallet = tmp_path / "wallet.json"
    save_wallet(w, wallet)
    cfg = _config(tmp_path, arweave={"gateway": turbo.arlocal.url, "turbo": turbo.url})
    base = turbo.arlocal.url.rstrip("/")

    def publish(ds: Path) -> Published:
        summary = _publish(capsys, ds, "turbo", cfg, "--wallet", str(wallet))
        ids = (summary["croissantId"], summary["dcatId"])
        (state,) = StateStore(tmp_path / "state").scan().states
        assert set(ids) <= set(state.extra["receipts"])
        turbo.wait_seeded(summary["recordId"])
        turbo.arlocal.mine(20)
        return _served_by_gateway(base, summary)

    run = _two_publishes(tmp_path, shapes, publish)
    for rel in run.new_files:  # each contentUrl's item serves that file's bytes
        served = httpx.get(f"{base}/{run.two.seen['added'][rel]}", timeout=60).content
        assert served == (run.ds / rel).read_bytes()


@pytest.mark.parametrize("kind", ["car", "bundle"])
def test_an_encrypted_publish_puts_no_document(tmp_path, capsys, kind):
    seed = secrets.randbelow(1 << 31)
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=3000, seed=seed, fsync=False)
    out = tmp_path / "out"
    cfg = _config(tmp_path)
    more = ["--encrypt"]
    if kind == "bundle":
        wallet = tmp_path / "wallet.json"
        save_wallet(generate_wallet(), wallet)
        more += ["--wallet", str(wallet)]
    summary = _publish(capsys, ds.path, f"{kind}:{out}", cfg, *more)
    extra = json.loads((out / "publish.json").read_text())["extra"]
    assert extra.get("encrypted") is True
    for key in ("croissant", "dcat", "croissantId", "dcatId", "discoveryCars"):
        assert key not in summary and key not in extra
    # nothing readable in the directory names the dataset's title
    title = b"Example dataset written by odfweb3"
    assert not [p for p in out.iterdir() if p.is_file() and title in p.read_bytes()]
