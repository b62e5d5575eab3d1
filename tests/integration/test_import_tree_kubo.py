"""import_tree gives Kubo's CIDs: every file's, symlink's and folder's CID equals what Kubo
v0.43.1 ``ipfs add -r --only-hash --hidden`` prints for the same folder, under odfweb3's
default (``--cid-version=1``) and Kubo's own ``unixfs-v0-2015`` and ``unixfs-v1-2025``
profiles (repos made with ``ipfs init --profile=test,NAME``), reading on workers or not.

The tree has every shape the workers cut differently: runs of one-chunk files longer than a
unit, files of several units under either chunk size, a chunk-size file, empty files and
folders, symlinks, nesting, and a folder HAMT-sharded under both size estimations.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from odfweb3_ipfs.publish.cid_profile import DEFAULT_PROFILE, PROFILES
from odfweb3_ipfs.publish.leaf_reader import UNIT_FILES
from odfweb3_ipfs.publish.unixfs_import import DirNode, Entry
from tests.support.kubo import KUBO_BIN, added_cids, kubo_env

MIB = 1 << 20


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("kubo-tree") / "t"
    wide = root / "wide"
    wide.mkdir(parents=True)
    for i in range(6000):  # > 256 KiB of links under "links" and "block" estimation
        (wide / f"entry-{i:05d}").write_bytes(os.urandom(i % 97))
    small = root / "small"
    small.mkdir()
    for i in range(UNIT_FILES + 9):
        (small / f"s{i:03d}").write_bytes(os.urandom(i * 977 % 200_000))
    (root / "chunk").write_bytes(os.urandom(262144))
    (root / "mib").write_bytes(os.urandom(MIB))
    (root / "mib-plus").write_bytes(os.urandom(MIB + 1))
    (root / "several").write_bytes(os.urandom(5 * MIB + 12345))
    (root / "empty").write_bytes(b"")
    (root / ".hidden").write_bytes(b"kept")
    (root / "empty-dir").mkdir()
    (root / "a" / "b" / "c").mkdir(parents=True)
    (root / "a" / "b" / "c" / "deep").write_bytes(os.urandom(300_000))
    os.symlink("../several", root / "a" / "link")
    return root


def kubo_add(repo: Path, path: Path, *extra: str) -> dict[str, str]:
    """`ipfs add -r --only-hash`: relative path -> CID for every entry ("" = the root)."""
    out = subprocess.run(
        [str(KUBO_BIN), "add", "-r", "--only-hash", "--hidden", *extra, str(path)],
        env={**os.environ, **kubo_env(repo)},
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    ).stdout
    return added_cids(out, path)


@pytest.mark.parametrize("name", ["default", "unixfs-v0-2015", "unixfs-v1-2025"])
def test_every_cid_is_kubos(tree: Path, tmp_path: Path, name: str) -> None:
    repo = tmp_path / "repo"
    profiles = "test" if name == "default" else f"test,{name}"
    subprocess.run(
        [str(KUBO_BIN), "init", f"--profile={profiles}", "--empty-repo"],
        env={**os.environ, **kubo_env(repo)},
        check=True,
        capture_output=True,
        timeout=120,
    )
    expected = kubo_add(repo, tree, *(["--cid-version=1"] if name == "default" else []))
    prof = DEFAULT_PROFILE if name == "default" else PROFILES[name]
    for threads in (0, 2):
        got: dict[str, Entry] = {}
        root = prof.import_tree(tree, threads=threads, on_entry=got.__setitem__)
        ours = {rel: str(entry.cid) for rel, entry in got.items()} | {"": str(root.cid)}
        assert ours == expected, f"threads={threads}"
        wide = got["wide"]
        assert isinstance(wide, DirNode) and wide.sharded and len(ours) > 6000
