"""`--to turbo` with a large item: the bundler's multipart `/chunks` upload, on the real service.

The test config sets `arweave.turbo_chunked_above` low (1 MiB) so the dataset's one data file
(about 11 MiB: three chunks of the bundler's smallest size, 5 MiB) goes in chunks while the
small items still go to `POST /v1/tx`. The bundler assembles the chunks itself (its finalize
queue, its own validation of the item's signature) and answers a receipt we verify; the
service's own database shows the item came through a multipart upload. Then the reader's
cycle: resolve, pull, verify, through arlocal only.

The interruption test stops a publish (KeyboardInterrupt, as Ctrl-C) right after the
bundler answered the second chunk and before the checkpoint said so: the worst moment. The
service's own chunk list (`GET /v1/chunks/arweave/{upload}/-1`) shows two chunks; the rerun
sends only the third (counted at the client's chunk POSTs: offsets and bytes) and the upload
reads back; its progress (`-v`: plain lines) starts at the resumed byte. The kill test runs
the publisher as its own process and SIGKILLs it once its checkpoint says the bundler took the
first chunk; the rerun sends exactly the chunks the service's own list lacks.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from odfweb3.cli.main import main
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.state import StateStore
from odfweb3_arweave.client.turbo import TurboClient
from odfweb3_arweave.formats.receipt import decode_receipt, verify_receipt
from odfweb3_arweave.wallet import generate_wallet, save_wallet
from tests.support.turbo import TurboNode

_CHUNK = 5 << 20
_DATA = 11 << 20  # three chunks: 5 + 5 + about 1 MiB (the Parquet framing adds a little)


def _layout(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and p.relative_to(root).parts[0] in ("blocks", "refs", "data", "checkpoints")
    }


def _config(tmp_path: Path, turbo: TurboNode) -> Path:
    cfg = tmp_path / "odfweb3.yaml"
    arweave = {
        "gateway": turbo.arlocal.url,
        "turbo": turbo.url,
        "turbo_chunked_above": 1 << 20,
        "turbo_chunk_bytes": _CHUNK,
        "turbo_chunked_timeout_s": 600,
    }
    data = {"state_dir": str(tmp_path / "state"), "keystore": str(tmp_path / "keys")}
    cfg.write_text(json.dumps({**data, "arweave": arweave}))
    return cfg


def _length(body: Any) -> int:
    """The bytes of a chunk as post_chunk gets it: bytes, or (length, pieces) streamed."""
    return len(body) if isinstance(body, bytes) else int(body[0])


def _multipart_items(turbo: TurboNode) -> set[str]:
    return {r[0] for r in turbo.query("select data_item_id from finished_multi_part_upload")}


def _settle(turbo: TurboNode, record_id: str, big_id: str) -> None:
    """Both bundles seeded (the large item may be bundled apart from the record), then
    mined until the bundler says FINALIZED of each."""
    turbo.wait_seeded(big_id)
    turbo.wait_seeded(record_id)
    turbo.arlocal.mine(20)
    turbo.wait_status(big_id, "FINALIZED")
    turbo.wait_status(record_id, "FINALIZED")


def _read_back(turbo: TurboNode, tmp_path: Path, ds: Path, record_id: str, capsys) -> None:
    """A reader on another machine: resolve by did and owner, pull, verify --deep."""
    reader_cfg = tmp_path / "reader.yaml"
    reader_cfg.write_text(
        json.dumps(
            {"state_dir": str(tmp_path / "reader-state"), "arweave": {"gateway": turbo.arlocal.url}}
        )
    )
    dest = tmp_path / "pulled"
    assert main(["pull", f"ar://{record_id}", str(dest), "--config", str(reader_cfg)]) == 0
    capsys.readouterr()
    assert _layout(dest) == _layout(ds)
    vargs = ["verify", str(ds), "--against", f"ar://{record_id}", "--deep", "--json"]
    assert main([*vargs, "--config", str(reader_cfg)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["status"] for r in report["replicas"]] == ["identical"]


def test_a_large_item_goes_in_chunks_and_reads_back(turbo: TurboNode, tmp_path, capsys) -> None:
    wallet = generate_wallet()
    wallet_path = tmp_path / "wallet.json"
    save_wallet(wallet, wallet_path)
    cfg = _config(tmp_path, turbo)
    ds = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=_DATA, seed=2901).path
    before = _multipart_items(turbo)

    argv = ["publish", str(ds), "--to", "turbo", "--wallet", str(wallet_path), "--json"]
    assert main([*argv, "--config", str(cfg)]) == 0
    published = json.loads(capsys.readouterr().out)
    record_id = published["recordId"]

    states = StateStore(tmp_path / "state")
    (state,) = states.scan().states
    receipts = state.extra["receipts"]
    for item_id, doc in receipts.items():  # every kept receipt is the bundler's, for its item
        verify_receipt(decode_receipt(doc), item_id=item_id, signer=turbo.address)
    chunked = _multipart_items(turbo) - before
    assert len(chunked) == 1 and chunked <= set(receipts)  # the data file, and only it
    assert record_id not in chunked
    assert not list((tmp_path / "state").rglob("*.upload.json"))  # no checkpoint left

    _settle(turbo, record_id, next(iter(chunked)))
    rargs = ["--owner", wallet.address, "--config", str(tmp_path / "r.yaml")]
    (tmp_path / "r.yaml").write_text(json.dumps({"arweave": {"gateway": turbo.arlocal.url}}))
    assert main(["resolve", state.dataset_id, "--json", *rargs]) == 0
    (resolved,) = json.loads(capsys.readouterr().out)["results"]
    assert resolved["ref"] == f"ar://{record_id}"
    assert resolved["head"] == multihash_to_str(DatasetReader.open(ds).head())
    _read_back(turbo, tmp_path, ds, record_id, capsys)


def test_stopped_mid_chunks_the_rerun_sends_only_the_rest(
    turbo: TurboNode, tmp_path, capsys, monkeypatch
) -> None:
    wallet_path = tmp_path / "wallet.json"
    save_wallet(generate_wallet(), wallet_path)
    cfg = _config(tmp_path, turbo)
    ds = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=_DATA, seed=2902).path
    argv = ["publish", str(ds), "--to", "turbo", "--wallet", str(wallet_path)]
    argv += ["--config", str(cfg)]

    posted: list[tuple[int, int]] = []
    real_post = TurboClient.post_chunk

    def post(self: TurboClient, upload_id: str, offset: int, body: Any, **kw: Any) -> None:
        real_post(self, upload_id, offset, body, **kw)
        posted.append((offset, _length(body)))
        if len(posted) == 2:
            raise KeyboardInterrupt  # the bundler has it; the checkpoint does not say so yet

    monkeypatch.setattr(TurboClient, "post_chunk", post)
    assert main([*argv, "--json"]) == 130  # interrupted
    capsys.readouterr()
    states = StateStore(tmp_path / "state")
    assert states.scan().states == []  # nothing recorded as uploaded
    (checkpoint_path,) = (tmp_path / "state").rglob("*.upload.json")
    entry = json.loads(checkpoint_path.read_text())["chunked"]
    assert entry["sent"] == [0] and entry["sending"] == _CHUNK
    with TurboClient(turbo.url) as client:  # the service's own word: it holds two chunks
        held = client.upload_chunks(entry["uploadId"])
    assert held is not None and [o for o, _ in held.chunks] == [0, _CHUNK]
    size = entry["size"]
    assert size > 2 * _CHUNK

    def counted(self: TurboClient, upload_id: str, offset: int, body: Any, **kw: Any) -> None:
        posted.append((offset, _length(body)))
        real_post(self, upload_id, offset, body, **kw)

    posted.clear()
    monkeypatch.setattr(TurboClient, "post_chunk", counted)
    assert main([*argv, "-v"]) == 0
    err = capsys.readouterr().err
    assert posted == [(2 * _CHUNK, size - 2 * _CHUNK)]  # only the third chunk went
    # The bar starts where the checkpoint stood: the chunk it had the bundler's 200 for.
    assert f"item {entry['itemId']} resumed at byte {_CHUNK}" in err
    (state,) = states.scan().states
    record_id = state.record["recordId"]
    receipt = state.extra["receipts"][entry["itemId"]]
    verify_receipt(decode_receipt(receipt), item_id=entry["itemId"], signer=turbo.address)
    assert entry["itemId"] in _multipart_items(turbo)
    _settle(turbo, record_id, entry["itemId"])
    _read_back(turbo, tmp_path, ds, record_id, capsys)


def test_killed_mid_chunks_the_rerun_sends_only_what_the_bundler_lacks(
    turbo: TurboNode, tmp_path, capsys, monkeypatch
) -> None:
    """A publisher process SIGKILLed once the checkpoint says the first chunk was taken (the
    second is then on its way, or taken, or not yet sent: wherever the kill lands). The
    rerun asks the service which chunks it holds and sends exactly the others."""
    wallet_path = tmp_path / "wallet.json"
    save_wallet(generate_wallet(), wallet_path)
    cfg = _config(tmp_path, turbo)
    ds = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=_DATA, seed=2903).path
    argv = ["publish", str(ds), "--to", "turbo", "--wallet", str(wallet_path)]
    argv += ["--config", str(cfg)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ODFWEB3_")}
    env |= {"HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "odfweb3.cli.main", *argv],
        env=env,
        cwd=Path(__file__).resolve().parents[2],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    entry: dict[str, Any] | None = None
    try:
        for _ in range(6000):  # bounded: 10 min of looks
            if proc.poll() is not None:
                break
            for path in (tmp_path / "state").rglob("*.upload.json"):
                try:
                    doc = json.loads(path.read_text())
                except (OSError, ValueError):
                    continue  # being renamed into place
                if (doc.get("chunked") or {}).get("sent"):
                    entry = doc["chunked"]
            if entry is not None:
                proc.send_signal(signal.SIGKILL)
                break
            time.sleep(0.1)
    finally:
        if proc.poll() is None:
            proc.kill()
        err = proc.communicate(timeout=120)[1]
    assert entry is not None, err  # it was killed mid-chunks, not finished
    assert proc.returncode == -signal.SIGKILL
    assert StateStore(tmp_path / "state").scan().states == []  # nothing recorded as uploaded
    (checkpoint_path,) = (tmp_path / "state").rglob("*.upload.json")
    entry = json.loads(checkpoint_path.read_text())["chunked"]
    with TurboClient(turbo.url) as client:  # the service's own word on what it holds
        held = client.upload_chunks(entry["uploadId"])
    assert held is not None and 0 in {o for o, _ in held.chunks}
    size = entry["size"]
    planned = [(o, min(_CHUNK, size - o)) for o in range(0, size, _CHUNK)]
    missing = [c for c in planned if c[0] not in {o for o, _ in held.chunks}]

    posted: list[tuple[int, int]] = []
    real_post = TurboClient.post_chunk

    def counted(self: TurboClient, upload_id: str, offset: int, body: Any, **kw: Any) -> None:
        posted.append((offset, _length(body)))
        real_post(self, upload_id, offset, body, **kw)

    monkeypatch.setattr(TurboClient, "post_chunk", counted)
    assert main(argv) == 0
    capsys.readouterr()
    assert posted == missing  # exactly what the bundler lacked, nothing it held
    (state,) = StateStore(tmp_path / "state").scan().states
    receipt = state.extra["receipts"][entry["itemId"]]
    verify_receipt(decode_receipt(receipt), item_id=entry["itemId"], signer=turbo.address)
    assert entry["itemId"] in _multipart_items(turbo)
