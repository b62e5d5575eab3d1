"""``status`` never fails because one entry is odd: an interrupted upload's checkpoint
(whole or half written) shows as "upload in progress", a damaged state is one warning line,
and every other dataset and target is still reported (exit 0; ``--strict``: 65)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3.odf.multihash import multihash_from_str
from odfweb3.publish.state import PublishState, StateStore

GOOD = "did:odf:fed01aaaa"
OTHER = "did:odf:fed01bbbb"
NODE = "ipfs:http://127.0.0.1:9"
GATEWAY = "arweave:http://127.0.0.1:9"
HEAD = "f1620" + "ab" * 32


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "ODFWEB3_STATE_DIR": str(tmp_path / "state"),
    }


@pytest.fixture
def cli(env, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv), env=env)
        out, err = capsys.readouterr()
        return code, out, err

    return run


def _good_state(store: StateStore) -> None:
    store.save(
        PublishState(
            dataset_id=GOOD,
            target=NODE,
            head=multihash_from_str(HEAD),
            locator="bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi",
            record={"name": "k51qzi5uqu5dgood", "sequence": 3, "value": "/ipfs/bafy"},
        )
    )


def test_a_half_written_checkpoint_and_a_damaged_state_beside_a_good_one(cli, tmp_path):
    store = StateStore(tmp_path / "state")
    _good_state(store)
    # Ctrl-C while the checkpoint of another dataset's Arweave upload was being written
    half = store.checkpoint_path(OTHER, GATEWAY)
    half.parent.mkdir(parents=True)
    half.write_text('{"datasetId": "did:odf:fed01bbbb", "head": "f16')
    # and a third dataset's state damaged (not a state of this version)
    bad = store.path_for("did:odf:fed01cccc", NODE)
    bad.parent.mkdir(parents=True)
    bad.write_text('{"version": 99}')

    code, out, err = cli("status", "--offline")
    assert code == 0, err
    assert f"{GOOD}\n" in out and "sequence   3" in out  # the good one, whole
    lines = err.strip().splitlines()
    assert len(lines) == 2, err
    assert any(str(bad) in line and "not an odfweb3 publish state" in line for line in lines)
    assert any("upload in progress — run `publish` to resume" in line for line in lines)
    assert "Traceback" not in err

    code, out, err = cli("status", "--offline", "--json")
    assert code == 0
    doc = json.loads(out)
    assert [r["datasetId"] for r in doc["targets"]] == [GOOD]
    assert [d["path"] for d in doc["damaged"]] == [str(bad)]

    code, out, err = cli("status", "--offline", "--strict")
    assert code == 65 and f"{GOOD}\n" in out  # still everything shown, then the code


def test_an_interrupted_first_upload_shows_as_in_progress(cli, tmp_path):
    store = StateStore(tmp_path / "state")
    _good_state(store)
    # A whole checkpoint of a first publish (no state yet for it): its own row.
    path = store.checkpoint_path(OTHER, GATEWAY)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"datasetId": OTHER, "target": GATEWAY, "head": HEAD}))
    # and one beside a state: on that state's row
    beside = store.checkpoint_path(GOOD, NODE)
    beside.write_text(json.dumps({"datasetId": GOOD, "target": NODE, "head": HEAD}))

    code, out, err = cli("status", "--offline")
    assert code == 0 and err == ""
    assert out.count("upload in progress — run `publish` to resume") == 2
    assert f"{OTHER}\n" in out and f"{GOOD}\n" in out
    code, out, _ = cli("status", "--offline", "--json", "--strict")
    assert code == 0  # an upload in progress is not damage
    rows = {r["datasetId"]: r for r in json.loads(out)["targets"]}
    assert rows[OTHER]["pending"] and rows[OTHER]["uploadInProgress"] == str(path)
    assert rows[OTHER]["publishedHead"] is None
    assert rows[GOOD]["uploadInProgress"] == str(beside) and rows[GOOD]["sequence"] == 3


def test_a_state_with_a_field_of_the_wrong_type_is_one_line(cli, tmp_path):
    store = StateStore(tmp_path / "state")
    _good_state(store)
    store.save(PublishState(dataset_id=OTHER, target=NODE, record={"sequence": "three"}))
    code, out, err = cli("status", "--offline")
    assert code == 0 and f"{GOOD}\n" in out and f"{OTHER}\n" not in out
    assert err.count("\n") == 1 and "record.sequence" in err
    assert cli("status", "--offline", "--strict")[0] == 65


def test_other_commands_skip_the_checkpoint(cli, tmp_path):
    # the checkpoint is never read as a state (it was: "not an odfweb3 publish state")
    store = StateStore(tmp_path / "state")
    _good_state(store)
    path = store.checkpoint_path(OTHER, GATEWAY)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"head": HEAD, "tx": {}}))
    assert [s.dataset_id for s in store.all()] == [GOOD]
