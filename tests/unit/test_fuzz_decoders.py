"""Property tests filling the gaps left by the per-format suites (fuzzing).

Already covered elsewhere with hypothesis (not repeated here): FlatBuffers blocks
(tests/unit/odf/test_codec.py), dag-pb (adapters/ipfs/test_dagpb.py), CAR
(adapters/ipfs/test_car.py), DAG-CBOR (adapters/ipfs/test_dagcbor.py), IPNS records
(adapters/ipfs/test_ipns.py), the segmented AEAD format (crypto/test_segments.py), key
envelopes (crypto/test_envelope.py), descriptors (test_descriptor.py).

Here: UnixFS Data, CIDs and varints, ANS-104 tags / data items / bundles, path manifests,
upload records, Arweave transaction JSON, the YAML configuration, and a mutation pass over
every decoder and over the IPFS readers with their budgets on (DAG walk, HAMT listing, a
whole ``car:DIR``). The rule for every decoder: random or mutated bytes give a
value or one of our own errors (``OdfWeb3Error``), never anything else. Example counts are modest so
``make test`` stays fast; ``make fuzz`` (tools/fuzz.py) runs a million inputs per parser.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odfweb3.config import load_config
from odfweb3.errors import OdfWeb3Error
from odfweb3_arweave.formats.ans104 import (
    decode_bundle,
    decode_data_item,
    decode_tags,
    encode_bundle,
    encode_data_item,
    encode_tags,
)
from odfweb3_arweave.formats.manifest import PathManifest, decode_manifest, encode_manifest
from odfweb3_arweave.formats.tags import Tag
from odfweb3_ipfs.formats.cid import Cid, decode_uvarint, encode_uvarint
from odfweb3_ipfs.formats.unixfs_data import (
    DataType,
    UnixFSData,
    decode_unixfs_data,
    encode_unixfs_data,
)
from tools.fuzz import PARSERS, SMOKE, mutate, seeds_for

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ID = st.binary(min_size=32, max_size=32)


# -- round trips ---------------------------------------------------------------------------


@FAST
@given(
    type_=st.sampled_from(list(DataType)),
    data=st.none() | st.binary(max_size=64),
    filesize=st.none() | st.integers(0, 2**63 - 1),
    blocksizes=st.lists(st.integers(0, 2**40), max_size=8).map(tuple),
    fanout=st.none() | st.integers(0, 2**20),
    mode=st.none() | st.integers(0, 0o7777),
)
def test_unixfs_data_round_trip(type_, data, filesize, blocksizes, fanout, mode) -> None:
    msg = UnixFSData(
        type_, data=data, filesize=filesize, blocksizes=blocksizes, fanout=fanout, mode=mode
    )
    assert decode_unixfs_data(encode_unixfs_data(msg)) == msg


@FAST
@given(st.integers(0, 2**63 - 1))
def test_uvarint_round_trip(n: int) -> None:
    raw = encode_uvarint(n)
    assert decode_uvarint(raw, 0, "test") == (n, len(raw))


@FAST
@given(
    st.lists(
        st.tuples(st.binary(min_size=1, max_size=40), st.binary(min_size=1, max_size=80)),
        max_size=8,
    )
)
def test_ans104_tags_round_trip(pairs) -> None:
    tags = tuple(Tag(n, v) for n, v in pairs)
    assert decode_tags(encode_tags(tags)) == tags


_SEGMENT = st.text("abcdefghijklmnopqrstuvwxyz0123456789-_.", min_size=1, max_size=12).filter(
    lambda s: s not in (".", "..")
)
_PATH = st.lists(_SEGMENT, min_size=1, max_size=4).map("/".join)
_AR_ID = st.binary(min_size=32, max_size=32).map(
    lambda b: __import__("base64").urlsafe_b64encode(b).rstrip(b"=").decode()
)


@FAST
@given(st.dictionaries(_PATH, _AR_ID, min_size=1, max_size=10), st.data())
def test_manifest_round_trip(paths, data) -> None:
    index = data.draw(st.none() | st.sampled_from(sorted(paths)))
    manifest = PathManifest(paths=paths, index=index)
    assert decode_manifest(encode_manifest(manifest)) == manifest


@pytest.fixture(scope="module")
def signed_items():
    """Two real signed data items (RSA-4096 signing is slow: made once)."""
    from odfweb3_arweave.formats.ans104 import create_data_item
    from odfweb3_arweave.wallet import generate_wallet

    wallet = generate_wallet()
    return [
        create_data_item(wallet, b"hello odfweb3", [Tag.of("App-Name", "odfweb3")]),
        create_data_item(wallet, os.urandom(3000), anchor=os.urandom(32)),
    ]


def test_ans104_item_and_bundle_round_trip(signed_items) -> None:
    for item in signed_items:
        assert decode_data_item(encode_data_item(item)) == item
    assert decode_bundle(encode_bundle(signed_items)) == signed_items


# -- only our own errors ---------------------------------------------------------------------


def _only_ours(parse, data: bytes) -> None:
    with contextlib.suppress(OdfWeb3Error):
        parse(data)


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_mutated_inputs_raise_only_our_errors(name: str) -> None:
    """A few thousand mutations of valid seeds per parser (tools/fuzz.py's loop, short)."""
    import random

    rng = random.Random(name)
    parse = PARSERS[name]
    seeds = seeds_for(name)
    for seed in seeds:
        _only_ours(parse, seed)  # the seeds themselves parse
    for _ in range(SMOKE.get(name, 1500)):
        _only_ours(parse, mutate(rng, rng.choice(seeds)))


@FAST
@given(st.sampled_from(sorted(PARSERS)), st.binary(max_size=600))
def test_random_bytes_raise_only_our_errors(name: str, data: bytes) -> None:
    _only_ours(PARSERS[name], data)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=200) | st.binary(max_size=200).map(lambda b: b.decode("latin-1")))
def test_malformed_yaml_config_is_a_config_error(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "odfweb3.yaml"
        path.write_text(text, "utf-8")
        with contextlib.suppress(OdfWeb3Error):
            load_config(path, env={}, cwd=Path(tmp))


def test_cid_decode_of_garbage_is_ours() -> None:
    for text in ("", "b", "zzzz", "Qm" + "1" * 44, "bafy" + "!" * 10, "f01"):
        with pytest.raises(OdfWeb3Error):
            Cid.decode(text)
