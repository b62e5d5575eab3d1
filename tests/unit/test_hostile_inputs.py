"""Hostile and broken input: each is a clear OdfWeb3Error and nothing is written.

Cases already covered where the format lives (pointers, not repeated here):

- forged IPNS records (bad signature, wrong name, key not matching the name, tampered
  fields): tests/unit/adapters/ipfs/test_ipns.py (test_bad_signature_v2_is_rejected,
  test_wrong_name_is_rejected, test_embedded_public_key_must_match_the_name,
  test_tampered_*); expired: test_expiry_boundary; oversized: test_size_limit_on_create_and_parse;
- Arweave records from another owner: tests/integration/test_arweave_publish.py
  (test_spoofed_record_from_another_wallet_is_ignored);
- manifest paths with ``..`` or absolute: tests/unit/adapters/arweave/test_manifest.py
  (test_decode_rejects_unsafe_paths);
- CAR blocks that do not match their CIDs: tests/unit/adapters/ipfs/test_car.py
  (test_reader_rejects_tampered_block, truncation, oversized sections);
- ANS-104 bundles with bad offsets: tests/unit/adapters/arweave/test_ans104.py
  (test_bundle_bad_offsets, test_malformed_items);
- malformed YAML config: tests/unit/test_config.py (test_malformed_config) and
  tests/unit/test_fuzz_decoders.py (any text, non-UTF-8 bytes);
- a replica serving wrong bytes: tests/unit/test_pull.py (test_bad_replica_leaves_dest_unchanged).

Here: an IPNS record whose ``_odf`` head or dataset ID disagrees with the content, a record
rolled back to an older publish, and a loopback gateway that serves another dataset's head,
more bytes than declared, or an endless stream (the pull stops at the declared size).
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from odfweb3.crypto.keystore import Keystore
from odfweb3.errors import IntegrityError, OdfWeb3Error, ReplicaMismatch
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.chain import iter_objects, walk_chain
from odfweb3.odf.layout import DatasetReader, object_relpath
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.execute import publish_dataset
from odfweb3.read.pull import pull_dataset
from odfweb3.read.replica import read_object_verified
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.read.replica import ArweaveReplica
from odfweb3_ipfs.formats.ipns import OdfExtension, create_record, encode_record
from odfweb3_ipfs.publish.car_target import CarTarget
from odfweb3_ipfs.read.car_replica import check_car_dir

# -- records that disagree with the content (car:DIR, checked offline) ------------------------


@pytest.fixture
def published(tmp_path: Path):
    ds = create_root_dataset(tmp_path / "ds", blocks=3, data_bytes=5000, seed=3).path
    keys = Keystore(tmp_path / "keys")
    out = tmp_path / "out"
    first = publish_dataset(ds, CarTarget(out, keys))
    return ds, keys, out, first


def _resign(out: Path, keys: Keystore, state, *, head: str, did: str, seq: int) -> None:
    key = keys.load(state.dataset_id)
    now = datetime.now(UTC)
    record = create_record(
        key,
        f"/ipfs/{state.locator}",
        seq,
        validity=now + timedelta(hours=1),
        extensions={"_odf": OdfExtension(dataset_id=did, head=head)},
        now=now,
    )
    (out / state.record["file"]).write_bytes(encode_record(record))


def test_record_whose_odf_head_disagrees_with_refs_head(published) -> None:
    _ds, keys, out, first = published
    other = "f1620" + "00" * 32
    _resign(out, keys, first.state, head=other, did=first.state.dataset_id, seq=5)
    with pytest.raises(ReplicaMismatch, match="_odf says"):
        check_car_dir(out)


def test_record_whose_dataset_id_disagrees(published) -> None:
    _ds, keys, out, first = published
    head = multihash_to_str(first.plan.head)
    _resign(out, keys, first.state, head=head, did="did:odf:fed01" + "ab" * 32, seq=5)
    with pytest.raises(ReplicaMismatch, match="_odf says"):
        check_car_dir(out)


def test_rolled_back_record_is_not_taken_back(published, tmp_path: Path) -> None:
    """An attacker puts back the older record file: the next publish does not go backwards."""
    ds, keys, out, first = published
    old_record = (out / first.state.record["file"]).read_bytes()
    append_blocks(ds, 1, data_bytes=2000, seed=9)
    second = publish_dataset(ds, CarTarget(out, keys))
    assert second.state.record["sequence"] == 1
    (out / first.state.record["file"]).write_bytes(old_record)  # rolled back
    with pytest.raises(ReplicaMismatch):  # the record no longer matches the published root
        check_car_dir(out)
    append_blocks(ds, 1, data_bytes=2000, seed=10)
    third = publish_dataset(ds, CarTarget(out, keys))
    assert third.state.record["sequence"] == 2  # from publish.json, never from the old record
    assert check_car_dir(out).head == DatasetReader.open(ds).head()


# -- a hostile gateway (loopback HTTP server) ---------------------------------------------------


class Hostile:
    """Serves one dataset's files under /MANIFEST/..., with one misbehaviour."""

    def __init__(self, files: dict[str, bytes], mode: str) -> None:
        self.files = files
        self.mode = mode
        self.sent = 0


@pytest.fixture
def hostile_server() -> Iterator[tuple[Hostile, str]]:
    state = Hostile({}, "honest")

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, *args: object) -> None:
            return

        def do_GET(self) -> None:
            path = self.path.split("/", 2)[-1]
            data = state.files.get(path)
            if data is None:
                self.send_response(404)
                self.end_headers()
                return
            self.send_response(200)
            self.end_headers()
            if state.mode == "endless" and path.startswith("data/"):
                # Bounded on our side too: stop after 64 MiB whatever the client does.
                chunk = b"\0" * 65536
                try:
                    for _ in range(1024):
                        self.wfile.write(chunk)
                        state.sent += len(chunk)
                except OSError:
                    return
                return
            if state.mode == "longer" and path.startswith("data/"):
                data = data + b"extra bytes"
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), H)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _files(ds: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(ds)): p.read_bytes()
        for p in ds.rglob("*")
        if p.is_file() and p.relative_to(ds).parts[0] in ("blocks", "refs", "data", "checkpoints")
    }


@pytest.mark.parametrize("mode", ["endless", "longer"])
def test_gateway_serving_more_than_declared_stops_at_the_size(
    tmp_path: Path, hostile_server, mode: str
) -> None:
    state, url = hostile_server
    ds = create_root_dataset(tmp_path / "ds", blocks=3, data_bytes=5000, seed=4).path
    state.files, state.mode = _files(ds), mode
    gw = ArweaveGateway(url, timeout=10, retries=0)
    replica = ArweaveReplica(gw, "M" * 43, "ar://hostile", None)
    reader = DatasetReader.open(ds)
    obj = next(o for o in iter_objects(list(walk_chain(reader))) if o.kind == "data")
    with pytest.raises(OdfWeb3Error) as err:
        read_object_verified(replica, obj)
    assert isinstance(err.value, ReplicaMismatch | IntegrityError)
    assert state.sent < 8 << 20  # the client stopped reading long before the server's cap
    dest = tmp_path / "dest"
    with pytest.raises(OdfWeb3Error):
        pull_dataset(replica, dest, parallel=1)
    assert not (dest / "refs" / "head").exists()  # nothing made visible
    assert not list((dest / "data").glob("*")) if (dest / "data").exists() else True


def test_gateway_serving_another_dataset_is_refused(tmp_path: Path, hostile_server) -> None:
    state, url = hostile_server
    ours = create_root_dataset(tmp_path / "ours", blocks=2, data_bytes=2000, seed=5).path
    theirs = create_root_dataset(tmp_path / "theirs", blocks=2, data_bytes=2000, seed=6).path
    state.files = _files(theirs)
    gw = ArweaveGateway(url, timeout=10, retries=0)
    expected = multihash_to_str(DatasetReader.open(ours).head())
    replica = ArweaveReplica(gw, "M" * 43, "ar://record", expected)
    dest = tmp_path / "dest"
    shutil.copytree(ours, dest)
    before = _files(dest)
    with pytest.raises(ReplicaMismatch, match="serves something else"):
        pull_dataset(replica, dest)
    assert _files(dest) == before


def test_block_under_the_wrong_name_is_refused(tmp_path: Path, hostile_server) -> None:
    state, url = hostile_server
    ds = create_root_dataset(tmp_path / "ds", blocks=3, data_bytes=2000, seed=7).path
    files = _files(ds)
    reader = DatasetReader.open(ds)
    entries = list(walk_chain(reader))
    # The head block's name serves the Seed's bytes.
    files[object_relpath("block", entries[0].hash)] = files[
        object_relpath("block", entries[-1].hash)
    ]
    state.files = files
    replica = ArweaveReplica(ArweaveGateway(url, retries=0), "M" * 43, "ar://x", None)
    with pytest.raises(IntegrityError):
        pull_dataset(replica, tmp_path / "dest")
    assert not (tmp_path / "dest" / "refs" / "head").exists()
