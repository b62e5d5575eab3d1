"""``docs/online.md``'s commands run against the suite's IPFS Cluster: every ``odfweb3`` line
of the page, in its order, in a fresh directory whose ``odfweb3.yaml`` is the page's
configuration with the suite's nodes in it (``ipfs.api``: the publisher's own Kubo, which the
cluster reaches through the pin's ``origins``; both services the page names, ``cluster`` and
``pinata``, are the cluster's Pinning Service API: a second service of the same protocol,
each with its own token file, mode 0600; ``publish_to: [cluster, pinata]``).

Each line runs with ``--json`` and must exit 0 unless it says ``# exit N``. After the page,
the root is pinned on the cluster's replication factor of peers and ``status`` reported
both services."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

import yaml

from tests.support.cluster import REPLICATION, Cluster
from tests.support.docs_console import Console, commands
from tests.support.kubo import KuboNode

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "online.md"


def _token_file(path: Path, token: str) -> str:
    path.write_text(token + "\n", "utf-8")
    path.chmod(0o600)
    return str(path)


def test_every_command_of_the_online_page_runs_against_the_cluster(
    tmp_path: Path, ipfs_cluster: Cluster, publisher: KuboNode
) -> None:
    cmds = commands(PAGE)
    assert len(cmds) >= 4, cmds
    work = tmp_path / "work"
    work.mkdir()
    services = {
        name: {
            "endpoint": ipfs_cluster.pinsvc_url,
            "token_file": _token_file(tmp_path / f"{name}.token", ipfs_cluster.token),
            "deadline_s": 300,  # generous: a loaded machine
        }
        for name in ("cluster", "pinata")
    }
    services["cluster"]["cluster_api"] = ipfs_cluster.rest_url
    config = {
        "ipfs": {"api": publisher.api_url, "gateway": publisher.gateway_url, "timeout": 60},
        "pinning": {"services": services, "publish_to": ["cluster", "pinata"]},
    }
    (work / "odfweb3.yaml").write_text(yaml.safe_dump(config), "utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ODFWEB3_", "XDG_"))}
    env.update(HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    console = Console(work, env, tmp_path / "console.log", secrets.randbelow(2**31))
    console.run(["example", "./ds", "--blocks", "2"], "online.md: set-up example ./ds")

    for n, line in cmds:
        assert console.line(line, f"docs/online.md:{n}: `{line}`")

    published = _outputs(console, "publish")
    root = published[0]["locator"]
    assert {p["locator"] for p in published} == {root}, "nothing changed between the publishes"
    assert set(published[1]["pins"]) == {"cluster", "pinata"}, published[1]
    assert all(p["status"] == "pinned" for p in published[1]["pins"].values()), published[1]
    assert sum(1 for s in ipfs_cluster.status(root).values() if s == "pinned") == REPLICATION
    status = _outputs(console, "status")[-1]
    shown = {row["target"] for row in status["targets"]}
    assert {"pinning:cluster", "pinning:pinata"} <= shown, shown


def _outputs(console: Console, command: str) -> list[Any]:
    """The ``--json`` documents of each run of ``odfweb3 COMMAND ...``."""
    return [json.loads(r.stdout) for args, r in console.ran if args[0] == command]
