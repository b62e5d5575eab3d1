"""ArFS private drive through a real Arweave gateway (the session's arlocal).

Every request body sent is scanned for the dataset's markers and the drive password; the
items are read back through arlocal and decrypted by ardrive-core-js itself
(tests/nodes/oracles/ardrive_crypto.mjs) and by our code.
"""

from __future__ import annotations

import json
from base64 import b64decode
from dataclasses import replace
from pathlib import Path

from odfweb3.cli.main import main
from odfweb3.errors import DecryptionError, UsageError
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import StateStore
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.formats.ans104 import BUNDLE_TAGS, create_data_item, encode_bundle
from odfweb3_arweave.formats.arfs import tag_value
from odfweb3_arweave.formats.arfs_private import (
    decrypt,
    derive_drive_key,
    derive_file_key,
    private_data_tags,
)
from odfweb3_arweave.formats.manifest import MANIFEST_CONTENT_TYPE, PathManifest, encode_manifest
from odfweb3_arweave.formats.record import AddedFile, encode_record, record_tags
from odfweb3_arweave.formats.tags import Tag
from odfweb3_arweave.formats.tx import new_transaction, sign_transaction
from odfweb3_arweave.publish.gateway_target import GatewayTarget
from odfweb3_arweave.read.lookup import item_tags, lookup_items
from odfweb3_arweave.read.replica import open_ar_replica
from odfweb3_arweave.wallet import generate_wallet, load_wallet, save_wallet
from tests.integration.test_arweave_encrypted import RICH, RecordingTransport
from tests.support.encrypted import make_encrypted_world
from tests.support.oracles import run_oracle
from tests.unit.adapters.arweave.conftest import FIXED_WALLET_PATH

PASSWORD = "TEST-ONLY arlocal drive password 91ab"


def test_private_drive_through_arlocal(arlocal, tmp_path, monkeypatch) -> None:
    wallet = load_wallet(FIXED_WALLET_PATH)
    world = make_encrypted_world(tmp_path, monkeypatch, data_bytes=60_000, seed=29)
    arlocal.mint(wallet.address, RICH)
    transport = RecordingTransport()
    gw = ArweaveGateway(arlocal.url, transport=transport)
    states = StateStore(tmp_path / "state")
    target = GatewayTarget(gw, wallet, states, drive_password=PASSWORD)
    assert PASSWORD not in repr(target)
    outcome = publish_dataset(world.ds, target)
    arlocal.mine(1)
    sent = b"".join(transport.sent)
    assert len(sent) > 60_000
    state_bytes = b"".join(p.read_bytes() for p in states.root.rglob("*") if p.is_file())
    for blob, where in ((sent, "requests to the gateway"), (state_bytes, "state")):
        world.assert_no_leak(blob, where)
        assert PASSWORD.encode() not in blob, where

    drive = outcome.state.extra["drive"]
    assert drive["privacy"] == "private"
    reader = ArweaveGateway(arlocal.url)
    manifest_id = outcome.state.locator
    drive_key = derive_drive_key(wallet, drive["driveId"], PASSWORD)
    path = next(o.path for o in outcome.plan.objects if o.path.startswith("data/"))
    refs = outcome.state.objects
    nodes = lookup_items(reader, [r["dataItemId"] for r in refs.values()])
    ivs = {p: tag_value(item_tags(nodes[r["dataItemId"]]), "Cipher-IV") for p, r in refs.items()}
    assert len(refs) == len(outcome.plan.objects) + 1 and all(ivs.values())
    for p, ref in refs.items():
        data = reader.get_data(f"{manifest_id}/{p}")  # through arlocal's path manifest
        plain = decrypt(derive_file_key(drive_key, ref["fileId"]), str(ivs[p]), data, p)
        want = (
            multihash_to_str(world.built.head).encode()
            if p == "refs/head"
            else (world.ds / p).read_bytes()
        )
        assert plain == want, p

    # ardrive-core-js opens one object fetched from the gateway
    ref = outcome.state.objects[path]
    ct = tmp_path / "ct.bin"
    ct.write_bytes(reader.get_data(f"{manifest_id}/{path}"))
    iv = str(ivs[path])
    res = run_oracle(
        "ardrive_crypto.mjs",
        "decrypt-file",
        str(FIXED_WALLET_PATH.absolute()),
        drive["driveId"],
        ref["fileId"],
        iv,
        str(ct),
        str(tmp_path / "pt.bin"),
        input=PASSWORD.encode(),
    )
    assert res["ok"] is True
    assert (tmp_path / "pt.bin").read_bytes() == (world.ds / path).read_bytes()

    # the state rebuilt from the network keeps the drive private (no resend)
    again = GatewayTarget(
        ArweaveGateway(arlocal.url), wallet, StateStore(tmp_path / "s2"), drive_password=PASSWORD
    )
    view = again.inspect(world.did, world.built.head)
    assert view.head == world.built.head and view.state is not None
    assert view.state.extra.drive is not None and view.state.extra.drive.privacy == "private"
    assert view.has


# --- reading a private drive back: pull / verify through the CLI ---------------------


def _cli(args: list[str], env: dict[str, str], capsys) -> tuple[int, str, str]:
    code = main(args, env=env)
    out, err = capsys.readouterr()
    return code, out, err


def _private_world(arlocal, tmp_path, seed: int) -> tuple[Path, Path, dict[str, str]]:
    """A dataset, a drive password file and a CLI environment pointing at arlocal."""
    ds = create_root_dataset(tmp_path / "ds", blocks=3, data_bytes=40_000, seed=seed).path
    pw = tmp_path / "drive-password.txt"
    pw.write_text(PASSWORD + "\n", "utf-8")
    arlocal.mint(load_wallet(FIXED_WALLET_PATH).address, RICH)
    env = {
        "ODFWEB3_ARWEAVE_GATEWAY": arlocal.url,
        "ODFWEB3_STATE_DIR": str(tmp_path / "state"),
        "ODFWEB3_KEYSTORE": str(tmp_path / "keys"),
        "HOME": str(tmp_path),
    }
    return ds, pw, env


def _publish_private(ds: Path, pw: Path, env: dict[str, str], arlocal, capsys) -> str:
    code, out, err = _cli(
        [
            "--json",
            "publish",
            str(ds),
            "--to",
            "arweave",
            "--arfs-private",
            "--drive-password-file",
            str(pw),
            "--wallet",
            str(FIXED_WALLET_PATH),
        ],
        env,
        capsys,
    )
    assert code == 0, err
    arlocal.mine(1)
    return f"ar://{json.loads(out)['record']['recordId']}"


def _pw(path: Path) -> list[str]:
    return ["--drive-password-file", str(path)]


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for sub in ("blocks", "data", "checkpoints", "refs")
        for p in sorted((root / sub).rglob("*"))
        if p.is_file()
    }


def test_pull_and_verify_private_drive_through_cli(arlocal, tmp_path, capsys) -> None:
    ds, pw, env = _private_world(arlocal, tmp_path, seed=71)
    _publish_private(ds, pw, env, arlocal, capsys)
    append_blocks(ds, 2, data_bytes=20_000, seed=72)
    ref = _publish_private(ds, pw, env, arlocal, capsys)  # two uploads: refs/head revised
    creds = ["--wallet", str(FIXED_WALLET_PATH), "--drive-password-file", str(pw)]
    head = (ds / "refs" / "head").read_text().strip()

    dest = tmp_path / "pulled"
    code, out, err = _cli(["--json", "pull", ref, str(dest), *creds], env, capsys)
    assert code == 0, err
    assert json.loads(out)["head"] == head
    assert _files(dest) == _files(ds)  # refs/head and every block, data file, checkpoint

    code, out, err = _cli(
        ["--json", "verify", str(ds), "--against", ref, "--deep", *creds], env, capsys
    )
    assert code == 0, out + err
    report = json.loads(out)
    assert [r["status"] for r in report["replicas"]] == ["identical"]
    assert report["replicas"][0]["objectsChecked"] > 0

    # the password from the environment works as well as the file
    code, out, err = _cli(
        ["--json", "verify", "--lineage", ref, "--wallet", str(FIXED_WALLET_PATH)],
        dict(env, ODFWEB3_DRIVE_PASSWORD=PASSWORD),
        capsys,
    )
    assert code == 0, out + err
    lineage = json.loads(out)
    assert lineage["complete"] is True and lineage["head"] == head

    # no password: one clear error naming what to pass
    code, _out, err = _cli(["pull", ref, str(tmp_path / "nopw")], env, capsys)
    assert code == UsageError.exit_code
    assert "ArFS private drive" in err and "--drive-password-file" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "nopw").exists()
    code, _out, err = _cli(["resolve", ref], env, capsys)  # never reads ciphertext as ODF
    assert code == UsageError.exit_code and "ArFS private drive" in err
    # with the wallet and password, resolve checks the decrypted chain like any replica
    code, out, err = _cli(
        ["--json", "resolve", ref, "--wallet", str(FIXED_WALLET_PATH), *_pw(pw)], env, capsys
    )
    assert code == 0, out + err
    (resolved,) = json.loads(out)["results"]
    assert resolved["head"] == head and resolved["contentChecked"] is True

    # wrong password, wrong wallet: DecryptionError, DEST untouched, no key material
    bad_pw = tmp_path / "bad.txt"
    bad_pw.write_text("not the drive password\n", "utf-8")
    stranger = tmp_path / "stranger.json"
    save_wallet(generate_wallet(), stranger)
    for wallet_path, pw_path in ((FIXED_WALLET_PATH, bad_pw), (stranger, pw)):
        dest_bad = tmp_path / f"bad-{wallet_path.stem}"
        code, _out, err = _cli(
            ["pull", ref, str(dest_bad), "--wallet", str(wallet_path), *_pw(pw_path)],
            env,
            capsys,
        )
        assert code == DecryptionError.exit_code, err
        assert "wrong drive password or wallet" in err
        assert PASSWORD not in err and "not the drive password" not in err
        assert not dest_bad.exists()
    code, out, _err = _cli(
        [
            "--json",
            "verify",
            str(ds),
            "--against",
            ref,
            "--wallet",
            str(FIXED_WALLET_PATH),
            *_pw(bad_pw),
        ],
        env,
        capsys,
    )
    assert code == 2
    assert "wrong drive password or wallet" in json.loads(out)["replicas"][0]["error"]


def test_tampered_private_ciphertext_is_refused(arlocal, tmp_path, capsys) -> None:
    """The owner's wallet posts a second upload whose manifest and record point one data
    file at a copy of its ciphertext with one bit flipped: pulling that record fails."""
    ds, pw, env = _private_world(arlocal, tmp_path, seed=73)
    ref = _publish_private(ds, pw, env, arlocal, capsys)
    wallet = load_wallet(FIXED_WALLET_PATH)
    gw = ArweaveGateway(arlocal.url)
    genuine = open_ar_replica(gw, ref)
    record = genuine.record
    assert record is not None and record.drive.privacy == "private"
    path = next(p for p in sorted(record.added) if p.startswith("data/"))
    victim = record.added[path]
    node = lookup_items(gw, [victim.data_item_id])[victim.data_item_id]
    iv = tag_value(item_tags(node), "Cipher-IV")
    assert iv is not None
    ct = bytearray(gw.get_data(victim.data_item_id))
    ct[len(ct) // 2] ^= 0x01
    forged = create_data_item(wallet, bytes(ct), list(private_data_tags(b64decode(iv), "0")))
    added = dict(record.added)
    added[path] = AddedFile(forged.id_b64, victim.meta_item_id, victim.file_id)
    manifest = PathManifest({p: a.data_item_id for p, a in added.items()}, index="refs/head")
    manifest_item = create_data_item(
        wallet,
        encode_manifest(manifest),
        [Tag.of("Content-Type", MANIFEST_CONTENT_TYPE)],
    )
    bad = replace(record, manifest_id=manifest_item.id_b64, added=added)
    record_item = create_data_item(wallet, encode_record(bad), list(record_tags(bad)))
    bundle = encode_bundle([forged, manifest_item, record_item])
    tx = sign_transaction(
        new_transaction(
            owner=wallet.owner,
            reward=gw.price(len(bundle)),
            last_tx=gw.tx_anchor(),
            tags=BUNDLE_TAGS,
            data=bundle,
        ),
        wallet,
    )
    gw.post_tx(tx, inline=True)
    arlocal.mine(1)

    creds = ["--wallet", str(FIXED_WALLET_PATH), "--drive-password-file", str(pw)]
    dest = tmp_path / "pulled"
    code, _out, err = _cli(["pull", f"ar://{record_item.id_b64}", str(dest), *creds], env, capsys)
    assert code == DecryptionError.exit_code, err
    assert "altered" in err and path in err
    assert "wrong drive password" not in err  # the drive key was checked first
    assert not (dest / "refs" / "head").exists() and not (dest / path).exists()
    # the genuine record still pulls
    code, _out, err = _cli(["pull", ref, str(tmp_path / "ok"), *creds], env, capsys)
    assert code == 0, err
    assert _files(tmp_path / "ok") == _files(ds)
