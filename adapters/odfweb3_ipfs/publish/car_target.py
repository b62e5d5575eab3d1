"""Offline IPFS publishing: CAR files and a signed IPNS record in a directory.

The embedded default (``--to car:OUT_DIR``): no daemon needed. Each publish
writes into ``OUT_DIR``:

- ``<root>.car``: CAR v1 with the blocks the previous publish to this directory
  did not have (the first publish: everything). Import them all, oldest first,
  with ``ipfs dag import *.car`` (later CARs reference blocks of earlier ones);
- ``<name>.ipns-record``: the signed IPNS record for the dataset's key, sequence
  one more than the last (``ipfs routing put /ipns/<name> <file>``);
- ``publish.json``: dataset ID, head, root CID, IPNS name, sequence, the files
  written, and the per-object CIDs that make the next publish incremental;
- ``<descriptor-cid>.car``: the discovery descriptor (JSON-LD, :mod:`odfweb3.descriptor`) as
  its own UnixFS file, outside the dataset root (whose contents are exactly the ODF layout);
  its CID is in ``publish.json`` and in the record's ``_odf`` map as ``descriptor``. Left out,
  with a note, when the descriptor fails validation (e.g. no ``publisher.name`` configured).
- ``<cid>.car`` of the Croissant and of the DCAT document of the data files this publish
  added (:mod:`odfweb3.descriptor.published`), their CIDs in ``publish.json``
  (``extra.croissant`` / ``extra.dcat``) and the record's ``_odf`` map; every such CAR
  stays (``extra.discoveryCars``, in the import hint: each document names the one before).
- encrypted publishes (``sealer``, docs/design.md, "Encryption"): every object and
  ``refs/head`` in the CAR is ciphertext (same paths); the key envelope is its own
  ``<cid>.car`` beside the root, its CID in ``publish.json`` and in the record's ``_odf``
  map as ``keyEnvelope``; the descriptor and the Croissant and DCAT documents (which would
  reveal the dataset's metadata) are left out, but for the summary descriptor the owner
  may allow (``encryptedDiscovery: summary``, :mod:`odfweb3.descriptor.summary`), written
  as the descriptor is.

Commit order holds here too: the CAR is written to a temp file and renamed,
then the record, then ``publish.json`` last. An interrupted publish leaves the
old ``publish.json``, so the next run redoes the delta; an interrupted *first* publish
leaves its partial CAR and progress log, and the next run goes on writing it
(:mod:`.car_resume`: what is already whole in it is not written again).

``OUT_DIR`` may be shared (a disk or bucket others write): nothing in it is reused unchecked.
The private state's seal (:mod:`odfweb3.publish.outdir_seal`, passed in as ``seal``) vouches
for ``publish.json`` and every CAR it names (a digest and a ``stat`` each); when it does not,
the directory is re-read as a reader would (:meth:`CarTarget._reread`) and, failing that, a
full CAR is written again: a record is never signed over content not all present. The
record's sequence is raised above every sequence this machine signed (the keystore entry's
memory) or saw (``seen``) for the name (:func:`~odfweb3_ipfs.read.replay_memory.sequence_floor`),
whatever ``publish.json`` says, and the names in ``publish.json`` must be plain ``<cid>.car`` /
``<name>.ipns-record`` names (:func:`check_file_names`); the import hint quotes every word.

One publisher at a time: :meth:`CarTarget.session`, which the executor opens around
``upload``, ``commit`` and ``save``, holds ``OUT_DIR/.publish.lock`` (O_EXCL, holding the
pid; a lock of a dead process is taken over) and drops it however they end; ``upload`` and
``commit`` also check ``publish.json`` (compare-and-set on the head ``inspect`` saw: the
same file, by inode, size and times, is the same head; another file is read again). A
second, concurrent publisher gets a ConflictError and writes nothing visible.
"""

from __future__ import annotations

import io
import os
import shlex
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO, cast

from odfweb3.atomic_file import (
    fsync_dir,
    open_atomic,
    write_chunks_atomic,
    write_file_atomic,
)
from odfweb3.crypto.keystore import Keystore
from odfweb3.crypto.sealer import Sealer
from odfweb3.errors import ConflictError, FormatError, NotFound, OdfWeb3Error
from odfweb3.foreign_json import read_foreign_json_file
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_from_str
from odfweb3.publish.out_dir import LOCK_NAME, OutDirHome
from odfweb3.publish.outdir_seal import OutDirSeal
from odfweb3.publish.plan import PublishPlan, RemoteRecord
from odfweb3.publish.state import RawState, load_summary_file
from odfweb3.publish.target import UploadResult
from odfweb3.writeback import WritebackFile
from odfweb3_ipfs.formats.car import CarWriter
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.formats.ipns import (
    DEFAULT_LIFETIME,
    DEFAULT_TTL_NS,
    create_record,
    encode_record,
)
from odfweb3_ipfs.formats.libp2p_keys import IpnsName, parse_ipns_name, public_key_bytes
from odfweb3_ipfs.formats.unixfs_reader import list_directory, resolve_path
from odfweb3_ipfs.publish.car_resume import CarResume, Resumed, ResumingWriter
from odfweb3_ipfs.publish.cid_profile import CidProfile, profile_for
from odfweb3_ipfs.publish.dataset_dag import DatasetDag, shards_json, write_dag_index
from odfweb3_ipfs.publish.object_index import ObjectIndex
from odfweb3_ipfs.publish.pipeline import (
    DISCOVERY_KINDS,
    BuildSettings,
    DeltaCar,
    SideFile,
    record_extension,
    reusable_state,
    write_delta_car,
)
from odfweb3_ipfs.publish.signing_key import KeyChooser, KnownName, names_in_car_dir
from odfweb3_ipfs.publish.state import (
    CAR_CODEC,
    CarExtra,
    CarState,
    CarTyped,
    CarView,
    DagFacts,
    IpnsFacts,
    parse_car_state,
)
from odfweb3_ipfs.read.car_replica import CarDirCheck, check_car_dir
from odfweb3_ipfs.read.replay_memory import SequenceMemory, sequence_floor

__all__ = ["LOCK_NAME", "CarTarget", "import_commands", "objects_of", "write_atomic"]

_MAX_SUMMARY_SIZE = 64 << 20  # publish.json, read bounded as car:DIR readers do

Clock = Callable[[], datetime]


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temp file, fsync and rename (mode per umask).

    A directory or link where the file belongs is one line (exit 64), a full disk one
    line (exit 74), the old file unchanged (:mod:`odfweb3.atomic_file`).
    """
    write_file_atomic(path, data, public=True)


class CarTarget:
    """A directory receiving CAR files, IPNS records and ``publish.json``."""

    def __init__(
        self,
        out_dir: Path,
        keystore: Keystore,
        *,
        cid_version: int = 1,
        profile: CidProfile | None = None,
        lifetime: timedelta = DEFAULT_LIFETIME,
        ttl_ns: int = DEFAULT_TTL_NS,
        clock: Clock = lambda: datetime.now(UTC),
        publisher: Mapping[str, Any] | None = None,
        sealer: Sealer | None = None,
        seen: SequenceMemory | None = None,
        seal: OutDirSeal | None = None,
        announce: Callable[[str], None] | None = None,
        other_names: Callable[[str], Sequence[KnownName]] | None = None,
    ) -> None:
        self.out_dir = out_dir
        # What this machine last wrote here (private state): what a publish reuses from
        # OUT_DIR is checked against it, or re-read (:meth:`_trusted`). None: unchecked
        # (a directory a test or tool builds by hand); the backend always passes one.
        self.seal = seal
        # With the keystore's memory, the floor of the record's sequence: the highest this
        # machine saw for the name (never from OUT_DIR alone: sequence_floor).
        self.seen = seen
        self.publisher = publisher
        self.sealer = sealer
        self.name = f"car:{out_dir}"
        self.keystore = keystore
        # One name per dataset and target (:mod:`.signing_key`): decided in inspect.
        self.keys = KeyChooser(keystore, self.name, announce=announce, others=other_names)
        self.profile = profile or profile_for(None, cid_version)
        self.cid_version = self.profile.cid_version
        self.lifetime = lifetime
        self.ttl_ns = ttl_ns
        self.clock = clock
        self._written: list[str] = []
        self._unchanged = False
        # publish.json: read (its typed state parsed there, once, and its names checked),
        # locked, compared and written (serialized there, once): odfweb3.publish.out_dir
        self.home = OutDirHome(out_dir, CAR_CODEC, self._opened)
        # A first publish: its resume files, what they hold, their identity (inspect).
        self._resume: tuple[CarResume, Resumed | None, tuple[int, int, int, int] | None] | None
        self._resume = None

    @property
    def summary_path(self) -> Path:
        """The ``publish.json`` of this directory."""
        return self.out_dir / "publish.json"

    def _opened(self, state: CarTyped) -> CarTyped:
        """A state read from ``publish.json``, typed: its names checked (FormatError naming
        ``publish.json`` for a file name that is not one this target writes:
        :func:`check_file_names`) and its object index attached (the objects are in
        OUT_DIR's packs, read when asked)."""
        where = str(self.summary_path)
        check_file_names(state, where)
        index = state.extra.object_index
        if index is None:
            return state
        return state.evolve(objects=ObjectIndex.from_json(self.out_dir, index, where))

    @property
    def build_settings(self) -> BuildSettings:
        """How this target builds what it publishes (:mod:`.pipeline`)."""
        return BuildSettings(self.keys.key, self.profile, self.sealer, self.publisher)

    def inspect(self, dataset_id: str, local_head: bytes) -> CarView:
        """What the directory holds: the last ``publish.json``, if its CARs are all there."""
        self._resume = None
        state, raw = self.home.inspect()
        if state is not None and state.dataset_id != dataset_id:
            raise ConflictError(
                f"{self.out_dir}: holds dataset {state.dataset_id}, not {dataset_id}; "
                "use another output directory"
            )
        # The key of the name this directory holds, or a refusal (check_signing raises it).
        self.keys.decide(dataset_id, names_in_car_dir(self.out_dir, dataset_id, state))
        if state is None:
            return self._resumed_view(dataset_id)
        car = state
        # Its publish.json says whether its CARs hold ciphertext (also to a new machine).
        encrypted = bool(car.extra.dag.encrypted or car.extra.dag.key_envelope)
        cars = car.extra.cars or ()
        missing = [c for c in cars if not (self.out_dir / c).is_file()]
        if missing:
            note = f"{missing[0]} is gone from {self.out_dir}: writing a full CAR again"
            return CarView(head=None, state=None, notes=(note,), encrypted=encrypted)
        doubt = self._trusted(car, raw)
        if doubt is not None:
            return CarView(head=None, state=None, notes=(doubt,), encrypted=encrypted)
        if not reusable_state(car.extra.dag, self.profile, encrypted=self.sealer is not None):
            # Its CARs hold the objects made another way (CID profile, encryption).
            return CarView(head=state.head, state=state, holds_head=False, encrypted=encrypted)
        has = state.objects if isinstance(state.objects, ObjectIndex) else frozenset(state.objects)
        return CarView(
            head=state.head, has=has, state=state, record=self._served(car), encrypted=encrypted
        )

    def _resume_files(self, dataset_id: str) -> CarResume:
        epoch = self.sealer.epoch if self.sealer is not None else None
        return CarResume(self.out_dir, dataset_id, (self.cid_version, self._tag, epoch))

    @property
    def _tag(self) -> str | None:
        return self.profile.state_tag or None

    def _resumed_view(self, dataset_id: str) -> CarView:
        """A first publish: the objects an interrupted one left whole in its partial CAR
        are linked, not written again (:mod:`.car_resume`)."""
        resume = self._resume_files(dataset_id)
        self._resume = (resume, resume.load(), resume.identity())
        resumed = self._resume[1]
        if resumed is None:
            return CarView(head=None)
        dag = DagFacts(
            cid_version=self.cid_version,
            cid_profile=self._tag,
            encrypted=True if self.sealer else None,
            key_epoch=self.sealer.epoch if self.sealer else None,
        )
        state = CarTyped(
            dataset_id=dataset_id,
            target=self.name,
            record=IpnsFacts(),
            objects=resumed.objects,
            extra=CarExtra(dag=dag),
        )
        note = (
            f"resuming an interrupted publish: {len(resumed.objects)} objects are whole in "
            f"its partial CAR ({resumed.offset} bytes kept)"
        )
        return CarView(
            head=None,
            has=frozenset(resumed.objects),
            state=state,
            notes=(note,),
            encrypted=self.sealer is not None,  # resumed only under the same key
        )

    def _content_files(self, car: CarTyped) -> list[str]:
        return [*(car.extra.cars or ()), *car.extra.side_cars]

    def _trusted(self, car: CarTyped, raw: Mapping[str, Any]) -> str | None:
        """None when what the directory holds may be reused: the seal vouches for
        ``publish.json`` and every CAR it names, or, when it does not (no seal, or a
        mismatch), the directory re-read checks out (:meth:`_reread`). Else the note of a
        full re-send: never a record over content not all present."""
        if self.seal is None:
            return None
        doubt = self.seal.vouches(self.out_dir, raw, self._content_files(car))
        if doubt is None:
            return None
        failed = self._reread(car)
        if failed is None:
            self.seal.forget_files()  # checked as they are now: hashed again at save
            return None
        return (
            f"{self.out_dir}: {doubt}, and it does not check out ({failed}): "
            "writing a full CAR again"
        )

    def _reread(self, state: CarTyped) -> str | None:
        """Check the directory as a reader would, and what a publish reuses of it: the
        record, the DAG under the root complete in the CARs, ``refs/head``
        (:func:`.check_car_dir`), the object index equal to the DAG's directories, and every
        HAMT shard the state names present. None when it all holds, else what failed."""
        try:
            check = check_car_dir(self.out_dir, now=self.clock())
            if check.head != state.head:
                return "its DAG holds another head than publish.json"
            for folder in ("blocks", "checkpoints", "data"):
                listed = _listing(check, folder)
                prefix = folder + "/"
                if isinstance(state.objects, ObjectIndex):
                    index = {
                        n: state.objects[prefix + n]["cid"] for n in state.objects.names(folder)
                    }
                else:
                    index = {
                        p[len(prefix) :]: e["cid"]
                        for p, e in state.objects.items()
                        if p.startswith(prefix)
                    }
                if index != listed:
                    return f"its object index differs from the DAG's {folder}/"
            for table in (state.extra.hamt_shards or {}).values():
                for value in table.values():
                    if Cid.from_bytes(bytes.fromhex(str(value[0]))) not in check.index:
                        return "a HAMT shard publish.json names is in no CAR"
        except (OdfWeb3Error, ValueError, KeyError, TypeError, IndexError) as exc:
            return str(exc)
        return None

    def _served(self, car: CarTyped) -> RemoteRecord | None:
        """The record this directory serves, as facts for the plan (:func:`.plan_record`);
        None when there is none to keep: no record file, or an encrypted publish (its key
        envelope is not compared, so it is always re-signed)."""
        record = car.record
        if self.sealer is not None or not record.file:
            return None
        if not (self.out_dir / record.file).is_file():
            return None
        try:  # a record past half its lifetime is renewed (sequence + 1)
            due = datetime.fromisoformat(str(record.validity)) - self.clock() < self.lifetime / 2
        except ValueError:
            due = True
        return RemoteRecord(renewal_due=due, inputs=car.extra.dag.inputs)

    def check_signing(self, dataset_id: str) -> None:
        """Refuse when the dataset is published under a name whose key is not here
        (:mod:`.signing_key`; decided by ``inspect``). Called by the executor once its own
        refusals passed, in a dry run too, and by ``upload`` first."""
        self.keys.check(dataset_id)

    def upload(
        self,
        plan: PublishPlan,
        reader: DatasetReader,
        view: CarView,
        progress: Callable[[int], None],
    ) -> UploadResult[CarExtra]:
        """Write the delta CAR (temp file, then renamed to ``<root>.car``)."""
        self.check_signing(plan.dataset_id)  # a name whose key is not here: nothing written
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._unchanged = False
        self.home.check_unchanged()
        if plan.keep_record and view.state is not None:
            # The plan keeps the record (same head, same record content): write
            # nothing (no new CAR, no re-signed record, no publish.json).
            self._unchanged = True
            return UploadResult.kept(
                view.state, note="nothing new: no CAR written, record unchanged"
            )
        return self._upload(plan, reader, view, progress)

    def _write_resumable(
        self,
        plan: PublishPlan,
        reader: DatasetReader,
        view: CarView,
        progress: Callable[[int], None],
    ) -> tuple[DeltaCar, str, int]:
        """A first publish's CAR, resumable (:mod:`.car_resume`): the delta, the partial
        CAR's path and the bytes written by this run."""
        resume, resumed, seen = self._resume or (self._resume_files(plan.dataset_id), None, None)
        if resumed is not None and resume.identity() != seen:
            raise ConflictError(
                f"{resume.car}: changed since this publish read it; nothing was made "
                "visible: run publish again"
            )
        rw = ResumingWriter(resume, resumed)
        try:
            delta = write_delta_car(
                rw.file,
                plan,
                reader,
                view,
                self.build_settings,
                progress=progress,
                writer=rw.writer,
                sink=rw,
                observer=rw,
            )
            rw.file.flush()
            os.fsync(rw.file.fileno())
        finally:
            rw.close()  # an interruption keeps the partial CAR and its log: resumed next
        kept = resumed.offset if resumed is not None else 0
        return delta, str(resume.car), delta.bytes - kept

    def _upload(
        self,
        plan: PublishPlan,
        reader: DatasetReader,
        view: CarView,
        progress: Callable[[int], None],
    ) -> UploadResult[CarExtra]:
        prev = view.state
        first = prev is None or (self._resume is not None and self._resume[1] is not None)
        if first:
            # Resumable: its partial and log stay after an interruption, for the next run.
            delta, tmp, car_bytes = self._write_resumable(plan, reader, view, progress)
            if (self.out_dir / f"{delta.dag.root.cid.encode()}.car").exists():
                # Same root as an earlier publish: that CAR already holds these blocks.
                os.unlink(tmp)
                car_bytes = 0
            else:
                os.replace(tmp, self.out_dir / f"{delta.dag.root.cid.encode()}.car")
                # the rename durable before publish.json names the CAR (a directory's
                # entries reach the disk in no set order without it)
                fsync_dir(self.out_dir)
            self._resume_files(plan.dataset_id).discard()  # the log, and any stale one
        else:
            # .tmp-PID-XXXX.car.partial: no *.car glob reads it half written (atomic_file)
            with open_atomic(self.out_dir, suffix=".car", public=True) as out:
                delta = write_delta_car(
                    # written back while it is written: the fsync in commit waits for little
                    cast(BinaryIO, WritebackFile(out.file)),
                    plan,
                    reader,
                    view,
                    self.build_settings,
                    progress=progress,
                )
                car_bytes = delta.bytes
                # Same root as an earlier publish: that CAR already holds these blocks.
                if not out.commit(f"{delta.dag.root.cid.encode()}.car", keep_existing=True):
                    car_bytes = 0
        dag = delta.dag
        car_name = f"{dag.root.cid.encode()}.car"
        cars = list(prev.extra.cars or ()) if prev else []
        if car_name not in cars:
            cars.append(car_name)
        self._written = [car_name]
        desc = dict(delta.side.skipped) | dict(delta.side.kept)
        discovery = list(prev.extra.discovery_cars or ()) if prev else []
        for file in delta.side.files:  # each its own CAR beside the root's
            desc |= {file.kind: file.cid.encode(), f"{file.kind}Car": self._write_side_car(file)}
            if file.kind in DISCOVERY_KINDS and desc[f"{file.kind}Car"] not in discovery:
                discovery.append(desc[f"{file.kind}Car"])
        index = self._write_index(dag, prev)
        return UploadResult(
            locator=dag.root.cid.encode(),
            objects=index,
            extra=CarExtra(
                dag=DagFacts(
                    cid_version=self.cid_version,
                    cid_profile=self.profile.state_tag or None,
                    encrypted=True if self.sealer else None,
                    key_epoch=self.sealer.epoch if self.sealer else None,
                    # No dirBlocks: the next build knows from the layout
                    # which directory blocks are new (build_dataset_dag_indexed).
                    dir_blocks=None,
                    descriptor=desc.get("descriptor"),
                    key_envelope=desc.get("keyEnvelope"),
                    croissant=desc.get("croissant"),
                    dcat=desc.get("dcat"),
                ),
                cars=tuple(cars),
                # The HAMT tries of the top directories: the next publish rebuilds
                # only the shards its new entries fall under.
                hamt_shards=shards_json(dag.shards) if dag.shards else None,
                descriptor_car=desc.get("descriptorCar"),
                key_envelope_car=desc.get("keyEnvelopeCar"),
                object_index=index.to_json(),
                discovery_cars=tuple(discovery) or None,
            ),
            bytes_sent=car_bytes,
            summary={"car": car_name, "carBlocks": dag.new_blocks, "carBytes": car_bytes} | desc,
        )

    def _write_index(self, dag: DatasetDag, prev: CarTyped | None) -> ObjectIndex:
        """The object index of the new layout, its new pack written before publish.json."""
        return write_dag_index(
            dag, prev, partial(ObjectIndex.write_fresh, self.out_dir), public=True
        )

    def _write_side_car(self, file: SideFile) -> str:
        """Write a side file (descriptor, key envelope) as its own CAR; the CAR's name."""
        car_name = f"{file.cid.encode()}.car"

        def chunks() -> Iterator[bytes]:
            # Streamed: a first publish's Croissant document of every data file is about
            # as large as the dataset's own CAR.
            buf = io.BytesIO()
            writer = CarWriter(buf, file.cid)
            for cid, block in file.blocks:
                writer.write_block(cid, block)
                if buf.tell() >= 1 << 20:
                    yield buf.getvalue()
                    buf.seek(0)
                    buf.truncate()
            yield buf.getvalue()

        write_chunks_atomic(self.out_dir, chunks(), lambda: car_name, public=True)
        self._written.append(car_name)
        return car_name

    def commit(self, plan: PublishPlan, upload: UploadResult[CarExtra], view: CarView) -> CarTyped:
        """Sign and write the IPNS record (sequence + 1) pointing at the new root."""
        self.home.check_unchanged()
        if self._unchanged and view.state is not None:
            return view.state
        return self._commit(plan, upload, view)

    def _commit(self, plan: PublishPlan, upload: UploadResult[CarExtra], view: CarView) -> CarTyped:
        key = self.keys.key(plan.dataset_id)
        name = IpnsName.from_public_key(public_key_bytes(key))
        prev = view.state
        last = prev.record.sequence if prev else None
        sequence = (-1 if last is None else last) + 1 if prev else 0
        # Above all this machine signed or saw for the name, whatever publish.json says.
        floor = sequence_floor(name, self.keystore, self.seen, plan.dataset_id)
        if floor is not None and sequence <= floor:
            sequence = floor + 1
        sent = upload.extra
        ext, dag = record_extension(plan, sent.dag, prev.extra.dag if prev else None)
        now = self.clock()
        record = create_record(
            key,
            f"/ipfs/{upload.locator}",
            sequence,
            validity=now + self.lifetime,
            ttl_ns=self.ttl_ns,
            extensions={"_odf": ext},
            now=now,
        )
        # Remembered before the record is written (the keystore entry's memory).
        self.keystore.note_signed(plan.dataset_id, public_key_bytes(key), sequence)
        record_file = f"{name}.ipns-record"
        write_atomic(self.out_dir / record_file, encode_record(record))
        self._written.append(record_file)
        return CarTyped(
            dataset_id=plan.dataset_id,
            target=self.name,
            head=plan.head,
            locator=upload.locator,
            record=IpnsFacts(
                name=str(name),
                sequence=sequence,
                validity=record.expires_at.isoformat(),
                value=record.value_text,
                file=record_file,
                ttl=record.ttl_ns // 1_000_000_000,
            ),
            objects=upload.objects,
            extra=replace(sent, dag=dag),
        )

    def save(self, state: CarTyped) -> RawState:
        """Write ``publish.json`` last: the state (serialized there, once) plus a
        human-facing summary."""
        if self._unchanged:  # nothing new: publish.json stays as it was
            self._unchanged = False
            return CAR_CODEC.serialize(state)  # as publish.json holds it, not written
        car = state
        summary = {
            "root": state.locator,
            "ipnsName": car.record.name,
            "sequence": car.record.sequence,
            "descriptor": car.extra.dag.descriptor,
            "keyEnvelope": car.extra.dag.key_envelope,
            "filesWritten": list(self._written),
            "import": list(import_commands(car)),
        }
        large = len(state.objects) > 1000 or len(car.extra.dag.dir_blocks or ()) > 1000
        return self.home.write(
            state,
            summary,
            large=large,
            seal=self.seal,
            files=self._content_files(car),
            written=self._written,
        )

    # -- one publisher at a time (OUT_DIR's state home, held by the executor's session) --

    def session(self) -> AbstractContextManager[None]:
        """Hold ``OUT_DIR/.publish.lock`` for ``upload``, ``commit`` and ``save``
        (:meth:`odfweb3.publish.out_dir.OutDirHome.session`); a ConflictError when another
        live process is publishing into this directory."""
        return self.home.session(ended=self._ended)

    def _ended(self) -> None:
        self._unchanged = False

    @property
    def lock_path(self) -> Path:
        """``OUT_DIR/.publish.lock``: holds the pid of the publisher writing the directory."""
        return self.home.lock_path


def _listing(check: CarDirCheck, folder: str) -> dict[str, str]:
    """Name -> CID text of one top directory of a checked ``car:DIR``'s DAG."""
    try:
        folder_cid = resolve_path(check.root, folder, check.index.get)
    except NotFound:
        return {}
    return {n: c.encode() for n, c in list_directory(folder_cid, check.index.get).items()}


def check_file_names(car: CarTyped, where: str) -> None:
    """Refuse a state whose file names are not the plain names this target writes:
    ``<cid>.car`` for every CAR, ``<ipns name>.ipns-record`` for the record.

    ``publish.json`` lies in a directory others may write; its names are joined into the
    ``ipfs dag import`` hint a user pastes into a shell, and into paths. A name such as
    ``x.car; touch INJECTED #`` would be a command.

    Raises:
        FormatError: a name that is not ``<cid>.car`` / ``<name>.ipns-record``.
    """
    extra = car.extra
    names = [*(extra.cars or ()), *extra.side_cars]
    for name in names:
        stem = name.removesuffix(".car")
        ok = stem != name and stem.isascii() and stem.isalnum()
        if ok:
            try:
                Cid.decode(stem)
            except ValueError:
                ok = False
        if not ok:
            raise FormatError(
                f"{where}: names {name[:80]!r}, not a CAR file name (<cid>.car): the file was "
                "altered; restore it, or publish to a new directory"
            )
    file = car.record.file
    if file is not None:
        stem = file.removesuffix(".ipns-record")
        try:
            ok = stem != file and str(parse_ipns_name(stem)) == stem
        except ValueError:
            ok = False
        if not ok:
            raise FormatError(
                f"{where}: names the record file {file[:80]!r}, not <ipns name>.ipns-record: "
                "the file was altered; restore it, or publish to a new directory"
            )


def objects_of(out_dir: Path) -> dict[str, Mapping[str, Any]]:
    """Every object link a ``car:DIR`` records (path -> ``{cid, tsize, size}``), from its
    object index or, written by older versions, ``publish.json``'s ``objects`` (for tools
    and tests; reads every part)."""
    state, _raw = load_summary_file(out_dir / "publish.json")
    if state is None:
        return {}
    index = parse_car_state(state, str(out_dir / "publish.json")).extra.object_index
    if index is None:
        return dict(state.objects)
    return dict(ObjectIndex.from_json(out_dir, index, str(out_dir / "publish.json")))


def head_of_summary(path: Path) -> bytes | None:
    """The head recorded in a ``publish.json`` (for tools and tests)."""
    data = read_foreign_json_file(path, max_bytes=_MAX_SUMMARY_SIZE, expect=dict)
    head = data.get("head")
    return multihash_from_str(head) if head else None


def import_commands(car: CarState | CarTyped) -> tuple[str, ...]:
    """The commands that load ``car:DIR`` into a Kubo node, run in ``DIR``: every CAR, oldest
    first (each holds only what the ones before it lacked, so importing the newest alone
    leaves its root's older blocks missing and the node waits for them), then the record.

    Every word quoted (the names were checked, check_file_names; quoting still keeps a
    pasted hint one command whatever a name holds).
    """
    cars = [*(car.extra.cars or ()), *car.extra.side_cars]
    return (
        shlex.join(["ipfs", "dag", "import", *cars]),
        shlex.join(
            [
                "ipfs",
                "routing",
                "put",
                "--allow-offline",
                f"/ipns/{car.record.name}",
                str(car.record.file),
            ]
        ),
    )
