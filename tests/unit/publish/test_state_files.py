"""Publish state files: the offline targets' ``publish.json`` and the state store's files."""

from __future__ import annotations

import pytest

from odfweb3.errors import FormatError
from odfweb3.publish.state import (
    PublishState,
    load_state_file,
    load_summary_file,
    save_state_file,
)

DID = "did:odf:fed01" + "ab" * 32


def test_summary_round_trip_keeps_the_whole_document(tmp_path) -> None:
    state = PublishState(dataset_id=DID, target="car:out", head=bytes([0x16, 0x20]) + bytes(32))
    path = tmp_path / "publish.json"
    assert load_summary_file(path) == (None, {})
    save_state_file(path, state)
    loaded, raw = load_summary_file(path)
    assert loaded == state == load_state_file(path)
    assert raw["datasetId"] == DID


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe", b"[1, 2]"])
def test_a_broken_summary_is_one_clear_error(tmp_path, content: bytes) -> None:
    path = tmp_path / "publish.json"
    path.write_bytes(content)
    with pytest.raises(FormatError) as err:
        load_summary_file(path)
    assert str(path) in str(err.value)
