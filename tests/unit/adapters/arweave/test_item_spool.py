"""The item spool writes the same bundle bytes as the items themselves."""

from __future__ import annotations

import io
from typing import BinaryIO, cast

import pytest

from odfweb3.errors import FormatError
from odfweb3_arweave.formats.ans104 import (
    DataItem,
    StreamedDataItem,
    create_data_item,
    iter_bundle,
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
