"""No network's scheme is matched outside the backends (docs/design.md, "Backends").

The core asks the registry what a target or reference is (``backend_for_target``,
``backend_for_ref``, ``target_traits``); a string such as ``"car:"`` or ``"ipfs://"``
compared with, tested as a prefix of, or listed in a tuple beside a user's value means the
core decides for a network. Scanned: comparisons, ``startswith``/``endswith``/
``removeprefix`` arguments, and tuples/lists/sets bound to names, in ``odfweb3/``.
Messages and help texts are not scanned: naming a target to a user is not matching it.
"""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCHEME = re.compile(r"^(car|bundle|arweave|ipfs|ipns|turbo|pinning|ar)(:|://|$)")

# What is left, each with why; the list only shrinks (a new entry needs a reason here).
ALLOWED = {
    # The discovery descriptor's distribution URLs are part of its format (docs/discovery.md):
    # the schemes are the format's, not a target's.
    ("odfweb3/descriptor/validate.py", "ipfs"),
    ("odfweb3/descriptor/validate.py", "ar"),
    ("odfweb3/descriptor/validate.py", "ipns"),
    ("odfweb3/descriptor/croissant.py", "ipfs://"),
    ("odfweb3/descriptor/croissant.py", "ar://"),
    # describe --ipns/--ipfs/--ar take a bare name or a URL of that scheme (the options are
    # the descriptor's fields).
    ("odfweb3/cli/describe_cmds.py", "ipns://"),
    ("odfweb3/cli/describe_cmds.py", "ipfs://"),
    # The descriptor's locator keys (its relation field), a format constant.
    ("odfweb3/descriptor/build.py", "ipfs"),
    ("odfweb3/descriptor/build.py", "ipns"),
    ("odfweb3/descriptor/build.py", "ar"),
    # What a record read from the network may name as an input: an explicit allow-list on
    # purpose (docs/security.md): derived from the registry, a backend that forgot to say
    # its references are local directories would let a publisher open the verifier's files.
    ("odfweb3/read/lineage_check.py", "ipns://"),
    ("odfweb3/read/lineage_check.py", "ipfs://"),
    ("odfweb3/read/lineage_check.py", "ar://"),
}


def _strings(node: ast.AST):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for e in node.elts:
            yield from _strings(e)


def scheme_matches(path: Path) -> list[tuple[int, str]]:
    """(line, string) of each scheme string ``path`` matches values against."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        candidates: list[ast.Constant] = []
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                candidates += _strings(side)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("startswith", "endswith", "removeprefix", "removesuffix")
        ):
            for arg in node.args:
                candidates += _strings(arg)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(
            node.value, (ast.Tuple, ast.List, ast.Set)
        ):
            candidates += _strings(node.value)
        found += [(c.lineno, c.value) for c in candidates if SCHEME.match(c.value)]
    return found


def test_the_scan_finds_what_it_looks_for(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text(
        'KINDS = ("car", "bundle")\n'
        'def f(t):\n    return t.startswith("car:") or t.partition(":")[0] == "ipfs"\n'
        'MSG = "use --to car:DIR"\n'
    )
    assert sorted(v for _, v in scheme_matches(sample)) == ["bundle", "car", "car:", "ipfs"]


def test_no_scheme_strings_outside_the_backends():
    bad = []
    for path in sorted((ROOT / "odfweb3").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        bad += [
            f"{rel}:{line}: {value!r}"
            for line, value in scheme_matches(path)
            if (rel, value) not in ALLOWED
        ]
    assert not bad, "ask the backend registry instead:\n" + "\n".join(bad)
