"""Shell completion scripts (bash, zsh, fish) generated from the argparse parser.

Nothing here is written by hand per command: :func:`command_tree` walks the parser
once and each shell's script is that tree as data plus one small walker that finds
the command path under the cursor (skipping options and the values they take). So a
new command or option completes as soon as it exists. Values that depend on the machine
(target kinds from the backend registry, remotes, pinning services, a kamu workspace's
dataset names) are asked at TAB time from ``odfweb3 completion --list KIND`` (:data:`DYNAMIC`
says which options take them), as git's script asks ``git remote``.
``tests/unit/cli/test_completion.py`` runs the bash script in bash (and the others through
their shells when installed).

Install: ``odfweb3 completion bash > ~/.local/share/bash-completion/completions/odfweb3``,
``odfweb3 completion zsh > ~/.zfunc/_odfweb3`` (a directory on ``$fpath``),
``odfweb3 completion fish > ~/.config/fish/completions/odfweb3.fish``.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from odfweb3.config import Config

__all__ = [
    "DYNAMIC",
    "SHELLS",
    "VALUE_KINDS",
    "CommandNode",
    "candidates",
    "command_tree",
    "render",
]

SHELLS: Final = ("bash", "zsh", "fish")

#: What the scripts ask ``odfweb3 completion --list KIND`` for at TAB time: words that
#: depend on this machine (the backend registry, remotes.json, the configuration, a kamu
#: workspace), not on the parser.
VALUE_KINDS: Final = ("targets", "datasets")

#: Options whose value is one of those kinds (whatever the command).
DYNAMIC: Final[dict[str, str]] = {
    "--to": "targets",
    "--against": "targets",
    "--with-inputs": "datasets",
    "--inputs": "datasets",
}


def candidates(kind: str, config: Config, cwd: Path, env: Mapping[str, str]) -> list[str]:
    """The words ``kind`` completes to here: for ``targets`` every target kind the backend
    registry knows (``car:`` and ``bundle:`` with their ``:``, the rest bare), each
    configured pinning service (``pinning:NAME``) and each remote's name; for ``datasets``
    the dataset names of the kamu workspace around ``cwd``. Nothing that cannot be read
    is an error here: a TAB press prints what it can."""
    from odfweb3.errors import OdfWeb3Error

    words: list[str] = []
    if kind == "targets":
        from odfweb3.backends import target_kinds, target_traits
        from odfweb3.publish.remotes import Remotes

        for k in target_kinds():
            words.append(f"{k}:" if target_traits(k).offline else k)
        services = config.get("pinning", "services", default={}) or {}
        words += [f"pinning:{name}" for name in services]
        with contextlib.suppress(OdfWeb3Error):
            words += list(Remotes(config.state_dir).load())
    elif kind == "datasets":
        from odfweb3.odf.kamu_workspace import find_workspace, workspace_datasets

        try:
            workspace = find_workspace(cwd, env)
            if workspace is not None:
                words += [d.alias for d in workspace_datasets(workspace) if d.alias]
        except (OdfWeb3Error, OSError):
            pass
    return list(dict.fromkeys(words))


@dataclass
class CommandNode:
    """One command of the tree: its words, subcommands, options and value choices."""

    path: tuple[str, ...]
    help: str = ""
    subcommands: dict[str, str] = field(default_factory=dict)  # name -> help
    options: dict[str, str] = field(default_factory=dict)  # option string -> help
    valued: list[str] = field(default_factory=list)  # options that take a value
    choices: dict[str, list[str]] = field(default_factory=dict)  # option -> its choices
    positional_choices: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        """The command path as one string: ``odfweb3 keys identity``."""
        return " ".join(("odfweb3", *self.path))


def command_tree(parser: argparse.ArgumentParser) -> list[CommandNode]:
    """Every command of ``parser`` (the root first), as completion data."""
    nodes: list[CommandNode] = []

    def walk(p: argparse.ArgumentParser, path: tuple[str, ...], help_text: str) -> None:
        node = CommandNode(path, help_text)
        nodes.append(node)
        children: list[tuple[str, argparse.ArgumentParser, str]] = []
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                helps = {a.dest: a.help or "" for a in action._choices_actions}
                for name, sub in action.choices.items():
                    node.subcommands[name] = helps.get(name, "")
                    children.append((name, sub, helps.get(name, "")))
            elif action.option_strings:
                if action.help == argparse.SUPPRESS:
                    continue
                for opt in action.option_strings:
                    node.options[opt] = action.help or ""
                    if action.nargs != 0:
                        node.valued.append(opt)
                        if action.choices is not None:
                            node.choices[opt] = [str(c) for c in action.choices]
            elif action.choices is not None:
                node.positional_choices += [str(c) for c in action.choices]
        for name, sub, h in children:
            walk(sub, (*path, name), h)

    walk(parser, (), parser.description or "")
    return nodes


def _words(items: list[str] | dict[str, str]) -> str:
    return " ".join(items)


def _bash(nodes: list[CommandNode]) -> str:
    def table(name: str, rows: dict[str, str]) -> list[str]:
        lines = [f"declare -gA {name}=("]
        lines += [f'  ["{k}"]="{v}"' for k, v in rows.items() if v]
        return [*lines, ")"]

    sub = {n.key: _words(n.subcommands) for n in nodes}
    opts = {n.key: _words(n.options) for n in nodes}
    valued = {n.key: _words(n.valued) for n in nodes}
    args = {n.key: _words(n.positional_choices) for n in nodes}
    choices = {f"{n.key} {o}": " ".join(c) for n in nodes for o, c in n.choices.items()}
    lines = [
        "# bash completion for odfweb3 (generated by `odfweb3 completion bash`; do not edit)",
        *table("_odfweb3_sub", sub),
        *table("_odfweb3_opts", opts),
        *table("_odfweb3_valued", valued),
        *table("_odfweb3_args", args),
        *table("_odfweb3_choices", choices),
        *table("_odfweb3_dynamic", DYNAMIC),
        _BASH_BODY,
    ]
    return "\n".join(lines) + "\n"


_BASH_BODY = r"""_odfweb3() {
    local cur prev w i skip=0 cmdpath=odfweb3
    cur="${COMP_WORDS[COMP_CWORD]}"
    prev="${COMP_WORDS[COMP_CWORD-1]}"
    for ((i = 1; i < COMP_CWORD; i++)); do
        w="${COMP_WORDS[i]}"
        if ((skip)); then skip=0; continue; fi
        if [[ $w == -* ]]; then
            [[ " ${_odfweb3_valued[$cmdpath]} " == *" $w "* ]] && skip=1
            continue
        fi
        [[ " ${_odfweb3_sub[$cmdpath]} " == *" $w "* ]] && cmdpath="$cmdpath $w"
    done
    # A target or dataset value: the words of `odfweb3 completion --list KIND`. Bash splits
    # words at ':' (COMP_WORDBREAKS), so the value is read from the line itself and only
    # the part after its last ':' is replaced (as bash-completion's __ltrim_colon_completions).
    local line="${COMP_LINE:0:${COMP_POINT:-${#COMP_LINE}}}" vopt="" vcur="" kind="" f
    local -a toks=() cands=()
    read -ra toks <<< "$line"
    if [[ $line == *[[:space:]] ]]; then
        vopt="${toks[${#toks[@]}-1]}"
    elif ((${#toks[@]} > 1)); then
        vcur="${toks[${#toks[@]}-1]}"; vopt="${toks[${#toks[@]}-2]}"
    fi
    kind="${_odfweb3_dynamic[$vopt]}"
    if [[ -n $kind && " ${_odfweb3_valued[$cmdpath]} " == *" $vopt "* ]]; then
        if [[ $vcur == car:* || $vcur == bundle:* ]]; then
            while IFS= read -r f; do cands+=("${vcur%%:*}:$f"); done < <(compgen -f -- "${vcur#*:}")
        elif [[ $kind == datasets ]]; then
            while IFS= read -r f; do cands+=("$f"); done < <(compgen -f -- "$vcur")
        fi
        local listed
        listed="$(odfweb3 completion --list "$kind" 2>/dev/null)"
        while IFS= read -r f; do
            [[ -n $f ]] && cands+=("$f")
        done < <(compgen -W "$listed" -- "$vcur")
        local pre="${vcur%"${vcur##*:}"}"
        if [[ -n $pre && $COMP_WORDBREAKS == *:* ]]; then cands=("${cands[@]#"$pre"}"); fi
        COMPREPLY=("${cands[@]}")
        if ((${#cands[@]} == 1)) && [[ ${cands[0]} == *: || -z ${cands[0]} ]]; then
            compopt -o nospace 2>/dev/null
        fi
        return 0
    fi
    if [[ $prev == -* && " ${_odfweb3_valued[$cmdpath]} " == *" $prev "* ]]; then
        if [[ -n ${_odfweb3_choices[$cmdpath $prev]} ]]; then
            COMPREPLY=($(compgen -W "${_odfweb3_choices[$cmdpath $prev]}" -- "$cur"))
        else
            COMPREPLY=($(compgen -f -- "$cur"))
        fi
        return 0
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "${_odfweb3_opts[$cmdpath]}" -- "$cur"))
    elif [[ -n ${_odfweb3_sub[$cmdpath]} ]]; then
        COMPREPLY=($(compgen -W "${_odfweb3_sub[$cmdpath]}" -- "$cur"))
    elif [[ -n ${_odfweb3_args[$cmdpath]} ]]; then
        COMPREPLY=($(compgen -W "${_odfweb3_args[$cmdpath]}" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
    return 0
}
complete -o filenames -F _odfweb3 odfweb3"""


def _zsh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _zsh(nodes: list[CommandNode]) -> str:
    def table(name: str, rows: dict[str, str]) -> list[str]:
        lines = [f"typeset -gA {name}", f"{name}=("]
        lines += [f"  {_zsh_quote(k)} {_zsh_quote(v)}" for k, v in rows.items() if v]
        return [*lines, ")"]

    lines = [
        "#compdef odfweb3",
        "# zsh completion for odfweb3 (generated by `odfweb3 completion zsh`; do not edit)",
        *table("_odfweb3_sub", {n.key: _words(n.subcommands) for n in nodes}),
        *table("_odfweb3_opts", {n.key: _words(n.options) for n in nodes}),
        *table("_odfweb3_valued", {n.key: _words(n.valued) for n in nodes}),
        *table("_odfweb3_args", {n.key: _words(n.positional_choices) for n in nodes}),
        *table(
            "_odfweb3_choices",
            {f"{n.key} {o}": " ".join(c) for n in nodes for o, c in n.choices.items()},
        ),
        *table("_odfweb3_dynamic", DYNAMIC),
        _ZSH_BODY,
    ]
    return "\n".join(lines) + "\n"


_ZSH_BODY = r"""_odfweb3() {
    local cmdpath=odfweb3 w i skip=0
    local cur=${words[CURRENT]} prev=${words[CURRENT-1]}
    for (( i = 2; i < CURRENT; i++ )); do
        w=${words[i]}
        if (( skip )); then skip=0; continue; fi
        if [[ $w == -* ]]; then
            [[ " ${_odfweb3_valued[$cmdpath]} " == *" $w "* ]] && skip=1
            continue
        fi
        [[ " ${_odfweb3_sub[$cmdpath]} " == *" $w "* ]] && cmdpath="$cmdpath $w"
    done
    if [[ -n ${_odfweb3_dynamic[$prev]} && " ${_odfweb3_valued[$cmdpath]} " == *" $prev "* ]]; then
        local -a words
        words=(${(f)"$(odfweb3 completion --list ${_odfweb3_dynamic[$prev]} 2>/dev/null)"})
        compadd -S '' -- ${(M)words:#*:}
        compadd -- ${words:#*:}
        _files
        return
    fi
    if [[ $prev == -* && " ${_odfweb3_valued[$cmdpath]} " == *" $prev "* ]]; then
        if [[ -n ${_odfweb3_choices[$cmdpath $prev]} ]]; then
            compadd -- ${=_odfweb3_choices[$cmdpath $prev]}
        else
            _files
        fi
        return
    fi
    if [[ $cur == -* ]]; then
        compadd -- ${=_odfweb3_opts[$cmdpath]}
    elif [[ -n ${_odfweb3_sub[$cmdpath]} ]]; then
        compadd -- ${=_odfweb3_sub[$cmdpath]}
    elif [[ -n ${_odfweb3_args[$cmdpath]} ]]; then
        compadd -- ${=_odfweb3_args[$cmdpath]}
    else
        _files
    fi
}
if [[ ${zsh_eval_context[-1]} == loadautofunc ]]; then
    _odfweb3 "$@"
else
    compdef _odfweb3 odfweb3
fi"""


def _fish_quote(text: str) -> str:
    return "'" + " ".join(text.split()).replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish(nodes: list[CommandNode]) -> str:
    lines = [
        "# fish completion for odfweb3 (generated by `odfweb3 completion fish`; do not edit)",
        "function __odfweb3_table",
        "    switch $argv[1]",
    ]
    for n in nodes:
        for kind, words in (
            ("sub", _words(n.subcommands)),
            ("valued", _words(n.valued)),
        ):
            if words:
                lines += [
                    f"        case {_fish_quote(kind + ':' + n.key)}",
                    f"            string split ' ' -- {_fish_quote(words)}",
                ]
    lines += ["    end", "end", _FISH_BODY]
    for n in nodes:
        cond = f"-n {_fish_quote('__odfweb3_at ' + _fish_quote(n.key))}"
        for name, h in n.subcommands.items():
            lines.append(f"complete -c odfweb3 {cond} -f -a {name} -d {_fish_quote(h)}")
        for choice in n.positional_choices:
            lines.append(f"complete -c odfweb3 {cond} -f -a {_fish_quote(choice)}")
        for opt, h in n.options.items():
            flag = f"-l {opt[2:]}" if opt.startswith("--") else f"-s {opt[1:]}"
            extra = ""
            if opt in n.choices:
                extra = f" -x -a {_fish_quote(' '.join(n.choices[opt]))}"
            elif opt in n.valued and opt in DYNAMIC:
                listing = f"(odfweb3 completion --list {DYNAMIC[opt]} 2>/dev/null)"
                extra = f" -r -a {_fish_quote(listing)}"
            elif opt in n.valued:
                extra = " -r"
            lines.append(f"complete -c odfweb3 {cond} {flag}{extra} -d {_fish_quote(h)}")
    return "\n".join(lines) + "\n"


_FISH_BODY = r"""function __odfweb3_path
    set -l cmdpath odfweb3
    set -l skip 0
    for w in (commandline -opc)[2..-1]
        if test $skip = 1
            set skip 0
            continue
        end
        if string match -q -- '-*' $w
            if contains -- $w (__odfweb3_table "valued:$cmdpath")
                set skip 1
            end
            continue
        end
        if contains -- $w (__odfweb3_table "sub:$cmdpath")
            set cmdpath "$cmdpath $w"
        end
    end
    echo $cmdpath
end
function __odfweb3_at
    test (__odfweb3_path) = "$argv[1]"
end"""


def render(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script for ``shell`` (one of :data:`SHELLS`)."""
    nodes = command_tree(parser)
    if shell == "bash":
        return _bash(nodes)
    if shell == "zsh":
        return _zsh(nodes)
    if shell == "fish":
        return _fish(nodes)
    raise ValueError(f"no completion for shell {shell!r}; choose from {', '.join(SHELLS)}")
