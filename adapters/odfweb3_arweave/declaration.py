"""What the Arweave backend is, for the registry and the command line, without its network
code.

Imported on every start (the ``publish`` options are part of ``--help``), so it imports only
the core's registry types; the backend itself (:mod:`odfweb3_arweave.backend`) is imported
when a ``bundle:``/``arweave``/``turbo`` target or an ``ar://``/``bundle:`` reference is
first used.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Final

from odfweb3.backends import CliOption, Declaration, TargetTraits

if TYPE_CHECKING:
    from odfweb3.config import Config

__all__ = ["DECLARATION", "ArweaveOptions", "parse_cost"]


@dataclass(frozen=True)
class ArweaveOptions:
    """The Arweave targets' own publish options (``--wallet``, ``--max-cost``).

    Attributes:
        wallet: the JWK wallet that signs; None: config ``arweave.wallet`` /
            ``ODFWEB3_ARWEAVE_WALLET``.
        max_cost: refuse an upload above this many winston (Turbo: winc); None: config
            ``arweave.max_cost_winston``, else no cap.
    """

    wallet: Path | None = None
    max_cost: int | None = None


def _complete_options(options: ArweaveOptions, config: Config) -> ArweaveOptions:
    """The configured wallet where ``--wallet`` was not given."""
    return replace(options, wallet=options.wallet or config.arweave_wallet)


def parse_cost(text: str) -> int:
    """``--max-cost``: winston (an integer) or AR (``0.5AR``; 1 AR = 10^12 winston)."""
    t = text.strip()
    try:
        if t.upper().endswith("AR"):
            return int(Decimal(t[:-2].strip()) * 10**12)
        return int(t)
    except (ValueError, ArithmeticError):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not winston or an amount like 0.5AR"
        ) from None


def _opened_name(spec: str, config: Config) -> str:
    """``arweave`` is the gateway of ``arweave.gateway``; every other name is its own."""
    if spec == "arweave":
        return f"arweave:{str(config.arweave_gateway).rstrip('/')}"
    return spec.rstrip("/")


DECLARATION: Final = Declaration(
    name="arweave",
    rank=1,  # a did:odf is looked up on Arweave after its IPNS name
    target_schemes=("bundle", "arweave", "turbo"),
    ref_prefixes=("ar://", "bundle:"),
    backend="odfweb3_arweave.backend:ArweaveBackend",
    target_forms=("bundle:DIR", "arweave", "arweave:URL", "turbo", "turbo:URL"),
    # bundle:DIR is a local directory; it and the gateway can hold an ArFS private drive
    # (Turbo's uploads are not signed as drive entities here: public only).
    traits={
        "bundle": TargetTraits(offline=True, private_drives=True),
        "arweave": TargetTraits(private_drives=True),
    },
    opened_name=_opened_name,
    options_type=ArweaveOptions,
    complete_options=_complete_options,
    publish_options=(
        CliOption(
            ("--wallet",),
            {"type": Path, "default": None, "help": "Arweave JWK wallet file"},
            order=80,
        ),
        CliOption(
            ("--max-cost",),
            {
                "type": parse_cost,
                "default": None,
                "metavar": "COST",
                "help": "arweave: refuse an upload costing more (winston, or AR with a suffix: "
                "0.5AR); turbo: winc (credits with the suffix: 0.5AR = 0.5 credits)",
            },
            order=160,
        ),
    ),
)
