"""Cross-checks with independent implementations: npm `arweave` and `arbundles`.

The oracle script is tests/nodes/oracles/arweave_oracle.mjs; its packages are installed by
`make nodes`. A missing install fails these tests (never skips them).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from odfweb3_arweave.formats.ans104 import (
    StreamedDataItem,
    create_data_item,
    decode_bundle,
    decode_data_item,
    encode_bundle,
    encode_data_item,
    iter_bundle,
    sign_data_item_stream,
    write_bundle,
)
from odfweb3_arweave.formats.b64 import b64url_encode
from odfweb3_arweave.formats.merkle import MAX_CHUNK_SIZE, MIN_CHUNK_SIZE, build_tree_from_stream
from odfweb3_arweave.formats.tags import Tag
from odfweb3_arweave.formats.tx import from_json, new_transaction, sign_transaction, to_json
from odfweb3_arweave.wallet import Wallet

from .conftest import FIXED_WALLET_PATH

ORACLES = Path(__file__).resolve().parents[1] / "nodes" / "oracles"
SCRIPT = ORACLES / "arweave_oracle.mjs"
PACKAGES = ("arweave", "arbundles")
TAGS = [Tag.of("Content-Type", "text/plain"), Tag.of("Grüße", "日本語 ✓")]
TAGS_JSON = json.dumps([{"name": n, "value": v} for n, v in (t.text() for t in TAGS)])


def oracle(*args: str | Path) -> dict[str, Any]:
    """Run one oracle command and return its JSON output."""
    missing = [p for p in PACKAGES if not (ORACLES / "node_modules" / p / "package.json").exists()]
    if missing:
        pytest.fail(
            f"npm packages {', '.join(missing)} missing in {ORACLES}/node_modules: "
            "`make nodes` was not run"
        )
    result = subprocess.run(
        ["node", str(SCRIPT), *map(str, args)],
        cwd=ORACLES,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"oracle {args[0]} failed: {result.stderr[-2000:]}"
    output: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return output


def test_arweave_js_verifies_our_transaction(fixed_wallet: Wallet, tmp_path: Path) -> None:
    data = os.urandom(300_000)
    tx = sign_transaction(
        new_transaction(
            owner=fixed_wallet.owner, reward=987, last_tx=bytes(range(32)), tags=TAGS, data=data
        ),
        fixed_wallet,
    )
    path = tmp_path / "tx.json"
    path.write_text(to_json(tx, include_data=True))
    result = oracle("verify-tx", path)
    assert result["valid"] is True
    assert result["id"] == tx.id_b64
    assert [(t["name"], t["value"]) for t in result["tags"]] == [t.text() for t in TAGS]
    # a transaction whose data is uploaded as chunks (no inline data) verifies too
    path.write_text(to_json(tx, include_data=False))
    assert oracle("verify-tx", path)["valid"] is True
    # and a tampered one does not
    obj = json.loads(to_json(tx, include_data=False))
    obj["reward"] = "988"
    path.write_text(json.dumps(obj))
    assert oracle("verify-tx", path)["valid"] is False


def test_we_verify_arweave_js_transaction(tmp_path: Path) -> None:
    data_file = tmp_path / "data.bin"
    data_file.write_bytes(os.urandom(MAX_CHUNK_SIZE + 1000))
    out = tmp_path / "tx.json"
    made = oracle("sign-tx", FIXED_WALLET_PATH, data_file, TAGS_JSON, out)
    tx = from_json(out.read_text())  # verifies signature, id and data_root
    assert tx.id_b64 == made["id"]
    assert tx.tags == tuple(TAGS)
    assert tx.data == data_file.read_bytes()


@pytest.mark.parametrize(
    "size",
    [
        0,
        1,
        MIN_CHUNK_SIZE,
        MAX_CHUNK_SIZE,
        MAX_CHUNK_SIZE + MIN_CHUNK_SIZE - 1,
        2 * MAX_CHUNK_SIZE + 1,
        3 * MAX_CHUNK_SIZE + 70_000,
        4 * MAX_CHUNK_SIZE,
    ],
)
def test_data_root_chunks_and_proofs_match_arweave_js(size: int, tmp_path: Path) -> None:
    data = os.urandom(size)
    path = tmp_path / "data.bin"
    path.write_bytes(data)
    expected = oracle("data-root", path)
    tree = build_tree_from_stream(io.BytesIO(data), size)
    assert b64url_encode(tree.data_root) == expected["data_root"]
    ours = [
        [c.min_byte_range, c.max_byte_range, b64url_encode(c.data_hash)] for c in tree.upload_chunks
    ]
    theirs = expected["chunks"]
    if size == 0:  # arweave-js keeps the lone empty chunk of empty data
        theirs = [c for c in theirs if c[0] != c[1]]
    assert ours == theirs
    proofs = [[p.offset, b64url_encode(p.data_path)] for p in tree.proofs()]
    assert proofs == expected["proofs"][: len(proofs)]


def test_arbundles_verifies_our_item(fixed_wallet: Wallet, tmp_path: Path) -> None:
    target, anchor = bytes(range(32)), b"0123456789abcdef0123456789abcdef"
    item = create_data_item(fixed_wallet, b"item payload", TAGS, target=target, anchor=anchor)
    path = tmp_path / "item.bin"
    path.write_bytes(encode_data_item(item))
    result = oracle("verify-item", path)
    assert result["valid"] is True
    assert result["id"] == item.id_b64
    assert result["owner"] == fixed_wallet.owner_b64
    assert result["target"] == b64url_encode(target)
    assert result["anchor"] == b64url_encode(anchor)
    assert [(t["name"], t["value"]) for t in result["tags"]] == [t.text() for t in TAGS]
    # a corrupted item is refused by arbundles too
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 1
    path.write_bytes(bytes(raw))
    assert oracle("verify-item", path)["valid"] is False


def test_we_verify_arbundles_item(tmp_path: Path) -> None:
    data_file = tmp_path / "data.bin"
    data_file.write_bytes(b"made by arbundles")
    out = tmp_path / "item.bin"
    target = b64url_encode(bytes(range(100, 132)))
    anchor = "A" * 32
    made = oracle("make-item", FIXED_WALLET_PATH, data_file, TAGS_JSON, out, target, anchor)
    item = decode_data_item(out.read_bytes())  # verifies the signature
    assert item.id_b64 == made["id"]
    assert item.tags == tuple(TAGS)
    assert item.header.target == bytes(range(100, 132))
    assert item.header.anchor == anchor.encode()
    assert item.data == b"made by arbundles"
    # no tags at all: arbundles writes zero tag bytes
    made = oracle("make-item", FIXED_WALLET_PATH, data_file, "[]", out)
    assert decode_data_item(out.read_bytes()).id_b64 == made["id"]


def test_arbundles_verifies_our_bundle(fixed_wallet: Wallet, tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(700_000))
    with big.open("rb") as stream:
        header = sign_data_item_stream(fixed_wallet, stream, 700_000, TAGS)
    items = [
        create_data_item(fixed_wallet, b"one", TAGS),
        create_data_item(fixed_wallet, b"", [Tag.of("Empty", "data")]),
        StreamedDataItem(header, lambda: big.open("rb")),
    ]
    path = tmp_path / "bundle.bin"
    with path.open("wb") as out:
        write_bundle(out, items)
    result = oracle("verify-bundle", path)
    assert result["valid"] is True
    assert result["ids"] == [i.header.id_b64 for i in items]
    # a bundle with a corrupted item does not verify there either
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 1
    path.write_bytes(bytes(raw))
    assert oracle("verify-bundle", path)["valid"] is False


def test_we_verify_arbundles_bundle(tmp_path: Path) -> None:
    spec = []
    for i, payload in enumerate((b"alpha", b"", os.urandom(300_000))):
        data_file = tmp_path / f"d{i}.bin"
        data_file.write_bytes(payload)
        spec.append({"data_file": str(data_file), "tags": [{"name": "N", "value": str(i)}]})
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(spec))
    out = tmp_path / "bundle.bin"
    made = oracle("make-bundle", FIXED_WALLET_PATH, spec_file, out)
    with out.open("rb") as stream:
        items = list(iter_bundle(stream))
    assert [i.id_b64 for i in items] == made["ids"]
    assert [i.tags for i in items] == [(Tag.of("N", str(i)),) for i in range(3)]
    assert encode_bundle(decode_bundle(out.read_bytes())) == out.read_bytes()
