"""The ``odfweb3`` command: one program, subcommands.

Conventions every subcommand follows:

- ``--json``: exactly one JSON document on stdout; ``-v`` more detail on stderr,
  ``-q`` nothing but errors; progress bars (bytes and rate) on a terminal.
- ``--config FILE``: settings (see :mod:`odfweb3.config`); ``ODFWEB3_*`` overrides.
- Errors: one line on stderr, ``odfweb3: error: <what failed>: <where>; <what to do>``,
  no traceback; anything that is not an :class:`~odfweb3.errors.OdfWeb3Error` is a
  bug and does show one.

Exit codes:

====  =====================================================================
0     success (for ``validate``/``verify``: everything checked is fine)
1     the check ran and found problems (invalid dataset, replicas differ)
2     other odfweb3 error
64    usage error (bad arguments)
65    bad data: malformed input or integrity failure (hash mismatch, broken chain)
66    not found (dataset, object, key, record)
69    backend unavailable or rejected the request (node, gateway)
75    conflict: target head does not descend from ours, or a concurrent publish won
78    configuration error (odfweb3.yaml, ODFWEB3_*)
130   interrupted (Ctrl-C)
====  =====================================================================
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from odfweb3 import __version__
from odfweb3.cli.output import Output
from odfweb3.config import Config, load_config
from odfweb3.errors import OdfWeb3Error, UsageError

__all__ = ["Context", "build_parser", "main"]


@dataclass
class Context:
    """What a subcommand gets: its configuration, its voice and its surroundings."""

    config: Config
    out: Output
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: Path = field(default_factory=Path.cwd)


Handler = Callable[[argparse.Namespace, Context], int]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message} (see --help)")


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    g = common.add_argument_group("output")
    # SUPPRESS: an option absent after the subcommand must not undo one given before it.
    quiet = argparse.SUPPRESS
    g.add_argument("--json", action="store_true", default=quiet, help="machine-readable output")
    g.add_argument("-v", "--verbose", action="count", default=quiet, help="more detail on stderr")
    g.add_argument("-q", "--quiet", action="store_true", default=quiet, help="only errors")
    g.add_argument("--config", metavar="FILE", default=quiet, help="configuration file")
    return common


def build_parser() -> argparse.ArgumentParser:
    """The whole command line (also used to generate the CLI reference)."""
    from odfweb3.cli import dataset_cmds

    common = _common()
    parser = _Parser(
        prog="odfweb3",
        description="Publish ODF datasets to IPFS and Arweave; resolve, pull and verify them.",
        parents=[common],
        epilog="Exit codes: 0 ok, 1 check found problems, 2 error, 64 usage, 65 bad data, "
        "66 not found, 69 backend, 75 conflict, 78 config, 130 interrupted.",
    )
    parser.add_argument("--version", action="version", version=f"odfweb3 {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    dataset_cmds.register(sub, common)
    for name in (
        "odfweb3.cli.publish_cmds",
        "odfweb3.cli.keys_cmds",
        "odfweb3.cli.remote_cmds",
        "odfweb3.cli.wallet_cmds",
        "odfweb3.cli.describe_cmds",
    ):
        try:
            module = __import__(name, fromlist=["register"])
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(sub, common)
    return parser


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """Run the CLI; returns the exit code (the console script exits with it)."""
    env = os.environ if env is None else env
    out = Output()
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        out.json_mode = bool(getattr(args, "json", False))
        quiet = bool(getattr(args, "quiet", False))
        out.verbosity = -1 if quiet else int(getattr(args, "verbose", 0) or 0)
        config = load_config(getattr(args, "config", None), env=env)
        handler: Handler = args.handler
        code = handler(args, Context(config=config, out=out, env=env))
    except OdfWeb3Error as exc:
        sys.stderr.write(f"odfweb3: error: {exc}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("odfweb3: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0
    sys.stdout.flush()
    return code


def entry() -> None:  # pragma: no cover - console script shim
    """Console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
