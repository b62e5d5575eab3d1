"""Someone who can write into a shared output directory (``car:DIR``, ``bundle:DIR``).

Each test rebuilds one attack on real files (the directory is local), runs the real CLI in a
child process (tests/support/measure.py) and checks one line, a documented exit code,
bounded time and memory, and no exit 0 for an operation that did not do what it says: a
publish that exits 0 has signed a record whose content is all there (``pull`` of it exits
0), never a sequence this machine already signed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.publish.pack_index import write_pack
from odfweb3_arweave.publish.bundle_target import objects_of as bundle_objects_of
from odfweb3_arweave.publish.file_index import FileIndex
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.publish.car_target import objects_of
from odfweb3_ipfs.publish.object_index import ObjectIndex
from odfweb3_ipfs.read.car_replica import check_car_dir
from tests.support.measure import CliRun, run_cli

MAX_RSS_MB = 256
WALLET = Path(__file__).parents[1] / "adapters" / "arweave" / "vectors" / "TEST_ONLY_wallet.json"


def _env(tmp: Path, state: str = "state") -> dict[str, str]:
    return {
        "HOME": str(tmp),
        "ODFWEB3_KEYSTORE": str(tmp / "keys"),
        "ODFWEB3_STATE_DIR": str(tmp / state),
    }


def _cli(env: dict[str, str], *argv: str) -> CliRun:
    run = run_cli(list(argv), env=env)
    assert not run.timed_out, run.summary()  # run_cli's kill: 120 s, for a hang only
    assert run.peak_rss_mb < MAX_RSS_MB, run.summary()
    assert "Traceback" not in run.stderr, run.summary()
    return run


def _one_line(run: CliRun, *words: str) -> str:
    assert len(run.lines) == 1, run.summary()
    assert all(w in run.lines[0] for w in words), run.summary()
    return run.lines[0]


def _warned(run: CliRun, *words: str) -> str:
    """The one warning line naming ``words`` (a publish also prints its summary)."""
    hits = [ln for ln in run.lines if all(w in ln for w in words)]
    assert len(hits) == 1 and hits[0].startswith("warning: "), run.summary()
    return hits[0]


def _summary(out: Path) -> dict:
    return json.loads((out / "publish.json").read_text("utf-8"))


def _write_summary(out: Path, doc: dict) -> None:
    (out / "publish.json").write_text(json.dumps(doc), "utf-8")


def _pull_ok(env: dict[str, str], out: Path, dest: Path, ds: Path) -> None:
    run = _cli(env, "pull", f"car:{out}", str(dest), "-q")
    assert run.code == 0, run.summary()
    assert (dest / "refs" / "head").read_bytes() == (ds / "refs" / "head").read_bytes()


@pytest.fixture
def ds(tmp_path: Path) -> Path:
    return create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=2000, seed=1).path


# -- 1. a record over missing content --------------------------------------------------------


def test_car_index_part_naming_a_block_in_no_car(tmp_path: Path, ds: Path) -> None:
    env, out = _env(tmp_path), tmp_path / "out"
    assert _cli(env, "publish", str(ds), "--to", f"car:{out}", "-q").code == 0
    # The attacker rewrites a pack and publish.json's part refs (both in OUT_DIR) so that a
    # data file's entry names a block no CAR holds.
    objects = objects_of(out)
    victim = next(p for p in objects if p.startswith("data/"))
    nowhere = Cid.of_block(b"in no CAR").encode()
    objects[victim] = {**objects[victim], "cid": nowhere}
    index, pack = ObjectIndex.of_objects(out, objects)
    write_pack(out, pack)
    doc = _summary(out)
    doc["extra"]["objectIndex"] = index.to_json()
    _write_summary(out, doc)
    append_blocks(ds, 1, data_bytes=1000, seed=2)
    run = _cli(env, "publish", str(ds), "--to", f"car:{out}")
    # Re-sent: the new record's content is all there.
    assert run.code == 0, run.summary()
    _warned(run, "publish.json changed", "writing a full CAR again")
    _pull_ok(env, out, tmp_path / "dest", ds)
    assert objects_of(out)[victim]["cid"] != nowhere


def _empty_to_header(car: Path) -> None:
    data = car.read_bytes()
    length, shift, i = 0, 0, 0
    while True:  # the header is one varint-prefixed DAG-CBOR map
        b = data[i]
        length |= (b & 0x7F) << shift
        shift += 7
        i += 1
        if not b & 0x80:
            break
    car.write_bytes(data[: i + length])


def test_car_older_car_emptied_to_its_header(tmp_path: Path, ds: Path) -> None:
    env, out = _env(tmp_path), tmp_path / "out"
    assert _cli(env, "publish", str(ds), "--to", f"car:{out}", "-q").code == 0
    first = _summary(out)["extra"]["cars"][0]
    append_blocks(ds, 1, data_bytes=1000, seed=2)
    assert _cli(env, "publish", str(ds), "--to", f"car:{out}", "-q").code == 0
    _empty_to_header(out / first)
    append_blocks(ds, 1, data_bytes=1000, seed=3)
    run = _cli(env, "publish", str(ds), "--to", f"car:{out}")
    assert run.code == 0, run.summary()
    _warned(run, first, "writing a full CAR again")
    _pull_ok(env, out, tmp_path / "dest", ds)


def test_bundle_tampered_file_index_with_a_full_manifest(tmp_path: Path, ds: Path) -> None:
    env, out = _env(tmp_path), tmp_path / "out"
    (tmp_path / "full.yaml").write_text("arweave:\n  manifest: full\n", "utf-8")
    argv = ["--to", f"bundle:{out}", "--wallet", str(WALLET), "-q"]
    argv += ["--config", str(tmp_path / "full.yaml")]
    assert _cli(env, "publish", str(ds), *argv).code == 0
    files = bundle_objects_of(out)
    victim = next(p for p in files if p.startswith("data/"))
    missing = "A" * 43
    files[victim] = {**files[victim], "dataItemId": missing}
    index, pack = FileIndex.of_objects(out, files)
    write_pack(out, pack)
    doc = _summary(out)
    doc["extra"]["objectIndex"] = index.to_json()
    _write_summary(out, doc)
    before = sorted(p.name for p in out.glob("*.bundle"))
    tampered = (out / "publish.json").read_bytes()
    append_blocks(ds, 1, data_bytes=1000, seed=2)
    run = _cli(env, "publish", str(ds), *argv)
    assert run.code == 65, run.summary()
    _one_line(run, "publish.json")
    assert sorted(p.name for p in out.glob("*.bundle")) == before  # nothing signed
    assert (out / "publish.json").read_bytes() == tampered  # left as found, for the user


# -- 2. equivocation after a rollback ---------------------------------------------------------


def _signed(out: Path) -> tuple[int, str]:
    record = check_car_dir(out).record
    return record.sequence, record.value_text


def test_restored_older_directory_does_not_reuse_a_signed_sequence(
    tmp_path: Path, ds: Path
) -> None:
    env, out = _env(tmp_path), tmp_path / "out"
    assert _cli(env, "publish", str(ds), "--to", f"car:{out}", "-q").code == 0
    shutil.copytree(out, tmp_path / "backup")
    append_blocks(ds, 1, data_bytes=1000, seed=2)
    assert _cli(env, "publish", str(ds), "--to", f"car:{out}", "-q").code == 0
    seq1, value1 = _signed(out)
    assert seq1 == 1
    shutil.rmtree(out)
    shutil.copytree(tmp_path / "backup", out)  # the rollback
    append_blocks(ds, 1, data_bytes=1000, seed=3)
    run = _cli(env, "publish", str(ds), "--to", f"car:{out}", "-q")
    assert run.code == 0, run.summary()
    seq, value = _signed(out)
    assert seq > seq1 and value != value1
    # publish.json deleted: still above every sequence signed.
    (out / "publish.json").unlink()
    append_blocks(ds, 1, data_bytes=1000, seed=4)
    run = _cli(env, "publish", str(ds), "--to", f"car:{out}", "-q")
    assert run.code == 0, run.summary()
    assert _signed(out)[0] > seq


def test_name_push_refuses_a_record_older_than_one_signed_here(tmp_path: Path, ds: Path) -> None:
    env, out = _env(tmp_path), tmp_path / "out"
    assert _cli(env, "publish", str(ds), "--to", f"car:{out}", "-q").code == 0
    name = _summary(out)["record"]["name"]
    old = tmp_path / f"{name}.ipns-record"
    shutil.copy(out / f"{name}.ipns-record", old)
    append_blocks(ds, 1, data_bytes=1000, seed=2)
    assert _cli(env, "publish", str(ds), "--to", f"car:{out}", "-q").code == 0
    # Refused before any request: the endpoint is a closed port.
    run = _cli(env, "name", "push", str(old), "--routing", "http://127.0.0.1:9")
    assert run.code == 75, run.summary()
    _one_line(run, "sequence 0", "sequence 1")


# -- 3. commands built from OUT_DIR text -------------------------------------------------------


def test_car_name_that_is_a_shell_command_is_refused(tmp_path: Path, ds: Path) -> None:
    env, out = _env(tmp_path), tmp_path / "out"
    assert _cli(env, "publish", str(ds), "--to", f"car:{out}", "-q").code == 0
    evil = "x.car; touch INJECTED #"
    (out / evil).write_bytes(b"")
    doc = _summary(out)
    doc["extra"]["cars"].append(evil)
    _write_summary(out, doc)
    append_blocks(ds, 1, data_bytes=1000, seed=2)
    run = _cli(env, "publish", str(ds), "--to", f"car:{out}")
    assert run.code == 65, run.summary()
    _one_line(run, "publish.json", "not a CAR file name")
    assert "touch INJECTED #" not in _summary(out).get("import", [""])[0]


def test_control_characters_from_out_dir_never_reach_the_terminal(tmp_path: Path, ds: Path) -> None:
    env, out = _env(tmp_path), tmp_path / "out"
    assert _cli(env, "publish", str(ds), "--to", f"car:{out}", "-q").code == 0
    doc = _summary(out)
    doc["datasetId"] = "did:odf:\x1b]0;owned\x07\x1b[2J"
    _write_summary(out, doc)
    run = _cli(env, "publish", str(ds), "--to", f"car:{out}")
    assert run.code == 75, run.summary()
    line = _one_line(run, "did:odf:")
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in line)


# -- 4. whose record is it? ---------------------------------------------------------------------


def test_pull_says_who_signed_and_expect_name_refuses_another(tmp_path: Path, ds: Path) -> None:
    env, out = _env(tmp_path), tmp_path / "out"
    assert _cli(env, "publish", str(ds), "--to", f"car:{out}", "-q").code == 0
    ours = _summary(out)["record"]["name"]
    # Someone else publishes the same dataset, signed with a key of their own.
    other = _env(tmp_path, "state-b") | {"ODFWEB3_KEYSTORE": str(tmp_path / "keys-b")}
    forged = tmp_path / "forged"
    assert _cli(other, "publish", str(ds), "--to", f"car:{forged}", "-q").code == 0
    theirs = _summary(forged)["record"]["name"]
    assert theirs != ours
    run = _cli(env, "pull", f"car:{forged}", str(tmp_path / "d1"))
    assert run.code == 0, run.summary()
    assert theirs in run.stderr and "not" in run.stderr, run.summary()
    run = _cli(env, "pull", f"car:{forged}", str(tmp_path / "d2"), "--expect-name", ours)
    assert run.code == 65, run.summary()
    _one_line(run, theirs, ours)
    assert not (tmp_path / "d2").exists()
    run = _cli(env, "pull", f"car:{out}", str(tmp_path / "d3"), "--expect-name", ours)
    assert run.code == 0, run.summary()


def test_an_input_directory_stands_for_the_name_that_signed_its_record(
    tmp_path: Path, ds: Path, capsys
) -> None:
    from odfweb3.cli.main import main
    from odfweb3_ipfs.read.car_replica import CarDirReplica

    out = tmp_path / "out"
    honest, evil = out / "inputs" / "a", out / "inputs" / "b"
    # The attacker publishes from a machine of its own (keystore and state): from this
    # machine's state, which knows the honest name, a keystore without its key is refused.
    for where, keys in ((honest, "keys"), (evil, "keys-b")):
        env = _env(tmp_path) | {
            "ODFWEB3_KEYSTORE": str(tmp_path / keys),
            "ODFWEB3_STATE_DIR": str(tmp_path / f"state-{keys}"),
        }
        assert main(["publish", str(ds), "--to", f"car:{where}", "-q"], env=env) == 0, capsys
    name, theirs = _summary(honest)["ipnsName"], _summary(evil)["ipnsName"]
    # The attacker's copy claims the honest input's name in the unsigned field.
    doc = _summary(evil)
    doc["ipnsName"] = name
    _write_summary(evil, doc)
    replica = CarDirReplica(check_car_dir(honest), f"car:{out}", out)
    assert replica.local_inputs() == {
        f"ipns://{name}": f"car:{honest}",
        f"ipns://{theirs}": f"car:{evil}",
    }


def test_a_second_machine_rereads_an_honest_directory_and_sends_only_the_change(
    tmp_path: Path, ds: Path
) -> None:
    env, out = _env(tmp_path), tmp_path / "out"
    assert _cli(env, "publish", str(ds), "--to", f"car:{out}", "-q").code == 0
    first = _summary(out)["extra"]["cars"][0]
    append_blocks(ds, 1, data_bytes=1000, seed=2)
    # Another state directory (another machine on the shared disk): no seal, so the
    # directory is re-read; it checks out, and only the new blocks are written.
    other = _env(tmp_path, "state-b")
    run = _cli(other, "publish", str(ds), "--to", f"car:{out}")
    assert run.code == 0 and "warning" not in run.stderr, run.summary()
    cars = _summary(out)["extra"]["cars"]
    assert cars[0] == first and len(cars) == 2
    assert (out / cars[1]).stat().st_size < (out / first).stat().st_size
    _pull_ok(env, out, tmp_path / "dest", ds)


def test_a_second_machine_rereads_an_honest_bundle_dir_and_sends_only_the_change(
    tmp_path: Path, ds: Path
) -> None:
    out = tmp_path / "out"
    argv = ["--to", f"bundle:{out}", "--wallet", str(WALLET)]
    assert _cli(_env(tmp_path), "publish", str(ds), *argv, "-q").code == 0
    append_blocks(ds, 1, data_bytes=1000, seed=2)
    run = _cli(_env(tmp_path, "state-b"), "publish", str(ds), *argv)
    assert run.code == 0 and "warning" not in run.stderr, run.summary()
    bundles = _summary(out)["extra"]["bundles"]
    assert len(bundles) == 2
    assert (out / bundles[1]).stat().st_size < (out / bundles[0]).stat().st_size
    run = _cli(_env(tmp_path), "pull", f"bundle:{out}", str(tmp_path / "dest"), "-q")
    assert run.code == 0, run.summary()
    assert (tmp_path / "dest" / "refs" / "head").read_bytes() == (ds / "refs/head").read_bytes()


def test_pull_of_a_remote_refuses_a_record_no_key_of_ours_signed(
    tmp_path: Path, ds: Path, capsys
) -> None:
    from odfweb3.cli.main import main

    env, out = _env(tmp_path), tmp_path / "out"
    assert main(["publish", str(ds), "--to", f"car:{out}", "-q"], env=env) == 0
    assert main(["remote", "add", "shared", f"car:{out}"], env=env) == 0
    assert main(["pull", "shared", str(tmp_path / "d1"), "-q"], env=env) == 0
    capsys.readouterr()
    # Someone re-signs the directory with a key of their own (another keystore).
    other = _env(tmp_path, "state-b") | {"ODFWEB3_KEYSTORE": str(tmp_path / "keys-b")}
    shutil.rmtree(out)
    assert main(["publish", str(ds), "--to", f"car:{out}", "-q"], env=other) == 0
    theirs = _summary(out)["record"]["name"]
    capsys.readouterr()
    assert main(["pull", "shared", str(tmp_path / "d2")], env=env) == 65
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and theirs in err and "--expect-name" in err, err
    assert not (tmp_path / "d2").exists()
    # Named as its publisher, it is accepted.
    argv = ["pull", "shared", str(tmp_path / "d3"), "-q", "--expect-name", theirs]
    assert main(argv, env=env) == 0
