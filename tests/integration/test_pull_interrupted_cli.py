"""An interrupted pull, rerun, as a user runs it: ``odfweb3 pull ipns://NAME DEST`` (a
subprocess) from the session's Kubo gateway, stopped mid-transfer by Ctrl-C (SIGINT) or
killed (SIGKILL), then run again.

The gateway is the real Kubo node behind tests/support/lying_proxy.py, which holds the
data-file requests after the first two unanswered: the pull is then waiting in the middle
of its transfer when the signal comes, whatever the machine's load. The rerun goes
through the same proxy, now honest, which counts what it is asked: the blocks once, as one
CAR of blocks/ (the chain is walked and checked first, as the name's record needs; the
first run is made to read as through a gateway without whole-DAG CARs), and only the data
files and checkpoints the first run did not stage, one by one; the rerun says how many were
already present and how many it fetched (the glossary's count, blocks included).
The result validates and verifies identical to the published dataset.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from odfweb3.errors import FormatError, HashMismatch
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.chain import count_objects, iter_objects, walk_chain
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_from_str, verify_bytes
from tests.support.lying_proxy import lying_proxy
from tests.support.nodes import IpfsNode

DEADLINE_S = 300.0


def _config(path: Path, api: str, gateway: str, **extra: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "ipfs": {"api": api, "gateway": gateway},
                "keystore": str(path.parent / "keys"),
                "state_dir": str(path.parent / "state"),
                **extra,
            }
        )
    )
    return path


# The reader waits on a stalled answer longer than the test's deadline: a Ctrl-C that
# waited for the request in hand (instead of stopping) would fail the test by its deadline,
# not pass once the read timed out.
PATIENT = {
    "network": {"timeout_s": 3600, "deadline_s": 3600, "command_deadline_s": 3600, "retries": 0}
}


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ODFWEB3_", "XDG_"))}
    # its own temp directory: a pull elsewhere on the machine cannot touch the spool checks
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / "cfg"), TMPDIR=str(home / "tmp"))
    return env


def _odfweb3(argv: list[str], cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "odfweb3.cli.main", *argv],
        cwd=cwd,
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        check=False,
    )


def _spools(home: Path) -> set[str]:
    """The folder streams' temporary directories (odfweb3_ipfs.read.dag_spool) of the
    commands run with ``_env(home)``."""
    return {n for n in os.listdir(home / "tmp") if n.startswith("odfweb3-spool-")}


def _staged(dest: Path, folder: str) -> int:
    """The staged objects of ``folder`` whose bytes are whole (the one being written when
    the pull stopped is at its staged name too, short: the rerun fetches it again)."""
    where = dest / ".odfweb3" / "incoming" / folder
    whole = 0
    for p in where.iterdir() if where.is_dir() else ():
        try:
            verify_bytes(p.read_bytes(), multihash_from_str(p.name))
        except (FormatError, HashMismatch):
            continue
        whole += 1
    return whole


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "killed"])
def test_a_pull_stopped_mid_transfer_reruns_fetching_only_the_rest(
    ipfs_node: IpfsNode, tmp_path: Path, sig: signal.Signals
) -> None:
    seed = 4201 if sig == signal.SIGINT else 4202
    ds = create_root_dataset(tmp_path / "ds", blocks=6, data_bytes=120_000, seed=seed).path
    chain = list(walk_chain(DatasetReader.open(ds)))
    total = count_objects(iter_objects(chain))
    home = tmp_path / "home"
    publisher = _config(tmp_path / "pub" / "odfweb3.yaml", ipfs_node.api_url, ipfs_node.gateway_url)
    published = _odfweb3(
        ["publish", "ds", "--to", "ipfs", "--config", str(publisher), "--json"], tmp_path, home
    )
    assert published.returncode == 0, published.stderr
    (ref,) = [s["ref"] for s in json.loads(published.stdout)["share"]]
    assert ref.startswith("ipns://")
    dest = tmp_path / "copy"
    spools = _spools(home)

    with lying_proxy(ipfs_node.gateway_url) as proxy:
        reader = _config(
            tmp_path / "reader" / "odfweb3.yaml", ipfs_node.api_url, proxy.url, **PATIENT
        )
        argv = [sys.executable, "-m", "odfweb3.cli.main", "pull", ref, str(dest)]
        argv += ["--parallel", "1", "--config", str(reader)]
        # As a gateway without whole-DAG CARs: the first run reads object after object.
        proxy.not_found = ("dag-scope=all",)
        proxy.hold_after = ("/data/", 2)
        first = subprocess.Popen(
            argv, cwd=tmp_path, env=_env(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        try:
            deadline = time.monotonic() + DEADLINE_S
            while proxy.held == 0 and first.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert proxy.held == 1 and first.poll() is None, "the pull is waiting mid-transfer"
            first.send_signal(sig)
            _, err = first.communicate(timeout=DEADLINE_S)
        finally:
            if first.poll() is None:
                first.kill()
                first.wait()
        if sig == signal.SIGINT:
            # Ctrl-C: one line, exit 130 (odfweb3 --help), while the request still hangs
            assert first.returncode == 130, err
            assert err.decode().strip().splitlines() == ["odfweb3: interrupted"], err
        else:
            assert first.returncode == -signal.SIGKILL
        assert not (dest / "refs" / "head").exists()  # nothing visible: no head
        # the refused stream left no spool behind, even for a kill
        assert _spools(home) <= spools
        staged_data, staged_cps = _staged(dest, "data"), _staged(dest, "checkpoints")
        assert staged_data == 2

        proxy.honest()
        proxy.requests.clear()
        again = _odfweb3(
            ["pull", ref, str(dest), "--config", str(reader), "--json"], tmp_path, home
        )
        assert again.returncode == 0, again.stderr
        # only the rest was asked for: no staged data file or checkpoint again; the chain
        # in one stream of blocks/ (a CAR of its DAG), no data/ or checkpoints/ stream
        assert proxy.count("dag-scope=all") == 1, proxy.requests
        asked = {f: proxy.count(f"/{f}/") for f in ("blocks", "data", "checkpoints")}
        assert asked == {
            "blocks": 0,
            "data": total.data_files - staged_data,
            "checkpoints": total.checkpoints - staged_cps,
        }, proxy.requests
    result = json.loads(again.stdout)
    present = staged_data + staged_cps
    assert result["objects"]["total"] == total.total
    assert (result["objectsAlreadyPresent"], result["objectsFetched"]) == (
        present,
        total.total - present,
    )

    text = _odfweb3(["validate", str(dest), "--deep"], tmp_path, home)
    assert text.returncode == 0 and "valid" in text.stdout, text.stderr
    verified = _odfweb3(["verify", str(ds), "--against", str(dest), "--deep"], tmp_path, home)
    assert verified.returncode == 0 and "identical" in verified.stdout, verified.stderr
    assert not (dest / ".odfweb3" / "incoming").exists()
