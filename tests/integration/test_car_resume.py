"""``car:DIR`` resumes its CAR: a first publish killed (SIGKILL) at 75 % of its CAR is run
again and writes only what the partial CAR does not hold whole (car_resume); the result is
one whole CAR, the same as an uninterrupted publish's, pulled back file by file."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from odfweb3.odf.builder import create_root_dataset
from odfweb3_ipfs.formats.car import iter_car
from odfweb3_ipfs.publish.unixfs_import import import_tree
from odfweb3_ipfs.read.car_replica import check_car_dir
from tests.integration.test_crash import REPO, base_env, dataset_files, run_cli

MIB = 1 << 20


def _partial(out: Path) -> Path | None:
    found = sorted(out.glob(".resume-*.car.partial")) if out.is_dir() else []
    return found[0] if found else None


def test_a_first_car_publish_killed_at_75_percent_resumes(tmp_path: Path) -> None:
    ds = create_root_dataset(
        tmp_path / "ds", blocks=48, data_bytes=120 * MIB, seed=79, fsync=False
    ).path
    size = sum(len(b) for b in dataset_files(ds).values())
    out = tmp_path / "out"
    env = base_env(tmp_path)
    args = ["publish", str(ds), "--to", f"car:{out}", "--json"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "odfweb3.cli.main", *args],
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 600
    while proc.poll() is None and time.monotonic() < deadline:
        partial = _partial(out)
        if partial is not None and partial.stat().st_size >= size * 3 // 4:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.005)
    _out, err = proc.communicate(timeout=300)
    assert proc.returncode == -signal.SIGKILL, err
    partial = _partial(out)
    assert partial is not None
    killed_at = partial.stat().st_size
    assert not list(out.glob("*.car")) and not (out / "publish.json").exists()

    code, text, err = run_cli(args, env, None)
    assert code == 0, err
    done = json.loads(text)
    written = done["bytesSent"]
    print(
        f"\ndataset {size / MIB:.1f} MiB; killed with {killed_at / MIB:.1f} MiB of CAR "
        f"({killed_at / size:.0%}); the rerun wrote {written / MIB:.1f} MiB "
        f"({written / size:.1%}), planned {done['plan']['sendBytes'] / MIB:.1f} MiB"
    )
    assert written <= size * 0.30, (written, size)
    # one whole CAR, named by the root an uninterrupted import gives, no partial left
    root = import_tree(ds).cid
    assert done["locator"] == root.encode()
    assert not [p.name for p in out.iterdir() if p.name.startswith((".resume-", ".tmp-"))]
    check = check_car_dir(out)
    assert check.root == root
    with open(out / f"{root.encode()}.car", "rb") as f:
        roots, blocks = iter_car(f)
        cids = [cid.raw for cid, _ in blocks]
    assert roots == [root] and len(cids) == len(set(cids)), "a block written twice"
    code, _out, err = run_cli(["pull", f"car:{out}", str(tmp_path / "pulled")], env, None)
    assert code == 0, err
    assert dataset_files(tmp_path / "pulled") == dataset_files(ds)
