"""Human output, -q / -v and progress bars."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3.cli.output import Output, Progress, format_duration
from odfweb3.cli.text import key_values, plural, shown_path


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv), env=env)
        out, err = capsys.readouterr()
        return code, out, err

    return run


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_line_has_total_percent_rate_and_eta():
    clock = _Clock()
    bar = Progress("pulling", 4 << 20, io.StringIO(), enabled=False, clock=clock)
    clock.now += 2
    bar.advance(1 << 20)
    line = bar.line(clock.now)
    assert "[######------------------]" in line and " 25.0% " in line
    assert "1.0 MiB/4.0 MiB" in line and "512.0 KiB/s" in line and line.endswith("ETA 0:06")
    bar.advance(3 << 20)
    assert bar.line(clock.now).endswith("100.0% 4.0 MiB/4.0 MiB 2.0 MiB/s in 0:02")
    unknown = Progress("validating", None, io.StringIO(), enabled=False, clock=clock)
    unknown.advance(2048)
    assert unknown.line(clock.now + 1) == "validating 2.0 KiB 2.0 KiB/s"
    assert format_duration(3725) == "1:02:05" and format_duration(7) == "0:07"


def test_progress_draws_only_when_enabled():
    err = io.StringIO()
    with Output(err=err).progress("x", 10) as bar:  # StringIO is not a terminal
        bar.advance(10)
    assert err.getvalue() == ""
    stream = io.StringIO()
    with Progress("x", 10, stream, enabled=True) as bar:
        bar.advance(10)
    assert stream.getvalue().startswith("\rx [") and stream.getvalue().endswith("\n")


def test_text_helpers():
    assert plural(1, "new block") == "1 new block" and plural(0, "file") == "0 files"
    assert plural(2, "entry") == "2 entries"
    assert shown_path("/a/b/c", Path("/a")) == "b/c" and shown_path("/x/y", Path("/a")) == "/x/y"
    lines = key_values([("name", "k51"), ("prevUpload", None), ("carBytes", 2048), ("ok", True)])
    assert lines == ["  name      k51", "  carBytes  2048 (2.0 KiB)", "  ok        yes"]


def test_quiet_prints_nothing_but_what_a_command_exists_to_print(cli):
    assert cli("example", "ds", "--blocks", "1", "-q") == (0, "", "")
    assert cli("validate", "ds", "--deep", "-q") == (0, "", "")
    assert cli("-q", "publish", "ds", "--to", "car:out") == (0, "", "")
    assert cli("pull", "car:out", "copy", "-q") == (0, "", "")
    assert cli("verify", "ds", "--against", "car:out", "-q") == (0, "", "")
    code, out, _ = cli("completion", "bash", "-q")
    assert code == 0 and "complete -o filenames -F _odfweb3 odfweb3" in out
    code, out, _ = cli("version", "-q")
    assert out.startswith("odfweb3 ")
    code, out, _ = cli("inspect", "ds", "-q", "--json")  # --json is asked for: always printed
    assert json.loads(out)["blocks"] == 5


def test_verbose_adds_what_was_checked_sent_and_skipped(cli):
    cli("example", "ds", "--blocks", "2", "-q")
    code, _, err = cli("validate", "ds", "-v")
    assert code == 0 and "block    0 " in err and " Seed" in err and " AddData" in err
    code, _, err = cli("publish", "ds", "--to", "car:out", "-v")
    assert (
        code == 0
        and "plan: target empty: first publish, 6 new blocks" in err
        and "  send data" in err
    )
    cli("example", "ds", "--append", "1", "-q")
    code, _, err = cli("publish", "ds", "--to", "car:out", "-v")
    assert (
        "plan: target behind by 1 block, 1 new block\n" in err
        and "objects the target already has" in err
    )
    code, _, err = cli("verify", "ds", "--against", "car:out", "--deep", "-v")
    assert code == 0 and "re-hashed 13 objects (7 blocks, 3 data files, 3 checkpoints)" in err
    code, _, err = cli("pull", "car:out", "copy", "-v")
    assert code == 0 and "car:out -> copy: was nothing" in err
    # Without -v none of it.
    code, _, err = cli("validate", "ds")
    assert err == ""


def test_human_output_has_no_none_right_plurals_one_path_style(cli, tmp_path):
    outputs = []
    for argv in (
        ("example", "ds", "--blocks", "1"),
        ("inspect", "ds"),
        ("validate", "ds", "--deep"),
        ("publish", "ds", "--to", "car:out"),
        ("publish", "ds", "--to", "car:out"),
        ("pull", "car:out", "copy"),
        ("pull", "car:out", "copy"),
        ("verify", "ds", "--against", "car:out", "--deep"),
        ("status", "--offline"),
    ):
        code, out, err = cli(*argv)
        assert code == 0, (argv, err)
        outputs.append(out)
    text = "".join(outputs)
    assert "None" not in text
    assert "1 blocks" not in text and "1 files" not in text and "(s)" not in text
    assert str(tmp_path) not in text  # one style: relative to the working directory
    assert outputs[0].startswith("wrote ds: 5 blocks")
    assert "data         1 file, 64.0 KiB (65536 bytes)" in outputs[1]
    assert "  carBytes" in outputs[3] and " KiB)" in outputs[3]
    assert "import into a node (in this order, in out):\n  ipfs dag import " in outputs[3]
    assert "ipfs routing put --allow-offline /ipns/" in outputs[3]
    # Aligned keys: every value starts in the same column.
    rows = [line for line in outputs[3].splitlines()[1:] if line.startswith("  ")][:8]
    starts = {len(line) - len(line[2:].split("  ", 1)[1].lstrip()) for line in rows}
    assert len(starts) == 1, rows
    assert "nothing new: car:out already has head" in outputs[4]
    assert "record unchanged (sequence 0)" in outputs[4]
    assert outputs[5].startswith("copy: head ") and "5 new blocks" in outputs[5]
    assert outputs[6].startswith("copy: already up to date (head ")


def test_a_no_op_republish_to_car_changes_nothing(cli, tmp_path):
    cli("example", "ds", "--blocks", "1", "-q")
    assert cli("publish", "ds", "--to", "car:out")[0] == 0
    before = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    code, out, _ = cli("publish", "ds", "--to", "car:out", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["nothingNew"] is True and doc["record"]["sequence"] == 0
    after = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    assert after == before  # no new CAR, record file and publish.json as they were
    cli("example", "ds", "--append", "1", "-q")
    code, out, _ = cli("publish", "ds", "--to", "car:out", "--json")
    assert json.loads(out)["record"]["sequence"] == 1 and json.loads(out)["nothingNew"] is False


def test_a_no_op_republish_to_bundle_says_nothing_new(cli, tmp_path):
    cli("example", "ds", "--blocks", "1", "-q")
    assert cli("wallet", "new", "w.json", "-q")[0] == 0
    to = ("--to", "bundle:ar", "--wallet", "w.json")
    code, out, err = cli("publish", "ds", *to)
    assert code == 0, err
    assert "None" not in out and "bundle" in out
    code, out, _ = cli("publish", "ds", *to)
    assert "nothing new: bundle:ar already has head" in out and "record unchanged" in out
    assert len(list((tmp_path / "ar").glob("*.bundle"))) == 1


def test_terminal_text_shows_control_characters_as_escapes() -> None:
    from odfweb3.cli.output import terminal_text

    hostile = "did:odf:\x1b]0;owned\x07\x1b[2J\u202eabc\x9b"
    shown = terminal_text(hostile)
    assert shown == "did:odf:\\x1b]0;owned\\x07\\x1b[2J\\u202eabc\\x9b"
    assert terminal_text("two\nlines\tkept") == "two\nlines\tkept"
    assert terminal_text("two\nlines", one_line=True) == "two\\x0alines"
    assert terminal_text("é ü ✓") == "é ü ✓"  # printable text untouched


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_message_is_never_written_over_the_bar() -> None:
    """A note or warning while the bar is drawn: the bar's line is cleared first, the
    message gets its own line, the bar comes back below it."""
    err = _Tty()
    out = Output(err=err)
    with out.progress("publishing", 100) as bar:
        bar.advance(40)
        bar.redraw()
        out.info("price: 5 winc; sending")
        out.warn("careful")
    text = err.getvalue()
    # every message starts on a cleared line, never after the bar's text
    for message in ("price: 5 winc; sending\n", "warning: careful\n"):
        i = text.index(message)
        assert text[:i].endswith("\r\x1b[K"), repr(text)
    assert text.rstrip("\n").rsplit("\n", 1)[-1].startswith("\rpublishing [")
    bar.clear()  # after close: nothing more is written
    assert err.getvalue() == text


def test_phases_reuse_the_bar_and_start_where_they_really_are() -> None:
    now = [0.0]
    stream = io.StringIO()
    bar = Progress("publishing", None, stream, True, clock=lambda: now[0])
    bar.set_total(100)  # drawn, never moved: the first phase takes its line
    bar.phase("signing 2 objects", 100)
    now[0] = 1.0
    bar.advance(100)
    # A resumed send starts at what was sent before: 40 %, and the rate counts only the new.
    bar.phase("sending transaction X", 1000, done=400)
    assert "40.0%" in bar.line(now[0])
    now[0] = 3.0
    bar.advance(600)
    assert "300 B/s" in bar.line(now[0]) and "100.0%" in bar.line(now[0])
    bar.phase("confirming: waiting for record R to be in a block on G", None, unit="time")
    now[0] = 65.0
    assert bar.line(now[0]) == "confirming: waiting for record R to be in a block on G (1:02)"
    bar.close()
    lines = [ln.split("\r")[-1].replace("\x1b[K", "") for ln in stream.getvalue().split("\n")]
    # One line per phase that moved, in order; the untouched "publishing" bar was replaced.
    assert [ln.split(" [")[0].split(" (")[0] for ln in lines if ln] == [
        "signing 2 objects",
        "sending transaction X",
        "confirming: waiting for record R to be in a block on G",
    ]


def test_phases_as_plain_lines_with_v_on_a_pipe() -> None:
    stream = io.StringIO()
    bar = Progress("publishing", None, stream, False, clock=lambda: 0.0, lines=True)
    bar.set_total(10)
    bar.advance(5)
    assert stream.getvalue() == ""  # a bar that is not phased says nothing on a pipe
    bar.phase("sending 3 items to T", 30, done=10)
    bar.advance(20)
    bar.close()
    out = stream.getvalue()
    assert "\r" not in out and "\x1b" not in out
    assert out.splitlines()[0].startswith("sending 3 items to T [")
    assert "100.0%" in out.splitlines()[-1]
    quiet = io.StringIO()
    off = Progress("publishing", None, quiet, False, clock=lambda: 0.0)
    off.phase("signing 1 object", 5)
    off.close()
    assert quiet.getvalue() == ""  # no -v: nothing at all
