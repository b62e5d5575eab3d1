"""A broken Metadata Chain rule: which rule, where, and what (the result of every check).

Shared by :mod:`odfweb3.odf.validate` (the chain rules) and :mod:`odfweb3.odf.lineage`
(the derivative rules), which validate also runs: neither imports the other's results type.
"""

from __future__ import annotations

from dataclasses import dataclass

from odfweb3.odf.multihash import multihash_to_str

__all__ = ["Violation"]


@dataclass(frozen=True)
class Violation:
    """One broken rule: which, where (block sequence number and hash), and what.

    ``number`` and ``kamu``: for a Metadata Chain rule, its number in
    ``odfweb3.odf.chain_rules.RULES`` and kamu's name for the failure (its
    ``AppendValidationError`` variant), so a user can look the rule up on either side.
    """

    rule: str
    message: str
    sequence_number: int | None = None
    block_hash: bytes | None = None
    kamu: str | None = None
    number: int | None = None

    def __str__(self) -> str:
        where = ""
        if self.sequence_number is not None:
            where = f"block #{self.sequence_number}"
            if self.block_hash is not None:
                where += f" ({multihash_to_str(self.block_hash)})"
            where += ": "
        name = self.rule if self.number is None else f"rule {self.number} {self.rule}"
        if self.kamu is not None:
            name += f", kamu {self.kamu}"
        return f"{where}[{name}] {self.message}"

    def to_json(self) -> dict[str, object]:
        """JSON form for ``--json`` output."""
        return {
            "rule": self.rule,
            "ruleNumber": self.number,
            "kamu": self.kamu,
            "message": self.message,
            "sequenceNumber": self.sequence_number,
            "blockHash": multihash_to_str(self.block_hash) if self.block_hash else None,
        }
