"""Shell completion and the man page: generated from the parser, and run by real shells.

The bash script is always run in bash (COMP_WORDS / COMPREPLY, as bash-completion
does); zsh and fish scripts are parsed by those shells, and fish completes a few lines
(Debian packages zsh and fish, installed by `make test` through tools/test_packages.sh).
The man page is rendered by groff with every warning enabled. "In sync" means: every
command and option the parser knows is in each script and in the page.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from odfweb3.cli.completion import SHELLS, command_tree, render
from odfweb3.cli.main import build_parser, main
from odfweb3.cli.manpage import render as render_man


def _script(capsys, shell: str) -> str:
    assert main(["completion", shell], env={}) == 0
    return capsys.readouterr().out


def _bash_complete(script: str, *words: str) -> list[str]:
    driver = (
        script
        + "\nCOMP_WORDS=("
        + " ".join(f"'{w}'" for w in words)
        + ")\n"
        + "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n_odfweb3\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
    )
    r = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", driver],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return [line for line in r.stdout.splitlines() if line]


def test_the_command_prints_what_the_generator_renders(capsys):
    for shell in SHELLS:
        assert _script(capsys, shell) == render(build_parser(), shell)
    assert main(["man"], env={}) == 0
    assert capsys.readouterr().out == render_man(build_parser())


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (("odfweb3", "pub"), ["publish"]),
        (("odfweb3", "--json", "ver"), ["verify", "version"]),
        (("odfweb3", "keys", ""), ["identity", "recipients", "rotate", "export", "import"]),
        (("odfweb3", "keys", "identity", ""), ["new", "list", "export"]),
        (("odfweb3", "publish", "./ds", "--cid-version", ""), ["0", "1"]),
        (("odfweb3", "--config", "x.yaml", "completion", ""), ["bash", "zsh", "fish"]),
        (
            ("odfweb3", "describe", "ds", "--format", ""),
            ["jsonld", "ttl", "croissant", "dcat", "datacite"],
        ),
        (("odfweb3", "wallet", "b"), ["balance"]),
    ],
)
def test_bash_completes_commands_and_choices(capsys, words, expected):
    assert _bash_complete(_script(capsys, "bash"), *words) == expected


def test_bash_completes_every_option_of_every_command(capsys):
    script = _script(capsys, "bash")
    for node in command_tree(build_parser()):
        if not node.options:
            continue
        got = set(_bash_complete(script, "odfweb3", *node.path, "--"))
        assert {o for o in node.options if o.startswith("--")} == got, node.key


def test_zsh_and_fish_scripts_parse_and_know_every_command(capsys):
    nodes = command_tree(build_parser())
    for shell in ("zsh", "fish"):
        script = _script(capsys, shell)
        for node in nodes:
            for name in node.subcommands:
                assert name in script
            for option in node.options:
                assert option.lstrip("-") in script
        exe = shutil.which(shell)
        assert exe is not None, f"{shell} is not installed: run tools/test_packages.sh"
        r = subprocess.run([exe, "-n"], input=script, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr


def test_fish_completes_nested_commands(capsys, tmp_path):
    script_file = tmp_path / "odfweb3.fish"
    script_file.write_text(_script(capsys, "fish"))
    fish = shutil.which("fish")
    assert fish is not None, "fish is not installed: run tools/test_packages.sh"
    r = subprocess.run(
        [fish, "--no-config", "-c", f"source {script_file}; complete -C 'odfweb3 keys identity '"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert sorted(line.split("\t")[0] for line in r.stdout.splitlines()) == [
        "export",
        "list",
        "new",
    ]


def test_man_page_renders_without_warnings_and_lists_everything(tmp_path):
    page = render_man(build_parser())
    assert page.isascii()
    path = tmp_path / "odfweb3.1"
    path.write_text(page)
    r = subprocess.run(
        ["groff", "-man", "-Tutf8", "-ww", "-z", str(path)], capture_output=True, text=True
    )
    assert r.returncode == 0 and r.stderr == "", r.stderr
    text = subprocess.run(
        ["groff", "-man", "-Tascii", "-P-cbou", str(path)], capture_output=True, text=True
    ).stdout
    for node in command_tree(build_parser()):
        if node.path:
            assert " ".join(("odfweb3", *node.path)) in text
        for option in node.options:
            assert option in text, (node.key, option)
    assert "EXIT STATUS" in text and "Examples:" in text
