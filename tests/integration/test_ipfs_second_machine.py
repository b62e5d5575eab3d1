"""One name per dataset and target on a real Kubo node, and IPNS keys that Kubo itself reads.

A second machine (another HOME: no keystore, no state) publishing to the node the first one
published to is refused over the name the node holds a record of (exit 77, nothing sent);
after `keys export` / `keys import` it publishes under the same name. `ipfs key import` (the
suite's own Kubo binary) of a `keys export --format …-cleartext` file gives the same IPNS name.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3.odf.builder import append_blocks
from tests.support.kubo import start_kubo


def run(capsys, env, *argv):
    code = main(list(argv), env=env)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def kubo(tmp_path_factory):
    with start_kubo(tmp_path_factory.mktemp("kubo-second-machine")) as node:
        yield node


def machine(root: Path, name: str, kubo) -> dict[str, str]:
    home = root / name
    home.mkdir()
    return {
        "HOME": str(home),
        "ODFWEB3_IPFS_API": kubo.api_url,
        "ODFWEB3_IPFS_GATEWAY": kubo.gateway_url,
        "ODFWEB3_PASSPHRASE": "a long export passphrase",
    }


def pins(kubo) -> set[str]:
    out = kubo.cli("pin", "ls", "--type=recursive", "--quiet").stdout
    return set(out.split())


def test_second_machine_refused_on_the_node_then_keeps_the_name(capsys, tmp_path, kubo):
    first, second = machine(tmp_path, "laptop", kubo), machine(tmp_path, "ci-runner", kubo)
    # `odfweb3 example` keeps the dataset's identity key: its IPNS name follows from its ID.
    code, _out, err = run(capsys, first, "example", str(tmp_path / "ds"), "--blocks", "3")
    assert code == 0, err
    ds = tmp_path / "ds"
    code, out, err = run(capsys, first, "--json", "publish", str(ds), "--to", "ipfs")
    assert code == 0, err
    name = json.loads(out)["record"]["name"]

    # The CI runner: no keystore, no state. The node holds the dataset's record: refused.
    append_blocks(ds, 1, data_bytes=2000)
    before = pins(kubo)
    code, _out, err = run(capsys, second, "publish", str(ds), "--to", "ipfs")
    assert code == 77, err
    assert err.count("\n") == 1 and name in err and "odfweb3 keys import" in err
    assert "the record ipfs:" in err and "nothing was sent" in err
    assert pins(kubo) == before  # nothing pinned, nothing sent
    assert not list(Path(second["HOME"]).rglob("*.key"))

    key_file = tmp_path / "ds.ipns-key"
    assert run(capsys, first, "keys", "export", name, "--out", str(key_file))[0] == 0
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    code, _out, err = run(capsys, second, "keys", "import", str(key_file))
    assert code == 0, err
    code, out, err = run(capsys, second, "--json", "publish", str(ds), "--to", "ipfs")
    assert code == 0, err
    record = json.loads(out)["record"]
    assert record["name"] == name and record["sequence"] == 1
    assert "created the IPNS key" not in err
    resolved = kubo.cli("name", "resolve", "--offline", f"/ipns/{name}").stdout.strip()
    assert resolved == f"/ipfs/{json.loads(out)['locator']}"


@pytest.mark.parametrize("fmt", ["pem-pkcs8-cleartext", "libp2p-protobuf-cleartext"])
def test_kubo_key_import_of_an_exported_key_gives_the_same_name(capsys, tmp_path, kubo, fmt):
    env = machine(tmp_path, "laptop", kubo)
    code, _out, err = run(capsys, env, "example", str(tmp_path / "ds"), "--blocks", "2")
    assert code == 0, err
    code, out, err = run(
        capsys, env, "--json", "publish", str(tmp_path / "ds"), "--to", f"car:{tmp_path / 'o'}"
    )
    assert code == 0, err
    name = json.loads(out)["record"]["name"]
    exported = tmp_path / f"key.{fmt}"
    code, _out, err = run(
        capsys, env, "keys", "export", name, "--out", str(exported), "--format", fmt
    )
    assert code == 0 and "in the clear" in err
    assert stat.S_IMODE(exported.stat().st_mode) == 0o600
    label = f"odfweb3-test-{fmt}"
    done = kubo.cli("key", "import", label, "-f", fmt, str(exported))
    assert done.stdout.strip() == name  # Kubo prints the key's name, base36 (k51…)
    listed = kubo.cli("key", "list", "-l").stdout
    assert f"{name} {label}" in listed or any(
        line.split()[:2] == [name, label] for line in listed.splitlines()
    )
    # And back: Kubo's own export of that key imports here as the same name.
    back = tmp_path / "from-kubo.key"
    kubo.cli("key", "export", label, "-o", str(back), "-f", fmt)
    other = machine(tmp_path, "other", kubo)
    code, out, err = run(
        capsys, other, "--json", "keys", "import", str(back), "--dataset", str(tmp_path / "ds")
    )
    assert code == 0, err
    assert json.loads(out)["ipnsName"] == name
