"""Fixtures of the hostile-input tests."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

SMALL_DISK_SIZE = 512 * 1024


@pytest.fixture
def small_disk(tmp_path: Path, monkeypatch) -> Iterator[Path]:
    """A directory on a full-able disk: a real 512 KiB tmpfs when mounting is permitted
    (the suite runs as root here), else ENOSPC injected through ``os.fsync`` past half
    that size (every odfweb3 writer fsyncs before its rename)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    mounted = (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={SMALL_DISK_SIZE}", "tmpfs", str(mnt)],
            capture_output=True,
            check=False,
        ).returncode
        == 0
    )
    if not mounted:  # fault injection: an fsync past half the size fails
        real_fsync = os.fsync

        def fsync(fd: int) -> None:
            if os.fstat(fd).st_size > SMALL_DISK_SIZE // 2:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            real_fsync(fd)

        monkeypatch.setattr(os, "fsync", fsync)
    try:
        yield mnt
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(mnt)], check=False)
