"""One name per dataset and target, on `car:DIR`: a second machine (another HOME, no keystore)
is refused over a name it has no key for, exports and imports carry the key, and the key's
creation is said once. Through main(), as a user runs it."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3.odf.builder import append_blocks, create_root_dataset


def run(capsys, env, *argv):
    code = main(list(argv), env=env)
    out, err = capsys.readouterr()
    return code, out, err


def machine(root: Path, name: str) -> dict[str, str]:
    """Another computer: its own HOME (keystore and state below it)."""
    home = root / name
    home.mkdir()
    return {"HOME": str(home), "ODFWEB3_PASSPHRASE": "a long export passphrase"}


def files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


@pytest.fixture
def setup(tmp_path):
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=3000, seed=11).path
    return tmp_path, ds, machine(tmp_path, "laptop"), machine(tmp_path, "new-laptop")


def test_second_machine_is_refused_then_imports_the_key_and_keeps_the_name(capsys, setup):
    root, ds, first, second = setup
    out_dir = root / "o1"
    code, out, err = run(capsys, first, "--json", "publish", str(ds), "--to", f"car:{out_dir}")
    assert code == 0, err
    name = json.loads(out)["record"]["name"]
    assert err.count("created the IPNS key") == 1  # said once, even with --json
    assert f"`odfweb3 keys export {name} --out FILE`" in err and ".key" in err
    append_blocks(ds, 1, data_bytes=500)
    code, _out, err = run(capsys, first, "publish", str(ds), "--to", f"car:{out_dir}")
    assert code == 0 and "created the IPNS key" not in err  # never again

    # The new laptop, no keystore: refused over the name, one line, exit 77, nothing written.
    before = files(out_dir)
    code, out, err = run(capsys, second, "publish", str(ds), "--to", f"car:{out_dir}")
    assert code == 77, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert name in err and "odfweb3 keys import" in err and "nothing was sent" in err
    assert files(out_dir) == before
    assert not list(Path(second["HOME"]).rglob("*.key"))  # no key was created

    # Export on the laptop (passphrase-protected by default, mode 0600) ...
    key_file = root / "transfer" / "ds.ipns-key"
    key_file.parent.mkdir()
    code, out, err = run(capsys, first, "--json", "keys", "export", name, "--out", str(key_file))
    assert code == 0, err
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert json.loads(out)["ipnsName"] == name
    assert b"PRIVATE" not in key_file.read_bytes() and b'"ciphertext"' in key_file.read_bytes()
    # ... never replaced by a second export.
    code, _out, err = run(capsys, first, "keys", "export", name, "--out", str(key_file))
    assert code == 75 and "never replaced" in err

    # The new laptop has no key to export: one line, exit 66.
    code, _out, err = run(capsys, second, "keys", "export", name, "--out", str(root / "x"))
    assert code == 66 and err.count("\n") == 1 and name in err and not (root / "x").exists()
    # --ipns DATASET exports the dataset's key (here: the one behind the name).
    by_dataset = root / "transfer" / "by-dataset.ipns-key"
    code, out, err = run(
        capsys, first, "--json", "keys", "export", str(ds), "--ipns", "--out", str(by_dataset)
    )
    assert code == 0 and json.loads(out)["ipnsName"] == name, err

    # ... a wrong passphrase on the new laptop: one line, exit 2, nothing imported.
    wrong = second | {"ODFWEB3_PASSPHRASE": "not it"}
    code, _out, err = run(capsys, wrong, "keys", "import", str(key_file))
    assert code == 2 and err.count("\n") == 1 and "wrong passphrase" in err
    # ... the right one: imported; the publish now keeps the name (sequence + 1).
    code, out, err = run(capsys, second, "--json", "keys", "import", str(key_file))
    assert code == 0, err
    imported = json.loads(out)
    assert imported["ipnsName"] == name and imported["new"] is True
    assert stat.S_IMODE(Path(imported["keyFile"]).stat().st_mode) == 0o600
    append_blocks(ds, 1, data_bytes=500)
    code, out, err = run(capsys, second, "--json", "publish", str(ds), "--to", f"car:{out_dir}")
    assert code == 0, err
    published = json.loads(out)
    assert published["record"]["name"] == name and published["record"]["sequence"] == 2
    assert "created the IPNS key" not in err
    assert json.loads((out_dir / "publish.json").read_text())["ipnsName"] == name


def test_a_fresh_target_is_refused_when_a_remote_names_the_dataset(capsys, setup):
    root, ds, first, second = setup
    shared = root / "shared"
    assert run(capsys, first, "publish", str(ds), "--to", f"car:{shared}")[0] == 0
    name = json.loads((shared / "publish.json").read_text())["ipnsName"]
    # The new laptop knows the shared directory as a remote, and publishes somewhere new.
    assert run(capsys, second, "remote", "add", "origin", f"car:{shared}")[0] == 0
    fresh = root / "o5"
    code, _out, err = run(capsys, second, "publish", str(ds), "--to", f"car:{fresh}")
    assert code == 77 and name in err and "publish.json" in err
    assert not fresh.exists() or not any(fresh.iterdir())


def test_cleartext_export_for_kubo_warns_and_import_asks_the_dataset(capsys, setup):
    root, ds, first, second = setup
    out_dir = root / "o1"
    code, out, _err = run(capsys, first, "--json", "publish", str(ds), "--to", f"car:{out_dir}")
    name = json.loads(out)["record"]["name"]
    clear = root / "k.pem"
    code, _out, err = run(
        capsys,
        first,
        "keys",
        "export",
        name,
        "--out",
        str(clear),
        "--format",
        "pem-pkcs8-cleartext",
    )
    assert code == 0 and "in the clear" in err
    assert stat.S_IMODE(clear.stat().st_mode) == 0o600
    assert clear.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    code, _out, err = run(capsys, second, "keys", "import", str(clear))
    assert code == 64 and "--dataset" in err and err.count("\n") == 1
    code, out, err = run(
        capsys, second, "--json", "keys", "import", str(clear), "--dataset", str(ds)
    )
    assert code == 0 and json.loads(out)["ipnsName"] == name
    assert run(capsys, second, "publish", str(ds), "--to", f"car:{out_dir}")[0] == 0


def test_a_machine_with_its_own_key_imports_the_names_key_beside_it(capsys, setup):
    root, ds, first, second = setup
    shared = root / "shared"
    code, out, _ = run(capsys, first, "--json", "publish", str(ds), "--to", f"car:{shared}")
    name = json.loads(out)["record"]["name"]
    # The new laptop published elsewhere first, knowing nothing: its own key and name.
    mine = root / "mine"
    code, out, err = run(capsys, second, "--json", "publish", str(ds), "--to", f"car:{mine}")
    assert code == 0 and err.count("created the IPNS key") == 1
    own_name = json.loads(out)["record"]["name"]
    assert own_name != name
    # The shared directory holds the first name: refused although a key of the dataset is here.
    code, _out, err = run(capsys, second, "publish", str(ds), "--to", f"car:{shared}")
    assert code == 77 and name in err
    key_file = root / "k.json"
    assert run(capsys, first, "keys", "export", name, "--out", str(key_file))[0] == 0
    code, out, err = run(capsys, second, "--json", "keys", "import", str(key_file))
    assert code == 0, err
    assert run(capsys, second, "publish", str(ds), "--to", f"car:{shared}")[0] == 0
    assert json.loads((shared / "publish.json").read_text())["ipnsName"] == name
    append_blocks(ds, 1, data_bytes=300)
    assert run(capsys, second, "publish", str(ds), "--to", f"car:{mine}")[0] == 0
    assert json.loads((mine / "publish.json").read_text())["ipnsName"] == own_name


def test_a_dry_run_is_refused_the_same_way(capsys, setup):
    root, ds, first, second = setup
    out_dir = root / "o1"
    assert run(capsys, first, "publish", str(ds), "--to", f"car:{out_dir}")[0] == 0
    code, _out, err = run(capsys, second, "publish", str(ds), "--to", f"car:{out_dir}", "--dry-run")
    assert code == 77 and err.count("\n") == 1 and "keys import" in err
