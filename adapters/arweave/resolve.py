"""Finding a dataset's uploads on Arweave: the latest record by GraphQL, the rest by back-reference.

DESIGN.md section 5 and docs/arweave-format.md section 4:

1. :func:`find_latest_upload` asks GraphQL for items tagged ``App-Name: odfweb3`` and
   ``ODF-Dataset-Id: <did>`` owned by the publisher, ``sort: HEIGHT_DESC``, a few at a
   time. Pending items have no block and sort first (or last, depending on the gateway),
   and the order inside one block is undefined, so it reads a page and picks the newest
   itself: the record no other candidate names as ``ODF-Prev-Upload``, and among several
   such (a fork) the greatest ``(height, Unix-Time)`` with pending counted as newest. It
   pages on (``after: cursor``) while pages hold pending records or no usable record, so
   more than a page of pending uploads cannot hide the newest one.
2. Items owned by anyone else are ignored even if the gateway returned them (anyone can
   post the same tags); so are items whose tags are not a well-formed upload record
   (e.g. the discovery descriptor, which carries ``ODF-Dataset-Id`` too).
3. :func:`walk_uploads` follows ``ODF-Prev-Upload`` from the latest record to the first,
   checking at each link the owner, the dataset id and head continuity (a record's
   ``ODF-Prev-Head`` is the previous record's ``ODF-Head``); a broken link raises
   :class:`~odfweb3.errors.ResolutionError` naming it.

What the gateway says is not trusted beyond this: record bodies are checked against their
tags (:func:`.record.decode_record`) and every dataset byte read later is hashed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from odfweb3.errors import FormatError, NotFound, ResolutionError

from .arfs import APP_NAME
from .gateway import ArweaveGateway
from .record import RecordTags, UploadRecord, decode_record, parse_record_tags
from .tags import Tag

__all__ = [
    "PAGE_SIZE",
    "Upload",
    "fetch_record",
    "find_latest_upload",
    "item_tags",
    "lookup_items",
    "walk_uploads",
]

PAGE_SIZE: Final = 10
_MAX_PAGES: Final = 20

_NODE_FIELDS = "id owner { address } tags { name value } block { height timestamp }"

_BY_DATASET = (
    "query($owners: [String!], $dataset: String!, $app: String!, $first: Int, $after: String) {"
    ' transactions(owners: $owners, tags: [{name: "ODF-Dataset-Id", values: [$dataset]},'
    ' {name: "App-Name", values: [$app]}], sort: HEIGHT_DESC, first: $first, after: $after)'
    " { pageInfo { hasNextPage } edges { cursor node { " + _NODE_FIELDS + " } } } }"
)

_BY_IDS = (
    "query($ids: [ID!], $first: Int) { transactions(ids: $ids, first: $first)"
    " { edges { node { " + _NODE_FIELDS + " data { size } } } } }"
)


@dataclass(frozen=True)
class Upload:
    """One upload record as GraphQL shows it.

    Attributes:
        id: the record item id.
        owner: the owner's address.
        facts: what the record's tags say.
        tags: the raw tags.
        height: block height, None while pending.
    """

    id: str
    owner: str
    facts: RecordTags
    tags: tuple[Tag, ...]
    height: int | None

    @property
    def pending(self) -> bool:
        """Not yet in a block."""
        return self.height is None

    def order_key(self) -> tuple[float, int]:
        """``(height, Unix-Time)``, pending counted as the newest height."""
        return (float("inf") if self.height is None else float(self.height), self.facts.unix_time)


def item_tags(node: Any) -> tuple[Tag, ...]:
    raw = node.get("tags") if isinstance(node, dict) else None
    if not isinstance(raw, list):
        return ()
    return tuple(
        Tag.of(str(t.get("name", "")), str(t.get("value", ""))) for t in raw if isinstance(t, dict)
    )


def _height(node: dict[str, Any]) -> int | None:
    block = node.get("block")
    if isinstance(block, dict) and block.get("height") is not None:
        return int(block["height"])
    return None


def _owner(node: dict[str, Any]) -> str:
    owner = node.get("owner")
    return str(owner.get("address", "")) if isinstance(owner, dict) else ""


def _as_upload(node: Any, owner: str, dataset_id: str) -> Upload | None:
    """The node as an upload of ``dataset_id`` by ``owner``, or None (ignored)."""
    if not isinstance(node, dict) or _owner(node) != owner:
        return None  # another owner: anyone can post these tags
    tags = item_tags(node)
    try:
        facts = parse_record_tags(tags, f"item {str(node.get('id'))[:43]}")
    except FormatError:
        return None  # not a record (the descriptor, a malformed item)
    if facts.dataset_id != dataset_id:
        return None
    return Upload(str(node["id"]), owner, facts, tags, _height(node))


def _pages(
    gateway: ArweaveGateway, owner: str, dataset_id: str, page_size: int
) -> Iterator[list[Any]]:
    after: str | None = None
    for _ in range(_MAX_PAGES):
        data = gateway.graphql(
            _BY_DATASET,
            {
                "owners": [owner],
                "dataset": dataset_id,
                "app": APP_NAME,
                "first": page_size,
                "after": after,
            },
        )
        conn = data.get("transactions") or {}
        edges = conn.get("edges") or []
        yield [e.get("node") for e in edges if isinstance(e, dict)]
        if not edges or not (conn.get("pageInfo") or {}).get("hasNextPage"):
            return
        after = edges[-1].get("cursor")
        if not after:
            return


def find_latest_upload(
    gateway: ArweaveGateway, owner: str, dataset_id: str, *, page_size: int = PAGE_SIZE
) -> Upload | None:
    """The newest upload record of ``dataset_id`` by ``owner``, or None (see the module doc)."""
    seen: list[Upload] = []
    for nodes in _pages(gateway, owner, dataset_id, page_size):
        uploads = [u for u in (_as_upload(n, owner, dataset_id) for n in nodes) if u is not None]
        seen.extend(uploads)
        # Pending records sort before confirmed ones and their order is undefined: keep
        # paging while a page still holds pending records (more than a page of pending
        # uploads hid the newest one), stop at the first page of confirmed records only.
        if seen and not any(u.pending for u in uploads):
            break
    if not seen:
        return None
    named = {u.facts.prev_upload for u in seen}
    tips = [u for u in seen if u.id not in named] or seen
    return max(tips, key=Upload.order_key)


def lookup_items(gateway: ArweaveGateway, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """GraphQL nodes (owner, tags, block, data size) of the given item ids, 100 at a time."""
    found: dict[str, dict[str, Any]] = {}
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), 100):
        batch = unique[start : start + 100]
        data = gateway.graphql(_BY_IDS, {"ids": batch, "first": len(batch)})
        for edge in (data.get("transactions") or {}).get("edges") or []:
            node = edge.get("node") if isinstance(edge, dict) else None
            if isinstance(node, dict) and node.get("id") in batch:
                found[str(node["id"])] = node
    return found


def walk_uploads(gateway: ArweaveGateway, latest: Upload) -> list[Upload]:
    """Every upload from the first to ``latest``, following ``ODF-Prev-Upload``.

    Raises:
        ResolutionError: a link is missing, owned by someone else, names another dataset,
            or breaks head continuity; or the chain loops.
    """
    chain = [latest]
    seen = {latest.id}
    current = latest
    while current.facts.prev_upload is not None:
        prev_id = current.facts.prev_upload
        where = f"upload {current.id} -> ODF-Prev-Upload {prev_id}"
        if prev_id in seen:
            raise ResolutionError(f"{where}: the back-references loop; the chain is corrupt")
        node = lookup_items(gateway, [prev_id]).get(prev_id)
        if node is None:
            raise ResolutionError(
                f"{where}: {gateway.url} does not know that item; try another gateway"
            )
        if _owner(node) != latest.owner:
            raise ResolutionError(
                f"{where}: owned by {_owner(node)}, not {latest.owner}; refusing the link"
            )
        prev = _as_upload(node, latest.owner, latest.facts.dataset_id)
        if prev is None:
            raise ResolutionError(f"{where}: not an upload record of {latest.facts.dataset_id}")
        if current.facts.prev_head != prev.facts.head:
            raise ResolutionError(
                f"{where}: ODF-Prev-Head {current.facts.prev_head} is not that upload's "
                f"ODF-Head {prev.facts.head}; the chain of uploads is broken"
            )
        chain.append(prev)
        seen.add(prev_id)
        current = prev
    if current.facts.prev_head is not None:
        raise ResolutionError(
            f"upload {current.id}: names a previous head but no previous upload; "
            "the chain of uploads is broken"
        )
    chain.reverse()
    return chain


def fetch_record(gateway: ArweaveGateway, upload: Upload) -> UploadRecord:
    """The record's body (``GET /{id}``), checked against its tags.

    Raises:
        ResolutionError: the gateway does not serve it, or body and tags disagree.
    """
    try:
        body = gateway.get_data(upload.id, limit=64 << 20)
        return decode_record(upload.tags, body, f"upload record {upload.id}")
    except (NotFound, FormatError) as exc:
        raise ResolutionError(
            f"{gateway.url}: cannot read upload record {upload.id}: {exc}"
        ) from exc
