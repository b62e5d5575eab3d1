"""The spool of a streamed DAG keeps only the DAG's blocks, in parent-first order, bounded.

A hostile gateway answering ``?format=car&dag-scope=all`` chooses every byte of the CAR:
these cases give :meth:`DagSpool.fill` what such a gateway could send (blocks the DAG does not
link, a child before its parent, a block that is not its CID's, a stream cut mid-way, more
bytes than allowed) and check what it keeps; the CAR bytes are real CARs (CarWriter, read
back by iter_car, which hashes every block).
"""

from __future__ import annotations

import io
from collections.abc import Generator
from pathlib import Path

import pytest

from odfweb3.errors import NotFound
from odfweb3_ipfs.formats.car import CarWriter, iter_car
from odfweb3_ipfs.formats.cid import CODEC_DAG_PB, Cid
from odfweb3_ipfs.formats.dagpb import PBLink, encode_pbnode
from odfweb3_ipfs.read.dag_spool import DagSpool


def _dag() -> tuple[Cid, list[tuple[Cid, bytes]]]:
    """A root linking two leaves, depth-first (root, leaf a, leaf b)."""
    a, b = b"leaf a " * 10, b"leaf b " * 12
    ca, cb = Cid.of_block(a), Cid.of_block(b)
    node = encode_pbnode([PBLink(ca, b"a", len(a)), PBLink(cb, b"b", len(b))], b"\x08\x01")
    root = Cid.of_block(node, codec=CODEC_DAG_PB)
    return root, [(root, node), (ca, a), (cb, b)]


def _stream(root: Cid, sections: list[tuple[Cid, bytes]], *, flip_last: bool = False,
            cut: int = 0) -> Generator[tuple[Cid, bytes], None, None]:  # fmt: skip
    buf = io.BytesIO()
    writer = CarWriter(buf, root)
    for cid, data in sections:
        writer.write_block(cid, data)
    raw = bytearray(buf.getvalue())
    if flip_last:
        raw[-1] ^= 1
    if cut:
        del raw[-cut:]
    _roots, blocks = iter_car(io.BytesIO(bytes(raw)))
    yield from blocks


def test_the_dags_blocks_are_kept_and_read_back(tmp_path: Path) -> None:
    root, sections = _dag()
    spool = DagSpool(tmp_path / "s")
    assert spool.fill(root, _stream(root, sections), max_bytes=1 << 20) == 3
    for cid, data in sections:
        assert cid in spool
        assert spool.get(cid) == data
    assert (tmp_path / "s").stat().st_mode & 0o777 == 0o600
    spool.close()
    assert not (tmp_path / "s").exists()
    with pytest.raises(NotFound):
        spool.get(root)


def test_a_block_the_dag_does_not_link_ends_the_fill(tmp_path: Path) -> None:
    root, sections = _dag()
    evil = b"not in the dag"
    stream = _stream(root, [sections[0], (Cid.of_block(evil), evil), *sections[1:]])
    spool = DagSpool(tmp_path / "s")
    assert spool.fill(root, stream, max_bytes=1 << 20) == 1  # the root only
    assert Cid.of_block(evil) not in spool
    assert sections[1][0] not in spool  # the rest is read block by block


def test_a_child_before_its_parent_ends_the_fill(tmp_path: Path) -> None:
    root, sections = _dag()
    spool = DagSpool(tmp_path / "s")
    assert spool.fill(root, _stream(root, [sections[1], *sections]), max_bytes=1 << 20) == 0
    assert spool.blocks == 0


def test_a_block_that_is_not_its_cids_ends_the_fill(tmp_path: Path) -> None:
    root, sections = _dag()
    spool = DagSpool(tmp_path / "s")
    assert spool.fill(root, _stream(root, sections, flip_last=True), max_bytes=1 << 20) == 2
    assert sections[2][0] not in spool


def test_a_cut_stream_keeps_what_came_whole(tmp_path: Path) -> None:
    root, sections = _dag()
    spool = DagSpool(tmp_path / "s")
    assert spool.fill(root, _stream(root, sections, cut=5), max_bytes=1 << 20) == 2
    assert [c in spool for c, _ in sections] == [True, True, False]


def test_the_byte_and_block_bounds_cut_the_fill(tmp_path: Path) -> None:
    root, sections = _dag()
    first = len(sections[0][1]) + len(sections[1][1])
    spool = DagSpool(tmp_path / "s")
    assert spool.fill(root, _stream(root, sections), max_bytes=first) == 2
    assert spool.size == first
    other = DagSpool(tmp_path / "t")
    assert other.fill(root, _stream(root, sections), max_bytes=1 << 20, max_blocks=1) == 1
