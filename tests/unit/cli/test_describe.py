"""``odfweb3 describe``: JSON-LD and Turtle on stdout, problems with their fix on stderr."""

import json

import pytest
import rdflib
from rdflib.compare import isomorphic

from odfweb3.cli.main import main

# rdflib's JSON-LD parser uses its own deprecated ConjunctiveGraph internally.
pytestmark = pytest.mark.filterwarnings("ignore:ConjunctiveGraph is deprecated")

CID = "bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi"


def run(capsys, *argv, env):
    code = main(list(argv), env=env)
    out, err = capsys.readouterr()
    return code, out, err


def setup(tmp_path, publisher=True):
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    cfg = tmp_path / "odfweb3.yaml"
    cfg.write_text(
        "publisher:\n  type: Person\n  name: Ada Lovelace\n  mbox: ada@example.org\n"
        if publisher
        else "{}\n"
    )
    ds = tmp_path / "ds"
    assert main(["example", str(ds), "--blocks", "2", "--data-bytes", "2K", "-q"], env=env) == 0
    return env, str(cfg), str(ds)


def test_describe_jsonld_and_turtle(capsys, tmp_path):
    env, cfg, ds = setup(tmp_path)
    capsys.readouterr()
    code, out, err = run(capsys, "describe", ds, "--config", cfg, "--ipfs", CID, env=env)
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert doc["type"] == "dcmitype:Dataset" and doc["id"].startswith("did:odf:")
    assert doc["creator"]["name"] == "Ada Lovelace"
    assert doc["creator"]["mbox"] == "mailto:ada@example.org"
    assert doc["relation"] == [f"ipfs://{CID}"]
    assert doc["head"] == (tmp_path / "ds/refs/head").read_text().strip()

    code, ttl, _ = run(
        capsys, "describe", ds, "--config", cfg, "--ipfs", CID, "--format", "ttl", env=env
    )
    assert code == 0
    g_ttl = rdflib.Graph().parse(data=ttl, format="turtle")
    g_json = rdflib.Graph().parse(data=out, format="json-ld")
    assert len(g_ttl) > 15 and isomorphic(g_ttl, g_json)

    code, out, _ = run(
        capsys, "--json", "describe", ds, "--config", cfg, "--format", "ttl", env=env
    )
    data = json.loads(out)
    assert code == 0 and data["valid"] is True and data["problems"] == []
    assert data["descriptor"]["title"] == "Example dataset written by odfweb3"
    assert data["turtle"].startswith("@prefix ")


def test_describe_without_publisher_names_the_ipns_key_content_first(capsys, tmp_path):
    # The creator defaults to the publisher's own identity; describe exits 0.
    env, cfg, ds = setup(tmp_path, publisher=False)
    capsys.readouterr()
    code, out, err = run(capsys, "describe", ds, "--config", cfg, env=env)
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert doc["creator"]["type"] == "foaf:Agent"
    assert doc["creator"]["name"].startswith("ipns://k51")
    # The content first, the @context after it.
    assert out.startswith('{\n  "id": "did:odf:') and list(doc)[-1] == "@context"
    g_json = rdflib.Graph().parse(data=out, format="json-ld")
    code, ttl, _ = run(capsys, "describe", ds, "--config", cfg, "--format", "ttl", env=env)
    assert code == 0 and isomorphic(rdflib.Graph().parse(data=ttl, format="turtle"), g_json)
    # The same name publish --to car: signs the record with.
    code, out, _ = run(
        capsys, "publish", ds, "--config", cfg, "--to", f"car:{tmp_path / 'out'}", "--json", env=env
    )
    assert code == 0 and doc["creator"]["name"] == f"ipns://{json.loads(out)['record']['name']}"
    code, out, _ = run(capsys, "describe", ds, "--config", cfg, "--ipns", "k51abc", env=env)
    assert json.loads(out)["creator"]["name"] == "ipns://k51abc"


def test_publish_suggests_publisher_name_once(capsys, tmp_path):
    env, cfg, ds = setup(tmp_path, publisher=False)
    capsys.readouterr()
    hints = []
    for out_dir in ("o1", "o2"):
        code, _, err = run(
            capsys, "publish", ds, "--config", cfg, "--to", f"car:{tmp_path / out_dir}", env=env
        )
        assert code == 0
        hints.append(err.count("set publisher.name"))
    assert hints == [1, 0]


def test_describe_missing_dataset_is_not_found(capsys, tmp_path):
    code, _, err = run(capsys, "describe", str(tmp_path / "nope"), env={"HOME": str(tmp_path)})
    assert code == 66 and err.count("\n") == 1
