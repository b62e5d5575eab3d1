"""A dataset lacking what catalogues show (title, description, license): every discovery
document is still written, ``describe`` names each missing field in one line, and a publish
says it in one line per command, however many targets it publishes to."""

import json

import pytest
from datacite import schema45

from odfweb3.cli.main import main
from odfweb3.odf.builder import append_blocks, create_root_dataset
from tests.support.croissant import sandbox_croissant

from .test_croissant import load
from .test_dcat import check
from .test_dcat import shapes as shapes

GAP_LINE = "the discovery metadata has"


@pytest.fixture
def env(tmp_path):
    return {
        "HOME": str(tmp_path),
        "ODFWEB3_KEYSTORE": str(tmp_path / "keys"),
        "ODFWEB3_STATE_DIR": str(tmp_path / "state"),
    }


def bare(tmp_path, seed):
    built = create_root_dataset(
        tmp_path / "ds",
        blocks=1,
        data_bytes=2000,
        seed=seed,
        description="",
        fsync=False,
        with_license=False,
    )
    return str(built.path)


def gap_lines(err):
    return [line for line in err.splitlines() if GAP_LINE in line]


def test_publish_to_several_targets_warns_once(tmp_path, env, capsys):
    ds = bare(tmp_path, 7101)
    for target in ("a", "b"):
        assert main(["publish", ds, "--to", f"car:{tmp_path / target}"], env=env) == 0
        lines = gap_lines(capsys.readouterr().err)
        assert len(lines) == 1
        assert lines[0].startswith(f"warning: {ds}: ")
        assert "no title or description (add a SetInfo event with a description)" in lines[0]
        assert "no license (add a SetLicense event with an SPDX id)" in lines[0]
    # one more block, then publish to every target it went to: two publishes, one line
    append_blocks(ds, 1, data_bytes=1000, seed=7102, fsync=False)
    assert main(["publish", ds, "--json"], env=env) == 0
    out, err = capsys.readouterr()
    published = json.loads(out)["publishes"]
    assert len(published) == 2 and all("error" not in p for p in published)
    assert len(gap_lines(err)) == 1


def test_a_complete_dataset_publishes_without_the_warning(tmp_path, env, capsys):
    built = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=2000, seed=7103, fsync=False)
    assert main(["publish", str(built.path), "--to", f"car:{tmp_path / 'a'}"], env=env) == 0
    assert gap_lines(capsys.readouterr().err) == []


@pytest.mark.parametrize("fmt", ["croissant", "dcat", "datacite"])
def test_describe_names_each_missing_field_once(tmp_path, env, capsys, fmt, monkeypatch, shapes):
    ds = bare(tmp_path, 7104)
    args = ["describe", ds, "--format", fmt, "--ipfs", "bafyexample", "--json"]
    assert main(args, env=env) == 0
    out, err = capsys.readouterr()
    missing = json.loads(out)["missing"]
    warned = [line for line in err.splitlines() if line.startswith(f"warning: {fmt}: ")]
    assert warned == [f"warning: {fmt}: {m}" for m in missing]
    assert len(set(missing)) == len(missing)
    text = " ".join(missing)
    assert "license" in text or "rights" in text
    assert "title" in text or "name missing" in text
    # and the document is still valid for its own validator
    doc = json.loads(out)[fmt]
    if fmt == "croissant":
        sandbox_croissant(monkeypatch, tmp_path / "cr")
        load(doc, tmp_path)
    elif fmt == "dcat":
        conforms, _, results = check(doc, shapes)
        assert conforms and results and all(sev == "Warning" for sev, _ in results)
    else:
        assert [e.message for e in schema45.validator.iter_errors(doc)] == []


def test_an_encrypted_publish_says_nothing_of_its_metadata(tmp_path, env, capsys):
    # nothing readable is published beside an encrypted dataset: no gap to tell
    ds = bare(tmp_path, 7105)
    args = ["publish", ds, "--to", f"car:{tmp_path / 'a'}", "--encrypt", "--json"]
    assert main(args, env=env) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["keyEnvelope"]
    assert gap_lines(err) == []
