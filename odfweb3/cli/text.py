"""Small pieces of human output shared by the commands.

- :func:`plural`: ``1 block``, ``2 blocks`` (never ``1 blocks`` or ``block(s)``);
- :func:`objects_text`: the glossary's one count of objects, with its parts;
- :func:`shown_path`: one path style everywhere: relative to the working directory
  when under it, else absolute;
- :func:`key_values`: aligned ``key  value`` lines that skip empty values (no ``None``)
  and put a human size beside each raw byte count, and the amount in AR beside a cost
  in winston (``--json`` keeps the bare integers: every number a number).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

from odfweb3.cli.output import format_bytes

if TYPE_CHECKING:  # the parser loads no core module
    from odfweb3.odf.chain import ObjectCount

__all__ = ["format_winston", "key_values", "objects_text", "plural", "shown_path", "shown_target"]

_IRREGULAR = {"entry": "entries", "copy": "copies"}


def plural(n: int, noun: str) -> str:
    """``n`` and ``noun``, pluralised when ``n`` is not 1 (``"3 new blocks"``)."""
    if n == 1:
        return f"{n} {noun}"
    head, _, last = noun.rpartition(" ")
    many = _IRREGULAR.get(last, last + "s")
    return f"{n} {head + ' ' if head else ''}{many}"


def objects_text(count: ObjectCount) -> str:
    """``19 objects (7 blocks, 3 data files, 3 checkpoints, 6 linked objects)``: the count
    every command says (docs/concepts.md, "Words"), its parts that are not 0 after it."""
    parts = [
        plural(n, noun)
        for n, noun in (
            (count.blocks, "block"),
            (count.data_files, "data file"),
            (count.checkpoints, "checkpoint"),
            (count.linked, "linked object"),
        )
        if n
    ]
    return plural(count.total, "object") + (f" ({', '.join(parts)})" if parts else "")


def shown_path(path: str | os.PathLike[str], cwd: Path | None = None) -> str:
    """A local path as the CLI prints it: relative to ``cwd`` when under it, else absolute."""
    absolute = Path(path).absolute()
    base = (cwd or Path.cwd()).absolute()
    try:
        rel = absolute.relative_to(base)
    except ValueError:
        return str(absolute)
    return str(rel) if str(rel) != "." else "."


def _offline(name: str) -> bool:
    from odfweb3.backends import target_traits

    return target_traits(name).offline


def shown_target(name: str, cwd: Path | None = None) -> str:
    """A target or replica name with its local directory in :func:`shown_path` style."""
    kind, sep, arg = name.partition(":")
    if sep and arg and _offline(name):
        return f"{kind}:{shown_path(arg, cwd)}"
    return name


def _is_byte_count(key: str, value: object) -> bool:
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and ("bytes" in key.lower() or key.lower() == "size")
    )


def _is_winston(key: str, value: object) -> bool:
    # A price is Arweave's, in winston (its only paid network): ``cost``, ``winston``.
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and (key.lower() == "cost" or key.lower().endswith("winston"))
    )


WINSTON_PER_AR = 10**12


def format_winston(winston: int, unit: str = "winston") -> str:
    """``"123 winston (0.000000000123 AR)"``: a cost as people read it; ``unit="winc"``:
    Turbo credits, on the same scale (10^12 winc = 1 credit)."""
    whole = Decimal(winston) / WINSTON_PER_AR
    return f"{winston} {unit} ({whole:.12f} {'credits' if unit == 'winc' else 'AR'})"


def key_values(items: Iterable[tuple[str, object]], indent: str = "  ") -> list[str]:
    """Aligned ``key value`` lines; None and empty values are left out, sizes made human."""
    kept = [(k, v) for k, v in items if v is not None and v != "" and v != [] and v != {}]
    width = max((len(k) for k, _ in kept), default=0)
    lines = []
    for key, value in kept:
        if _is_byte_count(key, value):
            assert isinstance(value, int)
            text = f"{value} ({format_bytes(value)})"
        elif _is_winston(key, value):
            assert isinstance(value, int)
            text = format_winston(value)
        elif isinstance(value, bool):
            text = "yes" if value else "no"
        elif isinstance(value, dict):
            text = ", ".join(f"{k}={v}" for k, v in value.items())
        elif isinstance(value, list | tuple):
            text = ", ".join(str(v) for v in value)
        else:
            text = str(value)
        lines.append(f"{indent}{key:<{width}}  {text}")
    return lines
