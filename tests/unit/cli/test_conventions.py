"""CLI conventions of issue 20: typos, bare command, version, examples in every --help."""

from __future__ import annotations

import argparse
import json
import shlex

import pytest

from odfweb3 import __version__
from odfweb3.cli.examples import EXAMPLES
from odfweb3.cli.main import build_parser, main
from odfweb3.errors import UsageError


def run(capsys, *argv):
    code = main(list(argv), env={})
    out, err = capsys.readouterr()
    return code, out, err


def _leaves(parser, path=()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
    for action in subs:
        for name, sub in action.choices.items():
            yield from _leaves(sub, (*path, name))


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["publsh"], "unknown command 'publsh' (did you mean publish?)"),
        (["verfy", "x"], "did you mean verify?"),
        (["publsh", "./ds", "--to", "car:x"], "unknown command 'publsh' (did you mean publish?)"),
        (["keys", "identty", "list"], "keys: unknown command 'identty' (did you mean identity?)"),
        (["publish", "./ds", "--too", "car:x"], "unknown option --too (did you mean --to?)"),
        (["validate", "./ds", "--dep"], "unknown option --dep (did you mean --deep?)"),
        (["describe", "x", "--format", "jsnld"], "unknown choice 'jsnld' (did you mean jsonld?)"),
    ],
)
def test_typos_get_a_suggestion_in_one_line(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 64 and out == ""
    assert err.count("\n") == 1 and needle in err, err
    # One prefix, not `odfweb3: error: odfweb3: ...`.
    assert err.startswith("odfweb3: error: ") and "odfweb3: error: odfweb3" not in err
    assert "--help)" in err


def test_a_missing_required_option_is_still_reported_as_missing(capsys):
    code, _, err = run(capsys, "keys", "export", "./ds")
    assert code == 64
    assert err == (
        "odfweb3: error: keys export: the following arguments are required: --out "
        "(see odfweb3 keys export --help)\n"
    )


def test_bare_command_prints_help_and_exits_0_like_ipfs(capsys):
    code, out, err = run(capsys)
    assert code == 0 and err == ""
    assert out.startswith("usage: odfweb3") and "publish" in out and "Exit codes" in out


def test_version_three_ways(capsys):
    for argv in (["-V"], ["--version"], ["version"]):
        with pytest.raises(SystemExit) if argv[0].startswith("-") else _nothing():
            code, out, _ = run(capsys, *argv)
            assert code == 0
        out = out if not argv[0].startswith("-") else capsys.readouterr().out
        assert out == f"odfweb3 {__version__}\n"
    code, out, _ = run(capsys, "version", "--json")
    assert code == 0 and json.loads(out)["version"] == __version__


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_every_command_has_examples_that_parse():
    parser = build_parser()
    leaves = [path for path, _ in _leaves(parser)]
    assert ("publish",) in leaves and ("keys", "identity", "new") in leaves
    for path, sub in _leaves(parser):
        assert path in EXAMPLES, f"odfweb3 {' '.join(path)}: no examples in its --help"
        assert sub.epilog and sub.epilog.startswith("examples:")
        help_text = sub.format_help()
        assert "examples:\n  odfweb3 " in help_text  # kept as written, not re-wrapped
    assert set(EXAMPLES) <= set(leaves), "examples for a command that does not exist"
    for path, lines in EXAMPLES.items():
        for line in lines:
            words = shlex.split(line, comments=True)
            for stop in (">", "&&", "|"):
                if stop in words:
                    words = words[: words.index(stop)]
            assert words[: 1 + len(path)] == ["odfweb3", *path], line
            args = build_parser().parse_args(words[1:])  # raises on a stale example
            assert callable(args.handler)


def test_example_gets_a_fresh_dataset_id_unless_seeded(capsys, tmp_path):
    ids = []
    for name, extra in (("a", []), ("b", []), ("c", ["--seed", "7"]), ("d", ["--seed", "7"])):
        code, out, _ = run(
            capsys, "example", str(tmp_path / name), "--blocks", "1", "--json", *extra
        )
        assert code == 0
        ids.append(json.loads(out))
    assert ids[0]["datasetId"] != ids[1]["datasetId"]
    assert ids[0]["head"] != ids[1]["head"]
    assert ids[2]["datasetId"] == ids[3]["datasetId"] and ids[2]["head"] == ids[3]["head"]


def test_two_unseeded_examples_are_two_datasets_not_a_divergence(capsys, tmp_path):
    # Before issue 20 both had did(seed 0): the second publish failed as "histories diverged".
    out_dir = tmp_path / "out"
    codes = []
    for name in ("a", "b"):
        ds = tmp_path / name
        assert run(capsys, "example", str(ds), "--blocks", "1", "-q")[0] == 0
        codes.append(run(capsys, "publish", str(ds), "--to", f"car:{out_dir}"))
    assert codes[0][0] == 0
    code, _, err = codes[1]
    assert code == 75 and "holds dataset" in err and "use another output directory" in err
    assert "diverged" not in err
    code, _, err = run(capsys, "publish", str(tmp_path / "b"), "--to", f"car:{tmp_path / 'out2'}")
    assert code == 0, err


# About one Arweave address in 64 begins with "-" (base64url): argparse took it for an option
# ("--owner: expected one argument"), found by a hostile-gateway test whose random wallet had one.
DASH_ADDRESS = "-" + "a1_B" * 10 + "xy"


def test_an_arweave_address_beginning_with_a_dash_is_a_value():
    parser = build_parser()
    args = parser.parse_args(["resolve", "did:odf:fed01" + "ab" * 33, "--owner", DASH_ADDRESS])
    assert args.owner == DASH_ADDRESS
    # a positional one too (`wallet balance ADDRESS`), and `--owner=` as before
    assert parser.parse_args(["wallet", "balance", DASH_ADDRESS]).wallet == DASH_ADDRESS
    args = parser.parse_args(["resolve", "X", f"--owner={DASH_ADDRESS}"])
    assert args.owner == DASH_ADDRESS
    # only a whole address: a short option stays an option
    with pytest.raises(UsageError, match="--owner: expected one argument"):
        parser.parse_args(["resolve", "X", "--owner", "-v"])


def test_wallet_balance_takes_a_dash_address(capsys):
    # The gateway is unreachable: a network error, not a usage error.
    code, _, err = run(capsys, "wallet", "balance", DASH_ADDRESS, "--gateway", "http://127.0.0.1:9")
    assert code != 64 and "unknown option" not in err, err
    assert len(err.strip().splitlines()) == 1


def test_main_takes_a_dash_address_after_owner(capsys):
    code, _, err = run(capsys, "resolve", "did:odf:not-a-did", "--owner", DASH_ADDRESS)
    assert "expected one argument" not in err
    assert code != 0 and len(err.strip().splitlines()) == 1
