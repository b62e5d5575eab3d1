"""Batched publishing: queue updates now, post them as one upload later.

``publish --batch`` validates the dataset and plans against the target (nothing
is sent) and queues the dataset; ``publish --flush`` publishes every queued
dataset of a target once. Because every publish sends the delta between what the
target holds and the local head, one flush covers all the updates queued since
the last post in a single upload (on Arweave: one bundle, one L1 transaction).

The deltas are kept where they already are: in the local dataset, whose objects
are immutable and content-addressed. The queue only records which dataset (path
and ID), for which target, and the heads queued — a flush refuses a dataset whose
head no longer descends from the last queued one (it was rewritten meanwhile).
The queue file lives in the state directory, written atomically.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from odfweb3.atomic_file import write_file_atomic
from odfweb3.errors import FormatError, NotFound
from odfweb3.foreign_json import read_foreign_json_file

__all__ = ["BatchQueue", "QueuedDataset"]

_MAX_BYTES = 16 << 20  # the queue file, read bounded


@dataclass(frozen=True)
class QueuedDataset:
    """One dataset waiting to be published to one target."""

    dataset: str
    dataset_id: str
    target: str
    heads: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        """On-disk form."""
        return {
            "dataset": self.dataset,
            "datasetId": self.dataset_id,
            "target": self.target,
            "heads": list(self.heads),
        }


class BatchQueue:
    """The queue of batched publishes, one JSON file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> list[QueuedDataset]:
        """Every queued entry."""
        try:
            data = read_foreign_json_file(
                self.path, what=f"{self.path}: batch queue", max_bytes=_MAX_BYTES
            )
        except NotFound:
            return []
        try:
            return [
                QueuedDataset(
                    str(e["dataset"]), str(e["datasetId"]), str(e["target"]), tuple(e["heads"])
                )
                for e in data["queued"]
            ]
        except (KeyError, TypeError) as exc:
            raise FormatError(f"{self.path}: malformed batch queue ({exc})") from None

    def _save(self, entries: list[QueuedDataset]) -> None:
        doc = {"queued": [e.to_json() for e in entries]}
        write_file_atomic(self.path, json.dumps(doc, indent=1).encode("utf-8"))

    def add(self, dataset: str, dataset_id: str, target: str, head: str) -> QueuedDataset:
        """Queue ``head`` of a dataset for a target; returns the updated entry."""
        entries = self.load()
        for i, e in enumerate(entries):
            if e.dataset_id == dataset_id and e.target == target:
                heads = e.heads if e.heads and e.heads[-1] == head else (*e.heads, head)
                entries[i] = QueuedDataset(dataset, dataset_id, target, heads)
                self._save(entries)
                return entries[i]
        entry = QueuedDataset(dataset, dataset_id, target, (head,))
        self._save([*entries, entry])
        return entry

    def for_target(self, target: str, dataset_id: str | None = None) -> list[QueuedDataset]:
        """Entries queued for ``target`` (optionally one dataset)."""
        return [
            e
            for e in self.load()
            if e.target == target and (dataset_id is None or e.dataset_id == dataset_id)
        ]

    def remove(self, entry: QueuedDataset) -> None:
        """Drop an entry once it has been published."""
        entries = [
            e
            for e in self.load()
            if not (e.dataset_id == entry.dataset_id and e.target == entry.target)
        ]
        self._save(entries)
