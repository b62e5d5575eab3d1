"""One IPFS publish pipeline: what ``car:DIR`` and the node target both build.

The plan decides (:func:`odfweb3.publish.plan.plan_publish`); this module builds what it
decided, the same way for every IPFS target, as :mod:`odfweb3_arweave.publish.publish_bundle`
does for Arweave; the targets only move the blocks (``car:`` writes CAR files into a
directory, the node target streams one CAR to ``dag/import`` and pins):

- :func:`build_delta`: the dataset's UnixFS DAG, only the new blocks to a sink. It imports
  exactly the plan's ``send`` objects and links every other one from the view's state,
  never re-deciding: a state this publish cannot link to (another CID profile, plaintext
  vs encrypted) is the targets' ``inspect`` to report (:func:`reusable_state`,
  ``RemoteView.holds_head``), so the plan sends those objects;
- :func:`side_files`: the UnixFS files published beside the dataset root, never inside
  it: the discovery descriptor (plain publishes; left out with the reason when it fails
  validation) and the Croissant and DCAT documents of what this publish adds
  (:mod:`odfweb3.descriptor.published`), or the key envelope (encrypted publishes, which
  publish none of them: docs/design.md, "Encryption");
- :func:`write_delta_car`: both in one CAR stream (the side files' blocks only where the
  target wants them in the same CAR);
- :func:`record_extension`: the IPNS record's ``_odf`` extension and the state's
  :class:`.state.DagFacts`.
"""

from __future__ import annotations

import io
import itertools
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, BinaryIO, Literal, NoReturn, cast

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from odfweb3.crypto.sealer import Sealer
from odfweb3.descriptor.build import build_descriptor, descriptor_from_facts
from odfweb3.descriptor.codec import encode_descriptor, encode_descriptor_chunks
from odfweb3.descriptor.croissant import data_file_urls, local_sha256
from odfweb3.descriptor.discovery_facts import Presentation
from odfweb3.descriptor.published import Earlier, facts_since, published_croissant, published_dcat
from odfweb3.errors import FormatError
from odfweb3.odf.chain import DatasetObject, walk_chain
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.plan import LazySequence, PublishPlan, held_entries
from odfweb3_ipfs.formats.car import CarWriter
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.formats.ipns import OdfExtension
from odfweb3_ipfs.formats.libp2p_keys import IpnsName, public_key_bytes
from odfweb3_ipfs.publish.cid_profile import CidProfile
from odfweb3_ipfs.publish.dataset_dag import (
    DatasetDag,
    IndexLinks,
    KnownSha256,
    ObjectObserver,
    build_dataset_dag,
    build_dataset_dag_indexed,
    reusable_links,
    reusable_shards,
)
from odfweb3_ipfs.publish.state import DagFacts, IpfsView, X
from odfweb3_ipfs.publish.unixfs_import import BlockSink

__all__ = [
    "DISCOVERY_KINDS",
    "ENCRYPTED_NO_DESCRIPTOR",
    "BuildSettings",
    "DeltaCar",
    "SideFile",
    "SideFiles",
    "build_delta",
    "odf_extra",
    "record_extension",
    "reusable_state",
    "side_files",
    "write_delta_car",
]

ENCRYPTED_NO_DESCRIPTOR = "encrypted dataset: a descriptor would reveal it"

Block = tuple[Cid, bytes]
SideKind = Literal["descriptor", "keyEnvelope", "croissant", "dcat"]
#: The discovery documents of one publish (Croissant, DCAT), each naming the one before.
DISCOVERY_KINDS: tuple[SideKind, ...] = ("croissant", "dcat")


def reusable_state(dag: DagFacts, profile: CidProfile, *, encrypted: bool) -> bool:
    """A publish with ``profile`` and ``encrypted`` can link to the objects of a state
    whose DAG facts are ``dag``.

    Not when the CID version, the CID profile (state ``cidProfile``) or the encryption
    changed (plaintext and ciphertext files never mix in one root): the target then holds
    none of the objects as this publish makes them. The same rule as
    :func:`.dataset_dag.reusable_links`, asked before planning.
    """
    return (
        dag.version == profile.cid_version
        and dag.cid_profile == profile.state_tag
        and bool(dag.encrypted) == encrypted
    )


@dataclass(frozen=True)
class BuildSettings:
    """How an IPFS target builds what it publishes, given once to the pipeline's steps.

    Attributes:
        ipns_key: the key that signs the dataset's record on this target, by dataset ID
            (the descriptor names its IPNS name; :mod:`.signing_key` chooses it).
        profile: the UnixFS import parameters (CID version, chunking, layout).
        sealer: encrypt every object, ``refs/head``, and publish the key envelope.
        publisher: the FOAF agent named as the descriptor's creator.
    """

    ipns_key: Callable[[str], Ed25519PrivateKey]
    profile: CidProfile
    sealer: Sealer | None = None
    publisher: Mapping[str, Any] | None = None


def build_delta(
    plan: PublishPlan,
    reader: DatasetReader,
    view: IpfsView[X],
    settings: BuildSettings,
    *,
    sink: BlockSink,
    progress: Callable[[int], None],
    observer: ObjectObserver | None = None,
) -> DatasetDag:
    """Build the dataset DAG at ``plan.head``, its new blocks to ``sink``: the plan's
    ``send`` objects are imported (read and verified as they stream), every other object
    is linked from the view's state without reading its file; ``observer`` is told of
    each imported object (:class:`.dataset_dag.ObjectObserver`).

    Raises:
        FormatError: the plan and the state disagree on an object: not sent and not
            linked (the target's ``inspect`` said it holds what it cannot name), or both.
        IntegrityError / HashMismatch: a sent object's size or hash is wrong.
    """
    profile, sealer = settings.profile, settings.sealer
    previous, prev_dirs = reusable_links(
        view.state,
        view.has,
        cid_version=profile.cid_version,
        encrypted=sealer is not None,
        profile=profile,
    )
    layout: Iterable[DatasetObject | str]
    grows = _grows_held_layout(plan, view, previous)
    if grows and isinstance(previous, IndexLinks):
        # car:DIR's object index: only the parts the new objects fall in are read.
        return build_dataset_dag_indexed(
            reader,
            plan.head,
            plan.send,
            previous,
            profile=profile,
            sink=sink,
            previous_dir_blocks=prev_dirs,
            progress=progress,
            sealer=sealer,
            previous_shards=reusable_shards(view.state, previous),
            observer=observer,
        )
    if grows:
        # The target holds exactly its head's layout and ours only adds the sent objects
        # to it: the layout is the linked objects plus the sent ones, and the chain below
        # the target's head is not walked.
        layout = [*plan.send, *previous]
    else:
        # The chain's own packed list when the plan holds one lazily: the build lists its
        # paths and names from the packed hashes (no DatasetObject, path or name list an
        # object: some 10 MB at 100,000 blocks, at the build's peak).
        objects = plan.objects
        layout = objects.items() if isinstance(objects, LazySequence) else objects
        # Each object is either sent or linked, as the plan says: checked by membership only
        # (``previous`` parses a link's CID when it is used). The plan sends objects of its
        # own layout: with nothing linked and as many sent as there are, every one is sent
        # (a first publish: no set of every path).
        if previous or len(plan.send) != len(plan.objects):
            send = {o.path for o in plan.send}
            for obj in plan.objects:
                sent, linked = obj.path in send, obj.path in previous
                if sent == linked:
                    _disagree(plan, obj.path, sent, linked)
    return build_dataset_dag(
        reader,
        plan.head,
        layout,
        previous,
        cid_version=profile.cid_version,
        profile=profile,
        sink=sink,
        previous_dir_blocks=prev_dirs,
        progress=progress,
        sealer=sealer,
        # A target whose state keeps hamtShards (car:DIR) rebuilds only changed shards.
        previous_shards=reusable_shards(view.state, previous),
        observer=observer,
    )


def _disagree(plan: PublishPlan, path: str, sent: bool, linked: bool) -> NoReturn:
    what = "sends" if sent else "does not send"
    state_says = "links it already" if linked else "names no reusable link for it"
    raise FormatError(
        f"{plan.target}: the plan {what} {path}, but the publish state "
        f"{state_says}; delete the target's publish state and publish again"
    )


def _grows_held_layout(
    plan: PublishPlan, view: IpfsView[X], previous: Mapping[str, object]
) -> bool:
    """The plan only adds its sent objects to the layout the target holds.

    True when the target holds its head (an ancestor of ours, or ours: a re-publish, which
    sends nothing and rebuilds only ``refs/`` and the root) with every object of it linked in
    the state, and the counts add up: the linked objects and the sent ones are exactly our
    layout (the plan sent everything else; a sent object is never linked).

    Raises:
        FormatError: a sent object is linked already.
    """
    if plan.relation not in ("ahead", "same") or plan.forced:
        return False
    if not view.holds_head or not previous:
        return False
    for obj in plan.send:
        if obj.path in previous:
            _disagree(plan, obj.path, True, True)
    return len(previous) + len(plan.send) == len(plan.objects)


@dataclass(frozen=True)
class DeltaCar:
    """What :func:`write_delta_car` wrote: the DAG, the side files, the CAR's size."""

    dag: DatasetDag
    side: SideFiles
    blocks: int
    bytes: int


def write_delta_car(
    f: BinaryIO,
    plan: PublishPlan,
    reader: DatasetReader,
    view: IpfsView[X],
    settings: BuildSettings,
    *,
    progress: Callable[[int], None],
    inline: Callable[[SideFile], bool] | None = None,
    writer: CarWriter | None = None,
    sink: BlockSink | None = None,
    observer: ObjectObserver | None = None,
) -> DeltaCar:
    """Write the delta CAR (rooted at the dataset root) to ``f``: the new blocks of
    :func:`build_delta`, then the blocks of each side file ``inline`` accepts (the others,
    and all of them without ``inline``, are the caller's to write elsewhere). ``writer``: a
    CAR writer already begun (a resumed CAR); ``sink`` / ``observer``: what the blocks and
    objects go through on their way to it (:mod:`.car_resume`)."""
    if writer is None:
        writer = CarWriter.with_root_later(f, cid_version=settings.profile.cid_version)
    dag = build_delta(
        plan, reader, view, settings, sink=sink or writer, progress=progress, observer=observer
    )
    if inline is None:
        # Nothing more goes into this CAR: its set of written CIDs (one a block: 390,000 at
        # 100,000 blocks) is not held through the discovery documents' import.
        writer.end_blocks()
    side = side_files(plan, reader, dag.root.cid.encode(), settings, view, dag.data_sha256)
    for file in side.files:
        if inline is not None and inline(file):
            for cid, block in file.blocks:
                writer(cid, block)
    writer.set_root(dag.root.cid)
    return DeltaCar(dag, side, writer.blocks_written, writer.bytes_written)


@dataclass(frozen=True)
class SideFile:
    """A UnixFS file published beside the dataset root: its CID and blocks (in memory, or
    :class:`SpooledBlocks` for the discovery documents: iterate them, in order)."""

    kind: SideKind
    cid: Cid
    blocks: Iterable[Block]


@dataclass(frozen=True)
class SideFiles:
    """The side files of one publish, why the descriptor was left out (if it was), and the
    discovery documents kept from the last publish (``kept``: kind -> CID) when this one adds
    no block."""

    files: tuple[SideFile, ...]
    skipped: dict[str, str] = field(default_factory=dict)
    kept: dict[str, str] = field(default_factory=dict)


def _unixfs_file(kind: SideKind, data: bytes, profile: CidProfile) -> SideFile:
    blocks: list[Block] = []
    node = profile.import_bytes(data, lambda cid, block: blocks.append((cid, block)))
    return SideFile(kind, node.cid, tuple(blocks))


class _ChunkReader(io.RawIOBase):
    """A read-only stream of an iterator's byte chunks (the importer reads a stream)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self._left = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._left:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._left = memoryview(chunk)
        n = min(len(buffer), len(self._left))
        buffer[:n] = self._left[:n]
        self._left = self._left[n:]
        return n


class SpooledBlocks:
    """The blocks of a side file kept in an unnamed temporary file, read back in order
    each time they are iterated (only each block's CID, offset and length stay in memory):
    a first publish's Croissant document of 100,000 data files is about 240 MB."""

    def __init__(self) -> None:
        # removed by the system once closed (an unnamed file)
        self._file = tempfile.TemporaryFile(prefix="odfweb3-side-")  # noqa: SIM115
        self._index: list[tuple[Cid, int, int]] = []
        self._end = 0

    def add(self, cid: Cid, block: bytes) -> None:
        """Append one block (a :data:`BlockSink`)."""
        self._file.seek(self._end)
        self._file.write(block)
        self._index.append((cid, self._end, len(block)))
        self._end += len(block)

    def __len__(self) -> int:
        return len(self._index)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SpooledBlocks | tuple | list):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __iter__(self) -> Iterator[Block]:
        for cid, offset, length in self._index:
            self._file.seek(offset)
            yield cid, self._file.read(length)


def _unixfs_streamed(kind: SideKind, chunks: Iterable[bytes], profile: CidProfile) -> SideFile:
    """A side file from its bytes in pieces, its blocks spooled to disk (not held) unless
    the bytes are one piece (a +1 publish's documents: in memory, as before)."""
    pieces = iter(chunks)
    first = next(pieces, b"")
    second = next(pieces, None)
    if second is None:
        return _unixfs_file(kind, first, profile)
    blocks = SpooledBlocks()
    rest = itertools.chain((first, second), pieces)
    with io.BufferedReader(_ChunkReader(rest), 1 << 20) as stream:
        node = profile.import_file(cast(BinaryIO, stream), blocks.add)
    return SideFile(kind, node.cid, blocks)


def side_files(
    plan: PublishPlan,
    reader: DatasetReader,
    root: str,
    settings: BuildSettings,
    view: IpfsView[X] | None = None,
    known_sha256: KnownSha256 | None = None,
) -> SideFiles:
    """The descriptor and the discovery documents (plain) or the key envelope (encrypted,
    with the summary descriptor when the owner allowed it: ``sealer.discovery``), as UnixFS
    files.

    The descriptor names the dataset root and its IPNS name (the dataset key's); one that
    fails validation (e.g. no ``publisher.name`` configured) is left out, the reason in
    ``skipped["descriptorSkipped"]``. The Croissant and DCAT documents list the data files
    of the blocks above the head ``view``'s state published them with
    (:func:`discovery_documents`); ``known_sha256``: the data files' SHA-256 the DAG build
    computed as it imported them (``DatasetDag.data_sha256``), by physical hash.
    """
    ipns_key, profile, sealer, publisher = (
        settings.ipns_key,
        settings.profile,
        settings.sealer,
        settings.publisher,
    )
    if sealer is not None:
        envelope = _unixfs_file("keyEnvelope", sealer.envelope, profile)
        if sealer.discovery != "summary":
            return SideFiles((envelope,), {"descriptorSkipped": ENCRYPTED_NO_DESCRIPTOR})
        # Allowed by the owner: the catalogue facts only (odfweb3.descriptor.summary), no
        # locator (an ipfs:// or ipns:// URL would point into the ciphertext).
        from odfweb3.descriptor.summary import summary_descriptor, validate_summary

        summary = summary_descriptor(
            list(plan.chain) or list(walk_chain(reader, plan.head)), publisher
        )
        errors = [p for p in validate_summary(summary) if p.severity == "error"]
        if errors:
            return SideFiles(
                (envelope,), {"descriptorSkipped": "; ".join(p.message for p in errors)}
            )
        return SideFiles(
            (envelope, _unixfs_file("descriptor", encode_descriptor(summary), profile))
        )
    name = IpnsName.from_public_key(public_key_bytes(ipns_key(plan.dataset_id)))
    locators = {"ipfs": root, "ipns": str(name)}
    if plan.facts is not None:  # the verified chain's facts: no walk at all
        doc = descriptor_from_facts(plan.facts, publisher, locators, identity=f"ipns://{name}")
    else:
        # plan.chain is the chain publish_dataset already verified: no second walk.
        entries = list(plan.chain) or list(walk_chain(reader, plan.head))
        doc = build_descriptor(entries, publisher, locators, identity=f"ipns://{name}")
    files, kept = discovery_documents(
        plan, reader, root, settings, view, f"ipns://{name}", known_sha256
    )
    from odfweb3.descriptor.validate import validate_descriptor  # not for a dry run's start

    errors = [p for p in validate_descriptor(doc) if p.severity == "error"]
    if errors:
        return SideFiles(files, {"descriptorSkipped": "; ".join(p.message for p in errors)}, kept)
    return SideFiles(
        (_unixfs_file("descriptor", encode_descriptor(doc), profile), *files), {}, kept
    )


def earlier_documents(plan: PublishPlan, view: IpfsView[X] | None) -> Earlier:
    """The documents the target's state names, and the head they were published with;
    nothing when the state has none (a first publish, an older odfweb3's) or when the new
    head does not descend from the target's (a forced publish: every file again)."""
    state = view.state if view is not None else None
    if state is None or state.head is None or plan.relation not in ("ahead", "same"):
        return Earlier()
    if plan.forced or state.head != plan.remote_head:
        return Earlier()
    dag = state.extra.dag
    if not (dag.croissant and dag.dcat) or dag.encrypted:
        return Earlier()
    return Earlier(state.head, f"ipfs://{dag.croissant}", f"ipfs://{dag.dcat}")


def discovery_documents(
    plan: PublishPlan,
    reader: DatasetReader,
    root: str,
    settings: BuildSettings,
    view: IpfsView[X] | None,
    identity: str,
    known_sha256: KnownSha256 | None = None,
) -> tuple[tuple[SideFile, ...], dict[str, str]]:
    """The Croissant and DCAT documents of the blocks this publish adds, as UnixFS files
    (each data file's ``contentUrl`` ``ipfs://<root>/data/<hash>``); none and the earlier
    CIDs kept when it adds no block. A data file's SHA-256 is taken from ``known_sha256``
    (computed by the import), else read from the dataset once for both documents."""
    earlier = earlier_documents(plan, view)
    if earlier.head is not None and earlier.head == plan.head and earlier.croissant:
        kept = {"croissant": earlier.croissant, "dcat": earlier.dcat or ""}
        return (), {k: v.removeprefix("ipfs://") for k, v in kept.items()}
    facts = facts_since(
        reader, plan.head, earlier.head, plan.facts, held_entries(plan.chain), plan.discovery
    )
    shown = Presentation(
        settings.publisher,
        identity,
        landing=identity,
        url_of=data_file_urls(ipfs=root),
        sha256_of=_sha256_known_first(known_sha256 or {}, local_sha256(reader)),
    )
    # Both listed a data file at a time and imported as they are encoded: a first publish's
    # documents name every data file (docs/design.md, "Memory of an initial publish").
    croissant = published_croissant(facts, shown, earlier, streamed=True)
    dcat = published_dcat(facts, shown, earlier, streamed=True)
    profile = settings.profile
    return (
        _unixfs_streamed("croissant", encode_descriptor_chunks(croissant), profile),
        _unixfs_streamed("dcat", encode_descriptor_chunks(dcat), profile),
    ), {}


def _sha256_known_first(
    known: KnownSha256, read: Callable[[bytes], str | None]
) -> Callable[[bytes], str | None]:
    """``known``'s digest of a data file, else ``read``'s (which reads each file once)."""

    def sha256_of(mh: bytes) -> str | None:
        hit = known.get(mh)
        return hit if hit is not None else read(mh)

    return sha256_of


def odf_extra(dag: DagFacts) -> dict[str, Any]:
    """The ``_odf`` map's optional entries from a state's DAG facts (descriptor, key
    envelope, and the lineage ``inputs`` map)."""
    out: dict[str, Any] = {}
    if dag.descriptor:
        out["descriptor"] = dag.descriptor
    if dag.key_envelope:
        out["keyEnvelope"] = dag.key_envelope
    if dag.croissant:
        out["croissant"] = dag.croissant
    if dag.dcat:
        out["dcat"] = dag.dcat
    if dag.inputs:
        out["inputs"] = dict(dag.inputs)
    return out


def record_extension(
    plan: PublishPlan, dag: DagFacts, prev: DagFacts | None
) -> tuple[OdfExtension, DagFacts]:
    """The record's ``_odf`` extension and the state's DAG facts for the new head, from
    the upload's facts ``dag`` and the last publish's ``prev``.

    The inputs map (dataset ID -> where each input lives, so a derivative resolves its
    inputs from its own record) is the plan's, else the one the last publish recorded (a
    plain publish keeps it; republish re-signs it).
    """
    inputs = plan.record_extra.get("inputs") or (prev.inputs if prev else None)
    if inputs:
        dag = replace(dag, inputs={str(k): str(v) for k, v in inputs.items()})
    ext = OdfExtension(
        dataset_id=plan.dataset_id,
        head=multihash_to_str(plan.head),
        prev_head=multihash_to_str(plan.remote_head) if plan.remote_head else None,
        extra=odf_extra(dag),
    )
    return ext, dag
