"""Linked objects (ODF RFC-017) end to end on the offline targets: validate --deep, publish
(car:, bundle:, encrypted car:), pull, verify --deep, inspect; the bad inputs (a linked
object missing, a data file that is not Parquet, a summary that lies, a file in data/ that
nothing names).

The datasets are written as kamu writes a "versioned file" dataset (tests/support/linked.py):
real Parquet data files with an ObjectLink column, the linkedObjects summary in each AddData.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3.crypto.envelope import add_recipient, x25519_recipient
from odfweb3.crypto.keyfiles import ContentKeyStore, DatasetKeys, IdentityStore
from odfweb3.errors import BackendUnavailable, HashMismatch, IntegrityError, NotFound
from odfweb3.odf.chain import walk_chain
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.linked import LinkedSummary
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.odf.validate import validate_dataset
from odfweb3.publish.execute import publish_dataset
from odfweb3.read.compare import compare_replica
from odfweb3.read.pull import pull_dataset
from odfweb3.read.replica import LocalReplica
from odfweb3_arweave.publish.bundle_target import BundleTarget
from odfweb3_arweave.wallet import load_wallet
from tests.support.linked import append_linked, content, create_linked_dataset

WALLET = Path(__file__).parent / "adapters/arweave/vectors/TEST_ONLY_wallet.json"


def cli(capsys, tmp_path: Path, *argv: str) -> tuple[int, str, str]:
    env = {"ODFWEB3_KEYSTORE": str(tmp_path / "keys"), "HOME": str(tmp_path / "home")}
    code = main(list(argv), env=env)
    out, err = capsys.readouterr()
    return code, out, err


def tree(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes()
        for p in path.rglob("*")
        if p.is_file() and p.relative_to(path).parts[0] in ("blocks", "data", "checkpoints", "refs")
    }


def test_validate_deep_hashes_linked_objects_and_inspect_counts_them(tmp_path, capsys):
    ds = create_linked_dataset(tmp_path / "ds", versions=3)
    # one file linking an object twice and a null: counted naive (2), stored once
    twice = content(7, 0, 500)
    append_linked(ds, [twice, None, twice])
    report = validate_dataset(ds.path, deep=True)
    assert report.ok, report.violations
    # blocks, data files, distinct linked objects (docs/concepts.md, "Words")
    assert report.objects_checked == report.blocks + 4 + 4
    assert report.orphans == ()
    code, out, _ = cli(capsys, tmp_path, "inspect", str(ds.path), "--json")
    assert code == 0
    doc = json.loads(out)
    assert (doc["linkedObjects"], doc["dataFiles"]) == (4, 4)
    assert doc["linkedBytes"] == sum(ds.linked_path(h).stat().st_size for h in set(ds.linked))


def test_validate_deep_names_each_linked_problem(tmp_path, capsys):
    ds = create_linked_dataset(tmp_path / "ds", versions=3)
    missing, corrupt = ds.linked[0], ds.linked[1]
    ds.linked_path(missing).unlink()
    good = ds.linked_path(corrupt).read_bytes()
    ds.linked_path(corrupt).write_bytes(bytes([good[0] ^ 1]) + good[1:])  # same size
    append_linked(ds, [content(3, 3, 100)], summary=LinkedSummary(2, 100))
    orphan = ds.path / "data" / multihash_to_str(b"\x16\x20" + b"\xab" * 32)
    orphan.write_bytes(b"nobody names me")
    report = validate_dataset(ds.path, deep=True)
    rules = sorted(v.rule for v in report.violations)
    assert rules == ["linked-present", "linked-summary", "object-hash"], report.violations
    by_rule = {v.rule: str(v) for v in report.violations}
    # the missing one: the data file that links it and the hash
    assert multihash_to_str(missing) in by_rule["linked-present"]
    assert f"data/{multihash_to_str(ds.data_files[0])} links" in by_rule["linked-present"]
    assert "numObjectsNaive 2, sizeNaive 100" in by_rule["linked-summary"]
    assert "has 1 links, 100 bytes" in by_rule["linked-summary"]
    assert multihash_to_str(corrupt) in by_rule["object-hash"]
    assert report.orphans == (f"data/{orphan.name}",)
    code, out, _ = cli(capsys, tmp_path, "validate", "--deep", str(ds.path))
    assert code == 1
    notes = [line for line in out.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and orphan.name in notes[0] and "never published" in notes[0]


def test_missing_linked_object_refuses_publish_in_one_line(tmp_path, capsys):
    ds = create_linked_dataset(tmp_path / "ds", versions=3)
    gone = ds.linked[2]
    kept = ds.linked_path(gone).read_bytes()
    ds.linked_path(gone).unlink()
    out = tmp_path / "out"
    code, _, err = cli(capsys, tmp_path, "publish", str(ds.path), "--to", f"car:{out}")
    assert code == 65
    assert len(err.strip().splitlines()) == 1, err
    assert multihash_to_str(gone) in err and f"data/{multihash_to_str(ds.data_files[2])}" in err
    assert "Traceback" not in err
    assert not (out / "publish.json").exists() and not list(out.glob("*.car"))
    # the same on bundle: (nothing signed, nothing written)
    bundle = tmp_path / "bundle"
    with pytest.raises(IntegrityError, match=multihash_to_str(gone)):
        publish_dataset(ds.path, BundleTarget(bundle, load_wallet(WALLET)))
    assert not bundle.exists() or not list(bundle.glob("*.bundle"))
    # the user copies the object back and runs the same command again: all of it goes
    ds.linked_path(gone).write_bytes(kept)
    code, _, err = cli(capsys, tmp_path, "publish", str(ds.path), "--to", f"car:{out}", "-q")
    assert code == 0, err
    copy = tmp_path / "copy"
    assert cli(capsys, tmp_path, "pull", f"car:{out}", str(copy))[0] == 0
    assert tree(copy) == tree(ds.path)


def test_unreadable_parquet_refuses_publish_in_one_line(tmp_path, capsys):
    ds = create_linked_dataset(tmp_path / "ds", versions=2)
    # a data file named by its hash whose bytes are not Parquet (the schema declares links)
    phys, _ = append_linked(ds, [b"x"], raw_data=b"this is not parquet at all" * 10)
    report = validate_dataset(ds.path, deep=True)
    assert [v.rule for v in report.violations] == ["linked-readable"]
    out = tmp_path / "out"
    code, _, err = cli(capsys, tmp_path, "publish", str(ds.path), "--to", f"car:{out}")
    assert code == 65
    assert len(err.strip().splitlines()) == 1, err
    assert f"data/{multihash_to_str(phys)}" in err and "Parquet" in err
    assert not (out / "publish.json").exists() and not list(out.glob("*.car"))


def test_car_publish_pull_verify_round_trip_and_delta(tmp_path, capsys):
    ds = create_linked_dataset(tmp_path / "ds", versions=3)
    out = tmp_path / "out"
    code, _, err = cli(capsys, tmp_path, "publish", str(ds.path), "--to", f"car:{out}", "-q")
    assert code == 0, err
    dest = tmp_path / "copy"
    code, text, err = cli(capsys, tmp_path, "pull", f"car:{out}", str(dest), "--json")
    assert code == 0, err
    pulled = json.loads(text)
    assert pulled["objectsFetched"] == pulled["newBlocks"] + 3 + 3
    assert tree(dest) == tree(ds.path)
    assert validate_dataset(dest, deep=True).ok
    code, text, err = cli(
        capsys, tmp_path, "verify", str(ds.path), "--against", f"car:{out}", "--deep", "--json"
    )
    assert code == 0, err
    (rep,) = json.loads(text)["replicas"]
    # the one count: the objects pull fetched, re-hashed
    assert (rep["status"], rep["objectsChecked"]) == ("identical", pulled["objectsFetched"])

    # one new version: the delta is its block, its data file and its one new linked object
    new_data, (new_link,) = append_linked(ds, [content(1, 1, 700)])
    code, text, _ = cli(
        capsys, tmp_path, "publish", str(ds.path), "--to", f"car:{out}", "--dry-run", "--json"
    )
    assert code == 0
    plan = json.loads(text)["plan"]
    assert sorted(plan["send"]) == sorted(
        [
            f"blocks/{multihash_to_str(ds.head)}",
            f"data/{multihash_to_str(new_data)}",
            f"data/{multihash_to_str(new_link)}",
        ]
    )
    # a version linking an object an older version linked: nothing linked is sent again
    append_linked(ds, [ds.linked_path(ds.linked[0]).read_bytes()])
    code, text, _ = cli(
        capsys, tmp_path, "publish", str(ds.path), "--to", f"car:{out}", "--dry-run", "--json"
    )
    again = json.loads(text)["plan"]["send"]
    # two blocks, two data files, the one new linked object of the dry run above
    assert f"data/{multihash_to_str(ds.linked[0])}" not in again and len(again) == 5
    code, _, err = cli(capsys, tmp_path, "publish", str(ds.path), "--to", f"car:{out}", "-q")
    assert code == 0, err
    code, text, err = cli(capsys, tmp_path, "pull", f"car:{out}", str(dest), "--json")
    assert code == 0, err
    # two blocks, two data files, one new linked object
    assert json.loads(text)["objectsFetched"] == 2 + 3
    assert tree(dest) == tree(ds.path)
    assert validate_dataset(dest, deep=True).ok


def test_pull_refuses_a_replica_missing_or_altering_a_linked_object(tmp_path):
    ds = create_linked_dataset(tmp_path / "ds", versions=3)
    victim = ds.linked_path(ds.linked[1])
    good = victim.read_bytes()
    victim.unlink()
    dest = tmp_path / "dest"
    with pytest.raises(NotFound, match=multihash_to_str(ds.linked[1])):
        pull_dataset(LocalReplica(DatasetReader.open(ds.path)), dest)
    assert not (dest / "refs" / "head").exists()
    victim.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))
    with pytest.raises(HashMismatch):
        pull_dataset(LocalReplica(DatasetReader.open(ds.path)), dest)
    assert not (dest / "refs" / "head").exists()
    assert not (dest / "data").exists() or not os.listdir(dest / "data")
    # verify --deep of that replica: corrupt, naming the linked object
    victim.write_bytes(b"altered")
    reference = list(walk_chain(DatasetReader.open(ds.path)))
    report = compare_replica(reference, LocalReplica(DatasetReader.open(ds.path)), deep=True)
    assert report.status == "corrupt" and multihash_to_str(ds.linked[1]) in (report.error or "")


def test_bundle_publish_pull_verify_round_trip(tmp_path, capsys):
    ds = create_linked_dataset(tmp_path / "ds", versions=3)
    out = tmp_path / "ar"
    wallet = load_wallet(WALLET)
    first = publish_dataset(ds.path, BundleTarget(out, wallet))
    assert sum(1 for o in first.plan.send if o.kind == "linked") == 3
    new_data, (new_link,) = append_linked(ds, [content(2, 2, 900)])
    second = publish_dataset(ds.path, BundleTarget(out, wallet))
    assert sorted(o.path for o in second.plan.send if o.kind != "block") == sorted(
        [f"data/{multihash_to_str(new_data)}", f"data/{multihash_to_str(new_link)}"]
    )
    dest = tmp_path / "copy"
    code, _, err = cli(capsys, tmp_path, "pull", f"bundle:{out}", str(dest))
    assert code == 0, err
    assert tree(dest) == tree(ds.path)
    code, text, err = cli(
        capsys, tmp_path, "verify", str(ds.path), "--against", f"bundle:{out}", "--deep", "--json"
    )
    assert code == 0, err
    (rep,) = json.loads(text)["replicas"]
    # the one count: what the publish counted (blocks, data files, linked objects)
    assert (rep["status"], rep["objectsChecked"]) == ("identical", len(second.plan.objects))


def test_encrypted_car_publish_and_pull_carry_linked_objects(tmp_path, capsys):
    ds = create_linked_dataset(tmp_path / "ds", versions=2, size=5000)
    keys_dir = tmp_path / "keys"
    identities = IdentityStore(keys_dir)
    identities.create("alice")
    store = ContentKeyStore(keys_dir)
    keys = store.load_or_create(ds.dataset_id)
    envelope = add_recipient(
        keys.envelope, keys.ring, x25519_recipient(identities.public_key("alice"))
    )
    store.save(DatasetKeys(keys.ring, envelope, keys.keks))
    out = tmp_path / "out"
    code, _, err = cli(
        capsys, tmp_path, "publish", str(ds.path), "--to", f"car:{out}", "--encrypt", "-q"
    )
    assert code == 0, err
    # ciphertext only: no linked object's bytes in the CARs
    cars = b"".join(p.read_bytes() for p in out.glob("*.car"))
    for h in ds.linked:
        plain = ds.linked_path(h).read_bytes()
        assert plain[1000:1032] not in cars
    dest = tmp_path / "copy"
    code, _, err = cli(capsys, tmp_path, "pull", f"car:{out}", str(dest))
    assert code == 0, err
    assert tree(dest) == tree(ds.path)
    assert validate_dataset(dest, deep=True).ok


def test_publish_reports_a_file_no_block_or_link_names(tmp_path, capsys):
    ds = create_linked_dataset(tmp_path / "ds", versions=2)
    stray = ds.path / "data" / multihash_to_str(b"\x16\x20" + b"\xcd" * 32)
    stray.write_bytes(b"left behind by an interrupted ingest")
    out = tmp_path / "out"
    code, _, err = cli(capsys, tmp_path, "publish", str(ds.path), "--to", f"car:{out}")
    assert code == 0, err
    lines = [line for line in err.splitlines() if stray.name in line]
    assert len(lines) == 1 and "not published" in lines[0], err
    dest = tmp_path / "copy"
    assert cli(capsys, tmp_path, "pull", f"car:{out}", str(dest))[0] == 0
    assert not (dest / "data" / stray.name).exists()
    # the next publish (incremental, from the cache) still says so
    append_linked(ds, [content(4, 4, 10)])
    code, _, err = cli(capsys, tmp_path, "publish", str(ds.path), "--to", f"car:{out}")
    assert code == 0 and sum(stray.name in line for line in err.splitlines()) == 1, err


def test_status_counts_the_published_linked_objects(tmp_path, capsys):
    ds = create_linked_dataset(tmp_path / "ds", versions=3)
    out = tmp_path / "out"
    assert cli(capsys, tmp_path, "publish", str(ds.path), "--to", f"car:{out}", "-q")[0] == 0
    code, text, _ = cli(capsys, tmp_path, "status", str(ds.path), "--offline", "--json")
    assert code == 0
    (row,) = json.loads(text)["targets"]
    # Seed, SetDataSchema, 3 AddData blocks; 3 data files; 3 linked objects
    assert (row["objects"], row["linkedObjects"]) == (11, 3)
    code, text, _ = cli(capsys, tmp_path, "status", str(ds.path), "--offline")
    assert code == 0 and "objects    11 (3 linked)" in text


def test_pull_bounds_a_linked_object_by_its_summary(tmp_path):
    # the summary says the linked object is at most 10 bytes; the replica serves 3,000: the
    # pull stops at the bound (no block records a linked object's size)
    ds = create_linked_dataset(tmp_path / "ds", versions=1)
    append_linked(ds, [content(8, 8, 3000)], summary=LinkedSummary(1, 10))
    dest = tmp_path / "dest"
    with pytest.raises(IntegrityError, match="longer than the 10 bytes"):
        pull_dataset(LocalReplica(DatasetReader.open(ds.path)), dest)
    assert not (dest / "refs" / "head").exists()


class _DropsFirstLinked(LocalReplica):
    """A replica whose connection drops while the first linked object streams (a fault a
    local directory cannot be made to produce by itself)."""

    def __init__(self, reader: DatasetReader, linked: set[bytes]) -> None:
        super().__init__(reader)
        self.linked = linked
        self.dropped = False

    def stream_object(self, kind, mh, size):
        if mh in self.linked and not self.dropped:
            self.dropped = True
            raise BackendUnavailable(f"{self.name}: connection reset while reading {mh.hex()}")
        return super().stream_object(kind, mh, size)


def test_interrupted_pull_resumes_and_fetches_only_what_is_missing(tmp_path):
    ds = create_linked_dataset(tmp_path / "ds", versions=3)
    dest = tmp_path / "dest"
    flaky = _DropsFirstLinked(DatasetReader.open(ds.path), set(ds.linked))
    with pytest.raises(BackendUnavailable):
        pull_dataset(flaky, dest, parallel=1)
    assert not (dest / "refs" / "head").exists()  # the old head (none): nothing visible
    again = pull_dataset(flaky, dest)
    assert tree(dest) == tree(ds.path)
    # the verified data files staged by the first run are not fetched again: at most the
    # linked objects' bytes are (the first failed fetch stopped the others, so none was
    # staged) and they are counted as already present (6 objects: the 3 data files staged,
    # the 3 linked ones fetched)
    # (the blocks are read again: the chain is walked first)
    assert again.objects_present == 3
    assert again.objects_fetched == again.objects.blocks + 3 == again.objects.total - 3
    blocks = sum(p.stat().st_size for p in (ds.path / "blocks").iterdir())
    linked = sum(ds.linked_path(h).stat().st_size for h in ds.linked)
    assert blocks < again.bytes_fetched <= blocks + linked
    assert validate_dataset(dest, deep=True).ok


def test_second_machine_publishes_only_the_new_linked_object(tmp_path, capsys):
    ds = create_linked_dataset(tmp_path / "ds", versions=3)
    out = tmp_path / "out"
    assert cli(capsys, tmp_path, "publish", str(ds.path), "--to", f"car:{out}", "-q")[0] == 0
    _, (new_link,) = append_linked(ds, [content(6, 6, 800)])
    # another machine: its own home (no state, no verified-chain cache), the same OUT_DIR
    other = tmp_path / "other"
    shutil.copytree(tmp_path / "keys", other / "keys")
    code, text, err = cli(
        capsys, other, "publish", str(ds.path), "--to", f"car:{out}", "--dry-run", "--json"
    )
    assert code == 0, err
    send = json.loads(text)["plan"]["send"]
    linked_sent = [p for p in send if p in {f"data/{multihash_to_str(h)}" for h in ds.linked}]
    assert linked_sent == [f"data/{multihash_to_str(new_link)}"], send


def test_example_linked_objects_round_trip_on_car_and_bundle(tmp_path, capsys):
    # `odfweb3 example --linked-objects` (the builder's writer) read by the link reader
    ds = tmp_path / "ds"
    argv = ["example", str(ds), "--blocks", "3", "--linked-objects", "2", "--seed", "7", "-q"]
    assert cli(capsys, tmp_path, *argv)[0] == 0
    report = validate_dataset(ds, deep=True)
    assert report.ok, report.violations
    code, text, _ = cli(capsys, tmp_path, "inspect", str(ds), "--json")
    assert json.loads(text)["linkedObjects"] == 6
    out, bundle = tmp_path / "out", tmp_path / "ar"
    assert cli(capsys, tmp_path, "publish", str(ds), "--to", f"car:{out}", "-q")[0] == 0
    publish_dataset(ds, BundleTarget(bundle, load_wallet(WALLET)))
    # one more block with one linked object: the delta carries exactly one
    assert cli(capsys, tmp_path, "example", str(ds), "--append", "1", "-q")[0] == 0
    code, text, _ = cli(
        capsys, tmp_path, "publish", str(ds), "--to", f"car:{out}", "--dry-run", "--json"
    )
    plan = json.loads(text)["plan"]
    folders = sorted(p.split("/")[0] for p in plan["send"])
    # the block, its checkpoint, its data file and its one linked object (both in data/)
    assert (plan["newBlocks"], folders) == (1, ["blocks", "checkpoints", "data", "data"])
    assert cli(capsys, tmp_path, "publish", str(ds), "--to", f"car:{out}", "-q")[0] == 0
    second = publish_dataset(ds, BundleTarget(bundle, load_wallet(WALLET)))
    assert sum(1 for o in second.plan.send if o.kind == "linked") == 1
    for ref, dest in ((f"car:{out}", "from-car"), (f"bundle:{bundle}", "from-bundle")):
        code, _, err = cli(capsys, tmp_path, "pull", ref, str(tmp_path / dest))
        assert code == 0, err
        assert tree(tmp_path / dest) == tree(ds)
        code, text, err = cli(
            capsys, tmp_path, "verify", str(ds), "--against", ref, "--deep", "--json"
        )
        assert code == 0, err
        (rep,) = json.loads(text)["replicas"]
        # + a block, a data file, a checkpoint, a linked object
        assert rep["objectsChecked"] == report.objects_checked + 4
