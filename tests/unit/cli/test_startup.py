"""Start-up: ``--version`` and ``--help`` load the parser, not the machinery behind it.

Every command a user types pays for the modules the CLI imports before it parses its
arguments. The command modules import the core (the ODF codec with flatbuffers and numpy,
pyarrow, jsonschema, cryptography) and the backends (the adapters, httpx) inside the handlers
that use them, so printing the version or the help loads none of it. Timing is measured in
``bench/bench_startup.py``; this checks which modules a fresh interpreter holds afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# What a parse must not load: the heavy third-party libraries, the adapters, and the core
# modules that bring them (configuration: jsonschema + yaml; the registry: entry points).
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
    "odfweb3.backends",
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


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


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
    assert _heavy(modules) == []


def test_the_probe_sees_what_a_command_loads() -> None:
    """The check is not vacuous: a command that does work loads what the parse left out."""
    code, modules = _loaded("validate", "--json", "/nonexistent-odfweb3-dataset")
    assert code != 0
    assert "odfweb3.config" in modules
    assert "odfweb3.odf.codec" in modules and "flatbuffers" in modules
    # With no settings (env={}, no file) the configuration needs no schema check.
    assert "jsonschema" not in modules
