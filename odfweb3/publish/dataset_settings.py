"""What this machine remembers about a dataset: ``<state dir>/datasets/<key>/settings.json``.

Keyed by the dataset ID (``did:odf``), not by its directory: a dataset moved, renamed or
opened through another path is the same dataset, and nothing is written into the dataset
directory (it belongs to kamu or whoever made it, and a copy of it would carry the mark
to a machine that never published it). One small JSON document per dataset, replaced
whole (:func:`odfweb3.atomic_file.write_file_atomic`), read bounded; three levels deep so
the publish states' ``<state dir>/*/*.json`` never list it.

It holds whether the dataset was published encrypted, or as an ArFS private drive (when,
and to which target first), which makes every later publish encrypted, or refused without
``--arfs-private`` (:func:`odfweb3.crypto.policy.decide_encryption`). docs/design.md,
"State files".
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from odfweb3.atomic_file import write_file_atomic
from odfweb3.errors import FormatError, NotFound
from odfweb3.foreign_json import read_foreign_json_file

__all__ = [
    "DatasetSettings",
    "DatasetSettingsStore",
    "decode_dataset_settings",
    "encode_dataset_settings",
]

SETTINGS_VERSION: Final = 1
_MAX_SIZE: Final = 64 << 10


@dataclass(frozen=True)
class DatasetSettings:
    """This machine's settings of one dataset.

    Attributes:
        dataset_id: ``did:odf:…``.
        encrypted_since: when it was first published encrypted (ISO 8601), or None.
        first_encrypted_target: the target of that publish.
        private_drive_since: when it was first published as an ArFS private drive.
        first_private_target: the target of that publish.
    """

    dataset_id: str
    encrypted_since: str | None = None
    first_encrypted_target: str | None = None
    private_drive_since: str | None = None
    first_private_target: str | None = None

    @property
    def encrypted(self) -> bool:
        """Every publish of it is encrypted (unless confirmed otherwise)."""
        return self.encrypted_since is not None

    @property
    def private_drive(self) -> bool:
        """It was published as an ArFS private drive."""
        return self.private_drive_since is not None


def encode_dataset_settings(settings: DatasetSettings) -> bytes:
    """The file's bytes (sorted keys, absent facts left out)."""
    doc: dict[str, object] = {"version": SETTINGS_VERSION, "datasetId": settings.dataset_id}
    if settings.encrypted_since is not None:
        doc["encrypted"] = {
            "since": settings.encrypted_since,
            "firstTarget": settings.first_encrypted_target,
        }
    if settings.private_drive_since is not None:
        doc["arfsPrivate"] = {
            "since": settings.private_drive_since,
            "firstTarget": settings.first_private_target,
        }
    return (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode("utf-8")


def decode_dataset_settings(raw: object, where: str) -> DatasetSettings:
    """Parse the file's JSON document.

    Raises:
        FormatError: not a settings document of this version, or a field of the wrong type.
    """
    if not isinstance(raw, dict) or raw.get("version") != SETTINGS_VERSION:
        raise FormatError(f"{where}: not an odfweb3 dataset settings file (version 1)")
    did = raw.get("datasetId")
    if not isinstance(did, str) or not did.startswith("did:odf:"):
        raise FormatError(f"{where}: datasetId is not a did:odf string")
    since, first = _since(raw, "encrypted", where)
    private_since, private_first = _since(raw, "arfsPrivate", where)
    return DatasetSettings(did, since, first, private_since, private_first)


def _since(raw: dict[str, object], key: str, where: str) -> tuple[str | None, str | None]:
    entry = raw.get(key)
    if entry is None:
        return None, None
    since = entry.get("since") if isinstance(entry, dict) else None
    first = entry.get("firstTarget") if isinstance(entry, dict) else None
    if not isinstance(since, str) or not (first is None or isinstance(first, str)):
        raise FormatError(f"{where}: {key}: expected {{since: text, firstTarget: text}}")
    return since, first


class DatasetSettingsStore:
    """The settings files under ``<state dir>/datasets/``."""

    def __init__(self, state_dir: Path) -> None:
        self.root = state_dir / "datasets"

    def path_for(self, dataset_id: str) -> Path:
        """Where the settings of ``dataset_id`` live (a hash: no remote value picks it)."""
        key = hashlib.sha256(dataset_id.encode()).hexdigest()[:24]
        return self.root / key / "settings.json"

    def load(self, dataset_id: str) -> DatasetSettings:
        """The settings (empty when there is no file).

        Raises:
            FormatError: the file is damaged; it names the file and what to do.
        """
        path = self.path_for(dataset_id)
        try:
            raw = read_foreign_json_file(path, max_bytes=_MAX_SIZE, expect=dict)
            settings = decode_dataset_settings(raw, str(path))
        except NotFound:
            return DatasetSettings(dataset_id)
        except FormatError as exc:
            raise FormatError(
                f"{exc}; fix or delete it (deleting forgets that {dataset_id} is published "
                "encrypted from here)"
            ) from None
        if settings.dataset_id != dataset_id:
            raise FormatError(
                f"{path}: holds the settings of {settings.dataset_id}, not {dataset_id}"
            )
        return settings

    def remember_encrypted(self, dataset_id: str, target: str, now: str) -> DatasetSettings:
        """Record that ``dataset_id`` is published encrypted (kept if already recorded)."""
        settings = self.load(dataset_id)
        if settings.encrypted:
            return settings
        settings = replace(settings, encrypted_since=now, first_encrypted_target=target)
        write_file_atomic(self.path_for(dataset_id), encode_dataset_settings(settings))
        return settings

    def remember_private_drive(self, dataset_id: str, target: str, now: str) -> DatasetSettings:
        """Record that ``dataset_id`` is published as an ArFS private drive (kept if so)."""
        settings = self.load(dataset_id)
        if settings.private_drive:
            return settings
        settings = replace(settings, private_drive_since=now, first_private_target=target)
        write_file_atomic(self.path_for(dataset_id), encode_dataset_settings(settings))
        return settings
