"""Arweave path manifests (``arweave/paths``), so gateways serve ``/{manifest}/refs/head``.

Format (ArweaveTeam/arweave ``doc/path-manifest-schema.md``)::

    {"index": {"path": "<path>"},            optional; must name a key of "paths"
     "manifest": "arweave/paths",
     "paths": {"<path>": {"id": "<43-char base64url item id>"}, ...},
     "version": "0.1.0"}

served with ``Content-Type: application/x.arweave-manifest+json``. We write version 0.1.0
(arlocal resolves only 0.1.0; gateways supporting 0.2.0 read it too) and read 0.1.0 and
0.2.0 (which adds ``fallback`` and lets ``index`` carry an ``id``).

Two kinds (docs/arweave.md, section 9). A *full* manifest maps every path of the
dataset, old paths to the items of earlier uploads, so it alone describes the whole dataset
at its head: the first upload's, every upload before delta manifests existed, and a
consolidation. A *delta* manifest maps only the paths its upload added (new objects and
``refs/head``): its item and its upload record carry ``ODF-Full-Manifest`` (the last full
manifest's id), and readers find older paths in earlier uploads' manifests, walking at most
:data:`MAX_DELTA_UPLOADS` of them; a publisher writes a full manifest before a chain of
deltas would get longer.

Encoding is deterministic: sorted keys, no whitespace, ASCII-only JSON. Decoding refuses
paths a gateway could resolve surprisingly (``..``, ``.``, absolute, empty segments,
backslashes) and ids that are not 43 base64url characters.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from odfweb3.errors import FormatError
from odfweb3.foreign_json import load_foreign_json

__all__ = [
    "FULL_MANIFEST_TAG",
    "MANIFEST_CONTENT_TYPE",
    "MANIFEST_TYPE",
    "MANIFEST_VERSION",
    "MAX_DELTA_UPLOADS",
    "PathManifest",
    "check_manifest_path",
    "decode_manifest",
    "encode_manifest",
    "encode_manifest_chunks",
    "in_path_order",
]

MANIFEST_TYPE: Final = "arweave/paths"
MANIFEST_VERSION: Final = "0.1.0"
MANIFEST_CONTENT_TYPE: Final = "application/x.arweave-manifest+json"
# On a delta manifest's item and its upload record: the id of the last full manifest.
FULL_MANIFEST_TAG: Final = "ODF-Full-Manifest"
# The longest chain of delta uploads after a full manifest: readers walk at most this many
# upload records (each signature-checked) and refuse a longer one; publishers write a full
# manifest instead of the delta that would make it longer.
MAX_DELTA_UPLOADS: Final = 10_000
_READ_VERSIONS: Final = ("0.1.0", "0.2.0")
_ID = re.compile(r"[A-Za-z0-9_-]{43}")


@dataclass(frozen=True)
class PathManifest:
    """A path manifest.

    Attributes:
        paths: path -> item id (base64url).
        index: the path served at the manifest's root, if any.
        fallback: (0.2.0 only, read not written) item id served for unknown paths.
    """

    paths: Mapping[str, str]
    index: str | None = None
    fallback: str | None = field(default=None, compare=False)

    def resolve(self, path: str) -> str:
        """The item id of ``path``.

        Raises:
            KeyError: the manifest has no such path.
        """
        return self.paths[path]


# A control character (below U+0020); one C-speed search instead of a Python loop per
# character: a manifest of every path checks 100,000s of them.
_CONTROL = re.compile(r"[\x00-\x1f]")


def check_manifest_path(path: object, where: str = "manifest") -> str:
    """Return ``path`` if it is a safe relative manifest path.

    Raises:
        FormatError: not text, absolute, with empty, ``.`` or ``..`` segments or backslashes.
    """
    if not isinstance(path, str) or not path:
        raise FormatError(f"{where}: a path is empty or not text")
    segments = path.split("/")
    if (
        path.startswith("/")
        or "\\" in path
        or any(s in ("", ".", "..") for s in segments)
        or _CONTROL.search(path) is not None
    ):
        raise FormatError(
            f"{where}: path {path[:80]!r} is absolute, has empty/'.'/'..' segments or "
            "control characters; refusing it"
        )
    return path


def _check_id(value: object, where: str) -> str:
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise FormatError(f"{where}: {str(value)[:60]!r} is not a 43-character base64url item id")
    return value


def encode_manifest(manifest: PathManifest) -> bytes:
    """Encode a manifest as version 0.1.0 JSON (deterministic bytes).

    Raises:
        FormatError: an unsafe path, a malformed id, or an index not among the paths.
    """
    paths = {
        check_manifest_path(p): {"id": _check_id(i, f"manifest path {p}")}
        for p, i in manifest.paths.items()
    }
    doc: dict[str, Any] = {"manifest": MANIFEST_TYPE, "version": MANIFEST_VERSION, "paths": paths}
    if manifest.index is not None:
        if manifest.index not in paths:
            raise FormatError(f"manifest index {manifest.index!r} is not one of its paths")
        doc["index"] = {"path": manifest.index}
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode("ascii")


def in_path_order(paths: Mapping[str, object]) -> Iterable[str]:
    """The keys of ``paths`` in sorted order: as it iterates when it says it iterates so
    (a true ``path_ordered`` attribute: a bundle's 300,000 added revisions, whose paths are
    made when asked, not held), else sorted."""
    return iter(paths) if getattr(paths, "path_ordered", False) is True else sorted(paths)


# The pieces encode_manifest_chunks yields: about this many characters each.
_PIECE_CHARS: Final = 1 << 20


def encode_manifest_chunks(
    paths: Iterable[tuple[str, str]], index: str | None = None
) -> Iterator[bytes]:
    """:func:`encode_manifest`'s bytes in pieces of about 1 MiB, from ``(path, id)`` pairs
    given in sorted path order: a first upload's full manifest maps every path (~90 bytes
    each as JSON, several times that as the dicts ``json`` is given), so neither the dict
    of every path nor the whole document is made. The same bytes: under ``sort_keys`` and
    these separators an object is ``{`` + its ``"key":value`` pairs in sorted key order
    joined by ``,`` + ``}``, and the document's keys sort as ``index``, ``manifest``,
    ``paths``, ``version``.

    Raises:
        FormatError: an unsafe path, a malformed id, paths out of order or repeated, or an
            index not among the paths (raised once the pieces before it were yielded: the
            caller discards them).
    """
    head = "{"
    if index is not None:
        head += '"index":{"path":' + json.dumps(index) + "},"
    head += f'"manifest":{json.dumps(MANIFEST_TYPE)},"paths":{{'
    piece, size = [head], len(head)
    last: str | None = None
    found = index is None
    for path, item_id in paths:
        check_manifest_path(path)
        if last is not None and path <= last:
            raise FormatError(f"manifest path {path[:80]!r}: not in sorted order")
        entry = (
            json.dumps(path)
            + ':{"id":'
            + json.dumps(_check_id(item_id, f"manifest path {path}"))
            + "}"
        )
        piece.append(entry if last is None else "," + entry)
        size += len(entry) + 1
        last = path
        found = found or path == index
        if size >= _PIECE_CHARS:
            yield "".join(piece).encode("ascii")
            piece, size = [], 0
    if not found:
        raise FormatError(f"manifest index {index!r} is not one of its paths")
    piece.append(f'}},"version":{json.dumps(MANIFEST_VERSION)}}}')
    yield "".join(piece).encode("ascii")


def decode_manifest(data: bytes, where: str = "manifest") -> PathManifest:
    """Parse and check a path manifest (versions 0.1.0 and 0.2.0).

    Raises:
        FormatError: not JSON, not ``arweave/paths``, an unknown version, an unsafe path,
            an id that is not 43 base64url characters, or an index naming no path.
    """
    doc = load_foreign_json(data, what=where, max_bytes=len(data))  # bounded by its reader
    if not isinstance(doc, dict) or doc.get("manifest") != MANIFEST_TYPE:
        raise FormatError(f"{where}: not an {MANIFEST_TYPE} manifest")
    if doc.get("version") not in _READ_VERSIONS:
        raise FormatError(
            f"{where}: manifest version {str(doc.get('version'))[:20]!r} is not one of "
            f"{', '.join(_READ_VERSIONS)}"
        )
    raw_paths = doc.get("paths")
    if not isinstance(raw_paths, dict):
        raise FormatError(f"{where}: 'paths' is not an object")
    paths: dict[str, str] = {}
    for path, entry in raw_paths.items():
        check_manifest_path(path, where)
        if not isinstance(entry, dict):
            raise FormatError(f"{where}: entry of {path[:80]!r} is not an object")
        paths[path] = _check_id(entry.get("id"), f"{where}: path {path[:80]}")
    index: str | None = None
    if "index" in doc:
        raw_index = doc["index"]
        if not isinstance(raw_index, dict):
            raise FormatError(f"{where}: 'index' is not an object")
        if "path" in raw_index:
            index = check_manifest_path(raw_index["path"], where)
            if index not in paths:
                raise FormatError(f"{where}: index path {index[:80]!r} is not one of its paths")
        elif doc["version"] == "0.1.0" or "id" not in raw_index:
            raise FormatError(f"{where}: 'index' has no path")
        else:
            _check_id(raw_index["id"], f"{where}: index")
    fallback: str | None = None
    if "fallback" in doc:
        raw_fb = doc["fallback"]
        if doc["version"] == "0.1.0" or not isinstance(raw_fb, dict):
            raise FormatError(f"{where}: 'fallback' needs version 0.2.0 and an object")
        fallback = _check_id(raw_fb.get("id"), f"{where}: fallback")
    return PathManifest(paths, index, fallback)
