"""Shell completion and the man page: generated from the parser, and run by real shells.

The bash script is always run in bash (COMP_WORDS / COMPREPLY, as bash-completion
does); zsh and fish scripts are parsed by those shells, and fish completes a few lines
(Debian packages zsh and fish, installed by `make test` through tools/test_packages.sh).
The man page is rendered by groff with every warning enabled. "In sync" means: every
command and option the parser knows is in each script and in the page.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys

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


def _bash_line(script: str, tmp_path, line: str) -> list[str]:
    """Complete ``line`` (the cursor at its end) as bash does: words split at COMP_WORDBREAKS
    (':' included, so ``car:./o`` is three words), COMP_LINE and COMP_POINT set, and
    ``odfweb3`` the CLI of this checkout run with its own HOME."""
    driver = (
        script
        + f'\nodfweb3() {{ "{sys.executable}" -m odfweb3.cli.main "$@"; }}\n'
        + f"COMP_LINE={shlex.quote(line)}\nCOMP_POINT=${{#COMP_LINE}}\n"
        + "COMP_WORDBREAKS=$' \\t\\n\"\\'><=;|&(:'\n"
        # Split as readline does: whitespace, and ':' as a word of its own.
        + 'read -ra COMP_WORDS <<< "${COMP_LINE//:/ : }"\n'
        + '[[ $COMP_LINE == *[[:space:]] || $COMP_LINE == *: ]] && COMP_WORDS+=("")\n'
        + "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n_odfweb3\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
    )
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
    }
    r = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", driver],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    return [line for line in r.stdout.splitlines() if line]


@pytest.fixture
def machine(tmp_path):
    """A working directory with a remote, a pinning service and an output directory."""
    (tmp_path / "cfg" / "odfweb3").mkdir(parents=True)
    (tmp_path / "cfg" / "odfweb3" / "odfweb3.yaml").write_text(
        "pinning:\n  services:\n    pina:\n      endpoint: https://pin.example/psa\n"
    )
    (tmp_path / "outdir").mkdir()
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert main(["remote", "add", "origin", "car:./outdir"], env=env) == 0
    finally:
        os.chdir(cwd)
    return tmp_path


def test_bash_completes_target_kinds_services_and_remotes_after_to(capsys, machine):
    script = _script(capsys, "bash")
    got = _bash_line(script, machine, "odfweb3 publish ./ds --to ")
    from odfweb3.backends import target_kinds

    kinds = {k for k in target_kinds()}
    assert {"car", "bundle", "ipfs", "arweave", "turbo", "pinning"} <= kinds
    expected = {f"{k}:" if k in ("car", "bundle") else k for k in kinds}
    assert set(got) == expected | {"pinning:pina", "origin"}
    # The same after --against, and the prefix narrows.
    assert _bash_line(script, machine, "odfweb3 verify ./ds --against or") == ["origin"]
    assert _bash_line(script, machine, "odfweb3 publish ./ds --json --to tu") == ["turbo"]


def test_bash_completes_the_directory_after_car_colon(capsys, machine):
    script = _script(capsys, "bash")
    # bash replaces only what follows the last ':', so the replies are the paths alone.
    assert _bash_line(script, machine, "odfweb3 publish ./ds --to car:./out") == ["./outdir"]
    assert _bash_line(script, machine, "odfweb3 publish ./ds --to pinning:") == ["pina"]
    assert _bash_line(script, machine, "odfweb3 publish ./ds --to ca") == ["car:"]


def test_completion_lists_dataset_names_of_the_kamu_workspace(capsys, tmp_path):
    from odfweb3.odf.builder import create_root_dataset

    ws = tmp_path / ".kamu" / "datasets"
    create_root_dataset(ws / "weather", blocks=1, data_bytes=64, seed=3101, fsync=False)
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert main(["completion", "--list", "datasets"], env=env) == 0
    finally:
        os.chdir(cwd)
    assert capsys.readouterr().out.split() == ["weather"]
    script = _script(capsys, "bash")
    got = _bash_line(script, tmp_path, "odfweb3 publish ./deriv --with-inputs we")
    assert got == ["weather"]


def test_fish_completes_targets_after_to_and_zsh_asks_the_same(capsys, machine):
    script_file = machine / "odfweb3.fish"
    script_file.write_text(_script(capsys, "fish"))
    fish = shutil.which("fish")
    assert fish is not None, "fish is not installed: run tools/test_packages.sh"
    cli = f"function odfweb3; {shlex.quote(sys.executable)} -m odfweb3.cli.main $argv; end"
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(machine / "home"),
        "XDG_CONFIG_HOME": str(machine / "cfg"),
    }
    r = subprocess.run(
        [
            fish,
            "--no-config",
            "-c",
            f"{cli}; source {script_file}; complete -C 'odfweb3 publish ds --to '",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        cwd=machine,
        env=env,
    )
    got = {line.split("\t")[0] for line in r.stdout.splitlines()}
    assert {"car:", "bundle:", "ipfs", "arweave", "turbo", "pinning:pina", "origin"} <= got
    zsh = _script(capsys, "zsh")
    assert "odfweb3 completion --list ${_odfweb3_dynamic[$prev]}" in zsh
    assert "'--to' 'targets'" in zsh
