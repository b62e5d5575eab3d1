"""The private seal of an offline output directory (odfweb3.publish.outdir_seal)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from odfweb3.errors import FormatError
from odfweb3.publish.outdir_seal import OutDirSeal, summary_digest

DOC = {"head": "f1620abc", "extra": {"cars": ["a.car", "b.car"]}, "version": 1}


@pytest.fixture
def out(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.car").write_bytes(b"A" * 100)
    (out / "b.car").write_bytes(b"B" * 50)
    return out


def _sealed(tmp_path: Path, out: Path) -> OutDirSeal:
    seal = OutDirSeal(tmp_path / "state", f"car:{out}")
    seal.save(out, DOC, ["a.car", "b.car"], ["b.car"])
    return OutDirSeal(tmp_path / "state", f"car:{out}")  # read back from the file


def test_the_digest_is_of_the_document_not_its_layout() -> None:
    assert summary_digest(json.loads(json.dumps(DOC, indent=1))) == summary_digest(DOC)
    assert summary_digest({**DOC, "head": "f1620abd"}) != summary_digest(DOC)


def test_no_seal_vouches_for_nothing(tmp_path: Path, out: Path) -> None:
    seal = OutDirSeal(tmp_path / "state", f"car:{out}")
    assert not seal.present
    assert "not written from this machine" in (seal.vouches(out, DOC, ["a.car"]) or "")


def test_a_seal_vouches_for_what_it_recorded(tmp_path: Path, out: Path) -> None:
    seal = _sealed(tmp_path, out)
    assert seal.present and seal.vouches(out, DOC, ["a.car", "b.car"]) is None
    edited = {**DOC, "extra": {"cars": ["a.car"]}}
    assert "publish.json changed" in (seal.vouches(out, edited, ["a.car"]) or "")


def test_a_file_emptied_replaced_or_unknown_is_named(tmp_path: Path, out: Path) -> None:
    seal = _sealed(tmp_path, out)
    (out / "a.car").write_bytes(b"A" * 10)  # emptied: another size
    assert seal.changed_files(out, ["a.car", "b.car"]) == [
        "a.car is not the file this machine wrote"
    ]
    (out / "a.car").write_bytes(b"X" * 100)  # same size, other bytes
    assert seal.changed_files(out, ["a.car"]) == ["a.car changed since this machine wrote it"]
    assert seal.changed_files(out, ["c.car"]) == ["c.car is not the file this machine wrote"]


def test_a_touched_file_with_the_same_bytes_is_hashed_again_and_kept(
    tmp_path: Path, out: Path
) -> None:
    seal = _sealed(tmp_path, out)
    (out / "a.car").write_bytes(b"A" * 100)  # rewritten: new times, same bytes
    os.utime(out / "a.car", ns=(1, 1))
    assert seal.changed_files(out, ["a.car", "b.car"]) == []


def test_a_seal_of_another_target_or_damaged_is_not_used(tmp_path: Path, out: Path) -> None:
    seal = _sealed(tmp_path, out)
    body = json.loads(seal.path.read_text())
    body["target"] = "car:/elsewhere"
    seal.path.write_text(json.dumps(body))
    assert not OutDirSeal(tmp_path / "state", f"car:{out}").present
    seal.path.write_text(json.dumps({"target": f"car:{out}", "summary": "x", "files": 3}))
    with pytest.raises(FormatError, match="delete it"):
        assert OutDirSeal(tmp_path / "state", f"car:{out}").present
