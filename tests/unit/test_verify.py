"""verify: replicas compared by head hash, against offline CAR publishes and local copies."""

import json
import shutil

from odfweb3.cli.main import main
from odfweb3.odf.builder import append_blocks, create_root_dataset


def run(capsys, tmp_path, *argv):
    env = {"ODFWEB3_KEYSTORE": str(tmp_path / "keys"), "HOME": str(tmp_path)}
    code = main(list(argv), env=env)
    out, err = capsys.readouterr()
    return code, out, err


def test_identical_behind_ahead_diverged(capsys, tmp_path):
    ds = create_root_dataset(tmp_path / "ds", blocks=3, data_bytes=3000, seed=1).path
    out = tmp_path / "out"
    assert run(capsys, tmp_path, "publish", str(ds), "--to", f"car:{out}", "-q")[0] == 0

    code, text, _ = run(capsys, tmp_path, "verify", str(ds), "--against", f"car:{out}", "--deep")
    assert code == 0 and "identical" in text and "13 objects re-hashed" in text  # 7 blocks, 6 files

    fork = tmp_path / "fork"
    shutil.copytree(ds, fork)
    append_blocks(ds, 2, seed=1)
    code, text, _ = run(capsys, tmp_path, "verify", str(ds), "--against", f"car:{out}", "--json")
    rep = json.loads(text)["replicas"][0]
    assert code == 1 and rep["status"] == "behind" and rep["blocks"] == 2

    # The CAR replica as reference, the longer local copy as replica: ahead by 2.
    code, text, _ = run(capsys, tmp_path, "verify", "--against", f"car:{out}", "--against", str(ds))
    assert code == 1 and "ahead by 2" in text

    append_blocks(fork, 1, seed=2)
    code, text, _ = run(capsys, tmp_path, "verify", str(ds), "--against", str(fork), "--json")
    rep = json.loads(text)["replicas"][0]
    assert rep["status"] == "diverged" and rep["commonAncestor"] == 6


def test_tampered_car_is_corrupt_with_reason_as_pull_says(capsys, tmp_path):
    """Corruption is its own status with pull's exit code (65), not
    ``unreachable`` (2)."""
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=2000, seed=1).path
    out = tmp_path / "out"
    run(capsys, tmp_path, "publish", str(ds), "--to", f"car:{out}", "-q")
    # The dataset's CAR, as publish.json names it (the descriptor has a CAR of its own).
    (name,) = json.loads((out / "publish.json").read_text())["extra"]["cars"]
    car = out / name
    raw = bytearray(car.read_bytes())
    raw[-5] ^= 0x01
    car.write_bytes(bytes(raw))
    code, text, _ = run(capsys, tmp_path, "verify", str(ds), "--against", f"car:{out}")
    assert code == 65 and "CORRUPT" in text and "hash mismatch" in text
    code, _, err = run(capsys, tmp_path, "pull", f"car:{out}", str(tmp_path / "dest"))
    assert code == 65 and "hash mismatch" in err
    code, text, _ = run(capsys, tmp_path, "verify", str(ds), "--against", f"car:{out}", "--json")
    rep = json.loads(text)["replicas"][0]
    assert code == 65 and rep["status"] == "corrupt" and "hash mismatch" in rep["error"]


def test_ipns_name_follows_from_example_dataset_id(capsys, tmp_path):
    from odfweb3.odf.identity import DatasetId
    from odfweb3_ipfs.formats.libp2p_keys import ipns_name_for_public_key

    ds = tmp_path / "ds"
    code, text, _ = run(capsys, tmp_path, "example", str(ds), "--json")
    did = DatasetId.parse(json.loads(text)["datasetId"])
    code, text, _ = run(
        capsys, tmp_path, "publish", str(ds), "--to", f"car:{tmp_path / 'o'}", "--json"
    )
    assert code == 0
    assert json.loads(text)["record"]["name"] == ipns_name_for_public_key(did.public_key)


def test_configured_publisher_puts_descriptor_beside_the_dataset(capsys, tmp_path):
    from odfweb3_ipfs.read.car_replica import check_car_dir

    cfg = tmp_path / "odfweb3.yaml"
    cfg.write_text("publisher:\n  name: Example Org\n  homepage: https://example.org\n")
    ds = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=100, seed=1).path
    out = tmp_path / "out"
    code, _text, _ = run(
        capsys, tmp_path, "--config", str(cfg), "publish", str(ds), "--to", f"car:{out}", "--json"
    )
    assert code == 0
    summary = json.loads((out / "publish.json").read_text())
    cid = summary["extra"]["descriptor"]
    assert check_car_dir(out).record.odf.extra["descriptor"] == cid
    assert (out / f"{cid}.car").is_file()


def test_deep_compare_walks_the_replica_holding_no_block_with_the_same_verdict(tmp_path):
    # verify --deep checks the replica's chain rules walking back (no decoded chain held):
    # the violations named are check_chain_rules' own, and a reference given by its
    # hashes alone is compared as its entries are.
    from datetime import UTC, datetime

    from odfweb3.odf.chain import walk_chain
    from odfweb3.odf.layout import DatasetReader
    from odfweb3.odf.model_gen import AddData, DataSlice, OffsetInterval
    from odfweb3.odf.multihash import hash_bytes
    from odfweb3.odf.validate import check_chain_rules
    from odfweb3.read.compare import compare_replica
    from odfweb3.read.replica import LocalReplica

    from .test_descriptor import SEED, chain_of
    from .test_published_discovery import _write_chain

    good = create_root_dataset(tmp_path / "ok", blocks=4, data_bytes=4000, seed=51).path
    reader = DatasetReader.open(good)
    entries = list(walk_chain(reader))
    by_entries = compare_replica(entries, LocalReplica(reader), deep=True)
    by_hashes = compare_replica([e.hash for e in entries], LocalReplica(reader), deep=True)
    assert by_entries == by_hashes
    assert by_hashes.status == "identical" and not by_hashes.problems
    assert by_hashes.objects.blocks == len(entries) and by_hashes.objects_checked > len(entries)

    def add(n, prev):  # an AddData whose offsets do not continue the one before
        return AddData(
            new_data=DataSlice(
                logical_hash=hash_bytes(b"l%d" % n),
                physical_hash=hash_bytes(b"p%d" % n),
                offset_interval=OffsetInterval(start=n, end=n),
                size=10,
            ),
            prev_offset=prev,
        )

    broken = chain_of(SEED, add(0, None), add(5, 0), start=datetime(2031, 1, 2, tzinfo=UTC))
    _write_chain(tmp_path / "bad", broken)
    expected = [str(v) for v in check_chain_rules(list(reversed(broken)))]
    assert expected
    bad = LocalReplica(DatasetReader.open(tmp_path / "bad"))
    report = compare_replica([e.hash for e in entries], bad, deep=True)
    assert report.status == "corrupt"
    assert list(report.problems[: len(expected)]) == expected


def test_deep_compare_reads_every_object_once_or_the_sample_asked(tmp_path):
    # Without --sample the objects are read as a second walk lists them (no list of them
    # all); with it, that many are chosen; the progress total is what is then read.
    import random

    from odfweb3.odf.chain import count_objects, iter_objects, walk_chain
    from odfweb3.odf.layout import DatasetReader
    from odfweb3.read.compare import compare_replica
    from odfweb3.read.replica import LocalReplica

    path = create_root_dataset(tmp_path / "ds", blocks=5, data_bytes=6000, seed=52).path
    reader = DatasetReader.open(path)
    entries = list(walk_chain(reader))
    objects = [o for o in iter_objects(entries) if o.kind != "block"]
    hashes = [e.hash for e in entries]
    totals: list[int] = []
    whole = compare_replica(hashes, LocalReplica(reader), deep=True, on_total=totals.append)
    assert whole.ok and whole.objects == count_objects(iter_objects(entries))
    assert whole.bytes_checked == totals[0] == sum(o.size or 0 for o in objects)
    some = compare_replica(hashes, LocalReplica(reader), deep=True, sample=2, rng=random.Random(1))
    assert some.ok and some.objects_checked == len(entries) + 2
    assert compare_replica(hashes, LocalReplica(reader), deep=True, sample=99) == whole
