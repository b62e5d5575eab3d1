"""Metadata block files: FlatBuffers ``Manifest{kind, version, content: <MetadataBlock>}``.

A block file is a FlatBuffers ``Manifest`` whose ``content`` is a separately finished
``MetadataBlock`` buffer copied in as a ``[ubyte]`` vector (as the reference implementation
does: it serializes the block with its own builder, then wraps the bytes). The block hash is the
SHA3-256 multihash of the whole file (ODF spec, "Metadata Chain" / "Hashes").

Encoding is byte-identical to kamu-cli (see :mod:`odfweb3.odf._codec_gen` for the rules), so the
hashes we compute equal the reference ones. Decoding accepts manifest versions 2 and 3 and turns
every kind of malformed input into :class:`~odfweb3.errors.FormatError`.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import struct
import sys
from typing import Any, TypeVar

from odfweb3.errors import FormatError, HashMismatch
from odfweb3.odf import _codec_gen as _gen
from odfweb3.odf.model_gen import Manifest, MetadataBlock, MetadataEvent

__all__ = [
    "METADATA_BLOCK_KIND",
    "METADATA_BLOCK_VERSION",
    "SUPPORTED_VERSIONS",
    "block_hash",
    "decode_block",
    "decode_event",
    "decode_table",
    "encode_block",
    "encode_event",
    "encode_table",
]

METADATA_BLOCK_KIND = 0x400000
"""Multicodec ``odf-metadata-block`` (0x400000): ``Manifest.kind`` of every block file."""

METADATA_BLOCK_VERSION = 3
"""Manifest version written by :func:`encode_block` (the reference implementation's current)."""

SUPPORTED_VERSIONS = (2, 3)
"""Manifest versions :func:`decode_block` accepts."""

_SHA3_256_PREFIX = b"\x16\x20"  # multihash: code 0x16 (sha3-256), length 0x20

# Errors the raw reader can raise on hostile input; each becomes a FormatError.
_READ_ERRORS = (
    struct.error,
    IndexError,
    ValueError,
    TypeError,
    OverflowError,
    RecursionError,
    MemoryError,
)

T = TypeVar("T")


def block_hash(data: bytes) -> bytes:
    """Return the block hash of block-file bytes: SHA3-256 multihash (``0x16 0x20`` + digest)."""
    return _SHA3_256_PREFIX + hashlib.sha3_256(data).digest()


def _multibase16(h: bytes) -> str:
    return "f" + h.hex()


@functools.cache
def _builder() -> Any:
    """flatbuffers' ``Builder`` class, imported without numpy.

    flatbuffers' ``builder``, ``encode`` and ``number_types`` each call
    ``compat.import_numpy()`` at import, which imports numpy whenever it is installed (17 MB
    of RSS, every publish paying it for the chain's events) for its numpy-only features
    (``CreateNumpyVector``, ``GetVectorAsNumpy``: each raises ``NumpyRequiredForThisFeature``
    when numpy is None), which nothing here uses; the bytes built do not depend on it. So
    ``flatbuffers.compat`` is loaded first, on its own, and its ``import_numpy`` answers
    None before the package's modules ask. Only flatbuffers sees the change (numpy itself
    stays importable). A flatbuffers laid out otherwise is imported as it is.
    """
    if "flatbuffers" not in sys.modules:
        package = importlib.util.find_spec("flatbuffers")
        where = package.submodule_search_locations if package is not None else None
        spec = (
            importlib.util.spec_from_file_location("flatbuffers.compat", f"{where[0]}/compat.py")
            if where
            else None
        )
        if spec is not None and spec.loader is not None:
            compat = importlib.util.module_from_spec(spec)
            sys.modules["flatbuffers.compat"] = compat
            try:
                spec.loader.exec_module(compat)
            except BaseException:
                del sys.modules["flatbuffers.compat"]
                raise
            if callable(getattr(compat, "import_numpy", None)):
                compat.import_numpy = lambda: None  # type: ignore[attr-defined]
    from flatbuffers.builder import Builder

    return Builder


def _finish(table: Any) -> bytes:
    """Serialize one table as a finished FlatBuffers buffer (root = that table)."""
    encoder = _gen.ENCODERS.get(type(table))
    if encoder is None:
        raise TypeError(f"not an ODF table: {type(table).__name__}")
    # Imported here, not at the top: decoding needs no flatbuffers.
    b = _builder()(1024)
    try:
        root = encoder(b, table)
    except (struct.error, OverflowError, ValueError) as exc:
        if isinstance(exc, FormatError):
            raise
        raise FormatError(
            f"cannot encode {type(table).__name__}: a value is out of range ({exc})"
        ) from exc
    b.Finish(root)
    return bytes(b.Output())


def encode_table(table: Any) -> bytes:
    """Encode any model table as a standalone FlatBuffers buffer whose root is that table.

    Raises:
        TypeError: ``table`` is not a model dataclass.
        FormatError: a value does not fit its schema type (e.g. a negative ``uint64``).
    """
    return _finish(table)


def encode_event(event: MetadataEvent) -> bytes:
    """Encode a metadata event as a standalone FlatBuffers buffer (root = the event table)."""
    return _finish(event)


def encode_block(block: MetadataBlock) -> bytes:
    """Encode a block as the bytes of its block file (``Manifest`` version 3).

    The result is byte-identical to kamu-cli's ``FlatbuffersMetadataBlockSerializer``; its
    :func:`block_hash` is the block's hash.

    Raises:
        FormatError: a value does not fit its schema type.
    """
    content = _finish(block)
    b = _builder()(len(content) + 64)
    # Manifest slots in schema order: kind, version, content (reference: write_manifest).
    off = b.CreateByteVector(content)
    b.StartObject(3)
    b.PrependInt64Slot(0, METADATA_BLOCK_KIND, 0)
    b.PrependInt32Slot(1, METADATA_BLOCK_VERSION, 0)
    b.PrependUOffsetTRelativeSlot(2, off, 0)
    b.Finish(b.EndObject())
    return bytes(b.Output())


def _root(buf: bytes, what: str) -> int:
    if len(buf) < 8:
        raise FormatError(f"{what} is truncated: {len(buf)} bytes, need at least 8")
    pos: int = struct.unpack_from("<I", buf, 0)[0]
    if pos + 4 > len(buf):
        raise FormatError(f"{what} root offset {pos} is outside the {len(buf)}-byte buffer")
    return pos


def decode_table(cls: type[T], data: bytes) -> T:
    """Decode a standalone buffer whose root is a ``cls`` table (inverse of encode_table).

    Raises:
        FormatError: the bytes are not a well-formed ``cls`` buffer.
    """
    decoder = _gen.DECODERS.get(cls)
    if decoder is None:
        raise TypeError(f"not an ODF table: {cls.__name__}")
    buf = bytes(data)
    try:
        result: T = decoder(buf, _root(buf, cls.__name__))
    except FormatError:
        raise
    except _READ_ERRORS as exc:
        raise FormatError(f"malformed {cls.__name__} buffer: {exc}") from exc
    return result


def decode_event(cls: type[T], data: bytes) -> T:
    """Decode an event buffer made by :func:`encode_event` (``cls`` is the event's class)."""
    return decode_table(cls, data)


_decode_manifest = _gen.DECODERS[Manifest]
_decode_metadata_block = _gen.DECODERS[MetadataBlock]


def decode_block(data: bytes, expected: bytes | None = None) -> MetadataBlock:
    """Decode block-file bytes (manifest version 2 or 3) into a :class:`MetadataBlock`.

    Args:
        data: the block file's bytes.
        expected: the block's multihash (raw bytes), e.g. from its file name or the next block's
            ``prev_block_hash``; when given, the bytes are verified before anything is parsed.

    Raises:
        HashMismatch: ``expected`` is given and the bytes hash to something else.
        FormatError: the bytes are truncated, garbage, not a metadata block manifest, of an
            unknown version, or hold an unknown event type.
    """
    buf = bytes(data)
    if expected is not None:
        actual = block_hash(buf)
        if actual != bytes(expected):
            raise HashMismatch(
                _multibase16(bytes(expected)), _multibase16(actual), "metadata block"
            )
    try:
        manifest: Manifest = _decode_manifest(buf, _root(buf, "metadata block"))
        if manifest.kind != METADATA_BLOCK_KIND:
            raise FormatError(
                f"not a metadata block: manifest kind {manifest.kind:#x}, "
                f"expected {METADATA_BLOCK_KIND:#x}"
            )
        if manifest.version not in SUPPORTED_VERSIONS:
            raise FormatError(
                f"unsupported metadata block version {manifest.version} "
                f"(supported: {', '.join(map(str, SUPPORTED_VERSIONS))})"
            )
        content = manifest.content
        if content is None:
            raise FormatError("metadata block manifest has no content")
        block: MetadataBlock = _decode_metadata_block(content, _root(content, "block content"))
    except FormatError:
        raise
    except _READ_ERRORS as exc:
        raise FormatError(f"malformed metadata block: {type(exc).__name__}: {exc}") from exc
    return block
