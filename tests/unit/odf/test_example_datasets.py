"""`odfweb3 example` datasets, whole: every chain rule (`validate --deep`), and their Parquet
data files read back with pyarrow (columns, types, offsets, times, sizes, hashes).

Root with a payload column, root with linked objects (kamu's versioned-file archetype, ODF
RFC-017), a derivative of both, each appended to once, as a user builds them with the CLI.
"""

import json
import os
from datetime import UTC

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from odfweb3.cli.main import main
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.chain import walk_chain
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.linked import decode_summary, link_columns
from odfweb3.odf.model_gen import AddData, ExecuteTransform, SetDataSchema
from odfweb3.odf.multihash import hash_file, multihash_from_str, multihash_to_str
from odfweb3.odf.validate import ChainRulesBackwards, chain_state, check_chain_rules
from tests.unit.odf.test_builder_chain import _kamu_append_problems

SYSTEM = [
    ("offset", pa.int64()),
    ("op", pa.int32()),
    ("system_time", pa.timestamp("ms", tz="UTC")),
    ("event_time", pa.timestamp("ms", tz="UTC")),
]


@pytest.fixture
def cli(capsys, tmp_path):
    def run(*argv):
        code = main(list(argv), env={"ODFWEB3_KEYSTORE": str(tmp_path / "keys")})
        out, err = capsys.readouterr()
        assert code == 0, (argv, err)
        return json.loads(out) if "--json" in argv else out

    return run


def chain(path):
    """Verified entries, Seed first."""
    return list(reversed(list(walk_chain(DatasetReader.open(path)))))


def check_valid(cli, path, *inputs):
    extra = ("--inputs", *map(str, inputs)) if inputs else ()
    report = cli("validate", str(path), "--deep", *extra, "--json")
    assert report["ok"] is True, report
    entries = chain(path)
    assert _kamu_append_problems(entries) == []
    # Every chain rule (odfweb3.odf.chain_rules.RULES, kamu's ExecuteTransform input rules
    # included), on the three paths: oldest first, walking back, and each block from the
    # state the blocks before it leave (a cached head, an incremental pull).
    assert check_chain_rules(entries) == []
    back = ChainRulesBackwards()
    for e in reversed(entries):
        back.feed(e)
    assert back.finish()
    for i in range(1, len(entries)):
        assert check_chain_rules(entries[i:], after=chain_state(reversed(entries[:i]))) == []
    return entries


def data_blocks(entries):
    return [
        e
        for e in entries
        if isinstance(e.block.event, AddData | ExecuteTransform) and e.block.event.new_data
    ]


def read_slice(path, entry):
    """The block's data file read back, checked against the block."""
    ev = entry.block.event
    file = DatasetReader.open(path).path_of("data", ev.new_data.physical_hash)
    assert hash_file(file)[0] == ev.new_data.physical_hash
    assert file.stat().st_size == ev.new_data.size
    table = pq.read_table(file)
    assert [(f.name, f.type) for f in table.schema][:4] == SYSTEM
    assert all(not f.nullable for f in list(table.schema)[:4])
    iv = ev.new_data.offset_interval
    assert table.column("offset").to_pylist() == list(range(iv.start, iv.end + 1))
    assert set(table.column("op").to_pylist()) == {0}
    block_time = entry.block.system_time.to_datetime()
    assert set(table.column("system_time").to_pylist()) == {block_time}
    times = table.column("event_time").to_pylist()
    if ev.new_watermark is not None:
        assert max(times) <= ev.new_watermark.to_datetime().astimezone(UTC)
    return table


def schema_of(entries):
    (ev,) = [e.block.event for e in entries if isinstance(e.block.event, SetDataSchema)]
    return ev


def test_root_payload_linked_and_derivative_examples_are_valid_and_real_parquet(cli, tmp_path):
    root, files, deriv = tmp_path / "root", tmp_path / "files", tmp_path / "deriv"
    cli("example", str(root), "--blocks", "3", "--data-bytes", "60K", "--seed", "1", "--json")
    cli("example", str(root), "--append", "2", "--data-bytes", "20K", "--json")
    made = cli(
        "example", str(files), "--blocks", "3", "--linked-objects", "2",
        "--data-bytes", "6000", "--seed", "2", "--json",
    )  # fmt: skip
    assert made["blocks"] == 4 + 3
    cli("example", str(files), "--append", "1", "--linked-objects", "3", "--json")
    cli("example", str(deriv), "--derivative-of", str(root), str(files), "--blocks", "3", "--json")

    # The root: payload rows sized to the requested bytes, offsets as the blocks say.
    entries = check_valid(cli, root)
    assert [f.name for f in schema_of(entries).schema.fields] == [
        "offset", "op", "system_time", "event_time", "payload",
    ]  # fmt: skip
    slices = data_blocks(entries)
    assert len(slices) == 5
    assert sum(e.block.event.new_data.size for e in slices) == 60 * 1024 + 20 * 1024
    for e in slices:
        table = read_slice(root, e)
        assert table.column_names == ["offset", "op", "system_time", "event_time", "payload"]
        assert table.num_rows == e.block.event.new_data.size // 100

    # Linked objects: one versioned-file row per object, every object in data/ under its
    # hash, the block's summary as kamu's LinkedObjectsSummary writes it.
    entries = check_valid(cli, files)
    schema = schema_of(entries)
    assert link_columns(schema) == ("content_hash",)
    reader = DatasetReader.open(files)
    versions = []
    for e, count in zip(data_blocks(entries), (2, 2, 2, 3), strict=True):
        table = read_slice(files, e)
        assert table.column_names[4:] == [
            "version",
            "content_hash",
            "content_length",
            "content_type",
        ]
        assert table.num_rows == count
        sizes = []
        for text, length in zip(
            table.column("content_hash").to_pylist(),
            table.column("content_length").to_pylist(),
            strict=True,
        ):
            obj = reader.path_of("data", multihash_from_str(text))
            assert hash_file(obj)[0] == multihash_from_str(text) and obj.stat().st_size == length
            assert multihash_to_str(multihash_from_str(text)) == text
            sizes.append(length)
        summary = decode_summary(e.block.event)
        assert summary is not None
        assert (summary.num_objects_naive, summary.size_naive) == (count, sum(sizes))
        versions += table.column("version").to_pylist()
    assert versions == list(range(1, 10))  # version = offset + 1, across the append
    first = [decode_summary(e.block.event) for e in data_blocks(entries)[:3]]
    assert sum(s.size_naive for s in first) == 6000  # --data-bytes: the objects' total

    # The derivative: ExecuteTransform over the inputs' real blocks, its own Parquet output.
    entries = check_valid(cli, deriv, root, files)
    # The input rules compare consecutive ExecuteTransforms: there are several, and their
    # intervals continue (prevBlockHash / prevOffset carried) on both inputs.
    execs = [e.block.event for e in entries if isinstance(e.block.event, ExecuteTransform)]
    assert len(execs) >= 3
    assert all(len(ev.query_inputs) == 2 for ev in execs)
    assert all(qi.prev_block_hash is not None for ev in execs[1:] for qi in ev.query_inputs)
    outs = data_blocks(entries)
    assert outs and all(isinstance(e.block.event, ExecuteTransform) for e in outs)
    consumed = 0
    for e in outs:
        table = read_slice(deriv, e)
        consumed += table.num_rows
    total_in = sum(
        e.block.event.new_data.offset_interval.end
        - e.block.event.new_data.offset_interval.start
        + 1
        for path in (root, files)
        for e in data_blocks(chain(path))
    )
    assert consumed == total_in  # SELECT * ... UNION ALL: every input record, once


def test_same_seed_same_bytes_and_the_linked_flag_is_checked(cli, tmp_path, capsys):
    a = cli("example", str(tmp_path / "a"), "--linked-objects", "2", "--seed", "5", "--json")
    b = cli("example", str(tmp_path / "b"), "--linked-objects", "2", "--seed", "5", "--json")
    c = cli("example", str(tmp_path / "c"), "--seed", "5", "--json")
    assert a["head"] == b["head"] != c["head"]
    # Linked objects only where the schema has an ObjectLink column, and only on roots.
    env = {"ODFWEB3_KEYSTORE": str(tmp_path / "keys")}
    code = main(["example", str(tmp_path / "c"), "--append", "1", "--linked-objects", "1"], env=env)
    err = capsys.readouterr().err
    assert code == 64 and "has no ObjectLink column" in err and err.count("\n") == 1
    code = main(
        [
            "example",
            str(tmp_path / "d"),
            "--derivative-of",
            str(tmp_path / "a"),
            "--linked-objects",
            "1",
        ],
        env=env,
    )
    err = capsys.readouterr().err
    assert code == 64 and "for root datasets" in err and not (tmp_path / "d").exists()


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_an_example_dataset_gets_the_umasks_modes_as_a_pulled_copy_does(tmp_path, umask):
    # Objects are data to publish, not secrets: mkstemp's 0600 and mkdtemp's 0700 must not
    # outlive the rename (a web server or another user reads the dataset as the umask says).
    old = os.umask(umask)
    try:
        create_root_dataset(tmp_path / "ds", blocks=3, data_bytes=2_000)
    finally:
        os.umask(old)
    files = [p for p in (tmp_path / "ds").rglob("*") if p.is_file()]
    folders = [tmp_path / "ds", *(p for p in (tmp_path / "ds").rglob("*") if p.is_dir())]
    assert {p.relative_to(tmp_path / "ds").parts[0] for p in files} >= {"blocks", "refs", "data"}
    assert {p.stat().st_mode & 0o777 for p in files} == {0o666 & ~umask}
    assert {p.stat().st_mode & 0o777 for p in folders} == {0o777 & ~umask}
