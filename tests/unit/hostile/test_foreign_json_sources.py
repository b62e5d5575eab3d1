"""Hostile JSON in each place odfweb3 reads it is one line, exit 65.

Before: a ``RecursionError`` or ``UnicodeDecodeError`` traceback. Places: ``publish.json``
of a car:DIR (read by ``pull`` and by an incremental ``publish``), a publish state file,
a discovery descriptor, a key envelope. (RPC answers and Arweave records are parsed by
the same loader; here the Arweave upload record, path manifest, transaction JSON and
ArFS file metadata parsers.)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3.crypto.envelope import decode_envelope
from odfweb3.descriptor import decode_descriptor
from odfweb3.errors import FormatError
from odfweb3.odf.builder import create_root_dataset
from odfweb3.publish.state import load_state_file, load_summary_file

DEEP = b'{"a":' * 100_000 + b"1" + b"}" * 100_000
NOT_UTF8 = b'{"root": "\xff\xfe\xfd"}'
HOSTILE = {"deep": (DEEP, "nested deeper"), "not-utf8": (NOT_UTF8, "not UTF-8")}


def _run(capsys, tmp: Path, *argv: str) -> tuple[int, str]:
    env = {"ODFWEB3_KEYSTORE": str(tmp / "keys"), "HOME": str(tmp)}
    env["ODFWEB3_STATE_DIR"] = str(tmp / "state")
    code = main(list(argv), env=env)
    _out, err = capsys.readouterr()
    return code, err


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_publish_json_of_a_car_dir(tmp_path: Path, capsys, kind: str) -> None:
    data, _message = HOSTILE[kind]
    ds = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=100, seed=1).path
    out = tmp_path / "out"
    assert _run(capsys, tmp_path, "publish", str(ds), "--to", f"car:{out}")[0] == 0
    (out / "publish.json").write_bytes(data)
    for argv in (
        ["pull", f"car:{out}", str(tmp_path / "dest")],
        ["publish", str(ds), "--to", f"car:{out}"],
    ):
        code, err = _run(capsys, tmp_path, *argv)
        assert code == 65, (argv, err)
        assert err.count("\n") == 1 and "publish.json" in err, err
    assert not (tmp_path / "dest").exists()


READERS: dict[str, Callable[[Path, bytes], object]] = {
    "summary": lambda p, d: (p.write_bytes(d), load_summary_file(p)),
    "state": lambda p, d: (p.write_bytes(d), load_state_file(p)),
    "descriptor": lambda _p, d: decode_descriptor(d),
    "envelope": lambda _p, d: decode_envelope(d),
    "arweave-record": lambda _p, d: _arweave_record(d),
    "arweave-manifest": lambda _p, d: _arweave("manifest").decode_manifest(d),
    "arweave-tx": lambda _p, d: _arweave("tx").from_json(d),
}


def _arweave(name: str):  # type: ignore[no-untyped-def]
    import importlib

    return importlib.import_module(f"odfweb3_arweave.formats.{name}")


def _arweave_record(body: bytes) -> object:
    from tests.unit.adapters.arweave.test_record import RECORD

    rec = _arweave("record")
    return rec.decode_record(rec.record_tags(RECORD), body)


@pytest.mark.parametrize("kind", sorted(HOSTILE))
@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_reader_refuses_in_one_line(tmp_path: Path, reader: str, kind: str) -> None:
    data, message = HOSTILE[kind]
    with pytest.raises(FormatError, match=message) as info:
        READERS[reader](tmp_path / "x.json", data)
    assert "\n" not in str(info.value)


def test_a_state_file_that_is_a_fifo_or_a_directory(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "dir.json").mkdir()
    for name in ("fifo.json", "dir.json"):
        with pytest.raises(FormatError, match=r"regular file|cannot be read"):
            load_summary_file(tmp_path / name)
