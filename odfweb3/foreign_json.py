"""One loader for every JSON document that comes from outside.

``publish.json`` of a ``car:DIR`` / ``bundle:DIR``, Arweave records and manifests,
discovery descriptors, key envelopes, node and gateway RPC answers: all are hostile
input. :func:`load_foreign_json` bounds and checks such a document before Python's
``json`` module sees it, so every failure is one :class:`~odfweb3.errors.FormatError`
line naming the document:

- **size**: at most ``max_bytes`` (the caller's budget for that document);
- **UTF-8**: strict (RFC 8259 section 8.1), no lone surrogates; a BOM is refused;
- **depth**: arrays and objects nested at most ``max_depth`` (default 64) deep,
  counted by a linear scan *before* parsing, so ``[[[[…`` a million deep is refused in
  time proportional to its size instead of a ``RecursionError`` in the parser;
- **syntax**: strict JSON (no ``NaN`` / ``Infinity``), one document, nothing after it;
- **shape**: optionally the top-level type (``expect=dict``).
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any, Final

from odfweb3.errors import FormatError, NotFound

__all__ = ["DEFAULT_MAX_DEPTH", "check_depth", "load_foreign_json", "read_foreign_json_file"]

DEFAULT_MAX_DEPTH: Final = 64

# A JSON string: quote, then any run of non-quote non-backslash bytes or escapes.
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def check_depth(data: bytes, max_depth: int, what: str) -> None:
    """Refuse ``data`` whose arrays/objects nest deeper than ``max_depth`` (linear time).

    Brackets inside strings do not count; an unterminated string is left for the parser
    to refuse (its brackets may then count, which can only refuse earlier).
    """
    pieces = data.split(b'"') if b"\\" not in data else []
    if len(pieces) % 2 == 1:
        # No escapes and every string closed (every document odfweb3 writes): strings are
        # the odd pieces between quotes; C-speed splits instead of a regex over megabytes
        # of publish state.
        brackets = b"".join(pieces[0::2]).translate(None, _NOT_BRACKET)
    else:
        brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKET)
    depth = 0
    for b in brackets:
        if b in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > max_depth:
                raise FormatError(
                    f"{what}: JSON nested deeper than {max_depth} levels; not a document "
                    "odfweb3 writes"
                )
        else:
            depth -= 1


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def load_foreign_json(
    data: bytes | bytearray | memoryview,
    *,
    what: str,
    max_bytes: int,
    max_depth: int = DEFAULT_MAX_DEPTH,
    expect: type | None = None,
) -> Any:
    """Parse a JSON document read from outside, bounded and checked first.

    Args:
        data: the raw bytes as read (the caller reads at most ``max_bytes + 1``).
        what: names the document in errors (a path, a URL, "the upload record").
        max_bytes: size budget.
        max_depth: nesting budget.
        expect: the required top-level type (``dict`` or ``list``), if any.

    Raises:
        FormatError: too large, not UTF-8, too deep, not JSON, or not of type ``expect``.
    """
    raw = bytes(data)
    if len(raw) > max_bytes:
        raise FormatError(f"{what}: larger than {max_bytes} bytes; refused before parsing")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{what}: not UTF-8 (byte {exc.start}); not a JSON document") from None
    if text.startswith("\ufeff"):
        raise FormatError(f"{what}: starts with a byte-order mark; not a JSON document")
    check_depth(raw, max_depth, what)
    try:
        doc = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        msg = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise FormatError(f"{what}: not JSON ({msg[:100]})") from None
    if expect is not None and not isinstance(doc, expect):
        raise FormatError(f"{what}: a JSON {expect.__name__} was expected")
    return doc


def read_foreign_json_file(
    path: Path,
    *,
    what: str | None = None,
    max_bytes: int,
    max_depth: int = DEFAULT_MAX_DEPTH,
    expect: type | None = None,
) -> Any:
    """:func:`load_foreign_json` of a file, read bounded: at most ``max_bytes + 1`` bytes.

    The file must be a regular file (not a directory, FIFO or device; a symbolic link
    is not followed), so a ``publish.json`` pointing at ``/dev/zero`` or a 3 GB file costs
    nothing.

    Raises:
        NotFound: the file does not exist.
        FormatError: not a regular file, unreadable, or refused by :func:`load_foreign_json`.
    """
    name = what or str(path)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise NotFound(f"{name}: no such file") from None
    except OSError as exc:
        raise FormatError(f"{name}: cannot be read ({exc.strerror}); not a regular file?") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FormatError(f"{name}: not a regular file")
        chunks: list[bytes] = []
        left = max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise FormatError(f"{name}: cannot be read ({exc.strerror})") from None
    finally:
        os.close(fd)
    return load_foreign_json(
        b"".join(chunks), what=name, max_bytes=max_bytes, max_depth=max_depth, expect=expect
    )
