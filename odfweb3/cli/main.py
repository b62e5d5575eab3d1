"""The ``odfweb3`` command: one program, subcommands.

Conventions every subcommand follows:

- ``--json``: exactly one JSON document on stdout; ``-v`` more detail on stderr,
  ``-q`` nothing but errors; progress bars (total, %, rate, ETA) on a terminal only.
- ``--config FILE``: settings (see :mod:`odfweb3.config`); ``ODFWEB3_*`` overrides.
- Errors: one line on stderr, ``odfweb3: error: <what failed>: <where>; <what to do>``,
  no traceback; with ``--json`` also one object on stdout, ``{"error": {"code": "not_found",
  "exit": 66, "message": "..."}}`` (``code``: the error's kind, ``odfweb3.errors.error_code``).
  A local disk failure that escaped its writer (no space, read-only,
  permission) is one line and exit 74; anything else that is not an
  :class:`~odfweb3.errors.OdfWeb3Error` is a bug: one line, exit 70 (``-vv`` adds the
  traceback).

Exit codes:

====  =====================================================================
0     success (for ``validate``/``verify``: everything checked is fine)
1     the check ran and found differences (invalid dataset; replicas behind, ahead, diverged)
2     other odfweb3 error (for ``verify``: a replica unreachable)
64    usage error (bad arguments, a destination that cannot be written safely)
65    corrupt data: malformed, hash mismatch, broken chain, forged; ``verify``: a replica corrupt
66    not found (dataset, object, key, record)
69    backend unavailable or rejected the request (node, gateway)
70    internal error: a bug in odfweb3 (one line; ``-vv`` shows the traceback)
74    local I/O error (disk full, read-only file system, permission denied)
75    try again later: head does not descend, a concurrent publish won, upload not confirmed yet
77    permission denied: a pinning service refused the token; a published name's key is missing
78    configuration error (odfweb3.yaml, ODFWEB3_*)
130   interrupted (Ctrl-C)
====  =====================================================================
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from odfweb3 import __version__
from odfweb3.cli.examples import epilog
from odfweb3.cli.output import Output, terminal_text
from odfweb3.errors import OdfWeb3Error, UsageError, error_code

if TYPE_CHECKING:
    from odfweb3.config import Config

__all__ = [
    "EXIT_INTERNAL",
    "EXIT_LOCAL_IO",
    "Context",
    "build_parser",
    "main",
    "suggest",
]

EXIT_INTERNAL = 70  # sysexits EX_SOFTWARE: a bug
EXIT_LOCAL_IO = 74  # sysexits EX_IOERR, as odfweb3.errors.LocalIOError

# OSErrors that are the local disk's doing, whatever raised them.
_LOCAL_ERRNOS = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG, errno.EACCES, errno.EPERM}
)


@dataclass
class Context:
    """What a subcommand gets: its configuration, its voice and its surroundings."""

    config: Config
    out: Output
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: Path = field(default_factory=Path.cwd)


Handler = Callable[[argparse.Namespace, Context], int]


class _HelpFormatter(argparse.HelpFormatter):
    """Wraps descriptions as usual but keeps indented lines (the examples) as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out: list[str] = []
        for para in text.split("\n\n"):
            lines = para.splitlines()
            if any(line.startswith(" ") for line in lines):
                out.append("\n".join(indent + line for line in lines))
            else:
                out.append(super()._fill_text(para, width, indent))
        return "\n\n".join(out)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors, "did you mean" suggestions, unknown options first."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)
        self._last_args: list[str] = []

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._last_args = list(sys.argv[1:] if args is None else args)
        parsed, extras = super().parse_known_args(args, namespace)
        if extras and self._subparsers is None and self.prog != "odfweb3":
            # A command reports its own leftovers, so the suggestion comes from its options.
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices = action.choices
        if choices is not None and value not in choices:
            names = [str(c) for c in choices]
            hint = suggest(str(value), names)
            what = "command" if isinstance(action, argparse._SubParsersAction) else "choice"
            raise argparse.ArgumentError(
                action,
                f"unknown {what} {value!r}"
                + (f" (did you mean {hint}?)" if hint else f" (choose from {', '.join(names)})"),
            )
        super()._check_value(action, value)

    def _parse_optional(self, arg_string: str) -> Any:
        # A whole Arweave ID that begins with "-" is a value (an option's or a positional
        # argument's), not an option: no option of ours is 43 characters long. (argparse's
        # hook for "is this word an option?"; None means a value.)
        if _ARWEAVE_ID.fullmatch(arg_string) and arg_string not in self._option_string_actions:
            return None
        return super()._parse_optional(arg_string)

    def _unknown_options(self) -> list[str]:
        """Option-like words of the last parse that name no option of this parser."""
        known = [s for s in self._option_string_actions if s.startswith("--")]
        shorts = {s[1] for s in self._option_string_actions if len(s) == 2 and s[0] == "-"}
        unknown = []
        for word in self._last_args:
            if word == "--":
                break
            if _ARWEAVE_ID.fullmatch(word):
                continue  # a value (see _parse_optional)
            if word.startswith("--"):
                key = word.split("=", 1)[0]
                if key in known or sum(k.startswith(key) for k in known) == 1:
                    continue
                unknown.append(key)
            elif _is_unknown_short(word, shorts):
                unknown.append(word[:2])
        return unknown

    def error(self, message: str) -> NoReturn:
        # An unknown option explains a "required" error better than the error does:
        # `--too x` must say "unknown option --too (did you mean --to?)", not "--to missing".
        unknown = self._unknown_options()
        if unknown and message.startswith(("the following arguments", "unrecognized arguments")):
            long = unknown[0].startswith("--")
            known = [s for s in self._option_string_actions if s.startswith("--") == long]
            hint = suggest(unknown[0], known)
            message = f"unknown option {unknown[0]}" + (f" (did you mean {hint}?)" if hint else "")
        message = re.sub(r"^argument (?:COMMAND|SUBCOMMAND|ACTION): ", "", message)
        where = self.prog.removeprefix("odfweb3").strip()
        see = f"odfweb3 {where} --help" if where else "odfweb3 --help"
        raise UsageError(f"{where + ': ' if where else ''}{message} (see {see})")


def _is_unknown_short(word: str, shorts: set[str]) -> bool:
    """``-x…`` where ``x`` is no short option (a negative number is a value, not an option)."""
    return (
        word.startswith("-") and len(word) > 1 and not word[1].isdigit() and (word[1] not in shorts)
    )


def suggest(word: str, choices: Sequence[str]) -> str | None:
    """The closest of ``choices`` to a mistyped ``word`` (difflib), or None."""
    import difflib  # only for a mistyped word

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return close[0] if close else None


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    g = common.add_argument_group("output")
    # SUPPRESS: an option absent after the subcommand must not undo one given before it.
    quiet = argparse.SUPPRESS
    g.add_argument(
        "--json",
        action="store_true",
        default=quiet,
        help="machine-readable output (an error too: one JSON object on stdout)",
    )
    g.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=quiet,
        help="more detail on stderr (what was checked, sent, skipped)",
    )
    g.add_argument(
        "-q", "--quiet", action="store_true", default=quiet, help="print nothing but errors"
    )
    g.add_argument("--config", metavar="FILE", default=quiet, help="configuration file")
    return common


def _leaf_parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _leaf_parsers(sub, (*path, name))


def build_parser() -> argparse.ArgumentParser:
    """The whole command line (also used to generate the CLI reference, completion, man)."""
    from odfweb3.cli import dataset_cmds, meta_cmds

    common = _common()
    parser = _Parser(
        prog="odfweb3",
        description="Publish ODF datasets to IPFS and Arweave; resolve, pull and verify them.",
        parents=[common],
        epilog="Exit codes: 0 ok, 1 check found differences, 2 error, 64 usage, 65 bad or "
        "corrupt data, 66 not found, 69 backend, 70 bug, 74 local I/O, 75 conflict or not "
        "confirmed yet (try again later), 77 token "
        "refused or a name's key missing, 78 config, 130 interrupted. Without a command, "
        "odfweb3 prints this help and exits 0 (as ipfs does).",
    )
    parser.add_argument("-V", "--version", action="version", version=f"odfweb3 {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    dataset_cmds.register(sub, common)
    for name in (
        "odfweb3.cli.publish_cmds",
        "odfweb3.cli.keys_cmds",
        "odfweb3.cli.remote_cmds",
        "odfweb3.cli.wallet_cmds",
        "odfweb3.cli.describe_cmds",
        "odfweb3.cli.name_cmds",
        "odfweb3.cli.history_cmds",
        "odfweb3.cli.remotes_cmds",
        "odfweb3.cli.config_cmds",
    ):
        try:
            module = __import__(name, fromlist=["register"])
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(sub, common)
    meta_cmds.register(sub, common)
    for path, p in _leaf_parsers(parser):
        if path and p.epilog is None:
            p.epilog = epilog(path)
    return parser


# Options whose value is a bare Arweave address or id: 43 base64url characters, which may
# begin with "-" (about one in 64), which argparse would take for an option.
# An Arweave address or transaction ID: 43 characters of base64url. About one in 64 begins
# with "-", which argparse would take for an option ("--owner: expected one argument";
# `wallet balance -abc…`: "unknown option -a").
_ARWEAVE_ID = re.compile(r"-[A-Za-z0-9_-]{42}")


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """Run the CLI; returns the exit code (the console script exits with it)."""
    env = os.environ if env is None else env
    out = Output()
    argv = list(sys.argv[1:] if argv is None else argv)
    # Known before parsing: a usage error of a `--json` run is JSON too.
    out.json_mode = "--json" in argv[: argv.index("--") if "--" in argv else len(argv)]
    try:
        parser = build_parser()
        if not argv:
            # Bare `odfweb3`: the help on stdout, exit 0, like Kubo's `ipfs` (git exits 1).
            parser.print_help(sys.stdout)
            return 0
        args = parser.parse_args(argv)
        out.json_mode = bool(getattr(args, "json", False))
        quiet = bool(getattr(args, "quiet", False))
        out.verbosity = -1 if quiet else int(getattr(args, "verbose", 0) or 0)
        # Imported here, not at the top: --version and --help need no configuration (and
        # odfweb3.config brings jsonschema and yaml, the largest part of a bare start-up).
        from odfweb3.config import load_config

        config = load_config(getattr(args, "config", None), env=env)
        handler: Handler = args.handler
        code = handler(args, Context(config=config, out=out, env=env))
    except OdfWeb3Error as exc:
        return _fail(out, error_code(exc), exc.exit_code, str(exc))
    except KeyboardInterrupt:
        return _fail(out, "interrupted", 130, "interrupted", prefix="odfweb3: ")
    except BrokenPipeError:
        return 0
    except OSError as exc:
        if exc.errno not in _LOCAL_ERRNOS:
            return _internal(exc, out)
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(
            out,
            "local_io",
            EXIT_LOCAL_IO,
            f"{where}{exc.strerror or exc}; free space or fix permissions "
            "and run again (nothing was half-written)",
        )
    except Exception as exc:  # the last resort: one line, never a traceback
        return _internal(exc, out)
    sys.stdout.flush()
    return code


def _fail(
    out: Output, code: str, exit_code: int, message: str, *, prefix: str = "odfweb3: error: "
) -> int:
    """An error: one line on stderr, and with ``--json`` one JSON object on stdout
    (``{"error": {"code", "exit", "message"}}``), so a script reads every outcome as JSON."""
    sys.stderr.write(f"{prefix}{terminal_text(message, one_line=True)}\n")
    if out.json_mode:
        # json.dumps escapes every control character: the message is shown as it is.
        error = {"code": code, "exit": exit_code, "message": message}
        try:
            sys.stdout.write(json.dumps({"error": error}) + "\n")
            sys.stdout.flush()
        except (BrokenPipeError, ValueError):  # stdout closed: the line on stderr stands
            pass
    return exit_code


def _internal(exc: BaseException, out: Output) -> int:
    """A bug: one line (the traceback only at ``-vv``), exit 70."""
    text = " ".join(str(exc).split())[:300]
    _fail(
        out,
        "internal",
        EXIT_INTERNAL,
        f"{type(exc).__name__}: {text}; this is a bug in odfweb3, "
        "please report it (run with -vv for the traceback)",
        prefix="odfweb3: internal error: ",
    )
    if out.verbosity >= 2:
        import traceback  # a bug's report only: linecache, textwrap

        traceback.print_exception(exc, file=sys.stderr)
    return EXIT_INTERNAL


def entry() -> None:  # pragma: no cover - console script shim
    """Console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
