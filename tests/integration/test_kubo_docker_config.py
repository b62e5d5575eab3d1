"""kubo-docker/container-init.d/001-odfweb3.sh works on the Kubo the suite builds (the release
docker-compose.yml pins, tests/unit/test_kubo_docker.py): run on a fresh repo it is accepted,
the daemon starts with it, and `ipfs add -r --only-hash` gives the CIDs odfweb3 computes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from odfweb3.odf.builder import create_root_dataset
from odfweb3_ipfs.publish.unixfs_import import import_tree
from tests.support.kubo import KUBO_BIN, kubo_env, start_kubo

SCRIPT = Path(__file__).resolve().parents[2] / "kubo-docker" / "container-init.d" / "001-odfweb3.sh"


def test_init_script_on_a_fresh_repo_then_the_daemon_starts_and_adds_our_cids(
    tmp_path: Path,
) -> None:
    workdir = tmp_path / "node"
    repo = workdir / "repo"
    repo.parent.mkdir(parents=True)
    env = {**os.environ, **kubo_env(repo)}
    subprocess.run(
        [str(KUBO_BIN), "init", "--empty-repo"], env=env, check=True, capture_output=True
    )
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "ipfs").symlink_to(KUBO_BIN)
    done = subprocess.run(
        ["sh", str(SCRIPT)],
        env={**env, "PATH": f"{bindir}:{env['PATH']}"},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    cfg = json.loads((repo / "config").read_text())
    assert cfg["Provide"]["Strategy"] == "pinned"
    assert not cfg.get("Reprovider")
    assert cfg["Import"]["CidVersion"] == 1 and cfg["Import"]["UnixFSRawLeaves"] is True
    # The container listens on 0.0.0.0:5001/8080 (published on the host's loopback); here the
    # daemon gets loopback port 0 and no network, everything else as the script left it.
    loopback = {
        "Addresses.API": "/ip4/127.0.0.1/tcp/0",
        "Addresses.Gateway": "/ip4/127.0.0.1/tcp/0",
        "Addresses.Swarm": ["/ip4/127.0.0.1/tcp/0"],
        "Bootstrap": [],
        "Discovery.MDNS.Enabled": False,
        "AutoConf.Enabled": False,
    }
    ds = create_root_dataset(tmp_path / "ds", blocks=3, data_bytes=300_000, seed=7).path
    with start_kubo(workdir, offline=True, config=loopback) as node:
        out = node.cli("add", "-r", "-Q", "--only-hash", str(ds)).stdout.strip()
    assert out == import_tree(ds).cid.encode()
