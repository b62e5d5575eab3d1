"""Pushing an offline publish's signed IPNS record to a delegated routing endpoint.

``publish --to car:DIR`` writes ``DIR/<name>.ipns-record``; :func:`push_record_file` sends
those exact bytes with ``PUT /routing/v1/ipns/{name}`` (IPIP-379,
:mod:`odfweb3_ipfs.client.routing_v1`) and reads the name back from the same endpoint. The
record is verified before it leaves (signature, name, validity). Used by ``odfweb3 name
push`` and ``publish --to car:DIR --routing URL`` through the backend registry.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from odfweb3.config import Config
from odfweb3.crypto.keystore import Keystore
from odfweb3.errors import BackendRejected, ConflictError, NotFound, ReplicaMismatch, UsageError
from odfweb3.publish.state import load_summary_file
from odfweb3_ipfs.client.routing_v1 import get_ipns_record, ipns_url, put_ipns_record
from odfweb3_ipfs.formats.ipns import MAX_RECORD_SIZE, verify_record
from odfweb3_ipfs.formats.libp2p_keys import parse_ipns_name
from odfweb3_ipfs.publish.state import parse_ipns_facts
from odfweb3_ipfs.read.replay_memory import SEEN_FILE, SequenceMemory, sequence_floor

__all__ = ["RECORD_SUFFIX", "push_record_file", "read_record", "record_file"]

RECORD_SUFFIX = ".ipns-record"


def record_file(source: str) -> tuple[Path, str]:
    """The record file and its IPNS name (text) for ``car:DIR`` or a file path."""
    if source.startswith("car:"):
        out = Path(source[4:]).expanduser()
        state, _ = load_summary_file(out / "publish.json")
        if state is None:
            raise NotFound(f"{out}: no publish.json; publish --to car:{out} first")
        name = parse_ipns_facts(state.record, str(out / "publish.json")).name
        if name is None:
            raise NotFound(f"{out}/publish.json names no IPNS record; publish again")
        parsed = str(parse_ipns_name(name))  # a name, never a path
        return out / f"{parsed}{RECORD_SUFFIX}", parsed
    path = Path(source).expanduser()
    if not path.name.endswith(RECORD_SUFFIX):
        raise UsageError(
            f"{source}: give car:DIR or a NAME{RECORD_SUFFIX} file (its name is the IPNS name)"
        )
    return path, str(parse_ipns_name(path.name[: -len(RECORD_SUFFIX)]))


def read_record(path: Path) -> bytes:

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


def push_record_file(
    config: Config, path: Path, name_text: str, url: str, *, check: bool = True
) -> dict[str, Any]:
    """Verify the record in ``path`` for the name, PUT it to ``url``, read it back.

    Returns the JSON summary (``name``, ``sequence``, ``value``, ``endpoint``, ``recordBytes``,
    ``served``). Raises one-line errors: the record is invalid, the endpoint refuses
    it, serves none or another one.
    """

    name = parse_ipns_name(name_text)
    raw = read_record(path)
    ours = verify_record(raw, name)  # signature, name binding, validity: before it leaves
    seen = SequenceMemory(config.state_dir / SEEN_FILE)
    floor = sequence_floor(name, Keystore(config.keystore_dir), seen)
    if floor is not None and ours.sequence < floor:
        # An older record (a restored directory, a copy kept aside) would roll the name back
        # for every resolver that has not seen the newer one; an equivocating one at the
        # same sequence is refused by the seen memory's own check below.
        raise ConflictError(
            f"{path}: sequence {ours.sequence} ({ours.value_text}), but sequence {floor} was "
            f"signed or seen here for ipns://{name}: refusing to push an older record; push "
            "the newest one (publish again to sign one)"
        )
    try:
        seen.check(str(name), ours, source=str(path))
    except ReplicaMismatch as exc:
        raise ConflictError(f"{exc}; not pushed") from None
    timeout = config.get("ipfs", "timeout")
    timeout = float(timeout) if timeout is not None else None
    network = config.network
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
