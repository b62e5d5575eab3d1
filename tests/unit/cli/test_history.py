"""``odfweb3 log`` and ``odfweb3 lineage``."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from odfweb3.cli.main import main


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv), env=env)
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture
def world(cli):
    cli("example", "a", "--blocks", "2", "--data-bytes", "4K", "-q")
    cli("example", "b", "--blocks", "1", "-q")
    cli("example", "d", "--derivative-of", "a", "b", "--blocks", "2", "-q")
    assert cli("publish", "a", "--to", "car:outa", "-q")[0] == 0
    assert cli("publish", "d", "--to", "car:outd", "-q")[0] == 0
    heads = {n: json.loads(cli("inspect", n, "--json")[1]) for n in ("a", "b", "d")}
    return heads


def test_log_lists_blocks_newest_first_with_records_and_bytes(cli, world):
    code, out, _ = cli("log", "a", "--json")
    blocks = json.loads(out)["blocks"]
    assert code == 0 and [b["sequence"] for b in blocks] == [5, 4, 3, 2, 1, 0]
    events = ["AddData", "AddData", "SetDataSchema", "SetLicense", "SetInfo", "Seed"]
    assert [b["event"] for b in blocks] == events
    assert blocks[0]["hash"] == world["a"]["head"]
    assert sum(b["recordsAdded"] for b in blocks) == world["a"]["records"]
    added = sum(b["bytesAdded"] for b in blocks)
    assert added == world["a"]["dataBytes"] + world["a"]["checkpointBytes"]
    # The same log read from the published replica, every block hash-checked on the way.
    assert json.loads(cli("log", "car:outa", "--json")[1])["blocks"] == blocks
    code, out, _ = cli("log", "a", "-n", "2")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 3 and lines[0].startswith("#5 ")
    assert " AddData " in lines[0] and "records, +" in lines[0]
    assert lines[-1] == "(4 older blocks not shown)"


def test_lineage_text_names_inputs_consumed_heads_and_places(cli, world):
    code, out, _ = cli("lineage", "d", "--inputs", "a", "b")
    assert code == 0
    a_id, b_id = world["a"]["datasetId"], world["b"]["datasetId"]
    assert f"<- input a ({a_id}) up to {world['a']['head']}" in out
    assert f"<- input b ({b_id}) up to {world['b']['head']}" in out
    assert "published at car:outd (ipns://k51" in out and "published at car:outa (ipns://" in out
    code, out, _ = cli("lineage", "d", "--json")
    graph = json.loads(out)
    assert {e["input"] for e in graph["edges"]} == {a_id, b_id}
    assert graph["datasets"][0]["datasetId"] == world["d"]["datasetId"]


def test_lineage_dot_mermaid_and_svg(cli, world, tmp_path):
    code, dot, _ = cli("lineage", "d", "--inputs", "a", "b", "--format", "dot")
    assert code == 0 and dot.startswith("digraph lineage {") and dot.count(" -> ") == 2
    code, mermaid, _ = cli("lineage", "d", "--inputs", "a", "b", "--format", "mermaid")
    assert mermaid.startswith("flowchart BT") and mermaid.count("-->|") == 2
    code, out, _ = cli("lineage", "d", "--inputs", "a", "b", "--format", "svg", "-o", "l.svg")
    assert code == 0 and out == "wrote l.svg (svg)\n"
    svg = ET.fromstring((tmp_path / "l.svg").read_text())  # well-formed, standalone
    ns = "{http://www.w3.org/2000/svg}"
    assert svg.tag == f"{ns}svg"
    assert len(svg.findall(f"{ns}line")) == 2 and len(svg.findall(f"{ns}rect")) == 4
    texts = "".join(t.text or "" for t in svg.iter(f"{ns}text"))
    assert "d: Example derivative" in texts and "a @ f162" in texts


def _write_chain(root, events):
    """A dataset whose blocks hold ``events`` (Seed first), objects written as named."""
    from odfweb3.odf import model_gen as m
    from odfweb3.odf.codec import block_hash, encode_block
    from odfweb3.odf.layout import DatasetWriter
    from odfweb3.odf.timestamp import Timestamp

    writer = DatasetWriter(root, fsync=False)
    prev = None
    for seq, event in enumerate(events):
        block = m.MetadataBlock(Timestamp.parse(f"2025-01-0{seq + 1}T00:00:00Z"), prev, seq, event)
        data = encode_block(block)
        prev = block_hash(data)
        writer.write_object("block", prev, data)
    writer.set_head(prev)


def test_log_counts_a_carried_checkpoint_once(cli, tmp_path):
    # kamu's writers carry the previous checkpoint on when a transaction writes no new one:
    # the block's newCheckpoint is the object its prevCheckpoint names (same hash, same
    # size). It is the older block's object, not a new one.
    from odfweb3.odf import model_gen as m
    from odfweb3.odf.builder import example_keypair

    def mh(tag: bytes) -> bytes:
        import hashlib

        return b"\x16\x20" + hashlib.sha3_256(tag).digest()

    cp = m.Checkpoint(physical_hash=mh(b"cp"), size=1000)

    def data(n: int, start: int) -> m.DataSlice:
        return m.DataSlice(mh(b"l%d" % n), mh(b"p%d" % n), m.OffsetInterval(start, start + 9), 500)

    seed = m.Seed(
        dataset_id=example_keypair(3).dataset_id.to_bytes(), dataset_kind=m.DatasetKind.ROOT
    )
    _write_chain(
        tmp_path / "ds",
        [
            seed,
            m.AddData(new_data=data(1, 0), new_checkpoint=cp),
            m.AddData(
                prev_checkpoint=cp.physical_hash,
                prev_offset=9,
                new_data=data(2, 10),
                new_checkpoint=cp,
            ),
        ],
    )
    code, out, err = cli("log", "ds", "--json")
    assert code == 0, err
    newest, first, _seed = json.loads(out)["blocks"]
    assert first["bytesAdded"] == 1500 and first["checkpointCarried"] is False
    assert newest["bytesAdded"] == 500 and newest["checkpointCarried"] is True
    assert newest["recordsAdded"] == 10
    code, out, _ = cli("log", "ds")
    assert code == 0
    assert out.splitlines()[0].endswith("+10 records, +500 B  (checkpoint carried)")


def test_log_counts_linked_objects(cli):
    # Each AddData's data file links 3 objects (ODF RFC-017, data/<multihash>): a local log
    # reads them from the data files (each once, in the block that first names it), a
    # replica's log shows each block's linkedObjects summary.
    assert cli("example", "f", "--blocks", "3", "--linked-objects", "3", "--data-bytes", "3K",
               "-q")[0] == 0  # fmt: skip
    code, out, err = cli("log", "f", "--json")
    assert code == 0, err
    blocks = json.loads(out)["blocks"]
    facts = json.loads(cli("inspect", "f", "--json")[1])
    adds = [b for b in blocks if b["event"] == "AddData"]
    assert adds and all(b["linkedObjectsAdded"] == 3 for b in adds), adds
    assert all(b["linkedCountedFrom"] == "files" for b in adds)
    assert sum(b["linkedObjectsAdded"] for b in blocks) == facts["linkedObjects"] > 0
    assert sum(b["linkedBytesAdded"] for b in blocks) == facts["linkedBytes"] > 0
    assert all(b["linkedObjectsAdded"] == 0 for b in blocks if b["event"] != "AddData")
    code, out, _ = cli("log", "f")
    first_add = next(ln for ln in out.splitlines() if " AddData " in ln)
    assert "+3 linked objects (" in first_add, out
    # The replica: the blocks' summaries (kamu's naive counts), the same here.
    assert cli("publish", "f", "--to", "car:outf", "-q")[0] == 0
    remote = json.loads(cli("log", "car:outf", "--json")[1])["blocks"]
    assert [b["linkedObjectsAdded"] for b in remote] == [b["linkedObjectsAdded"] for b in blocks]
    assert [b["linkedBytesAdded"] for b in remote] == [b["linkedBytesAdded"] for b in blocks]
    assert {b["linkedCountedFrom"] for b in remote if b["event"] == "AddData"} == {"summary"}


def test_log_counts_an_object_linked_again_once(cli, tmp_path):
    # block_log (pure): two AddData blocks whose data files link the same object, and a
    # new one: the shared object is added by the older block only.
    from odfweb3.history import block_log
    from odfweb3.odf.chain import DatasetObject, walk_chain
    from odfweb3.odf.layout import DatasetReader

    assert cli("example", "g", "--blocks", "2", "-q")[0] == 0
    chain = list(walk_chain(DatasetReader.open(tmp_path / "g")))
    newest, older = [e for e in chain if e.block.event.__class__.__name__ == "AddData"][:2]
    shared = DatasetObject("linked", b"\x16\x20" + bytes(32), 100)
    fresh = DatasetObject("linked", b"\x16\x20" + bytes([1]) * 32, 7)
    log = block_log(chain, {older.hash: [shared], newest.hash: [shared, fresh]})
    by_hash = {e.hash: e for e in log}
    assert (by_hash[older.hash].linked_added, by_hash[older.hash].linked_bytes_added) == (1, 100)
    assert (by_hash[newest.hash].linked_added, by_hash[newest.hash].linked_bytes_added) == (1, 7)
    assert by_hash[newest.hash].linked_from == "files"
