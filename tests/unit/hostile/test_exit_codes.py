"""One exit code per meaning, and the docs say the same as the code.

Three places list exit codes: the ``odfweb3.errors`` docstring (class tree), the CLI's
table (``odfweb3/cli/main.py``, rendered into docs/cli.md) and docs/security.md
("Outcomes"). Each is checked against the exception classes here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from odfweb3 import errors
from odfweb3.cli.main import EXIT_INTERNAL, EXIT_LOCAL_IO, main

ROOT = Path(__file__).resolve().parents[3]
CLASSES = {
    name: getattr(errors, name)
    for name in errors.__all__
    if isinstance(getattr(errors, name), type)
}


def _cli_codes() -> dict[int, str]:
    import tools.gen_cli_docs as gen

    return dict(gen.exit_codes())


def test_errors_docstring_tree_matches_the_classes() -> None:
    doc = errors.__doc__ or ""
    found: dict[str, int] = {}
    for line in doc.splitlines():
        m = re.match(r"^\s*[│├└─\s]*(\w+)\b.*\bexit (\d+)\s*$", line)
        if m:
            found[m.group(1)] = int(m.group(2))
    assert set(found) == set(CLASSES), set(found) ^ set(CLASSES)
    for name, code in found.items():
        assert CLASSES[name].exit_code == code, name


def test_every_class_code_is_in_the_cli_table() -> None:
    table = _cli_codes()
    for name, cls in CLASSES.items():
        assert cls.exit_code in table, name
    assert {EXIT_INTERNAL, EXIT_LOCAL_IO} <= set(table)
    assert errors.LocalIOError.exit_code == EXIT_LOCAL_IO


def test_security_page_outcomes_table_matches_the_classes() -> None:
    text = (ROOT / "docs" / "security.md").read_text("utf-8")
    section = text.split("### Outcomes: statuses and exit codes", 1)[1].split("\n## ", 1)[0]
    section = section.split("| what happened | error | exit |", 1)[1]
    rows = [r for r in section.splitlines() if r.startswith("| ") and "---" not in r]
    listed: set[str] = set()
    codes = _cli_codes()
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        code = int(cells[-1])
        assert code in codes, row
        for name in re.findall(r"`(\w+)`", cells[1]):
            assert CLASSES[name].exit_code == code, (name, row)
            listed.add(name)
    assert listed == set(CLASSES), set(CLASSES) - listed


@pytest.mark.parametrize(
    ("exc", "corrupt"),
    [
        (errors.HashMismatch("a", "b"), True),
        (errors.ChainBroken("x"), True),
        (errors.FormatError("x"), True),
        (errors.ReplicaMismatch("x"), True),
        (errors.SignatureError("x"), True),
        (errors.NotFound("x"), False),
        (errors.BackendUnavailable("x"), False),
        (errors.DecryptionError("x"), False),
    ],
)
def test_corruption_is_exit_65(exc: errors.OdfWeb3Error, corrupt: bool) -> None:
    assert errors.is_corruption(exc) is corrupt
    assert (exc.exit_code == 65) is corrupt


def test_a_bug_is_one_line_and_exit_70(monkeypatch, capsys) -> None:
    import odfweb3.cli.dataset_cmds as cmds

    def boom(*_a, **_k):  # type: ignore[no-untyped-def]
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(cmds, "_example", boom)
    code = main(["example", "/nonexistent/x"], env={})
    _out, err = capsys.readouterr()
    assert code == 70
    assert err.count("\n") == 1 and "internal error: RecursionError" in err
    assert "Traceback" not in err


def test_security_page_status_table_matches_verify() -> None:
    from odfweb3.read.compare import STATUS_EXIT, Status

    text = (ROOT / "docs" / "security.md").read_text("utf-8")
    section = text.split("### Outcomes: statuses and exit codes", 1)[1]
    section = section.split("| status | meaning | exit |", 1)[1].split("\n\n", 1)[0]
    rows = [r for r in section.splitlines() if r.startswith("| ") and "---" not in r]
    table = {}
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        table[cells[0].strip("`")] = int(cells[-1])
    assert table == STATUS_EXIT
    assert set(table) == set(Status.__args__)  # type: ignore[attr-defined]
    codes = _cli_codes()
    assert all(code in codes for code in table.values())
