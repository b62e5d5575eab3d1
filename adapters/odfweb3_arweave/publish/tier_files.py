"""The publisher's binary counter beside its state: what each open tier's uploads added.

A tiered upload record lists what the uploads of its span added (:mod:`.bundle_plan`,
``plan_tier``), so the next record that consolidates tiers needs their files; kept in the
publish state they made it grow with every update since the full manifest (7.5 MB at
10,000 one-block updates, rewritten by every publish). The state keeps one small entry per
open tier (record id, head, delta count, span: O(log n) of them) and the SHA-256 of a *tier
file*, ``tier-<sha-256>.json``, written once when its tier is made, beside the target's
file index packs (the gateway target's ``<state>.index/``, ``bundle:DIR``'s ``OUT_DIR``),
and removed once no saved state names it (its tier was consolidated). A tier file holds
exactly the record's ``earlier`` and ``added`` maps without ``refs/head``: anything it
holds is derivable from the signed records themselves, which is how a second machine
rebuilds the counter (:func:`.bundle_plan.rebuilt_tiers`).

Read bounded and verified like every other local file a shared directory may hold: the
name is the content's hash, the bytes must hash to it, the JSON is read by the bounded
loader and every entry checked as a record's are. A tier file that is missing or does not
check out makes the counter unknown: the next record jumps to the previous one only
(correct, a reader walks a little further), never a wrong tier.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Final

from odfweb3.atomic_file import write_file_atomic
from odfweb3.errors import FormatError
from odfweb3.foreign_json import load_foreign_json
from odfweb3_arweave.formats.record import AddedFile, parse_added_files
from odfweb3_arweave.publish.bundle_plan import Tier, merged_tiers

__all__ = [
    "TIER_FORMAT",
    "decode_tier_files",
    "drop_tier_files",
    "encode_tier_files",
    "load_merged_tiers",
    "store_tiers",
    "tier_file_name",
]

TIER_FORMAT: Final = "odfweb3/tier-files/1"
# A tier of 8,192 one-block updates is about 6 MB; the record it copies is bounded by
# formats.record.MAX_RECORD_BODY (64 MiB) too.
_MAX_TIER_FILE: Final = 64 << 20
_NAME = re.compile(r"^tier-[0-9a-f]{64}\.json$")

TierFiles = tuple[tuple[str, AddedFile], ...]


def encode_tier_files(files: Sequence[tuple[str, AddedFile]]) -> bytes:
    """A tier file's bytes (deterministic: sorted keys, compact, ASCII)."""
    doc = {"format": TIER_FORMAT, "files": {p: a.to_json() for p, a in sorted(files)}}
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode("ascii")


def decode_tier_files(data: bytes, where: str) -> TierFiles:
    """The files of a tier file, checked as an upload record's ``added`` map is.

    Raises:
        FormatError: not a tier file, or an entry malformed.
    """
    doc = load_foreign_json(data, what=where, max_bytes=_MAX_TIER_FILE)
    if not isinstance(doc, dict) or doc.get("format") != TIER_FORMAT:
        raise FormatError(f"{where}: not an {TIER_FORMAT} document")
    return tuple(sorted(parse_added_files(doc.get("files"), "files", where).items()))


def tier_file_name(digest: str) -> str:
    """``tier-<sha-256 hex>.json``."""
    return f"tier-{digest}.json"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def store_tiers(directory: Path, tiers: tuple[Tier, ...] | None) -> tuple[Tier, ...] | None:
    """Write the tier file of every tier whose files are in hand and not stored yet (temp
    file, fsync, rename; public: a record's ids only) and name it in the tier; call before
    writing the state that names them. Tiers without files (the full upload's end of the
    chain) stay as they are."""
    if tiers is None:
        return None
    out: list[Tier] = []
    for tier in tiers:
        if tier.digest is None and tier.files:
            data = encode_tier_files(tier.files)
            digest = _digest(data)
            path = directory / tier_file_name(digest)
            if not path.is_file():
                write_file_atomic(path, data, public=True)
            tier = replace(tier, digest=digest)
        out.append(tier)
    return tuple(out)


def _load(directory: Path, digest: str) -> TierFiles:
    where = f"{directory}/{tier_file_name(digest)}"
    try:
        fd = os.open(directory / tier_file_name(digest), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise FormatError(f"{where}: cannot read it ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        data = f.read(_MAX_TIER_FILE + 1)
    if len(data) > _MAX_TIER_FILE or _digest(data) != digest:
        raise FormatError(f"{where}: its bytes are not the ones its name says")
    return decode_tier_files(data, where)


def load_merged_tiers(
    directory: Path | None, tiers: tuple[Tier, ...] | None
) -> tuple[Tier, ...] | None:
    """``tiers`` with the files of the tiers the next upload consolidates read from their
    tier files (:func:`.bundle_plan.merged_tiers`: only those are read); None (the counter
    unknown: the next record jumps to the previous one) when one is missing or does not
    check out."""
    if tiers is None:
        return None
    out = list(tiers)
    for i in range(merged_tiers(tiers)):
        tier = out[i]
        if tier.files is not None:
            continue
        if directory is None or tier.digest is None:
            return None
        try:
            out[i] = replace(tier, files=_load(directory, tier.digest))
        except FormatError:
            return None
    return tuple(out)


def drop_tier_files(directory: Path, keep: set[str], *, older_than: float | None = None) -> None:
    """Remove the tier files in ``directory`` whose digest no saved state names (their tiers
    were consolidated); best effort, after the state is written. ``older_than``: as
    :func:`odfweb3.publish.pack_index.drop_packs` (a state directory shared by concurrent
    publishers keeps what another one wrote since this publish began)."""
    names = {tier_file_name(d) for d in keep}
    with contextlib.suppress(OSError):
        for entry in os.scandir(directory):
            if not _NAME.match(entry.name) or entry.name in names:
                continue
            with contextlib.suppress(OSError):
                if older_than is None or entry.stat(follow_symlinks=False).st_mtime < older_than:
                    os.unlink(entry.path)
