"""Pinning services from the configuration (``pinning.services``, ``pinning.publish_to``).

::

    pinning:
      services:
        cluster:
          endpoint: http://127.0.0.1:9097       # Pinning Service API base
          token_file: ~/.config/odfweb3/cluster.token   # mode 0600; first line
          deadline_s: 600                      # until pinned (default 3600)
          timeout_s: 30                        # per call (default 30)
          update: auto                         # auto | replace | add-then-remove
          cluster_api: http://127.0.0.1:9094  # its REST API: CAR uploads (via: car)
        pinata:
          endpoint: https://api.pinata.cloud/psa   # token: ODFWEB3_PINNING_PINATA_TOKEN
      publish_to: [cluster, pinata]            # what --to pinning (no name) means
      via: node                                # node (default) | car: no local node

The token comes from ``token_file`` (its first line; refused unless only its owner can read
it) or else the environment variable ``ODFWEB3_PINNING_<NAME>_TOKEN`` (NAME upper-cased, ``-``
as ``_``). It is never logged, never in a message, never saved in publish state.
"""

from __future__ import annotations

import stat
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from odfweb3.config import Config
from odfweb3.errors import UsageError
from odfweb3.publish.state import StateStore
from odfweb3.transport.settings import NetworkSettings
from odfweb3_ipfs.client.pinning import PinningClient
from odfweb3_ipfs.publish.car_target import CarTarget
from odfweb3_ipfs.publish.pinning_target import PinningService, PinningTarget

if TYPE_CHECKING:
    from odfweb3.backends import TargetOptions
    from odfweb3_ipfs.declaration import IpfsOptions
    from odfweb3_ipfs.publish.node_target import IpfsNodeTarget
    from odfweb3_ipfs.publish.state import CarExtra, NodeExtra

__all__ = ["load_service", "open_pinning_target", "service_names", "token_env_name"]


def token_env_name(service: str) -> str:
    """``ODFWEB3_PINNING_<NAME>_TOKEN``."""
    return f"ODFWEB3_PINNING_{service.upper().replace('-', '_')}_TOKEN"


def service_names(config: Config, arg: str) -> list[str]:
    """The services ``pinning:ARG`` names (``ARG`` empty: ``pinning.publish_to``)."""
    names = (
        [n for n in arg.split(",") if n] if arg else list(config.get("pinning", "publish_to") or [])
    )
    if not names:
        raise UsageError(
            "--to pinning needs a service: --to pinning:NAME, or list them in pinning.publish_to"
        )
    known = config.get("pinning", "services", default={}) or {}
    for n in names:
        if n not in known:
            raise UsageError(
                f"--to pinning:{n}: no service {n!r} under pinning.services in the configuration "
                f"(known: {', '.join(sorted(known)) or 'none'}); see docs/online.md"
            )
    if len(set(names)) != len(names):
        raise UsageError(f"--to pinning:{','.join(names)}: a service is named twice")
    return names


def _read_token(service: str, settings: Mapping[str, Any], env: Mapping[str, str]) -> str:
    token_file = settings.get("token_file")
    if token_file:
        path = Path(str(token_file)).expanduser()
        try:
            mode = path.stat().st_mode
            if mode & (stat.S_IRWXG | stat.S_IRWXO):
                raise UsageError(
                    f"pinning service {service}: token file {path} can be read by others "
                    f"(mode {stat.S_IMODE(mode):o}); run chmod 600 {path}"
                )
            lines = path.read_text("utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(
                f"pinning service {service}: token file {path} unreadable "
                f"({type(exc).__name__}); give a UTF-8 text file holding the token"
            ) from None
        token = lines[0].strip() if lines else ""
        if not token:
            raise UsageError(f"pinning service {service}: token file {path} is empty")
        return token
    var = token_env_name(service)
    token = str(env.get(var, "")).strip()
    if not token:
        raise UsageError(
            f"pinning service {service}: no access token: set token_file in its configuration "
            f"or the environment variable {var}"
        )
    return token


def load_service(config: Config, name: str, env: Mapping[str, str]) -> PinningService:
    """One configured service with its client (token read now, kept only in the client)."""
    settings = (config.get("pinning", "services", default={}) or {})[name]
    token = _read_token(name, settings, env)
    timeout = float(settings.get("timeout_s", 30.0))
    client = PinningClient(
        name,
        str(settings["endpoint"]),
        token,
        timeout=timeout,
        # The service's own timeout per call, no retries (a POST of a pin is not
        # idempotent), and the command's network budget like every other client.
        settings=NetworkSettings(timeout_s=timeout, retries=0, command=config.command_budget),
    )
    return PinningService(
        name,
        client,
        deadline=float(settings.get("deadline_s", 3600.0)),
        update=str(settings.get("update", "auto")),
        cluster_api=settings.get("cluster_api"),
    )


def _staging_car_target(config: Config, options: TargetOptions[IpfsOptions]) -> CarTarget:
    """``pinning.via: car``: the CARs and the record go to STATE_DIR/pinning-car."""
    from odfweb3.backends import open_target

    target = open_target(f"car:{config.state_dir / 'pinning-car'}", config, options)
    assert isinstance(target, CarTarget)
    return target


def open_pinning_target(
    config: Config, options: TargetOptions[IpfsOptions], arg: str, node: IpfsNodeTarget | None
) -> PinningTarget[NodeExtra] | PinningTarget[CarExtra]:
    """``pinning:NAME[,NAME...]``: the node target plus the named services."""
    services = [load_service(config, n, options.env) for n in service_names(config, arg)]
    states = StateStore(config.state_dir)
    notify = options.notify or (lambda text: None)
    if config.get("pinning", "via", default="node") == "car":
        car = _staging_car_target(config, options)
        return PinningTarget(car, services, states, notify=notify)
    assert node is not None
    return PinningTarget(node, services, states, notify=notify)
