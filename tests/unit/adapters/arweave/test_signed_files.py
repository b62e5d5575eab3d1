"""A bundle's added revisions by path, over the spool's raw ids: the dicts they replace."""

from __future__ import annotations

import random
import uuid
from array import array

from odfweb3_arweave.formats.ans104 import create_data_item
from odfweb3_arweave.formats.record import AddedFile
from odfweb3_arweave.publish.bundle_plan import FileRef, FileToAdd
from odfweb3_arweave.publish.item_spool import ItemSpool
from odfweb3_arweave.publish.signed_files import SignedFiles
from odfweb3_arweave.wallet import Wallet


def test_views_equal_the_dicts_they_replace(fixed_wallet: Wallet) -> None:
    rng = random.Random(7)
    paths = [f"data/f{rng.getrandbits(64):016x}" for _ in range(40)] + ["refs/head"]
    add = [
        FileToAdd(p, "folder", str(uuid.UUID(int=rng.getrandbits(128))), 10 + k, "t")
        for k, p in enumerate(paths)
    ]
    spool = ItemSpool(fixed_wallet.owner)
    data, meta, sizes = array("q"), array("q"), array("q")
    items = {}
    for entry in add:
        d = create_data_item(fixed_wallet, entry.path.encode(), [])
        m = create_data_item(fixed_wallet, b"meta " + entry.path.encode(), [])
        data.append(spool.add(d))
        meta.append(spool.add(m))
        sizes.append(entry.size * 2)
        items[entry.path] = (d.id_b64, m.id_b64, entry.file_id, entry.size * 2)
    signed = SignedFiles(add, spool, data, meta, sizes)
    want_added = {p: AddedFile(d, m, f) for p, (d, m, f, _) in items.items()}
    want_files = {p: FileRef(f, d, m, n) for p, (d, m, f, n) in items.items()}
    assert dict(signed.added) == want_added and dict(signed.files) == want_files
    assert list(signed.added) == sorted(paths) == list(signed.files)
    assert len(signed.added) == len(paths)
    shuffled = paths[:]
    rng.shuffle(shuffled)
    assert all(signed.files[p] == want_files[p] for p in shuffled)  # not in path order
    assert "data/fnone" not in signed.added and 3 not in signed.files
    assert signed.files.get("data/fnone") is None and signed.added.get("refs/head")
    spool.close()


def test_path_order_merges_sorted_runs() -> None:
    from odfweb3_arweave.publish import signed_files

    rng = random.Random(3)
    paths = [f"data/f{rng.getrandbits(40):010x}" for _ in range(3 * signed_files._RUN + 5)]
    order = signed_files._path_order(len(paths), paths.__getitem__)
    assert [paths[k] for k in order] == sorted(paths)
    assert list(signed_files._path_order(0, paths.__getitem__)) == []
