"""Run the npm oracle scripts in tests/nodes/oracles (independent implementations).

The oracles (npm `ipns`, `@libp2p/crypto`, `@libp2p/peer-id`, `arweave`, `arbundles`,
`ardrive-core-js`) are installed by `make nodes`. A missing install is an error telling to run it,
never a skip: the cross-checks are part of `make test`.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.support.nodes import NODES_DIR, NodesNotInstalled

__all__ = ["ORACLES_DIR", "OracleError", "require_oracles", "run_oracle"]

ORACLES_DIR = NODES_DIR / "oracles"
ORACLE_TIMEOUT = 300.0


class OracleError(RuntimeError):
    """An oracle script failed or printed something that is not one JSON value."""


def require_oracles() -> Path:
    """Return the oracles directory; raise NodesNotInstalled if its node_modules is missing."""
    if not (ORACLES_DIR / "node_modules").is_dir():
        raise NodesNotInstalled(
            f"{ORACLES_DIR}/node_modules is missing: run `make nodes` "
            "(bash tests/nodes/install.sh) to install the npm oracles"
        )
    return ORACLES_DIR


def run_oracle(script_name: str, *args: str, input: bytes | None = None) -> dict[str, Any]:
    """Run `node tests/nodes/oracles/<script_name> ARGS...` there; parse its JSON stdout.

    Args:
        script_name: file name of the script inside tests/nodes/oracles.
        *args: command-line arguments.
        input: bytes for the script's stdin (None: empty stdin).

    Returns:
        The JSON object the script printed on stdout.

    Raises:
        NodesNotInstalled: `make nodes` was not run.
        OracleError: the script exited non-zero or printed no JSON object.
    """
    cwd = require_oracles()
    script = cwd / script_name
    if not script.is_file():
        raise OracleError(f"oracle script {script} does not exist")
    proc = subprocess.run(
        ["node", str(script), *args],
        cwd=cwd,
        input=input if input is not None else b"",
        capture_output=True,
        timeout=ORACLE_TIMEOUT,
        check=False,
    )
    stderr = proc.stderr.decode(errors="replace").strip()
    if proc.returncode != 0:
        raise OracleError(
            f"oracle {script_name} {' '.join(args)} exited {proc.returncode}: {stderr}"
        )
    try:
        result = json.loads(proc.stdout)
    except ValueError as exc:
        out = proc.stdout[:300].decode(errors="replace")
        raise OracleError(f"oracle {script_name}: stdout is not JSON ({exc}): {out!r}") from exc
    if not isinstance(result, dict):
        raise OracleError(
            f"oracle {script_name}: expected a JSON object, got {type(result).__name__}"
        )
    return result
