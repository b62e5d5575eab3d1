"""The suite's own rules: no wall-time upper bounds, and `make unit` needs Python alone.

A wall-time upper bound (``assert time.monotonic() - started < 10``) fails on a loaded
2-core CI machine without any bug; what such an assertion meant to prove is proved by a count
(requests, bytes, blocks) or by the deadline the code enforces and names in its error, and
speed is measured in bench/ (README: "Speed is measured, not asserted"). A lower bound
(``>= 0.2`` s for a server told to wait 0.2 s) cannot fail because of load and is allowed.

`make unit` runs ``-m "not integration"`` over tests/unit: tests/conftest.py
marks everything under tests/integration and refuses (a collection error) a test elsewhere
using a node fixture unmarked; a test starting a node or an npm oracle by hand is caught here.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent

_CLOCKS = {"monotonic", "perf_counter", "time", "process_time", "monotonic_ns", "perf_counter_ns"}
_TIME_NAMES = {"elapsed", "took", "duration", "seconds", "wall", "wall_s"}
# Starting a node or an oracle by hand, not through the fixtures tests/conftest.py watches.
_COLLECT = (sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider")
_NODE_STARTERS = {"start_kubo", "start_arlocal", "start_cluster", "start_turbo", "run_oracle"}


def _test_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "node_modules" not in p.parts)


def _is_wall_time(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            f = sub.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in _CLOCKS:
                return True
        if isinstance(sub, ast.Attribute) and sub.attr in _TIME_NAMES:
            return True
        if isinstance(sub, ast.Name) and sub.id in _TIME_NAMES:
            return True
    return False


def _upper_bounds(tree: ast.AST) -> list[int]:
    """Lines of ``assert`` statements bounding a wall time from above."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assert):
            continue
        for cmp in ast.walk(node.test):
            if not isinstance(cmp, ast.Compare):
                continue
            sides = [cmp.left, *cmp.comparators]
            for i, op in enumerate(cmp.ops):
                small, big = sides[i], sides[i + 1]
                if isinstance(op, ast.Gt | ast.GtE):
                    small, big = big, small
                elif not isinstance(op, ast.Lt | ast.LtE):
                    continue
                if _is_wall_time(small) and not _is_wall_time(big):
                    found.append(node.lineno)
    return found


def test_the_scanner_sees_the_forms_that_flaked() -> None:
    bad = """
assert time.monotonic() - started < 10
assert run.peak_rss_mb < 256 and run.seconds < 30, run.summary()
assert 5 > elapsed
assert took <= LIMIT
"""
    good = """
assert time.monotonic() - t >= 0.2
assert not run.timed_out and s.bytes_sent < 1000
assert cfg.command_budget.seconds == 5
"""
    assert _upper_bounds(ast.parse(bad)) == [2, 3, 4, 5]
    assert _upper_bounds(ast.parse(good)) == []


def test_no_test_bounds_a_wall_time_from_above() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in _test_files()
        for line in _upper_bounds(ast.parse(path.read_text("utf-8"), str(path)))
    ]
    assert offenders == [], "wall-time upper bounds (use a count, or bench/): " + ", ".join(
        offenders
    )


def test_unit_tests_start_no_node_by_hand() -> None:
    offenders = []
    for path in _test_files():
        rel = path.relative_to(TESTS)
        if rel.parts[0] != "unit":
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and "tests.support" in node.module:
                names = {a.name for a in node.names} & _NODE_STARTERS
                offenders += [f"{rel}:{node.lineno} imports {n}" for n in sorted(names)]
    assert offenders == [], offenders


def test_make_unit_selects_no_integration_test() -> None:
    # The collection `make unit` does; conftest.py would fail it on an unmarked node user.
    done = subprocess.run(
        [*_COLLECT, "-m", "integration", "tests/unit"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 5, done.stdout[-3000:] + done.stderr[-3000:]  # 5: none selected
    assert "deselected" in done.stdout and " collected" not in done.stdout.replace(
        "no tests collected", ""
    )


def test_a_node_fixture_used_outside_integration_unmarked_fails_collection(
    tmp_path: Path,
) -> None:
    (tmp_path / "test_misplaced.py").write_text("def test_x(arlocal):\n    assert arlocal\n")
    (tmp_path / "test_marked.py").write_text(
        "import pytest\n\n@pytest.mark.integration\ndef test_y(ipfs_node):\n    assert ipfs_node\n"
    )
    done = subprocess.run(
        [*_COLLECT, "-p", "tests.conftest", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    said = done.stdout + done.stderr
    assert done.returncode == 4, said  # a usage error, before any node starts
    assert "test_misplaced.py::test_x" in said and "test_marked.py" not in said.split("ERROR")[-1]


def test_make_tests_two_workers_keep_a_module_on_one(tmp_path: Path) -> None:
    # `make test WORKERS=2` runs `-n 2 --dist loadgroup`: conftest.py schedules by its own groups (a
    # module, or all the Cluster's tests); xdist's own (a suffix on `item._nodeid`, which
    # pytest 9 ignores) spread the tests one by one, so each worker made the module
    # fixtures and started the nodes again.
    from tests.conftest import worker_group

    assert worker_group("tests/integration/cluster/test_x.py::test_y[a]") == "cluster"
    assert worker_group("tests/unit/test_x.py::T::test_y") == "tests/unit/test_x.py"
    for name in ("a", "b", "c"):
        (tmp_path / f"test_{name}.py").write_text(
            "import os, pytest\n\n"
            "@pytest.mark.parametrize('i', range(6))\n"
            "def test_x(i, tmp_path_factory):\n"
            f"    out = tmp_path_factory.getbasetemp().parent / '{name}-' f'{{i}}'\n"
            "    out.write_text(os.environ['PYTEST_XDIST_WORKER'])\n"
        )
    two = ("-n", "2", "--dist", "loadgroup", "--basetemp", str(tmp_path / "t"), str(tmp_path))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "tests.conftest",
            *two,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for name in ("a", "b", "c"):
        workers = {(tmp_path / "t" / f"{name}-{i}").read_text() for i in range(6)}
        assert len(workers) == 1, (name, workers)
