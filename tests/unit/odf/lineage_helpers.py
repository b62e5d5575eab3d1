"""Shared helpers for the derivative / lineage tests: a lineage on disk, chain rewrites."""

import dataclasses

from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.chain import walk_chain
from odfweb3.odf.codec import block_hash, encode_block
from odfweb3.odf.derivative import create_derivative_dataset
from odfweb3.odf.layout import DatasetReader, DatasetWriter


def make_lineage(root, *, fsync=False):
    """Two roots a, b -> derivative x (a, b) -> derivative y (x, a). Returns the paths."""
    a = create_root_dataset(root / "a", blocks=4, data_bytes=4000, seed=1, fsync=fsync).path
    b = create_root_dataset(root / "b", blocks=2, data_bytes=3000, seed=2, fsync=fsync).path
    x = create_derivative_dataset(root / "x", [a, b], transactions=3, seed=0, fsync=fsync).path
    y = create_derivative_dataset(root / "y", [x, a], transactions=2, seed=1, fsync=fsync).path
    return a, b, x, y


def chain_of(path):
    """Verified entries, Seed first."""
    return list(reversed(list(walk_chain(DatasetReader.open(path)))))


def rewrite_event(path, seq, change):
    """Replace the event of block ``seq`` with ``change(event)``; re-chain and re-hash after it."""
    entries = chain_of(path)
    writer = DatasetWriter(path, fsync=False)
    prev = entries[seq - 1].hash if seq else None
    for e in entries[seq:]:
        block = e.block
        event = change(block.event) if block.sequence_number == seq else block.event
        new = dataclasses.replace(block, prev_block_hash=prev, event=event)
        data = encode_block(new)
        prev = block_hash(data)
        writer.write_object("block", prev, data)
    writer.set_head(prev)


def replace_input(event, index, **fields):
    """An ExecuteTransform with query input ``index`` changed."""
    qis = list(event.query_inputs)
    qis[index] = dataclasses.replace(qis[index], **fields)
    return dataclasses.replace(event, query_inputs=tuple(qis))
