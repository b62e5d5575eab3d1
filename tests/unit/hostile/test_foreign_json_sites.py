"""Every JSON read from outside goes through the one bounded loader.

``odfweb3.foreign_json.load_foreign_json`` bounds size, requires strict UTF-8 and counts
nesting *before* parsing. Before this file, these readers called ``json.loads`` directly:
a Pinning Service API / Cluster answer, a Kubo JSON-lines stream, an Arweave ``/tx/{id}``
header, the ``bundle:DIR`` ``publish.json`` record-id hint (read whole: a FIFO hung it),
``publish --to car:``'s import hint, ``head_of_summary`` and a ``car:DIR``'s
``inputs/*/publish.json``. Each is rebuilt here with nested, non-UTF-8 and oversized input:
the outcome is one line with the loader's reason and a documented exit code (65 for a
document refused, 69 for a node's answer), or the hint is dropped; never a traceback.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from odfweb3.crypto.keyfiles import decode_keyring
from odfweb3.errors import BackendRejected, ConfigError, FormatError, OdfWeb3Error
from odfweb3.odf.model_gen import ExtraAttributes
from odfweb3.odf.yaml_form import _value_to
from odfweb3.publish.batch import BatchQueue
from odfweb3.publish.offline import INDEX_NAME, OfflineIndex
from odfweb3.publish.remotes import REMOTES_FILE, Remotes
from odfweb3.publish.state_home import UploadCheckpoint
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.publish.gateway_target import GatewayTarget
from odfweb3_arweave.read.bundle_replica import BundleDirReplica
from odfweb3_arweave.wallet import load_wallet
from odfweb3_ipfs.client.kubo import KuboClient
from odfweb3_ipfs.client.pinning import MAX_ANSWER, PinningClient
from odfweb3_ipfs.publish.car_target import head_of_summary
from odfweb3_ipfs.read.car_replica import CarDirReplica
from odfweb3_ipfs.read.replay_memory import SequenceMemory
from tests.support.hostile_server import Rule, hostile_server

DEEP = b'{"a":' * 100_000 + b"1" + b"}" * 100_000
DEEP_LIST = b"[" * 100_000 + b"]" * 100_000  # under MAX_ANSWER; RecursionError escaped before
NOT_UTF8 = b'{"cid": "\xff\xfe\xfd"}'
CID = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy"

BODIES = {"deep": (DEEP, "nested deeper"), "not-utf8": (NOT_UTF8, "not UTF-8")}


def _one_line(exc: BaseException) -> str:
    message = str(exc)
    assert "\n" not in message and len(message) < 600, message
    return message


def server_rule(body: bytes) -> Rule:
    return Rule("bytes", body=body, headers={"Content-Type": "application/json"})


def _pinning(url: str) -> PinningClient:
    return PinningClient("hostile", url, "token")


PINNING: dict[str, Callable[[str], object]] = {
    "pins-get": lambda url: _pinning(url).get("req-1"),
    "cluster-allocations": lambda url: _pinning(url).cluster_allocations(url, CID),
}


@pytest.mark.parametrize("body", sorted(BODIES))
@pytest.mark.parametrize("call", sorted(PINNING))
def test_pinning_answers_are_bounded(call: str, body: str) -> None:
    data, reason = BODIES[body]
    with hostile_server(max_life=60) as server:
        server._pick = lambda req: server_rule(data)  # type: ignore[method-assign]
        with pytest.raises(FormatError) as info:
            PINNING[call](server.url)
    assert reason in _one_line(info.value)
    assert info.value.exit_code == 65


def test_pinning_answer_over_the_budget_is_refused() -> None:
    with hostile_server(max_life=60) as server:
        server._pick = lambda req: server_rule(b"[" + b"1," * MAX_ANSWER + b"1]")  # type: ignore[method-assign]
        with pytest.raises(FormatError) as info:
            _pinning(server.url).get("req-1")
    assert "larger than" in _one_line(info.value)


@pytest.mark.parametrize("body", [DEEP_LIST, NOT_UTF8], ids=["deep", "not-utf8"])
def test_cluster_add_answer_is_one_line(tmp_path: Path, body: bytes) -> None:
    car = tmp_path / "x.car"
    car.write_bytes(b"car")
    with hostile_server(max_life=60) as server:
        server._pick = lambda req: server_rule(body)  # type: ignore[method-assign]
        with pytest.raises(FormatError) as info:
            _pinning(server.url).add_car(server.url, car, CID)
    assert "does not name the CAR's root" in _one_line(info.value)


@pytest.mark.parametrize("body", sorted(BODIES))
def test_kubo_json_lines_are_bounded(body: str) -> None:
    data, _reason = BODIES[body]
    with hostile_server(max_life=60) as server:
        server.serve("/api/v0/pin/ls", data + b"\n")
        with pytest.raises(BackendRejected) as info:
            list(KuboClient(server.url, retries=0).stream_json("pin/ls"))
    assert "not JSON" in _one_line(info.value)
    assert info.value.exit_code == 69


@pytest.mark.parametrize("body", sorted(BODIES))
def test_arweave_tx_header_that_is_not_a_document_is_unknown(body: str) -> None:
    data, _reason = BODIES[body]
    tx = "a" * 43
    with hostile_server(max_life=60) as server:
        server.serve(f"/tx/{tx}", data)
        assert ArweaveGateway(server.url, retries=0).get_tx_header(tx) is None


def _hostile_files(tmp_path: Path) -> dict[str, Path]:
    """A publish.json per kind: deeply nested, not UTF-8, a FIFO (read whole, it hung)."""
    out: dict[str, Path] = {}
    for kind, data in (("deep", DEEP), ("not-utf8", NOT_UTF8)):
        path = tmp_path / kind / "publish.json"
        path.parent.mkdir()
        path.write_bytes(data)
        out[kind] = path
    fifo = tmp_path / "fifo" / "publish.json"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    out["fifo"] = fifo
    return out


def test_bundle_dir_record_hint_is_bounded(tmp_path: Path) -> None:
    for kind, path in _hostile_files(tmp_path).items():
        replica = BundleDirReplica.__new__(BundleDirReplica)
        replica.out_dir = path.parent
        assert replica._summary_record_id() is None, kind


def test_head_of_summary_is_bounded(tmp_path: Path) -> None:
    for kind, path in _hostile_files(tmp_path).items():
        with pytest.raises(OdfWeb3Error) as info:
            head_of_summary(path)
        assert info.value.exit_code == 65, kind
        _one_line(info.value)


def test_car_dir_input_hints_are_bounded(tmp_path: Path) -> None:
    out = tmp_path / "out"
    for kind, data in (("deep", DEEP), ("not-utf8", NOT_UTF8)):
        (out / "inputs" / kind).mkdir(parents=True)
        (out / "inputs" / kind / "publish.json").write_bytes(data)
    # A bare name claim is no input: only a directory whose record is signed stands for a name.
    (out / "inputs" / "claim").mkdir()
    (out / "inputs" / "claim" / "publish.json").write_text('{"ipnsName": "k51good"}')
    from odfweb3.cli.main import main
    from odfweb3.odf.builder import create_root_dataset

    ds = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=100, seed=5).path
    env = {"HOME": str(tmp_path), "ODFWEB3_KEYSTORE": str(tmp_path / "keys")}
    env["ODFWEB3_STATE_DIR"] = str(tmp_path / "state")
    ok = out / "inputs" / "ok"
    assert main(["publish", str(ds), "--to", f"car:{ok}", "-q"], env=env) == 0
    name = json.loads((ok / "publish.json").read_text())["record"]["name"]
    replica = CarDirReplica.__new__(CarDirReplica)
    replica.out_dir = out
    assert replica.local_inputs() == {f"ipns://{name}": f"car:{ok}"}


def _state_files(tmp_path: Path, name: str) -> dict[str, Path]:
    """A state directory per kind holding ``name``: deep, not UTF-8, a FIFO."""
    out: dict[str, Path] = {}
    for kind, data in (("deep", DEEP), ("not-utf8", NOT_UTF8), ("fifo", None)):
        path = tmp_path / f"{kind}-{name}" / name
        path.parent.mkdir()
        if data is None:
            os.mkfifo(path)
        else:
            path.write_bytes(data)
        out[kind] = path
    return out


def test_local_state_files_are_one_line(tmp_path: Path) -> None:
    """Replay memory, batch queue, offline index, remotes: one line, exit 65, no hang."""
    readers: dict[str, tuple[str, Callable[[Path], object]]] = {
        "replay": ("ipns-seq.json", lambda p: SequenceMemory(p)._load()),
        "batch": ("batch.json", lambda p: BatchQueue(p).load()),
        "offline": (INDEX_NAME, lambda p: OfflineIndex(p.parent).entries()),
        "remotes": (REMOTES_FILE, lambda p: Remotes(p.parent).load()),
    }
    for reader, (name, read) in readers.items():
        for kind, path in _state_files(tmp_path, f"{reader}-{name}").items():
            if kind == "fifo" and reader in ("offline", "remotes"):
                continue  # read with open(): a FIFO there is the user's own doing
            target = path.parent / name if reader in ("offline", "remotes") else path
            if target != path:
                path.rename(target)
            with pytest.raises(FormatError) as info:
                read(target)
            assert info.value.exit_code == 65, (reader, kind)
            _one_line(info.value)


def test_content_key_file_and_wallet_are_bounded(tmp_path: Path) -> None:
    for data in (DEEP, NOT_UTF8):
        with pytest.raises(FormatError) as info:
            decode_keyring(data)
        _one_line(info.value)
        wallet = tmp_path / "wallet.json"
        wallet.write_bytes(data)
        with pytest.raises(ConfigError) as cinfo:
            load_wallet(wallet)
        assert cinfo.value.exit_code == 78
        assert "not JSON" in _one_line(cinfo.value)


def test_arweave_upload_checkpoint_is_bounded(tmp_path: Path) -> None:
    target = GatewayTarget.__new__(GatewayTarget)
    for kind, path in _hostile_files(tmp_path).items():
        checkpoint = UploadCheckpoint(path, "did:odf:x", "arweave:x")
        target._checkpoint = lambda dataset_id, c=checkpoint: c  # type: ignore[method-assign]
        assert target._read_checkpoint("did:odf:x") is None, kind


def test_extra_attributes_inside_a_block_are_one_line() -> None:
    """A block's ``ExtraAttributes.entries`` (JSON in a block from a replica) shown as YAML."""
    deep = ExtraAttributes(entries="[" * 100_000 + "]" * 100_000)
    with pytest.raises(FormatError) as info:
        _value_to("ExtraAttributes", "extra", deep)
    assert "extra attributes: not JSON" in _one_line(info.value)
    assert _value_to("ExtraAttributes", "extra", ExtraAttributes(entries='{"a/b": 1}')) == {
        "a/b": 1
    }
