"""A car:DIR's key envelope is the one its signed record names.

The attack: publish.json's ``keyEnvelope`` (and its CAR) replaced by another envelope
(here a genuine one of another publish of the same dataset; an attacker's would wrap
their own key). Before: publish.json was believed. Now: one line, exit 65, DEST absent.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from odfweb3.cli.main import main
from odfweb3.odf import builder


def _run(capsys, env, *argv):  # type: ignore[no-untyped-def]
    code = main(list(argv), env=env)
    out, err = capsys.readouterr()
    return code, out, err


def test_car_dir_with_a_substituted_envelope_is_refused(capsys, tmp_path: Path) -> None:
    built = builder.create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=3000, seed=9)
    did = str(built.keypair.dataset_id)
    env = {"ODFWEB3_KEYSTORE": str(tmp_path / "keys"), "HOME": str(tmp_path)}
    env["ODFWEB3_STATE_DIR"] = str(tmp_path / "state")
    assert _run(capsys, env, "keys", "identity", "new", "alice")[0] == 0
    assert _run(capsys, env, "keys", "recipients", "add", did, "alice")[0] == 0
    a, b = tmp_path / "a", tmp_path / "b"
    assert _run(capsys, env, "publish", str(built.path), "--to", f"car:{a}", "--encrypt")[0] == 0
    assert _run(capsys, env, "keys", "rotate", did)[0] == 0
    assert _run(capsys, env, "publish", str(built.path), "--to", f"car:{b}", "--encrypt")[0] == 0
    sa = json.loads((a / "publish.json").read_text())
    sb = json.loads((b / "publish.json").read_text())
    assert sa["keyEnvelope"] != sb["keyEnvelope"]
    # The attacker swaps in another envelope (here: a genuine one of another publish).
    shutil.copy(b / sb["extra"]["keyEnvelopeCar"], a / sb["extra"]["keyEnvelopeCar"])
    sa["keyEnvelope"] = sb["keyEnvelope"]
    sa["extra"]["keyEnvelopeCar"] = sb["extra"]["keyEnvelopeCar"]
    (a / "publish.json").write_text(json.dumps(sa))
    dest = tmp_path / "dest"
    code, out, err = _run(capsys, env, "pull", f"car:{a}", str(dest))
    assert code == 65, (out, err)  # integrity
    assert len(err.strip().splitlines()) == 1 and "signed record" in err, err
    assert not dest.exists()
