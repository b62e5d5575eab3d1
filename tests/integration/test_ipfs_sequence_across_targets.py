"""One key, one sequence: a dataset published to car:DIR and then to a Kubo node signs its
node record above every sequence the car: records took (the same IPNS key signs both), so
no two different records share a sequence (IPNS spec "Record Verification": resolvers
refuse such an equivocation)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path


def _cli(args: list[str], cwd: Path, env: dict[str, str]) -> dict:
    r = subprocess.run(
        [sys.executable, "-m", "odfweb3.cli.main", *args, "--json"],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert r.returncode == 0, f"odfweb3 {' '.join(args)}: exit {r.returncode}\n{r.stderr}"
    return json.loads(r.stdout)


def test_node_record_after_car_records_takes_the_next_sequence(ipfs_node, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ODFWEB3_", "XDG_"))}
    env.update(HOME=str(tmp_path / "home"), ODFWEB3_IPFS_API=ipfs_node.api_url)
    env["ODFWEB3_IPFS_GATEWAY"] = ipfs_node.gateway_url
    # A fresh seed: the session's Kubo is shared, and a dataset ID another test published
    # there under its own key would be refused here.
    seed = str(secrets.randbelow(2**31))
    _cli(["example", "ds", "--blocks", "2", "--seed", seed], tmp_path, env)
    assert _cli(["publish", "ds", "--to", "car:out"], tmp_path, env)["record"]["sequence"] == 0
    _cli(["example", "ds", "--append", "1"], tmp_path, env)
    assert _cli(["publish", "ds", "--to", "car:out"], tmp_path, env)["record"]["sequence"] == 1
    node = _cli(["publish", "ds", "--to", "ipfs"], tmp_path, env)
    assert node["record"]["sequence"] == 2
    name = next(s["ref"] for s in node["share"] if s["ref"].startswith("ipns://"))
    # Before, the node record took sequence 1 too and resolve refused the name (exit 65).
    resolved = _cli(["resolve", name], tmp_path, env)
    assert node["locator"] in json.dumps(resolved)
