"""ArDrive interoperability: ardrive-core-js (ArDrive's own library) lists our published drive.

A dataset is published with the Arweave gateway target to the session's arlocal; the oracle
`tests/nodes/oracles/ardrive_list.mjs` then reads the drive through ardrive-core-js's anonymous
API (`getPublicDrive`, `listPublicFolder`), i.e. with ArDrive's own GraphQL queries and ArFS
parsing. Never skipped: a missing `make nodes` install is an error.
"""

from __future__ import annotations

from pathlib import Path

from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import StateStore
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.formats.ans104 import decode_bundle
from odfweb3_arweave.formats.manifest import decode_manifest
from odfweb3_arweave.publish.gateway_target import GatewayTarget
from odfweb3_arweave.wallet import generate_wallet
from tests.support.oracles import run_oracle

RICH = 10**15  # winston
FOLDERS = ("blocks", "checkpoints", "data", "refs")


def dataset_files(ds: Path) -> dict[str, int]:
    """Dataset path (``blocks/f1620…``) -> size, for the four published folders."""
    return {
        str(p.relative_to(ds)): p.stat().st_size
        for p in ds.rglob("*")
        if p.is_file() and p.relative_to(ds).parts[0] in FOLDERS
    }


def test_ardrive_core_lists_published_drive(arlocal, tmp_path) -> None:
    wallet = generate_wallet()
    arlocal.mint(wallet.address, RICH)
    ds = create_root_dataset(tmp_path / "ds", blocks=3, data_bytes=6_000, seed=91).path
    target = GatewayTarget(ArweaveGateway(arlocal.url), wallet, StateStore(tmp_path / "state"))
    out = publish_dataset(ds, target)
    arlocal.mine(1)  # confirmed, as ArDrive usually sees drives (arlocal lists pending too)
    drive = out.state.extra["drive"]

    listings = []
    for owner in ((wallet.address,), ()):  # owner given, and looked up by ardrive itself
        listings.append(
            seen := run_oracle("ardrive_list.mjs", arlocal.url, drive["driveId"], *owner)
        )
        assert seen["drive"]["driveId"] == drive["driveId"]
        assert seen["drive"]["rootFolderId"] == drive["rootFolderId"]
        assert seen["drive"]["owner"] == wallet.address
        assert seen["drive"]["drivePrivacy"] == "public"
        assert seen["drive"]["name"] == out.state.dataset_id  # default drive name
        assert seen["drive"]["appName"] == "odfweb3"
    assert listings[0] == listings[1]

    root_path = f"/{seen['drive']['name']}"
    folders = {e["name"]: e for e in seen["entries"] if e["entityType"] == "folder"}
    assert sorted(folders) == sorted(FOLDERS)
    for name, folder in folders.items():
        assert folder["entityId"] == drive["folderIds"][name]
        assert folder["parentFolderId"] == drive["rootFolderId"]
        assert folder["path"] == f"{root_path}/{name}"

    files = {
        e["path"].removeprefix(root_path + "/"): e
        for e in seen["entries"]
        if e["entityType"] == "file"
    }
    expected = dataset_files(ds)
    assert "refs/head" in expected
    assert {p.split("/", 1)[0] for p in expected} == set(FOLDERS)  # every folder holds files
    assert sorted(files) == sorted(expected)  # one file per object, named by its ODF hash
    gw = ArweaveGateway(arlocal.url)
    # the manifest as posted: the item of our L1 bundle transaction, read back from arlocal
    bundle_tx = out.state.extra["uploads"][-1]["bundleTxId"]
    items = {i.id_b64: i for i in decode_bundle(gw.get_data(bundle_tx))}
    manifest = decode_manifest(items[out.state.locator].data)
    assert sorted(manifest.paths) == sorted(expected)
    for path, size in expected.items():
        entry = files[path]
        ref = out.state.objects[path]
        assert entry["size"] == size, path
        assert entry["entityId"] == ref["fileId"], path
        assert entry["parentFolderId"] == drive["folderIds"][path.split("/", 1)[0]], path
        # the data item ArDrive points at is the one our manifest serves for this path
        assert entry["dataTxId"] == manifest.resolve(path) == ref["dataItemId"], path
        assert entry["metaDataTxId"] == ref["metaItemId"], path
        assert gw.get_data(entry["dataTxId"]) == (ds / path).read_bytes(), path

    # An update stores a delta manifest; ArDrive still sees the whole drive (ArFS
    # entities, not manifests): every path, old files unchanged, refs/head a new revision.
    append_blocks(ds, 1, data_bytes=2_000, seed=92)
    update = publish_dataset(ds, target)
    arlocal.mine(1)
    assert update.state.extra["deltaUploads"] == 1
    after = run_oracle("ardrive_list.mjs", arlocal.url, drive["driveId"], wallet.address)
    files2 = {
        e["path"].removeprefix(root_path + "/"): e
        for e in after["entries"]
        if e["entityType"] == "file"
    }
    expected2 = dataset_files(ds)
    assert sorted(files2) == sorted(expected2)
    bundle_tx = update.state.extra["uploads"][-1]["bundleTxId"]
    items = {i.id_b64: i for i in decode_bundle(gw.get_data(bundle_tx))}
    delta = decode_manifest(items[update.state.locator].data)
    assert set(delta.paths) == set(expected2) - set(expected) | {"refs/head"}
    for path, size in expected2.items():
        entry, ref = files2[path], update.state.objects[path]
        assert entry["size"] == size and entry["entityId"] == ref["fileId"], path
        assert entry["dataTxId"] == ref["dataItemId"], path
        if path in delta.paths:
            assert delta.resolve(path) == entry["dataTxId"], path
        else:
            assert entry["dataTxId"] == manifest.resolve(path), path  # still the first upload's
    assert files2["refs/head"]["entityId"] == files["refs/head"]["entityId"]  # a new revision
    assert gw.get_data(files2["refs/head"]["dataTxId"]) == (ds / "refs/head").read_bytes()
