"""What a Croissant document lacks that catalogues look for: one line per field, with the fix.

The document is valid Croissant without these (mlcroissant loads it; a missing license or
URL is one of its warnings); the lines tell the publisher what to add to the chain.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["croissant_problems"]


def croissant_problems(doc: Mapping[str, Any]) -> list[str]:
    """Each missing recommended field of :func:`~.croissant.build_croissant`'s document."""
    out: list[str] = []
    if doc.get("name") == doc.get("@id"):
        out.append(
            "name missing (the dataset ID stands in): add a SetInfo event with a description"
        )
    if not doc.get("description"):
        out.append("description missing: add a SetInfo event with a description")
    if not doc.get("license"):
        out.append("license missing: add a SetLicense event (with an SPDX id) to the dataset")
    if not doc.get("creator"):
        out.append("creator missing: set publisher.name in odfweb3.yaml")
    if not doc.get("url"):
        out.append("url missing: give where the dataset is published (--ipns, --ipfs or --ar)")
    files = doc.get("distribution") or []
    unhashed = sum(1 for f in files if not f.get("sha256"))
    if unhashed:
        out.append(
            f"sha256 missing for {unhashed} of {len(files)} data files: describe a dataset "
            "directory that holds them"
        )
    if files and not doc.get("recordSet"):
        out.append("recordSet missing: the chain has no SetDataSchema before its data")
    return out
