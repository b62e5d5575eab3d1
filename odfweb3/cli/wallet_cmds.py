"""Arweave wallet commands: ``wallet new``, ``wallet address``, ``wallet balance``.

A throw-away or real wallet for ``publish --to bundle:DIR --wallet W.json`` and the live
Arweave target. The file is a JWK holding the private key: written with mode 0600,
atomically, never over an existing file; its content is never printed.
"""

from __future__ import annotations

import argparse
import re
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from odfweb3.backends import WalletMaker
    from odfweb3.cli.main import Context

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

    a = wsub.add_parser(
        "address",
        parents=[common],
        help="print a wallet file's Arweave address",
        description="Print the Arweave address of a JWK wallet file (the base64url SHA-256 of "
        "its public modulus), as ArDrive and arweave-js show it. Never prints the key.",
    )
    a.add_argument("path", type=Path, help="wallet file (JWK)")
    a.set_defaults(handler=_address)

    b = wsub.add_parser(
        "balance",
        parents=[common],
        help="ask the gateway for a wallet's balance (winston and AR)",
        description="Ask the Arweave gateway (--gateway, else arweave.gateway / "
        "ODFWEB3_ARWEAVE_GATEWAY) for the balance of a wallet file's address or of an address.",
    )
    b.add_argument("wallet", help="wallet file (JWK) or an Arweave address (43 characters)")
    b.add_argument("--gateway", metavar="URL", default=None, help="gateway base URL")
    b.set_defaults(handler=_balance)


_ADDRESS = re.compile(r"^[A-Za-z0-9_-]{43}$")


def _address_of(text: str) -> str:
    """The address a ``wallet balance`` argument names: a wallet file's, or itself."""
    path = Path(text)
    if path.exists() or not _ADDRESS.fullmatch(text):
        return _wallets().wallet_address(path)
    return text


def _wallets() -> WalletMaker:
    """The backend that keeps wallets (Arweave), from the registry."""
    from odfweb3.backends import WalletMaker, all_backends

    return next(b for b in all_backends() if isinstance(b, WalletMaker))


def _address(args: argparse.Namespace, ctx: Context) -> int:
    address = _wallets().wallet_address(args.path)
    ctx.out.result({"path": str(args.path), "address": address}, address, product=True)
    return 0


def _balance(args: argparse.Namespace, ctx: Context) -> int:
    address = _address_of(args.wallet)
    url = args.gateway or ctx.config.arweave_gateway
    winston = _wallets().balance(address, url)
    ar = Decimal(winston) / Decimal(10**12)  # winston per AR
    ctx.out.result(
        {"address": address, "gateway": url, "winston": winston, "ar": f"{ar:.12f}"},
        f"{address}  {ar:.12f} AR  ({winston} winston) on {url}",
    )
    return 0


def _new(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.errors import ConfigError

    path: Path = args.path
    if path.exists() or path.is_symlink():
        raise ConfigError(f"wallet file {path} already exists; refusing to overwrite it")
    if not path.parent.is_dir():
        raise ConfigError(f"wallet file {path}: directory {path.parent} does not exist")
    maker = _wallets()
    ctx.out.info("generating an RSA-4096 key (a few seconds)...")
    address = maker.new_wallet(path)
    ctx.out.result(
        {"path": str(path), "address": address},
        f"wrote {path} (mode 0600)\naddress {address}",
    )
    return 0
