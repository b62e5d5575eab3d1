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
import os
import stat
from pathlib import Path
from typing import Any

from odfweb3.errors import BackendRejected, ConflictError, NotFound, UsageError

__all__ = ["push_record_file", "register"]

_SUFFIX = ".ipns-record"


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


def _record_file(source: str) -> tuple[Path, str]:
    """The record file and its IPNS name (text) for ``car:DIR`` or a file path."""
    from odfweb3.publish.state import load_summary_file
    from odfweb3_ipfs.formats.libp2p_keys import parse_ipns_name

    if source.startswith("car:"):
        out = Path(source[4:]).expanduser()
        state, _ = load_summary_file(out / "publish.json")
        if state is None:
            raise NotFound(f"{out}: no publish.json; publish --to car:{out} first")
        name = state.record.get("name")
        if not isinstance(name, str):
            raise NotFound(f"{out}/publish.json names no IPNS record; publish again")
        parsed = str(parse_ipns_name(name))  # a name, never a path
        return out / f"{parsed}{_SUFFIX}", parsed
    path = Path(source).expanduser()
    if not path.name.endswith(_SUFFIX):
        raise UsageError(
            f"{source}: give car:DIR or a NAME{_SUFFIX} file (its name is the IPNS name)"
        )
    return path, str(parse_ipns_name(path.name[: -len(_SUFFIX)]))


def _read_record(path: Path) -> bytes:
    from odfweb3_ipfs.formats.ipns import MAX_RECORD_SIZE

    try:
        # O_NONBLOCK: a FIFO put in place of the record must not hang us; then regular only.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with open(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise UsageError(f"{path}: not a regular file; give the .ipns-record file")
            data = f.read(MAX_RECORD_SIZE + 1)
    except FileNotFoundError:
        raise NotFound(f"{path}: no such record file") from None
    except OSError as exc:
        raise UsageError(f"{path}: unreadable ({type(exc).__name__})") from None
    if len(data) > MAX_RECORD_SIZE:
        raise UsageError(f"{path}: over {MAX_RECORD_SIZE} bytes, not an IPNS record")
    return data


def _push(args: argparse.Namespace, ctx: Any) -> int:
    url = args.routing or ctx.config.get("ipfs", "routing")
    if not url:
        raise UsageError(
            "name push: no routing endpoint; pass --routing URL or set ipfs.routing "
            "(ODFWEB3_IPFS_ROUTING)"
        )
    path, text = _record_file(args.source)
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
    ctx: Any, path: Path, name_text: str, url: str, *, check: bool = True
) -> dict[str, Any]:
    """Verify the record in ``path`` for the name, PUT it to ``url``, read it back.

    Returns the JSON summary (``name``, ``sequence``, ``value``, ``endpoint``, ``recordBytes``,
    ``served``). Raises the errors the module docstring lists (one line each).
    """
    from odfweb3_ipfs.client.routing_v1 import (
        get_ipns_record,
        ipns_url,
        put_ipns_record,
    )
    from odfweb3_ipfs.formats.ipns import verify_record
    from odfweb3_ipfs.formats.libp2p_keys import parse_ipns_name

    name = parse_ipns_name(name_text)
    raw = _read_record(path)
    ours = verify_record(raw, name)  # signature, name binding, validity: before it leaves
    timeout = ctx.config.get("ipfs", "timeout")
    timeout = float(timeout) if timeout is not None else None
    network = ctx.config.network
    target = ipns_url(url, name)
    put_ipns_record(url, name, raw, timeout=timeout, settings=network)
    served = "not checked"
    if check:
        back = get_ipns_record(url, name, timeout=timeout, settings=network)
        if back is None:
            raise BackendRejected(
                f"{target}: the endpoint accepted the record but does not serve the name; "
                "check that it stores records (Kubo: Routing.Type)",
                404,
                "not served after put",
            )
        if back != raw:
            theirs = verify_record(back, name)
            if theirs.sequence > ours.sequence:
                raise ConflictError(
                    f"{target} serves a newer record (sequence {theirs.sequence} > "
                    f"{ours.sequence}): someone published this name after this record; "
                    "publish again to build on it"
                )
            raise BackendRejected(
                f"{target} accepted the record but serves another one (sequence "
                f"{theirs.sequence}); see the endpoint's log",
                200,
                "served record differs",
            )
        served = "ours (same bytes)"
    return {
        "name": str(name),
        "sequence": ours.sequence,
        "value": ours.value_text,
        "endpoint": target,
        "recordBytes": len(raw),
        "served": served,
    }
