"""Run the odfweb3 CLI in a child process and measure what an attack cost it.

:func:`run_cli` starts ``odfweb3 ARGS`` (this interpreter, this checkout), measures that one
process's peak resident memory (its own ``VmHWM``, not the maximum over every child the test
run ever had, nor the pytest process it was forked from), and kills it after ``timeout``
seconds.
An address-space limit (``RLIMIT_AS``, default 2 GiB) keeps a runaway child from taking the
machine down with it: it fails with MemoryError instead (which the tests then see as a
traceback and a failure).

With ``ODFWEB3_TEST_MEASURE_LOG=FILE`` in the test run's environment, every run is also
appended to FILE as one JSON line (test, command, exit code, seconds, peak RSS): the
before/after table of the hostile-input attacks is made from it.

Also :func:`tree_snapshot`: every path under a directory with its kind, size and content
hash, to check that nothing outside DEST was written and DEST's previous state is intact.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CliRun", "run_cli", "tree_snapshot"]

# The child sets its address-space limit itself and, when it exits, writes its own peak
# resident memory (``VmHWM`` of its address space) to a file. ``ru_maxrss`` from ``wait4`` is
# only the fallback (a child killed at the timeout): Linux carries the pre-exec high-water mark
# over ``exec``, so it counts the forked pytest process (every run measured the ~108 MB of
# pytest, or 3 GB after a test had built a 3 GB answer, whatever the child did).
_MAIN = """
import atexit, resource, sys
limit, report = int(sys.argv.pop(1)), sys.argv.pop(1)
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
def _peak():
    with open("/proc/self/status") as status, open(report, "w") as out:
        out.write(next((ln.split()[1] for ln in status if ln.startswith("VmHWM:")), ""))
atexit.register(_peak)
from odfweb3.cli.main import main
sys.exit(main())
"""


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
    peak_path = Path(_tmp_name("peak"))

    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        start = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-c", _MAIN, str(max_address_space), str(peak_path), *args],
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            env=full,
            cwd=cwd,
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
        peak_kib = peak_path.read_text("ascii").strip()
    finally:
        out_path.unlink(missing_ok=True)
        err_path.unlink(missing_ok=True)
        peak_path.unlink(missing_ok=True)
    run = CliRun(
        proc.returncode,
        stdout,
        stderr,
        int(peak_kib) / 1024 if peak_kib.isdigit() else usage.ru_maxrss / 1024,  # KiB
        seconds,
        timed_out.is_set(),
    )
    log = os.environ.get("ODFWEB3_TEST_MEASURE_LOG")
    if log:
        entry = {
            "test": os.environ.get("PYTEST_CURRENT_TEST", "").removesuffix(" (call)"),
            "args": [a if len(a) < 80 else a[:77] + "..." for a in args],
            "code": run.code,
            "seconds": round(run.seconds, 2),
            "peakRssMb": round(run.peak_rss_mb, 1),
            "timedOut": run.timed_out,
            "stderr": run.lines[-1][:300] if run.lines else "",
        }
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")
    return run


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
                out[rel] = f"file:{st.st_size}:{_content_digest(path)}"
    return out


def _content_digest(path: Path) -> str:
    """A digest of the file's bytes that reads only its data extents: a hole (a hostile
    test's sparse 3 GB file) is named by offset and length, not read and hashed as zeros
    (which read 3 GB into memory three times a test). Equal bytes in the same extents give
    the same digest; any byte written changes it (a hole filled with zeros included)."""
    outer = hashlib.sha256()
    with open(path, "rb") as f:
        fd = f.fileno()
        size = os.fstat(fd).st_size
        off = 0
        while off < size:
            try:
                start = os.lseek(fd, off, os.SEEK_DATA)
            except OSError as e:  # ENXIO: no data after `off`, the rest is a hole
                if e.errno != errno.ENXIO:
                    raise
                start = size
            if start > off:
                outer.update(f"hole {off} {start - off}\n".encode())
            if start >= size:
                break
            end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
            f.seek(start)
            inner = hashlib.sha256()
            left = end - start
            while left > 0:
                chunk = f.read(min(1 << 20, left))
                if not chunk:
                    break
                inner.update(chunk)
                left -= len(chunk)
            outer.update(f"data {start} {end - start} {inner.hexdigest()}\n".encode())
            off = end
    return outer.hexdigest()
