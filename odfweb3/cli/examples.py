"""The "examples:" section of each subcommand's ``--help`` (its argparse epilog).

One place for every example, keyed by the command path. ``tests/unit/cli/test_help.py``
parses each example line with the real parser, so an example that no longer matches
the command line fails the suite; every leaf command must have at least one.
"""

from __future__ import annotations

from typing import Final

__all__ = ["EXAMPLES", "epilog"]

EXAMPLES: Final[dict[tuple[str, ...], tuple[str, ...]]] = {
    ("example",): (
        "odfweb3 example ./ds --blocks 5 --data-bytes 2MiB",
        "odfweb3 example ./ds --seed 42            # same seed, same dataset ID and head",
        "odfweb3 example ./ds --append 2",
        "odfweb3 example ./deriv --derivative-of ./ds",
        "odfweb3 example ./files --linked-objects 3   # 3 linked objects (data/<hash>) a block",
    ),
    ("inspect",): ("odfweb3 inspect ./ds", "odfweb3 inspect ./ds --json"),
    ("validate",): (
        "odfweb3 validate ./ds",
        "odfweb3 validate ./ds --deep              # also hash every data file",
        "odfweb3 validate ./deriv --inputs ./ds",
    ),
    ("publish",): (
        "odfweb3 publish ./ds --to car:./out       # offline: CARs + a signed IPNS record",
        "odfweb3 publish ./ds --to ipfs            # the Kubo node of ipfs.api",
        "odfweb3 publish ./ds --to ipfs --cid-profile unixfs-v1-2025 --dnslink data.example.org",
        "odfweb3 publish ./ds --to bundle:./ar --wallet wallet.json",
        "odfweb3 publish ./ds --to arweave --wallet wallet.json --max-cost 0.5AR",
        "odfweb3 publish ./deriv --to ipfs --with-inputs ./ds",
        "odfweb3 publish ./ds --to origin           # a remote (odfweb3 remote add)",
        "odfweb3 publish ./ds                       # every target it was published to",
        "odfweb3 publish ./sec --to ipfs --encrypt  # from now on every publish is encrypted",
        "odfweb3 publish ./sec --to car:./o --no-encrypt --yes  # plaintext, confirmed",
    ),
    ("config", "show"): (
        "odfweb3 config show                      # also bare: odfweb3 config",
        "odfweb3 config show --config team.yaml --json",
    ),
    ("config", "check"): ("odfweb3 config check", "odfweb3 config check --config team.yaml"),
    ("status",): ("odfweb3 status", "odfweb3 status ./ds --offline"),
    ("republish",): ("odfweb3 republish --all", "odfweb3 republish ./ds --to ipfs"),
    ("verify",): (
        "odfweb3 verify ./ds --against car:./out",
        "odfweb3 verify ./ds --against origin",
        "odfweb3 verify ./ds --against ipns://k51qzi5uqu5d... --deep",
        "odfweb3 verify --lineage car:./out --inputs-from car:./out/inputs/ds",
    ),
    ("pull",): (
        "odfweb3 pull car:./out ./copy",
        "odfweb3 pull ipns://k51qzi5uqu5d... ./copy --parallel 16",
    ),
    ("resolve",): ("odfweb3 resolve ipns://k51qzi5uqu5d...", "odfweb3 resolve ar://RECORD-ID"),
    ("keys", "identity", "new"): ("odfweb3 keys identity new alice",),
    ("keys", "identity", "list"): ("odfweb3 keys identity list",),
    ("keys", "identity", "export"): ("odfweb3 keys identity export alice",),
    ("keys", "recipients", "add"): (
        "odfweb3 keys recipients add ./ds alice",
        "odfweb3 keys recipients add ./ds --passphrase --passphrase-file pass.txt",
    ),
    ("keys", "recipients", "remove"): ("odfweb3 keys recipients remove ./ds x25519:…",),
    ("keys", "recipients", "list"): ("odfweb3 keys recipients list ./ds",),
    ("keys", "rotate"): ("odfweb3 keys rotate ./ds",),
    ("keys", "export"): ("odfweb3 keys export ./ds --out keys.env --passphrase-file pass.txt",),
    ("keys", "import"): ("odfweb3 keys import keys.env --passphrase-file pass.txt",),
    ("name", "push"): (
        "odfweb3 name push car:./out --routing http://127.0.0.1:8080   # a Kubo gateway",
        "odfweb3 name push ./out/k51qzi5uqu5d....ipns-record           # endpoint: ipfs.routing",
    ),
    ("wallet", "new"): ("odfweb3 wallet new wallet.json",),
    ("wallet", "address"): ("odfweb3 wallet address wallet.json",),
    ("wallet", "balance"): (
        "odfweb3 wallet balance wallet.json",
        "odfweb3 wallet balance 1seRanklLU_1VTGkEk7P0xAwMJfA7owA1JHW5KyZKlY",
    ),
    ("describe",): (
        "odfweb3 describe ./ds",
        "odfweb3 describe ./ds --format ttl --ipns k51qzi5uqu5d...",
        "odfweb3 describe ./ds --format croissant --ipfs bafy... --gateway http://127.0.0.1:8080",
    ),
    ("log",): ("odfweb3 log ./ds", "odfweb3 log car:./out -n 5", "odfweb3 log ./ds --json"),
    ("lineage",): (
        "odfweb3 lineage ./deriv --inputs ./ds",
        "odfweb3 lineage ./deriv --inputs ./ds --format svg -o lineage.svg",
        "odfweb3 lineage ./deriv --format mermaid",
    ),
    ("remote", "add"): (
        "odfweb3 remote add origin car:./out",
        "odfweb3 remote add live ipfs:http://127.0.0.1:5001",
    ),
    ("remote", "rename"): ("odfweb3 remote rename origin backup",),
    ("remote", "remove"): ("odfweb3 remote remove origin",),
    ("remote", "list"): ("odfweb3 remote list",),
    ("version",): ("odfweb3 version", "odfweb3 version --json"),
    ("completion",): (
        "odfweb3 completion bash > ~/.local/share/bash-completion/completions/odfweb3",
        "odfweb3 completion zsh > ~/.zfunc/_odfweb3",
        "odfweb3 completion fish > ~/.config/fish/completions/odfweb3.fish",
    ),
    ("man",): ("odfweb3 man > ~/.local/share/man/man1/odfweb3.1 && man odfweb3",),
}


def epilog(path: tuple[str, ...]) -> str | None:
    """The help epilog of the command at ``path``: its examples, one per line."""
    lines = EXAMPLES.get(path)
    if not lines:
        return None
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)
