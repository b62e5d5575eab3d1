"""One vocabulary (docs/concepts.md, "Words"): each family of words checked where the CLI
prints it, run as a user runs it (a subprocess, its own HOME)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from odfweb3.errors import BackendUnavailable, FormatError, ReadRefused
from odfweb3.odf.builder import create_root_dataset
from odfweb3.read.claims import descriptor_facts, license_label
from odfweb3.read.compare import STATUS_EXIT, failed

LICENSE = "CC0-1.0 (Creative Commons Zero v1.0 Universal)"


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ODFWEB3_", "XDG_"))}
    env.update(HOME=str(cwd / "home"), XDG_CONFIG_HOME=str(cwd / "cfg"))
    return subprocess.run(
        [sys.executable, "-m", "odfweb3.cli.main", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


@pytest.fixture(scope="module")
def stale(tmp_path_factory):
    """A dataset published to car:out, then one block newer locally."""
    root = tmp_path_factory.mktemp("words")
    create_root_dataset(root / "ds", blocks=2, data_bytes=2048, seed=3141, fsync=False)
    assert _cli(["publish", "ds", "--to", "car:out", "-q"], root).returncode == 0
    assert _cli(["example", "ds", "--append", "1", "-q"], root).returncode == 0
    return root


def test_behind_means_the_replica_lacks_local_blocks_in_publish_and_verify(stale):
    plan = _cli(["publish", "ds", "--to", "car:out", "--dry-run"], stale)
    assert plan.returncode == 0, plan.stderr
    has = next(line for line in plan.stdout.splitlines() if line.strip().startswith("target has"))
    assert has.endswith("(behind by 1 block)"), has
    verify = _cli(["verify", "ds", "--against", "car:out"], stale)
    assert verify.returncode == 1, verify.stderr
    assert "car:out: behind by 1 block (head " in verify.stdout, verify.stdout
    assert "ahead" not in plan.stdout + verify.stdout


def test_an_unread_replica_says_no_head_read_not_head_dash(stale):
    r = _cli(["verify", "ds", "--against", "car:nowhere"], stale)
    assert r.returncode == 2, r.stdout + r.stderr
    line = next(line for line in r.stdout.splitlines() if "car:" in line and "nowhere" in line)
    assert ": unreachable: " in line and line.endswith("(no head read)"), line
    assert "(head -)" not in r.stdout


def test_refused_is_not_unreachable():
    refused = failed("ar://MANIFEST", ReadRefused("ar://MANIFEST is a path manifest"))
    assert refused.status == "refused" and STATUS_EXIT["refused"] == 2
    assert refused.describe().startswith("ar://MANIFEST: refused: ar://MANIFEST is a path")
    assert failed("car:x", BackendUnavailable("down")).status == "unreachable"
    assert failed("car:x", FormatError("bad")).status == "corrupt"


def test_one_license_form_from_the_chain_and_from_a_descriptor(stale):
    assert license_label("CC0-1.0", "Creative Commons Zero v1.0 Universal") == LICENSE
    assert license_label("CC0-1.0", None) == "CC0-1.0"
    inspect = _cli(["inspect", "ds"], stale)
    assert inspect.returncode == 0, inspect.stderr
    line = next(line for line in inspect.stdout.splitlines() if line.startswith("license"))
    assert line.split(None, 1)[1] == LICENSE
    # What resolve shows from an IPFS record's descriptor (rights + SPDX URL): the same form.
    did = next(w for w in inspect.stdout.split() if w.startswith("did:odf:"))
    doc = {
        "id": did,
        "rights": "Creative Commons Zero v1.0 Universal",
        "license": "https://spdx.org/licenses/CC0-1.0.html",
    }
    assert descriptor_facts(doc, did)[1] == LICENSE
