"""``odfweb3.writeback.WritebackFile``: the same bytes as a plain write, write-back asked
for each ``every`` bytes written (the final fsync then waits for little)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from odfweb3.writeback import WritebackFile


def test_same_bytes_and_write_back_asked_per_range(tmp_path: Path) -> None:
    calls: list[tuple[int, int, int]] = []

    def advise(fd: int, offset: int, length: int, advice: int) -> None:
        calls.append((offset, length, advice))
        os.posix_fadvise(fd, offset, length, advice)

    parts = [bytes([i]) * (700 + 300 * i) for i in range(12)]
    with open(tmp_path / "out", "w+b") as f:
        w = WritebackFile(f, every=2000, advise=advise)
        w.write(b"HEAD")
        for part in parts:
            w.write(part)
        end = w.tell()
        w.seek(0)
        w.write(b"head")  # a header rewritten in place, as CarWriter.set_root does
        w.seek(end)
        assert w.tell() == end
        f.flush()
    assert (tmp_path / "out").read_bytes() == b"head" + b"".join(parts)
    # contiguous ranges from 0, each at least `every` bytes, all of them DONTNEED
    assert calls and calls[0][0] == 0
    for (off, length, advice), nxt in zip(calls, [*calls[1:], None], strict=True):
        assert advice == os.POSIX_FADV_DONTNEED and length >= 2000
        if nxt is not None:
            assert nxt[0] == off + length
    assert calls[-1][0] + calls[-1][1] > end - 2000


def test_advice_refused_is_ignored(tmp_path: Path) -> None:
    def refuse(fd: int, offset: int, length: int, advice: int) -> None:
        raise OSError(22, "refused")

    with open(tmp_path / "out", "wb") as f:
        w = WritebackFile(f, every=10, advise=refuse)
        for _ in range(5):
            w.write(b"x" * 25)
    assert (tmp_path / "out").read_bytes() == b"x" * 125


def test_every_must_be_positive(tmp_path: Path) -> None:
    with open(tmp_path / "out", "wb") as f, pytest.raises(ValueError):
        WritebackFile(f, every=0)
