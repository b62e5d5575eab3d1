"""Reading a data file's ``ObjectLink`` columns (ODF RFC-017) from its Parquet bytes.

Only the link columns are read, one row group at a time (``pyarrow.parquet.ParquetFile``
``iter_batches``): memory is bounded by one row group's link column chunks, which are
checked against :data:`MAX_CHUNK` from the footer before anything is decoded, and the
footer against :data:`MAX_FOOTER` before pyarrow parses it (a data file from a replica is
hostile until its hash is checked, and even then only as good as its writer).

pyarrow is imported when a file is read (docs/design.md, "Layers": the one library
``odfweb3.odf`` loads lazily): datasets without ``ObjectLink`` columns, most of them, never
pay its import.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import BinaryIO, Final

from odfweb3.errors import FormatError, HashMismatch, IntegrityError, NotFound
from odfweb3.odf.chain import DatasetObject, LinkingBlock
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.linked import SUMMARY_KEY, LinkedSummary, decode_summary
from odfweb3.odf.model_gen import AddData
from odfweb3.odf.multihash import hash_fd, multihash_from_str, multihash_to_str
from odfweb3.odf.violation import Violation

__all__ = ["MAX_CHUNK", "MAX_FOOTER", "ParquetLinks", "local_links", "read_links"]

MAX_FOOTER: Final = 64 << 20
MAX_CHUNK: Final = 512 << 20
_MAX_LINK: Final = 256  # characters: a multibase multihash is 69 in base16
_BATCH: Final = 8192


def _not_parquet(where: str, why: str) -> FormatError:
    return FormatError(
        f"{where}: cannot be read as Parquet for its ObjectLink columns ({why}); "
        "restore the file from a good copy"
    )


def read_links(f: BinaryIO, columns: tuple[str, ...], where: str) -> Iterator[bytes]:
    """The non-null hashes of ``columns`` of the Parquet file ``f``, in file order.

    Raises:
        FormatError: not Parquet, a footer or column chunk past the bounds, a declared
            column absent or not a string column, a value that is not a multihash.
    """
    f.seek(0, os.SEEK_END)
    size = f.tell()
    if size < 12:
        raise _not_parquet(where, f"{size} bytes, too short")
    f.seek(size - 8)
    tail = f.read(8)
    if tail[4:] != b"PAR1":
        raise _not_parquet(where, "no PAR1 trailer")
    footer = int.from_bytes(tail[:4], "little")
    if footer > min(MAX_FOOTER, size - 12):
        raise _not_parquet(where, f"a footer of {footer} bytes")
    f.seek(0)
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(f)
        schema = pf.schema_arrow
        for name in columns:
            i = schema.get_field_index(name)
            if i < 0:
                raise FormatError(
                    f"{where}: has no column {name!r}, which the dataset's schema declares an "
                    "ObjectLink"
                )
            t = schema.field(i).type
            strings = (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view)
            if not any(is_kind(t) for is_kind in strings):
                raise FormatError(f"{where}: ObjectLink column {name!r} is {t}, not a string")
        meta = pf.metadata
        wanted = set(columns)
        for rg in range(meta.num_row_groups):
            group = meta.row_group(rg)
            for c in range(group.num_columns):
                chunk = group.column(c)
                if chunk.path_in_schema in wanted and chunk.total_uncompressed_size > MAX_CHUNK:
                    raise _not_parquet(
                        where,
                        f"row group {rg}: column {chunk.path_in_schema!r} is "
                        f"{chunk.total_uncompressed_size} bytes, above {MAX_CHUNK}",
                    )
            for batch in pf.iter_batches(
                batch_size=_BATCH, row_groups=[rg], columns=list(columns), use_threads=False
            ):
                for name, array in zip(batch.schema.names, batch.columns, strict=True):
                    for value in array.to_pylist():
                        if value is None:
                            continue
                        if len(value) > _MAX_LINK:
                            raise FormatError(
                                f"{where}: column {name!r} holds a {len(value)}-character "
                                "value, not a multihash"
                            )
                        try:
                            yield multihash_from_str(value)
                        except FormatError as exc:
                            raise FormatError(f"{where}: column {name!r}: {exc}") from None
    except (pa.ArrowException, OSError) as exc:
        raise _not_parquet(
            where, str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        ) from None


class ParquetLinks:
    """A :class:`~odfweb3.odf.chain.LinkSource` over data files opened by ``open_data``.

    ``size_of``: a linked object's size from where it is stored (None when it cannot be
    known yet, e.g. before a pull fetches it); raises :class:`NotFound` when absent.
    ``problems``: None raises at the first problem (publish, pull: nothing goes out);
    a list collects them as violations and goes on (``validate --deep``).
    The block's ``linkedObjects`` summary is checked against what the file links
    (``numObjectsNaive`` always, ``sizeNaive`` when every size is known).
    """

    def __init__(
        self,
        open_data: Callable[[DatasetObject], BinaryIO],
        size_of: Callable[[bytes], int | None],
        where: str,
        problems: list[Violation] | None = None,
    ) -> None:
        self._open = open_data
        self._size_of = size_of
        self._where = where
        self.problems = problems
        # data file -> its linked objects: a publish lists a new block's objects for the
        # facts, then for the plan (each file is read once)
        self._memo: dict[tuple[bytes, tuple[str, ...]], tuple[DatasetObject, ...]] = {}
        self._bounds: dict[bytes, int] = {}

    def bound(self, mh: bytes) -> int | None:
        """The most bytes linked object ``mh`` can have: the largest ``sizeNaive`` of the
        summaries of the blocks that link it (each counts every linked object's size), or
        None when no summary named it. A reader fetching an object no block sizes stops
        there (a hostile replica's endless stream)."""
        return self._bounds.get(mh)

    def _problem(self, exc: Exception, rule: str, block: LinkingBlock) -> None:
        if self.problems is None:
            raise exc
        self.problems.append(Violation(rule, str(exc), block.sequence_number, block.hash))

    def __call__(
        self, block: LinkingBlock, data: DatasetObject, columns: tuple[str, ...]
    ) -> tuple[DatasetObject, ...]:
        key = (data.hash, columns)
        got = self._memo.get(key)
        if got is None:
            got = self._memo[key] = tuple(self._read(block, data, columns))
        return got

    def _read(
        self, block: LinkingBlock, data: DatasetObject, columns: tuple[str, ...]
    ) -> Iterator[DatasetObject]:
        where = f"{self._where}/{data.path}"
        try:
            summary = decode_summary(
                AddData(extra=block.extra), f"block {multihash_to_str(block.hash)}"
            )
        except FormatError as exc:
            self._problem(exc, "linked-summary", block)
            summary = None
        try:
            f = self._open(data)
        except (NotFound, FormatError, IntegrityError):
            if self.problems is None:
                raise
            return  # the data file itself: reported by the check of data files
        count = 0
        total: int | None = 0
        sizes: dict[bytes, int | None] = {}
        try:
            with f:
                for mh in read_links(f, columns, where):
                    count += 1
                    if summary is not None:
                        self._bounds[mh] = max(self._bounds.get(mh, 0), summary.size_naive)
                    if mh not in sizes:
                        try:
                            sizes[mh] = self._size_of(mh)
                        except (NotFound, FormatError) as exc:
                            sizes[mh] = None
                            self._problem(
                                IntegrityError(
                                    f"{where} links {multihash_to_str(mh)}, which is missing "
                                    f"from {self._where}/data/; copy the linked object there"
                                )
                                if isinstance(exc, NotFound)
                                else exc,
                                "linked-present",
                                block,
                            )
                            total = None
                            continue
                        yield DatasetObject("linked", mh, sizes[mh])
                    size = sizes[mh]
                    total = None if size is None or total is None else total + size
        except FormatError as exc:
            self._problem(exc, "linked-readable", block)
            return
        self._check_summary(block, where, summary, count, total)

    def _check_summary(
        self,
        block: LinkingBlock,
        where: str,
        summary: LinkedSummary | None,
        count: int,
        total: int | None,
    ) -> None:
        name = f"block {multihash_to_str(block.hash)}"
        if summary is None:
            self._problem(
                IntegrityError(
                    f"{name}: adds {where}, whose schema has ObjectLink columns, but has no "
                    f"{SUMMARY_KEY} summary (kamu writes one for every such file)"
                ),
                "linked-summary",
                block,
            )
            return
        wrong = summary.num_objects_naive != count or (
            total is not None and summary.size_naive != total
        )
        if wrong:
            found = f"{count} links" + (f", {total} bytes" if total is not None else "")
            self._problem(
                IntegrityError(
                    f"{name}: its {SUMMARY_KEY} says numObjectsNaive "
                    f"{summary.num_objects_naive}, sizeNaive {summary.size_naive}; {where} "
                    f"has {found}"
                ),
                "linked-summary",
                block,
            )


def local_links(reader: DatasetReader, problems: list[Violation] | None = None) -> ParquetLinks:
    """:class:`ParquetLinks` over a local dataset: data files and linked objects from its
    ``data/`` (sizes from the files; a linked object absent is a problem). A data file is
    hashed before its links are read: they are taken only from the bytes its block names."""

    def size_of(mh: bytes) -> int:
        fd, st = reader.open_fd("linked", mh)
        os.close(fd)
        return st.st_size

    def open_verified(obj: DatasetObject) -> BinaryIO:
        fd, st = reader.open_fd(obj.kind, obj.hash)
        try:
            where = f"{reader.root}/{obj.path}"
            if obj.size is not None and st.st_size != obj.size:
                raise IntegrityError(
                    f"{where}: has {st.st_size} bytes, its block records {obj.size}"
                )
            actual, _ = hash_fd(fd, obj.hash[0], regular=True)
            if actual != obj.hash:
                raise HashMismatch(multihash_to_str(obj.hash), multihash_to_str(actual), where)
            return os.fdopen(fd, "rb")
        except BaseException:
            os.close(fd)
            raise

    return ParquetLinks(open_verified, size_of, str(reader.root), problems)
