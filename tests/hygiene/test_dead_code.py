"""No dead code: every function, method, property and class is used somewhere.

vulture reads the library, the adapters, the tests, ``bench/`` and ``tools/`` together (a name
only a test uses is alive: a test checks it); what it reports inside the library and the adapters
fails the test. Variables and attributes are left out: dataclass fields, JSON keys and Protocol
members are read by name where vulture cannot see it; the tests' own findings are left out too
(pytest hooks and fixtures, ``http.server`` handler methods are called by name).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Kept on purpose: each adapter's ``_conforms`` exists so mypy checks the class is a Backend;
# a module's ``__getattr__`` and ``__dir__`` are called by the interpreter (PEP 562 lazy names).
KEPT = {"_conforms", "__getattr__", "__dir__"}
KINDS = ("unused function", "unused method", "unused property", "unused class", "unused import")


def test_nothing_is_defined_that_nothing_uses() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "vulture",
            "odfweb3",
            "adapters",
            "tests",
            "bench",
            "tools",
            "--min-confidence",
            "60",
            "--exclude",
            "*_gen.py,tests/support/flatc_gen,tests/nodes",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 3), done.stderr  # 3: vulture found something
    found = [
        line
        for line in done.stdout.splitlines()
        if line.startswith(("odfweb3/", "adapters/"))
        and any(kind in line for kind in KINDS)
        and line.split("'")[1] not in KEPT
    ]
    assert found == []
