"""publish --batch / --flush: several updates queued, posted as one upload."""

import json
import shutil
from pathlib import Path

from odfweb3.cli.main import main
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3_arweave.formats.ans104 import iter_bundle

WALLET = Path(__file__).resolve().parents[1] / "adapters/arweave/vectors/TEST_ONLY_wallet.json"


def run(capsys, tmp_path, *argv):
    env = {"HOME": str(tmp_path), "ODFWEB3_STATE_DIR": str(tmp_path / "state")}
    code = main(list(argv), env=env)
    out, err = capsys.readouterr()
    return code, out, err


def test_two_batched_updates_flush_as_one_bundle(capsys, tmp_path):
    wallet = tmp_path / "w.json"
    shutil.copy(WALLET, wallet)
    wallet.chmod(0o600)
    ds = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=500, seed=1).path
    out = tmp_path / "out"
    to = ["--to", f"bundle:{out}", "--wallet", str(wallet)]
    assert run(capsys, tmp_path, "publish", str(ds), *to, "-q")[0] == 0
    first = set(out.glob("*.bundle"))

    append_blocks(ds, 1, seed=1)
    code, text, _ = run(capsys, tmp_path, "publish", str(ds), *to, "--batch", "--json")
    assert code == 0 and json.loads(text)["queued"]["heads"]
    append_blocks(ds, 1, seed=2)
    code, text, _ = run(capsys, tmp_path, "publish", str(ds), *to, "--batch", "--json")
    assert len(json.loads(text)["queued"]["heads"]) == 2
    assert set(out.glob("*.bundle")) == first  # nothing posted while batching

    code, text, err = run(capsys, tmp_path, "publish", "--flush", *to, "--json")
    assert code == 0, err
    flushed = json.loads(text)["flushed"]  # exactly one JSON document
    assert len(flushed) == 1 and len(flushed[0]["heads"]) == 2
    new = set(out.glob("*.bundle")) - first
    assert len(new) == 1  # both updates in one bundle
    with open(new.pop(), "rb") as f:
        items = list(iter_bundle(f))
    blocks = [
        i
        for i in items
        if ("File-Id", None)
        and any(
            t.name == b"Content-Type" and t.value == b"application/octet-stream" for t in i.tags
        )
    ]
    assert len(blocks) >= 6  # 2 blocks + 2 data files + 2 checkpoints
    summary = json.loads((out / "publish.json").read_text())
    assert summary["head"] == (ds / "refs/head").read_text()

    code, text, _ = run(capsys, tmp_path, "publish", "--flush", *to, "--json")
    assert code == 0 and json.loads(text)["flushed"] == []


def test_flush_refuses_rewritten_dataset(capsys, tmp_path):
    wallet = tmp_path / "w.json"
    shutil.copy(WALLET, wallet)
    wallet.chmod(0o600)
    ds = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=500, seed=1).path
    to = ["--to", f"bundle:{tmp_path / 'out'}", "--wallet", str(wallet)]
    run(capsys, tmp_path, "publish", str(ds), *to, "--batch", "-q")
    shutil.rmtree(ds)
    create_root_dataset(ds, blocks=2, data_bytes=500, seed=9)
    code, _, err = run(capsys, tmp_path, "publish", "--flush", *to)
    assert code == 75 and "no longer descends" in err
