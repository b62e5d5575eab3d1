"""A dataset at a glance: what ``odfweb3 inspect`` prints."""

from __future__ import annotations

from dataclasses import dataclass

from odfweb3.odf.chain import ChainEntry, LinkSource, iter_objects
from odfweb3.odf.identity import DatasetId
from odfweb3.odf.model_gen import AddData, DatasetKind, ExecuteTransform, Seed, SetInfo, SetLicense
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.odf.timestamp import Timestamp

__all__ = ["DatasetSummary", "summarize"]


@dataclass(frozen=True)
class DatasetSummary:
    """Identity, head and contents of a dataset, from its verified chain."""

    dataset_id: DatasetId
    kind: DatasetKind
    head: bytes
    blocks: int
    data_files: int
    data_bytes: int
    checkpoints: int
    checkpoint_bytes: int
    records: int
    linked: int
    linked_bytes: int
    watermark: Timestamp | None
    created: Timestamp
    modified: Timestamp
    info: SetInfo | None
    license: SetLicense | None

    def to_json(self) -> dict[str, object]:
        """JSON form (stable keys, camelCase like ODF)."""
        return {
            "datasetId": str(self.dataset_id),
            "kind": self.kind.name.capitalize(),
            "head": multihash_to_str(self.head),
            "blocks": self.blocks,
            "dataFiles": self.data_files,
            "dataBytes": self.data_bytes,
            "checkpoints": self.checkpoints,
            "checkpointBytes": self.checkpoint_bytes,
            "linkedObjects": self.linked,
            "linkedBytes": self.linked_bytes,
            "records": self.records,
            "watermark": self.watermark.isoformat() if self.watermark else None,
            "created": self.created.isoformat(),
            "modified": self.modified.isoformat(),
            "info": None
            if self.info is None
            else {"description": self.info.description, "keywords": list(self.info.keywords or ())},
            "license": None
            if self.license is None
            else {
                "shortName": self.license.short_name,
                "name": self.license.name,
                "spdxId": self.license.spdx_id,
                "websiteUrl": self.license.website_url,
            },
        }


def summarize(entries: list[ChainEntry], links: LinkSource | None = None) -> DatasetSummary:
    """Summarize a verified chain given head first (as ``walk_chain`` yields it); with
    ``links``, its linked objects (ODF RFC-017) counted too."""
    if not entries or not isinstance(entries[-1].block.event, Seed):
        raise ValueError("summarize needs a whole chain ending at its Seed")
    seed = entries[-1].block.event
    info: SetInfo | None = None
    lic: SetLicense | None = None
    watermark: Timestamp | None = None
    records = 0
    for e in entries:  # head first: the first SetInfo/SetLicense seen is the current one
        ev = e.block.event
        if isinstance(ev, SetInfo) and info is None:
            info = ev
        elif isinstance(ev, SetLicense) and lic is None:
            lic = ev
        elif isinstance(ev, AddData | ExecuteTransform):
            if watermark is None and ev.new_watermark is not None:
                watermark = ev.new_watermark
            if ev.new_data is not None and ev.new_data.offset_interval is not None:
                iv = ev.new_data.offset_interval
                records += iv.end - iv.start + 1
    objs = list(iter_objects(entries, links))
    data = [o for o in objs if o.kind == "data"]
    cps = [o for o in objs if o.kind == "checkpoint"]
    linked = [o for o in objs if o.kind == "linked"]
    return DatasetSummary(
        dataset_id=DatasetId.from_bytes(seed.dataset_id or b""),
        kind=seed.dataset_kind,
        head=entries[0].hash,
        blocks=len(entries),
        data_files=len(data),
        data_bytes=sum(o.size or 0 for o in data),
        checkpoints=len(cps),
        checkpoint_bytes=sum(o.size or 0 for o in cps),
        records=records,
        linked=len(linked),
        linked_bytes=sum(o.size or 0 for o in linked),
        watermark=watermark,
        created=entries[-1].block.system_time,
        modified=entries[0].block.system_time,
        info=info,
        license=lic,
    )
