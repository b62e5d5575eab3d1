"""A car:DIR whose IPNS record path is a directory.

Before: ``pull``/``verify`` raised ``IsADirectoryError`` and ``publish`` failed renaming
onto it, each a traceback. Now one line each: reading it is corrupt data (65), writing
over it is refused (64: move it away).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from odfweb3.cli.main import main
from odfweb3.odf.builder import create_root_dataset


def _run(capsys, tmp: Path, *argv: str) -> tuple[int, str, str]:
    env = {"ODFWEB3_KEYSTORE": str(tmp / "keys"), "HOME": str(tmp)}
    env["ODFWEB3_STATE_DIR"] = str(tmp / "state")
    code = main(list(argv), env=env)
    out, err = capsys.readouterr()
    return code, out, err


def test_record_path_that_is_a_directory(tmp_path: Path, capsys) -> None:
    ds = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=100, seed=3).path
    out = tmp_path / "out"
    assert _run(capsys, tmp_path, "publish", str(ds), "--to", f"car:{out}")[0] == 0
    record = out / json.loads((out / "publish.json").read_text())["record"]["file"]
    os.replace(record, tmp_path / "record.bak")
    record.mkdir()
    for argv, want in (
        (["pull", f"car:{out}", str(tmp_path / "dest")], 65),
        (["publish", str(ds), "--to", f"car:{out}"], 64),
    ):
        code, _, err = _run(capsys, tmp_path, *argv)
        assert code == want, (argv, err)
        assert err.count("\n") == 1 and record.name in err, err
    code, report, err = _run(capsys, tmp_path, "verify", str(ds), "--against", f"car:{out}")
    assert code == 65 and not err and "CORRUPT" in report and record.name in report
    assert record.is_dir() and not any(record.iterdir())
    assert not (tmp_path / "dest").exists()
