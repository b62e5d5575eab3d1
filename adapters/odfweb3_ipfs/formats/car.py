"""CAR v1 (Content Addressable aRchive) streaming writer and verifying reader.

Spec: ipld/ipld ``specs/transport/car/carv1/index.md``::

    car     = varint(len(header)) header  section*
    header  = DAG-CBOR {"roots": [CID, …], "version": 1}
    section = varint(len(cid) + len(block)) cid block

The header is written in canonical DAG-CBOR: map keys sorted length-first
("roots" before "version"), CIDs as tag 42 over a byte string holding
``0x00 + binary CID``. We write exactly one root; the reader accepts several.

Reading treats the input as untrusted: every block is re-hashed against its CID
(sha2-256, sha2-512 and identity multihashes) and any problem raises
:class:`FormatError` (malformed, truncated, oversized) or :class:`HashMismatch`
(bytes that do not match their CID) — never another exception type.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import BinaryIO, Final

from odfweb3.errors import FormatError
from odfweb3.odf.digest_map import DigestMap
from odfweb3_ipfs.formats.cid import Cid, decode_uvarint, encode_uvarint

__all__ = [
    "DEFAULT_MAX_SECTION",
    "CarWriter",
    "CidSet",
    "decode_car_header",
    "encode_car_header",
    "index_car_file",
    "iter_car",
    "read_car_header",
]

DEFAULT_MAX_SECTION: Final = 8 << 20  # bitswap's hard block limit is 2 MiB; leave room
_MAX_HEADER: Final = 1 << 20
_CID_TAG: Final = b"\xd8\x2a"  # CBOR tag 42


def _cbor_head(major: int, value: int) -> bytes:
    if value < 24:
        return bytes(((major << 5) | value,))
    for extra, size in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if value < 1 << (8 * size):
            return bytes(((major << 5) | extra,)) + value.to_bytes(size, "big")
    raise ValueError("CBOR value too large")


def encode_car_header(root: Cid) -> bytes:
    """DAG-CBOR bytes of ``{"roots": [root], "version": 1}`` (without the length varint)."""
    cid_bytes = b"\x00" + root.raw
    return b"".join(
        (
            b"\xa2",  # map(2)
            b"\x65roots",
            b"\x81",  # array(1)
            _CID_TAG,
            _cbor_head(2, len(cid_bytes)),
            cid_bytes,
            b"\x67version",
            b"\x01",
        )
    )


class _Cbor:
    """Just enough of a strict DAG-CBOR reader for CAR headers."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, n: int) -> bytes:
        end = self.pos + n
        if end > len(self.data):
            raise FormatError("CAR header: truncated CBOR")
        out = self.data[self.pos : end]
        self.pos = end
        return out

    def head(self) -> tuple[int, int]:
        first = self._take(1)[0]
        major, info = first >> 5, first & 0x1F
        if info < 24:
            return major, info
        if info > 27:
            raise FormatError("CAR header: indefinite-length or reserved CBOR item")
        size = 1 << (info - 24)
        value = int.from_bytes(self._take(size), "big")
        if value < (24 if size == 1 else 1 << (4 * size)):
            raise FormatError("CAR header: CBOR integer not minimally encoded")
        return major, value

    def item(self, depth: int = 0) -> object:
        if depth > 8:
            raise FormatError("CAR header: CBOR nested too deeply")
        major, value = self.head()
        if major == 0:
            return value
        if major == 1:
            return -1 - value
        if major in (2, 3):
            raw = self._take(value)
            if major == 2:
                return raw
            try:
                return raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise FormatError("CAR header: invalid UTF-8 in CBOR text") from exc
        if major == 4:
            if value > len(self.data):
                raise FormatError("CAR header: CBOR array longer than the header")
            return [self.item(depth + 1) for _ in range(value)]
        if major == 5:
            if value > len(self.data):
                raise FormatError("CAR header: CBOR map longer than the header")
            out: dict[str, object] = {}
            for _ in range(value):
                key = self.item(depth + 1)
                if not isinstance(key, str) or key in out:
                    raise FormatError("CAR header: CBOR map keys must be unique strings")
                out[key] = self.item(depth + 1)
            return out
        if major == 6:
            if value != 42:
                raise FormatError(f"CAR header: unexpected CBOR tag {value}")
            tagged = self.item(depth + 1)
            if not isinstance(tagged, bytes) or tagged[:1] != b"\x00":
                raise FormatError("CAR header: CID tag must wrap bytes starting with 0x00")
            return Cid.from_bytes(tagged[1:], where="CAR header root")
        if major == 7 and value in (20, 21, 22):
            return {20: False, 21: True, 22: None}[value]
        raise FormatError("CAR header: unsupported CBOR item")


def decode_car_header(data: bytes) -> list[Cid]:
    """Parse the DAG-CBOR header (without the length varint); return its roots.

    Raises:
        FormatError: not a CAR v1 header.
    """
    reader = _Cbor(bytes(data))
    header = reader.item()
    if reader.pos != len(reader.data):
        raise FormatError("CAR header: trailing bytes after the header map")
    if not isinstance(header, dict):
        raise FormatError("CAR header: not a CBOR map")
    if header.get("version") != 1:
        raise FormatError(f"CAR header: version {header.get('version')!r} is not 1 (CARv1)")
    roots = header.get("roots")
    if not isinstance(roots, list) or not all(isinstance(r, Cid) for r in roots):
        raise FormatError("CAR header: roots must be a list of CIDs")
    return [r for r in roots if isinstance(r, Cid)]


def _read_exact(stream: BinaryIO, n: int, what: str) -> bytes:
    chunks: list[bytes] = []
    left = n
    while left:
        chunk = stream.read(left)
        if not chunk:
            raise FormatError(f"CAR: truncated {what}; expected {n} bytes, got {n - left}")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_varint(stream: BinaryIO, what: str) -> int | None:
    """Read a varint from a stream; None at a clean EOF before its first byte."""
    raw = bytearray()
    while True:
        byte = stream.read(1)
        if not byte:
            if raw:
                raise FormatError(f"CAR: truncated {what} length")
            return None
        raw += byte
        if byte[0] < 0x80 or len(raw) >= 9:
            break
    value, _ = decode_uvarint(bytes(raw), 0, f"CAR {what} length")
    return value


def read_car_header(stream: BinaryIO) -> list[Cid]:
    """Read the header from the start of a CAR stream; return the roots.

    Raises:
        FormatError: missing, oversized or malformed header.
    """
    size = _read_varint(stream, "header")
    if size is None or size == 0:
        raise FormatError("CAR: empty input or zero-length header; not a CAR file")
    if size > _MAX_HEADER:
        raise FormatError(f"CAR: header length {size} is implausible; not a CAR file")
    return decode_car_header(_read_exact(stream, size, "header"))


_V1_SHA256: Final = frozenset((b"\x01\x55\x12\x20", b"\x01\x70\x12\x20"))  # raw, dag-pb


def _cid_length(section: bytes) -> int:
    """Length of the CID at the start of a section."""
    if section[:2] == b"\x12\x20":
        return 34
    if section[:4] in _V1_SHA256:
        return 36  # CIDv1, raw or dag-pb, sha2-256: the CIDs every writer here makes
    pos = 0
    for _ in range(2):  # version, codec
        _, pos = decode_uvarint(section, pos, "CAR section CID")
    _, pos = decode_uvarint(section, pos, "CAR section CID")  # hash code
    length, pos = decode_uvarint(section, pos, "CAR section CID")
    return pos + length


def _iter_sections(stream: BinaryIO, max_section: int) -> Iterator[tuple[Cid, bytes]]:
    index = 0
    while True:
        size = _read_varint(stream, f"section {index}")
        if size is None:
            return
        if size == 0 or size > max_section:
            raise FormatError(
                f"CAR: section {index} length {size} is outside 1..{max_section}; "
                "the file is corrupt or the block is too large"
            )
        section = _read_exact(stream, size, f"section {index}")
        cid_len = _cid_length(section)
        if cid_len > len(section):
            raise FormatError(f"CAR: section {index} is shorter than its CID")
        cid = Cid.from_bytes(section[:cid_len], where=f"CAR section {index}")
        data = section[cid_len:]
        cid.verify(data, what="CAR block")
        yield cid, data
        index += 1


def iter_car(
    stream: BinaryIO, *, max_section: int = DEFAULT_MAX_SECTION
) -> tuple[list[Cid], Iterator[tuple[Cid, bytes]]]:
    """Read a CAR v1 stream: the header now, the blocks lazily, each one verified.

    Args:
        stream: binary stream positioned at the start of the CAR.
        max_section: largest accepted section (CID + block), to bound memory.

    Returns:
        ``(roots, blocks)`` where ``blocks`` yields ``(cid, data)`` in file order.

    Raises:
        FormatError: malformed or truncated input (also raised during iteration).
        HashMismatch: a block's bytes do not match its CID (during iteration).
    """
    roots = read_car_header(stream)
    return roots, _iter_sections(stream, max_section)


_READ_SIZE: Final = 1 << 20


def _file_sections(f: BinaryIO, start: int, max_section: int) -> Iterator[tuple[bytes, int, int]]:
    """:func:`_iter_sections` on a file read ``_READ_SIZE`` bytes at a time, each section
    parsed in the buffer (a varint read a byte at a time, a read per section and a ``Cid``
    per block were most of the cost of indexing 40,000 small blocks): the same checks and
    messages; yields each block's CID bytes and the offset and length of its bytes."""
    buf = b""
    pos = 0
    base = start  # the file offset of buf[0]
    eof = False
    index = 0
    sha256 = hashlib.sha256
    while True:
        if len(buf) - pos < 10 and not eof:  # a whole length varint (9 bytes) in hand
            more = f.read(_READ_SIZE)
            eof = not more
            buf, base, pos = buf[pos:] + more, base + pos, 0
        if pos == len(buf):
            return
        first = buf[pos]
        if first < 0x80:
            size, pos = first, pos + 1
        elif len(buf) - pos > 1 and 0 < buf[pos + 1] < 0x80:  # two bytes, minimal
            size, pos = (first & 0x7F) | (buf[pos + 1] << 7), pos + 2
        else:
            head = buf[pos : pos + 9]
            if len(head) < 9 and all(b >= 0x80 for b in head):
                raise FormatError(f"CAR: truncated section {index} length")
            size, used = decode_uvarint(head, 0, f"CAR section {index} length")
            pos += used
        if size == 0 or size > max_section:
            raise FormatError(
                f"CAR: section {index} length {size} is outside 1..{max_section}; "
                "the file is corrupt or the block is too large"
            )
        if len(buf) - pos < size:
            more = f.read(max(size - (len(buf) - pos), _READ_SIZE))
            eof = not more
            buf, base, pos = buf[pos:] + more, base + pos, 0
            if len(buf) < size:
                raise FormatError(
                    f"CAR: truncated section {index}; expected {size} bytes, got {len(buf)}"
                )
        end = pos + size
        if buf[pos : pos + 4] in _V1_SHA256 and size >= 36:
            # CIDv1 sha2-256 (raw or dag-pb): its shape is checked by the prefix, the block
            # by its digest (a Cid object per block only to say what does not match)
            raw = buf[pos : pos + 36]
            if sha256(memoryview(buf)[pos + 36 : end]).digest() != raw[4:]:
                Cid.from_bytes(raw).verify(buf[pos + 36 : end], what="CAR block")
            yield raw, base + pos + 36, size - 36
        else:
            section = buf[pos:end]
            cid_len = _cid_length(section)
            if cid_len > len(section):
                raise FormatError(f"CAR: section {index} is shorter than its CID")
            cid = Cid.from_bytes(section[:cid_len], where=f"CAR section {index}")
            cid.verify(section[cid_len:], what="CAR block")
            yield cid.raw, base + pos + cid_len, size - cid_len
        pos = end
        index += 1


def index_car_file(
    f: BinaryIO, *, max_section: int = DEFAULT_MAX_SECTION
) -> tuple[list[Cid], Iterator[tuple[bytes, int, int]]]:
    """:func:`iter_car` for a CAR index: the blocks of a file read in large pieces, each
    checked against its CID as :func:`iter_car` does (the same errors), as its CID's bytes
    and the offset and length of its bytes in the file. The file's position is past what
    was read ahead. A stream whose reads block (a response body) goes to :func:`iter_car`,
    which reads only what it parses.
    """
    roots = read_car_header(f)
    return roots, _file_sections(f, f.tell(), max_section)


class CidSet:
    """An exact set of CIDs in a :class:`~odfweb3.odf.digest_map.DigestMap`: about 35 bytes
    a CID with a 32-byte digest, where a ``set`` of CID ``bytes`` costs about 110 at 390,000
    CIDs (a 72-byte object plus the table)."""

    __slots__ = ("_map",)

    def __init__(self) -> None:
        self._map = DigestMap()

    def __len__(self) -> int:
        return len(self._map)

    def __contains__(self, cid: object) -> bool:
        return isinstance(cid, Cid) and cid.raw in self._map

    def add(self, cid: Cid) -> bool:
        """Add ``cid``; True if it was not in the set."""
        return self._map.put(cid.raw)

    def discard(self, cid: Cid) -> None:
        """Remove ``cid`` if present."""
        self._map.discard(cid.raw)


class CarWriter:
    """Streaming CAR v1 writer with one root; each distinct block is written once.

    The header is written on construction; blocks go straight to ``stream`` (section
    head and block as two writes, so a block is never copied). Only the set of CIDs
    already written is kept (for deduplication, in a :class:`CidSet`: about 40 bytes a
    CID instead of about 110 in a ``set`` of ``bytes``). A writer thread was measured and
    dropped: on 2 cores it cost 12-19 % more CPU with no wall-time gain
    (bench/RESULTS.md).

    Args:
        stream: binary stream to write to.
        root: the single root CID of the archive.
        verify: re-hash each block against its CID before writing it.
    """

    def __init__(self, stream: BinaryIO, root: Cid, *, verify: bool = False) -> None:
        self._stream = stream
        self._verify = verify
        self._seen: CidSet | None = CidSet()
        self.root = root
        self.blocks_written = 0
        self.bytes_written = 0
        header = encode_car_header(root)
        self._write(encode_uvarint(len(header)) + header, b"")

    def _write(self, prefix: bytes, data: bytes) -> None:
        # Section head and block as two writes: concatenating would copy the block.
        self.bytes_written += len(prefix) + len(data)
        self._stream.write(prefix)
        if data:
            self._stream.write(data)

    def write_block(self, cid: Cid, data: bytes) -> bool:
        """Append a block unless it is already in this CAR.

        Returns:
            True if written, False if it was a duplicate.

        Raises:
            HashMismatch: with ``verify=True``, when ``data`` does not match ``cid``.
        """
        seen = self._seen
        if seen is None:
            raise ValueError("CAR write: a block after end_blocks()")
        if self._verify:
            if cid in seen:
                return False
            cid.verify(data, where="CAR write")  # before it counts as written
        if not seen.add(cid):
            return False
        raw = cid.raw
        self._write(encode_uvarint(len(raw) + len(data)) + raw, data)
        self.blocks_written += 1
        return True

    def end_blocks(self) -> None:
        """No block follows (the caller knows): the set of written CIDs is dropped, so a
        ``car:`` first publish does not hold it (some 15 MB at 100,000 blocks) through the
        side files' import after the DAG; :meth:`set_root` still works, a later
        :meth:`write_block` raises."""
        self._seen = None

    def __call__(self, cid: Cid, data: bytes) -> bool:
        """Alias of :meth:`write_block`, so a writer can be passed as a block sink."""
        return self.write_block(cid, data)

    @classmethod
    def with_root_later(cls, stream: BinaryIO, *, cid_version: int = 1) -> CarWriter:
        """Start a CAR whose root is not known yet (it is computed while streaming).

        Writes a header with a placeholder root of the same length as a sha2-256
        dag-pb CID of ``cid_version``; call :meth:`set_root` at the end, which
        rewrites the header in place. ``stream`` must be seekable.
        """
        placeholder = Cid.sha256(bytes(32), version=cid_version, codec=0x70)
        return cls(stream, placeholder)

    @classmethod
    def resumed(
        cls, stream: BinaryIO, seen: CidSet, *, cid_version: int = 1, blocks: int = 0
    ) -> CarWriter:
        """Go on writing a CAR that :meth:`with_root_later` began (an interrupted write):
        ``stream`` is positioned at its end, ``seen`` holds the CIDs of the blocks it has
        (``blocks`` of them), which are not written again; :meth:`set_root` as usual."""
        writer = cls.__new__(cls)
        writer._stream = stream
        writer._verify = False
        writer._seen = seen
        writer.root = Cid.sha256(bytes(32), version=cid_version, codec=0x70)
        writer.blocks_written = blocks
        writer.bytes_written = stream.tell()
        return writer

    def set_root(self, root: Cid) -> None:
        """Rewrite the header with the real root (see :meth:`with_root_later`).

        Raises:
            ValueError: the new root's CID has a different length, or the stream
                cannot seek.
        """
        if len(root.raw) != len(self.root.raw):
            raise ValueError("set_root: the root CID length differs from the placeholder's")
        header = encode_car_header(root)
        end = self._stream.tell()
        self._stream.seek(0)
        self._stream.write(encode_uvarint(len(header)) + header)
        self._stream.seek(end)
        self.root = root

    def __contains__(self, cid: object) -> bool:
        if self._seen is None:
            raise ValueError("CAR: the written CIDs were dropped (end_blocks)")
        return isinstance(cid, Cid) and cid in self._seen
