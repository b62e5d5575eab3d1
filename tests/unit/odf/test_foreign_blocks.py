"""Blocks encoded by another writer (tests/support/foreign_blocks.py) are valid FlatBuffers that
decode to the same block: flatc's reference accessors read them too, and the dataset they make
validates whole. The byte-for-byte copies through every target and pull are checked in
tests/integration/test_foreign_block_bytes.py.
"""

from __future__ import annotations

from pathlib import Path

from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.codec import METADATA_BLOCK_KIND, decode_block, encode_block
from odfweb3.odf.validate import validate_dataset
from tests.support.foreign_blocks import foreign_block_bytes, rewrite_foreign
from tests.unit.odf.test_codec import KAMU_VECTORS, kamu_block


def test_every_event_type_encodes_foreign_and_decodes_the_same(monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "support" / "flatc_gen"))
    import Manifest as FbManifest  # type: ignore[import-not-found]
    import MetadataBlock as FbMetadataBlock  # type: ignore[import-not-found]

    assert len(KAMU_VECTORS) >= 10
    for _name, event, _hex in KAMU_VECTORS:
        block = kamu_block(event)
        data = foreign_block_bytes(block)
        assert data != encode_block(block)
        assert decode_block(data) == block
        manifest = FbManifest.Manifest.GetRootAs(data, 0)
        assert manifest.Kind() == METADATA_BLOCK_KIND
        content = bytes(manifest.Content(i) for i in range(manifest.ContentLength()))
        assert FbMetadataBlock.MetadataBlock.GetRootAs(content, 0).SequenceNumber() == (
            block.sequence_number
        )


def test_a_foreign_encoded_dataset_validates(tmp_path):
    built = create_root_dataset(tmp_path / "a", blocks=3, data_bytes=3000, seed=5, fsync=False)
    hashes = rewrite_foreign(built.path, tmp_path / "b")
    assert hashes[-1] != built.head  # other bytes, another head hash
    report = validate_dataset(tmp_path / "b", deep=True)
    assert report.ok and report.blocks == len(hashes), report.violations
    ours = {p.name for p in (built.path / "blocks").iterdir()}
    assert ours.isdisjoint(p.name for p in (tmp_path / "b" / "blocks").iterdir())
