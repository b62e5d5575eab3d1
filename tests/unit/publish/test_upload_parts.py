"""A publish's parts (a pinning service beside the upload): their exit code, and how the
report shows them without the CLI knowing which network made them."""

from __future__ import annotations

from odfweb3.publish.target import PartOutcome, parts_exit_code


def _part(code: int | None) -> PartOutcome:
    return PartOutcome("pin s", "pinning service s", "pinned" if code is None else "no", code)


def test_no_failed_part_is_exit_0() -> None:
    assert parts_exit_code(()) == 0
    assert parts_exit_code([_part(None), _part(None)]) == 0


def test_only_refusals_are_77_anything_else_69() -> None:
    assert parts_exit_code([_part(None), _part(77)]) == 77
    assert parts_exit_code([_part(77), _part(77)]) == 77
    assert parts_exit_code([_part(77), _part(69)]) == 69
    assert parts_exit_code([_part(65)]) == 69
