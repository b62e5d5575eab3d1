"""Secrets typed at a terminal: the prompt names the dataset and a wrong passphrase may be
typed again, three tries in all (as sudo and ssh); a file or the environment gets one.

Run in a real pseudo-terminal that is the CLI's controlling terminal (getpass reads
/dev/tty), on a second machine (its own HOME: no keys) pulling an encrypted ``car:``
publish whose key envelope has a passphrase recipient.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from odfweb3.odf.builder import create_root_dataset
from tests.support.pty_cli import answer_each, run_in_pty

PASSPHRASE = "correct horse battery staple 3141"


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ODFWEB3_", "XDG_"))}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / "cfg"), TERM="xterm", **extra)
    return env


def _cli(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "odfweb3.cli.main", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def _type_at_prompts(
    argv: list[str], cwd: Path, env: dict[str, str], prompt: bytes, answers: list[bytes]
) -> tuple[int, str, int]:
    """Run the CLI on a pty; type the next answer each time ``prompt`` shows."""
    return _type_at_prompts_any(argv, cwd, env, (prompt,), answers)


def _type_at_prompts_any(
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    prompts: tuple[bytes, ...],
    answers: list[bytes],
) -> tuple[int, str, int]:
    """Run the CLI on a pty; type the next answer each time one of ``prompts`` shows
    (counted apart: a prompt that contains another is not counted twice)."""
    run = run_in_pty(
        argv, cwd, env, react=answer_each(prompts, answers), timeout=180, controlling_tty=True
    )
    return run.code, run.text, run.reacted


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    root = tmp_path_factory.mktemp("prompts")
    create_root_dataset(root / "ds", blocks=2, data_bytes=4096, seed=3131, fsync=False)
    env = _env(root / "home", ODFWEB3_PASSPHRASE=PASSPHRASE)
    r = _cli(["keys", "recipients", "add", "ds", "--passphrase"], root, env)
    assert r.returncode == 0, r.stderr
    r = _cli(["publish", "ds", "--to", "car:out", "--encrypt", "--json"], root, env)
    assert r.returncode == 0, r.stderr
    import json

    return root, json.loads(r.stdout)["plan"]["datasetId"]


def test_a_wrong_passphrase_is_asked_again_naming_the_dataset(published):
    root, did = published
    env = _env(root / "second")
    prompt = f"passphrase of {did}: ".encode()
    answers = [b"wrong one", b"wrong two", PASSPHRASE.encode()]
    code, screen, asked = _type_at_prompts(["pull", "car:out", "copy1"], root, env, prompt, answers)
    assert code == 0, screen
    assert asked == 3
    assert "wrong passphrase; try again (2 left)" in screen
    assert "wrong passphrase; try again (1 left)" in screen
    assert (root / "copy1" / "refs" / "head").is_file()
    assert PASSPHRASE not in screen and "wrong one" not in screen  # never echoed


def test_three_wrong_passphrases_fail_in_one_line_and_write_nothing(published):
    root, did = published
    env = _env(root / "third")
    prompt = f"passphrase of {did}: ".encode()
    answers = [b"no", b"nope", b"still no"]
    code, screen, asked = _type_at_prompts(["pull", "car:out", "copy2"], root, env, prompt, answers)
    assert asked == 3
    assert code == 2, screen  # DecryptionError
    assert re.search(r"3 passphrases open no entry of its key envelope", screen), screen
    assert "Traceback" not in screen
    assert not (root / "copy2" / "refs" / "head").exists()


def test_from_the_environment_one_wrong_passphrase_fails_at_once(published):
    root, _ = published
    r = _cli(["pull", "car:out", "copy3"], root, _env(root / "fourth", ODFWEB3_PASSPHRASE="bad"))
    assert r.returncode != 0
    assert "the passphrase opens no entry of its key envelope" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_drive_password_typed_twice_with_p_or_when_nothing_gives_it(tmp_path):
    create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=2048, seed=3132, fsync=False)
    env = _env(tmp_path / "home")
    assert _cli(["wallet", "new", "w.json"], tmp_path, env).returncode == 0
    argv = ["publish", "ds", "--to", "bundle:ar", "--wallet", "w.json", "--arfs-private"]
    prompt = b"drive password of ds: "
    again = b"drive password of ds again: "

    # Typed differently three times: refused, nothing written.
    master_answers = [b"one", b"two", b"one", b"two", b"one", b"two"]
    code, screen, asked = _type_at_prompts_any(
        [*argv, "-P"], tmp_path, env, (prompt, again), master_answers
    )
    assert code == 64, screen
    assert asked == 6
    assert "try again (2 left)" in screen and "try again (1 left)" in screen
    assert "drive password of ds typed differently 3 times; nothing was changed" in screen
    assert not (tmp_path / "ar" / "publish.json").exists()

    # No file, no variable, a terminal: asked without -P; the same twice publishes.
    code, screen, asked = _type_at_prompts_any(
        argv, tmp_path, env, (prompt, again), [b"a drive password", b"a drive password"]
    )
    assert code == 0, screen
    assert asked == 2
    assert (tmp_path / "ar" / "publish.json").is_file()
    assert "a drive password" not in screen

    # -P without a terminal: one line, exit 64.
    r = _cli([*argv, "-P"], tmp_path, env)
    assert r.returncode == 64 and "-P asks the drive password on a terminal" in r.stderr
