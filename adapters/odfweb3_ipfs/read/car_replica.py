"""Checking an offline publish directory (``car:DIR``) without an IPFS node.

Reads every CAR listed in ``publish.json`` (each block re-verified against its
CID), checks that the DAG under the root is complete across them, reads
``refs/head`` through the DAG, and verifies the IPNS record: signature, name
binding, expiry, ``Value = /ipfs/<root>``, and its ``_odf`` head and dataset ID.
With a chain walker, the whole metadata chain can be read back from the CARs.

The directory is untrusted input: every file ``publish.json`` names
(CARs, the record, the key envelope's CAR) must be a plain relative path to a regular
file inside the directory (no absolute path, no ``..``, no symlink anywhere on the way:
no ``/dev/zero``, FIFO or file elsewhere), and every read is bounded before anything is
parsed or any signature checked: ``publish.json`` :data:`MAX_SUMMARY_SIZE`, the record
:data:`~.ipns.MAX_RECORD_SIZE`, ``refs/head`` :data:`MAX_HEAD_SIZE` (through the DAG, with
the block budget of :mod:`.unixfs_reader`), blocks the ODF block limit, objects the size
their block records.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Protocol

from odfweb3.errors import FormatError, NotFound, OdfWeb3Error, ReplicaMismatch
from odfweb3.foreign_json import load_foreign_json
from odfweb3.odf.digest_map import DigestMap
from odfweb3.odf.identity import DatasetId
from odfweb3.odf.layout import LAYOUT_DIRS, MAX_BLOCK_SIZE, ObjectKind
from odfweb3.odf.multihash import multihash_from_str, multihash_to_str, split_multihash
from odfweb3.read.replica import RecordSigner
from odfweb3_ipfs.formats.car import index_car_file
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.formats.ipns import MAX_RECORD_SIZE, IpnsRecord, verify_record
from odfweb3_ipfs.formats.libp2p_keys import IpnsName, parse_ipns_name
from odfweb3_ipfs.formats.unixfs_reader import (
    count_dag,
    iter_directory_raw,
    list_directory,
    read_file,
    resolve_path,
)

__all__ = [
    "MAX_HEAD_SIZE",
    "MAX_SUMMARY_SIZE",
    "CarDirCheck",
    "CarDirReplica",
    "CarIndex",
    "RecordMemory",
    "check_car_dir",
    "confined_file",
    "read_bounded",
]

#: ``publish.json`` (it lists every object: ~200 bytes each, so ~300,000 objects).
MAX_SUMMARY_SIZE = 64 << 20
#: ``refs/head``: a multibase hash, or its ciphertext in an encrypted publish.
MAX_HEAD_SIZE = 256


def confined_file(out_dir: Path, value: object, what: str) -> Path:
    """``out_dir / value`` when ``value`` names a regular file inside ``out_dir``.

    A remote value never chooses a local path: ``value`` must be a relative path without
    ``..`` or empty parts, and no component below ``out_dir`` may be a symlink.

    Raises:
        FormatError: an unsafe name; NotFound: no such file.
    """
    if not isinstance(value, str) or not value or "\0" in value:
        raise FormatError(f"{out_dir}/publish.json: {what} is not a file name")
    parts = value.split("/")
    if value.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise FormatError(
            f"{out_dir}/publish.json: {what} {value[:200]!r} is not a plain relative path "
            "inside the directory; refusing to read it"
        )
    path = out_dir
    for i, part in enumerate(parts):
        path = path / part
        try:
            st = path.lstat()
        except FileNotFoundError:
            raise NotFound(f"{path}: {what} listed in publish.json but missing") from None
        except OSError as exc:
            raise FormatError(f"{path}: {what} cannot be read ({exc.strerror})") from None
        last = i == len(parts) - 1
        if stat.S_ISLNK(st.st_mode) or not (
            stat.S_ISREG(st.st_mode) if last else stat.S_ISDIR(st.st_mode)
        ):
            raise FormatError(
                f"{path}: {what} is not a regular file inside {out_dir} (a symlink, device or "
                "directory); refusing to read it"
            )
    return path


def read_bounded(path: Path, limit: int, what: str) -> bytes:
    """The bytes of the regular file ``path``, refused above ``limit`` before reading.

    Opened without following a symlink and without blocking (a FIFO is refused, not
    waited on).

    Raises:
        NotFound: missing. FormatError: not a regular file, or larger than ``limit``.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise NotFound(f"{path}: {what} missing") from None
    except OSError as exc:
        raise FormatError(f"{path}: {what} cannot be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise FormatError(f"{path}: {what} is not a regular file; refusing to read it")
        if st.st_size > limit:
            raise FormatError(
                f"{path}: {what} is {st.st_size} bytes, more than the {limit} allowed"
            )
        # The size it has now, plus one byte to see it grew: read(limit + 1) would take
        # limit + 1 bytes of memory first (64 MiB for publish.json) whatever the file holds.
        data = f.read(st.st_size + 1)
        if len(data) > st.st_size and len(data) <= limit:
            data += f.read(limit + 1 - len(data))  # it grew meanwhile: up to the bound
    if len(data) > limit:
        raise FormatError(f"{path}: {what} is more than the {limit} bytes allowed")
    return data


_OFFSET_MASK = (1 << 64) - 1
_LENGTH_MASK = (1 << 32) - 1  # a block is at most a few MiB (iter_car bounds it)


def _close_all(fds: dict[int, int]) -> None:
    for fd in fds.values():
        with contextlib.suppress(OSError):
            os.close(fd)


class CarIndex:
    """Blocks of several CAR files, verified once and then read by offset.

    Each CAR stays open for the index's life (positioned reads, safe from several
    threads): reopening it per block cost a third of reading a 10,000-block dataset.
    Readers verify every block again (:mod:`.unixfs_reader`): the file may change.
    """

    def __init__(self, paths: list[Path]) -> None:
        # CID bytes -> (file << 96) | (offset << 32) | length in 16 bytes, in a DigestMap:
        # about 51 bytes a block (a dict of bytes -> int was about 150: 400,000 blocks at
        # 100,000 dataset blocks).
        self._where = DigestMap(16)
        self._paths = list(paths)
        self._fds: dict[int, int] = {}
        self._lock = threading.Lock()
        weakref.finalize(self, _close_all, self._fds)
        self.blocks = 0
        self.bytes = 0
        put = self._where.put
        for n, path in enumerate(self._paths):
            with open(path, "rb") as f:
                _roots, blocks = index_car_file(f)
                for raw, offset, length in blocks:
                    put(raw, ((n << 96) | (offset << 32) | length).to_bytes(16, "big"))
                    self.blocks += 1
                    self.bytes += length

    def _fd(self, n: int) -> int:
        fd = self._fds.get(n)
        if fd is None:
            with self._lock:
                fd = self._fds.get(n)
                if fd is None:
                    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
                    fd = self._fds[n] = os.open(self._paths[n], flags)
        return fd

    def __contains__(self, cid: Cid) -> bool:
        return cid.raw in self._where

    def holds(self, raw: bytes) -> bool:
        """Whether the CID of these bytes is indexed."""
        return self._where.get(raw) is not None

    def get(self, cid: Cid) -> bytes:
        """A block's bytes (the caller verifies; see :mod:`.unixfs_reader`)."""
        found = self._where.get(cid.raw)
        if found is None:
            raise NotFound(f"block {cid} is in none of the CAR files")
        where = int.from_bytes(found, "big")
        n, offset, length = where >> 96, (where >> 32) & _OFFSET_MASK, where & _LENGTH_MASK
        data = os.pread(self._fd(n), length, offset)
        if len(data) != length:
            raise FormatError(f"{self._paths[n]}: shorter than when it was read (block {cid})")
        return data


_CID_WIDTH: Final = 40  # a listed CID's slot: its length, then its bytes (36 for CIDv1 sha2-256)


class _Listing:
    """A layout folder's listing, multihash bytes -> CID bytes, in a :class:`DigestMap`
    (about 75 bytes an entry; a ``dict`` of two ``bytes`` was about 180: 300,000 entries at
    100,000 blocks); a CID of more than 39 bytes in a ``dict``."""

    __slots__ = ("_long", "_map")

    def __init__(self) -> None:
        self._map = DigestMap(_CID_WIDTH)
        self._long: dict[bytes, bytes] = {}

    def put(self, mh: bytes, raw: bytes) -> bool:
        """List ``mh`` at the CID bytes ``raw``; False if it was listed already."""
        if len(raw) < _CID_WIDTH:
            return self._map.put(mh, bytes((len(raw),)) + raw.ljust(_CID_WIDTH - 1, b"\0"))
        new = mh not in self._long and self._map.get(mh) is None
        self._long[mh] = raw
        return new

    def get(self, mh: bytes) -> bytes | None:
        """The CID bytes listed for ``mh``, or None."""
        slot = self._map.get(mh)
        if slot is not None:
            return slot[1 : 1 + slot[0]]
        return self._long.get(mh)


def _by_multihash(folder: Cid, entries: Iterator[tuple[str, bytes]]) -> _Listing:
    """A layout folder's listing keyed by the multihash its name spells, read entry by
    entry (no listing of names and ``Cid`` objects held whole; each entry's CID as its
    bytes); a name that is not a multihash in its canonical spelling is left out (no lookup
    by a hash formats it).

    Raises:
        FormatError: a name listed twice (a canonical directory never has one).
    """
    out = _Listing()
    for name, raw in entries:
        # The canonical spelling is "f" and the lower-case hex of a 34-byte multihash (what
        # multihash_to_str writes): any other name is left out before it is parsed.
        if len(name) != 69 or name[0] != "f":
            continue
        try:
            mh = bytes.fromhex(name[1:])
            split_multihash(mh)
        except (ValueError, FormatError):
            continue
        if mh.hex() == name[1:] and not out.put(mh, raw):
            raise FormatError(
                f"{folder}: a directory with two entries named {name!r}; the DAG is corrupt "
                "or hostile: use another replica"
            )
    return out


@dataclass(frozen=True)
class CarDirCheck:
    """What :func:`check_car_dir` established."""

    dataset_id: str
    root: Cid
    head: bytes
    name: str
    record: IpnsRecord
    cars: int
    blocks: int
    reachable: int
    index: CarIndex
    # an encrypted publish's envelope (docs/design.md, "Encryption")
    key_envelope: Cid | None = None

    @property
    def encrypted(self) -> bool:
        """The objects and ``refs/head`` are ciphertext (decrypt with the dataset's keys)."""
        return self.key_envelope is not None

    def read_path(self, path: str, *, max_size: int = MAX_BLOCK_SIZE) -> bytes:
        """Read a file of the published layout (verified, at most ``max_size`` bytes)."""
        cid = resolve_path(self.root, path, self.index.get)
        return b"".join(read_file(cid, self.index.get, max_size=max_size))

    def iter_layout(self, folder: str) -> Iterator[str]:
        """Names in one folder of the published layout."""
        yield from list_directory(resolve_path(self.root, folder, self.index.get), self.index.get)


class CarDirReplica:
    """An offline publish directory as a read-only replica (verified on every read)."""

    def __init__(
        self,
        check: CarDirCheck,
        name: str,
        out_dir: Path | None = None,
        local_key: Callable[[str], str | None] | None = None,
    ) -> None:
        self.check = check
        self.name = name
        self.out_dir = out_dir
        # IPNS name -> the label of this machine's key for it, if it holds one.
        self._local_key = local_key
        # folder -> multihash bytes -> CID bytes (a canonical name's multihash: a listing of
        # 100,000 name strings and Cid objects was about 400 bytes an entry)
        self._folders: dict[str, _Listing] = {}
        self._broken: dict[str, FormatError] = {}
        self._listing_lock = threading.Lock()

    def lineage_inputs(self) -> Mapping[str, str]:
        """The signed record's ``_odf.inputs`` (dataset ID -> locator), as signed.

        The record's author chose these: :func:`odfweb3.read.lineage_check.resolver_from_records`
        follows network references only.
        """
        odf = self.check.record.odf
        raw = odf.extra.get("inputs") if odf is not None else None
        if not isinstance(raw, Mapping):
            return {}
        return {str(k): str(v) for k, v in raw.items()}

    def signed_by(self) -> RecordSigner:
        """Who signed the record: its IPNS name (checked against the signature), whether
        that is the dataset's own key (a ``did:odf`` is an Ed25519 key) and whether this
        machine's keystore holds it."""
        name = self.check.name
        try:
            own = DatasetId.parse(self.check.dataset_id).public_key
            dataset_key = str(IpnsName.from_public_key(own)) == name
        except (ValueError, TypeError):
            dataset_key = False
        local = self._local_key(name) if self._local_key is not None else None
        return RecordSigner(name, dataset_key, local)

    def local_inputs(self) -> Mapping[str, str]:
        """Network locator -> ``car:PATH`` of the inputs published next to this one.

        Offline, an ``ipns://NAME`` cannot be resolved: when ``publish --with-inputs`` wrote
        the input next to this one (``OUT_DIR/inputs/*`` holding a record signed by NAME's
        key), that directory stands for the name. The name is the one the record's
        signature verifies for, never ``publish.json``'s unsigned ``ipnsName`` (anyone
        writing the directory could claim another input's name). The paths come from the
        directory the user gave (``OUT_DIR``), never from the record.
        """
        local: dict[str, str] = {}
        if self.out_dir is not None and (self.out_dir / "inputs").is_dir():
            for summary in sorted((self.out_dir / "inputs").glob("*/publish.json")):
                try:
                    text = read_bounded(summary, MAX_SUMMARY_SIZE, "publish.json")
                    doc = load_foreign_json(
                        text, what=str(summary), max_bytes=MAX_SUMMARY_SIZE, expect=dict
                    )
                    record = doc["record"]
                    name = parse_ipns_name(str(record["name"]))
                    path = confined_file(summary.parent, record["file"], "the IPNS record")
                    raw = read_bounded(path, MAX_RECORD_SIZE, "the IPNS record")
                    verify_record(raw, name)  # signed by NAME's key, or not NAME's input
                except (OSError, OdfWeb3Error, KeyError, TypeError):
                    continue
                local.setdefault(f"ipns://{name}", f"car:{summary.parent}")
        return local

    def _cid_of(self, kind: ObjectKind, mh: bytes) -> Cid:
        folder = LAYOUT_DIRS[kind]
        listing = self._folders.get(folder)
        if listing is None:
            listing = self._listing(folder)
        raw = listing.get(mh)
        if raw is None:
            raise NotFound(f"{self.name}: {folder}/{multihash_to_str(mh)} is not published")
        return Cid.from_bytes(raw)

    def _listing(self, folder: str) -> _Listing:
        """``folder``'s listing, read once: the first of the pull's fetch threads to ask
        lists it while the others wait (eight threads each listing a folder of 100,000
        entries at once cost eight times the work and the memory)."""
        with self._listing_lock:
            if folder in self._broken:
                raise self._broken[folder]  # a hostile folder is walked once, not once per object
            listing = self._folders.get(folder)
            if listing is None:
                get = self.check.index.get
                try:
                    top = resolve_path(self.check.root, folder, get)
                    listing = _by_multihash(top, iter_directory_raw(top, get))
                except FormatError as exc:
                    self._broken[folder] = exc
                    raise
                self._folders[folder] = listing
            return listing

    def reads_local(self) -> bool:
        """Every read is a positioned read of a local CAR file (:class:`.LocalReads`)."""
        return True

    def head(self) -> bytes:
        return self.check.head

    def read_block(self, mh: bytes) -> bytes:
        cid = self._cid_of("block", mh)
        return b"".join(read_file(cid, self.check.index.get, max_size=MAX_BLOCK_SIZE))

    def stream_object(self, kind: ObjectKind, mh: bytes, size: int | None) -> Iterator[bytes]:
        return read_file(self._cid_of(kind, mh), self.check.index.get, max_size=size)

    def sealed_head(self) -> bytes:
        """The raw bytes of ``refs/head`` (ciphertext in an encrypted publish)."""
        return self.check.read_path("refs/head", max_size=MAX_HEAD_SIZE)

    def key_envelope(self) -> bytes | None:
        """The published key envelope of an encrypted publish, else None."""
        cid = self.check.key_envelope
        if cid is None:
            return None
        return b"".join(read_file(cid, self.check.index.get, max_size=MAX_BLOCK_SIZE))


class RecordMemory(Protocol):
    """The highest IPNS record seen per name (:class:`.gateway_replica.SequenceMemory`)."""

    def check(self, name: str, record: IpnsRecord, *, source: str = ...) -> None: ...

    def remember(self, name: str, record: IpnsRecord) -> None: ...


def check_car_dir(
    out_dir: Path, *, now: datetime | None = None, memory: RecordMemory | None = None
) -> CarDirCheck:
    """Verify everything an offline publish wrote to ``out_dir``.

    With a ``memory``, a record older than one already seen for the name (online or in
    another ``car:DIR``), or a different one with the same sequence, is refused like an
    online replay; an accepted record is remembered once everything checked out.

    Raises:
        NotFound / FormatError / HashMismatch / SignatureError / RecordExpired:
            what is missing or wrong, naming the file.
        ReplicaMismatch: the pieces disagree (record vs root vs refs/head), or the
            record is a replay.
    """
    summary = out_dir / "publish.json"
    try:
        text = read_bounded(summary, MAX_SUMMARY_SIZE, "publish.json")
    except NotFound:
        raise NotFound(f"{out_dir}: no publish.json; publish with --to car:{out_dir}") from None
    doc = load_foreign_json(text, what=str(summary), max_bytes=MAX_SUMMARY_SIZE, expect=dict)
    try:
        root = Cid.decode(str(doc["root"]))
        head = multihash_from_str(str(doc["head"]))
        name = str(doc["record"]["name"])
        record_file = confined_file(out_dir, doc["record"]["file"], "the IPNS record")
        listed = doc["extra"]["cars"]
        if not isinstance(listed, list):
            raise TypeError("extra.cars")
        cars = [confined_file(out_dir, c, "a CAR file") for c in listed]
        dataset_id = str(doc["datasetId"])
        envelope = doc.get("keyEnvelope")
        key_envelope = Cid.decode(str(envelope)) if envelope else None
        side = doc["extra"].get("keyEnvelopeCar") if key_envelope is not None else None
    except (KeyError, TypeError, AttributeError) as exc:
        raise FormatError(f"{summary}: missing or mistyped field {exc}") from None
    if side:
        cars.append(confined_file(out_dir, side, "the key envelope's CAR"))
    # Bounded before any signature check: the record is small by spec.
    raw_record = read_bounded(record_file, MAX_RECORD_SIZE, "the IPNS record")
    index = CarIndex(cars)
    # Every block of the CARs was checked against its CID as it was indexed: the raw leaves
    # the DAG links to need only be there (each read checks its block again).
    reachable = count_dag(root, index.get, max_blocks=index.blocks, has=index.holds)
    head_cid = resolve_path(root, "refs/head", index.get)
    served_head = b"".join(read_file(head_cid, index.get, max_size=MAX_HEAD_SIZE))
    if key_envelope is not None:
        # Encrypted: refs/head is ciphertext; the head comes from the signed record below
        # and is checked against the decrypted refs/head by the decrypting replica.
        pass
    elif multihash_from_str(served_head.decode("ascii", "replace")) != head:
        raise ReplicaMismatch(
            f"{out_dir}: refs/head in the DAG is {served_head[:80]!r}, "
            f"publish.json says {multihash_to_str(head)}"
        )
    record = verify_record(raw_record, name, now or datetime.now(UTC))
    if record.value_text != f"/ipfs/{root.encode()}":
        raise ReplicaMismatch(f"{record_file}: points at {record.value_text}, not /ipfs/{root}")
    if record.odf is None:
        raise ReplicaMismatch(f"{record_file}: has no _odf extension")
    if multihash_from_str(record.odf.head) != head or record.odf.dataset_id != dataset_id:
        raise ReplicaMismatch(
            f"{record_file}: _odf says {record.odf.dataset_id} at {record.odf.head}, "
            f"the CARs hold {dataset_id} at {multihash_to_str(head)}"
        )
    # The key envelope is the one the signed record names, not whatever publish.json says
    # (a substituted envelope could wrap someone else's key for the reader).
    signed = record.odf.extra.get("keyEnvelope")
    if signed is not None and not isinstance(signed, str):
        raise FormatError(f"{record_file}: the record's _odf.keyEnvelope is not a CID string")
    signed_cid = Cid.decode(signed, where=f"{record_file}: _odf.keyEnvelope") if signed else None
    if signed_cid != key_envelope:
        raise ReplicaMismatch(
            f"{summary}: keyEnvelope is {key_envelope.encode() if key_envelope else 'absent'}, "
            f"the signed record names {signed_cid.encode() if signed_cid else 'none'}; "
            "this directory was altered: publish again or get it from the publisher"
        )
    if memory is not None:
        memory.check(name, record, source=f"{out_dir} (car:DIR)")
        memory.remember(name, record)
    return CarDirCheck(
        dataset_id,
        root,
        head,
        name,
        record,
        len(cars),
        index.blocks,
        reachable,
        index,
        key_envelope,
    )
