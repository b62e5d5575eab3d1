"""DNSLink end to end on Kubo v0.43.1.

Our DNSLink path asks the node (RPC ``dns``, :func:`node_dns_lookup`): we run no resolver of our
own. So Kubo's ``DNS.Resolvers`` sends the test-only TLD ``test.`` to a DoH responder on
loopback (tests/support/doh.py); ``publish --to ipfs --dnslink DOMAIN`` prints the TXT record,
the test puts exactly that record in the responder's zone, and ``resolve ipns://DOMAIN`` finds
the dataset's head through DNS -> IPNS name -> signed record -> root.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.multihash import multihash_to_str
from tests.support.doh import doh_server
from tests.support.kubo import start_kubo

DOMAIN = "data.odfweb3.test"


def run(capsys, env, *argv):
    code = main(list(argv), env=env)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def world(tmp_path: Path):
    with (
        doh_server() as dns,
        start_kubo(tmp_path / "kubo", config={"DNS.Resolvers": {"test.": dns.url}}) as node,
    ):
        env = {
            "HOME": str(tmp_path),
            "ODFWEB3_STATE_DIR": str(tmp_path / "state"),
            "ODFWEB3_KEYSTORE": str(tmp_path / "keys"),
            "ODFWEB3_IPFS_API": node.api_url,
            "ODFWEB3_IPFS_GATEWAY": node.gateway_url,
        }
        yield dns, env


def test_publish_prints_the_txt_record_and_resolve_follows_it(capsys, tmp_path, world):
    dns, env = world
    built = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=5000, seed=21)
    code, out, err = run(
        capsys, env, "--json", "publish", str(built.path), "--to", "ipfs", "--dnslink", DOMAIN
    )
    assert code == 0, err
    done = json.loads(out)
    name = done["record"]["name"]
    link = done["dnslink"]
    assert link["record"] == f'_dnslink.{DOMAIN} TXT "dnslink=/ipns/{name}"'
    assert (link["host"], link["value"]) == (f"_dnslink.{DOMAIN}", f"dnslink=/ipns/{name}")

    # Before the owner sets the record: one line, an exit code, no traceback.
    code, _, err = run(capsys, env, "resolve", f"ipns://{DOMAIN}")
    assert code != 0 and "Traceback" not in err and err.count("\n") == 1, err
    assert DOMAIN in err

    dns.set_txt(link["host"], link["value"])
    code, out, err = run(capsys, env, "--json", "resolve", f"ipns://{DOMAIN}")
    assert code == 0, err
    (resolved,) = json.loads(out)["results"]
    assert resolved["head"] == multihash_to_str(built.head)
    assert resolved["locator"] == f"/ipfs/{done['locator']}"
    assert any(f"DNSLink {DOMAIN} -> /ipns/{name}" in note for note in resolved["notes"])
    assert f"_dnslink.{DOMAIN}." in dns.queries  # the answer came from our DNS, through Kubo

    # The human form shows the record too.
    code, out, err = run(
        capsys, env, "publish", str(built.path), "--to", "ipfs", "--dnslink", DOMAIN
    )
    assert code == 0, err
    assert f'_dnslink.{DOMAIN} TXT "dnslink=/ipns/{name}"' in out


def test_bad_dnslink_arguments_are_one_line_usage_errors(capsys, tmp_path):
    env = {"HOME": str(tmp_path), "ODFWEB3_STATE_DIR": str(tmp_path / "state")}
    ds = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=100, seed=2).path
    for argv, words in (
        (["--to", "car:" + str(tmp_path / "o"), "--dnslink", "not a domain"], "not a domain"),
        (["--to", "car:" + str(tmp_path / "o"), "--dnslink", "localhost"], "not a domain"),
        (["--to", "bundle:" + str(tmp_path / "b"), "--dnslink", DOMAIN], "needs an IPNS name"),
    ):
        code, _, err = run(capsys, env, "publish", str(ds), *argv)
        assert code == 64 and words in err and err.count("\n") == 1, err


def test_a_slow_dnslink_chain_is_cut_by_the_command_budget(capsys, tmp_path, world):
    """32 DNSLink hops at 0.6 s a lookup (a loop back to the first): before the command
    budget, about 20 s and 32 lookups, then "longer than 32 hops" (at 2 s a lookup 67.7 s
    was measured; the per-request deadlines allow about an hour). Now the command stops
    asking once network.command_deadline_s is spent: exit 69, one line, a few lookups."""
    dns, env = world
    hops = [f"hop{i}.odfweb3.test" for i in range(32)]
    for here, there in zip(hops, [*hops[1:], hops[0]], strict=True):
        dns.set_txt(f"_dnslink.{here}", f"dnslink=/ipns/{there}")
    dns.delay_s = 0.6
    cfg = tmp_path / "slow-net.yaml"
    cfg.write_text("network:\n  command_deadline_s: 2\n")
    code, _, err = run(capsys, env, "resolve", f"ipns://{hops[0]}", "--config", str(cfg))
    assert code == 69, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "network.command_deadline_s" in err, err
    asked = {q for q in dns.queries if q.startswith("_dnslink.hop")}
    assert 1 <= len(asked) < 16, sorted(asked)
