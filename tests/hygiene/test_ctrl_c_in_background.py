"""A suite started as a background job still tests Ctrl-C.

A background job (``make test &``, ``nohup``, a script's ``cmd &``) inherits SIGINT ignored,
and a Python started so installs no KeyboardInterrupt handler: every odfweb3 the suite starts
ignored Ctrl-C, and the tests that send one (a Turbo publish, a pull held in a request) failed
on an exit 0 and a hang, with nothing wrong in odfweb3. tests/conftest.py gives SIGINT a
handler back; these run a pytest as such a job, with and without it.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import signal, subprocess, sys

def test_a_started_command_gets_ctrl_c():
    code = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
"""


def _as_a_background_job(probe: Path, *plugins: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    for plugin in plugins:
        argv += ["-p", plugin]
    return subprocess.run(
        [*argv, str(probe)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),  # what `&` does
    )


def test_the_suite_started_in_the_background_gives_its_commands_ctrl_c(tmp_path: Path) -> None:
    probe = tmp_path / "test_probe.py"
    probe.write_text(PROBE)
    bare = _as_a_background_job(probe)
    assert bare.returncode == 1, bare.stdout  # the cause, as it was: SIGINT ignored
    with_conftest = _as_a_background_job(probe, "tests.conftest")
    assert with_conftest.returncode == 0, with_conftest.stdout
