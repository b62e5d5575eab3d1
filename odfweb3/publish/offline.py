"""Where this machine published offline: the ``car:DIR`` and ``bundle:DIR`` targets.

Offline targets keep their state in ``DIR/publish.json`` (the directory travels with
its CARs or bundle), so the state directory alone does not know them and ``status``
said "nothing published yet" after offline publishes. This index, one
small file in the state directory, remembers each (dataset, offline target) once;
``status`` reads each directory's own ``publish.json`` through it. A directory that
was moved or deleted is reported, not guessed at.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from odfweb3.atomic_file import write_file_atomic
from odfweb3.backends import target_traits
from odfweb3.errors import FormatError, OdfWeb3Error
from odfweb3.foreign_json import load_foreign_json
from odfweb3.publish.state import PublishState, load_summary_file

__all__ = ["INDEX_NAME", "OfflineEntry", "OfflineIndex", "known_states"]

INDEX_NAME: Final = "offline-targets.json"
_MAX_INDEX_BYTES: Final = 4 << 20


@dataclass(frozen=True)
class OfflineEntry:
    """One offline publish this machine made: its dataset, target (``car:/abs/dir``) and
    the local dataset directory it was published from."""

    dataset_id: str
    target: str
    source: str = ""

    @property
    def directory(self) -> Path:
        """The target's output directory."""
        return Path(self.target.partition(":")[2])


class OfflineIndex:
    """``<state dir>/offline-targets.json``: the offline targets published to from here."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / INDEX_NAME

    def entries(self) -> list[OfflineEntry]:
        """Every remembered (dataset, target), in the order first published.

        Raises:
            FormatError: the index is not what :meth:`remember` writes.
        """
        try:
            with open(self.path, "rb") as f:
                raw = f.read(_MAX_INDEX_BYTES + 1)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise FormatError(f"{self.path}: unreadable ({exc.strerror})") from None
        if len(raw) > _MAX_INDEX_BYTES:
            raise FormatError(f"{self.path}: larger than 4 MiB; move it away")
        try:
            data = load_foreign_json(raw, what=str(self.path), max_bytes=_MAX_INDEX_BYTES)
            return [
                OfflineEntry(str(e["datasetId"]), str(e["target"]), str(e.get("source", "")))
                for e in data["targets"]
            ]
        except (ValueError, KeyError, TypeError):
            raise FormatError(
                f"{self.path}: not an offline target index; move it away (status then "
                "forgets offline publishes until they are published again)"
            ) from None

    def remember(self, dataset_id: str, target: str, source: str) -> None:
        """Add (dataset, offline target) or update its source; atomically (temp + rename)."""
        if not target_traits(target).offline:
            return
        entries = self.entries()
        entry = OfflineEntry(dataset_id, target, source)
        if entry in entries:
            return
        entries = [e for e in entries if (e.dataset_id, e.target) != (dataset_id, target)]
        entries.append(entry)
        self._write(entries)

    def states(self) -> Iterator[tuple[OfflineEntry, PublishState | None, str | None]]:
        """Each entry with the state its directory's ``publish.json`` holds now.

        The state is None with a reason when the directory is gone, holds nothing, or
        holds another dataset.
        """
        for entry in self.entries():
            state, reason, _stale = _check(entry)
            yield entry, state, reason

    def forget_stale(self) -> list[tuple[OfflineEntry, str]]:
        """Remove the entries whose directory no longer holds their publish (``publish.json``
        gone, or now another dataset's); atomically. A ``publish.json`` that is there but
        unreadable is kept: it may be mended. Returns what was forgotten, with why."""
        keep: list[OfflineEntry] = []
        gone: list[tuple[OfflineEntry, str]] = []
        for entry in self.entries():
            _state, reason, stale = _check(entry)
            if stale:
                gone.append((entry, reason or ""))
            else:
                keep.append(entry)
        if gone:
            self._write(keep)
        return gone

    def _write(self, entries: list[OfflineEntry]) -> None:
        doc = {
            "targets": [
                {"datasetId": e.dataset_id, "target": e.target, "source": e.source} for e in entries
            ]
        }
        write_file_atomic(self.path, json.dumps(doc, indent=1).encode("utf-8"))


def _check(entry: OfflineEntry) -> tuple[PublishState | None, str | None, bool]:
    """The state ``entry``'s directory holds, else why not and whether that is final."""
    summary = entry.directory / "publish.json"
    try:
        state, _ = load_summary_file(summary)
    except OdfWeb3Error as exc:
        return None, str(exc), False
    if state is None:
        return None, f"{summary} is gone (moved or deleted?)", True
    if state.dataset_id != entry.dataset_id:
        return None, f"{summary} now holds {state.dataset_id}", True
    return state, None, False


def known_states(state_dir: Path, dataset_id: str) -> list[PublishState]:
    """This machine's publishes of ``dataset_id``: node targets (the private state file),
    then offline ones (found through the offline index)."""
    from odfweb3.publish.state import StateStore

    states = [s for s in StateStore(state_dir).all() if s.dataset_id == dataset_id]
    for entry, state, _ in OfflineIndex(state_dir).states():
        if state is not None and entry.dataset_id == dataset_id:
            states.append(state)
    return states
