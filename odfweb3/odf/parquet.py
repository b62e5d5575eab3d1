"""Parquet data files of the example datasets, written with pyarrow.

ODF data slices are Parquet files whose first columns are the system columns
(:data:`odfweb3.odf.example_schema.SYSTEM_FIELDS`): ``offset`` Int64, ``op`` Int32
(0 = append, kamu's ``OperationType::Append``), ``system_time`` and ``event_time``
Timestamp(millisecond, UTC), all required. The offsets of a file are its block's
``offsetInterval``, one after the other; ``system_time`` is the block's.

pyarrow is imported on first use, never at import time: ``odfweb3`` commands that
write no data (every one but ``example``) do not pay its start-up (docs/design.md,
the dependency rule; :mod:`odfweb3.odf.parquet_links` reads the link columns back).

Files are written uncompressed (the payload is pseudo-random: compression would cost
time and save nothing) without dictionaries, with statistics on the system columns
only, into memory: a data file is hashed before it is stored under its hash.

The bytes are deterministic for the same inputs and the same pyarrow release; the
footer names the writer (``created_by``), so another pyarrow release writes other
bytes, as another kamu release would.
"""

from __future__ import annotations

import array
import functools
from collections.abc import Iterator, Sequence
from typing import Any, Final

__all__ = [
    "OP_APPEND",
    "ROW_GROUP_BYTES",
    "payload_file",
    "read_table",
    "versioned_file",
]

OP_APPEND: Final = 0
ROW_GROUP_BYTES: Final = 64 << 20
_MAX_INT32_BUFFER: Final = (1 << 31) - 1
_SYSTEM_COLUMNS: Final = ("offset", "op", "system_time", "event_time")


@functools.cache
def _arrow() -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    ts = pa.timestamp("ms", tz="UTC")
    system = [
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("op", pa.int32(), nullable=False),
        pa.field("system_time", ts, nullable=False),
        pa.field("event_time", ts, nullable=False),
    ]
    return pa, pq, ts, system


def _int64s(pa: Any, values: array.array[int]) -> Any:
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


def _system_arrays(
    start_offset: int, n: int, system_time_ms: int, event_times_ms: array.array[int]
) -> list[Any]:
    pa, _pq, ts, _system = _arrow()
    offsets = array.array("q", range(start_offset, start_offset + n))
    ops = pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(bytes(4 * n))])
    sys_times = pa.Array.from_buffers(
        ts, n, [None, pa.py_buffer(array.array("q", [system_time_ms]) * n)]
    )
    ev_times = pa.Array.from_buffers(ts, n, [None, pa.py_buffer(event_times_ms)])
    return [_int64s(pa, offsets), ops, sys_times, ev_times]


def _event_times(n: int, first_ms: int, last_ms: int) -> array.array[int]:
    """``n`` event times spread evenly from ``first_ms`` to ``last_ms`` (the watermark)."""
    if n == 1 or last_ms <= first_ms:
        return array.array("q", [last_ms]) * n
    span = last_ms - first_ms
    return array.array("q", (first_ms + span * i // (n - 1) for i in range(n)))


def _write(table: Any) -> bytes:
    pa, pq, _ts, _system = _arrow()
    sink = pa.BufferOutputStream()
    pq.write_table(
        table,
        sink,
        compression="none",
        use_dictionary=False,
        write_statistics=list(_SYSTEM_COLUMNS),
    )
    return bytes(sink.getvalue())


@functools.cache
def _payload_schema(large: bool) -> Any:
    pa, _pq, _ts, system = _arrow()
    binary = pa.large_binary() if large else pa.binary()
    return pa.schema([*system, pa.field("payload", binary, nullable=False)])


def _payload_table(
    start_offset: int,
    n: int,
    system_time_ms: int,
    event_times_ms: array.array[int],
    payload: bytes,
) -> Any:
    pa = _arrow()[0]
    total = len(payload)
    large = total > _MAX_INT32_BUFFER
    each = total // n
    # Every record gets ``each`` bytes, the last one the remainder.
    code = "q" if large else "i"
    ends = array.array(code, range(0, n * each, each)) if each else array.array(code, [0]) * n
    ends.append(total)
    schema = _payload_schema(large)
    payload_arr = pa.Array.from_buffers(
        schema.field("payload").type, n, [None, pa.py_buffer(ends), pa.py_buffer(payload)]
    )
    arrays = [*_system_arrays(start_offset, n, system_time_ms, event_times_ms), payload_arr]
    return pa.Table.from_arrays(arrays, schema=schema)


@functools.cache
def _payload_bytes(n: int, size: int) -> int:
    """Payload bytes that make a one-row-group file of ``n`` records ``size`` bytes long.

    The length of an uncompressed file with no payload statistics or dictionary
    depends on ``n`` and the payload's length only (not its bytes, nor the offsets and
    times, whose statistics are fixed-width); the footer's varints grow with the
    lengths, so a few tries find it (or the nearest, when a varint steps over it).
    """
    times = array.array("q", [0]) * n
    want = max(0, size - _overhead(n))
    for _ in range(4):
        got = len(_write(_payload_table(0, n, 0, times, bytes(want))))
        if got == size or (want == 0 and got > size):
            break
        want = max(0, want + size - got)
    return want


@functools.cache
def _overhead(n: int) -> int:
    """Bytes of a payload file of ``n`` records around its payload bytes."""
    times = array.array("q", [0]) * n
    return len(_write(_payload_table(0, n, 0, times, b"")))


class _Drain:
    """A write-only file for pyarrow that hands on what it is given."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.pos = 0
        self.closed = False

    def write(self, data: Any) -> int:
        b = bytes(data)
        self.parts.append(b)
        self.pos += len(b)
        return len(b)

    def tell(self) -> int:
        return self.pos

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def take(self) -> list[bytes]:
        parts, self.parts = self.parts, []
        return parts


def payload_file(
    *,
    start_offset: int,
    records: int,
    system_time_ms: int,
    event_time_range_ms: tuple[int, int],
    size: int,
    randbytes: Any,
) -> Iterator[bytes]:
    """A Parquet file of ``records`` records with a ``payload`` column sized to ``size``.

    Yields the file's bytes in pieces: one for a small file (written in memory), one
    row group of about :data:`ROW_GROUP_BYTES` at a time for a large one, so a
    gigabyte file never sits in memory whole. The payload bytes come from
    ``randbytes(n)``; the file is ``size`` bytes give or take a few (page headers grow
    with the payload), never less than its columns need.
    """
    n = max(1, records)
    payload_total = max(0, size - _overhead(n))
    if payload_total <= ROW_GROUP_BYTES:
        payload_total = _payload_bytes(n, size)
        times = _event_times(n, *event_time_range_ms)
        payload = randbytes(payload_total)
        yield _write(_payload_table(start_offset, n, system_time_ms, times, payload))
        return
    pa, pq, _ts, _system = _arrow()
    groups = -(-payload_total // ROW_GROUP_BYTES)
    groups = min(groups, n)
    times = _event_times(n, *event_time_range_ms)
    drain = _Drain()
    writer = pq.ParquetWriter(
        pa.PythonFile(drain, mode="w"),
        _payload_schema(False),
        compression="none",
        use_dictionary=False,
        write_statistics=list(_SYSTEM_COLUMNS),
    )
    done_rows = done_bytes = 0
    for g in range(1, groups + 1):
        rows = n * g // groups - done_rows
        upto = payload_total * g // groups
        part = randbytes(upto - done_bytes)
        rg_times = times[done_rows : done_rows + rows]
        writer.write_table(
            _payload_table(start_offset + done_rows, rows, system_time_ms, rg_times, part)
        )
        done_rows += rows
        done_bytes = upto
        yield from drain.take()
    writer.close()
    yield from drain.take()


@functools.cache
def _versioned_schema() -> Any:
    pa, _pq, _ts, system = _arrow()
    return pa.schema(
        [
            *system,
            pa.field("version", pa.int32(), nullable=False),
            pa.field("content_hash", pa.string(), nullable=False),
            pa.field("content_length", pa.int64(), nullable=False),
            pa.field("content_type", pa.string(), nullable=True),
        ]
    )


def versioned_file(
    *,
    start_offset: int,
    system_time_ms: int,
    event_time_ms: int,
    first_version: int,
    hashes: Sequence[str],
    lengths: Sequence[int],
    content_type: str,
) -> bytes:
    """A Parquet file of kamu's "versioned file" archetype: one record per linked object."""
    pa = _arrow()[0]
    n = len(hashes)
    if n == 0 or n != len(lengths):
        raise ValueError("versioned_file: one length per hash, at least one")
    times = array.array("q", [event_time_ms]) * n
    arrays = [
        *_system_arrays(start_offset, n, system_time_ms, times),
        pa.array(range(first_version, first_version + n), pa.int32()),
        pa.array(list(hashes), pa.string()),
        pa.array(list(lengths), pa.int64()),
        pa.array([content_type] * n, pa.string()),
    ]
    return _write(pa.Table.from_arrays(arrays, schema=_versioned_schema()))


def read_table(data: bytes) -> Any:
    """The table in Parquet ``data`` (for tests and checks)."""
    pa, pq, _ts, _system = _arrow()
    return pq.read_table(pa.BufferReader(data))
