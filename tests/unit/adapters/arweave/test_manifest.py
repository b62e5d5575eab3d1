"""Path manifests: deterministic 0.1.0 encoding, 0.1.0/0.2.0 decoding, hostile input."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odfweb3.errors import FormatError
from odfweb3_arweave.formats.manifest import (
    PathManifest,
    check_manifest_path,
    decode_manifest,
    encode_manifest,
    encode_manifest_chunks,
)

ID_A = "cG7Hdi_iTQPoEYgQJFqJ8NMpN4KoZ-vH_j7pG4iP7NI"  # from path-manifest-schema.md
ID_B = "3zFsd7bkCAUtXUKBQ4XiPiQvpLVKfZ6kiLNt2XVSfoV"


def test_encode_is_deterministic_and_spec_shaped() -> None:
    m = PathManifest({"refs/head": ID_B, "blocks/f1620ab": ID_A}, index="refs/head")
    data = encode_manifest(m)
    assert data == encode_manifest(PathManifest(dict(reversed(list(m.paths.items()))), "refs/head"))
    assert data == (
        b'{"index":{"path":"refs/head"},"manifest":"arweave/paths","paths":{'
        b'"blocks/f1620ab":{"id":"' + ID_A.encode() + b'"},'
        b'"refs/head":{"id":"' + ID_B.encode() + b'"}},"version":"0.1.0"}'
    )
    back = decode_manifest(data)
    assert back == m and back.resolve("refs/head") == ID_B
    assert "index" not in json.loads(encode_manifest(PathManifest({"a": ID_A})))


_SEGMENT = st.text(alphabet='abz09_-.é"', min_size=1, max_size=6).filter(
    lambda s: s not in (".", "..")
)
_IDS = st.text(alphabet="AZaz09-_", min_size=43, max_size=43)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.lists(_SEGMENT, min_size=1, max_size=3).map("/".join), _IDS, max_size=30),
    st.booleans(),
)
def test_chunks_are_encode_manifest_bytes(paths: dict[str, str], indexed: bool) -> None:
    """The manifest streamed from sorted pairs is the document encode_manifest makes."""
    paths["refs/head"] = ID_B
    index = "refs/head" if indexed else None
    whole = encode_manifest(PathManifest(paths, index))
    assert b"".join(encode_manifest_chunks(sorted(paths.items()), index)) == whole


def test_chunks_of_many_paths_come_in_pieces_and_refuse_disorder() -> None:
    paths = [(f"data/f{i:06d}", ID_A) for i in range(30_000)] + [("refs/head", ID_B)]
    pieces = list(encode_manifest_chunks(paths, "refs/head"))
    assert len(pieces) > 1
    assert b"".join(pieces) == encode_manifest(PathManifest(dict(paths), "refs/head"))
    with pytest.raises(FormatError, match="sorted order"):
        list(encode_manifest_chunks([("b", ID_A), ("a", ID_A)]))
    with pytest.raises(FormatError, match="sorted order"):
        list(encode_manifest_chunks([("a", ID_A), ("a", ID_B)]))
    with pytest.raises(FormatError, match="not one of its paths"):
        list(encode_manifest_chunks([("a", ID_A)], "refs/head"))
    with pytest.raises(FormatError, match="base64url"):
        list(encode_manifest_chunks([("a", "short")]))
    with pytest.raises(FormatError):
        list(encode_manifest_chunks([("../a", ID_A)]))


def test_decode_spec_example_0_2_0_with_fallback() -> None:
    doc = {
        "manifest": "arweave/paths",
        "version": "0.2.0",
        "index": {"path": "index.html"},
        "fallback": {"id": ID_B},
        "paths": {"index.html": {"id": ID_A}, "js/style.css": {"id": ID_B}},
    }
    m = decode_manifest(json.dumps(doc).encode())
    assert m.index == "index.html" and m.fallback == ID_B and m.paths["js/style.css"] == ID_B


@pytest.mark.parametrize(
    "path",
    ["../etc/passwd", "a/../b", "/abs", "a//b", "a/", "./a", "a\\b", "a\x00b", "a\x1fb", "\nb", ""],
)
def test_decode_rejects_unsafe_paths(path: str) -> None:
    doc = {"manifest": "arweave/paths", "version": "0.1.0", "paths": {path: {"id": ID_A}}}
    with pytest.raises(FormatError):
        decode_manifest(json.dumps(doc).encode())
    with pytest.raises(FormatError):
        encode_manifest(PathManifest({path: ID_A}))


@pytest.mark.parametrize("bad_id", [ID_A[:-1], ID_A + "x", "+" * 43, None, 43])
def test_decode_rejects_bad_ids(bad_id: object) -> None:
    doc = {"manifest": "arweave/paths", "version": "0.1.0", "paths": {"a": {"id": bad_id}}}
    with pytest.raises(FormatError, match="43-character"):
        decode_manifest(json.dumps(doc).encode())


@pytest.mark.parametrize(
    "doc",
    [
        b"not json",
        b"[]",
        b'{"manifest":"arweave/other","version":"0.1.0","paths":{}}',
        b'{"manifest":"arweave/paths","version":"9.9.9","paths":{}}',
        b'{"manifest":"arweave/paths","version":"0.1.0","paths":[]}',
        b'{"manifest":"arweave/paths","version":"0.1.0","paths":{},"index":{"path":"x"}}',
        b'{"manifest":"arweave/paths","version":"0.1.0","paths":{},"fallback":{"id":"x"}}',
    ],
)
def test_decode_rejects_malformed(doc: bytes) -> None:
    with pytest.raises(FormatError):
        decode_manifest(doc)


def test_encode_rejects_index_outside_paths() -> None:
    with pytest.raises(FormatError, match="index"):
        encode_manifest(PathManifest({"a": ID_A}, index="b"))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=12))
def test_path_check_refuses_exactly_the_control_characters(text: str) -> None:
    # The C-speed search against the rule it replaced, character by character.
    path = "a" + text.replace("/", "x").replace("\\", "x").replace(".", "x")
    control = any(ord(c) < 0x20 for c in path)
    try:
        assert check_manifest_path(path) == path and not control
    except FormatError:
        assert control
