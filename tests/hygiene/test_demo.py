"""``make demo`` (tools/demo.sh) runs clean and ends saying what it verified.

Also the packaging metadata that used to print setuptools deprecation banners on every
install: ``project.license`` is an SPDX string, which needs setuptools 77 or later.
"""

from __future__ import annotations

import os
import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_license_is_an_spdx_string_with_a_setuptools_that_reads_it():
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert conf["project"]["license"] == "Apache-2.0"
    requires = conf["build-system"]["requires"]
    setuptools = next(r for r in requires if r.startswith("setuptools"))
    assert setuptools.startswith("setuptools>=") and int(setuptools[12:].split(".")[0]) >= 77


def test_demo_runs_without_warnings_and_says_what_it_verified(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ODFWEB3_")}
    env |= {"ODFWEB3_DEMO_OUT": str(tmp_path / "demo-out"), "HOME": str(tmp_path)}
    r = subprocess.run(
        ["bash", str(ROOT / "tools" / "demo.sh")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    for banner in ("Deprecat", "Warning", "warning:", "!!", "Traceback"):
        assert banner not in r.stdout + r.stderr, banner
    summary = r.stdout.split("== done: what this demo verified\n", 1)[1]
    assert f"- {tmp_path / 'demo-out'}/dataset is valid: 11 blocks" in summary
    assert "IPNS record to sequence 1;" in summary
    assert f"car:{tmp_path / 'demo-out'}/ipfs is identical to the local head f1620" in summary
    assert "objects re-hashed" in summary and "ANS-104 bundle" in summary
