"""The discovery descriptor as Turtle: a small serializer driven by the JSON-LD context."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from odfweb3.descriptor.build import (
    _IRI,
    _IRI_FORBIDDEN,
)
from odfweb3.errors import FormatError

__all__ = ["to_turtle"]


_PN_LOCAL = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_XSD = "http://www.w3.org/2001/XMLSchema#"


class _Turtle:
    """Writes a JSON-LD node tree of the descriptor's shape as Turtle, using its own context."""

    def __init__(self, context: Mapping[str, Any]) -> None:
        # Prefixes are the context's plain absolute IRIs; terms map to compact IRIs.
        self.prefixes = {k: v for k, v in context.items() if isinstance(v, str) and "://" in v}
        self.terms: dict[str, dict[str, Any]] = {}
        for k, v in context.items():
            if k.startswith("@") or k in self.prefixes or v in ("@id", "@type"):
                continue
            self.terms[k] = {"@id": v} if isinstance(v, str) else dict(v)
        self.aliases = {k: v for k, v in context.items() if v in ("@id", "@type")}

    def expand(self, value: str) -> str:
        prefix, sep, local = value.partition(":")
        if sep and prefix in self.prefixes and not local.startswith("//"):
            return self.prefixes[prefix] + local
        return value

    def iri(self, value: str) -> str:
        full = self.expand(value)
        for prefix, ns in self.prefixes.items():
            local = full[len(ns) :]
            if full.startswith(ns) and _PN_LOCAL.match(local):
                return f"{prefix}:{local}"
        if _IRI_FORBIDDEN.search(full) or not _IRI.match(full):
            raise FormatError(f"to_turtle: {full[:80]!r} is not an absolute IRI")
        return f"<{full}>"

    @staticmethod
    def literal(text: str) -> str:
        out = []
        for ch in text:
            if ch in '"\\':
                out.append("\\" + ch)
            elif ch == "\n":
                out.append("\\n")
            elif ch == "\r":
                out.append("\\r")
            elif ch == "\t":
                out.append("\\t")
            elif ord(ch) < 0x20 or ord(ch) == 0x7F:
                out.append(f"\\u{ord(ch):04X}")
            else:
                out.append(ch)
        return '"' + "".join(out) + '"'

    def value(self, term: Mapping[str, Any], v: object, indent: int) -> str:
        coerce = term.get("@type")
        if isinstance(v, Mapping):
            return self.node(v, indent)
        if isinstance(v, bool):
            lex = "true" if v else "false"
            return lex if coerce is None else f'"{lex}"^^{self.iri(coerce)}'
        if isinstance(v, int):
            return str(v) if coerce is None else f'"{v}"^^{self.iri(coerce)}'
        if not isinstance(v, str):
            raise FormatError(f"to_turtle: unsupported value {type(v).__name__}")
        if coerce == "@id":
            return self.iri(v)
        if coerce is not None:
            dt = self.iri(coerce)
            return self.literal(v) + ("" if dt == "xsd:string" else f"^^{dt}")
        return self.literal(v)

    def predicates(self, node: Mapping[str, Any], indent: int) -> list[str]:
        pad = " " * (indent + 4)
        lines: list[str] = []
        for key, v in node.items():
            if key == "@context" or self.aliases.get(key) == "@id" or v is None:
                continue
            values = v if isinstance(v, list) else [v]
            if not values:
                continue
            if self.aliases.get(key) == "@type":
                objs = [self.iri(t) for t in values]
                lines.append(f"{pad}a {', '.join(objs)}")
                continue
            if key in self.terms:
                term = self.terms[key]
            elif ":" in key and not key.startswith("@"):
                term = {"@id": key}
            else:
                raise FormatError(f"to_turtle: {key!r} is not a term of the odfweb3 context")
            objs = [self.value(term, x, indent + 4) for x in values]
            lines.append(f"{pad}{self.iri(term['@id'])} {', '.join(objs)}")
        return lines

    def node(self, node: Mapping[str, Any], indent: int) -> str:
        if any(self.aliases.get(k) == "@id" for k in node):
            raise FormatError("to_turtle: nested nodes with an id are not in the descriptor shape")
        lines = self.predicates(node, indent)
        if not lines:
            return "[]"
        return "[\n" + " ;\n".join(lines) + "\n" + " " * indent + "]"


def to_turtle(doc: Mapping[str, Any]) -> str:
    """Turtle 1.1 for a descriptor: the same triples as its JSON-LD expansion.

    A small serializer for exactly the descriptor's shape (one subject, nested blank nodes,
    terms of the odfweb3 context, IRIs, strings, integers and typed literals); anything else
    raises.

    Raises:
        FormatError: a key outside the context, a value outside the shape, or a bad IRI.
    """
    ctx = doc.get("@context")
    if not isinstance(ctx, Mapping):
        raise FormatError("to_turtle: the descriptor has no inline @context object")
    w = _Turtle(ctx)
    subject_key = next((k for k, v in w.aliases.items() if v == "@id"), "@id")
    subject = doc.get(subject_key)
    head = "[]" if not isinstance(subject, str) else w.iri(subject)
    lines = [f"@prefix {p}: <{ns}> ." for p, ns in sorted(w.prefixes.items())]
    body = w.predicates(doc, 0)
    if body:
        lines += ["", head + "\n" + " ;\n".join(body) + " ."]
    return "\n".join(lines) + "\n"
