"""Encrypted car:DIR publishes: nothing in plaintext leaves, key holders read it all back.

The leak test publishes a dataset whose data files and SetInfo carry marker strings
and scans every byte written (CARs, IPNS record, publish.json, publish state, CLI
output at -v) for them and for the content key.
"""

from __future__ import annotations

import base64
import json
import random
import stat

import pytest

from odfweb3.cli.main import main
from odfweb3.crypto.envelope import decode_envelope, open_envelope
from odfweb3.crypto.keyfiles import ContentKeyStore, IdentityStore
from odfweb3.crypto.segments import decrypt_bytes, decrypt_object
from odfweb3.errors import DecryptionError
from odfweb3.odf import builder
from odfweb3.odf.multihash import multihash_from_str, multihash_to_str
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.formats.ipns import decode_record
from odfweb3_ipfs.formats.unixfs_reader import list_directory, read_file, resolve_path
from odfweb3_ipfs.publish.car_target import objects_of
from odfweb3_ipfs.read.car_replica import CarIndex

DATA_MARKER = b"SECRET-ROW-7f3a9c"
INFO_MARKER = "SECRET-DESCRIPTION-91bc4e"


class _MarkerRandom(random.Random):
    """Example data made of marker strings (so a plaintext leak is easy to spot)."""

    calls = 0

    def randbytes(self, n: int) -> bytes:
        _MarkerRandom.calls += 1
        unit = DATA_MARKER + b"-%d;" % _MarkerRandom.calls  # every file different
        return (unit * (n // len(unit) + 1))[:n]


@pytest.fixture
def world(tmp_path, monkeypatch):
    monkeypatch.setattr(builder.random, "Random", _MarkerRandom)
    ds = tmp_path / "ds"
    built = builder.create_root_dataset(
        ds, blocks=3, data_bytes=300_000, seed=5, description=INFO_MARKER, fsync=False
    )
    monkeypatch.undo()
    cfg = tmp_path / "odfweb3.yaml"
    cfg.write_text(f"datasets:\n  {built.keypair.dataset_id}:\n    sensitive: true\n")
    env = {
        "ODFWEB3_KEYSTORE": str(tmp_path / "keys"),
        "ODFWEB3_STATE_DIR": str(tmp_path / "state"),
        "HOME": str(tmp_path),
    }
    return ds, built, cfg, env, tmp_path


def _run(capsys, env, *argv):
    code = main(list(argv), env=env)
    out, err = capsys.readouterr()
    return code, out, err


def _all_bytes(*dirs):
    for d in dirs:
        if d.exists():
            for p in sorted(d.rglob("*")):
                if p.is_file():
                    yield p, p.read_bytes()


def test_sensitive_dataset_refuses_plain_publish(capsys, world):
    ds, _built, cfg, env, tmp = world
    code, _, err = _run(
        capsys, env, "--config", str(cfg), "publish", str(ds), "--to", f"car:{tmp / 'out'}"
    )
    assert code == 64 and "sensitive: true" in err and "--encrypt" in err
    assert not (tmp / "out").exists()


def test_encrypted_publish_leaks_nothing_and_reads_back(capsys, world):
    ds, built, cfg, env, tmp = world
    out_dir = tmp / "out"
    assert _run(capsys, env, "keys", "identity", "new", "alice")[0] == 0
    did = str(built.keypair.dataset_id)
    assert _run(capsys, env, "keys", "recipients", "add", did, "alice")[0] == 0
    code, out, err = _run(
        capsys,
        env,
        "--config",
        str(cfg),
        "-vv",
        "--json",
        "publish",
        str(ds),
        "--to",
        f"car:{out_dir}",
        "--encrypt",
    )
    assert code == 0, err
    result = json.loads(out)
    summary = json.loads((out_dir / "publish.json").read_text())
    assert summary["keyEnvelope"] == result["keyEnvelope"]
    assert "descriptor" not in result and "encrypted" in result["descriptorSkipped"]

    # --- leak scan: markers, plaintext, key bytes --------------------------------------
    stored = ContentKeyStore(tmp / "keys").load(did)
    secret = stored.ring.current_key().secret
    forbidden = [
        DATA_MARKER,
        INFO_MARKER.encode(),
        secret,
        secret.hex().encode(),
        base64.urlsafe_b64encode(secret).rstrip(b"="),
        base64.b64encode(secret).rstrip(b"="),
    ]
    local_objects = [
        p
        for p in ds.rglob("*")
        if p.is_file() and p.parent.name in ("blocks", "data", "checkpoints")
    ]
    for p in local_objects:  # a slice of every plaintext object must appear nowhere
        data = p.read_bytes()
        forbidden.append(data[len(data) // 2 : len(data) // 2 + 24])
    scanned = 0
    for path, data in _all_bytes(out_dir, tmp / "state"):
        scanned += len(data)
        for needle in forbidden:
            assert needle not in data, f"{needle[:20]!r} leaked into {path.name}"
    for needle in forbidden:
        assert needle.decode("latin-1") not in out + err
    assert scanned > 300_000

    # --- key files stay private ----------------------------------------------------------
    for p in (tmp / "keys").rglob("*"):
        assert stat.S_IMODE(p.stat().st_mode) == (0o700 if p.is_dir() else 0o600)

    # --- a recipient reads everything back -----------------------------------------------
    index = CarIndex(sorted(out_dir.glob("*.car")))
    record = decode_record(next(out_dir.glob("*.ipns-record")).read_bytes())
    assert record.odf is not None and record.odf.extra["keyEnvelope"] == summary["keyEnvelope"]
    env_cid = Cid.decode(summary["keyEnvelope"])
    envelope = decode_envelope(b"".join(read_file(env_cid, index.get)))
    ring = open_envelope(envelope, IdentityStore(tmp / "keys").load("alice"))
    root = Cid.decode(summary["root"])
    head_ct = b"".join(read_file(resolve_path(root, "refs/head", index.get), index.get))
    assert decrypt_bytes(head_ct, ring, "refs/head").decode() == multihash_to_str(built.head)
    checked = 0
    for folder in ("blocks", "data", "checkpoints"):
        for name, cid in list_directory(resolve_path(root, folder, index.get), index.get).items():
            ct = b"".join(read_file(cid, index.get))
            path = f"{folder}/{name}"
            plain = b"".join(decrypt_object([ct], ring, path, multihash_from_str(name)))
            assert plain == (ds / folder / name).read_bytes()
            checked += 1
    assert checked == len(local_objects)

    # a ciphertext served under another path does not decrypt
    data_names = list(list_directory(resolve_path(root, "data", index.get), index.get))
    ct = b"".join(read_file(resolve_path(root, f"data/{data_names[0]}", index.get), index.get))
    with pytest.raises(DecryptionError):
        decrypt_bytes(ct, ring, f"data/{data_names[1]}")


def test_incremental_encrypted_publish_after_rotation(capsys, world):
    ds, _built, cfg, env, tmp = world
    out_dir = tmp / "out"
    args = [
        "--config",
        str(cfg),
        "--json",
        "publish",
        str(ds),
        "--to",
        f"car:{out_dir}",
        "--encrypt",
    ]
    code, _, err = _run(capsys, env, *args)
    assert code == 0 and "no recipients" in err
    first = json.loads((out_dir / "publish.json").read_text())
    first_objects = objects_of(out_dir)
    assert _run(capsys, env, "keys", "rotate", str(ds))[0] == 0
    builder.append_blocks(ds, 1, data_bytes=5000, fsync=False)
    code, _, err = _run(capsys, env, *args)
    assert code == 0, err
    second = json.loads((out_dir / "publish.json").read_text())
    assert second["sequence"] == first["sequence"] + 1
    assert second["extra"]["keyEpoch"] == 2 and first["extra"]["keyEpoch"] == 1
    # old objects were not re-encrypted: same CIDs as in the first publish
    second_objects = objects_of(out_dir)
    assert len(second_objects) > len(first_objects) > 0
    for path, link in first_objects.items():
        assert second_objects[path] == link
    did = first["datasetId"]
    ring = ContentKeyStore(tmp / "keys").load(did).ring
    index = CarIndex(sorted(out_dir.glob("*.car")))
    root = Cid.decode(second["root"])
    head_ct = b"".join(read_file(resolve_path(root, "refs/head", index.get), index.get))
    assert decrypt_bytes(head_ct, ring, "refs/head").decode() == second["head"]
