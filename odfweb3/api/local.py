"""What a local dataset is (``odfweb3 validate``, ``odfweb3 inspect``), as reports."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from odfweb3.api.hooks import QUIET, Hooks

if TYPE_CHECKING:
    from odfweb3.odf.summary import DatasetSummary
    from odfweb3.odf.validate import ValidationReport

__all__ = ["inspect", "validate"]


def validate(
    dataset: str | Path,
    *,
    deep: bool = False,
    inputs: Sequence[str | Path] = (),
    hooks: Hooks = QUIET,
) -> ValidationReport:
    """Check the dataset at ``dataset``: every block hash and chain rule; with ``deep``
    every data file, checkpoint and linked object re-hashed; a derivative's inputs (their
    local directories) checked against its transforms.

    A problem found is in the report (``ok`` False, ``violations``); an exception means the
    dataset could not be read at all (NotFound, FormatError).
    """
    from odfweb3.odf.validate import validate_dataset

    with hooks.progress("validating") as bar:
        return validate_dataset(
            str(dataset),
            deep=deep,
            progress=bar.advance,
            on_total=bar.set_total,
            inputs=[str(i) for i in inputs] or None,
        )


def inspect(dataset: str | Path) -> DatasetSummary:
    """What the dataset at ``dataset`` holds: ID, head, blocks, data, info, license.

    Linked objects are counted as they are on disk (a missing one: :func:`validate` with
    ``deep`` says so).
    """
    from odfweb3.odf.chain import walk_chain
    from odfweb3.odf.layout import DatasetReader
    from odfweb3.odf.parquet_links import local_links
    from odfweb3.odf.summary import summarize

    reader = DatasetReader.open(dataset)
    return summarize(list(walk_chain(reader)), local_links(reader, []))
