"""The one verified-stream type: what ``with`` does, and who satisfies the Protocols."""

from __future__ import annotations

import io

import pytest

from odfweb3.errors import HashMismatch
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.chain import iter_objects, walk_chain
from odfweb3.odf.layout import DatasetReader
from odfweb3.publish.source import open_verified
from odfweb3.streams import DeferrableStream, VerifiedStream, VerifiedStreamBase


class _Stream(VerifiedStreamBase):
    def __init__(self, *, on_exit: bool, bad: bool = False) -> None:
        self.finish_on_exit = on_exit  # type: ignore[misc]
        self.bad = bad
        self.calls: list[str] = []

    def read(self, n: int = -1) -> bytes:
        return b""

    def finish(self) -> None:
        self.calls.append("finish")
        if self.bad:
            raise HashMismatch("a", "b", "here")

    def close(self) -> None:
        self.calls.append("close")


def test_with_closes_and_a_reread_checks_itself_only_when_the_block_succeeded() -> None:
    plain = _Stream(on_exit=False)
    with plain:
        pass
    assert plain.calls == ["close"]
    reread = _Stream(on_exit=True)
    with reread:
        pass
    assert reread.calls == ["finish", "close"]
    failed = _Stream(on_exit=True)
    with pytest.raises(ValueError), failed:
        raise ValueError("the writer failed")
    assert failed.calls == ["close"]  # no check over a read cut short
    bad = _Stream(on_exit=True, bad=True)
    with pytest.raises(HashMismatch), bad:
        pass
    assert bad.calls == ["finish", "close"]  # closed even when the check fails


def test_the_verifying_reader_is_a_deferrable_verified_stream(tmp_path) -> None:
    ds = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=100, seed=1)
    reader = DatasetReader(ds.path)
    obj = next(o for o in iter_objects(walk_chain(reader)) if o.kind == "data")
    with open_verified(reader, obj) as stream:
        assert isinstance(stream, VerifiedStream)
        assert isinstance(stream, DeferrableStream)
        stream.read()
        stream.finish()
    assert not isinstance(io.BytesIO(), VerifiedStream)
