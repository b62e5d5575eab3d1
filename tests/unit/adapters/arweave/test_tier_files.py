"""The binary counter's tier files (publish/tier_files.py): the state keeps one small entry
per open tier, each tier's files sit in a content-named file beside the file index, written
once, read only when consolidated, dropped once no state names them."""

from __future__ import annotations

import hashlib
import json

import pytest

from odfweb3.errors import FormatError
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import PublishState
from odfweb3_arweave.formats.record import AddedFile, SkipLink
from odfweb3_arweave.publish.bundle_plan import Tier
from odfweb3_arweave.publish.bundle_target import BundleTarget
from odfweb3_arweave.publish.publish_bundle import with_stored_tiers
from odfweb3_arweave.publish.state import (
    ARWEAVE_CODEC,
    parse_arweave_state,
    serialize_arweave_state,
)
from odfweb3_arweave.publish.tier_files import (
    decode_tier_files,
    encode_tier_files,
    load_merged_tiers,
    store_tiers,
    tier_file_name,
)

UUID = "9f7038c7-26bd-4856-a843-8de24b828d4e"
PATH = "data/f1620" + "a" * 64
FILES = ((PATH, AddedFile("D" * 43, "M" * 43, UUID)),)
GOLDEN = (
    b'{"files":{"data/f1620aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa":'
    b'{"dataItemId":"DDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDD",'
    b'"fileId":"9f7038c7-26bd-4856-a843-8de24b828d4e",'
    b'"metaItemId":"MMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMM"}},'
    b'"format":"odfweb3/tier-files/1"}'
)
GOLDEN_DIGEST = "1d2ba5cb516c5eefe125da24958778a88ef13435e6cbfa16369957f587551759"


def link(n: int) -> SkipLink:
    return SkipLink(f"{n:043d}", "f1620" + f"{n:064d}", n)


def test_golden_tier_file_and_round_trip() -> None:
    assert encode_tier_files(FILES) == GOLDEN
    assert hashlib.sha256(GOLDEN).hexdigest() == GOLDEN_DIGEST
    assert decode_tier_files(GOLDEN, "t") == FILES
    for bad in (b"[]", b'{"format":"other","files":{}}', GOLDEN.replace(b"fileId", b"fileID")):
        with pytest.raises(FormatError):
            decode_tier_files(bad, "t")


def test_only_the_tiers_consolidated_next_are_read(tmp_path) -> None:
    # After 6 deltas: spans 2 (uploads 5-6) and 4 (1-4), then the full upload. Upload 7
    # spans itself only: nothing is read. After upload 7 (span 1), upload 8 reads all three.
    six = (Tier(link(6), 2, FILES), Tier(link(4), 4, FILES), Tier(link(0), 0))
    stored = store_tiers(tmp_path, six)
    assert stored is not None
    assert [t.digest for t in stored] == [GOLDEN_DIGEST, GOLDEN_DIGEST, None]
    assert (tmp_path / tier_file_name(GOLDEN_DIGEST)).read_bytes() == GOLDEN
    unloaded = tuple(Tier(t.link, t.uploads, None if t.digest else (), t.digest) for t in stored)
    assert load_merged_tiers(tmp_path, unloaded) == unloaded  # upload 7 merges nothing
    seven = (Tier(link(7), 1, None, GOLDEN_DIGEST), *unloaded)
    loaded = load_merged_tiers(tmp_path, seven)
    assert loaded is not None and all(t.files == FILES for t in loaded[:3])
    # A tier file altered or gone: the counter is unknown, never a wrong tier.
    (tmp_path / tier_file_name(GOLDEN_DIGEST)).write_bytes(GOLDEN.replace(b"D", b"E", 1))
    assert load_merged_tiers(tmp_path, seven) is None
    (tmp_path / tier_file_name(GOLDEN_DIGEST)).unlink()
    assert load_merged_tiers(tmp_path, seven) is None
    assert load_merged_tiers(None, seven) is None


def test_a_state_with_inline_tiers_is_converted_when_saved(tmp_path) -> None:
    # A state written before tier files (or rebuilt from the network) holds each tier's
    # files; saving it writes them out and keeps one digest per tier.
    old = [[link(3).record_id, link(3).head, 3, 1, {PATH: FILES[0][1].to_json()}]]
    old.append([link(2).record_id, link(2).head, 2, 2, {PATH: FILES[0][1].to_json()}])
    old.append([link(0).record_id, link(0).head, 0, 0, {}])
    extra = {"recordId": link(3).record_id, "prevUpload": None, "fullManifestId": "F" * 43}
    extra |= {"deltaUploads": 3, "tiers": old}
    state = PublishState(dataset_id="did:odf:x", target="t", extra=extra)
    typed = parse_arweave_state(state, "s")
    assert serialize_arweave_state(typed)["extra"] == extra  # read as written
    saved = ARWEAVE_CODEC.serialize(with_stored_tiers(ARWEAVE_CODEC.parse(state, "s"), tmp_path))
    assert [t[4] for t in saved.extra["tiers"]] == [GOLDEN_DIGEST, GOLDEN_DIGEST, {}]
    assert [p.name for p in tmp_path.iterdir()] == [tier_file_name(GOLDEN_DIGEST)]
    again = parse_arweave_state(saved, "s")
    assert again.extra.manifests is not None and again.extra.manifests.tiers is not None
    assert serialize_arweave_state(again)["extra"] == saved.extra
    bad = dict(extra, tiers=[[*old[0][:4], "not a digest"]])
    with pytest.raises(FormatError, match=r"extra\.tiers"):
        parse_arweave_state(PublishState(dataset_id="d", target="t", extra=bad), "s")


def test_bundle_dir_keeps_one_entry_per_open_tier(tmp_path, fixed_wallet) -> None:
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=1_500, seed=4411).path
    out = tmp_path / "out"
    sizes = []
    for n in range(5):  # a full upload, then deltas 1-4
        if n:
            append_blocks(ds, 1, data_bytes=400, seed=4412 + n)
        publish_dataset(ds, BundleTarget(out, fixed_wallet))
        doc = json.loads((out / "publish.json").read_text())
        tiers = doc["extra"]["tiers"]
        named = {t[4] for t in tiers if isinstance(t[4], str)}
        # exactly the tier files the state names are in OUT_DIR, each as its name says
        on_disk = {p.name.removeprefix("tier-").removesuffix(".json") for p in out.glob("tier-*")}
        assert on_disk == named, n
        for digest in named:
            data = (out / tier_file_name(digest)).read_bytes()
            assert hashlib.sha256(data).hexdigest() == digest
        sizes.append(len(json.dumps(tiers)))
        spans = [t[3] for t in tiers]
        assert spans == {0: [0], 1: [1, 0], 2: [2, 0], 3: [1, 2, 0], 4: [4, 0]}[n]
    # upload 4 consolidated uploads 1-4: its tier file lists every object they added
    (four,) = named
    files = decode_tier_files((out / tier_file_name(four)).read_bytes(), "t")
    assert len({p.split("/")[0] for p, _ in files}) >= 2 and len(files) >= 4 * 2
    assert max(sizes) < 1_000  # entries, not files: the state does not grow with updates
