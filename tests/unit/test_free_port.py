"""free_port (tests/support/nodes.py): a port handed to one test process is never handed to
another while the first lives (two xdist workers, two checkouts' suites on one machine), and
never one the kernel picks for a bind(0) or a client's source port."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

from tests.support.nodes import free_port

REPO = Path(__file__).resolve().parents[2]


def _ephemeral_low() -> int:
    return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])


def test_ports_are_this_processs_and_outside_the_kernels_range() -> None:
    ours = [free_port() for _ in range(20)]
    assert len(set(ours)) == 20
    assert all(20000 <= p < _ephemeral_low() for p in ours)
    with socket.socket() as s:
        s.bind(("127.0.0.1", ours[0]))  # still free: claimed, not bound
    code = (
        "import json; from tests.support.nodes import free_port;"
        "print(json.dumps([free_port() for _ in range(200)]))"
    )
    other = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    theirs = json.loads(other.stdout)
    assert len(set(theirs)) == 200
    assert not set(ours) & set(theirs)
    # the other process has exited: its claims went with it
    again = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert not set(ours) & set(json.loads(again.stdout))
