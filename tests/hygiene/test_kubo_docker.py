"""kubo-docker/ keeps its promises: pinned Kubo, loopback-only API and gateway, volume, init."""

import os
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2] / "kubo-docker"


def compose():
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text("utf-8"))


def kubo_service():
    return compose()["services"]["kubo"]


def published(port):
    """The host side of every mapping of container ``port`` (short syntax)."""
    hosts = []
    for spec in kubo_service()["ports"]:
        text = str(spec)
        container = text.rsplit(":", 1)[-1].split("/")[0]
        if container == str(port):
            hosts.append(text.rsplit(":", 1)[0])
    return hosts


def test_image_is_kubo_with_a_pinned_release_tag():
    image = kubo_service()["image"]
    repo, _, tag = image.partition(":")
    assert repo == "ipfs/kubo"
    assert re.fullmatch(r"v\d+\.\d+\.\d+", tag), f"{image}: pin an exact vX.Y.Z release"
    assert tag != "latest" and "@" not in repo


def test_api_and_gateway_bound_to_loopback_only():
    for port in (5001, 8080):
        hosts = published(port)
        assert hosts, f"port {port} is not published"
        assert all(h.startswith("127.0.0.1:") for h in hosts), f"{port} published as {hosts}"


def test_repository_lives_in_a_declared_named_volume():
    data = compose()
    mounts = [str(v) for v in kubo_service()["volumes"]]
    repo = [m for m in mounts if m.split(":")[1] == "/data/ipfs"]
    assert repo, "no volume at /data/ipfs"
    name = repo[0].split(":")[0]
    assert not name.startswith((".", "/")), "the repository should be a named volume"
    assert name in (data.get("volumes") or {})


def test_init_script_is_mounted_executable_and_sets_what_odfweb3_relies_on():
    mounts = [str(v) for v in kubo_service()["volumes"]]
    init = [m for m in mounts if m.split(":")[1] == "/container-init.d"]
    assert init and init[0].split(":")[0] == "./container-init.d"
    scripts = sorted((ROOT / "container-init.d").glob("*.sh"))
    assert scripts
    text = scripts[0].read_text("utf-8")
    assert text.startswith("#!/bin/sh") and os.access(scripts[0], os.X_OK)
    # Inside the container the daemon must listen on all interfaces for the mapping to work.
    assert "Addresses.API /ip4/0.0.0.0/tcp/5001" in text
    assert "Addresses.Gateway /ip4/0.0.0.0/tcp/8080" in text
    # Same CIDs as odfweb3's default profile (docs/design.md, "IPFS mapping").
    assert "Import.CidVersion 1" in text and "Import.UnixFSRawLeaves true" in text
    assert "size-262144" in text


def test_readme_says_how_to_start_point_and_test():
    readme = (ROOT / "README.md").read_text("utf-8")
    for needle in ("docker compose up -d", "ODFWEB3_IPFS_API", "pytest", "docker compose down"):
        assert needle in readme


def test_kubo_version_is_the_same_in_the_build_script_and_the_test_support():
    from tests.support.kubo import KUBO_VERSION

    script = (ROOT.parent / "tools" / "go_nodes.sh").read_text("utf-8")
    built = re.search(r"^KUBO_VERSION=v(\S+)$", script, re.M)
    assert built, "tools/go_nodes.sh has no KUBO_VERSION=vX.Y.Z line"
    assert built.group(1) == KUBO_VERSION


def test_compose_runs_the_kubo_release_the_suite_builds_and_tests():
    from tests.support.kubo import KUBO_VERSION

    assert kubo_service()["image"] == f"ipfs/kubo:v{KUBO_VERSION}"
    text = (ROOT / "container-init.d" / "001-odfweb3.sh").read_text("utf-8")
    # Kubo >= 0.38 refuses to start with Reprovider.* fields: the strategy lives in Provide.
    assert "ipfs config Provide.Strategy pinned" in text
    assert "ipfs config Reprovider.Strategy" not in text
    assert "ipfs config --json Reprovider '{}'" in text
