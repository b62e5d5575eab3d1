"""Start-up: ``--version`` and ``--help`` load the parser, not the machinery behind it.

Every command a user types pays for the modules the CLI imports before it parses its
arguments. The command modules import the core (the ODF codec, pyarrow, jsonschema,
cryptography) and the backends (the adapters, httpx) inside the handlers that use them, so
printing the version or the help loads none of it: the parser reads the registry's
declarations (odfweb3.backends.Declaration, each backend's ``publish`` options) only.
Timing is measured in ``bench/bench_startup.py``; this checks which modules a fresh
interpreter holds afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# What a parse must not load: the heavy third-party libraries, the adapters (but their
# declarations), and the core modules that bring them (configuration: jsonschema + yaml).
HEAVY = (
    "jsonschema",
    "yaml",
    "pyarrow",
    "numpy",
    "flatbuffers",
    "cryptography",
    "multiformats",
    "httpx",
    "odfweb3_ipfs",
    "odfweb3_arweave",
    "odfweb3.config",
    "importlib.metadata",  # entry points: tens of milliseconds of distribution metadata
    "odfweb3.odf.codec",
    "odfweb3.publish.execute",
    "odfweb3.read.pull",
)

_PROBE = """
import json, sys
from odfweb3.cli.main import main
try:
    code = main(sys.argv[1:], env={})
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _loaded(*argv: str) -> tuple[int, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, check=True
    )
    last = json.loads(done.stdout.strip().splitlines()[-1])
    return int(last["code"] or 0), set(last["modules"])


# The registry's declarations are imported for every parse (and their packages' __init__).
LIGHT = frozenset(
    {"odfweb3_ipfs", "odfweb3_ipfs.declaration", "odfweb3_arweave", "odfweb3_arweave.declaration"}
)


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules - LIGHT if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize(
    "argv",
    [
        ("--version",),
        ("--help",),
        (),
        ("publish", "--help"),
        ("keys", "import", "--help"),
        ("pull", "--help"),
    ],
    ids=" ".join,
)
def test_parsing_loads_no_machinery(argv: tuple[str, ...]) -> None:
    code, modules = _loaded(*argv)
    assert code == 0
    assert "odfweb3.cli.publish_cmds" in modules  # the whole parser was built
    assert "odfweb3_ipfs.declaration" in modules  # with the backends' options
    assert _heavy(modules) == []


def test_the_probe_sees_what_a_command_loads() -> None:
    """The check is not vacuous: a command that does work loads what the parse left out."""
    code, modules = _loaded("validate", "--json", "/nonexistent-odfweb3-dataset")
    assert code != 0
    assert "odfweb3.config" in modules
    assert "odfweb3.odf.codec" in modules
    # With no settings (env={}, no file) the configuration needs no schema check.
    assert "jsonschema" not in modules


def test_an_offline_publish_loads_one_backend_and_no_http(tmp_path) -> None:
    """A ``car:`` dry run opens the IPFS backend only: no Arweave code and no httpx. Once the
    chain is in the verified-chain cache (the first run writes it, encoding its events), no
    flatbuffers either (a reader of blocks builds none), and never numpy. Never
    multiformats (its tables: about 0.05 s): the text forms a publish writes (base16
    multihashes, base32 CIDs, base36 IPNS names) are written by our own code."""
    from odfweb3.odf.builder import create_root_dataset

    dataset = tmp_path / "ds"
    create_root_dataset(dataset, blocks=1, data_bytes=100, seed=3, fsync=False)
    home = str(tmp_path / "home")
    env = {"HOME": home, "XDG_CONFIG_HOME": home, "XDG_STATE_HOME": home}
    probe = _PROBE.replace("env={}", f"env={env!r}")
    argv = ("publish", "--dry-run", str(dataset), "--to", f"car:{tmp_path}/out")
    seen = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", probe, *argv], capture_output=True, text=True, check=True
        )
        last = json.loads(done.stdout.strip().splitlines()[-1])
        assert last["code"] == 0, done.stderr
        seen.append(set(last["modules"]) - LIGHT)
    assert not (tmp_path / "out").exists()  # dry runs
    for modules in seen:
        assert "odfweb3_ipfs.publish.car_target" in modules  # the target was opened
        assert [m for m in modules if m.split(".")[0] in {"odfweb3_arweave", "httpx"}] == []
        assert [m for m in modules if m.split(".")[0] == "multiformats"] == []
    assert "flatbuffers" in seen[0]  # the check can see it
    # flatbuffers imports numpy whenever it is installed (the dev extras install it): the
    # codec loads flatbuffers without it (odfweb3.odf.codec._builder), 17 MB of RSS less.
    assert [m for m in seen[0] if m.split(".")[0] == "numpy"] == []
    assert [m for m in seen[1] if m.split(".")[0] in {"flatbuffers", "numpy", "pyarrow"}] == []
    # Nor what only another path of a publish needs: the encryption segments (a sealer),
    # the descriptor's checks and summary (built when there is something to send), the
    # thread pools of a deep check (concurrent.futures brings logging and queue), the
    # resource reader of a schema or context file, a traceback printer.
    unneeded = {
        "odfweb3.crypto.segments",
        "odfweb3.descriptor.validate",
        "odfweb3.descriptor.summary",
        "odfweb3.descriptor.turtle",
        "concurrent.futures",
        "logging",
        "importlib.resources",
        "traceback",
        "difflib",
        "getpass",
        "platform",
    }
    assert sorted(seen[1] & unneeded) == []


def test_a_pull_from_a_car_dir_loads_no_publish_side(tmp_path) -> None:
    """``pull car:DIR`` opens the IPFS backend's read side: none of its publish modules (the
    CAR target, CID profiles, publish states) nor the core's publish machinery. Each was
    compiled at every run where no bytecode is cached. (multiformats it still loads: it
    reads the record's name, head and ID.) Nor the decryption of an encrypted replica, nor
    verify's comparison and lineage check."""
    from odfweb3.odf.builder import create_root_dataset

    dataset = tmp_path / "ds"
    create_root_dataset(dataset, blocks=2, data_bytes=200, seed=5, fsync=False)
    home = str(tmp_path / "home")
    env = {"HOME": home, "XDG_CONFIG_HOME": home, "XDG_STATE_HOME": home}
    probe = _PROBE.replace("env={}", f"env={env!r}")
    out, dest = tmp_path / "out", tmp_path / "dest"
    for argv in (
        ("-q", "publish", str(dataset), "--to", f"car:{out}"),
        ("-q", "pull", f"car:{out}", str(dest)),
    ):
        done = subprocess.run(
            [sys.executable, "-c", probe, *argv], capture_output=True, text=True, check=True
        )
        last = json.loads(done.stdout.strip().splitlines()[-1])
        assert last["code"] == 0, done.stderr
    modules = set(last["modules"])
    assert (dest / "refs" / "head").is_file()  # pulled
    assert "odfweb3_ipfs.read.car_replica" in modules  # the probe sees the read side
    assert sorted(m for m in modules if m.startswith("odfweb3_ipfs.publish")) == []
    assert sorted(modules & {"odfweb3.publish.target", "odfweb3.publish.state"}) == []
    # a plain (not encrypted) replica: no envelope, key policy or cipher code; no replica
    # comparison or lineage check (verify's)
    read_only_elsewhere = {
        "odfweb3.crypto.envelope",
        "odfweb3.crypto.policy",
        "odfweb3.crypto.segments",
        "odfweb3.crypto.keyfiles",
        "odfweb3.read.compare",
        "odfweb3.read.lineage_check",
    }
    assert sorted(modules & read_only_elsewhere) == []
