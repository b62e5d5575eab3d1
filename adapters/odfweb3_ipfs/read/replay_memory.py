"""The highest IPNS record sequence seen per name, to refuse replayed or equivocating records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from odfweb3.atomic_file import write_file_atomic
from odfweb3.crypto.keystore import Keystore
from odfweb3.errors import (
    FormatError,
    NotFound,
    ReplicaMismatch,
)
from odfweb3.foreign_json import read_foreign_json_file
from odfweb3_ipfs.formats.ipns import IpnsRecord
from odfweb3_ipfs.formats.libp2p_keys import IpnsName

__all__ = ["SEEN_FILE", "SequenceMemory", "sequence_floor"]

SEEN_FILE = "ipns-seen.json"

_MAX_BYTES = 16 << 20  # one small entry per IPNS name seen


class SequenceMemory:
    """The highest IPNS record sequence seen per name (a small JSON file), to catch replays.

    IPNS spec "Record Verification": of two valid records the higher sequence wins. A
    resolver that has seen sequence N refuses a record with a lower one (a node or gateway
    replaying an older, still validly signed, record) and a different record with the same
    sequence.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def _load(self) -> dict[str, Any]:
        try:
            data = read_foreign_json_file(self.path, max_bytes=_MAX_BYTES)
        except NotFound:
            return {}
        except FormatError as exc:
            raise FormatError(f"{exc}; delete it to start over") from None
        return data if isinstance(data, dict) else {}

    def check(self, name: str, record: IpnsRecord, *, source: str = "the node or gateway") -> None:
        """Refuse a record older than, or conflicting with, one seen before.

        Raises:
            ReplicaMismatch: a replayed or equivocating record (``source`` served it).
        """
        seen = self._load().get(name)
        if not isinstance(seen, dict):
            return
        seq = int(seen.get("sequence", -1))
        if record.sequence < seq:
            raise ReplicaMismatch(
                f"ipns://{name}: {source} served sequence {record.sequence} "
                f"({record.value_text}) but sequence {seq} was seen before: an older record "
                "replayed; use a newer copy (another node, gateway or directory)"
            )
        if record.sequence == seq and record.value_text != seen.get("value"):
            raise ReplicaMismatch(
                f"ipns://{name}: two different records with sequence {seq} "
                f"({seen.get('value')} and {record.value_text}); the key signed both: refusing"
            )

    def highest(self, name: str) -> tuple[int, str] | None:
        """The highest sequence remembered for ``name`` and its record's value, if any."""
        seen = self._load().get(name)
        if not isinstance(seen, dict) or not isinstance(seen.get("sequence"), int):
            return None
        return int(seen["sequence"]), str(seen.get("value", ""))

    def remember(self, name: str, record: IpnsRecord) -> None:
        """Store the record's sequence and value if it is the newest seen."""
        data = self._load()
        seen = data.get(name)
        if isinstance(seen, dict) and int(seen.get("sequence", -1)) >= record.sequence:
            return
        data[name] = {"sequence": record.sequence, "value": record.value_text}
        text = json.dumps(data, indent=1, sort_keys=True)
        write_file_atomic(self.path, text.encode("utf-8"))


def sequence_floor(
    name: IpnsName, keystore: Keystore, seen: SequenceMemory | None, label: str | None = None
) -> int | None:
    """The highest IPNS sequence this machine signed (its keystore entries' memory, for
    ``label`` or every label holding the name's key) or saw (``seen``) for ``name``.

    An offline publish takes its record's sequence from ``OUT_DIR/publish.json``, which
    others may write: an older copy of the directory restored, or ``publish.json`` deleted,
    would make the key sign a second, different record at a sequence already signed (IPNS
    spec "Record Verification": two valid records with one sequence are an equivocation
    resolvers cannot order). Nothing is signed at or below this floor, and ``name push``
    refuses a record below it.
    """
    pub = name.inlined_public_key()
    found: list[int] = []
    if pub is not None:
        labels = [label] if label is not None else keystore.labels_with(pub)
        found += [s for s in (keystore.highest_signed(lb, pub) for lb in labels) if s is not None]
    if seen is not None and (high := seen.highest(str(name))) is not None:
        found.append(high[0])
    return max(found) if found else None
