"""``odfweb3 name push``: make an offline publish's IPNS name resolvable without a node.

``publish --to car:DIR`` writes the signed record ``DIR/<name>.ipns-record``. ``name push``
sends those exact bytes to a delegated routing endpoint (IPIP-379, ``PUT
/routing/v1/ipns/{name}``; see :mod:`odfweb3_ipfs.client.routing_v1`), then reads the name
back from the same endpoint and checks that it serves our record::

    odfweb3 name push car:./out --routing http://127.0.0.1:8080
    odfweb3 name push ./out/k51….ipns-record            # endpoint from config ipfs.routing

The record is verified before it leaves (signature, name, validity): an expired or foreign
record is refused locally.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from odfweb3.errors import UsageError

if TYPE_CHECKING:
    from odfweb3.backends import NamePusher
    from odfweb3.cli.main import Context

__all__ = ["push_record_file", "register"]


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the ``name`` commands to the CLI."""
    p = sub.add_parser(
        "name",
        parents=[common],
        help="IPNS names: push a pre-signed record to a delegated routing endpoint",
        description="Work with the IPNS records odfweb3 signs.",
    )
    nsub = p.add_subparsers(dest="name_command", metavar="SUBCOMMAND")
    nsub.required = True
    push = nsub.add_parser(
        "push",
        parents=[common],
        help="PUT a signed IPNS record to /routing/v1/ipns/NAME (no node needed)",
        description="Send the signed IPNS record of an offline publish (car:DIR, or a "
        "NAME.ipns-record file) unchanged to a delegated routing endpoint with HTTP PUT "
        "/routing/v1/ipns/NAME (IPIP-379), e.g. a Kubo gateway (Gateway.ExposeRoutingAPI) or "
        "someguy; then GET the name from the same endpoint and check it serves these bytes. "
        "The record is verified first (signature, name, validity).",
    )
    push.add_argument("source", help="car:DIR (its publish.json names the record) or a FILE")
    push.add_argument(
        "--routing",
        default=None,
        metavar="URL",
        help="the endpoint's base URL (default: config ipfs.routing / ODFWEB3_IPFS_ROUTING)",
    )
    push.add_argument(
        "--no-check", action="store_true", help="do not read the name back after the PUT"
    )
    push.set_defaults(handler=_push)


def _pusher() -> NamePusher:
    """The backend that pushes name records (IPFS), from the registry."""
    from odfweb3.backends import NamePusher, all_backends

    return next(b for b in all_backends() if isinstance(b, NamePusher))


def _push(args: argparse.Namespace, ctx: Context) -> int:
    url = args.routing or ctx.config.get("ipfs", "routing")
    if not url:
        raise UsageError(
            "name push: no routing endpoint; pass --routing URL or set ipfs.routing "
            "(ODFWEB3_IPFS_ROUTING)"
        )
    path, text = _pusher().record_file(args.source)
    done = push_record_file(ctx, path, text, str(url), check=not args.no_check)
    ctx.out.result(
        done,
        lambda: "\n".join(
            (
                f"  name         {done['name']}",
                f"  sequence     {done['sequence']}",
                f"  value        {done['value']}",
                f"  pushed to    {done['endpoint']}",
                f"  served       {done['served']}",
            )
        ),
    )
    return 0


def push_record_file(
    ctx: Context, path: Path, name_text: str, url: str, *, check: bool = True
) -> dict[str, Any]:
    """Verify the record in ``path`` for the name, PUT it to ``url``, read it back.

    Returns the JSON summary (``name``, ``sequence``, ``value``, ``endpoint``, ``recordBytes``,
    ``served``). Raises the errors the module docstring lists (one line each).
    """
    return _pusher().push_record(ctx.config, path, name_text, url, check=check)
