"""Read-only replicas over IPFS: ``ipfs://<cid>``, ``ipns://<name>``, ``ipns://<domain>``.

Every node and gateway is untrusted (docs/design.md, "Trust model"). What is checked, and
against what:

- **The root and refs/head.** Where verifiable blocks can be had — a trustless gateway's
  raw blocks (``?format=raw``, ``Accept: application/vnd.ipld.raw``; Kubo's gateway serves
  them, js-ipfs 0.66.1's does not, see docs/jsipfs-notes.md), else its one-block CARs
  (``?format=car&dag-scope=block``, each block verified against its CID), else the RPC
  ``block/get`` — the path ``<root>/refs/head`` is read block by block, each block checked
  against its CID (:mod:`.unixfs_reader`). With none of these the read is refused (a
  gateway's deserialized answer is not tied to the CID, so a hostile one could
  serve any dataset under any CID), unless the loudly named opt-in
  ``ipfs.insecure_unverified_paths`` is set: then the replica is marked ``unverified`` and
  no command reports it ``identical``.
- **Blocks and objects.** By default they are read by path from the gateway
  (``/ipfs/<root>/blocks/<hash>``, ``/data/<hash>``, ...) and checked against their ODF
  hashes, which come from the verified chain (blocks here, objects by the pull /
  :func:`odfweb3.read.replica.read_object_verified`), never reading more than the recorded size.
  With ``trustless=True`` they too are read as CID-verified blocks. A folder streamed whole
  (``blocks/`` at the first block read, ``data/`` and ``checkpoints/`` when a first pull asks:
  one CAR of the folder's DAG, :mod:`.dag_spool`) is read by CID from the spool, whatever
  ``trustless`` says; what the stream lacked comes from the block source.
- **IPNS records** are fetched raw — from the gateway
  (``Accept: application/vnd.ipfs.ipns-record``, Kubo) or the RPC (``routing/get`` on Kubo,
  ``dht/get`` on js-ipfs) — and verified here (:func:`.ipns.verify_record`: signature, name
  binding, expiry). A node that gives no raw record is refused: ``name/resolve`` answers
  cannot be verified. A record older than one already seen for the name (a replay) or a
  different record with the same sequence is refused when a :class:`SequenceMemory` is given.
  The record's ``_odf.head`` must equal the served ``refs/head`` and ``_odf.datasetId`` the
  Seed's ID; :func:`odfweb3.read.claims.resolve_dataset` checks both.
- **DNSLink** (``ipns://example.org``): the TXT records of ``_dnslink.example.org``
  (``dnslink=/ipfs/…`` or ``dnslink=/ipns/…``, the lexicographically first valid one, up to
  32 hops) from an injectable :data:`DnsTxtLookup`; by default the node's RPC ``dns``. DNS
  is not authenticated: what it points at is verified like any other reference.
- **Encrypted publishes without a record**: ``ipfs://<cid>`` of an encrypted
  publish has no record, hence no ``_odf.keyEnvelope``. Its ``refs/head`` starts with the
  ciphertext header (:data:`odfweb3.crypto.segments.MAGIC`), which is recognised and refused
  with one line naming ``--key-envelope``. Given the envelope (:meth:`IpfsReplica.use_envelope`,
  :func:`read_ipfs_file`), the head is whatever ``refs/head`` decrypts to
  (:meth:`IpfsReplica.bind_sealed_head`): AES-GCM authenticates it under the dataset's key,
  and the root CID binds the ciphertext when raw blocks are read.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import weakref
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final

from odfweb3.crypto.envelope import MAX_ENVELOPE_SIZE, decode_envelope
from odfweb3.crypto.keys import KeyRing
from odfweb3.crypto.segments import MAGIC, decrypt_bytes
from odfweb3.errors import (
    DecryptionError,
    FormatError,
    NotFound,
    OdfWeb3Error,
    ReplicaMismatch,
    ResolutionError,
)
from odfweb3.odf.layout import MAX_BLOCK_SIZE, ObjectKind, object_relpath
from odfweb3.odf.multihash import multihash_from_str, multihash_to_str, verify_bytes
from odfweb3_ipfs.client.gateway import (
    MAX_STREAM,
    IpfsGateway,
)
from odfweb3_ipfs.formats.cid import CODEC_RAW, Cid
from odfweb3_ipfs.formats.unixfs_reader import BlockGetter, list_directory, read_file, resolve_path
from odfweb3_ipfs.read.dag_spool import DagSpool

__all__ = ["IpfsReplica"]

MAX_HEAD_SIZE: Final = 256
#: What the first block read fetches of ``blocks/`` in one stream (the chain's length is
#: not known yet; ODF blocks are a few KiB: some 300,000 blocks).
MAX_BLOCKS_STREAM: Final = 1 << 30
_BLOCK_CACHE_BYTES: Final = 64 << 20


class IpfsReplica:
    """A dataset at ``/ipfs/<root>`` as a read-only replica (see the module docstring).

    An encrypted publish (docs/design.md, "Encryption") is recognised by the signed record's
    ``_odf.keyEnvelope`` (``key_envelope_cid``): then ``refs/head`` and every block are
    ciphertext, so :meth:`head` is the record's ``_odf.head``, :meth:`sealed_head` serves
    the encrypted ``refs/head``, and blocks are returned unchecked for
    :class:`odfweb3.read.sealed_replica.DecryptingReplica` to decrypt (the chain walk then
    checks the plaintext's ODF hashes). ``ipfs://<cid>`` has no record: its envelope is
    unknown here (None) and the reader supplies the keys.
    """

    def __init__(
        self,
        gateway: IpfsGateway,
        root: Cid,
        name: str,
        *,
        blocks: BlockGetter | None,
        expected_head: bytes | None = None,
        trustless: bool = False,
        key_envelope_cid: Cid | None = None,
        dataset_id: str | None = None,
        unverified: bool = False,
    ) -> None:
        if key_envelope_cid is not None and expected_head is None:
            raise ResolutionError(
                f"{name}: the record names a key envelope but no _odf.head; an encrypted "
                "refs/head cannot be read without it"
            )
        if trustless and blocks is None:
            raise ResolutionError(
                f"{name}: no raw blocks from {gateway.url} and no RPC API: cannot read "
                "trustlessly; set ipfs.api / ODFWEB3_IPFS_API"
            )
        self.gateway = gateway
        self.root = root
        self.name = name
        self.blocks = blocks
        self.expected_head = expected_head
        self.trustless = trustless
        self.key_envelope_cid = key_envelope_cid
        self.dataset_id = dataset_id
        # refs/head read by path with nothing tying it to the root CID (the opt-in
        # ipfs.insecure_unverified_paths): never reported identical (odfweb3.read.compare).
        self.unverified = unverified and blocks is None and expected_head is None
        self.supplied_envelope: bytes | None = None  # --key-envelope
        self.inputs: dict[str, str] = {}  # the signed record's _odf.inputs
        self._cache: dict[bytes, bytes] = {}
        self._cached = 0
        self._folders: dict[str, dict[str, Cid]] = {}
        self._spool: DagSpool | None = None
        self._spool_dir: Path | None = None
        self._spool_lock = threading.Lock()
        self._prefetched: frozenset[str] = frozenset()
        self._blocks_streamed = False
        # Whole folders in one stream each (prefetch); off: a request per block, as a
        # gateway without whole-DAG CARs is read (the benchmarks' "before").
        self.streams = True

    def prefetch(self, folder: str, *, max_bytes: int) -> int:
        """Fetch ``folder`` as one CAR of its DAG (:meth:`IpfsGateway.dag_car`) into a
        :class:`DagSpool` in a temporary directory; its blocks and objects are then read from
        there, by CID, each block verified again (also when not ``trustless``: stronger than
        by path). Nothing when the replica has no verified block source or is encrypted (its
        reads go through the decrypting replica). Returns the blocks kept."""
        if not self.streams or self.blocks is None or self.encrypted or folder in self._prefetched:
            return 0  # (a folder whose stream gave nothing is asked again: cheap)
        try:
            folder_cid = resolve_path(self.root, folder, self.blocks)
        except OdfWeb3Error:
            return 0  # the reads that follow meet (and report) it
        with self._spool_lock:
            if self._spool is None:
                where = Path(tempfile.mkdtemp(prefix="odfweb3-spool-"))
                self._spool = DagSpool(where / "dag.blocks")
                self._spool_dir = where
                weakref.finalize(self, shutil.rmtree, where, ignore_errors=True)
            kept = self._spool.fill(
                folder_cid, self.gateway.dag_car(folder_cid, limit=max_bytes), max_bytes=max_bytes
            )
            if kept:
                self._prefetched |= {folder}
                self._folders.pop(folder, None)  # listed again, from the spool
            empty = self._spool.blocks == 0
        if empty:
            self.drop_prefetched()  # no stream: no file left behind, even by a kill
        return kept

    def drop_prefetched(self) -> None:
        """Forget the spooled blocks and remove the spool."""
        with self._spool_lock:
            spool, self._spool = self._spool, None
            where, self._spool_dir = self._spool_dir, None
            self._prefetched = frozenset()
        if spool is not None:
            spool.close()
        if where is not None:
            shutil.rmtree(where, ignore_errors=True)

    def _get(self, cid: Cid) -> bytes:
        """A block from the spool if it holds it, else from the block source (verified by
        the callers, :mod:`.unixfs_reader`)."""
        spool = self._spool
        if spool is not None and cid in spool:
            try:
                return spool.get(cid)
            except NotFound:
                pass  # dropped meanwhile
        return (self.blocks or _no_blocks)(cid)

    def _by_cid(self, rel: str) -> bool:
        spooled = self._spool is not None and rel.partition("/")[0] in self._prefetched
        return self.trustless or spooled

    def lineage_inputs(self) -> Mapping[str, str]:
        """Where each input lives, from the verified record's ``_odf.inputs`` (dataset ID ->
        ``ipns://NAME``, written by ``publish --with-inputs``); empty without a record."""
        return dict(self.inputs)

    def _path(self, rel: str) -> str:
        return f"/ipfs/{self.root.encode()}/{rel}"

    def _cid_of(self, rel: str) -> Cid:
        assert self.blocks is not None
        folder, _, entry = rel.partition("/")
        if folder not in self._folders:
            self._folders[folder] = list_directory(
                resolve_path(self.root, folder, self._get), self._get
            )
        try:
            return self._folders[folder][entry]
        except KeyError:
            raise NotFound(f"{self.name}: /ipfs/{self.root}/{rel} is not in the DAG") from None

    @property
    def encrypted(self) -> bool:
        """Whether the signed record names a key envelope, or one was given (encrypted)."""
        return self.key_envelope_cid is not None or self.supplied_envelope is not None

    def use_envelope(self, data: bytes, source: str) -> None:
        """Read this replica with the key envelope ``data`` (``--key-envelope SOURCE``).

        Needed for ``ipfs://<cid>`` of an encrypted publish (no record names its envelope);
        with a record it replaces the record's envelope, which must then be for the same
        dataset.

        Raises:
            FormatError: ``data`` is not a key envelope.
            ReplicaMismatch: the envelope is for another dataset than the signed record.
        """
        envelope = decode_envelope(data)  # public JSON: refuse anything else before use
        if self.dataset_id is not None and envelope.dataset_id != self.dataset_id:
            raise ReplicaMismatch(
                f"{self.name}: the key envelope {source} is for {envelope.dataset_id} but the "
                f"signed record for {self.dataset_id}; pass this dataset's envelope"
            )
        self.supplied_envelope = data

    def bind_sealed_head(self, keys: KeyRing) -> None:
        """With no signed record, take the head from the decrypted ``refs/head``.

        Does nothing when the head is already bound (a record's ``_odf.head``) or the
        replica is not encrypted.

        Raises:
            ReplicaMismatch: ``refs/head`` does not decrypt with ``keys`` (the envelope
                given is another dataset's, or the keys lack this publish's epoch).
        """
        if not self.encrypted or self.expected_head is not None:
            return
        try:
            text = decrypt_bytes(self.sealed_head(), keys, "refs/head")
        except DecryptionError:
            # Not "no key" (that is DecryptionError): keys were found but are not this
            # replica's, so the envelope and the replica disagree.
            raise ReplicaMismatch(
                f"{self.name}: refs/head does not decrypt with the keys the key envelope gave; "
                "the envelope is for another dataset or another publish: pass the keyEnvelope "
                "this publish printed (odfweb3 status shows it)"
            ) from None
        try:
            self.expected_head = multihash_from_str(text.decode("ascii").strip())
        except (UnicodeDecodeError, FormatError):
            raise FormatError(
                f"{self.name}: refs/head decrypts to something that is not a multibase hash"
            ) from None

    def _read_small(self, cid: Cid, limit: int, what: str) -> bytes:
        """A small file by CID, verified block by block (or as one raw block)."""
        if self.blocks is not None:
            return b"".join(read_file(cid, self.blocks, max_size=limit))
        if cid.codec != CODEC_RAW:
            raise ResolutionError(
                f"{self.name}: {what} {cid} cannot be verified without raw blocks; set "
                "ipfs.api / ODFWEB3_IPFS_API"
            )
        data = self.gateway.fetch(f"/ipfs/{cid.encode()}", limit=limit)
        cid.verify(data, where=f"{self.name}: {what} {cid}")
        return data

    def sealed_head(self) -> bytes:
        """The raw bytes of ``refs/head`` (ciphertext in an encrypted publish)."""
        if self.blocks is not None:
            cid = resolve_path(self.root, "refs/head", self.blocks)
            return b"".join(read_file(cid, self.blocks, max_size=MAX_HEAD_SIZE))
        return self.gateway.fetch(self._path("refs/head"), limit=MAX_HEAD_SIZE)

    def key_envelope(self) -> bytes | None:
        """The key envelope given (:meth:`use_envelope`), else the one the signed record
        names (checked against its CID), else None.

        Raises:
            FormatError: the file is not a key envelope, or one for another dataset
                than the record's ``_odf.datasetId``.
            HashMismatch: the node or gateway served other bytes than the CID.
        """
        if self.supplied_envelope is not None:
            return self.supplied_envelope
        if self.key_envelope_cid is None:
            return None
        data = self._read_small(self.key_envelope_cid, MAX_ENVELOPE_SIZE, "key envelope")
        envelope = decode_envelope(data)  # public JSON: refuse anything else before use
        if self.dataset_id is not None and envelope.dataset_id != self.dataset_id:
            raise FormatError(
                f"{self.name}: key envelope {self.key_envelope_cid} is for "
                f"{envelope.dataset_id}, the signed record for {self.dataset_id}"
            )
        return data

    def head(self) -> bytes:
        if self.encrypted:
            # Encrypted refs/head: the signed record binds the head (or, with no record,
            # bind_sealed_head() did); DecryptingReplica decrypts sealed_head() and checks
            # that it agrees.
            if self.expected_head is None:
                raise DecryptionError(
                    f"{self.name}: encrypted and read without its keys; the head is known only "
                    "once refs/head is decrypted"
                )
            return self.expected_head
        data = self.sealed_head()
        if data.startswith(MAGIC):
            # An encrypted layout served without a record naming its envelope (section 6).
            raise ResolutionError(
                f"{self.name}: refs/head is encrypted and no key envelope is known for it "
                "(ipfs://CID has no record); pass --key-envelope FILE|ipfs://CID|ar://ID "
                "(the keyEnvelope that publish and odfweb3 status print)"
            )
        try:
            head = multihash_from_str(data.decode("ascii").strip())
        except (UnicodeDecodeError, FormatError):
            raise FormatError(
                f"{self.name}: /ipfs/{self.root}/refs/head is not a multibase hash; "
                "the name does not point at an ODF dataset"
            ) from None
        if self.expected_head is not None and head != self.expected_head:
            raise ReplicaMismatch(
                f"{self.name}: the signed record says head {multihash_to_str(self.expected_head)}"
                f" but /ipfs/{self.root}/refs/head is {multihash_to_str(head)}; the node or "
                "gateway serves another dataset state"
            )
        return head

    def read_block(self, mh: bytes) -> bytes:
        cached = self._cache.get(mh)
        if cached is not None:
            return cached
        if not self._blocks_streamed:
            # The chain is walked block after block (each names the one before it): one
            # stream of the whole folder instead of a request each.
            self._blocks_streamed = True
            self.prefetch("blocks", max_bytes=MAX_BLOCKS_STREAM)
        rel = object_relpath("block", mh)
        if self._by_cid(rel):
            data = b"".join(read_file(self._cid_of(rel), self._get, max_size=MAX_BLOCK_SIZE))
        else:
            data = self.gateway.fetch(self._path(rel), limit=MAX_BLOCK_SIZE)
        if self.encrypted:
            return data  # ciphertext: the plaintext's hash is checked after decryption
        verify_bytes(data, mh, f"{self.name}: {rel}")
        if self._cached + len(data) <= _BLOCK_CACHE_BYTES:
            self._cache[mh] = data
            self._cached += len(data)
        return data

    def stream_object(self, kind: ObjectKind, mh: bytes, size: int | None) -> Iterator[bytes]:
        rel = object_relpath(kind, mh)
        if self._by_cid(rel):
            yield from read_file(self._cid_of(rel), self._get, max_size=size)
            return
        n = 0
        # The transport stops one read past the recorded size; the check below reports it.
        limit = MAX_STREAM if size is None else size + (2 << 20)
        for chunk in self.gateway.stream(self._path(rel), limit=limit):
            n += len(chunk)
            if size is not None and n > size:
                raise ReplicaMismatch(
                    f"{self.name}: {rel} is longer than the {size} bytes its block records"
                )
            yield chunk


def _no_blocks(cid: Cid) -> bytes:
    raise NotFound(f"no block source for {cid}")
