"""Validation of a dataset: hashes, the Metadata Chain rules, and (deep) its objects.

Checked, each reported under its name: ``head`` (``refs/head`` exists and holds exactly
one multibase hash, no whitespace: kamu reads it as is), ``block-hash`` (every block's bytes
hash to its name, and so to the successor's ``prevBlockHash``), ``block-format`` (every block
decodes); then the Metadata Chain rules exactly as kamu checks them on append
(:mod:`odfweb3.odf.chain_rules`, its ``RULES`` table; ``docs/validation.md``), the
derivative rules that need the input chains
(:mod:`odfweb3.odf.lineage`), and with ``deep``: ``object-present`` (every data file and
checkpoint exists), ``object-size`` (with the size the block records), ``object-hash``
(and the physical hash the block records).

odfweb3 never claims to verify *logical* hashes (that needs the data engine).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from odfweb3.errors import FormatError, NotFound, OdfWeb3Error, ValidationFailed
from odfweb3.odf import lineage
from odfweb3.odf.chain import (
    ChainEntry,
    DatasetObject,
    ObjectCount,
    count_objects,
    iter_objects,
    walk_chain,
)
from odfweb3.odf.chain_rules import (
    RULES,
    ChainRulesBackwards,
    ChainState,
    RuleState,
    chain_state,
    check_chain_rules,
)
from odfweb3.odf.identity import DatasetId
from odfweb3.odf.layout import DatasetReader, ObjectKind, object_relpath
from odfweb3.odf.model_gen import AddData, ExecuteTransform, Seed
from odfweb3.odf.multihash import hash_fd, multihash_from_str, multihash_to_str
from odfweb3.odf.parquet_links import local_links
from odfweb3.odf.violation import Violation

if TYPE_CHECKING:
    from concurrent.futures import Future

__all__ = [
    "RULES",
    "ChainRulesBackwards",
    "ChainState",
    "RuleState",
    "ValidationReport",
    "Violation",
    "chain_state",
    "check_chain_rules",
    "require_valid",
    "validate_dataset",
]

ProgressFn = Callable[[int], None]


@dataclass(frozen=True)
class ValidationReport:
    """What validation found. ``objects_checked`` (deep only) is the glossary's count
    (``docs/concepts.md``, "Words"): the blocks, whose hashes every validation checks,
    and the data files, checkpoints and linked objects a deep one hashes; ``objects`` the
    same per kind."""

    path: str
    head: bytes | None
    dataset_id: DatasetId | None
    blocks: int
    objects_checked: int
    bytes_hashed: int
    deep: bool
    violations: tuple[Violation, ...] = field(default=())
    # deep only: paths in data/ that no block and no ObjectLink names (never published)
    orphans: tuple[str, ...] = field(default=())
    objects: ObjectCount = field(default=ObjectCount())

    @property
    def ok(self) -> bool:
        """True when no rule is broken."""
        return not self.violations

    def to_json(self) -> dict[str, object]:
        """JSON form for ``--json`` output."""
        return {
            "path": self.path,
            "ok": self.ok,
            "head": multihash_to_str(self.head) if self.head else None,
            "datasetId": str(self.dataset_id) if self.dataset_id else None,
            "blocks": self.blocks,
            "deep": self.deep,
            "objectsChecked": self.objects_checked,
            "objects": self.objects.to_json() if self.deep else None,
            "bytesHashed": self.bytes_hashed,
            "violations": [v.to_json() for v in self.violations],
            "orphans": list(self.orphans),
        }


def _check_object(reader: DatasetReader, obj: DatasetObject) -> tuple[list[str], int]:
    """Deep-check one data file or checkpoint: (problems as 'rule|message', bytes hashed)."""
    try:
        fd, st = reader.open_fd(obj.kind, obj.hash)
    except NotFound:
        return [f"object-present|{obj.path} is missing"], 0
    except FormatError as exc:
        return [f"object-present|{exc}"], 0
    try:
        size = st.st_size
        if obj.size is not None and size != obj.size:
            return [f"object-size|{obj.path} has {size} bytes, the block records {obj.size}"], 0
        actual, hashed = hash_fd(fd, obj.hash[0], regular=True)
    finally:
        os.close(fd)
    if actual != obj.hash:
        return [f"object-hash|{obj.path} hashes to {multihash_to_str(actual)}"], hashed
    return [], hashed


_ObjectKey = tuple[str, bytes, int | None]
_CheckResult = tuple[list[str], int]

# Objects go to the pool in batches, not one future per file: with 20,000 small
# files, waking the walking thread for every finished future (a lock hand-off and a
# GIL hand-off each) cost more CPU than the walk itself. A batch closes at whichever
# limit comes first; a few MiB keep both workers busy until the walk ends.
_BATCH_FILES = 128
_BATCH_BYTES = 8 << 20
# Batches in flight per worker before the walk waits for the pool. A window of all the
# chain (the walk done early, not throttled to the hashing rate) measured slightly less
# CPU but more wall time on this 2-core machine under load; 4 per worker stays.
_BATCHES_PER_WORKER = 4


def _check_batch(reader: DatasetReader, objs: list[DatasetObject]) -> list[_CheckResult]:
    """Deep-check a batch of objects on one worker thread, results in the batch's order."""
    return [_check_object(reader, obj) for obj in objs]


class _DeepChecks:
    """Object checks running on a thread pool, fed block by block during the walk.

    Objects are queued in batches (see ``_BATCH_FILES``); at most
    ``_BATCHES_PER_WORKER`` batches per worker are in flight; finished ones are kept
    as small (problems, bytes) tuples, so memory grows with the object count, not
    with pending work.
    """

    def __init__(self, reader: DatasetReader, workers: int) -> None:
        self._reader = reader
        # Imported here: concurrent.futures brings logging and queue to every start-up of a
        # command that imports this module but checks nothing deep (a publish's dry run).
        from concurrent.futures import ThreadPoolExecutor

        self._pool = ThreadPoolExecutor(max_workers=max(1, workers))
        self._window = _BATCHES_PER_WORKER * max(1, workers)
        self._batch: list[DatasetObject] = []
        self._batch_bytes = 0
        self._inflight: deque[tuple[list[DatasetObject], Future[list[_CheckResult]]]] = deque()
        self._done: dict[_ObjectKey, _CheckResult] = {}
        self._queued: set[_ObjectKey] = set()
        self._unreported = 0  # bytes hashed before the caller learnt the total

    def submit(self, entry: ChainEntry) -> None:
        """Queue the data file and checkpoint one block names (each object once)."""
        event = entry.block.event
        if not isinstance(event, AddData | ExecuteTransform):
            return
        # The same objects, in the same order, as chain.iter_objects yields for a block.
        data, checkpoint = event.new_data, event.new_checkpoint
        if data is not None and data.physical_hash is not None:
            self._queue("data", data.physical_hash, data.size)
        if checkpoint is not None and checkpoint.physical_hash is not None:
            self._queue("checkpoint", checkpoint.physical_hash, checkpoint.size)
        if len(self._batch) >= _BATCH_FILES or self._batch_bytes >= _BATCH_BYTES:
            self._flush()

    def _queue(self, kind: ObjectKind, mh: bytes, size: int) -> None:
        key = (kind, mh, size)
        if key not in self._queued:
            self._queued.add(key)
            self._batch.append(DatasetObject(kind, mh, size))
            self._batch_bytes += size

    def _flush(self) -> None:
        if self._batch:
            batch = self._batch
            self._inflight.append((batch, self._pool.submit(_check_batch, self._reader, batch)))
            self._batch = []
            self._batch_bytes = 0
        while len(self._inflight) > self._window:
            self._settle()

    def _settle(self) -> None:
        batch, fut = self._inflight.popleft()
        done = self._done
        for obj, result in zip(batch, fut.result(), strict=True):
            done[(obj.kind, obj.hash, obj.size)] = result
            self._unreported += result[1]

    def results(
        self, objs: Sequence[DatasetObject], progress: ProgressFn | None
    ) -> Iterator[_CheckResult]:
        """Results for ``objs`` in their order (checking any not queued yet)."""
        self._flush()
        while self._inflight:
            if progress is not None and self._unreported:
                progress(self._unreported)
                self._unreported = 0
            self._settle()
        if progress is not None and self._unreported:
            progress(self._unreported)
        self._unreported = 0
        for obj in objs:
            key = (obj.kind, obj.hash, obj.size)
            result = self._done.get(key)
            if result is None:
                result = _check_object(self._reader, obj)
                if progress is not None and result[1]:
                    progress(result[1])
            yield result

    def close(self) -> None:
        """Stop the pool; unstarted checks are cancelled (e.g. on KeyboardInterrupt)."""
        self._pool.shutdown(wait=True, cancel_futures=True)


def validate_dataset(
    path: str | os.PathLike[str],
    *,
    deep: bool = False,
    progress: ProgressFn | None = None,
    on_total: ProgressFn | None = None,
    workers: int | None = None,
    inputs: Mapping[DatasetId | str | bytes, str | os.PathLike[str]]
    | Sequence[str | os.PathLike[str]]
    | None = None,
) -> ValidationReport:
    """Validate the dataset at ``path``; never modifies it.

    Args:
        path: the dataset directory.
        deep: also check every data file and checkpoint (existence, size, hash).
        progress: called with the number of bytes just hashed (for progress bars).
        on_total: called once with the total bytes a deep check will hash.
        workers: threads hashing data files in parallel (default: CPU count).
        inputs: for a derivative, input dataset directories (or a mapping from
            dataset ID to directory): each consumed interval is then checked
            against the input's chain and data offsets. Inputs not given are
            not checked.

    Returns:
        The report; ``report.ok`` is False when any rule is broken. A directory that
        is not a dataset at all raises :class:`NotFound` instead.
    """
    reader = DatasetReader.open(path)
    violations: list[Violation] = []
    try:
        head = reader.head()
    except (NotFound, FormatError) as exc:
        return ValidationReport(
            str(reader.root), None, None, 0, 0, 0, deep, (Violation("head", str(exc)),)
        )
    entries: list[ChainEntry] = []
    # Deep: hash data files and checkpoints on a thread pool *while* the chain is
    # walked (hashlib releases the GIL; decoding blocks holds it), so the wall time is
    # about max(walk, hashing) rather than their sum.
    checks = _DeepChecks(reader, workers or min(4, os.cpu_count() or 1)) if deep else None
    try:
        try:
            for entry in walk_chain(reader, head):
                entries.append(entry)
                if checks is not None:
                    checks.submit(entry)
        except OdfWeb3Error as exc:
            rule = {
                "HashMismatch": "block-hash",
                "NotFound": "head" if not entries else "block-hash",
                "ChainBroken": "sequence-number",
            }.get(type(exc).__name__, "block-format")
            after = entries[-1].block.sequence_number if entries else None
            context = f" (before block #{after})" if after is not None else ""
            violations.append(Violation(rule, f"{exc}{context}"))
        entries.reverse()
        if not violations:
            violations.extend(check_chain_rules(entries))
            if inputs:
                chains = lineage.load_input_chains(inputs)
                violations.extend(lineage.check_input_chains(entries, chains))

        dataset_id: DatasetId | None = None
        if entries and isinstance(entries[0].block.event, Seed):
            seed = entries[0].block.event
            try:
                dataset_id = DatasetId.from_bytes(seed.dataset_id or b"")
            except FormatError as exc:
                violations.append(Violation("seed-first", str(exc), 0, entries[0].hash))

        checked = 0
        hashed = 0
        orphans: tuple[str, ...] = ()
        count = ObjectCount()
        if checks is not None:
            objs = _deep_objects(reader, entries, violations)
            orphans = data_orphans(reader, {o.hash for o in objs if o.kind in ("data", "linked")})
            if on_total is not None:
                on_total(sum(o.size or 0 for o in objs))
            for problems, nbytes in checks.results(objs, progress):
                hashed += nbytes
                for p in problems:
                    rule, msg = p.split("|", 1)
                    violations.append(Violation(rule, msg))
            # the blocks walked (each hash checked) and the objects hashed: one count
            count = ObjectCount(blocks=len(entries)) + count_objects(objs)
            checked = count.total
    finally:
        if checks is not None:
            checks.close()
    return ValidationReport(
        str(reader.root),
        head,
        dataset_id,
        len(entries),
        checked,
        hashed,
        deep,
        tuple(violations),
        orphans,
        count,
    )


def _deep_objects(
    reader: DatasetReader, entries: list[ChainEntry], violations: list[Violation]
) -> list[DatasetObject]:
    """The data files, checkpoints and linked objects a deep check hashes (``entries``
    oldest first); what the ``ObjectLink`` columns cannot say (a data file that cannot be
    read for them, a linked object missing, a summary that disagrees) goes to
    ``violations``."""
    # in chain order, then the linked objects (named walking back, head first)
    objs = [o for o in iter_objects(entries) if o.kind != "block"]
    problems: list[Violation] = []
    try:
        links = local_links(reader, problems)
        objs.extend(o for o in iter_objects(reversed(entries), links) if o.kind == "linked")
    except FormatError as exc:  # a schema's ObjectLink kamu refuses
        violations.append(Violation("linked-schema", str(exc)))
    violations.extend(problems)
    return objs


def data_names(reader: DatasetReader) -> list[str]:
    """The names in the dataset's ``data/`` (hidden temp files aside), sorted."""
    try:
        return sorted(n for n in os.listdir(reader.root / "data") if not n.startswith("."))
    except OSError:
        return []


def data_orphans(
    reader: DatasetReader, named: AbstractSet[bytes], names: Sequence[str] | None = None
) -> tuple[str, ...]:
    """Files in ``data/`` that no block and no ``ObjectLink`` names (``named``: the hashes
    of the data files and linked objects), as layout paths: never published, so said."""
    found = []
    for name in data_names(reader) if names is None else names:
        try:
            mh: bytes | None = multihash_from_str(name)
        except FormatError:
            mh = None
        if mh is None or mh not in named or object_relpath("data", mh) != f"data/{name}":
            found.append(f"data/{name}")
    return tuple(found)


def require_valid(report: ValidationReport) -> None:
    """Raise :class:`ValidationFailed` naming the first violation unless the report is clean."""
    if not report.ok:
        first = report.violations[0]
        more = f" (and {len(report.violations) - 1} more)" if len(report.violations) > 1 else ""
        raise ValidationFailed(
            f"{report.path}: invalid dataset: {first}{more}; run odfweb3 validate for details",
            list(report.violations),
        )
