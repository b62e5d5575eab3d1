"""Arweave wallet commands: ``wallet new``.

A throw-away or real wallet for ``publish --to bundle:DIR --wallet W.json`` and the live
Arweave target. The file is a JWK holding the private key: written with mode 0600,
atomically, never over an existing file; its content is never printed.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["register"]


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the wallet commands to the CLI."""
    p = sub.add_parser(
        "wallet",
        parents=[common],
        help="Arweave wallets (JWK files)",
        description="Manage Arweave JWK wallet files used to sign bundles.",
    )
    # The sub-subparsers inherit the CLI's parser class (errors become UsageError).
    wsub = p.add_subparsers(dest="wallet_command", metavar="SUBCOMMAND")
    wsub.required = True
    n = wsub.add_parser(
        "new",
        parents=[common],
        help="generate a new RSA-4096 wallet (mode 0600; never overwrites)",
        description="Generate an RSA-4096 Arweave wallet and write it as a JWK file with mode "
        "0600. Refuses to overwrite an existing file. Prints the wallet address only.",
    )
    n.add_argument("path", type=Path, help="wallet file to create, e.g. wallet.json")
    n.set_defaults(handler=_new)


def _new(args: argparse.Namespace, ctx: Any) -> int:
    from odfweb3.adapters.arweave.wallet import generate_wallet, save_wallet
    from odfweb3.errors import ConfigError

    path: Path = args.path
    if path.exists() or path.is_symlink():
        raise ConfigError(f"wallet file {path} already exists; refusing to overwrite it")
    if not path.parent.is_dir():
        raise ConfigError(f"wallet file {path}: directory {path.parent} does not exist")
    ctx.out.info("generating an RSA-4096 key (a few seconds)...")
    wallet = generate_wallet()
    save_wallet(wallet, path)
    ctx.out.result(
        {"path": str(path), "address": wallet.address},
        f"wrote {path} (mode 0600)\naddress {wallet.address}",
    )
    return 0
