"""A local dataset's ID: from the verified-chain cache when it knows a head, else the Seed.

Used by ``publish`` without a target, ``status``, the encryption decision and the ``keys``
commands: one place that knows where a dataset's ID is kept (its Seed, the chain's last
block; docs/design.md, "Publish").
"""

from __future__ import annotations

from pathlib import Path

from odfweb3.errors import NotFound, UsageError
from odfweb3.odf.chain import walk_chain
from odfweb3.odf.identity import DatasetId
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.model_gen import Seed
from odfweb3.publish.chain_cache import ChainCache

__all__ = ["chain_cache", "dataset_id_of", "verified_dataset_id"]


def chain_cache(state_dir: Path) -> ChainCache:
    """The verified-chain cache under the state directory ``state_dir``."""
    return ChainCache(Path(state_dir) / "cache" / "verified-chains")


def dataset_id_of(path: str | Path, cache: ChainCache | None = None) -> tuple[str, bytes]:
    """The dataset ID and head of the dataset at ``path``.

    The ID is in the Seed, the chain's last block: walk back from the head until the Seed,
    or until a head the verified-chain cache knows (its facts hold the ID), so a dataset
    published before costs the blocks added since, not its whole chain.

    Raises:
        NotFound: the chain does not end in a Seed.
    """
    reader = DatasetReader.open(path)
    seed = None
    head = reader.head()
    for entry in walk_chain(reader):
        known = cache.get(entry.hash) if cache is not None else None
        if known is not None:
            return str(DatasetId.from_bytes(known.dataset_id)), head
        seed = entry.block.event
    if not isinstance(seed, Seed):
        raise NotFound(f"{path}: the chain does not end in a Seed; run odfweb3 validate")
    return str(DatasetId.from_bytes(seed.dataset_id or b"")), head


def verified_dataset_id(text: str) -> str:
    """``did:odf:…`` as given, or the ID of the dataset directory ``text``, its whole chain
    verified first (the ``keys`` commands: a key is never made for a damaged chain).

    Raises:
        UsageError: neither a ``did:odf:`` nor a directory.
        IntegrityError / FormatError: the chain does not verify.
    """
    if text.startswith("did:odf:"):
        return text
    path = Path(text)
    if not path.is_dir():
        raise UsageError(f"{text}: give a did:odf: dataset ID or a dataset directory")
    from odfweb3.publish.execute import load_verified_chain

    return str(load_verified_chain(DatasetReader.open(path))[1])
