"""Pull and verify of encrypted publishes: decrypt, then check the ODF hashes.

car:DIR encrypted publish by the key holder -> pull by a recipient whose keystore holds
only their identity (the published key envelope is opened with it) -> validate --deep.
Tampering, a swapped object and the wrong identity each fail with a clear error and leave
the destination without a head.
"""

from __future__ import annotations

import json
import shutil

import pytest

from odfweb3.cli.main import main
from odfweb3.crypto.keyfiles import IdentityStore
from odfweb3.errors import DecryptionError
from odfweb3.read.pull import pull_dataset
from odfweb3.read.sealed_replica import DecryptingReplica
from odfweb3_ipfs.read.car_replica import CarDirReplica, check_car_dir
from tests.support.encrypted import make_encrypted_world


@pytest.fixture
def published(tmp_path, monkeypatch, capsys):
    world = make_encrypted_world(tmp_path, monkeypatch, data_bytes=150_000, seed=31)
    env = {
        "ODFWEB3_KEYSTORE": str(world.keys_dir),
        "ODFWEB3_STATE_DIR": str(tmp_path / "state"),
        "HOME": str(tmp_path),
    }
    out = tmp_path / "out"
    code = main(["publish", str(world.ds), "--to", f"car:{out}", "--encrypt"], env=env)
    assert code == 0, capsys.readouterr().err
    # The recipient: a keystore with alice's identity only (no content keys).
    bob_keys = tmp_path / "recipient-keys"
    bob_keys.mkdir(mode=0o700)
    src = IdentityStore(world.keys_dir).path_for("alice")
    dst = IdentityStore(bob_keys).path_for("alice")
    dst.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    shutil.copy2(src, dst)
    renv = dict(env, ODFWEB3_KEYSTORE=str(bob_keys), ODFWEB3_STATE_DIR=str(tmp_path / "rstate"))
    capsys.readouterr()
    return world, out, renv


def test_recipient_pulls_and_validates(tmp_path, capsys, published):
    world, out, renv = published
    dest = tmp_path / "pulled"
    code = main(["--json", "pull", f"car:{out}", str(dest)], env=renv)
    stdout, stderr = capsys.readouterr()
    assert code == 0, stderr
    assert json.loads(stdout)["head"] == json.loads((out / "publish.json").read_text())["head"]
    assert main(["validate", "--deep", str(dest)], env=renv) == 0
    for folder in ("blocks", "data", "checkpoints"):
        for p in (world.ds / folder).iterdir():
            assert (dest / folder / p.name).read_bytes() == p.read_bytes()
    world.assert_no_leak((stdout + stderr).encode(), "pull output")


def test_pull_without_a_key_is_refused(tmp_path, capsys, published):
    _world, out, renv = published
    empty = tmp_path / "empty-keys"
    code = main(
        ["pull", f"car:{out}", str(tmp_path / "d")], env=dict(renv, ODFWEB3_KEYSTORE=str(empty))
    )
    err = capsys.readouterr().err
    assert code != 0 and "encrypted" in err and "recipients add" in err
    assert not (tmp_path / "d" / "refs" / "head").exists()


def test_swapped_ciphertexts_fail(tmp_path, published):
    world, out, _renv = published
    # Two ciphertexts swapped under each other's paths: every CID still verifies (the DAG
    # is what a lying publisher or gateway could build), but the path-bound AEAD refuses.
    check = check_car_dir(out)
    replica = CarDirReplica(check, f"car:{out}")
    data_names = sorted(check.iter_layout("data"))
    assert len(data_names) >= 2
    # the DAG as a lying publisher could have built it (the listing: multihash -> CID bytes)
    replica._folders["data"] = {
        _mh(data_names[0]): replica._cid_of("data", _mh(data_names[1])).raw,
        _mh(data_names[1]): replica._cid_of("data", _mh(data_names[0])).raw,
        **{_mh(n): replica._cid_of("data", _mh(n)).raw for n in data_names[2:]},
    }
    ring = world.ring
    with pytest.raises(DecryptionError, match="failed authentication"):
        pull_dataset(DecryptingReplica(replica, ring), tmp_path / "swapped")
    assert not (tmp_path / "swapped" / "refs" / "head").exists()


def _mh(name):
    from odfweb3.odf.multihash import multihash_from_str

    return multihash_from_str(name)


def test_a_passphrase_recipient_pulls_with_passphrase_file(tmp_path, capsys, monkeypatch):
    # A recipient with no identity at all: the publisher added a passphrase recipient, and
    # the reader gives only that passphrase (a file, never argv).
    world = make_encrypted_world(tmp_path, monkeypatch, data_bytes=60_000, seed=32)
    env = {
        "ODFWEB3_KEYSTORE": str(world.keys_dir),
        "ODFWEB3_STATE_DIR": str(tmp_path / "state"),
        "HOME": str(tmp_path),
    }
    add = ["keys", "recipients", "add", world.did, "--passphrase"]
    assert main(add, env=env | {"ODFWEB3_PASSPHRASE": "correct horse battery"}) == 0
    out = tmp_path / "out"
    assert main(["publish", str(world.ds), "--to", f"car:{out}", "--encrypt"], env=env) == 0
    capsys.readouterr()
    reader = dict(env, ODFWEB3_KEYSTORE=str(tmp_path / "none"), ODFWEB3_STATE_DIR=str(tmp_path))

    code = main(["pull", f"car:{out}", str(tmp_path / "d0")], env=reader)
    err = capsys.readouterr().err
    assert code != 0 and "--passphrase-file" in err
    assert not (tmp_path / "d0" / "refs" / "head").exists()

    wrong = tmp_path / "wrong.txt"
    wrong.write_text("not it\n")
    code = main(
        ["pull", f"car:{out}", str(tmp_path / "d1"), "--passphrase-file", str(wrong)], env=reader
    )
    err = capsys.readouterr().err
    assert code != 0 and "wrong passphrase" in err and "not it" not in err
    assert not (tmp_path / "d1" / "refs" / "head").exists()

    right = tmp_path / "pw.txt"
    right.write_text("correct horse battery\n")
    dest = tmp_path / "d2"
    code = main(["pull", f"car:{out}", str(dest), "--passphrase-file", str(right)], env=reader)
    assert code == 0, capsys.readouterr().err
    assert (dest / "refs" / "head").read_bytes() == (world.ds / "refs" / "head").read_bytes()
    assert main(["validate", "--deep", str(dest)], env=reader) == 0
    # verify takes the passphrase the same way, here from the environment
    verify = ["verify", str(world.ds), "--against", f"car:{out}", "--deep"]
    assert main(verify, env=reader | {"ODFWEB3_PASSPHRASE": "correct horse battery"}) == 0


def test_key_envelope_is_refused_for_refs_that_name_their_own(tmp_path, capsys, published):
    _world, out, renv = published
    env_file = tmp_path / "some.envelope"
    env_file.write_text("{}")
    code = main(
        ["pull", f"car:{out}", str(tmp_path / "d"), "--key-envelope", str(env_file)], env=renv
    )
    err = capsys.readouterr().err
    assert code == 64 and "--key-envelope is for ipfs://" in err
    assert not (tmp_path / "d").exists()
