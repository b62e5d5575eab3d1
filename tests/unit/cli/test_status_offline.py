"""``status`` knows the offline publishes (car:DIR, bundle:DIR) too."""

from __future__ import annotations

import json
import shutil

import pytest

from odfweb3.cli.main import main
from odfweb3.errors import FormatError
from odfweb3.publish.offline import INDEX_NAME, OfflineIndex


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv), env=env)
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_status_lists_car_and_bundle_publishes(cli, tmp_path):
    assert cli("status")[1] == "nothing published yet (no publish state)\n"
    cli("example", "ds", "--blocks", "1", "-q")
    cli("wallet", "new", "w.json", "-q")
    assert cli("publish", "ds", "--to", "car:out", "-q")[0] == 0
    assert cli("publish", "ds", "--to", "bundle:ar", "--wallet", "w.json", "-q")[0] == 0
    assert cli("publish", "ds", "--to", "car:out", "-q")[0] == 0  # remembered once
    code, out, err = cli("status", "--json")
    assert code == 0 and err == ""
    rows = json.loads(out)["targets"]
    assert [r["target"] for r in rows] == [f"car:{tmp_path / 'out'}", f"bundle:{tmp_path / 'ar'}"]
    assert all(r["upToDate"] and r["publishedHead"] == r["localHead"] for r in rows)
    assert rows[0]["name"].startswith("k51") and rows[0]["sequence"] == 0
    assert rows[1]["recordId"] and rows[1]["name"] is None

    cli("example", "ds", "--append", "1", "-q")
    code, out, _ = cli("status", "ds")
    assert code == 0 and out.count("(local is newer)") == 2
    assert "  target     car:out\n" in out and "  target     bundle:ar\n" in out
    assert "None" not in out

    shutil.rmtree(tmp_path / "out")
    code, out, err = cli("status")
    assert code == 0 and "target     bundle:ar" in out and "car:out" not in out
    assert "publish.json is gone (moved or deleted?); status --forget-gone" in err

    code, out, err = cli("status", "--forget-gone")
    assert code == 0 and "target     bundle:ar" in out
    assert err.count("\n") == 1 and "car:" in err and "forgotten (" in err
    code, out, err = cli("status")
    assert code == 0 and err == "" and "target     bundle:ar" in out
    assert cli("status", "--forget-gone")[2] == ""  # nothing left to forget


def test_forget_gone_keeps_a_damaged_summary_and_drops_a_reused_directory(cli, tmp_path):
    cli("example", "a", "--blocks", "1", "-q")
    cli("example", "b", "--blocks", "1", "-q")
    assert cli("publish", "a", "--to", "car:x", "-q")[0] == 0
    assert cli("publish", "a", "--to", "car:y", "-q")[0] == 0
    (tmp_path / "y" / "publish.json").write_text("{")  # damaged: may be mended, kept
    shutil.rmtree(tmp_path / "x")
    assert cli("publish", "b", "--to", "car:x", "-q")[0] == 0  # x now holds dataset b
    state = tmp_path / "home" / ".local" / "share" / "odfweb3" / "state"
    index = OfflineIndex(state)
    before = {(e.dataset_id, e.target) for e in index.entries()}
    assert len(before) == 3
    gone = index.forget_stale()
    assert [e.target for e, _ in gone] == [f"car:{tmp_path / 'x'}"]
    assert "now holds" in gone[0][1]
    after = {(e.dataset_id, e.target) for e in index.entries()}
    assert after == before - {(gone[0][0].dataset_id, gone[0][0].target)}
    assert index.forget_stale() == []


def test_a_damaged_index_is_one_line(cli, tmp_path):
    state = tmp_path / "home" / ".local" / "share" / "odfweb3" / "state"
    state.mkdir(parents=True)
    (state / INDEX_NAME).write_text("[1, 2")
    code, _, err = cli("status")
    assert code == 65 and err.count("\n") == 1 and INDEX_NAME in err and "move it away" in err
    with pytest.raises(FormatError):
        OfflineIndex(state).entries()


def test_the_index_ignores_node_targets_and_updates_the_source(tmp_path):
    index = OfflineIndex(tmp_path)
    index.remember("did:odf:x", "ipfs:http://127.0.0.1:5001", "/d")
    assert index.entries() == []
    index.remember("did:odf:x", "car:/o", "/d1")
    index.remember("did:odf:x", "car:/o", "/d2")
    assert [(e.target, e.source) for e in index.entries()] == [("car:/o", "/d2")]


def test_the_dataset_id_comes_from_the_verified_chain_cache(cli, tmp_path):
    """``status DATASET`` and ``publish DATASET`` (no --to) need the dataset ID, which is in
    the Seed at the chain's far end: a head published before is found in the verified-chain
    cache, so the walk stops there instead of reading the whole chain."""
    from odfweb3.errors import OdfWeb3Error
    from odfweb3.odf.chain import walk_chain
    from odfweb3.odf.layout import DatasetReader
    from odfweb3.publish.chain_cache import ChainCache
    from odfweb3.publish.dataset_id import dataset_id_of

    cli("example", "ds", "--blocks", "3", "-q")
    assert cli("publish", "ds", "--to", "car:out", "-q")[0] == 0
    cli("example", "ds", "--append", "1", "-q")
    state = tmp_path / "home" / ".local" / "share" / "odfweb3" / "state"
    cache = ChainCache(state / "cache" / "verified-chains")
    want = dataset_id_of("ds")
    reader = DatasetReader.open("ds")
    seed = list(walk_chain(reader))[-1].hash
    reader.path_of("block", seed).unlink()
    with pytest.raises(OdfWeb3Error):
        dataset_id_of("ds")  # the whole walk reaches the missing Seed
    assert dataset_id_of("ds", cache) == want  # stops at the published head
    code, out, _ = cli("status", "ds")
    assert code == 0 and "(local is newer)" in out
