"""Generate docs/cli.md from the command line itself.

Walks ``odfweb3.cli.main.build_parser()`` (every subcommand, nested ones included) and
writes each command's usage, arguments, options and description, then the exit-code
table parsed from ``odfweb3/cli/main.py``'s docstring. The page is never edited by
hand: ``make docs`` regenerates it, and ``tests/hygiene/test_docs.py`` fails when it
differs from what the parser says.

Usage::

    python tools/gen_cli_docs.py            # write docs/cli.md
    python tools/gen_cli_docs.py --check    # exit 1 if docs/cli.md is out of date
"""

from __future__ import annotations

import argparse
import html
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from odfweb3.cli import main as cli_main

__all__ = ["OUTPUT", "exit_codes", "render"]

OUTPUT = Path(__file__).resolve().parent.parent / "docs" / "cli.md"

# Usage lines are wrapped by argparse; a fixed width keeps the page independent of the
# terminal that ran the generator.
_WIDTH = 88

# The options every command takes (odfweb3.cli.main._common); listed once, not per command.
_COMMON_DESTS = frozenset({"json", "verbose", "quiet", "config", "help"})


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.HelpFormatter(prog, width=_WIDTH, max_help_position=32)


def _text(value: str | None) -> str:
    """Plain text from argparse into Markdown: one paragraph, HTML-escaped."""
    if not value:
        return ""
    flat = " ".join(value.split())
    return html.escape(flat, quote=False).replace("*", r"\*").replace("|", "&#124;")


def _subcommands(
    parser: argparse.ArgumentParser,
) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name) or "", sub


def _usage(parser: argparse.ArgumentParser) -> str:
    parser.formatter_class = _formatter
    first, *rest = parser.format_usage().rstrip().splitlines()
    indent = len("usage: ")
    return "\n".join([first.removeprefix("usage: "), *(line[indent:] for line in rest)])


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    formatter = _formatter(parser.prog)
    text = formatter._expand_help(action) if action.help else ""
    return _text(text)


def _invocation(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    return _formatter(parser.prog)._format_action_invocation(action)


def _table(parser: argparse.ArgumentParser, actions: list[argparse.Action], head: str) -> list[str]:
    if not actions:
        return []
    lines = [f"| {head} | description |", "|---|---|"]
    for action in actions:
        cell = "`" + _invocation(parser, action).replace("|", "&#124;") + "`"
        if action.required and action.option_strings:
            cell += " (required)"
        lines.append(f"| {cell} | {_help(parser, action)} |")
    return [*lines, ""]


def _arguments(
    parser: argparse.ArgumentParser,
) -> tuple[list[argparse.Action], list[argparse.Action]]:
    positionals: list[argparse.Action] = []
    options: list[argparse.Action] = []
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction):
            continue
        if not action.option_strings:
            positionals.append(action)
        elif action.dest not in _COMMON_DESTS:
            options.append(action)
    return positionals, options


def _anchor(path: list[str]) -> str:
    return "-".join(path)


def _command(
    path: list[str], summary: str, parser: argparse.ArgumentParser, level: int
) -> list[str]:
    title = "odfweb3 " + " ".join(path)
    lines = [f"{'#' * level} `{title}` {{#{_anchor(path)}}}", ""]
    description = _text(parser.description) or _text(summary)
    if description:
        lines += [description, ""]
    lines += ["```text", _usage(parser), "```", ""]
    positionals, options = _arguments(parser)
    lines += _table(parser, positionals, "argument")
    lines += _table(parser, options, "option")
    if parser.epilog and parser.epilog.startswith("examples:"):
        examples = [line.strip() for line in parser.epilog.splitlines()[1:]]
        lines += ["Examples:", "", "```sh", *examples, "```", ""]
    children = list(_subcommands(parser))
    if children:
        lines += ["| subcommand | what it does |", "|---|---|"]
        for name, help_text, _ in children:
            anchor = _anchor([*path, name])
            lines.append(f"| [`{name}`](#{anchor}) | {_text(help_text)} |")
        lines.append("")
        for name, help_text, sub in children:
            lines += _command([*path, name], help_text, sub, min(level + 1, 4))
    return lines


def exit_codes() -> list[tuple[int, str]]:
    """The exit-code table of ``odfweb3/cli/main.py``'s docstring, as (code, meaning)."""
    doc = cli_main.__doc__ or ""
    _, _, table = doc.partition("Exit codes:")
    codes = [
        (int(m.group(1)), m.group(2).strip())
        for m in re.finditer(r"^(\d+)\s+(\S.*)$", table, flags=re.MULTILINE)
    ]
    if not codes:
        raise SystemExit("odfweb3/cli/main.py: no exit-code table in the module docstring")
    return codes


def _rst_inline(text: str) -> str:
    # The docstring is reStructuredText: ``code`` becomes `code`.
    return re.sub(r"``(.+?)``", r"`\1`", text)


def render() -> str:
    """The whole docs/cli.md page."""
    parser = cli_main.build_parser()
    lines = [
        "# Command line reference",
        "",
        "<!-- Generated by tools/gen_cli_docs.py from odfweb3.cli.main.build_parser(); "
        "do not edit. Run `make docs`. -->",
        "",
        "This page is generated from the command line parser itself (`make docs`), and a "
        "test fails when it is out of date, so it says exactly what `odfweb3 COMMAND --help` "
        "says. The same parser generates the shell completion scripts "
        "(`odfweb3 completion bash|zsh|fish`) and the man page (`odfweb3 man`). Without a "
        "command, `odfweb3` prints its help and exits 0, as `ipfs` does.",
        "",
        _text(parser.description),
        "",
        "```text",
        _usage(parser),
        "```",
        "",
        "## Options every command takes {#common-options}",
        "",
        "They may be given before or after the command name.",
        "",
    ]
    common = [
        a
        for a in parser._actions
        if a.option_strings and a.dest in _COMMON_DESTS and a.help != argparse.SUPPRESS
    ]
    lines += _table(parser, common + _arguments(parser)[1], "option")
    lines += ["## Exit codes {#exit-codes}", "", "| code | meaning |", "|---|---|"]
    lines += [f"| {code} | {_text(_rst_inline(meaning))} |" for code, meaning in exit_codes()]
    lines += ["", "## Commands {#commands}", "", "| command | what it does |", "|---|---|"]
    children = list(_subcommands(parser))
    lines += [f"| [`{name}`](#{name}) | {_text(text)} |" for name, text, _ in children]
    lines.append("")
    for name, help_text, sub in children:
        lines += _command([name], help_text, sub, 2)
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write docs/cli.md, or with ``--check`` report whether it is up to date."""
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    args.add_argument("--check", action="store_true", help="fail if docs/cli.md is stale")
    opts = args.parse_args(argv)
    text = render()
    if opts.check:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            sys.stderr.write(f"{OUTPUT}: out of date with the CLI; run make docs\n")
            return 1
        return 0
    if not OUTPUT.exists() or OUTPUT.read_text(encoding="utf-8") != text:
        OUTPUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
