"""What this machine published (``odfweb3 status`` without asking the nodes)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from odfweb3.backends import StateFacts
from odfweb3.config import Config

__all__ = ["PublishStatus", "status"]


@dataclass(frozen=True)
class PublishStatus:
    """One saved publish: which dataset, where, which head, and what its backend says the
    state holds (name, sequence, validity, what to share).

    Attributes:
        dataset_id: ``did:odf:…``.
        target: the target name as saved (``car:/abs/dir``, ``ipfs:http://…``).
        head: the head published there (multihash bytes).
        locator: where a reader finds it (``ipns://NAME``, ``ar://RECORD``), if anywhere.
        facts: the backend's reading of the state (:class:`odfweb3.backends.StateFacts`).
    """

    dataset_id: str
    target: str
    head: bytes | None
    locator: str | None
    facts: StateFacts


def status(*, config: Config, dataset: str | Path | None = None) -> tuple[PublishStatus, ...]:
    """Every publish saved here (node targets, then offline ones), or only those of the
    local dataset ``dataset``. Read from the state files alone: no node is asked."""
    from odfweb3.backends import backend_for_target, state_facts
    from odfweb3.publish.dataset_id import chain_cache, dataset_id_of
    from odfweb3.publish.offline import OfflineIndex, known_states
    from odfweb3.publish.state import StateStore

    if dataset is not None:
        did, _ = dataset_id_of(dataset, chain_cache(config.state_dir))
        states = known_states(config.state_dir, did)
    else:
        states = list(StateStore(config.state_dir).all())
        states += [s for _, s, _ in OfflineIndex(config.state_dir).states() if s is not None]
    out = []
    for s in states:
        backend = backend_for_target(s.target)
        locator = backend.record_locator(s) if backend is not None else None
        out.append(PublishStatus(s.dataset_id, s.target, s.head, locator, state_facts(s)))
    return tuple(out)
