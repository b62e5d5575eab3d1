"""``ar://<record-or-manifest-id>``: a dataset read through a gateway's path manifests.

Reads only what any gateway serves (Simple Transfer Protocol): ``GET /{manifest}/refs/head``,
``GET /{manifest}/blocks/{hash}``, ``GET /{manifest}/data/{hash}``, ... The id may name an
upload record (its ``ODF-Manifest`` and ``ODF-Head`` tags are looked up by GraphQL, and the
head served must equal ``ODF-Head``) or a path manifest. Nothing the gateway says is
trusted: blocks are hashed here, objects by :func:`odfweb3.replica.read_object_verified`,
and the head by the chain walk that starts from it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from odfweb3.errors import FormatError, HashMismatch, ReplicaMismatch, ResolutionError
from odfweb3.odf.layout import ObjectKind, object_relpath
from odfweb3.odf.multihash import multihash_from_str, multihash_to_str, new_hasher

from .arfs import tag_value
from .gateway import ArweaveGateway
from .manifest import MANIFEST_CONTENT_TYPE
from .resolve import item_tags, lookup_items

__all__ = ["MAX_BLOCK_SIZE", "ArweaveReplica", "open_ar_replica"]

MAX_BLOCK_SIZE: Final = 16 << 20
_ID_LENGTH: Final = 43


class ArweaveReplica:
    """A dataset at one path manifest on a gateway (see the module docstring)."""

    def __init__(
        self, gateway: ArweaveGateway, manifest_id: str, ref: str, expected_head: str | None
    ) -> None:
        self.gateway = gateway
        self.manifest_id = manifest_id
        self.expected_head = expected_head
        self.name = ref

    def head(self) -> bytes:
        text = self.gateway.get_data(f"{self.manifest_id}/refs/head", limit=256).decode(
            "ascii", "replace"
        )
        try:
            head = multihash_from_str(text.strip())
        except FormatError as exc:
            raise FormatError(f"{self.name}: refs/head is not a multibase hash ({exc})") from None
        if self.expected_head is not None and multihash_to_str(head) != self.expected_head:
            raise ReplicaMismatch(
                f"{self.name}: refs/head is {multihash_to_str(head)} but the upload record says "
                f"{self.expected_head}; the gateway serves something else"
            )
        return head

    def read_block(self, mh: bytes) -> bytes:
        data = self.gateway.get_data(
            f"{self.manifest_id}/{object_relpath('block', mh)}", limit=MAX_BLOCK_SIZE
        )
        hasher = new_hasher(mh[0])
        hasher.update(data)
        actual = bytes((mh[0], hasher.digest_size)) + hasher.digest()
        if actual != mh:
            raise HashMismatch(multihash_to_str(mh), multihash_to_str(actual), self.name)
        return data

    def stream_object(self, kind: ObjectKind, mh: bytes, size: int | None) -> Iterator[bytes]:
        n = 0
        for chunk in self.gateway.stream_data(f"{self.manifest_id}/{object_relpath(kind, mh)}"):
            n += len(chunk)
            if size is not None and n > size:
                raise ReplicaMismatch(
                    f"{self.name}: {object_relpath(kind, mh)} is longer than {size} bytes"
                )
            yield chunk


def open_ar_replica(gateway: ArweaveGateway, ref: str) -> ArweaveReplica:
    """Open ``ar://<id>``: an upload record id or a path manifest id.

    Raises:
        ResolutionError: the id is neither, or the gateway does not know it.
    """
    item_id = ref.removeprefix("ar://").strip("/")
    if len(item_id) != _ID_LENGTH:
        raise ResolutionError(f"{ref}: not ar://<43-character id>")
    node = lookup_items(gateway, [item_id]).get(item_id)
    if node is None:
        raise ResolutionError(f"{ref}: {gateway.url} does not know that id")
    tags = item_tags(node)
    manifest = tag_value(tags, "ODF-Manifest")
    if manifest is not None:
        return ArweaveReplica(gateway, manifest, ref, tag_value(tags, "ODF-Head"))
    if tag_value(tags, "Content-Type") == MANIFEST_CONTENT_TYPE:
        return ArweaveReplica(gateway, item_id, ref, None)
    raise ResolutionError(f"{ref}: neither an odfweb3 upload record nor a path manifest")
