"""ArFS private drives: our keys and ciphertexts, checked by ardrive-core-js.

The oracle (tests/nodes/oracles/ardrive_crypto.mjs) runs ardrive-core-js 3.1.0's own
``deriveDriveKey`` / ``deriveFileKey`` / ``driveDecrypt`` / ``fileDecrypt`` with the
TEST_ONLY wallet; the password goes to it on stdin.
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3.errors import DecryptionError, FormatError
from odfweb3.odf.builder import append_blocks
from odfweb3.odf.multihash import multihash_to_str
from odfweb3_arweave.formats.ans104 import DataItem, iter_bundle
from odfweb3_arweave.formats.arfs import DriveLayout, drive_entity, tag_value
from odfweb3_arweave.formats.arfs_private import (
    EncryptingStream,
    decrypt,
    derive_drive_key,
    derive_file_key,
    encrypt,
    seal_entity,
)
from odfweb3_arweave.formats.manifest import decode_manifest
from odfweb3_arweave.formats.record import decode_record
from tests.support.encrypted import make_encrypted_world
from tests.support.oracles import run_oracle

from .conftest import FIXED_WALLET_PATH

DRIVE_ID = "6e2d0a5c-1f3b-4c2d-9e8f-0a1b2c3d4e5f"
FILE_ID = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"
PASSWORD = "TEST-ONLY drive password 7f3c"
WALLET = str(FIXED_WALLET_PATH.absolute())


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


@pytest.mark.parametrize("password", [PASSWORD, "pässwörd ✓ 7f3c"])
def test_keys_match_ardrive_core_js(fixed_wallet, password):
    # Non-ASCII: ardrive-core-js UTF-8 encodes the password twice (utf8.encode, Buffer.from).
    oracle = run_oracle(
        "ardrive_crypto.mjs", "keys", WALLET, DRIVE_ID, FILE_ID, input=password.encode()
    )
    drive_key = derive_drive_key(fixed_wallet, DRIVE_ID, password)
    assert oracle["driveKey"] == b64(drive_key.key)
    assert oracle["fileKeys"][FILE_ID] == b64(derive_file_key(drive_key, FILE_ID).key)
    assert derive_drive_key(fixed_wallet, DRIVE_ID, password + "x").key != drive_key.key
    assert b64(drive_key.key) not in repr(drive_key)


def test_round_trip_stream_and_wrong_key(fixed_wallet):
    drive_key = derive_drive_key(fixed_wallet, DRIVE_ID, PASSWORD)
    file_key = derive_file_key(drive_key, FILE_ID)
    plain = bytes(range(256)) * 5000
    iv, ct = encrypt(file_key, plain)
    assert len(iv) == 12 and len(ct) == len(plain) + 16
    assert decrypt(file_key, b64(iv), ct, "t") == plain
    streamed = EncryptingStream(file_key, iv, io.BytesIO(plain))
    chunks = []
    while chunk := streamed.read(7777):
        chunks.append(chunk)
    assert b"".join(chunks) == ct  # streaming gives the one-shot ciphertext, tag last
    with pytest.raises(DecryptionError):
        decrypt(drive_key, b64(iv), ct, "t")  # the drive key is not the file key
    with pytest.raises(DecryptionError):
        decrypt(file_key, b64(iv), ct[:-1] + bytes([ct[-1] ^ 1]), "t")
    with pytest.raises(FormatError):
        derive_file_key(drive_key, "not-a-uuid")


def test_sealed_drive_entity_tags(fixed_wallet):
    layout = DriveLayout.new(privacy="private")
    entity = drive_entity(layout, "name", 1700000000, "9.9")
    key = derive_drive_key(fixed_wallet, layout.drive_id, PASSWORD)
    sealed = seal_entity(entity, key, b"\x01" * 12)
    # ArFSPrivateDriveMetaDataPrototype order, then App-Name, App-Version, ArFS.
    assert [t.text() for t in sealed.tags] == [
        ("Content-Type", "application/octet-stream"),
        ("Entity-Type", "drive"),
        ("Unix-Time", "1700000000"),
        ("Drive-Id", layout.drive_id),
        ("Drive-Privacy", "private"),
        ("Cipher", "AES256-GCM"),
        ("Cipher-IV", b64(b"\x01" * 12)),
        ("Drive-Auth-Mode", "password"),
        ("Signature-Type", "1"),
        ("App-Name", "odfweb3"),
        ("App-Version", "9.9"),
        ("ArFS", "0.15"),
    ]
    assert decrypt(key, b64(b"\x01" * 12), sealed.body, "t") == entity.body


def _items(path: Path) -> list[DataItem]:
    with open(path, "rb") as f:
        return list(iter_bundle(f))  # verifies every signature


def _tags(item: DataItem) -> dict[str, str]:
    return dict(t.text() for t in item.tags)


def _oracle_decrypt(tmp: Path, cmd: str, item: DataItem, *ids: str, password: str = PASSWORD):
    src, dst = tmp / "ct.bin", tmp / "pt.bin"
    src.write_bytes(item.data)
    dst.unlink(missing_ok=True)
    iv = _tags(item)["Cipher-IV"]
    res = run_oracle(
        "ardrive_crypto.mjs", cmd, WALLET, *ids, iv, str(src), str(dst), input=password.encode()
    )
    return res, (dst.read_bytes() if res["ok"] else None)


def test_cli_bundle_private_drive_opens_in_ardrive_core_js(
    tmp_path, monkeypatch, capsys, fixed_wallet
):
    world = make_encrypted_world(tmp_path, monkeypatch)
    out = tmp_path / "out"
    pw_file = tmp_path / "pw.txt"
    pw_file.write_text(PASSWORD + "\n")
    env = {"ODFWEB3_STATE_DIR": str(tmp_path / "state"), "HOME": str(tmp_path)}
    argv = ["-vv", "--json", "publish", str(world.ds), "--to", f"bundle:{out}", "--arfs-private"]
    argv += ["--drive-password-file", str(pw_file), "--wallet", WALLET]
    assert main(argv, env=env) == 0, capsys.readouterr().err
    stdout, stderr = capsys.readouterr()
    summary = json.loads((out / "publish.json").read_text())
    assert summary["extra"]["drive"]["privacy"] == "private"
    record_id = summary["record"]["recordId"]
    items = _items(out / f"{record_id}.bundle")
    by_id = {i.id_b64: i for i in items}
    record = decode_record(items[-1].tags, items[-1].data)
    drive_id = record.drive.drive_id

    # nothing in plaintext: markers, objects, and the password anywhere written or printed
    written = b"".join(
        p.read_bytes()
        for d in (out, tmp_path / "state")
        for p in sorted(d.rglob("*"))
        if p.is_file()
    )
    assert len(written) > 300_000
    for blob, where in ((written, "files"), ((stdout + stderr).encode(), "CLI output")):
        world.assert_no_leak(blob, where)
        assert PASSWORD.encode() not in blob, where
    assert not any(_tags(i).get("Content-Type") == "application/ld+json" for i in items)

    # every ArFS entity is private; the drive and folders decrypt with ardrive-core-js
    entities = [i for i in items if "Entity-Type" in _tags(i)]
    assert entities and all(
        _tags(i)["Content-Type"] == "application/octet-stream" for i in entities
    )
    assert all(_tags(i)["Cipher"] == "AES256-GCM" for i in entities)
    drive_item = next(i for i in entities if _tags(i)["Entity-Type"] == "drive")
    assert _tags(drive_item)["Drive-Privacy"] == "private"
    assert _tags(drive_item)["Drive-Auth-Mode"] == "password"
    res, plain = _oracle_decrypt(tmp_path, "decrypt-drive", drive_item, drive_id)
    assert res["ok"] and json.loads(plain) == {
        "name": world.did,
        "rootFolderId": record.drive.root_folder_id,
    }
    data_folder = next(
        i for i in entities if _tags(i).get("Folder-Id") == record.drive.folder_ids["data"]
    )
    res, plain = _oracle_decrypt(tmp_path, "decrypt-drive", data_folder, drive_id)
    assert res["ok"] and json.loads(plain) == {"name": "data"}

    # a data object and its metadata, refs/head: ardrive-core-js's file key opens them
    manifest = decode_manifest(by_id[record.manifest_id].data)  # public: ODF paths
    path = next(p for p in manifest.paths if p.startswith("data/"))
    added = record.added[path]
    data_item = by_id[added.data_item_id]
    assert _tags(data_item)["Content-Type"] == "application/octet-stream"
    res, plain = _oracle_decrypt(tmp_path, "decrypt-file", data_item, drive_id, added.file_id)
    assert res == {"ok": True, "sameAsFileDecrypt": True}
    assert plain == (world.ds / path).read_bytes()
    meta_item = by_id[added.meta_item_id]
    assert tag_value(meta_item.tags, "File-Id") == added.file_id
    res, plain = _oracle_decrypt(tmp_path, "decrypt-file", meta_item, drive_id, added.file_id)
    meta = json.loads(plain)
    assert meta["name"] == path.split("/", 1)[1] and meta["dataTxId"] == added.data_item_id
    assert meta["size"] == len(plain_obj := (world.ds / path).read_bytes()) and plain_obj
    head = record.added["refs/head"]
    res, plain = _oracle_decrypt(
        tmp_path, "decrypt-file", by_id[head.data_item_id], drive_id, head.file_id
    )
    assert plain == multihash_to_str(world.built.head).encode()

    # the wrong password opens nothing
    res, _ = _oracle_decrypt(
        tmp_path, "decrypt-file", data_item, drive_id, added.file_id, password="wrong"
    )
    assert res["ok"] is False

    # every object decrypts with our own code too
    key = derive_drive_key(fixed_wallet, drive_id, PASSWORD)
    for p, a in record.added.items():
        item = by_id[a.data_item_id]
        got = decrypt(derive_file_key(key, a.file_id), _tags(item)["Cipher-IV"], item.data, p)
        if p != "refs/head":
            assert got == (world.ds / p).read_bytes()

    # incremental: same drive, new refs/head revision under the same File-Id, fresh IV
    append_blocks(world.ds, 1, data_bytes=5000, fsync=False)
    env2 = dict(env, ODFWEB3_DRIVE_PASSWORD=PASSWORD)
    argv2 = ["--json", "publish", str(world.ds), "--to", f"bundle:{out}", "--arfs-private"]
    assert main([*argv2, "--wallet", WALLET], env=env2) == 0
    summary2 = json.loads((out / "publish.json").read_text())
    items2 = _items(out / f"{summary2['record']['recordId']}.bundle")
    record2 = decode_record(items2[-1].tags, items2[-1].data)
    assert record2.drive.drive_id == drive_id
    assert not any(_tags(i).get("Entity-Type") in ("drive", "folder") for i in items2)
    head2 = {i.id_b64: i for i in items2}[record2.added["refs/head"].data_item_id]
    assert record2.added["refs/head"].file_id == head.file_id
    assert _tags(head2)["Cipher-IV"] != _tags(by_id[head.data_item_id])["Cipher-IV"]
    got = decrypt(
        derive_file_key(key, head.file_id), _tags(head2)["Cipher-IV"], head2.data, "refs/head"
    )
    assert got.decode() == summary2["head"]
    capsys.readouterr()

    # a public publish onto the private drive is refused, and so is --encrypt with it
    append_blocks(world.ds, 1, data_bytes=5000, fsync=False)
    assert (
        main(["publish", str(world.ds), "--to", f"bundle:{out}", "--wallet", WALLET], env=env) != 0
    )
    err = capsys.readouterr().err
    assert "private drive" in err
    assert main([*argv2, "--encrypt", "--wallet", WALLET], env=env2) != 0
    assert "drop --encrypt" in capsys.readouterr().err
    assert main([*argv2, "--wallet", WALLET], env=env) != 0  # no password anywhere
    assert "drive password" in capsys.readouterr().err
