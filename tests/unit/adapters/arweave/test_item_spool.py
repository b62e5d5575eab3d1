"""The item spool writes the same bundle bytes as the items themselves."""

from __future__ import annotations

import hashlib
import io
from typing import BinaryIO, cast

import pytest

from odfweb3.errors import FormatError
from odfweb3_arweave.formats.ans104 import (
    DataItem,
    StreamedDataItem,
    create_data_item,
    iter_bundle,
    sign_data_item_digest,
    sign_data_item_stream,
    write_bundle,
)
from odfweb3_arweave.formats.tags import Tag
from odfweb3_arweave.publish.item_spool import ItemSpool
from odfweb3_arweave.wallet import Wallet, generate_wallet


def _streamed(wallet: Wallet, data: bytes, served: bytes | None = None) -> StreamedDataItem:
    header = sign_data_item_stream(wallet, io.BytesIO(data), len(data), [Tag.of("K", "v")])
    again = data if served is None else served
    return StreamedDataItem(header, lambda: cast(BinaryIO, io.BytesIO(again)))


def test_spooled_bundle_is_the_items_bundle(fixed_wallet: Wallet) -> None:
    items: list[DataItem | StreamedDataItem] = [
        create_data_item(fixed_wallet, b"meta", [Tag.of("Content-Type", "application/json")]),
        _streamed(fixed_wallet, b"x" * 3_000_000),  # spans copy blocks
        create_data_item(fixed_wallet, b"", []),
        create_data_item(fixed_wallet, b"target", [], target=bytes(range(32)), anchor=b"a" * 32),
        _streamed(fixed_wallet, b""),
    ]
    spool = ItemSpool(fixed_wallet.owner)
    perm = [2, 0, 4, 1, 3]  # spooled in another order than the bundle's
    index = {k: spool.add(items[k]) for k in perm}
    spool.set_order([index[k] for k in range(len(items))])
    assert len(spool) == len(items)
    got, want = io.BytesIO(), io.BytesIO()
    size = spool.write(got)
    spool.close()
    assert size == write_bundle(want, items) == len(got.getvalue())
    assert got.getvalue() == want.getvalue()
    got.seek(0)
    assert [i.id for i in iter_bundle(got)] == [i.header.id for i in items]


def test_spool_refuses_short_stream_and_other_owner(fixed_wallet: Wallet) -> None:
    spool = ItemSpool(fixed_wallet.owner)
    spool.set_order([spool.add(_streamed(fixed_wallet, b"abcdef", served=b"abc"))])
    with pytest.raises(FormatError, match="ended 3 bytes early"):
        spool.write(io.BytesIO())
    other = create_data_item(generate_wallet(), b"x")
    with pytest.raises(FormatError, match="another owner"):
        spool.add(other)
    spool.close()


def test_item_spooled_from_pieces_is_the_in_memory_item(
    fixed_wallet: Wallet, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Data written piece by piece into the spool, signed over the digest taken meanwhile:
    the same item (salt 0 signatures are deterministic) and bundle as the joined bytes."""
    sign = Wallet.sign
    monkeypatch.setattr(Wallet, "sign", lambda self, m, salt_length=0: sign(self, m, 0))
    wallet = fixed_wallet
    pieces = [b"[", b"a" * 2_000_000, b"", b",", b"b" * 1_500_000, b"]"]
    tags = [Tag.of("Content-Type", "application/ld+json")]
    whole = create_data_item(wallet, b"".join(pieces), tags)
    first = create_data_item(wallet, b"first", [])
    spool = ItemSpool(wallet.owner)
    at = spool.add(first)
    opener, size, digest = spool.write_data(iter(pieces))
    assert size == len(whole.data)
    assert digest == hashlib.sha384(whole.data).digest()
    header = sign_data_item_digest(wallet, size, digest, tags)
    assert header == whole.header
    spool.set_order([spool.add(StreamedDataItem(header, opener)), at])
    with opener() as again:  # reopened any number of times, from the start
        assert again.read(3) == b"[aa"
    got, want = io.BytesIO(), io.BytesIO()
    assert spool.write(got) == write_bundle(want, [whole, first])
    assert spool.write(io.BytesIO()) == len(want.getvalue())  # written twice: same bytes
    spool.close()
    assert got.getvalue() == want.getvalue()


def test_streamed_by_key_reads_through_reopen(fixed_wallet: Wallet) -> None:
    """Items added by key are read again through the one reopen function, with their key;
    the bundle is the one of the same items each with its own opener."""
    datas = [b"first" * 1000, b"", b"third"]
    items = [_streamed(fixed_wallet, d) for d in datas]
    asked: list[int] = []

    def reopen(key: int) -> BinaryIO:
        asked.append(key)
        return cast(BinaryIO, io.BytesIO(datas[key - 10]))

    spool = ItemSpool(fixed_wallet.owner, reopen)
    meta = create_data_item(fixed_wallet, b"meta", [])
    order = [spool.add_streamed(item.header, 10 + k) for k, item in enumerate(items)]
    order.insert(1, spool.add(meta))
    spool.set_order(order)
    assert spool.item_id(order[1]) == meta.id and spool.item_id(order[0]) == items[0].header.id
    got, want = io.BytesIO(), io.BytesIO()
    spool.write(got)
    spool.close()
    write_bundle(want, [items[0], meta, items[1], items[2]])
    assert got.getvalue() == want.getvalue()
    assert asked == [10, 11, 12]
    with pytest.raises(IndexError):
        spool.item_id(len(order))
    with pytest.raises(ValueError, match="no reopen function"):
        ItemSpool(fixed_wallet.owner).add_streamed(items[0].header, 0)
