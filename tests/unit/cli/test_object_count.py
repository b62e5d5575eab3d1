"""One count of "objects" (docs/concepts.md, "Words": blocks + data files + checkpoints +
linked objects, each once): validate --deep, publish, pull, verify --deep and status say the
same number for one dataset, in their text and their JSON, run as a user runs them (a
subprocess, its own HOME)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from odfweb3.odf.chain import count_objects, iter_objects, walk_chain
from odfweb3.odf.layout import DatasetReader


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ODFWEB3_", "XDG_"))}
    env.update(HOME=str(cwd / "home"), XDG_CONFIG_HOME=str(cwd / "cfg"))
    return subprocess.run(
        [sys.executable, "-m", "odfweb3.cli.main", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _ok(args: list[str], cwd: Path) -> str:
    run = _cli(args, cwd)
    assert run.returncode == 0, (args, run.stdout, run.stderr)
    return run.stdout


def test_validate_publish_pull_verify_and_status_count_the_same_objects(tmp_path: Path) -> None:
    # linked objects (RFC-017), a checkpoint carried over by no block twice: every kind
    _ok(["example", "ds", "--blocks", "3", "--linked-objects", "2", "-q"], tmp_path)
    _ok(["example", "ds", "--append", "1", "-q"], tmp_path)
    blocks = list(walk_chain(DatasetReader.open(tmp_path / "ds")))
    plain = count_objects(iter_objects(blocks))
    assert plain.blocks == len(blocks) == 8 and plain.data_files == plain.checkpoints == 4

    validated = json.loads(_ok(["validate", "ds", "--deep", "--json"], tmp_path))
    n = validated["objectsChecked"]
    parts = validated["objects"]
    assert parts == {
        "total": n,
        "blocks": 8,
        "dataFiles": 4,
        "checkpoints": 4,
        "linked": 3 * 2 + 1,
    }
    published = json.loads(_ok(["publish", "ds", "--to", "car:out", "--json"], tmp_path))
    assert published["plan"]["totalObjects"] == published["plan"]["sendObjects"] == n
    pulled = json.loads(_ok(["pull", "car:out", "copy", "--json"], tmp_path))
    assert pulled["objects"] == parts
    assert (pulled["objectsFetched"], pulled["objectsAlreadyPresent"]) == (n, 0)
    verified = json.loads(
        _ok(
            ["verify", "copy", "--against", "car:out", "--against", "ds", "--deep", "--json"],
            tmp_path,
        )
    )
    assert [(r["objectsChecked"], r["objects"]) for r in verified["replicas"]] == [(n, parts)] * 2
    status = json.loads(_ok(["status", "ds", "--json"], tmp_path))
    assert [t["objects"] for t in status["targets"]] == [n]

    # the words: "N objects" in every command's text, the parts where they are shown
    said = f"{n} objects (8 blocks, 4 data files, 4 checkpoints, 7 linked objects)"
    assert f"checked {said}," in _ok(["validate", "ds", "--deep"], tmp_path)
    assert f"{n} of {n} objects" in _ok(["publish", "ds", "--to", "car:out2"], tmp_path)
    assert f", {said}\n  {n} fetched" in _ok(["pull", "car:out2", "copy2"], tmp_path)
    text = _ok(["verify", "ds", "--against", "car:out2", "--deep"], tmp_path)
    assert f"{n} objects re-hashed" in text
    verbose = _cli(["-v", "verify", "ds", "--against", "copy2", "--deep"], tmp_path)
    assert verbose.returncode == 0 and f"re-hashed {said}," in verbose.stderr
    assert f"objects    {n} (7 linked)" in _ok(["status", "ds"], tmp_path)
