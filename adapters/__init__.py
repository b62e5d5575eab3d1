"""Network adapters for odfweb3, installed as ``odfweb3.adapters``.

This module is the composition root: it alone chooses an implementation for a
target name (together with the CLI). The pure format modules inside each adapter
never import network code, and adapters never import each other.

Target names:

- ``car:DIR``: offline IPFS publish (CAR files + IPNS record), the embedded default;
- ``ipfs`` or ``ipfs:http://HOST:PORT``: a live Kubo/js-ipfs node (API from config /
  ``ODFWEB3_IPFS_API`` unless given);
- ``bundle:DIR``: offline Arweave publish (a signed ANS-104 bundle);
- ``arweave`` or ``arweave:http(s)://HOST``: an Arweave gateway (config /
  ``ODFWEB3_ARWEAVE_GATEWAY`` unless given) with a wallet.

Replicas: ``car:DIR``, ``ar://<record-or-manifest-id>`` (through the configured gateway),
or a dataset directory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from odfweb3.config import Config
from odfweb3.crypto.keystore import Keystore
from odfweb3.crypto.sealer import Sealer
from odfweb3.errors import UsageError
from odfweb3.odf.layout import DatasetReader
from odfweb3.publish.target import PublishTarget
from odfweb3.replica import LocalReplica, Replica

if TYPE_CHECKING:
    from .arweave.gateway_target import GatewayTarget
    from .ipfs.node_target import IpfsNodeTarget

__all__ = [
    "TargetOptions",
    "open_arweave_target",
    "open_ipfs_target",
    "open_replica",
    "open_target",
]


@dataclass(frozen=True)
class TargetOptions:
    """Options a publish passes to whatever target it opens."""

    cid_version: int = 1
    wallet: Path | None = None
    unpin_previous: bool = False
    sealer: Sealer | None = None  # encrypt (DESIGN.md section 6); only car: so far
    max_cost: int | None = None  # arweave: refuse an upload above this many winston
    on_price: Callable[[int, int], None] | None = None  # arweave: (winston, bytes) before posting


def open_target(spec: str, config: Config, options: TargetOptions | None = None) -> PublishTarget:
    """The publish target for ``spec`` (see the module docstring).

    Raises:
        UsageError: an unknown or incomplete target name.
    """
    options = options or TargetOptions()
    kind, _, arg = spec.partition(":")
    if options.sealer is not None and kind != "car":
        raise UsageError(
            f"--to {spec}: encrypted publishing is implemented for car:DIR only so far; "
            "nothing was sent"
        )
    if kind == "car":
        if not arg:
            raise UsageError("--to car:OUT_DIR needs a directory, e.g. --to car:./out")
        from .ipfs.car_target import CarTarget

        return CarTarget(
            Path(arg).expanduser().absolute(),
            Keystore(config.keystore_dir),
            cid_version=options.cid_version,
            sealer=options.sealer,
        )
    if kind == "bundle":
        if not arg:
            raise UsageError("--to bundle:OUT_DIR needs a directory, e.g. --to bundle:./out")
        if options.wallet is None:
            raise UsageError(
                "--to bundle:OUT_DIR needs an Arweave wallet to sign with: pass --wallet "
                "WALLET.json (create one with odfweb3 wallet new WALLET.json)"
            )
        from .arweave.bundle_target import BundleTarget
        from .arweave.wallet import load_wallet

        return BundleTarget(Path(arg).expanduser().absolute(), load_wallet(options.wallet))
    if kind == "ipfs":
        return open_ipfs_target(config, options, api=arg or None)
    if kind == "arweave":
        return open_arweave_target(config, options, gateway=arg or None)
    raise UsageError(
        f"unknown target {spec!r}: use car:DIR, ipfs, bundle:DIR or arweave "
        "(see odfweb3 publish -h)"
    )


def open_ipfs_target(
    config: Config, options: TargetOptions | None = None, *, api: str | None = None
) -> IpfsNodeTarget:
    """The live IPFS target: the node at ``api`` (default ``config.ipfs_api``)."""
    from odfweb3.publish.state import StateStore

    from .ipfs.kubo import KuboClient
    from .ipfs.node_target import IpfsNodeTarget

    options = options or TargetOptions()
    url = api or config.ipfs_api
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"--to ipfs:{url}: give the node's RPC API as http://HOST:PORT")
    return IpfsNodeTarget(
        KuboClient(url),
        Keystore(config.keystore_dir),
        StateStore(config.state_dir),
        gateway_url=config.ipfs_gateway,
        cid_version=options.cid_version,
        unpin_previous=options.unpin_previous,
    )


def open_arweave_target(
    config: Config, options: TargetOptions | None = None, *, gateway: str | None = None
) -> GatewayTarget:
    """The live Arweave target: ``gateway`` (default ``config.arweave_gateway``) + a wallet.

    The wallet is ``options.wallet`` (``--wallet``, else config ``arweave.wallet`` /
    ``ODFWEB3_ARWEAVE_WALLET``, which the CLI resolves).

    Raises:
        UsageError: no wallet, or a gateway that is not an http(s) URL.
    """
    from odfweb3.publish.state import StateStore

    from .arweave.gateway import ArweaveGateway
    from .arweave.gateway_target import GatewayTarget
    from .arweave.wallet import load_wallet

    options = options or TargetOptions()
    url = gateway or config.arweave_gateway
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"--to arweave:{url}: give the gateway as http(s)://HOST[:PORT]")
    wallet = options.wallet or config.arweave_wallet
    if wallet is None:
        raise UsageError(
            "--to arweave needs a wallet: pass --wallet WALLET.json or set arweave.wallet / "
            "ODFWEB3_ARWEAVE_WALLET (create one with odfweb3 wallet new WALLET.json)"
        )
    return GatewayTarget(
        ArweaveGateway(url),
        load_wallet(wallet),
        StateStore(config.state_dir),
        max_cost=options.max_cost,
        on_price=options.on_price or (lambda winston, size: None),
    )


def open_replica(ref: str, config: Config) -> Replica:
    """A read-only replica for ``ref``: ``car:DIR``, or a local dataset directory.

    Raises:
        UsageError: an unknown reference form.
    """
    kind, _, arg = ref.partition(":")
    if kind == "car" and arg:
        from .ipfs.car_check import CarDirReplica, check_car_dir

        return CarDirReplica(check_car_dir(Path(arg).expanduser()), ref)
    if kind == "ar" and arg.startswith("//"):
        from .arweave.gateway import ArweaveGateway
        from .arweave.replica import open_ar_replica

        return open_ar_replica(ArweaveGateway(config.arweave_gateway), ref)
    if "://" not in ref and Path(ref).is_dir():
        return LocalReplica(DatasetReader.open(ref))
    raise UsageError(f"cannot open replica {ref!r}: use car:DIR, ar://ID or a dataset directory")
