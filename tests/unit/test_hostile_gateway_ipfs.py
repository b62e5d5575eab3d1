"""``ipfs://CID`` through a gateway that refuses raw blocks, with no RPC API.

The gateway is tests/support/hostile_server.py: it refuses ``?format=raw`` and serves, by
path under ``/ipfs/<CID>/``, the files of another dataset than the one the CID names. The
RPC API points at a closed port. Each case runs the real CLI in a child process.

Before the fix (main at adc767c): ``pull ipfs://CID DEST`` stored the forged chain (exit 0)
and ``verify FORGED --against ipfs://CID --deep`` printed ``identical`` (exit 0): the files
were read by path with nothing tying them to the CID.

After: with no verifiable block source (raw blocks, one-block CARs, RPC ``block/get``) the
read is refused in one line, exit 69, nothing written; a gateway that serves one-block CARs
(``?format=car&dag-scope=block``) is used and every block checked against its CID (forged
files by path are then never read: the pull reads blocks/ as its DAG); the
opt-in ``ipfs.insecure_unverified_paths`` reads by path and reports ``unverified``, never
``identical``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from odfweb3.odf.builder import create_root_dataset
from odfweb3_ipfs.formats.car import CarWriter, iter_car
from odfweb3_ipfs.formats.cid import Cid
from tests.support.hostile_server import HostileServer, hostile_server
from tests.support.measure import run_cli, tree_snapshot

CLOSED_API = "http://127.0.0.1:9"  # discard port: connection refused


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path | str]:
    """The real dataset published to car:DIR (its root CID), and a forged dataset."""
    tmp = tmp_path_factory.mktemp("hostile-gw")
    real = create_root_dataset(tmp / "real", blocks=2, data_bytes=2000, seed=1).path
    forged = create_root_dataset(tmp / "forged", blocks=3, data_bytes=3000, seed=2).path
    env = {"HOME": str(tmp), "ODFWEB3_KEYSTORE": str(tmp / "keys")}
    run = run_cli(["publish", str(real), "--to", f"car:{tmp / 'out'}", "-q"], env=env)
    assert run.code == 0, run.summary()
    root = json.loads((tmp / "out" / "publish.json").read_text("utf-8"))["root"]
    return {"tmp": tmp, "real": real, "forged": forged, "root": root}


def _serve_dir(srv: HostileServer, root: str, ds: Path) -> None:
    for path in ds.rglob("*"):
        if path.is_file() and ".odfweb3" not in path.parts:
            srv.serve(f"/ipfs/{root}/{path.relative_to(ds)}", path.read_bytes())


def _serve_one_block_cars(srv: HostileServer, out: Path, *, tamper: bool = False) -> None:
    """Every block of the publish as ``/ipfs/<cid>?format=car`` (one block each)."""
    for car in out.glob("*.car"):
        with open(car, "rb") as f:
            _roots, sections = iter_car(f)
            for cid, data in sections:
                body = _one_block_car(cid, data)
                if tamper and data.startswith(b"f1620"):  # refs/head's raw leaf
                    body = body[:-1] + bytes([body[-1] ^ 1])
                srv.serve(
                    f"/ipfs/{cid.encode()}",
                    body,
                    headers={"Content-Type": "application/vnd.ipld.car; version=1"},
                    query={"format": "car"},
                )


def _one_block_car(cid: Cid, data: bytes) -> bytes:
    import io

    buf = io.BytesIO()
    CarWriter(buf, cid).write_block(cid, data)
    return buf.getvalue()


def _env(tmp: Path, url: str) -> dict[str, str]:
    return {
        "HOME": str(tmp),
        "ODFWEB3_KEYSTORE": str(tmp / "keys"),
        "ODFWEB3_STATE_DIR": str(tmp / "state"),
        "ODFWEB3_IPFS_GATEWAY": url,
        "ODFWEB3_IPFS_API": CLOSED_API,
    }


def test_no_verifiable_source_refuses_pull_and_verify(world: dict, tmp_path: Path) -> None:  # type: ignore[type-arg]
    root, forged = str(world["root"]), Path(world["forged"])
    dest = tmp_path / "dest"
    shutil.copytree(world["real"], dest)  # DEST already holds a dataset
    with hostile_server(max_life=120) as srv:
        srv.refuse_raw()
        _serve_dir(srv, root, forged)
        env = _env(tmp_path, srv.url)
        before = tree_snapshot(tmp_path)
        run = run_cli(["pull", f"ipfs://{root}", str(dest)], env=env)
        assert run.code == 69, run.summary()
        assert len(run.lines) == 1 and "serves neither raw blocks" in run.stderr, run.summary()
        assert run.peak_rss_mb < 256 and not run.timed_out, run.summary()
        assert tree_snapshot(tmp_path) == before  # DEST intact, nothing written anywhere
        run = run_cli(["verify", str(forged), "--against", f"ipfs://{root}", "--deep"], env=env)
        assert run.code == 2 and "identical" not in run.stdout, run.summary() + run.stdout
        assert "serves neither raw blocks" in run.stdout
        assert srv.count("/blocks/") == 0  # refused before any object was read


def test_opt_in_reads_unverified_and_never_says_identical(world: dict, tmp_path: Path) -> None:  # type: ignore[type-arg]
    root, forged = str(world["root"]), Path(world["forged"])
    (tmp_path / "odfweb3.yaml").write_text("ipfs:\n  insecure_unverified_paths: true\n")
    with hostile_server(max_life=120) as srv:
        srv.refuse_raw()
        _serve_dir(srv, root, forged)
        env = _env(tmp_path, srv.url)
        run = run_cli(
            ["verify", str(forged), "--against", f"ipfs://{root}", "--deep", "--json"],
            env=env,
            cwd=tmp_path,
        )
        report = json.loads(run.stdout)["replicas"][0]
        assert run.code == 1 and report["status"] == "unverified", run.summary() + run.stdout
        run = run_cli(["verify", str(forged), "--against", f"ipfs://{root}"], env=env, cwd=tmp_path)
        assert run.code == 1 and "UNVERIFIED" in run.stdout and "identical" not in run.stdout


def test_one_block_cars_are_used_and_checked(world: dict, tmp_path: Path) -> None:  # type: ignore[type-arg]
    root, real, forged = str(world["root"]), Path(world["real"]), Path(world["forged"])
    out = Path(world["tmp"]) / "out"
    with hostile_server(max_life=120) as srv:
        srv.refuse_raw()
        _serve_one_block_cars(srv, out)
        _serve_dir(srv, root, real)
        env = _env(tmp_path, srv.url)
        run = run_cli(["verify", str(real), "--against", f"ipfs://{root}", "--deep"], env=env)
        assert run.code == 0 and "identical" in run.stdout, run.summary() + run.stdout
        run = run_cli(["pull", f"ipfs://{root}", str(tmp_path / "good"), "-q"], env=env)
        assert run.code == 0, run.summary()
        assert srv.count(f"/ipfs/{root}/refs/head") == 0  # refs/head came from verified blocks
    with hostile_server(max_life=120) as srv:  # the same CARs, forged blocks by path
        srv.refuse_raw()
        _serve_one_block_cars(srv, out)
        forged_head = (forged / "refs" / "head").read_text().strip()
        forged_block = (forged / "blocks" / forged_head).read_bytes()
        for block in (real / "blocks").iterdir():  # every real name serves the forged head
            srv.serve(f"/ipfs/{root}/blocks/{block.name}", forged_block)
        env = _env(tmp_path, srv.url)
        # blocks/ is read as its DAG (a CAR asked of the folder, what it lacks one block
        # at a time), every block checked against its CID: the forged files by path are
        # never read, and the pull gives the real dataset
        run = run_cli(["pull", f"ipfs://{root}", str(tmp_path / "bad")], env=env)
        assert run.code == 0, run.summary()
        assert srv.count(f"/ipfs/{root}/blocks/") == 0
        assert _layout(tmp_path / "bad") == _layout(real)
    with hostile_server(max_life=120) as srv:  # a CAR whose block is not its CID's
        srv.refuse_raw()
        _serve_one_block_cars(srv, out, tamper=True)
        _serve_dir(srv, root, real)
        env = _env(tmp_path, srv.url)
        run = run_cli(["pull", f"ipfs://{root}", str(tmp_path / "tampered")], env=env)
        assert run.code == 65 and len(run.lines) == 1, run.summary()
        assert not (tmp_path / "tampered" / "refs" / "head").exists()


def _layout(ds: Path) -> dict[str, bytes]:
    return {
        p.relative_to(ds).as_posix(): p.read_bytes()
        for p in ds.rglob("*")
        if p.is_file() and p.relative_to(ds).parts[0] in ("blocks", "data", "checkpoints", "refs")
    }


def _serve_raw_blocks(srv: HostileServer, car: Path) -> None:
    with open(car, "rb") as f:
        _roots, sections = iter_car(f)
        for cid, data in sections:
            srv.serve(
                f"/ipfs/{cid.encode()}",
                data,
                headers={"Content-Type": "application/vnd.ipld.raw"},
                query={"format": "raw"},
            )


@pytest.mark.parametrize("where", ["refs/head", "blocks"])
def test_amplifying_dags_over_raw_blocks_are_bounded(
    world: dict,  # type: ignore[type-arg]
    tmp_path: Path,
    where: str,
) -> None:
    """The item 5 DAGs served by a trustless gateway: ``refs/head`` a 1 TB file (1,000 x
    1,000 links to one 1 MiB leaf), the ``blocks`` folder a HAMT linking one sub-shard 256
    times per level (read with ``resolve --trustless``). Refused in one line, bounded."""
    from tests.support import hostile_dags as hd

    out = tmp_path / "out"
    shutil.copytree(Path(world["tmp"]) / "out", out)
    blocks: hd.Blocks = {}
    if where == "refs/head":
        bomb = hd.amplified_file(blocks, fanout=1000, depth=2, leaf=b"\0" * (1 << 20))
        args, message = ["pull"], "larger than the 256 bytes"
    else:
        bomb = hd.hamt_bomb(blocks, depth=5)
        args, message = ["resolve", "--trustless"], "linked twice"
    root = hd.forge_car_dir(out, {where: bomb}, blocks).encode()
    with hostile_server(max_life=120) as srv:
        _serve_raw_blocks(srv, out / f"{root}.car")
        env = _env(tmp_path, srv.url)
        before = tree_snapshot(tmp_path)
        dest = [str(tmp_path / "dest")] if args[0] == "pull" else []
        run = run_cli([*args, f"ipfs://{root}", *dest], env=env)
        assert run.code == 65 and len(run.lines) == 1, run.summary()
        assert message in run.stderr and "use another replica" in run.stderr, run.summary()
        assert run.peak_rss_mb < 256 and not run.timed_out, run.summary()
        assert srv.bytes_sent < 8 << 20  # a few blocks, not the DAG they describe
        assert tree_snapshot(tmp_path) == before
