"""Finding a dataset's uploads on Arweave: the latest record by GraphQL, the rest by back-reference.

docs/design.md, "Arweave mapping" and docs/arweave-format.md section 4:

1. :func:`collect_uploads` asks GraphQL for items tagged ``App-Name: odfweb3`` and
   ``ODF-Dataset-Id: <did>`` owned by the publisher, ``sort: HEIGHT_DESC``, a few at a
   time (100 a page). Pending items have no block and sort first (or last, depending on
   the gateway), and the order inside one block is undefined, so it pages on (``after:
   cursor``) while pages hold pending records, no usable record, or only records of the
   newest block: more than a page of pending uploads, or of one bundler's block, cannot
   hide the newest one. Bounded: a page of more items than asked, or more pages than
   ``_MAX_PAGES`` still wanted, is refused with one line.
2. :func:`choose_latest` is the one rule that says which of those is the latest; readers
   (:func:`find_latest_upload`) and the publisher's post-check after posting
   (:func:`competing_winner`) both call it, so they cannot disagree:

   - an upload's rank is ``(height, Unix-Time, id)``, pending counted as the highest
     height: earlier rank = earlier upload;
   - two uploads naming the same ``ODF-Prev-Upload`` are a race (siblings): the
     *earliest* one wins, and every upload that descends from a losing sibling loses
     with it. First-confirmed-wins is what makes the writer's check final: once our
     upload is in a block, an upload confirmed later (or still pending) can no longer
     beat it, so a publisher that saw itself win cannot be overtaken by a late rival;
   - among the remaining tips (uploads no other one names), the latest rank wins:
     an old losing branch never hides newer uploads of the winning one.
3. Items owned by anyone else are ignored even if the gateway returned them (anyone can
   post the same tags); so are items whose tags are not a well-formed upload record
   (e.g. the discovery descriptor, which carries ``ODF-Dataset-Id`` too).
4. :func:`walk_uploads` follows ``ODF-Prev-Upload`` from the latest record to the first,
   checking at each link the owner, the dataset id and head continuity (a record's
   ``ODF-Prev-Head`` is the previous record's ``ODF-Head``); a broken link raises
   :class:`~odfweb3.errors.ResolutionError` naming it. :func:`walk_to_full_manifest`
   walks the same links only back to the last upload with a full path manifest,
   at most :data:`~odfweb3_arweave.formats.manifest.MAX_DELTA_UPLOADS` of them; a tiered
   record's ``skipChain`` (:mod:`.record`) makes that about log2(n) records, looked up in
   one GraphQL request and each verified against the jump that named it.

What the gateway says is not trusted beyond this: record bodies are checked against their
tags (:func:`.record.decode_record`) and every dataset byte read later is hashed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from odfweb3.errors import FormatError, NotFound, ResolutionError, SignatureError
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.formats.arfs import APP_NAME
from odfweb3_arweave.formats.item_check import (
    ItemProof,
    VerifiedItem,
    proof_of,
    verify_data_item_proof,
    verify_transaction_item,
)
from odfweb3_arweave.formats.manifest import MAX_DELTA_UPLOADS
from odfweb3_arweave.formats.record import (
    RecordTags,
    SkipLink,
    UploadRecord,
    check_delta_link,
    decode_record,
    parse_record_tags,
)
from odfweb3_arweave.formats.tags import Tag

__all__ = [
    "PAGE_SIZE",
    "Upload",
    "choose_latest",
    "collect_uploads",
    "competing_winner",
    "fetch_record",
    "find_latest_upload",
    "item_tags",
    "lookup_items",
    "verify_item",
    "walk_records",
    "walk_to_full_manifest",
    "walk_uploads",
]

PAGE_SIZE: Final = 100  # GraphQL's usual largest page (ar.io, arweave.net, arlocal)
_MAX_PAGES: Final = 20
MAX_RECORD_SIZE: Final = 64 << 20

# signature, owner key, recipient and anchor: what the item's signature is checked with
# (.item_check); owner address, tags and block are only the gateway's word until then.
_NODE_FIELDS = (
    "id signature anchor recipient owner { address key } tags { name value }"
    " block { height timestamp }"
)

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
        proof: what GraphQL gave to check the item's signature with (None: nothing).
    """

    id: str
    owner: str
    facts: RecordTags
    tags: tuple[Tag, ...]
    height: int | None
    proof: ItemProof | None = None

    @property
    def pending(self) -> bool:
        """Not yet in a block."""
        return self.height is None

    def order_key(self) -> tuple[float, int, str]:
        """``(height, Unix-Time, id)``, pending counted as the newest height.

        The id makes the order total: two uploads in one block with the same second
        still compare the same way everywhere.
        """
        height = float("inf") if self.height is None else float(self.height)
        return (height, self.facts.unix_time, self.id)


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
    return Upload(str(node["id"]), owner, facts, tags, _height(node), proof_of(node))


def _pages(
    gateway: ArweaveGateway, owner: str, dataset_id: str, page_size: int
) -> Iterator[list[Any]]:
    """GraphQL pages of the dataset's items by ``owner``, newest block first.

    Raises:
        ResolutionError: a page holds more than ``page_size`` items, or the gateway still
            has more after :data:`_MAX_PAGES` pages while the reader still wants them (no
            upload chain needs that many: a gateway paging without end).
    """
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
        if not isinstance(edges, list) or len(edges) > page_size:
            raise ResolutionError(
                f"{gateway.url}: GraphQL answered more than the {page_size} items a page "
                "asks for; refusing its answer: try another gateway"
            )
        yield [e.get("node") for e in edges if isinstance(e, dict)]
        if not edges or not (conn.get("pageInfo") or {}).get("hasNextPage"):
            return
        after = edges[-1].get("cursor") if isinstance(edges[-1], dict) else None
        if not after:
            return
    raise ResolutionError(
        f"{gateway.url}: GraphQL still had more uploads of {dataset_id} by {owner} after "
        f"{_MAX_PAGES} pages of {page_size}, all pending or in its newest block; a gateway "
        "paging without end: try another gateway"
    )


def collect_uploads(
    gateway: ArweaveGateway, owner: str, dataset_id: str, *, page_size: int = PAGE_SIZE
) -> list[Upload]:
    """The recent upload records of ``dataset_id`` by ``owner`` (see the module doc, rule 1)."""
    seen: list[Upload] = []
    for nodes in _pages(gateway, owner, dataset_id, page_size):
        uploads = [u for u in (_as_upload(n, owner, dataset_id) for n in nodes) if u is not None]
        seen.extend(uploads)
        # Pending records sort before confirmed ones and their order is undefined: keep
        # paging while a page still holds pending records (more than a page of pending
        # uploads hid the newest one). Confirmed ones: the order inside one block is
        # undefined too, so page on while every record of the page is in the newest block
        # seen (a bundler puts many uploads in one block); stop once a page reaches an
        # older block.
        if not uploads or any(u.pending for u in uploads):
            continue
        top = max(u.height or 0 for u in seen if not u.pending)
        if any(u.height != top for u in uploads):
            break
    return list({u.id: u for u in seen}.values())


def _losers(uploads: Sequence[Upload]) -> set[str]:
    """Ids of uploads that lost a race (a sibling ranks earlier) or descend from one."""
    by_prev: dict[str | None, list[Upload]] = {}
    for u in uploads:
        by_prev.setdefault(u.facts.prev_upload, []).append(u)
    lost: set[str] = set()
    for siblings in by_prev.values():
        first = min(siblings, key=Upload.order_key)
        lost.update(u.id for u in siblings if u is not first)
    children: dict[str, list[str]] = {}
    for u in uploads:
        if u.facts.prev_upload is not None:
            children.setdefault(u.facts.prev_upload, []).append(u.id)
    todo = list(lost)
    while todo:  # a loser's descendants lose with it
        for child in children.get(todo.pop(), []):
            if child not in lost:
                lost.add(child)
                todo.append(child)
    return lost


def choose_latest(uploads: Sequence[Upload]) -> Upload | None:
    """The latest upload among ``uploads`` under the readers' rule (module doc, rule 2).

    Pure and deterministic: the same set of uploads gives the same answer in any order.
    Readers and the publisher's post-check both call it.
    """
    if not uploads:
        return None
    lost = _losers(uploads)
    named = {u.facts.prev_upload for u in uploads}
    tips = [u for u in uploads if u.id not in named and u.id not in lost]
    if not tips:  # a loop of back-references: no real tip; stay deterministic
        tips = [u for u in uploads if u.id not in lost] or list(uploads)
    return max(tips, key=Upload.order_key)


def competing_winner(uploads: Sequence[Upload], ours: Upload) -> Upload | None:
    """The upload that beat ``ours`` under :func:`choose_latest`, or None if ours stands.

    Ours stands when the chosen latest upload is ours or descends from it (following
    ``ODF-Prev-Upload`` inside ``uploads``), or when it carries the same head as ours
    (two publishers of one head agree: no conflict). An ancestor of ours never competes.
    """
    winner = choose_latest([*[u for u in uploads if u.id != ours.id], ours])
    if winner is None or winner.facts.head == ours.facts.head:
        return None
    by_id = {u.id: u for u in uploads}
    current: Upload | None = winner
    seen: set[str] = set()
    while current is not None and current.id not in seen:
        if current.id == ours.id:
            return None
        seen.add(current.id)
        prev = current.facts.prev_upload
        current = by_id.get(prev) if prev is not None else None
    return winner


def find_latest_upload(
    gateway: ArweaveGateway,
    owner: str,
    dataset_id: str,
    *,
    page_size: int = PAGE_SIZE,
    verify: bool = True,
) -> Upload | None:
    """The newest upload record of ``dataset_id`` by ``owner``, or None (see the module doc).

    With ``verify`` (readers), the chosen record's signature is checked
    (:func:`fetch_record`): owner and tags are then the publisher's, not the gateway's.

    Raises:
        SignatureError / ReplicaMismatch: the gateway's latest record is forged, or another
            owner's.
    """
    latest = choose_latest(collect_uploads(gateway, owner, dataset_id, page_size=page_size))
    if latest is not None and verify:
        fetch_record(gateway, latest)
    return latest


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


def _linked_upload(
    gateway: ArweaveGateway, node: dict[str, Any] | None, latest: Upload, where: str
) -> tuple[Upload, UploadRecord]:
    """The upload a back-reference or skip link names, checked like the latest one: known to
    the gateway, owned by the latest record's owner, an upload of the same dataset, and its
    record fetched and signature-checked (:func:`fetch_record`)."""
    if node is None:
        raise ResolutionError(
            f"{where}: {gateway.url} does not know that item; try another gateway"
        )
    if _owner(node) != latest.owner:
        raise ResolutionError(
            f"{where}: owned by {_owner(node)}, not {latest.owner}; refusing the link"
        )
    upload = _as_upload(node, latest.owner, latest.facts.dataset_id)
    if upload is None:
        raise ResolutionError(f"{where}: not an upload record of {latest.facts.dataset_id}")
    return upload, fetch_record(gateway, upload)  # the signer's tags and owner, or refused


def _links(gateway: ArweaveGateway, latest: Upload) -> Iterator[tuple[Upload, UploadRecord]]:
    """The uploads before ``latest``, newest first, each link checked and its record verified.

    Raises:
        ResolutionError: a link is missing, owned by someone else, names another dataset,
            or breaks head continuity; or the chain loops.
    """
    seen = {latest.id}
    current = latest
    while current.facts.prev_upload is not None:
        prev_id = current.facts.prev_upload
        where = f"upload {current.id} -> ODF-Prev-Upload {prev_id}"
        if prev_id in seen:
            raise ResolutionError(f"{where}: the back-references loop; the chain is corrupt")
        prev, record = _linked_upload(
            gateway, lookup_items(gateway, [prev_id]).get(prev_id), latest, where
        )
        if current.facts.prev_head != prev.facts.head:
            raise ResolutionError(
                f"{where}: ODF-Prev-Head {current.facts.prev_head} is not that upload's "
                f"ODF-Head {prev.facts.head}; the chain of uploads is broken"
            )
        yield prev, record
        seen.add(prev_id)
        current = prev
    if current.facts.prev_head is not None:
        raise ResolutionError(
            f"upload {current.id}: names a previous head but no previous upload; "
            "the chain of uploads is broken"
        )


def walk_uploads(gateway: ArweaveGateway, latest: Upload) -> list[Upload]:
    """Every upload from the first to ``latest``, following ``ODF-Prev-Upload``.

    Raises:
        ResolutionError: a link is missing, owned by someone else, names another dataset,
            or breaks head continuity; or the chain loops.
    """
    chain = [latest, *(u for u, _ in _links(gateway, latest))]
    chain.reverse()
    return chain


def walk_to_full_manifest(
    gateway: ArweaveGateway,
    latest: Upload,
    record: UploadRecord,
    *,
    limit: int = MAX_DELTA_UPLOADS,
) -> list[UploadRecord]:
    """The records a reader needs back to the last full manifest (oldest first).

    ``record`` is ``latest``'s verified record. A delta upload's manifest maps only the
    paths it added, so a reader needs what every upload since the newest one
    without ``ODF-Full-Manifest`` added. A tiered record (:mod:`.record`) names the records
    to jump to (``skipChain``): they are looked up in one GraphQL request and each is
    verified as a latest one is (signature, owner, dataset, the head and count the jump
    named, the same full manifest, the rest of the chain), so about log2(n) records stand
    for n uploads (their ``earlier`` maps carry the uploads in between). Where the tiers end
    before the full upload (records written before them), the walk goes on by
    ``ODF-Prev-Upload`` as in :func:`walk_uploads`, at most ``limit`` delta uploads.

    Raises:
        ResolutionError: a broken link (see :func:`walk_uploads`), a jump to a record that is
            not the one named, more than ``limit`` delta uploads, a delta naming another
            full manifest, or no full manifest at all.
    """
    return [r for _, r in reversed(_to_full_manifest(gateway, latest, record, limit))]


def walk_records(
    gateway: ArweaveGateway,
    latest: Upload,
    record: UploadRecord,
    *,
    limit: int = MAX_DELTA_UPLOADS,
) -> list[tuple[Upload, UploadRecord]]:
    """Every record whose ``added`` and ``earlier`` maps, applied oldest first, give every
    path's current file revision since the first upload (oldest first, each verified).

    What a reader needs that reads data items by id, not through the path manifest (an ArFS
    private drive), and a publisher rebuilding its state from the network: per stretch of
    delta uploads the tiered walk of :func:`walk_to_full_manifest` (about log2(n) records),
    and where that stretch's full upload is not the first (``arweave.manifest: full``, a
    chain grown past ``limit``, an encryption switch) one checked ``ODF-Prev-Upload`` link
    to the stretch before it, walked the same way.

    Raises:
        ResolutionError: as :func:`walk_to_full_manifest`; or the stretches loop.
    """
    newest_first: list[tuple[Upload, UploadRecord]] = []
    current, current_record = latest, record
    seen: set[str] = set()
    while True:
        stretch = _to_full_manifest(gateway, current, current_record, limit)
        for upload, _ in stretch:
            if upload.id in seen:
                raise ResolutionError(
                    f"upload {upload.id}: reached twice walking back from {latest.id}; the "
                    "chain of uploads loops: it is corrupt"
                )
            seen.add(upload.id)
        newest_first.extend(stretch)
        full_upload, full = stretch[-1]
        if full.prev_upload is None:
            break
        # One link, checked as every back-reference is (owner, dataset, head continuity).
        current, current_record = next(_links(gateway, full_upload))
    newest_first.reverse()
    return newest_first


def _to_full_manifest(
    gateway: ArweaveGateway, latest: Upload, record: UploadRecord, limit: int
) -> list[tuple[Upload, UploadRecord]]:
    """:func:`walk_to_full_manifest` with each record's upload, newest first."""
    pairs = [(latest, record)]
    if record.delta_uploads is not None and record.delta_uploads > limit:
        # Known from the latest record alone: refused before anything else is asked.
        raise ResolutionError(
            f"upload {latest.id}: says it is delta upload {record.delta_uploads} since the "
            f"last full manifest; readers walk at most {limit} (a publisher writes a full "
            "manifest before that): refusing it"
        )
    if record.delta:
        current = latest
        if record.skip_chain:
            current = _jump(gateway, latest, record, pairs)
        if pairs[-1][1].delta:
            later = pairs[-1][1].tags_view
            for prev_upload, prev in _links(gateway, current):
                check_delta_link(later, prev.tags_view, f"upload {prev_upload.id}")
                later = prev.tags_view
                pairs.append((prev_upload, prev))
                if not prev.delta:
                    break
                if len(pairs) > limit:
                    raise ResolutionError(
                        f"upload {latest.id}: more than {limit} delta manifests since the "
                        "last full one; readers walk at most that many (a publisher writes a "
                        "full manifest before that): refusing it"
                    )
        full = pairs[-1][1]
        if full.delta:
            raise ResolutionError(
                f"upload {latest.id}: the first upload has a delta manifest; the chain of "
                "uploads is broken"
            )
        other = next((r for _, r in pairs[:-1] if r.full_manifest != full.manifest_id), None)
        if other is not None:
            raise ResolutionError(
                f"upload of head {other.head}: names full manifest {other.full_manifest}, but "
                f"the last full one is {full.manifest_id}; the chain of uploads is broken"
            )
    return pairs


def _jump(
    gateway: ArweaveGateway,
    latest: Upload,
    record: UploadRecord,
    pairs: list[tuple[Upload, UploadRecord]],
) -> Upload:
    """Follow ``record``'s ``skipChain``, appending each verified record to ``pairs``;
    the last upload reached (where a walk by ``ODF-Prev-Upload`` goes on if it is a delta).

    One GraphQL request for the whole chain (at most ``MAX_SKIP_CHAIN`` ids, checked by
    :func:`.record.decode_record`), then one ``GET`` per record; where a chain ends at a
    record with a chain of its own, the same again from there.
    """
    chain = record.skip_chain
    current, hops = latest, 0
    while chain:
        nodes = lookup_items(gateway, [link.record_id for link in chain])
        follow: tuple[SkipLink, ...] = ()
        for i, link in enumerate(chain):
            where = f"upload {current.id} -> skipChain {link.record_id}"
            upload, found = _linked_upload(gateway, nodes.get(link.record_id), latest, where)
            # None: a delta written before the count existed (the tiers' end; walked past
            # by ODF-Prev-Upload).
            count = found.delta_uploads if found.delta else 0
            if found.head != link.head or (count is not None and count != link.deltas):
                raise ResolutionError(
                    f"{where}: that record has ODF-Head {found.head} and counts {count} "
                    f"delta uploads, the jump named {link.head} and {link.deltas}; the chain "
                    "of uploads is broken"
                )
            rest = chain[i + 1 :]
            if rest and found.skip_chain != rest:
                raise ResolutionError(
                    f"{where}: its skipChain is not the rest of the one that jumped to it; "
                    "the chain of uploads is broken"
                )
            pairs.append((upload, found))
            current = upload
            hops += 1
            if hops > MAX_DELTA_UPLOADS:
                raise ResolutionError(
                    f"upload {latest.id}: more than {MAX_DELTA_UPLOADS} records on its skip "
                    "chain; refusing it"
                )
            # The end of this chain may hold a counter of its own (a publisher that lost
            # its counter jumped to its previous record): jump on from there. Counts
            # strictly fall at every jump (.record.decode_record), so this ends.
            follow = found.skip_chain if not rest else ()
        chain = follow
    return current


def verify_item(
    gateway: ArweaveGateway,
    item_id: str,
    proof: ItemProof | None,
    tags: Sequence[Tag],
    data: bytes,
    *,
    expected_owner: str | None,
    where: str,
) -> VerifiedItem:
    """The item's owner, tags and data as its signature proves them.

    Tried as an ANS-104 data item from GraphQL's ``proof`` fields and ``tags``; if that does
    not verify, as an L1 transaction from ``GET /tx/{id}``. See :mod:`.item_check`.

    Raises:
        SignatureError: neither verifies (a forged or altered item).
        ReplicaMismatch: validly signed by someone other than ``expected_owner``.
    """
    failure: SignatureError | None = None
    if proof is not None:
        try:
            return verify_data_item_proof(
                item_id, proof, tags, data, expected_owner=expected_owner, where=where
            )
        except SignatureError as exc:
            failure = exc
    header = gateway.get_tx_header(item_id)
    if isinstance(header, dict) and str(header.get("format")) == "2":
        return verify_transaction_item(
            item_id, header, data, expected_owner=expected_owner, where=where
        )
    raise failure or SignatureError(
        f"{where}: {gateway.url} gives no signature for it (GraphQL signature, owner key) "
        "and no transaction header; it cannot be verified: try another gateway"
    )


def fetch_record(gateway: ArweaveGateway, upload: Upload) -> UploadRecord:
    """The record's body (``GET /{id}``), its signature checked, then checked against its tags.

    The signature (:func:`verify_item`) proves the owner, the tags and the body are the
    publisher's (``upload.owner``); a gateway's forgery is refused here.

    Raises:
        ResolutionError: the gateway does not serve it, or body and tags disagree.
        SignatureError: the record's signature does not verify (a forged record).
    """
    where = f"upload record {upload.id}"
    try:
        body = gateway.get_data(upload.id, limit=MAX_RECORD_SIZE)
    except NotFound as exc:
        raise ResolutionError(
            f"{gateway.url}: cannot read upload record {upload.id}: {exc}"
        ) from exc
    item = verify_item(
        gateway,
        upload.id,
        upload.proof,
        upload.tags,
        body,
        expected_owner=upload.owner,
        where=where,
    )
    try:
        return decode_record(item.tags, item.data, where)
    except FormatError as exc:
        raise ResolutionError(
            f"{gateway.url}: cannot read upload record {upload.id}: {exc}"
        ) from exc
