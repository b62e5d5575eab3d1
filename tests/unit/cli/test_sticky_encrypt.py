"""Encryption is the dataset's, not one command's: the offline targets (car:, bundle:).

The workflow a user runs: ``publish --encrypt``, more data, ``publish`` with the flag
forgotten (encrypted all the same), ``--no-encrypt`` without a confirmation (refused), a
second machine with no local record over the same directory (refused: ``publish.json``
says it holds ciphertext), then ``--no-encrypt --yes`` (plaintext, confirmed). After each
step the output directory is scanned for the plaintext of every object; the confirmed
plaintext publish shows the scan finds it when it is there.
"""

from __future__ import annotations

import json

import pytest

from odfweb3.publish.dataset_settings import DatasetSettingsStore
from odfweb3.publish.state import StateStore
from tests.support.sticky import (
    append_marked,
    home_env,
    leaks,
    make_marked_dataset,
    run,
    snapshot,
)
from tests.unit.adapters.arweave.conftest import FIXED_WALLET_PATH

TARGETS = {
    "car": lambda out: (f"car:{out}",),
    "bundle": lambda out: (f"bundle:{out}", "--wallet", str(FIXED_WALLET_PATH)),
}


@pytest.mark.parametrize("kind", sorted(TARGETS))
def test_encrypted_stays_encrypted_offline(kind, tmp_path, monkeypatch, capsys):
    ds = tmp_path / "sec"
    built = make_marked_dataset(ds, monkeypatch, seed=61 if kind == "car" else 62)
    did = str(built.keypair.dataset_id)
    out = tmp_path / "out"
    to = TARGETS[kind](out)
    env = home_env(tmp_path / "laptop")

    code, _, err = run(capsys, env, "publish", str(ds), "--to", *to, "--encrypt")
    assert code == 0, err
    settings = DatasetSettingsStore(tmp_path / "laptop" / "state").load(did)
    assert settings.encrypted and settings.first_encrypted_target is not None
    assert "every later publish of it" in err
    assert leaks(ds, out) == []

    # the flag forgotten: encrypted all the same, nothing in plaintext
    append_marked(ds, monkeypatch, seed=63)
    code, stdout, err = run(capsys, env, "--json", "publish", str(ds), "--to", *to)
    assert code == 0, err
    assert json.loads(stdout)["plan"]["newBlocks"] == 1
    summary = json.loads((out / "publish.json").read_text())
    assert summary["extra"]["encrypted"] is True
    assert leaks(ds, out) == []
    # the settings file is not a publish state: status and history still read them all
    assert {s.dataset_id for s in StateStore(tmp_path / "laptop" / "state").all()} <= {did}

    # --no-encrypt without --yes, no terminal: refused, one line, nothing written
    before = snapshot(out)
    code, _, err = run(capsys, env, "publish", str(ds), "--to", *to, "--no-encrypt")
    assert code == 64
    assert err.count("\n") == 1 and "--yes" in err and "nothing was sent" in err
    assert snapshot(out) == before

    # a second machine (no record, no keys) over the directory holding ciphertext: refused
    other = home_env(tmp_path / "desktop")
    code, _, err = run(capsys, other, "publish", str(ds), "--to", *to)
    assert code == 64
    assert err.count("\n") == 1
    assert "holds ciphertext of " + did in err and "--encrypt" in err
    assert "keys import" in err and "--no-encrypt --yes" in err
    assert snapshot(out) == before
    assert not (tmp_path / "desktop" / "state" / "datasets").exists()

    # --no-encrypt --yes: plaintext, confirmed; the scan finds it now
    code, _, err = run(capsys, env, "publish", str(ds), "--to", *to, "--no-encrypt", "--yes")
    assert code == 0, err
    found = leaks(ds, out)
    assert any(f.endswith(": marker") for f in found)
    assert any(": data/" in f for f in found) and any(": blocks/" in f for f in found)
    # the dataset stays encrypted by default: the next plain publish is encrypted again
    append_marked(ds, monkeypatch, seed=64)
    code, _, err = run(capsys, env, "publish", str(ds), "--to", *to)
    assert code == 0, err
    assert json.loads((out / "publish.json").read_text())["extra"]["encrypted"] is True


def test_new_target_of_an_encrypted_dataset_is_encrypted(tmp_path, monkeypatch, capsys):
    """'To any target': a target never published to before gets ciphertext too."""
    ds = tmp_path / "sec"
    make_marked_dataset(ds, monkeypatch, seed=65)
    env = home_env(tmp_path / "m")
    assert (
        run(capsys, env, "publish", str(ds), "--to", f"car:{tmp_path / 'a'}", "--encrypt")[0] == 0
    )
    code, _, err = run(capsys, env, "publish", str(ds), "--to", f"car:{tmp_path / 'b'}")
    assert code == 0, err
    assert leaks(ds, tmp_path / "b") == []
    assert json.loads((tmp_path / "b" / "publish.json").read_text())["extra"]["encrypted"]


def test_plain_dataset_publishes_plain_without_a_lookup(tmp_path, monkeypatch, capsys):
    """Nothing encrypted here and no flag: a plain publish, as before (the scan sees it)."""
    ds = tmp_path / "ds"
    make_marked_dataset(ds, monkeypatch, seed=66)
    env = home_env(tmp_path / "m")
    code, _, err = run(capsys, env, "publish", str(ds), "--to", f"car:{tmp_path / 'o'}")
    assert code == 0, err
    assert leaks(ds, tmp_path / "o")
    # --no-encrypt of a dataset never encrypted needs no confirmation
    code, _, err = run(
        capsys, env, "publish", str(ds), "--to", f"car:{tmp_path / 'p'}", "--no-encrypt"
    )
    assert code == 0, err


def test_encrypt_and_no_encrypt_contradict(tmp_path, monkeypatch, capsys):
    ds = tmp_path / "ds"
    make_marked_dataset(ds, monkeypatch, seed=67)
    code, _, err = run(
        capsys,
        home_env(tmp_path / "m"),
        "publish",
        str(ds),
        "--to",
        f"car:{tmp_path / 'o'}",
        "--encrypt",
        "--no-encrypt",
    )
    assert code == 64 and "not both" in err and not (tmp_path / "o").exists()


def test_sensitive_refuses_no_encrypt_even_with_yes(tmp_path, monkeypatch, capsys):
    ds = tmp_path / "ds"
    built = make_marked_dataset(ds, monkeypatch, seed=68)
    cfg = tmp_path / "odfweb3.yaml"
    cfg.write_text(f"datasets:\n  {built.keypair.dataset_id}:\n    sensitive: true\n")
    code, _, err = run(
        capsys,
        home_env(tmp_path / "m"),
        "--config",
        str(cfg),
        "publish",
        str(ds),
        "--to",
        f"car:{tmp_path / 'o'}",
        "--no-encrypt",
        "--yes",
    )
    assert code == 64 and "sensitive: true" in err and not (tmp_path / "o").exists()


def test_sensitive_by_path_relative_to_the_config_file(tmp_path, monkeypatch, capsys):
    """A path key is the dataset directory relative to the configuration file, whatever
    the working directory."""
    ds = tmp_path / "data" / "sec"
    make_marked_dataset(ds, monkeypatch, seed=69)
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    cfg = conf_dir / "odfweb3.yaml"
    cfg.write_text("datasets:\n  ../data/sec:\n    sensitive: true\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    env = home_env(tmp_path / "m")
    code, _, err = run(
        capsys, env, "--config", str(cfg), "publish", "../data/sec", "--to", "car:out"
    )
    assert code == 64 and "sensitive: true" in err
    assert run(capsys, env, "--config", str(cfg), "config", "check")[0] == 0


def test_config_check_reports_keys_that_match_nothing(tmp_path, monkeypatch, capsys):
    ds = tmp_path / "ds"
    built = make_marked_dataset(ds, monkeypatch, seed=70)
    cfg = tmp_path / "odfweb3.yaml"
    cfg.write_text(
        "datasets:\n"
        "  ./ds:\n    sensitive: true\n"
        "  ./sce:\n    sensitive: true\n"  # a typo: protects nothing
        "  did:odf:fed0119d20360a6b3a0b44eb76eb6b1e4ab9ce44ce4a1ca4fd2bbdcb39b30fcbbe5d2d:\n"
        "    sensitive: true\n"
    )
    env = home_env(tmp_path / "m")
    code, out, err = run(capsys, env, "--config", str(cfg), "config", "check")
    assert code == 1, err
    lines = out.splitlines()
    assert lines[0] == f"configuration: {cfg}"
    assert f"datasets../sce: matches no dataset: no dataset directory at {tmp_path / 'sce'}" in out
    assert "datasets.did:odf:fed0119d" in out and "no dataset with this ID is known here" in out
    assert "datasets../ds:" not in out
    code, out, _ = run(capsys, env, "--json", "--config", str(cfg), "config", "check")
    report = json.loads(out)
    assert code == 1 and sorted(p["key"] for p in report["datasets"]["unmatched"]) == [
        "./sce",
        "did:odf:fed0119d20360a6b3a0b44eb76eb6b1e4ab9ce44ce4a1ca4fd2bbdcb39b30fcbbe5d2d",
    ]
    # the dataset's own ID is known once a path key names it
    cfg.write_text(f"datasets:\n  ./ds: {{}}\n  {built.keypair.dataset_id}: {{}}\n")
    code, out, err = run(capsys, env, "--config", str(cfg), "config", "check")
    assert code == 0, out + err
    assert "every key matches a dataset (2)" in out


def test_datasets_key_by_kamu_name(tmp_path, monkeypatch, capsys):
    """Inside a kamu workspace a ``datasets:`` key may be kamu's name for the dataset."""
    from tests.unit.cli.test_kamu_workspace import add_dataset, make_workspace

    kamu = make_workspace(tmp_path / "ws")
    add_dataset(kamu, "com.example.sec", 3)
    cfg = tmp_path / "ws" / "odfweb3.yaml"
    cfg.write_text("datasets:\n  com.example.sec:\n    sensitive: true\n")
    monkeypatch.chdir(tmp_path / "ws")
    env = home_env(tmp_path / "m")
    code, _, err = run(capsys, env, "publish", "com.example.sec", "--to", "car:out")
    assert code == 64 and "sensitive: true" in err and not (tmp_path / "ws" / "out").exists()
    assert run(capsys, env, "config", "check")[0] == 0
    cfg.write_text("datasets:\n  com.example.typo:\n    sensitive: true\n")
    code, out, _ = run(capsys, env, "config", "check")
    assert code == 1 and "datasets.com.example.typo: matches no dataset" in out


def test_arfs_private_drive_is_sticky_too(tmp_path, monkeypatch, capsys):
    """An ArFS private drive (bundle:): a later publish without --arfs-private is refused,
    here (this machine's record) and from a second machine (publish.json: private drive)."""
    ds = tmp_path / "sec"
    make_marked_dataset(ds, monkeypatch, seed=75)
    out = tmp_path / "out"
    password = tmp_path / "drive-password"
    password.write_text("correct horse battery staple\n")
    to = ("--to", f"bundle:{out}", "--wallet", str(FIXED_WALLET_PATH))
    private = ("--arfs-private", "--drive-password-file", str(password))
    env = home_env(tmp_path / "laptop")
    code, _, err = run(capsys, env, "publish", str(ds), *to, *private)
    assert code == 0, err
    assert "ArFS private drive" in err
    assert leaks(ds, out) == []
    before = snapshot(out)
    append_marked(ds, monkeypatch, seed=76)
    code, _, err = run(capsys, env, "publish", str(ds), *to)
    assert code == 64 and err.count("\n") == 1 and "--arfs-private" in err
    code, _, err = run(capsys, home_env(tmp_path / "desktop"), "publish", str(ds), *to)
    assert code == 64 and err.count("\n") == 1 and "holds ciphertext" in err
    assert snapshot(out) == before
    code, _, err = run(capsys, env, "publish", str(ds), *to, *private)
    assert code == 0, err
    assert leaks(ds, out) == []


def test_second_machine_encrypting_needs_the_content_key(tmp_path, monkeypatch, capsys):
    """--encrypt from a machine without the dataset's content key over its ciphertext is
    refused (a new key would leave the old objects unreadable); once the keys are imported
    (keys export / keys import, the content keys and the IPNS key of the directory's name)
    it publishes with the same key."""
    ds = tmp_path / "sec"
    built = make_marked_dataset(ds, monkeypatch, seed=77)
    did = str(built.keypair.dataset_id)
    out = tmp_path / "out"
    laptop, desktop = home_env(tmp_path / "laptop"), home_env(tmp_path / "desktop")
    assert run(capsys, laptop, "publish", str(ds), "--to", f"car:{out}", "--encrypt")[0] == 0
    before = snapshot(out)
    append_marked(ds, monkeypatch, seed=78)
    code, _, err = run(capsys, desktop, "publish", str(ds), "--to", f"car:{out}", "--encrypt")
    assert code == 64 and err.count("\n") == 1 and "keys import" in err
    assert snapshot(out) == before
    assert not (tmp_path / "desktop" / "keys" / "content").exists()  # no stray new key
    pw = tmp_path / "pw"
    pw.write_text("export passphrase\n")
    exported = tmp_path / "keys.env"
    code, _, err = run(
        capsys, laptop, "keys", "export", did, "--out", str(exported), "--passphrase-file", str(pw)
    )
    assert code == 0, err
    code, _, err = run(
        capsys, desktop, "keys", "import", str(exported), "--passphrase-file", str(pw)
    )
    assert code == 0, err
    # The directory's IPNS name is signed by the laptop's key: it comes over too.
    ipns_key = tmp_path / "ipns.key"
    code, _, err = run(
        capsys, laptop, "keys", "export", str(ds), "--ipns", "--out", str(ipns_key),
        "--passphrase-file", str(pw),
    )  # fmt: skip
    assert code == 0, err
    code, _, err = run(
        capsys, desktop, "keys", "import", str(ipns_key), "--passphrase-file", str(pw)
    )
    assert code == 0, err
    code, _, err = run(capsys, desktop, "publish", str(ds), "--to", f"car:{out}")
    assert code == 0, err  # its content key is here now: encrypted without the flag
    assert leaks(ds, out) == []
