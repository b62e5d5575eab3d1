"""Run the odfweb3 CLI in a child process and measure what an attack cost it.

:func:`run_cli` starts ``odfweb3 ARGS`` (this interpreter, this checkout), waits for it with
``os.wait4`` so that the peak resident memory is that one process's (``ru_maxrss``, not the
maximum over every child the test run ever had), and kills it after ``timeout`` seconds.
An address-space limit (``RLIMIT_AS``, default 2 GiB) keeps a runaway child from taking the
machine down with it: it fails with MemoryError instead (which the tests then see as a
traceback and a failure).

Also :func:`tree_snapshot`: every path under a directory with its kind, size and content
hash, to check that nothing outside DEST was written and DEST's previous state is intact.
"""

from __future__ import annotations

import hashlib
import os
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CliRun", "run_cli", "tree_snapshot"]

_MAIN = "import sys; from odfweb3.cli.main import main; sys.exit(main())"


@dataclass(frozen=True)
class CliRun:
    """One finished CLI run."""

    code: int  # exit status (-N: killed by signal N; -9 after the timeout)
    stdout: str
    stderr: str
    peak_rss_mb: float
    seconds: float
    timed_out: bool

    @property
    def lines(self) -> list[str]:
        """The non-empty lines of stderr."""
        return [line for line in self.stderr.splitlines() if line.strip()]

    def summary(self) -> str:
        """For failure messages and reports."""
        return (
            f"exit {self.code} in {self.seconds:.2f} s, peak RSS {self.peak_rss_mb:.0f} MB"
            f"{' (timed out)' if self.timed_out else ''}; stderr: {self.stderr[-2000:]!r}"
        )


def run_cli(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 120.0,
    max_address_space: int = 2 << 30,
) -> CliRun:
    """Run ``odfweb3 ARGS`` with ``env`` added to a minimal environment."""
    base = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TMPDIR")}
    base["PYTHONDONTWRITEBYTECODE"] = "1"
    full = {**base, **(env or {})}
    out_path = Path(_tmp_name("out"))
    err_path = Path(_tmp_name("err"))

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (max_address_space, max_address_space))

    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        start = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-c", _MAIN, *args],
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            env=full,
            cwd=cwd,
            preexec_fn=limit,
        )
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            proc.kill()

        timer = threading.Timer(timeout, kill)
        timer.daemon = True
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        seconds = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # keep Popen from waiting again
    try:
        stdout = out_path.read_text("utf-8", "replace")
        stderr = err_path.read_text("utf-8", "replace")
    finally:
        out_path.unlink(missing_ok=True)
        err_path.unlink(missing_ok=True)
    return CliRun(
        proc.returncode,
        stdout,
        stderr,
        usage.ru_maxrss / 1024,  # Linux: KiB
        seconds,
        timed_out.is_set(),
    )


def _tmp_name(kind: str) -> str:
    import tempfile

    fd, name = tempfile.mkstemp(prefix=f"odfweb3-cli-{kind}-")
    os.close(fd)
    return name


def tree_snapshot(root: Path) -> dict[str, str]:
    """``relative path -> kind:size:sha256`` of everything under ``root`` (symlinks not
    followed; a missing root is an empty snapshot)."""
    out: dict[str, str] = {}
    if not root.exists():
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            st = path.lstat()
            if path.is_symlink():
                out[rel] = f"link:{os.readlink(path)}"
            elif path.is_dir():
                out[rel] = "dir"
            else:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                out[rel] = f"file:{st.st_size}:{digest}"
    return out
